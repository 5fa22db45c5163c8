"""Per-job goodput of a watched run (definition `observed_job_goodput`).

A job's goodput is the time of its attempts that was kept over its wall clock, from its first start to its end
(or now). An attempt that completed, was cancelled or still runs counts whole. An interrupted attempt (ended in
one of INTERRUPTED) keeps, for a job whose checkpoints are read (engine.ingest.watch.checkpoints), only the time
from its start to its last checkpoint within it (nothing without one): the rest is lost when it restarts from that
checkpoint. Slurm records no checkpoints, so a job that logs none counts an interrupted attempt whole: its goodput
is an upper bound, and `checkpointed` says which.
"""

from dataclasses import dataclass

import polars as pl

from engine.units import SECONDS_PER_HOUR

# Attempts that ended in one of these (Slurm's states, lower case) interrupted their job.
INTERRUPTED = ("failed", "requeued", "node_fail", "preempted", "timeout", "out_of_memory", "boot_fail")
RUNNING = "end_of_run"  # end_reason of an attempt still running at the run's end (as replay writes it)


@dataclass(frozen=True)
class JobsGoodput:
    """The watched jobs' goodput together, and on what it stands (the run's summary)."""

    goodput: float | None  # kept GPU-time over wall-clock GPU-time; None before any job has run
    measured: int  # jobs whose checkpoints were read: their goodput is measured
    upper_bounds: int  # jobs without: their interrupted attempts count whole, an upper bound
    ledger: "ObservedLedger"


@dataclass(frozen=True)
class ObservedLedger:
    """Where the watched jobs' wall-clock GPU-hours went, each job from its first start to its end (or now):
    kept + lost_work + between_attempts = wall. goodput = kept / wall."""

    wall_gpu_h: float
    kept_gpu_h: float  # attempts' time kept (definition observed_job_goodput)
    lost_work_gpu_h: float  # interrupted attempts' time after their last checkpoint (observed_lost_work)
    between_attempts_gpu_h: (
        float  # outside every attempt: requeues, restarts, waits (observed_between_attempts)
    )

    def as_summary(self) -> dict[str, float]:
        """The summary's jobs_ledger_gpu_hours."""
        return {
            "wall": round(self.wall_gpu_h, 6),
            "kept": round(self.kept_gpu_h, 6),
            "lost_work": round(self.lost_work_gpu_h, 6),
            "between_attempts": round(self.between_attempts_gpu_h, 6),
        }


def job_goodput(
    jobs: pl.DataFrame, attempts: pl.DataFrame, now_s: float, checkpoints: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Each started job's observed goodput: job_id, gpus, wall_s (first start to end, or now), attempts_s (its
    attempts' time, whole), kept_s, interruptions (attempts ended in INTERRUPTED), checkpointed (its checkpoints
    were read: kept_s is measured, else an upper bound), goodput. `checkpoints` has the checkpoints table's
    job_id and end_s (the time saved)."""
    saved = _saved(checkpoints)
    per_attempt = attempts.select(
        pl.col("job_id").cast(pl.String),
        "start_s",
        "end_reason",
        attempts_s=(pl.col("end_s") - pl.col("start_s")).clip(0),
        kept_s=kept_per_attempt(attempts, checkpoints),
    )
    per_job = per_attempt.group_by("job_id").agg(
        attempts_s=pl.col("attempts_s").sum(),
        kept_s=pl.col("kept_s").sum(),
        first_s=pl.col("start_s").min(),
        interruptions=pl.col("end_reason").is_in(INTERRUPTED).sum().cast(pl.Int32),
    )
    frame = (
        jobs.filter(pl.col("start_s").is_not_null())
        .select("job_id", "gpus", "end_s")
        .join(per_job, on="job_id")
    )
    frame = frame.with_columns(
        wall_s=pl.col("end_s").fill_null(now_s) - pl.col("first_s"),
        checkpointed=pl.col("job_id").is_in(saved["job_id"].unique().implode()),
    )
    return frame.select(
        "job_id",
        "gpus",
        "wall_s",
        "attempts_s",
        "kept_s",
        "interruptions",
        "checkpointed",
        goodput=pl.when(pl.col("wall_s") > 0).then((pl.col("kept_s") / pl.col("wall_s")).clip(0, 1)),
    ).sort("job_id")


def jobs_goodput(
    jobs: pl.DataFrame, attempts: pl.DataFrame, now_s: float, checkpoints: pl.DataFrame | None = None
) -> JobsGoodput:
    """Kept GPU-time over wall-clock GPU-time of every started job (each job weighted by its GPUs), and how
    many jobs' goodput is measured (checkpoints read) and how many are upper bounds."""
    frame = job_goodput(jobs, attempts, now_s, checkpoints).filter(pl.col("wall_s") > 0)
    gpus_h = frame["gpus"].fill_null(0) / SECONDS_PER_HOUR
    wall = frame["wall_s"]
    attempts_s = frame["attempts_s"].clip(upper_bound=wall)
    kept = frame["kept_s"].clip(upper_bound=attempts_s)
    ledger = ObservedLedger(
        wall_gpu_h=float((wall * gpus_h).sum()),
        kept_gpu_h=float((kept * gpus_h).sum()),
        lost_work_gpu_h=float(((attempts_s - kept) * gpus_h).sum()),
        between_attempts_gpu_h=float(((wall - attempts_s) * gpus_h).sum()),
    )
    measured = int(frame["checkpointed"].sum())
    goodput = round(ledger.kept_gpu_h / ledger.wall_gpu_h, 6) if ledger.wall_gpu_h > 0 else None
    return JobsGoodput(goodput, measured, frame.height - measured, ledger)


