"""What the jobs of a run teach the twin: the flagship's restart overhead, and the mix of the other jobs
(research.* keys: their median length, their largest size, how busy they keep the GPUs the flagship leaves).

- training.restart_overhead: the time from an interrupted attempt's end to the next attempt's start of the
  flagship (largest) job: detection, rescheduling, initialisation and restore, as the simulator spends it
  (engine.sim.recovery). A gap also holds any wait for spare hosts, so the median is taken, not the mean, with
  its order-statistic interval;
- research.median_duration: the median wall clock of the other jobs that started and ended inside the window;
- research.max_hosts: the hosts of the largest other job (GPUs over GPUs a host, rounded up);
- research.utilization: the other jobs' attempt GPU-time inside the window over the GPU-time the flagship and
  its spares leave, capped at 1. The simulator's key is the duty cycle of its research lanes; hosts in repair
  and preemptions keep the busy share observed below it, so the fit is a lower bound of that duty cycle (the
  backtest shows what it costs).
"""

import math

import numpy as np
import polars as pl

from engine.twin.estimate import MIN_EVENTS, Estimate, median_estimate

COMPLETED = ("completed", "cancelled", "end_of_run", "running")  # attempts that did not end interrupted


def restart_overhead(
    attempts: pl.DataFrame, job_id: str | None, start_s: float, end_s: float, source: str
) -> dict[str, Estimate]:
    if job_id is None or attempts.is_empty():
        return {}
    own = attempts.filter(pl.col("job_id").cast(pl.String) == job_id).sort("start_s")
    gaps = own.select(
        gap=pl.col("start_s").shift(-1) - pl.col("end_s"),
        interrupted=~pl.col("end_reason").is_in(COMPLETED),
        ended=pl.col("end_s"),
    ).filter(pl.col("interrupted") & pl.col("gap").is_not_null() & pl.col("ended").is_between(start_s, end_s))
    values = gaps["gap"].clip(0).to_numpy()
    if values.size < MIN_EVENTS:
        return {}
    return {"training.restart_overhead": median_estimate(values, source)}


def research_mix(
    jobs: pl.DataFrame,
    attempts: pl.DataFrame,
    flagship: str | None,
    shape: dict[str, Estimate],
    start_s: float,
    end_s: float,
    source: str,
) -> dict[str, Estimate]:
    if jobs.is_empty() or "cluster.gpus" not in shape:
        return {}
    others = jobs.filter(pl.col("job_id").cast(pl.String) != (flagship or ""))
    out: dict[str, Estimate] = {}
    done = others.filter(
        pl.col("start_s").is_not_null()
        & pl.col("end_s").is_not_null()
        & (pl.col("start_s") >= start_s)
        & (pl.col("end_s") <= end_s)
    )
    lengths = (done["end_s"] - done["start_s"]).to_numpy()
    lengths = lengths[lengths > 0]
    if lengths.size >= MIN_EVENTS:
        out["research.median_duration"] = median_estimate(lengths, source)
    started = others.filter(pl.col("start_s").is_not_null() & (pl.col("start_s") < end_s))
    per_host = shape["cluster.gpus_per_host"].value
    if started.height >= MIN_EVENTS and per_host:
        largest = float(started["gpus"].max() or 0.0)
        out["research.max_hosts"] = Estimate(
            max(1, math.ceil(largest / per_host)), n=started.height, source=source
        )
    flagship_gpus = (
        float(jobs.filter(pl.col("job_id").cast(pl.String) == flagship)["gpus"].max() or 0.0)
        if flagship
        else 0.0
    )
    spares = shape["spares.hosts"].value if "spares.hosts" in shape else 0
    free_gpu_s = (shape["cluster.gpus"].value - flagship_gpus - spares * per_host) * (end_s - start_s)
    if started.height >= MIN_EVENTS and free_gpu_s > 0 and not attempts.is_empty():
        busy = (
            attempts.with_columns(pl.col("job_id").cast(pl.String))
            .join(others.select(pl.col("job_id").cast(pl.String), "gpus"), on="job_id")
            .select(
                (
                    (
                        pl.col("end_s").fill_null(end_s).clip(start_s, end_s)
                        - pl.col("start_s").clip(start_s, end_s)
                    )
                    * pl.col("gpus")
                ).sum()
            )
            .item()
            or 0.0
        )
        share = float(np.clip(busy / free_gpu_s, 0.0, 1.0))
        out["research.utilization"] = Estimate(share, n=started.height, source=source)
    return out
