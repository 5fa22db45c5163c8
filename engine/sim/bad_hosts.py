"""Bad hosts, diagnosis and retirement: the knobs of AIReSim (arXiv 2603.07041, DSN'26) and ByteRobust (SOSP'25).

Bad hosts. A share failures.bad_host_fraction of the hosts (exactly that share, rounded down, placed at random:
AIReSim's int(servers x fraction)) is systematically bad: engine.sim.failures draws their extra failures, and
the simulation drops those once the host is cured. A repair that truly succeeds cures a bad host for good;
one that fails silently (repair.*_silent_failure) leaves it bad (AIReSim's Server.complete_repair). A good
host's failures are random: its repair has nothing lasting to fix, so its outcome changes nothing (AIReSim's
model too, where a failed repair of a good server returns it as good as it was). `hosts.bad` keeps who was
bad at the start: the ground truth the lemon analytics are scored against.

Diagnosis of a single-host failure (a rack switch down is plain to see from every host behind it, so it is
always found). With probability 1 - diagnosis.probability it finds nothing: the host stays in service and its
job restarts on it (a bad host's fault recurs at its bad rate). Otherwise, for a host of the flagship job, with
probability diagnosis.wrong_host it blames another host of the job, drawn uniformly (AIReSim's diagnosis
uncertainty): that host goes to repair and the faulty one stays. diagnosis.over_eviction then evicts that many
suspects with the blamed host, its nearest neighbours in the job's rank order (the same rack and the next
racks under pack placement; ByteRobust evicts beyond the proven faulty), each repaired on its own.

Retirement. Failures blamed on a host (sent to repair for a failure, rightly or wrongly; not a suspect's
eviction, nor a missed diagnosis) are what an operator knows of it. Policy threshold retires a host at its
retirement.failures-th blamed failure within retirement.window; policy score keeps a score that each blamed
failure raises by 1 and that halves every retirement.window, and retires the host once it reaches
retirement.failures. A retired host leaves instead of going to repair and never comes back (host state
"retired" until the end of the run). spares.prefer_healthy takes the spare with the lowest such failure count
or score (AIReSim's fewest-failures host selection), the longest-waiting on a tie.

Random numbers come from the run's FAULTS stream (engine.sim.streams), spawned into one generator a concern,
so nothing here shifts the draws of the other parts, and each knob draws only when it is on: with every key at
its default, a run is exactly what it was without them.
"""

from collections import deque
from typing import NamedTuple

import numpy as np

from engine.scenario import Scenario
from engine.sim.records import HostHealthRecord, SimulationResult
from engine.sim.streams import Stream, seed_sequence

# Holder code of a retired host, beyond engine.fabric.topology's FLAGSHIP, SPARE, RESEARCH and IN_REPAIR.
RETIRED = 4
RETIRED_STATE = "retired"  # its host_states interval, from retirement to the end of the run


class FaultGenerators(NamedTuple):
    """One generator a concern, so changing one knob never shifts another's draws."""

    bad_hosts: np.random.Generator  # which hosts are bad
    arrivals: np.random.Generator  # their extra failures
    diagnosis: np.random.Generator  # misses, wrong hosts
    repair: np.random.Generator  # automatic repair times, escalation, silent failures


def fault_generators(seed: int) -> FaultGenerators:
    sequence = seed_sequence(seed, Stream.FAULTS)
    return FaultGenerators(*(np.random.default_rng(child) for child in sequence.spawn(4)))


def draw_bad_hosts(fraction: float, n_hosts: int, rng: np.random.Generator) -> np.ndarray:
    """A bool a host: exactly floor(fraction x n_hosts) bad hosts, placed uniformly at random (AIReSim)."""
    bad = np.zeros(n_hosts, dtype=bool)
    count = int(fraction * n_hosts + 1e-9)  # 0.15 x 4,360 is 654, not 653.999...
    if count:
        bad[rng.choice(n_hosts, count, replace=False)] = True
    return bad


