"""The goodput ledger of a job: where every second of its wall-clock time went (engine/analysis/definitions/goodput.py).

    wall clock = productive + lost work + restart + checkpoint writes + waiting for spares + degraded
                 + slowdown + network slowdown

The buckets are Google's ML goodput buckets where they apply (checkpoint save = checkpoint writes; checkpoint
restore and infrastructure recovery = restart; wasted progress from disruption = lost work; scheduling while
the job is down = waiting for spares) plus two Google has no bucket for: the network's placement slowdown, and
the training lost while data-parallel replicas are out (`degraded`, the replica_drop recovery strategy:
engine.sim.recovery), k/R of the time with k of R replicas out, and the training lost while the job runs at the
pace of a fail-slow host (`slowdown`, engine.sim.slow: 1 - 1/f of the time at 1/f), kept apart from failures.
`productive` is progress at full speed; ETTR, Meta's measure, counts time and so counts slowed steps as
productive: ETTR = (productive + network slowdown) / wall clock, goodput with network = productive / wall clock.

The simulator (engine.sim.training) fills engine.sim.records.JobLedger as the job runs;
`GoodputLedger.from_training` turns it into this record for the run summary (engine.analysis.summary), and
`from_summary` reads it back from any stored run, so the
Overview, the Jobs page, the exports and `goodput simulate --json` show the same numbers.
"""

import math
from dataclasses import dataclass

from engine.units import SECONDS_PER_HOUR

# The buckets in the order they are drawn (engine.report.palette.LOSS_COLOURS / LOSS_LABELS name them).
BUCKETS: tuple[str, ...] = (
    "productive",
    "lost_work",
    "restart",
    "checkpoint",
    "waiting_for_spares",
    "degraded",
    "slowdown",
    "network_slowdown",
)
# Each bucket's definition (engine/analysis/definitions/goodput.py): its label and help wherever the bucket is shown.
BUCKET_DEFINITIONS: dict[str, str] = {
    "productive": "productive",
    "lost_work": "lost_work",
    "restart": "restart_overhead",
    "checkpoint": "checkpoint_writes",
    "waiting_for_spares": "waiting_for_spares",
    "degraded": "degraded_replicas_out",
    "slowdown": "slowdown_fail_slow",
    "network_slowdown": "network_slowdown",
}
# The losses counted as "Goodput lost" (summary job.lost_gpu_hours): time the job did not train, and the share
# of training its missing replicas did not do (degraded) or its fail-slow hosts held back (slowdown).
LOSSES: tuple[str, ...] = ("lost_work", "restart", "checkpoint", "waiting_for_spares", "degraded", "slowdown")
# Buckets a summary written before them lacks: read back as 0 (degraded came with the recovery strategies,
# slowdown with fail-slow episodes; a run without fail-slow episodes leaves it out of its summary).
LATER_BUCKETS: tuple[str, ...] = ("degraded", "slowdown")


@dataclass(frozen=True)
class GoodputLedger:
    """One job's wall-clock time split into BUCKETS, in seconds; `gpus` turns seconds into GPU-hours."""

    gpus: int
    wall_clock_s: float
    productive_s: float
    lost_work_s: float
    restart_s: float
    checkpoint_s: float
    waiting_for_spares_s: float
    network_slowdown_s: float = 0.0
    degraded_s: float = 0.0
    slowdown_s: float = 0.0

    @classmethod
    def from_training(
        cls, ledger, *, gpus: int, wall_clock_s: float, slowdown: float = 1.0
    ) -> "GoodputLedger":
        """From the simulator's engine.sim.training.JobLedger; `slowdown` is engine.fabric.traffic.placement_slowdown
        (1.0: not slowed; not finite: the job cannot run where it sits, so none of its time is progress)."""
        trained = float(ledger.productive_s)
        at_full_speed = trained / slowdown if math.isfinite(slowdown) and slowdown >= 1.0 else 0.0
        return cls(
            gpus=gpus,
            wall_clock_s=float(wall_clock_s),
            productive_s=at_full_speed,
            lost_work_s=float(ledger.lost_work_s),
            restart_s=float(ledger.restart_s),
            checkpoint_s=float(ledger.checkpoint_s),
            waiting_for_spares_s=float(ledger.waiting_s),
            network_slowdown_s=trained - at_full_speed,
            degraded_s=float(ledger.degraded_s),
            slowdown_s=float(ledger.slowdown_s),
        )

    @classmethod
    def from_summary(cls, summary: dict) -> "GoodputLedger | None":
        """From a run summary's `job.ledger_s` (engine.analysis.summary), or None for a run without a flagship job
        ledger (replayed and ingested runs, runs from before the ledger was stored)."""
        job = summary.get("job") if isinstance(summary, dict) else None
        seconds = job.get("ledger_s") if isinstance(job, dict) else None
        if not isinstance(seconds, dict) or not isinstance(job.get("gpus"), int | float):
            return None
        try:
            return cls(
                gpus=int(job["gpus"]),
                wall_clock_s=float(seconds["wall_clock"]),
                **{
                    f"{b}_s": float(seconds.get(b, 0.0) if b in LATER_BUCKETS else seconds[b])
                    for b in BUCKETS
                },
            )
        except (KeyError, TypeError, ValueError):
            return None

    def seconds(self) -> dict[str, float]:
        """Bucket -> seconds, in BUCKETS order."""
        return {b: getattr(self, f"{b}_s") for b in BUCKETS}

    def gpu_hours(self) -> dict[str, float]:
        """Bucket -> GPU-hours (seconds x the job's GPUs)."""
        return {b: s * self.gpus / SECONDS_PER_HOUR for b, s in self.seconds().items()}

    @property
    def ettr(self) -> float:
        """Productive time (slowed steps included) / wall clock: Meta's ETTR (summary job.ettr)."""
        return (self.productive_s + self.network_slowdown_s) / self.wall_clock_s if self.wall_clock_s else 0.0

    @property
    def goodput_with_network(self) -> float:
        """Progress at full speed / wall clock (summary job.ettr_with_network)."""
        return self.productive_s / self.wall_clock_s if self.wall_clock_s else 0.0

    @property
    def lost_s(self) -> float:
        """The losses of "Goodput lost": time the job did not train, trained without its missing replicas or at
        a fail-slow host's pace (network slowdown not included)."""
        return sum(getattr(self, f"{b}_s") for b in LOSSES)

    @property
    def lost_gpu_hours(self) -> float:
        return self.lost_s * self.gpus / SECONDS_PER_HOUR

    def to_json(self) -> dict[str, float]:
        """What the summary stores as `job.ledger_s`: every bucket and the wall clock, in seconds."""
        return self.seconds() | {"wall_clock": self.wall_clock_s}


def cluster_progress_share(
    *, flagship_productive_gpu_s: float, research_progress_gpu_s: float, cluster_gpu_s: float
) -> float:
    """Utilisation (progress): GPU-seconds that became kept progress over all GPU-seconds of the cluster."""
    if cluster_gpu_s <= 0:
        return 0.0
    return (flagship_productive_gpu_s + research_progress_gpu_s) / cluster_gpu_s
