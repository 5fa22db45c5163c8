"""The SimPy model: the wiring of cluster, failures, flagship job, research jobs and repair, run by `run_model`.

engine.twin.simulate builds a whole Run from it (tables, telemetry, network, summary); this module stops at the
simulator's own records (engine.sim.records), so the model never depends on what reads it.

Randomness: each part draws from its own named stream of `simulation.seed` (engine.sim.streams: topology
UUIDs, failure arrivals, planned stops, repair times, research jobs, telemetry, the network model, bad hosts,
diagnosis and repair outcomes in engine.sim.bad_hosts, and fail-slow episodes in engine.sim.slow), so changing
one part's settings never shifts another part's draws. Failures and fail-slow episodes are drawn up front
(engine.sim.failures, engine.sim.slow) and fed to the event loop in the order they are noticed; everything else
reacts to them.

Failures of several hosts noticed at one instant with one cause (a burst, engine.sim.failures.draw_bursts, or the
same faults fed back by a replay: `simultaneous_groups`) are one event: each host struck is an incident of its own,
thinned, diagnosed and repaired as any, but the flagship job is interrupted once, after all of them, with every
host of it that left (so a recovery strategy sees them together: in-memory copies lost with their peers, replicas
all out at once), and that interruption is the incident of the first host of the job struck; the other
incidents name no flagship job, as a rack switch's fault is one interruption for all of its hosts.
"""

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import simpy
from simpy.core import StopSimulation

from engine.fabric.topology import (
    CTSW_PER_POD,
    FLAGSHIP,
    IN_REPAIR,
    RESEARCH,
    SPARE,
    Topology,
    build_topology,
)
from engine.scenario import Scenario
from engine.sim.bad_hosts import RETIRED, HostHealth, fault_generators
from engine.sim.failures import (
    BURST_SCOPES,
    CAUSE_KEYS,
    SCOPE,
    Arrivals,
    burst_per_day,
    draw_arrivals,
    draw_bad_host_arrivals,
    draw_bursts,
    draw_planned,
    merge_arrivals,
)
from engine.sim.records import NONE, FlagshipRecord, HostInterval, Incident, ResearchJob, SimulationResult
from engine.sim.recovery import JobWiring, flagship_job, standbys_wanted
from engine.sim.repair import Repairs
from engine.sim.research import ResearchLanes
from engine.sim.slow import FailSlow, draw_episodes, slowness_on
from engine.sim.streams import Stream, generator
from engine.sim.training import RUNNING

PROGRESS_STEPS = 20
# causes whose simultaneous failures of several hosts are one event (a burst): hardware and network, not a job's
GROUPED_CAUSES = np.array([SCOPE[c] in BURST_SCOPES for c in CAUSE_KEYS])


def simultaneous_groups(arrivals: Arrivals) -> np.ndarray:
    """Bounds of the runs of arrivals that are one event: consecutive arrivals with the same fault and detection
    times and the same cause of GROUPED_CAUSES, none rack-wide (a rack switch's fault is one event already).
    Arrivals [bounds[g], bounds[g + 1]) are group g; a lone arrival is a group of one. Drawn failures never tie
    but a burst's (engine.sim.failures.draw_bursts) and replayed ones."""
    n = len(arrivals)
    if n < 2:
        return np.arange(n + 1)
    cause, rack_wide = arrivals.cause, arrivals.rack_wide
    joins = (
        (arrivals.detected_s[1:] == arrivals.detected_s[:-1])
        & (arrivals.fault_s[1:] == arrivals.fault_s[:-1])
        & (cause[1:] == cause[:-1])
        & GROUPED_CAUSES[cause[1:]]
        & ~rack_wide[1:]
        & ~rack_wide[:-1]
    )
    return np.concatenate(([0], np.flatnonzero(~joins) + 1, [n]))


@dataclass
class _Burst:
    """The flagship job's part in failures of several hosts at one instant: it is interrupted once, after all."""

    leaving: list[int] = field(default_factory=list)  # its hosts gone to repair (or retired)
    hits: list[tuple[int, bool]] = field(default_factory=list)  # (incident, it hit a host training the job)
    struck: int = 0  # hosts struck (in service, not thinned)

    def carrier(self) -> int | None:
        """The incident that is the job's interruption: the first that hit a host training it, else the first."""
        return next((i for i, trains in self.hits if trains), self.hits[0][0] if self.hits else None)