class Verdict(NamedTuple):
    """What diagnosis made of a single-host failure."""

    missed: bool  # nothing found: the host stays in service
    blamed: int  # the host sent to repair (the faulty one, or an innocent one)
    suspects: tuple[int, ...]  # evicted with it (diagnosis.over_eviction)


class HostHealth:
    """Which hosts are bad now, what diagnosis blames, and the failure record retirement and spares read."""

    def __init__(self, scenario: Scenario, n_hosts: int, generators: FaultGenerators) -> None:
        self.generators = generators
        self.rng = generators.diagnosis
        self.bad = draw_bad_hosts(scenario.failures.bad_host_fraction, n_hosts, generators.bad_hosts)
        self.drawn_bad = self.bad.copy()
        self.only_while_computing = scenario.failures.only_while_computing
        self.miss = 1.0 - scenario.diagnosis.probability
        self.wrong_host = scenario.diagnosis.wrong_host
        self.over_eviction = scenario.diagnosis.over_eviction
        self.diagnoses = self.miss > 0 or self.wrong_host > 0 or self.over_eviction > 0
        self.policy = scenario.retirement.policy
        self.limit = scenario.retirement.failures
        self.window = scenario.retirement.window
        self.prefer_healthy = scenario.spares.prefer_healthy
        self.keeps_record = self.policy != "none" or self.prefer_healthy
        self._times: dict[int, deque[float]] = {}  # threshold (and none): blamed failures within the window
        self._scores: dict[int, tuple[float, float]] = {}  # score: (score, when it was last updated)
        self.retired: list[int] = []
        self.retired_bad = self.cured = self.systematic = 0
        self.missed = self.wrong = self.evicted = 0

    # ----- failures ------------------------------------------------------------------------------------
    def strikes(self, systematic: bool, host: int, computing: bool) -> bool:
        """Whether an arrival on `host` is a failure: a bad host's extra one only while the host is bad, and
        under failures.only_while_computing only while the host computes (`computing`)."""
        if systematic and not self.bad[host]:
            return False
        if self.only_while_computing and not computing:
            return False
        self.systematic += int(systematic)
        return True

    def diagnose(self, host: int, slots: np.ndarray | None) -> Verdict:
        """Diagnosis of a single-host failure of `host`; `slots` are the flagship job's host slots (-1: empty)
        when `host` holds one of them, else None (a wrong host or a suspect is only ever another host of the
        flagship job)."""
        if self.miss > 0 and self.rng.random() < self.miss:
            self.missed += 1
            return Verdict(True, host, ())
        if slots is None:
            return Verdict(False, host, ())
        slot = int(np.flatnonzero(slots == host)[0])
        if self.wrong_host > 0 and self.rng.random() < self.wrong_host:
            others = np.flatnonzero((slots >= 0) & (slots != host))
            if others.size:
                slot = int(others[self.rng.integers(others.size)])
                self.wrong += 1
        suspects = _neighbours(slots, slot, self.over_eviction)
        self.evicted += len(suspects)
        return Verdict(False, int(slots[slot]), suspects)

    # ----- record, retirement, spares ---------------------------------------------------------------------
    def blame(self, host: int, now: float) -> bool:
        """`host` is blamed for a failure now; whether the retirement policy retires it."""
        if not self.keeps_record:
            return False
        if self.policy == "score":
            score = self.score(host, now) + 1.0
            self._scores[host] = (score, now)
            return score >= self.limit - 1e-9
        times = self._times.setdefault(host, deque())
        times.append(now)
        self._forget(times, now)
        return self.policy == "threshold" and len(times) >= self.limit

    def score(self, host: int, now: float) -> float:
        """Blamed failures weighted by age, halving every retirement.window (score policy)."""
        score, since = self._scores.get(host, (0.0, now))
        return score * 0.5 ** ((now - since) / self.window)

    def failure_count(self, host: int, now: float) -> float:
        """What spares.prefer_healthy ranks spares by: the score, or the blamed failures within the window."""
        if self.policy == "score":
            return self.score(host, now)
        times = self._times.get(host)
        if not times:
            return 0.0
        self._forget(times, now)
        return float(len(times))

    def healthiest(self, spares: deque[int], now: float) -> int:
        """The spare with the lowest failure count, the first in the queue on a tie."""
        return min(spares, key=lambda h: self.failure_count(h, now))

    def retire(self, host: int) -> None:
        self.retired.append(host)
        self.retired_bad += int(self.bad[host])

    def repaired(self, hosts: list[int], fixed: bool) -> None:
        """Repair of `hosts` is over; `fixed`: it truly fixed them (a bad host is cured)."""
        if fixed:
            for h in hosts:
                if self.bad[h]:
                    self.bad[h] = False
                    self.cured += 1

    def record(self, automatic: int, escalated: int, silent: int) -> HostHealthRecord:
        return HostHealthRecord(
            drawn_bad=self.drawn_bad,
            bad_at_end=self.bad.copy(),
            retired=tuple(self.retired),
            retired_bad=self.retired_bad,
            cured=self.cured,
            missed_diagnoses=self.missed,
            wrong_host_diagnoses=self.wrong,
            over_evicted_hosts=self.evicted,
            systematic_failures=self.systematic,
            automatic_repairs=automatic,
            escalated_repairs=escalated,
            silent_repair_failures=silent,
        )

    def _forget(self, times: deque[float], now: float) -> None:
        while times and now - times[0] > self.window:
            times.popleft()


