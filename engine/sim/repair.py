"""The repair pipeline: drain, diagnose, wait for a technician, repair or return to the vendor, burn in, return.

A failed host is drained (`repair.drain`), diagnosed (`repair.diagnose`: DCGM `dcgmi diag -r 3`, about 15 min,
reference README §4), then waits for one of `repair.technicians` (a SimPy Resource). The hands-on repair takes
an exponential time of mean `repair.fix`; for a share `repair.rma_fraction` of repairs, and every lemon, the
part then goes back to the vendor and the host waits for it (exponential, mean `repair.rma_time`; no
technician). A lemon is a host with
`repair.lemon_failures` hardware failures within `repair.lemon_window` (Kokolis et al. detect and pull such
repeat offenders; Meta RMAs parts whose error rates pass vendor thresholds). Burn-in (`repair.burn_in`: DCGM
level 4 plus stress) comes last; then the host goes back where it came from (the flagship job's spare pool or
its research lane). A rack-switch failure takes every host of the rack through one repair together.

Repair outcomes (AIReSim, arXiv 2603.07041, repairs.py). With `repair.automatic` > 0, an automatic repair
(reboot, reset, reflash: exponential, mean repair.automatic, no technician) comes first, after diagnosis: with
probability `repair.escalation` it cannot fix the host, which goes on to the hands-on repair above; otherwise it
reports success, and is silently wrong with probability `repair.automatic_silent_failure`. A hands-on repair
is silently wrong with probability `repair.manual_silent_failure`. Either way the host burns in and returns;
`on_outcome(hosts, fixed)` tells engine.sim.bad_hosts whether the repair truly fixed them (a bad host is cured
only then). A lemon skips the automatic repair: it is a known repeat offender. Each outcome draw comes from
`outcome_rng` (engine.sim.bad_hosts.FaultGenerators.repair) and only when its knob is on, so with the defaults
the repair draws exactly what it drew before these knobs.

Repair by class of cause (issue 46). The hands-on mean, the vendor share and the vendor's turnaround may differ by
the class of the fault's cause, its scope in engine.sim.failures.SCOPE (gpu, host, network):
`repair.fix_<class>`, `repair.rma_fraction_<class>` and `repair.rma_time_<class>`, each None (the default) for
the overall key. A repair of no such class (a fail-slow host swapped out, or a cause of another scope) takes the
overall law. The class changes only the parameters of the draws, never which are made or their order: the same
uniform for the vendor, the same exponential for the hands-on time and the turnaround (numpy scales one standard
exponential draw by the mean), so with every class key None a run draws and holds what it did before them.
"""

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import simpy

from engine.scenario import Scenario
from engine.scenario.keys import REPAIR_CLASSES
from engine.sim.bad_hosts import RETIRED_STATE
from engine.sim.failures import SCOPE
from engine.sim.records import HostInterval


class RepairLaw(NamedTuple):
    """The hands-on and vendor law of one class of repairs (seconds, a share, seconds)."""

    fix: float
    rma_fraction: float
    rma_time: float


def class_laws(scenario: Scenario) -> dict[str, RepairLaw]:
    """The repair law of each class of cause (REPAIR_CLASSES), each key None taken from the overall law."""
    r = scenario.repair
    laws = {}
    for cls in REPAIR_CLASSES:
        fix, share, rma = (getattr(r, f"{base}_{cls}") for base in ("fix", "rma_fraction", "rma_time"))
        laws[cls] = RepairLaw(
            r.fix if fix is None else fix,
            r.rma_fraction if share is None else share,
            r.rma_time if rma is None else rma,
        )
    return laws


