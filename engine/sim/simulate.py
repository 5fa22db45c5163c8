"""`simulate(scenario) -> Run`: the SimPy wiring of cluster, failures, flagship job, research jobs and repair.

Randomness: one SeedSequence from `simulation.seed`, spawned into independent children (topology UUIDs,
failure arrivals, planned stops, repair times, research jobs, telemetry), so changing one part's settings
never shifts another part's draws. Failures are drawn up front (engine.sim.failures) and fed to the event loop in
the order they are noticed; everything else reacts to them.
"""

from collections import deque
from collections.abc import Callable

import numpy as np
import simpy

from engine import telemetry
from engine.fabric.topology import (
    CTSW_PER_POD,
    FLAGSHIP,
    IN_REPAIR,
    RESEARCH,
    SPARE,
    Topology,
    build_topology,
)
from engine.fabric.traffic import network_run
from engine.scenario import Scenario
from engine.sim.failures import CAUSE_KEYS, SCOPE, Arrivals, draw_arrivals, draw_planned
from engine.sim.host_timeline import host_states
from engine.sim.records import NONE, FlagshipRecord, HostInterval, Incident, ResearchJob, SimulationResult
from engine.sim.repair import Repairs
from engine.sim.research import ResearchLanes
from engine.sim.summary import summarize
from engine.sim.tables import incidents_frame, job_frames
from engine.sim.training import FlagshipJob
from engine.store.run import Run

PROGRESS_STEPS = 20


class Simulation:
    """The state the processes share: who holds each host, the spare pool, the records."""

    def __init__(self, scenario: Scenario, topo: Topology, rngs: dict[str, np.random.Generator]) -> None:
        self.scenario, self.topo = scenario, topo
        self.env = simpy.Environment()
        self.horizon = scenario.duration_s
        self.holder = topo.role.copy()
        self.spares = deque(topo.hosts_with(SPARE).tolist())
        self.job_id = scenario["training.name"]
        self.base: list[HostInterval] = []  # flagship-family hosts: running or spare
        self._open: dict[int, tuple[str, float]] = {}  # flagship-family host -> (state, since)
        for h in topo.hosts_with(FLAGSHIP).tolist():
            self._open[h] = ("running", 0.0)
        for h in self.spares:
            self._open[h] = ("spare", 0.0)
        self.repairs = Repairs(self.env, scenario, rngs["repair"], self._returned)
        self.research = ResearchLanes(self.env, scenario, rngs["research"], topo.hosts_with(RESEARCH))
        self.research_hosts = topo.hosts_with(RESEARCH).tolist()
        # research hosts lent to the flagship when its spares ran out: host -> since; closed loans; their count
        self.borrowed: dict[int, float] = {}
        self.borrowed_intervals: list[HostInterval] = []
        self.preemptions = 0
        self.job = None
        if scenario.job_hosts and scenario["training.gpus"] > 0:
            self.job = FlagshipJob(
                self.env,
                self.job_id,
                topo.hosts_with(FLAGSHIP).tolist(),
                checkpoint_interval_s=scenario["training.checkpoint_interval"],
                checkpoint_write_s=scenario.checkpoint_write_s,
                restart_overhead_s=scenario["training.restart_overhead"],
                take_spare=self._take_spare,
                on_hosts_changed=self._job_hosts_changed,
            )
        self.incidents: list[Incident] = []

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
        if self.spares:
            return self.spares.popleft()
        return self._preempt_research() if self.scenario["spares.preempt_research"] else None

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
        return best

    def _job_hosts_changed(self, added: list[int], removed: list[int]) -> None:
        for h in added:
            self.holder[h] = FLAGSHIP
            self._set(h, "running")

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
        for i in range(len(arrivals)):
            yield self.env.timeout(arrivals.detected_s[i] - self.env.now)
            self._failure(arrivals, i)

    def planned(self, times: np.ndarray):
        for t in times.tolist():
            yield self.env.timeout(t - self.env.now)
            if self.job is None:
                continue
            before = len(self.job.ledger.attempts)
            if self.job.interrupt("planned_maintenance", []):
                self._record(
                    Incident(
                        t,
                        t,
                        "planned_maintenance",
                        True,
                        NONE,
                        NONE,
                        NONE,
                        NONE,
                        self.job_id,
                        (),
                        self._lost_since(before),
                    )
                )

    def _failure(self, a: Arrivals, i: int) -> None:
        host = int(a.host[i])
        if self.holder[host] == IN_REPAIR:
            return  # thinned: the host is not in service
        cause = CAUSE_KEYS[a.cause[i]]
        fault, now = float(a.fault_s[i]), self.env.now
        per_host = self.topo.gpus_per_host
        gpu = host * per_host + int(a.gpu_index[i])
        xid = int(a.xid[i])
        link = NONE
        if cause in ("network_switch_cable", "nic"):
            link = (
                self.topo.rack_link_base + int(self.topo.host_rack[host]) * CTSW_PER_POD
                if a.rack_wide[i]
                else self.topo.gpu_link_base + gpu
            )
        gpu_id = gpu if SCOPE[cause] == "gpu" else NONE
        flagship: str | None = None
        research: list[ResearchJob] = []
        lost = 0.0
        if SCOPE[cause] == "job":  # the job restarts on the same hosts; an idle host has no job to break
            if self.holder[host] == FLAGSHIP and self.job is not None:
                before = len(self.job.ledger.attempts)
                if not self.job.interrupt(cause, [], fault):
                    return  # the job is waiting for hosts: there is nothing running to break
                flagship = self.job_id
                lost = self._lost_since(before)
            elif self.research.running_on(host):
                research.append(self.research.failure(host, cause, takes_host=False))
            else:
                return
            self._record(
                Incident(fault, now, cause, False, xid, host, gpu_id, link, flagship, tuple(research), lost)
            )
            return
        hosts = list(self.topo.rack_hosts(int(self.topo.host_rack[host]))) if a.rack_wide[i] else [host]
        hosts = [h for h in hosts if self.holder[h] != IN_REPAIR]
        flagship_hit = []
        for h in hosts:
            if self.holder[h] == FLAGSHIP:
                flagship_hit.append(h)
            elif self.holder[h] == SPARE:
                self.spares.remove(h)
            elif self.holder[h] == RESEARCH:
                job = self.research.failure(h, cause, takes_host=True)
                if job is not None:
                    research.append(job)
            self.holder[h] = IN_REPAIR
            self._set(h, None)
        if flagship_hit and self.job is not None:
            before = len(self.job.ledger.attempts)
            if self.job.interrupt(cause, flagship_hit, fault):
                flagship = self.job_id
                lost = self._lost_since(before)
        incident = self._record(
            Incident(fault, now, cause, False, xid, host, gpu_id, link, flagship, tuple(research), lost)
        )
        self.repairs.start(hosts, incident)

    def _lost_since(self, attempts_before: int) -> float:
        """The work the interruption just threw away: that of the attempt it closed, if it closed one."""
        attempts = self.job.ledger.attempts
        return attempts[-1].lost_work_s if len(attempts) > attempts_before else 0.0

    def _record(self, incident: Incident) -> int:
        """Keep `incident`; its index (the incident_id) lets the repair report when its hosts are back."""
        self.incidents.append(incident)
        return len(self.incidents) - 1

    # ----- the end ---------------------------------------------------------------------------------------
    def finish(self) -> None:
        for h in list(self._open) + list(self.borrowed):
            self._set(h, None)
        if self.job is not None:
            self.job.finish(self.horizon)
        self.research.finish(self.horizon)

    def result(self) -> SimulationResult:
        """What the run produced, for the tables and the summary (after `finish`)."""
        job = None
        if self.job is not None:
            job = FlagshipRecord(self.job_id, self.scenario["training.gpus"], self.job.w, self.job.ledger)
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
        )


