"""What the simulator produces, as typed records: the one vocabulary between the model (engine.sim.simulate) and
the modules that turn a simulation into tables (engine.sim.tables, engine.sim.host_timeline) and a summary
(engine.analysis.summary).

Field names are the store's column names wherever a record becomes a table row (DESIGN "The store"), so a
reader never needs a positional index. The records made by the thousand or more a run (intervals, attempts,
incidents) are NamedTuples: as cheap to build as the plain tuples they replace, and Polars reads a list of
them as rows. A research job is a small mutable dataclass because the lane that runs it fills in how it ended.
"""

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import polars as pl

from engine.fabric.topology import Topology

# An Incident's xid, host_id, gpu_id or link_id when it has none (engine.sim.failures.NO_XID is -1 too), and a
# LaneInterval's job while the lane is idle; null in the tables.
NONE = -1


def research_job_id(index: int) -> str:
    """The id of the `index`-th research job of a run (the Polars twin: research_job_id_expr)."""
    return f"research-{index:05d}"


def research_job_id_expr(index: pl.Expr) -> pl.Expr:
    """research_job_id over a column of job indexes."""
    return pl.format("research-{}", index.cast(pl.String).str.zfill(5))


class HostInterval(NamedTuple):
    """A host in `state` over [start_s, end_s): a row of one layer of host_states (engine.sim.host_timeline)."""

    host_id: int
    state: str
    start_s: float
    end_s: float
    job_id: str | None = None


class LaneInterval(NamedTuple):
    """A research lane idle ("healthy") or running its `job`-th research job (NONE while idle) over an
    interval; every host of the lane shares it (engine.sim.host_timeline expands it host by host)."""

    lane: int
    state: str
    start_s: float
    end_s: float
    job: int


class Attempt(NamedTuple):
    """A contiguous run of the flagship job on a full set of hosts: a row of job_attempts."""

    attempt: int
    start_s: float
    end_s: float
    end_reason: str
    lost_work_s: float
    hosts: np.ndarray  # int32, one host a slot (a rank's place)


@dataclass(slots=True)
class ResearchJob:
    """One research job on a lane (engine.sim.research); `index`, its place in the run's list, names it."""

    index: int
    lane: int
    hosts: int  # the lane's size
    submit_s: float
    start_s: float
    end_s: float = math.nan
    state: str = "running"  # then completed, failed or preempted; running again if the run ends first
    end_reason: str = ""
    lost_work_s: float = 0.0  # its whole run, when a failure ended it (research jobs keep no checkpoints)

    @property
    def job_id(self) -> str:
        return research_job_id(self.index)


class Incident(NamedTuple):
    """A failure or planned stop: a row of incidents, before costs and repair times are added."""

    t_s: float  # when the fault happened
    detected_s: float
    cause: str
    planned: bool
    xid: int
    host_id: int
    gpu_id: int
    link_id: int
    flagship: str | None  # the flagship job's id if it was interrupted
    research: tuple[ResearchJob, ...]  # the research jobs it ended, in host order
    lost_work_s: float  # the flagship job's work thrown away

    @property
    def job_ids(self) -> list[str]:
        """The jobs hit, the flagship first (the incidents table's job_ids)."""
        return ([self.flagship] if self.flagship is not None else []) + [job.job_id for job in self.research]


@dataclass(slots=True)
class SlowEpisode:
    """A fail-slow episode (engine.sim.slow): `host` ran at 1/`factor` of its speed over [start_s, end_s). Detected
    at `detected_s` (NaN: slow.policy is ignore, or it ended first); `action` is what was done about it: "none",
    "swap" (the host was swapped out of the flagship job then) or "drain" (it left at the job's next
    interruption, `left_s`). `bound` holds the spans [since, until) it was its host's binding episode (the largest
    factor among the host's episodes under way; ties to the one that started first; until is inf while it still
    was at the end), which engine.sim.slow.episode_costs joins with the flagship job's JobLedger.slowdown_blame."""

    host: int
    start_s: float
    end_s: float
    cause: str
    factor: float
    gpu_index: int = 0  # the GPU (0 .. GPUs a host - 1) a GPU cause holds down (engine.telemetry.clocks)
    detected_s: float = math.nan
    action: str = "none"
    left_s: float = math.nan  # when the host left the flagship job for repair (swap, drain)
    bound: list[tuple[float, float]] = field(default_factory=list, compare=False, repr=False)