class _Fault(NamedTuple):
    """A failure arrival that strikes: when it happened and was noticed, its cause, and what it names."""

    t_s: float
    detected_s: float
    cause: str
    xid: int
    host: int
    gpu_id: int  # NONE unless the cause is a GPU's
    link_id: int  # NONE unless the cause is a cable's or a NIC's
    rack_wide: bool  # a rack switch's fault: every host of the rack

    def incident(self, flagship: str | None, research: list[ResearchJob], lost_work_s: float) -> Incident:
        """Its row of incidents, with the jobs it hit and the flagship's work it threw away."""
        return Incident(
            t_s=self.t_s,
            detected_s=self.detected_s,
            cause=self.cause,
            planned=False,
            xid=self.xid,
            host_id=self.host,
            gpu_id=self.gpu_id,
            link_id=self.link_id,
            flagship=flagship,
            research=tuple(research),
            lost_work_s=lost_work_s,
        )


class Simulation:
    """The state the processes share: who holds each host, the spare pool, the records."""

    def __init__(self, scenario: Scenario, topo: Topology, rngs: dict[str, np.random.Generator]) -> None:
        self.scenario, self.topo = scenario, topo
        self.env = simpy.Environment()
        self.horizon = scenario.duration_s
        self.holder = topo.role.copy()
        self.spares = deque(topo.hosts_with(SPARE).tolist())
        self.job_id = scenario.training.name
        self.base: list[HostInterval] = []  # flagship-family hosts: running or spare
        self._open: dict[int, tuple[str, float]] = {}  # flagship-family host -> (state, since)
        for h in topo.hosts_with(FLAGSHIP).tolist():
            self._open[h] = ("running", 0.0)
        for h in self.spares:
            self._open[h] = ("spare", 0.0)
        # bad hosts, diagnosis, retirement, repair outcomes: generators of their own (engine.sim.bad_hosts)
        self.health = HostHealth(scenario, topo.n_hosts, fault_generators(scenario.simulation.seed))
        self.repairs = Repairs(
            self.env,
            scenario,
            rngs["repair"],
            self._returned,
            outcome_rng=self.health.generators.repair,
            on_outcome=self.health.repaired,
        )
        self.research = ResearchLanes(self.env, scenario, rngs["research"], topo.hosts_with(RESEARCH))
        self.research_hosts = topo.hosts_with(RESEARCH).tolist()
        # spares.selection = any_idle: the hosts that ever ran the flagship job, and the research hosts that never
        # did, in host order (engine.scenario.keys: AIReSim's host selection)
        self.any_idle = scenario.spares.selection == "any_idle"
        self.used_by_job: set[int] = set(topo.hosts_with(FLAGSHIP).tolist()) if self.any_idle else set()
        self.fresh_research = deque(self.research_hosts) if self.any_idle else deque()
        # research hosts lent to the flagship when its spares ran out: host -> since; closed loans; their count
        self.borrowed: dict[int, float] = {}
        self.borrowed_intervals: list[HostInterval] = []
        self.preemptions = 0
        self.job = None
        if scenario.job_hosts and scenario.training.gpus > 0:
            wiring = JobWiring(
                env=self.env,
                job_id=self.job_id,
                hosts=topo.hosts_with(FLAGSHIP).tolist(),
                take_spare=self._take_spare,
                on_hosts_changed=self._job_hosts_changed,
                standbys=self._hold_standbys(standbys_wanted(scenario, len(self.spares))),
                take_standby=self._take_standby,
                on_standby=self._hold_standby,
                on_done=self._job_done,
            )
            self.job = flagship_job(scenario, wiring)
        self.incidents: list[Incident] = []
        # failures noticed at one instant (a burst): the one being played (_burst_failures), the hosts each struck
        self._burst: _Burst | None = None
        self.bursts: list[int] = []
        self.slow: FailSlow | None = None  # fail-slow episodes (engine.sim.slow), when the scenario has any
        self._slow_repairs = 0
        if slowness_on(scenario):
            self.slow = FailSlow(
                self.env,
                scenario,
                draw_episodes(scenario, topo.n_hosts),
                in_job=self._in_job,
                slow_changed=lambda host, factor: self.job.slow_changed(host, factor),
                swap_out=self._swap_out_slow,
            )

    # ----- host bookkeeping -------------------------------------------------------------------------------
    def _set(self, host: int, state: str | None) -> None:
        """Close the host's open base interval and open `state` (None: it leaves the base layer)."""
        now = self.env.now
        if (
            host in self.borrowed
        ):  # a research host lent to the flagship: its own layer, closed when it leaves
            if state is None:
                since = self.borrowed.pop(host)
                if now > since:
                    self.borrowed_intervals.append(HostInterval(host, "running", since, now, self.job_id))
            return
        if host in self._open:
            old, since = self._open.pop(host)
            if now > since:
                job = self.job_id if old == "running" else None
                self.base.append(HostInterval(host, old, since, now, job))
        if state is not None:
            self._open[host] = (state, now)

    def _take_spare(self) -> int | None:
        """The host that replaces a failed one of the flagship job (spares.selection): from the spare pool, then
        a research host; under any_idle, an idle host that never ran the job first, wherever it is."""
        if self.any_idle and (fresh := self._fresh_idle()) is not None:
            return fresh
        if self.spares:
            if self.health.prefer_healthy:  # the fewest recent failures first (AIReSim's host selection)
                host = self.health.healthiest(self.spares, self.env.now)
                self.spares.remove(host)
                return host
            return self.spares.popleft()
        if self.any_idle and (idle := self._used_idle_research()) is not None:
            return idle
        return self._preempt_research() if self.scenario.spares.preempt_research else None

    def _fresh_idle(self) -> int | None:
        """spares.selection = any_idle: an idle host that never ran the job: the spare pool's first, else the first
        such research host with no job on it."""
        if self.spares and self.spares[0] not in self.used_by_job:
            return self.spares.popleft()
        for _ in range(len(self.fresh_research)):
            host = self.fresh_research.popleft()
            if host in self.used_by_job:
                continue  # it ran the job since: no longer fresh
            if self._idle_research_host(host):
                return self._lend(host)
            self.fresh_research.append(host)  # busy with research now: later
        return None

    def _used_idle_research(self) -> int | None:
        """spares.selection = any_idle, the pool empty: the first research host with no job on it."""
        for host in self.research_hosts:
            if self._idle_research_host(host):
                return self._lend(host)
        return None

    def _idle_research_host(self, host: int) -> bool:
        return self.holder[host] == RESEARCH and not self.research.running_on(host)

    def _lend(self, host: int) -> int:
        """An idle research host joins the flagship job without a preemption (no job runs there): its lane waits
        for it as for a repair, and it goes back to research after its own repair."""
        self.research.failure(host, "preempted", takes_host=True)
        self.holder[host] = FLAGSHIP
        self.borrowed[host] = self.env.now
        return host

    def _preempt_research(self) -> int | None:
        """No spare left: take a research host for the flagship job, preempting the research job on it.

        The host is taken from the smallest research lane, an idle one before a busy one, so the least research
        work stops; that lane waits until the host comes back (after a failure and its repair, the host returns
        to research, not to the flagship's spares). None when every research host is out of service."""
        research = self.research
        best, best_key = None, None
        for host in self.research_hosts:
            if self.holder[host] != RESEARCH:
                continue
            lane = research.lane_of.get(host)  # none when research.utilization is 0: the host idles
            key = (0 if lane is None else research.lanes[lane].hosts.size, research.running_on(host))
            if best_key is None or key < best_key:
                best, best_key = host, key
                if key[0] <= 1 and not key[1]:
                    break
        if best is None:
            return None
        research.failure(best, "preempted", takes_host=True)
        self.holder[best] = FLAGSHIP
        self.borrowed[best] = self.env.now
        self.preemptions += 1
        if (
            self.job is not None
        ):  # the research job stops and hands the host over before the flagship can use it
            self.job.hand_over(self.scenario.spares.preempt_handover)
        return best

    def _job_hosts_changed(self, added: list[int], removed: list[int]) -> None:
        if self.any_idle:
            self.used_by_job.update(added)
        for h in added:
            self.holder[h] = FLAGSHIP
            self._set(h, "running")
        if self.slow is not None:  # the job runs at the pace of the hosts it has now
            for h in removed:
                self.job.slow_changed(h, None)
            for h in added:
                if (factor := self.slow.factor(h)) is not None:
                    self.job.slow_changed(h, factor)

    # ----- fail-slow episodes (engine.sim.slow) --------------------------------------------------------------
    def _in_job(self, host: int) -> bool:
        return self.job is not None and host in self.job.slot_of

    def _swap_out_slow(self, hosts: list[int], reason: str) -> None:
        """Detected fail-slow hosts leave the flagship job for repair (slow.policy swap or drain): a graceful
        stop of the job (no work lost), spares in their places. Their repairs are no incident's: each gets an id
        of its own below 0 (Repairs keys its bookkeeping by incident)."""
        self.job.interrupt(reason, hosts)
        for h in hosts:
            self.slow.repaired(h)
            self.holder[h] = IN_REPAIR
            self._set(h, None)
            self._slow_repairs += 1
            self.repairs.start([h], -self._slow_repairs)

    def _job_interrupted(self) -> None:
        """The flagship job was just interrupted: hosts marked for draining (slow.policy = drain) leave now."""
        if self.slow is not None and self.slow.to_drain:
            self.slow.job_interrupted()

    def _returned(self, host: int) -> None:
        if self.topo.role[host] == RESEARCH:
            self.holder[host] = RESEARCH
            self.research.host_returned(host)
            return
        if self.job is not None and self.job.host_returned(host):
            return
        self.holder[host] = SPARE
        self.spares.append(host)
        self._set(host, "spare")

    # ----- processes -------------------------------------------------------------------------------------
    def failures(self, arrivals: Arrivals):
        bounds = simultaneous_groups(arrivals).tolist()
        for start, end in zip(bounds[:-1], bounds[1:], strict=True):
            yield self.env.timeout(arrivals.detected_s[start] - self.env.now)
            if end - start == 1:
                self._failure(arrivals, start)
            else:
                self._burst_failures(arrivals, start, end)

    def _burst_failures(self, arrivals: Arrivals, start: int, end: int) -> None:
        """Arrivals [start, end): one cause on several hosts at this instant. Each is played as a failure of its
        own; the flagship job's hosts among them leave it together, in one interruption after the last."""
        burst = self._burst = _Burst()
        try:
            for i in range(start, end):
                self._failure(arrivals, i)
        finally:
            self._burst = None
        self.bursts.append(burst.struck)
        carrier = burst.carrier()
        if carrier is None or self.job is None:
            return
        before = len(self.job.ledger.attempts)
        cause = CAUSE_KEYS[arrivals.cause[start]]
        if self.job.interrupt(cause, burst.leaving, float(arrivals.fault_s[start])):
            lost = self._lost_since(before)
            self.incidents[carrier] = self.incidents[carrier]._replace(flagship=self.job_id, lost_work_s=lost)
            self._job_interrupted()

    def planned(self, times: np.ndarray):
        for t in times.tolist():
            yield self.env.timeout(t - self.env.now)
            if self.job is None:
                continue
            before = len(self.job.ledger.attempts)
            if self.job.interrupt("planned_maintenance", []):
                self._record(
                    Incident(
                        t_s=t,
                        detected_s=t,
                        cause="planned_maintenance",
                        planned=True,
                        xid=NONE,
                        host_id=NONE,
                        gpu_id=NONE,
                        link_id=NONE,
                        flagship=self.job_id,
                        research=(),
                        lost_work_s=self._lost_since(before),
                    )
                )
                self._job_interrupted()

    def _failure(self, arrivals: Arrivals, index: int) -> None:
        host = int(arrivals.host[index])
        if self.holder[host] in (IN_REPAIR, RETIRED):
            return  # thinned: the host is not in service
        if not self._strikes(arrivals, index, host):
            return
        if self._burst is not None:
            self._burst.struck += 1
        fault = self._fault(arrivals, index, host)
        verdict = None
        if SCOPE[fault.cause] != "job" and not fault.rack_wide and self.health.diagnoses:
            verdict = self.health.diagnose(host, self._diagnosis_slots(host))
        if SCOPE[fault.cause] == "job" or (verdict is not None and verdict.missed):
            self._fault_in_service(fault, verdict)
        else:
            self._fault_out_of_service(fault, verdict)

    def _fault(self, arrivals: Arrivals, index: int, host: int) -> _Fault:
        """Arrival `index`, which strikes `host` now: its cause and the GPU or link it names."""
        cause = CAUSE_KEYS[arrivals.cause[index]]
        gpu = host * self.topo.gpus_per_host + int(arrivals.gpu_index[index])
        link = NONE
        if cause in ("network_switch_cable", "nic"):
            link = (
                self.topo.rack_link_base + int(self.topo.host_rack[host]) * CTSW_PER_POD
                if arrivals.rack_wide[index]
                else self.topo.gpu_link_base + gpu
            )
        return _Fault(
            t_s=float(arrivals.fault_s[index]),
            detected_s=self.env.now,
            cause=cause,
            xid=int(arrivals.xid[index]),
            host=host,
            gpu_id=gpu if SCOPE[cause] == "gpu" else NONE,
            link_id=link,
            rack_wide=arrivals.rack_wide[index],
        )

    def _fault_in_service(self, fault: _Fault, verdict) -> None:
        """The job restarts on the same hosts (a missed diagnosis leaves the host in service: a fault of its own,
        a job-level cause, or a hardware fault nobody found); an idle host has no job to break. In a burst the
        flagship job restarts once, after the burst (_burst_failures)."""
        if self._burst is not None and self._job_slots_holding(fault.host) is not None:
            incident = self._record(fault.incident(None, [], 0.0))
            self._burst.hits.append((incident, True))
        else:
            flagship, research, lost = self._restart_in_place(fault.host, fault.cause, fault.t_s)
            if SCOPE[fault.cause] == "job" and flagship is None and not research:
                return  # nothing running to break (or the job is waiting for hosts)
            incident = self._record(fault.incident(flagship, research, lost))
        if verdict is not None:
            self.repairs.repaired_at[incident] = (
                fault.detected_s
            )  # back in service at once, like a job-level fault

    def _fault_out_of_service(self, fault: _Fault, verdict) -> None:
        """The failed hosts (the one blamed and the suspects, after a diagnosis; else the host, or its whole rack)
        leave service for repair or for good; the jobs on them are interrupted or end."""
        host, now, cause = fault.host, fault.detected_s, fault.cause
        if verdict is not None:
            hosts, suspects = [verdict.blamed], list(verdict.suspects)
        else:
            hosts = list(self.topo.rack_hosts(int(self.topo.host_rack[host]))) if fault.rack_wide else [host]
            hosts = [h for h in hosts if self.holder[h] not in (IN_REPAIR, RETIRED)]
            suspects = []
        # a rack switch's fault is no host's: only a single-host failure counts against its host
        retiring = [] if fault.rack_wide else [h for h in hosts if self.health.blame(h, now)]
        flagship: str | None = None
        research: list[ResearchJob] = []
        lost = 0.0
        flagship_hit = []
        for h in hosts + suspects:
            if self.holder[h] == FLAGSHIP:
                flagship_hit.append(h)
            elif self.holder[h] == SPARE:
                self.spares.remove(h)
            elif self.holder[h] == RESEARCH:
                job = self.research.failure(h, cause, takes_host=True)
                if job is not None:
                    research.append(job)
            self.holder[h] = RETIRED if h in retiring else IN_REPAIR
            self._set(h, None)
        if flagship_hit and self.job is not None and self._burst is None:
            before = len(self.job.ledger.attempts)
            if self.job.interrupt(cause, flagship_hit, fault.t_s):
                flagship = self.job_id
                lost = self._lost_since(before)
        incident = self._record(fault.incident(flagship, research, lost))
        if flagship_hit and self.job is not None and self._burst is not None:  # interrupted after the burst
            self._burst.leaving.extend(flagship_hit)
            self._burst.hits.append((incident, any(h in self.job.slot_of for h in flagship_hit)))
        if flagship is not None:
            self._job_interrupted()
        for h in retiring:
            self.health.retire(h)
            self.repairs.retire(h)
        if len(retiring) < len(hosts):
            self.repairs.start([h for h in hosts if h not in retiring], incident, cause)
        for h in suspects:  # each suspect's repair is its own, part of the incident's (its class too)
            self.repairs.start([h], incident, cause)

    # ----- bad hosts, diagnosis, retirement (engine.sim.bad_hosts) ---------------------------------------
    def _strikes(self, arrivals: Arrivals, index: int, host: int) -> bool:
        """Whether arrival `index` is a failure: a bad host's extra arrival only while the host is bad, and under
        failures.only_while_computing only on a host that computes."""
        systematic = arrivals.systematic is not None and bool(arrivals.systematic[index])
        if not (systematic or self.health.only_while_computing):
            return True  # every key at its default: nothing to thin
        computing = self.health.only_while_computing and self._computing(host)
        return self.health.strikes(systematic, host, computing)

    def _computing(self, host: int) -> bool:
        """`host` trains the flagship job (its attempt running, not restarting or waiting) or runs research."""
        if self.holder[host] == FLAGSHIP:
            return self.job is not None and host in self.job.slot_of and self.job.phase == RUNNING
        return self.holder[host] == RESEARCH and self.research.running_on(host)

    def _job_slots_holding(self, host: int) -> np.ndarray | None:
        """The flagship job's host slots if `host` trains in one of them (a wrong host or a suspect is another)."""
        if self.job is not None and self.holder[host] == FLAGSHIP and host in self.job.slot_of:
            return self.job.slots
        return None

    def _diagnosis_slots(self, host: int) -> np.ndarray | None:
        """_job_slots_holding for diagnosis: in a burst, the job's hosts that already left it in the burst (still
        in its slots until it is interrupted) are no one's to blame or evict (-1, an empty slot)."""
        slots = self._job_slots_holding(host)
        if slots is None or self._burst is None or not self._burst.leaving:
            return slots
        return np.where(np.isin(slots, self._burst.leaving), -1, slots)

    def _restart_in_place(
        self, host: int, cause: str, fault: float
    ) -> tuple[str | None, list[ResearchJob], float]:
        """A fault that leaves `host` in service: the flagship job restarts on the same hosts, or the research
        job on it ends. (flagship job hit or None, research jobs ended, the flagship's work lost). A warm standby
        (training.recovery = hot_spare) is the flagship's but runs nothing: there is nothing to restart."""
        if self._job_slots_holding(host) is not None:
            before = len(self.job.ledger.attempts)
            if not self.job.interrupt(cause, [], fault):
                return None, [], 0.0  # the job is waiting for hosts: there is nothing running to break
            lost = self._lost_since(before)
            self._job_interrupted()
            return self.job_id, [], lost
        if self.research.running_on(host):
            return None, [self.research.failure(host, cause, takes_host=False)], 0.0
        return None, [], 0.0

    def _lost_since(self, attempts_before: int) -> float:
        """The work the interruption just threw away: that of the attempt it closed, if it closed one."""
        attempts = self.job.ledger.attempts
        return attempts[-1].lost_work_s if len(attempts) > attempts_before else 0.0

    def _record(self, incident: Incident) -> int:
        """Keep `incident`; its index (the incident_id) lets the repair report when its hosts are back."""
        self.incidents.append(incident)
        return len(self.incidents) - 1

    # ----- warm standbys (training.recovery = hot_spare, engine.sim.recovery.HotSpareJob) ----------------------
    # Hosts of the spare pool the job holds idle. They stay "spare" in host_states but are the flagship's
    # (holder FLAGSHIP), so a failure of one reaches the job, which replaces it.
    def _hold_standbys(self, count: int) -> list[int]:
        """Take `count` warm standbys from the spare pool at the start (standbys_wanted checked there are)."""
        return [self._take_standby() for _ in range(count)]

    def _take_standby(self) -> int | None:
        """A new standby from the spare pool; None when it is empty (research is not preempted for one)."""
        if not self.spares:
            return None
        host = self.spares.popleft()
        self.holder[host] = FLAGSHIP
        return host

    def _hold_standby(self, host: int) -> None:
        """A repaired host the job keeps as a standby instead of returning it to the pool."""
        self.holder[host] = FLAGSHIP
        self._set(host, "spare")

    # ----- the end ---------------------------------------------------------------------------------------
    @property
    def ended_early(self) -> bool:
        """Whether the flagship job's work (training.work) was done before simulation.days: the run ended then."""
        return self.horizon < self.scenario.duration_s

    def _job_done(self) -> None:
        """The flagship job's work is done: the run ends now, at its time to train (AIReSim's end of a run)."""
        self.horizon = self.env.now
        raise StopSimulation(self.env.now)  # SimPy's own way out of env.run, with nothing after it played

    def finish(self) -> None:
        for h in list(self._open) + list(self.borrowed):
            self._set(h, None)
        if self.job is not None:
            self.job.finish(self.horizon)
        self.research.finish(self.horizon)
        self.repairs.finish(self.horizon)

    def result(self) -> SimulationResult:
        """What the run produced, for the tables and the summary (after `finish`)."""
        job = None
        if self.job is not None:
            job = FlagshipRecord(
                self.job_id,
                self.scenario.training.gpus,
                self.job.checkpoint_write,
                self.job.ledger,
                self.job.strategy,
            )
        lanes = self.research
        return SimulationResult(
            horizon_s=self.horizon,
            gpus_per_host=self.topo.gpus_per_host,
            topology=self.topo,
            job_id=self.job_id,
            job=job,
            incidents=self.incidents,
            flagship_intervals=self.base,
            borrowed_intervals=self.borrowed_intervals,
            repair_intervals=self.repairs.intervals,
            repaired_at=self.repairs.repaired_at,
            research_jobs=lanes.jobs,
            lane_hosts=[lane.hosts for lane in lanes.lanes],
            lane_intervals=lanes.intervals,
            lemons=len(self.repairs.lemon_incidents),
            hosts_in_repair_at_end=int((self.holder == IN_REPAIR).sum()),
            research_preemptions=self.preemptions,
            slow_episodes=tuple(self.slow.episodes) if self.slow is not None else (),
            bursts=tuple(self.bursts),
        )