class Repairs:
    def __init__(
        self,
        env: simpy.Environment,
        scenario: Scenario,
        rng: np.random.Generator,
        on_returned: Callable[[int], None],
        *,
        outcome_rng: np.random.Generator | None = None,
        on_outcome: Callable[[list[int], bool], None] | None = None,
    ) -> None:
        self.env, self.rng, self.on_returned = env, rng, on_returned
        self.outcome_rng = outcome_rng if outcome_rng is not None else rng
        self.on_outcome = on_outcome
        self.automatic = scenario.repair.automatic
        self.escalation = scenario.repair.escalation
        self.automatic_silent = scenario.repair.automatic_silent_failure
        self.manual_silent = scenario.repair.manual_silent_failure
        self.horizon = scenario.duration_s
        self.automatic_repairs = self.escalated = self.silent_failures = 0
        self.technicians = simpy.Resource(env, capacity=scenario.repair.technicians)
        self.drain = scenario.repair.drain
        self.diagnose = scenario.repair.diagnose
        self.fix = scenario.repair.fix
        self.rma_fraction = scenario.repair.rma_fraction
        self.rma_time = scenario.repair.rma_time
        self.overall = RepairLaw(self.fix, self.rma_fraction, self.rma_time)
        self.laws = class_laws(scenario)  # by class of cause: gpu, host, network
        self.burn_in = scenario.repair.burn_in
        self.lemon_failures = scenario.repair.lemon_failures
        self.lemon_window = scenario.repair.lemon_window
        self.history: dict[int, list[float]] = {}
        self.intervals: list[HostInterval] = []  # the repair layer of host_states (no job)
        self.repaired_at: dict[int, float] = {}  # incident_id -> when its hosts were back
        self.lemon_incidents: set[int] = set()
        # hosts diagnosed and waiting for a technician, by their request: marked "down" once a technician takes
        # them, or by `finish` for those still waiting when the run ends (else host_states reads them healthy)
        self.waiting: dict[simpy.Event, tuple[list[int], float]] = {}

    def start(self, hosts: Sequence[int], incident_id: int, cause: str | None = None) -> None:
        """Take `hosts` out of service now and repair them together, by the repair law of `cause`'s class (None:
        the overall law)."""
        lemon = any(self._is_lemon(h) for h in hosts)
        if lemon:
            self.lemon_incidents.add(incident_id)
        law = self.laws.get(SCOPE.get(cause, ""), self.overall) if cause is not None else self.overall
        self.env.process(self._repair(list(hosts), incident_id, lemon, law))

    def _is_lemon(self, host: int) -> bool:
        now = self.env.now
        recent = [t for t in self.history.get(host, []) if now - t <= self.lemon_window] + [now]
        if len(recent) >= self.lemon_failures:
            self.history[host] = []  # the part is replaced: the count starts again
            return True
        self.history[host] = recent
        return False

    def retire(self, host: int) -> None:
        """`host` leaves the cluster for good now (engine.sim.bad_hosts): out of service to the end of the run."""
        self._mark([host], RETIRED_STATE, self.env.now, self.horizon)

    def _repair(self, hosts: list[int], incident_id: int, lemon: bool, law: RepairLaw):
        t = self.env.now
        self._mark(hosts, "draining", t, t + self.drain)
        self._mark(hosts, "diagnosing", t + self.drain, t + self.drain + self.diagnose)
        yield self.env.timeout(self.drain + self.diagnose)
        if self.automatic > 0 and not lemon:
            fixed = yield from self._automatic(hosts)
            if fixed is not None:  # it handled the host: no hands-on repair
                yield from self._return(hosts, incident_id, fixed)
                return
        with self.technicians.request() as turn:
            waited_from = self.env.now
            self.waiting[turn] = (hosts, waited_from)
            yield turn
            del self.waiting[turn]
            self._mark(hosts, "down", waited_from, self.env.now)  # diagnosed, waiting for hands
            vendor = lemon or self.rng.random() < law.rma_fraction
            hands_on = self.rng.exponential(law.fix)
            self._mark(hosts, "repair", self.env.now, self.env.now + hands_on)
            yield self.env.timeout(hands_on)
        if vendor:  # the part goes back to the vendor: the host waits, the technician does not
            turnaround = self.rng.exponential(law.rma_time)
            self._mark(hosts, "repair", self.env.now, self.env.now + turnaround)
            yield self.env.timeout(turnaround)
        yield from self._return(hosts, incident_id, not self._silent(self.manual_silent))

    def finish(self, horizon: float) -> None:
        """The run ends at `horizon`: hosts still waiting for a technician are down until then."""
        for hosts, since in self.waiting.values():
            self._mark(hosts, "down", since, horizon)
        self.waiting.clear()

    def _automatic(self, hosts: list[int]):
        """The automatic repair; True or False (truly fixed or not) if it handled the host, None if it
        escalates to hands-on repair."""
        took = self.outcome_rng.exponential(self.automatic)
        self._mark(hosts, "repair", self.env.now, self.env.now + took)
        yield self.env.timeout(took)
        self.automatic_repairs += 1
        if self.outcome_rng.random() < self.escalation:
            self.escalated += 1
            return None
        return not self._silent(self.automatic_silent)

    def _silent(self, probability: float) -> bool:
        """Whether a repair that reports success is silently wrong (no draw when it never is)."""
        silent = probability > 0 and self.outcome_rng.random() < probability
        self.silent_failures += int(silent)
        return silent

    def _return(self, hosts: list[int], incident_id: int, fixed: bool):
        """Burn in, then hand the hosts back (an over-evicted suspect is its incident's repair too: the incident
        is repaired when the last of its hosts is back)."""
        self._mark(hosts, "burn_in", self.env.now, self.env.now + self.burn_in)
        yield self.env.timeout(self.burn_in)
        self.repaired_at[incident_id] = max(self.repaired_at.get(incident_id, 0.0), self.env.now)
        if self.on_outcome is not None:
            self.on_outcome(hosts, fixed)
        for host in hosts:
            self.on_returned(host)

    def _mark(self, hosts: list[int], state: str, start: float, end: float) -> None:
        if end > start:
            self.intervals.extend(HostInterval(h, state, start, end) for h in hosts)