@dataclass
class JobLedger:
    """What the flagship job did, filled in as it runs (engine.sim.training); engine.analysis.ledger reads its
    seconds."""

    attempts: list[Attempt] = field(default_factory=list)
    checkpoint_starts: list[np.ndarray] = field(default_factory=list)  # one array an attempt
    restart_s: float = 0.0
    waiting_s: float = 0.0
    lost_work_s: float = 0.0
    checkpoint_s: float = 0.0  # blocking writes that were not thrown away
    productive_s: float = 0.0
    resumed_at: list[float] = field(default_factory=list)  # each time a new attempt began (after the first)
    # The recovery strategies (engine.sim.recovery); all zero under restart.
    # Full-job seconds of training lost while data-parallel replicas were out (replica_drop): k/R of the time.
    degraded_s: float = 0.0
    standby_host_s: float = 0.0  # host-seconds warm standbys sat idle (hot_spare)
    hot_swaps: int = 0  # restarts that swapped in warm standbys only (hot_spare)
    memory_restores: int = 0  # interruptions resumed from peers' in-memory copies (in_memory_checkpoint)
    storage_fallbacks: int = 0  # in_memory_checkpoint: interruptions whose copy was lost or suspect
    replica_drops: int = 0  # replicas dropped by a failure confined to them (replica_drop)
    rejoins: int = 0  # replicas that rejoined after their hosts were replaced (replica_drop)
    # Full-job seconds of training lost to running at a fail-slow host's pace (engine.sim.slow): (1 - 1/f) of the
    # training time while the slowest of its hosts runs at 1/f.
    slowdown_s: float = 0.0
    # slowdown_s stretch by stretch: (the binding host, the stretch's start, full-job seconds lost in it); the host
    # is the slowest of the job's (ties to the one slow the longest). Sums to slowdown_s (engine.sim.slow.episode_costs)
    slowdown_blame: list[tuple[int, float, float]] = field(default_factory=list)
    finished_s: float | None = None  # when the job's work (training.work) was done; None: not (or none set)


@dataclass(frozen=True, slots=True)
class FlagshipRecord:
    """The flagship job of a run: its size, its checkpoint write, its ledger and how it recovers."""

    job_id: str
    gpus: int
    checkpoint_write_s: float
    ledger: JobLedger
    recovery: str = "restart"  # training.recovery


@dataclass(frozen=True)
class HostHealthRecord:
    """What the run did to its hosts' health (made by engine.sim.bad_hosts), for bad_host_summary and hosts.bad."""

    drawn_bad: np.ndarray  # bool a host: bad at the start (the ground truth of hosts.bad)
    bad_at_end: np.ndarray  # bool a host: still bad at the end (retired ones included)
    retired: tuple[int, ...]  # in the order they were retired
    retired_bad: int  # of them, bad when retired
    cured: int  # bad hosts a repair cured
    missed_diagnoses: int
    wrong_host_diagnoses: int
    over_evicted_hosts: int
    systematic_failures: int  # failures of bad hosts beyond the base rate that struck
    automatic_repairs: int
    escalated_repairs: int  # automatic repairs that went on to hands-on repair
    silent_repair_failures: int  # repairs that reported success and left the fault (any host)


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """Everything engine.sim.tables and engine.analysis.summary read of a finished simulation."""

    horizon_s: float
    gpus_per_host: int
    topology: Topology
    job_id: str  # the flagship job's name, also when the scenario runs none
    job: FlagshipRecord | None
    incidents: list[Incident]
    # host_states layers: who held flagship-family hosts (running, spare), research hosts lent to the flagship
    # job, and repairs (which win over the others)
    flagship_intervals: list[HostInterval]
    borrowed_intervals: list[HostInterval]
    repair_intervals: list[HostInterval]
    repaired_at: dict[int, float]  # incident index -> when its hosts were back in service
    research_jobs: list[ResearchJob]
    lane_hosts: list[np.ndarray]  # the hosts of each research lane
    lane_intervals: list[LaneInterval]
    lemons: int  # incidents whose hosts were pulled as lemons
    hosts_in_repair_at_end: int
    research_preemptions: int
    # bad hosts, diagnosis, repair outcomes and retirement (engine.sim.bad_hosts); simulate() sets it
    health: HostHealthRecord | None = None
    slow_episodes: tuple[SlowEpisode, ...] = ()  # fail-slow episodes drawn over the run (engine.sim.slow)
    # failures of several hosts noticed at one instant (a burst, engine.sim.failures.draw_bursts): the hosts each
    # struck (those in service), in the order they were noticed
    bursts: tuple[int, ...] = ()

    @property
    def lane_sizes(self) -> np.ndarray:
        """Hosts of each research lane (int64), or one 0 when there are none, so indexing it stays valid."""
        return np.array([hosts.size for hosts in self.lane_hosts] or [0], dtype=np.int64)
