"""What the jobs of a run teach the twin: the flagship's checkpoints, restart overhead and spare hosts, and the mix
of the other jobs (research.* keys: their median length, their largest size, how busy they keep the GPUs the
flagship leaves).

- training.checkpoint_interval: the compute between two checkpoints of one attempt, from the end of one write
  to the start of the next (the simulator's interval: checkpoint k of an attempt completes at start + k
  (interval + write)), and training.checkpoint_write the time a write takes; medians with their order-statistic
  intervals, a gap across a restart left out;
- spares.hosts: the hosts the flagship job's family held that it did not run on. The family is every host seen
  running the flagship job or waiting as a spare (state "spare"), never running another job; less the job's
  own hosts it is the spare pool. Where no host was ever a spare and no host state names the flagship's job, the
  pool cannot be seen: the default (at most what the cluster leaves) is assumed, and said;

- training.restart_overhead: the time from an interrupted attempt's end to the next attempt's start of the
  flagship (largest) job: detection, rescheduling, initialisation and restore, as the simulator spends it
  (engine.sim.recovery). A gap also holds any wait for spare hosts, so the median is taken, not the mean, with
  its order-statistic interval;
- research.median_duration: the median of the other jobs' log-normal lengths, those a failure or the window
  cut counted as censored (`_median_duration`);
- research.max_hosts: the hosts of the largest other job (GPUs over GPUs a host, rounded up);
- research.utilization: the duty cycle of the simulator's research lanes, read from the other jobs' running
  time, their waits for hosts in repair and the idle gaps between them (`_duty_cycle`).
"""

import math

import numpy as np
import polars as pl
from scipy.optimize import minimize_scalar
from scipy.stats import norm

from engine.scenario.keys import KEY_BY_NAME
from engine.sim.research import DURATION_SIGMA
from engine.twin.estimate import MIN_EVENTS, Estimate, Fitted, median_estimate
from engine.twin.uncertainty import Z90, Law, Median, NormalOnScale

COMPLETED = ("completed", "cancelled", "end_of_run", "running")  # attempts that did not end interrupted


def median_law(key: str, estimate: Estimate) -> list[Law]:
    """The law of a median estimate (none where its interval has no width: every value alike)."""
    if estimate.low is None or estimate.high is None or estimate.high <= estimate.low:
        return []
    minimum = KEY_BY_NAME[key].minimum or 0.0
    return [Median(key, float(estimate.value), estimate.low, estimate.high, float(minimum))]


def checkpoints(
    frame: pl.DataFrame, flagship: str | None, start_s: float, end_s: float, source: str
) -> dict[str, Estimate]:
    if flagship is None or frame.is_empty():
        return {}
    own = frame.filter(
        (pl.col("job_id").cast(pl.String) == flagship)
        & pl.col("start_s").is_between(start_s, end_s, closed="left")
    ).sort("start_s")
    out: dict[str, Estimate] = {}
    computed = (own["start_s"].shift(-1) - own["end_s"]).drop_nulls().to_numpy()
    computed = computed[computed > 0]
    if computed.size >= MIN_EVENTS:
        # the compute between checkpoints of one attempt: a gap spanning a restart is not an interval
        typical = np.median(computed)
        out["training.checkpoint_interval"] = median_estimate(computed[computed < 2 * typical], source)
    writes = (own["end_s"] - own["start_s"]).drop_nulls().to_numpy()
    if writes.size >= MIN_EVENTS:
        out["training.checkpoint_write"] = median_estimate(writes, source)
    return out


def spare_hosts(
    states: pl.DataFrame, flagship: str | None, job_hosts: int, start_s: float, end_s: float, source: str
) -> Estimate | None:
    """spares.hosts as the module's docstring says; None where the pool cannot be seen."""
    if flagship is None or states.is_empty() or "job_id" not in states.columns:
        return None
    inside = states.filter((pl.col("start_s") < end_s) & (pl.col("end_s") > start_s))
    flagship_running = (pl.col("state") == "running") & (pl.col("job_id").cast(pl.String) == flagship)
    family = inside.filter(flagship_running | (pl.col("state") == "spare"))["host_id"].unique()
    if family.is_empty() or not inside.filter(flagship_running).height:
        return None
    others = inside.filter((pl.col("state") == "running") & (pl.col("job_id").cast(pl.String) != flagship))
    pool = family.filter(~family.is_in(others["host_id"].unique().implode()))
    return Estimate(max(0, pool.len() - job_hosts), n=pool.len(), source=source)


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
) -> Fitted:
    out = Fitted()
    if jobs.is_empty() or "cluster.gpus" not in shape:
        return out
    others = jobs.filter(pl.col("job_id").cast(pl.String) != (flagship or ""))
    median = _median_duration(others, start_s, end_s, source)
    if median is not None:
        out.keys["research.median_duration"], law = median
        out.laws.append(law)
    out.keys |= _sizes_and_duty(others, jobs, attempts, flagship, shape, out.keys, start_s, end_s, source)
    return out