def simulate(
    scenario: Scenario,
    *,
    name: str | None = None,
    progress: Callable[[float], None] | None = None,
    summary_only: bool = False,
    arrivals: Arrivals | None = None,
    planned_times: np.ndarray | None = None,
    kind: str = "simulate",
) -> Run:
    """Run `scenario` and return its Run (kind simulate): metadata, summary and the store tables.

    `summary_only` (the planner's sliders): the same events and summary, but only the incidents table is built
    (no hosts, GPUs, links, jobs, host_states or telemetry), which keeps a llama3-405b run well under a second.
    `arrivals` and `planned_times` (replay then fork, engine.replay.incidents): feed exactly these failures and
    planned stops instead of drawing them; every other part still draws from its own child generator, so a
    run's own failures fed back under the same scenario reproduce it.
    """
    children = np.random.SeedSequence(scenario["simulation.seed"]).spawn(6)
    rngs = {
        part: np.random.default_rng(seq)
        for part, seq in zip(
            ("topology", "failures", "planned", "repair", "research", "telemetry"), children, strict=True
        )
    }
    topo = build_topology(scenario, rngs["topology"])
    sim = Simulation(scenario, topo, rngs)
    if arrivals is None:
        arrivals = draw_arrivals(scenario, topo.n_hosts, rngs["failures"])
    if planned_times is None:
        planned_times = draw_planned(scenario, rngs["planned"])
    sim.env.process(sim.failures(arrivals))
    sim.env.process(sim.planned(np.sort(np.asarray(planned_times, dtype=float))))
    for step in range(1, PROGRESS_STEPS + 1):
        sim.env.run(until=sim.horizon * step / PROGRESS_STEPS)
        if progress is not None:
            progress(step / PROGRESS_STEPS)
    sim.finish()
    result = sim.result()
    incidents = incidents_frame(result)
    summary = summarize(scenario, result, incidents)
    tables = {"incidents": incidents}
    if not summary_only:
        jobs, attempts, checkpoints = job_frames(result)
        tables.update(
            {
                "hosts": topo.hosts,
                "gpus": topo.gpus,
                "links": topo.links,
                "jobs": jobs,
                "job_attempts": attempts,
                "checkpoints": checkpoints,
                "host_states": host_states(result),
            }
        )
        if scenario["simulation.telemetry"]:
            tables.update(_telemetry(scenario, tables, rngs["telemetry"]))
            # network (engine.fabric.traffic): link_samples and summary["network"]; a seventh child of the seed, so
            # the six above draw exactly what they drew before
            network_rng = np.random.default_rng(
                np.random.SeedSequence(scenario["simulation.seed"]).spawn(7)[6]
            )
            tables["link_samples"], summary["network"] = network_run(
                scenario, topo, tables["host_states"], incidents, result.horizon_s, network_rng
            )
    return Run(
        kind=kind,
        name=name or scenario.preset or "simulation",
        started_at=scenario["simulation.start"],
        duration_s=result.horizon_s,
        scenario=scenario.to_dict(),
        seed=scenario["simulation.seed"],
        summary=summary,
        tables=tables,
    )


def _telemetry(scenario: Scenario, tables: dict, rng: np.random.Generator) -> dict:
    """Per-GPU samples and XID events (engine.telemetry), each drawn from a child of the telemetry generator."""
    sample_rng, xid_rng = rng.spawn(2)
    return {
        "gpu_samples": telemetry.gpu_samples(
            scenario,
            tables["gpus"],
            tables["host_states"],
            tables["incidents"],
            tables["checkpoints"],
            sample_rng,
        ),
        "xid_events": telemetry.xid_events(tables["incidents"], tables["gpus"], xid_rng),
    }