@dataclass(frozen=True)
class ModelRun:
    """What one run of the model gives its caller: the topology it drew, the simulator's records, the
    per-part random generators (the telemetry's is still unused) and which hosts were drawn bad."""

    topology: Topology
    result: SimulationResult
    rngs: dict[str, np.random.Generator]
    drawn_bad: np.ndarray


def run_model(
    scenario: Scenario,
    *,
    progress: Callable[[float], None] | None = None,
    arrivals: Arrivals | None = None,
    planned_times: np.ndarray | None = None,
) -> ModelRun:
    """Draw the cluster and its failures and run the event loop to the horizon.

    `arrivals` and `planned_times` (replay then fork, engine.replay.incidents): feed exactly these failures and
    planned stops instead of drawing them; every other part still draws from its own named stream, so a run's
    own failures fed back under the same scenario reproduce it.
    """
    seed = scenario.simulation.seed
    rngs = {
        part: generator(seed, stream)
        for part, stream in (
            ("topology", Stream.TOPOLOGY),
            ("failures", Stream.FAILURES),
            ("planned", Stream.PLANNED),
            ("repair", Stream.REPAIR),
            ("research", Stream.RESEARCH),
            ("telemetry", Stream.TELEMETRY),
        )
    }
    topo = build_topology(scenario, rngs["topology"])
    sim = Simulation(scenario, topo, rngs)
    if arrivals is None:
        arrivals = draw_arrivals(scenario, topo.n_hosts, rngs["failures"])
        bad = np.flatnonzero(sim.health.bad)  # their extra failures (arrivals fed in already hold them)
        if bad.size and scenario.failures.bad_host_multiplier > 1:
            extra = draw_bad_host_arrivals(scenario, bad, sim.health.generators.arrivals)
            arrivals = merge_arrivals(arrivals, extra)
        if burst_per_day(scenario) > 0:  # bursts, from a stream of their own (as are arrivals fed in)
            bursts = draw_bursts(scenario, topo.n_hosts, generator(seed, Stream.BURSTS))
            arrivals = merge_arrivals(arrivals, bursts)
    if planned_times is None:
        planned_times = draw_planned(scenario, rngs["planned"])
    sim.env.process(sim.failures(arrivals))
    sim.env.process(sim.planned(np.sort(np.asarray(planned_times, dtype=float))))
    if sim.slow is not None:
        sim.env.process(sim.slow.process())
    for step in range(1, PROGRESS_STEPS + 1):
        sim.env.run(until=scenario.duration_s * step / PROGRESS_STEPS)
        if progress is not None:
            progress(1.0 if sim.ended_early else step / PROGRESS_STEPS)
        if sim.ended_early:
            break
    sim.finish()
    repairs = sim.repairs
    result = replace(
        sim.result(),
        health=sim.health.record(repairs.automatic_repairs, repairs.escalated, repairs.silent_failures),
    )
    return ModelRun(topology=topo, result=result, rngs=rngs, drawn_bad=sim.health.drawn_bad)