def _median_duration(
    others: pl.DataFrame, start_s: float, end_s: float, source: str
) -> tuple[Estimate, Law] | None:
    """research.median_duration: the median of the simulator's log-normal job lengths (sigma DURATION_SIGMA),
    fitted by maximum likelihood to the jobs that started inside the window, those that did not complete (a
    failure, a preemption, the window's end) right-censored at what they ran: a plain median of the finished
    ones reads short, as long jobs are the ones a failure or the window's end cuts."""
    started = others.filter(
        pl.col("start_s").is_not_null() & pl.col("start_s").is_between(start_s, end_s, closed="left")
    )
    if "state" not in started.columns or started.is_empty():
        return None
    ran = (pl.col("end_s").fill_null(end_s).clip(upper_bound=end_s) - pl.col("start_s")).alias("ran")
    done = (pl.col("state").cast(pl.String).str.to_lowercase() == "completed") & (pl.col("end_s") <= end_s)
    frame = started.select(ran, done=done.fill_null(False)).filter(pl.col("ran") > 0)
    finished = int(frame["done"].sum())
    if finished < MIN_EVENTS:
        return None
    log_y, done_mask = np.log(frame["ran"].to_numpy()), frame["done"].to_numpy()

    def cost(mu: float) -> float:
        z = (log_y - mu) / DURATION_SIGMA
        return -float(np.where(done_mask, norm.logpdf(z), norm.logsf(z)).sum())

    mu = float(minimize_scalar(cost, bounds=(log_y.min() - 10, log_y.max() + 10), method="bounded").x)
    step = 1e-3
    curvature = (cost(mu + step) - 2 * cost(mu) + cost(mu - step)) / step**2
    sd = 1.0 / math.sqrt(curvature) if curvature > 0 else DURATION_SIGMA / math.sqrt(finished)
    estimate = Estimate(math.exp(mu), math.exp(mu - Z90 * sd), math.exp(mu + Z90 * sd), finished, source)
    return estimate, NormalOnScale(("research.median_duration",), ("log",), (mu,), np.array([[sd * sd]]))


def _sizes_and_duty(
    others: pl.DataFrame,
    jobs: pl.DataFrame,
    attempts: pl.DataFrame,
    flagship: str | None,
    shape: dict[str, Estimate],
    fitted: dict[str, Estimate],
    start_s: float,
    end_s: float,
    source: str,
) -> dict[str, Estimate]:
    out: dict[str, Estimate] = {}
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
        median = fitted["research.median_duration"].value if "research.median_duration" in fitted else None
        out["research.utilization"] = _duty_cycle(
            others, attempts, free_gpu_s, median, start_s, end_s, source
        )
    return out


def _duty_cycle(
    others: pl.DataFrame,
    attempts: pl.DataFrame,
    free_gpu_s: float,
    median_s: float | None,
    start_s: float,
    end_s: float,
    source: str,
) -> Estimate:
    """research.utilization, the simulator's duty cycle of a research lane: a job (log-normal, mean median e^(1/2)),
    then after a completed one an exponential idle gap, again (engine.sim.research). A lane is the set of hosts its
    jobs run on (named here by the first); the gap after a completed job is the next job's submission less its
    end. The mean gap is the mean of the gaps that ended within the window, and the duty cycle
    mean / (mean + mean gap). Where fewer than
    MIN_EVENTS gaps ended, or the median or the submissions are unknown, the busy share is given: the other
    jobs' GPU-time over what the flagship and its spares leave, a lower bound (hosts in repair hold it below)."""
    jobs = others.filter(pl.col("start_s").is_not_null()).with_columns(pl.col("job_id").cast(pl.String))
    clip = {"lower_bound": start_s, "upper_bound": end_s}
    runs = attempts.with_columns(pl.col("job_id").cast(pl.String)).join(
        jobs.select("job_id", "gpus"), on="job_id"
    )
    running = runs.select(
        (
            (pl.col("end_s").fill_null(end_s).clip(**clip) - pl.col("start_s").clip(**clip)) * pl.col("gpus")
        ).sum()
    ).item()
    busy = Estimate(float(np.clip((running or 0.0) / free_gpu_s, 0.0, 1.0)), n=jobs.height, source=source)
    needed = {"submit_s", "state"} <= set(jobs.columns) and "hosts" in attempts.columns
    if median_s is None or not needed:
        return busy
    lanes = (
        attempts.filter(pl.col("hosts").list.len() > 0)
        .select(pl.col("job_id").cast(pl.String), lane=pl.col("hosts").list.first())
        .unique("job_id")
        .join(jobs.select("job_id", "submit_s", "end_s", "state"), on="job_id")
        .sort("lane", "submit_s")
        .with_columns(next_submit=pl.col("submit_s").shift(-1).over("lane"))
        .filter(
            (pl.col("state").cast(pl.String).str.to_lowercase() == "completed")
            & pl.col("end_s").is_between(start_s, end_s, closed="left")
        )
    )
    ended = lanes.filter(pl.col("next_submit").is_not_null() & (pl.col("next_submit") <= end_s))
    if ended.height < MIN_EVENTS:
        return busy
    # a lane's last gap is left out, not cut at the window's end: its next job may be due already and waiting for
    # hosts in repair (or lent to the flagship job), which no record shows
    mean_gap = float(
        ended.select((pl.col("next_submit") - pl.col("end_s")).clip(lower_bound=0.0).mean()).item()
    )
    mean = median_s * math.exp(DURATION_SIGMA**2 / 2)
    return Estimate(mean / (mean + mean_gap), n=ended.height, source=source)
