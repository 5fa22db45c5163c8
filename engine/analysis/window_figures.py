"""The figures a backtest compares, read from a run's tables over a window: the same function for the observed
run and for every simulated one, so the two sides count alike (definitions in the "Twin" section).

The largest job (most GPUs; the earliest started among equals) stands for the flagship: a simulated run's
flagship job is its largest, and an observed cluster's is the one a planner sizes the twin by.

- interruptions: incidents that began inside the window and hit the largest job (its id in incidents.job_ids),
  planned ones included: the summary's interruptions (definition `interruptions`) over the window;
- incidents: unexpected incidents (not planned) that began inside the window, in all and by cause;
- gpu_hours_lost and ettr: the largest job's wall clock inside the window (from its first start to its end or
  the run's end), what it kept (attempt time less the work lost after the last checkpoint before an
  interruption, attempts.lost_work_s, and less the time checkpoints blocked training), and the rest lost; a
  job whose checkpoints were not read shows an upper bound of its ettr (a lower one of its loss);
- hosts_in_repair: hosts out of service (engine.store.schema.OUT_OF_SERVICE_STATES), the window's mean and
  each day's;
- faults_by_week: the unexpected incidents of each week from the window's start (the last week may be partial);
- repair_median_s and repair_p90_s: the time to repair (repaired_s - t_s) of the unexpected incidents that began
  inside the window and put a host out (repaired_s after t_s) and were repaired by its end; a job-level cause
  (a reboot at most) puts no host out and is not counted. Repairs still open at the window's end are left out on
  both sides alike, so the two sides compare.
A run with no job (a fault history) has no interruptions, lost GPU-hours or ETTR: None, not 0.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from engine.store.schema import OUT_OF_SERVICE_STATES
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_WEEK


@dataclass(frozen=True)
class WindowFigures:
    interruptions: int | None  # None when no job ran (a fault history)
    incidents: int
    incidents_by_cause: dict[str, int]
    gpu_hours_lost: float | None
    ettr: float | None  # None when the largest job did not run inside the window
    hosts_in_repair_mean: float
    hosts_in_repair_by_day: list[float] = field(default_factory=list)
    largest_job: str | None = None
    largest_job_gpus: float | None = None
    # whether the largest job's checkpoints were read: without them an interruption's lost work and the time
    # checkpoints block training are unseen, so ettr is an upper bound and gpu_hours_lost a lower one
    checkpointed: bool = False
    faults_by_week: list[int] = field(default_factory=list)
    repair_median_s: float | None = None
    repair_p90_s: float | None = None
    repairs: int = 0  # the repairs the two quantiles are of

    def figure(self, name: str) -> float | None:
        value = getattr(self, name)
        return None if value is None else float(value)


def window_figures(tables: dict[str, pl.DataFrame], start_s: float, end_s: float) -> WindowFigures:
    """The figures of the module's docstring over [start_s, end_s) of a run whose tables (incidents, jobs,
    job_attempts, checkpoints, host_states) are given; a missing table counts as empty."""
    in_window = _in_window(_get(tables, "incidents"), "t_s", start_s, end_s)
    incidents = in_window
    if "planned" in incidents.columns:
        incidents = incidents.filter(~pl.col("planned").fill_null(False))
    by_cause = dict(sorted(incidents.group_by("cause").len().iter_rows())) if incidents.height else {}
    job = largest_job(_get(tables, "jobs"))
    repair_mean, repair_days = _hosts_in_repair(_get(tables, "host_states"), start_s, end_s)
    history = {"faults_by_week": _by_week(incidents, start_s, end_s), **_repair_quantiles(incidents, end_s)}
    if job is None:
        return WindowFigures(
            None, incidents.height, by_cause, None, None, repair_mean, repair_days, **history
        )
    job_id, gpus, job_start, job_end = job.job_id, job.gpus, job.start_s, job.end_s
    hit = (
        in_window.filter(pl.col("job_ids").fill_null([]).list.contains(job_id)).height
        if in_window.height and "job_ids" in in_window.columns
        else 0
    )
    attempts = _get(tables, "job_attempts")
    attempts = attempts.filter(pl.col("job_id").cast(pl.String) == job_id) if attempts.height else attempts
    run_end = end_s if job_end is None else min(job_end, end_s)
    wall_s = max(0.0, run_end - max(job_start, start_s)) if job_start is not None else 0.0
    checkpoints = _get(tables, "checkpoints")
    checkpointed = bool(
        checkpoints.height and checkpoints.filter(pl.col("job_id").cast(pl.String) == job_id).height
    )
    kept_s = _kept_s(attempts, checkpoints, job_id, start_s, end_s) if wall_s else 0.0
    kept_s = min(kept_s, wall_s)
    return WindowFigures(
        interruptions=hit,
        incidents=incidents.height,
        incidents_by_cause=by_cause,
        gpu_hours_lost=(wall_s - kept_s) * gpus / SECONDS_PER_HOUR,
        ettr=kept_s / wall_s if wall_s > 0 else None,
        hosts_in_repair_mean=repair_mean,
        hosts_in_repair_by_day=repair_days,
        largest_job=job_id,
        largest_job_gpus=gpus,
        checkpointed=checkpointed,
        **history,
    )


def _by_week(incidents: pl.DataFrame, start_s: float, end_s: float) -> list[int]:
    weeks = max(1, math.ceil((end_s - start_s) / SECONDS_PER_WEEK - 1e-9))
    counts = [0] * weeks
    if incidents.height:
        index = ((incidents["t_s"] - start_s) // SECONDS_PER_WEEK).cast(pl.Int64).clip(0, weeks - 1)
        for week, n in index.value_counts().iter_rows():
            counts[week] = int(n)
    return counts


def _repair_quantiles(incidents: pl.DataFrame, end_s: float) -> dict:
    if incidents.height == 0 or "repaired_s" not in incidents.columns:
        return {}
    times = incidents.filter(
        pl.col("repaired_s").is_not_null()
        & (pl.col("repaired_s") > pl.col("t_s"))
        & (pl.col("repaired_s") <= end_s)
    ).select(pl.col("repaired_s") - pl.col("t_s"))
    if times.height == 0:
        return {}
    column = times.to_series()
    return {
        "repair_median_s": float(column.quantile(0.5, "linear")),
        "repair_p90_s": float(column.quantile(0.9, "linear")),
        "repairs": times.height,
    }


def _get(tables: dict[str, pl.DataFrame], name: str) -> pl.DataFrame:
    frame = tables.get(name)
    return frame if frame is not None else pl.DataFrame()


def _in_window(frame: pl.DataFrame, column: str, start_s: float, end_s: float) -> pl.DataFrame:
    if frame.height == 0:
        return frame
    return frame.filter(pl.col(column).is_between(start_s, end_s, closed="left"))


@dataclass(frozen=True)
class LargestJob:
    job_id: str
    gpus: float
    start_s: float
    end_s: float | None  # None while it runs


def largest_job(jobs: pl.DataFrame) -> LargestJob | None:
    """The started job with the most GPUs, the earliest started among equals; None before any job started."""
    if jobs.height == 0:
        return None
    started = jobs.filter(pl.col("start_s").is_not_null())
    if started.height == 0:
        return None
    row = started.sort(["gpus", "start_s"], descending=[True, False], nulls_last=True).row(0, named=True)
    return LargestJob(str(row["job_id"]), float(row["gpus"] or 0.0), float(row["start_s"]), row["end_s"])


def _overlap(start: pl.Expr, end: pl.Expr, start_s: float, end_s: float) -> pl.Expr:
    """Seconds of [start, end) inside [start_s, end_s)."""
    return (pl.min_horizontal(end, pl.lit(end_s)) - pl.max_horizontal(start, pl.lit(start_s))).clip(0)


def _kept_s(
    attempts: pl.DataFrame, checkpoints: pl.DataFrame, job_id: str, start_s: float, end_s: float
) -> float:
    """Seconds of the job's attempts inside the window that were kept: each attempt up to where its lost work
    began (end - lost_work_s), less the checkpoint writes inside the window."""
    if attempts.height == 0:
        return 0.0
    kept_until = pl.col("end_s").fill_null(end_s) - pl.col("lost_work_s").fill_null(0.0).clip(0)
    kept = attempts.select(_overlap(pl.col("start_s"), kept_until, start_s, end_s).sum()).item() or 0.0
    if checkpoints.height:
        mine = checkpoints.filter(pl.col("job_id").cast(pl.String) == job_id)
        if mine.height:
            kept -= (
                mine.select(_overlap(pl.col("start_s"), pl.col("end_s"), start_s, end_s).sum()).item() or 0.0
            )
    return max(0.0, float(kept))


def _hosts_in_repair(host_states: pl.DataFrame, start_s: float, end_s: float) -> tuple[float, list[float]]:
    """Mean hosts out of service over the window, and over each whole or partial day of it."""
    span = end_s - start_s
    if host_states.height == 0 or span <= 0:
        return 0.0, []
    out = host_states.filter(pl.col("state").is_in(OUT_OF_SERVICE_STATES))
    down = seconds_by_bucket(
        out["start_s"].to_numpy(), out["end_s"].to_numpy(), start_s, end_s, SECONDS_PER_DAY
    )
    days = down.size
    lengths = np.minimum(SECONDS_PER_DAY, span - np.arange(days) * SECONDS_PER_DAY)
    return float(down.sum()) / span, [float(v) for v in down / lengths]


def seconds_by_bucket(
    starts: np.ndarray, ends: np.ndarray, start_s: float, end_s: float, bucket_s: float
) -> np.ndarray:
    """The seconds the intervals [starts, ends) cover in each bucket of `bucket_s` from start_s (the last one
    partial, ending at end_s), summed over the intervals: each interval split at the bucket edges with a difference
    array, so a history of years (a thousand days, 100,000 outages) needs no loop."""
    span = end_s - start_s
    buckets = max(1, int(-(-span // bucket_s)))
    a = (np.asarray(starts, dtype=float) - start_s).clip(0.0, span)
    b = (np.asarray(ends, dtype=float) - start_s).clip(0.0, span)
    keep = b > a
    a, b = a[keep], b[keep]
    first = np.minimum((a // bucket_s).astype(np.int64), buckets - 1)
    last = np.minimum((b // bucket_s).astype(np.int64), buckets - 1)
    covered = np.zeros(buckets)
    same = first == last
    np.add.at(covered, first[same], b[same] - a[same])
    spans = ~same
    np.add.at(covered, first[spans], (first[spans] + 1) * bucket_s - a[spans])
    np.add.at(covered, last[spans], b[spans] - last[spans] * bucket_s)
    whole = np.zeros(buckets + 1)  # buckets strictly between the first and the last: whole ones
    np.add.at(whole, first[spans] + 1, 1.0)
    np.add.at(whole, last[spans], -1.0)
    return covered + np.cumsum(whole[:-1]) * bucket_s