def _neighbours(slots: np.ndarray, slot: int, count: int) -> tuple[int, ...]:
    """Up to `count` hosts of the job nearest `slot` in rank order (slot - 1, slot + 1, slot - 2, ...)."""
    found: list[int] = []
    for distance in range(1, len(slots)):
        if len(found) >= count:
            break
        for s in (slot - distance, slot + distance):
            if 0 <= s < len(slots) and slots[s] >= 0 and len(found) < count:
                found.append(int(slots[s]))
    return tuple(found)


def bad_host_summary(result: SimulationResult) -> dict:
    """summary["cluster"] figures of bad hosts, diagnosis, repair outcomes and retirement (zeros when the run
    had none), from a SimulationResult's `health` (set by engine.sim.simulate.run_model)."""
    record = result.health
    if record is None:
        return dict.fromkeys(SUMMARY_KEYS, 0)
    retired = np.zeros(record.drawn_bad.size, dtype=bool)
    retired[list(record.retired)] = True
    return {
        "bad_hosts": int(record.drawn_bad.sum()),
        "bad_hosts_in_service_at_end": int((record.bad_at_end & ~retired).sum()),
        "bad_hosts_cured": record.cured,
        "systematic_failures": record.systematic_failures,
        "retired_hosts": len(record.retired),
        "retired_bad_hosts": record.retired_bad,
        "misdiagnoses": record.missed_diagnoses + record.wrong_host_diagnoses,
        "missed_diagnoses": record.missed_diagnoses,
        "wrong_host_diagnoses": record.wrong_host_diagnoses,
        "over_evicted_hosts": record.over_evicted_hosts,
        "automatic_repairs": record.automatic_repairs,
        "escalated_repairs": record.escalated_repairs,
        "silent_repair_failures": record.silent_repair_failures,
    }


SUMMARY_KEYS = (
    "bad_hosts",
    "bad_hosts_in_service_at_end",
    "bad_hosts_cured",
    "systematic_failures",
    "retired_hosts",
    "retired_bad_hosts",
    "misdiagnoses",
    "missed_diagnoses",
    "wrong_host_diagnoses",
    "over_evicted_hosts",
    "automatic_repairs",
    "escalated_repairs",
    "silent_repair_failures",
)