def jobs_goodput_total(
    jobs: pl.DataFrame, attempts: pl.DataFrame, now_s: float, checkpoints: pl.DataFrame | None = None
) -> float | None:
    """Kept GPU-time over wall-clock GPU-time of every started job (each job weighted by its GPUs)."""
    return jobs_goodput(jobs, attempts, now_s, checkpoints).goodput


def _saved(checkpoints: pl.DataFrame | None) -> pl.DataFrame:
    """job_id, saved_s (when each checkpoint was saved), sorted for join_asof."""
    if checkpoints is None:
        return pl.DataFrame(schema={"job_id": pl.String, "saved_s": pl.Float64})
    return (
        checkpoints.select(
            pl.col("job_id").cast(pl.String), pl.col("end_s").cast(pl.Float64).alias("saved_s")
        )
        .drop_nulls()
        .sort("saved_s")
    )


def kept_per_attempt(attempts: pl.DataFrame, checkpoints: pl.DataFrame | None) -> pl.Series:
    """kept_s of each attempt, in the attempts' order: whole, or up to its last checkpoint when it was
    interrupted and its job's checkpoints are read (attempt time - kept_s is its lost work)."""
    saved = _saved(checkpoints)
    rows = attempts.select(pl.col("job_id").cast(pl.String), "start_s", "end_s", "end_reason").with_row_index(
        "row"
    )
    whole = (pl.col("end_s") - pl.col("start_s")).clip(0)
    cut = pl.col("end_reason").is_in(INTERRUPTED) & pl.col("job_id").is_in(saved["job_id"].unique().implode())
    if saved.height == 0 or not rows.select(cut.any()).item():
        return rows.select(kept_s=whole).to_series()
    # the last checkpoint at or before each interrupted attempt's end, kept if it falls within the attempt
    last = (
        rows.filter(cut)
        .sort("end_s")
        # both sides are sorted by time as a whole, so within each job too (Polars cannot check that itself)
        .join_asof(
            saved,
            left_on="end_s",
            right_on="saved_s",
            by="job_id",
            strategy="backward",
            check_sortedness=False,
        )
        .select("row", "saved_s")
    )
    rows = rows.join(last, on="row", how="left").sort("row")
    upto = pl.when(pl.col("saved_s") >= pl.col("start_s")).then(pl.col("saved_s") - pl.col("start_s"))
    return rows.select(kept_s=pl.when(cut).then(upto.fill_null(0.0)).otherwise(whole)).to_series()
