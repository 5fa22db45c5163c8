"""Goodput's arithmetic: ETTR, MTTF, the closed-form estimate and the Young-Daly interval.

References (../shared/reference/README.md §3):
- ETTR = productive training time / wall-clock time from the job's start (Kokolis et al., HPCA 2025).
- E[ETTR] ~= (1 - N r_f (u0 + dt/2)) / (1 + w/dt): N hosts, r_f failures per host per second, u0 restart
  overhead, dt checkpoint interval, w the time a checkpoint write blocks training (Kokolis et al.).
- Job MTTF = 1 / (N r_f).
- Young (1974) / Daly (2006): the interval that maximises useful work is about sqrt(2 w MTBF).
"""

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from engine.analysis.ledger import LOSSES
from engine.units import SECONDS_PER_DAY  # defined in engine.units; importers of it from here keep working


@dataclass(frozen=True)
class ClosedForm:
    ettr: float
    mttf_s: float
    failures_per_s: float  # of the whole job


def job_failure_rate(hosts: int, rate_per_1000_node_days: float) -> float:
    """Failures per second of a job on `hosts` hosts: N x r_f."""
    return hosts * rate_per_1000_node_days / 1000.0 / SECONDS_PER_DAY


def closed_form_ettr(
    *,
    gpus: int,
    rate_per_1000_node_days: float,
    checkpoint_interval_s: float,
    checkpoint_write_s: float,
    restart_overhead_s: float,
    gpus_per_host: int = 8,
) -> ClosedForm:
    """Kokolis et al.'s first-order estimate, clipped at 0 where failures outrun progress."""
    hosts = math.ceil(gpus / gpus_per_host)
    rate = job_failure_rate(hosts, rate_per_1000_node_days)
    mttf = math.inf if rate == 0 else 1.0 / rate
    numerator = 1.0 - rate * (restart_overhead_s + checkpoint_interval_s / 2.0)
    ettr = max(0.0, numerator) / (1.0 + checkpoint_write_s / checkpoint_interval_s)
    return ClosedForm(ettr=ettr, mttf_s=mttf, failures_per_s=rate)


def young_daly_interval(checkpoint_write_s: float, mttf_s: float) -> float:
    """First-order optimum checkpoint interval sqrt(2 w MTBF) (Young 1974; Daly 2006)."""
    if math.isinf(mttf_s):
        return math.inf
    return math.sqrt(2.0 * checkpoint_write_s * mttf_s)


# ----- ETTR over time and the loss breakdown (the Overview page) --------------------------------------------

LOSS_CATEGORIES = LOSSES  # the goodput ledger's loss buckets, in its order (engine.analysis.ledger)


def _coverage(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Total length of the intervals [starts, ends) that lies before each time in `at`.

    The intervals may overlap or come unsorted; they are merged first so nothing is counted twice. Cost is
    O((n + m) log n) for n intervals and m times: no loop over rows.
    """
    if len(starts) == 0:
        return np.zeros(len(at))
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum(ends[order], starts[order])
    # merge: an interval opens a new block where it starts after every earlier one ended
    running_end = np.maximum.accumulate(e)
    new_block = np.ones(len(s), dtype=bool)
    new_block[1:] = s[1:] > running_end[:-1]
    block_start = s[new_block]
    block_end = np.maximum.reduceat(running_end, np.flatnonzero(new_block))
    lengths = block_end - block_start
    before = np.concatenate(([0.0], np.cumsum(lengths)))
    i = np.searchsorted(block_start, at, side="right") - 1  # last block starting at or before t
    inside = np.where(i >= 0, np.clip(at - block_start[np.maximum(i, 0)], 0, lengths[np.maximum(i, 0)]), 0.0)
    return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0.0)


def productive_intervals(
    job_attempts: pl.DataFrame, checkpoints: pl.DataFrame, job_id: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(attempt starts, ends) and (unproductive starts, ends) inside the attempts of one job.

    An attempt is time the job held its hosts and trained. Inside it, two things are not progress: blocking
    checkpoint writes, and the tail `[end_s - lost_work_s, end_s)` whose work a failure threw away (the work
    since the last good checkpoint). Restart overhead and waiting for spares lie between attempts.
    """
    attempts = job_attempts.filter(pl.col("job_id") == job_id).sort("start_s")
    a_start = attempts["start_s"].to_numpy().astype(float)
    a_end = attempts["end_s"].to_numpy().astype(float)
    lost = attempts["lost_work_s"].fill_null(0.0).to_numpy().astype(float)
    tail_start = np.maximum(a_end - lost, a_start)
    ckpt = checkpoints.filter(pl.col("job_id") == job_id)
    c_start = ckpt["start_s"].to_numpy().astype(float)
    c_end = ckpt["end_s"].to_numpy().astype(float)
    return a_start, a_end, np.concatenate([c_start, tail_start]), np.concatenate([c_end, a_end])


def ettr_timeline(
    job_attempts: pl.DataFrame, checkpoints: pl.DataFrame, job_id: str, bucket_s: float, duration_s: float
) -> pl.DataFrame:
    """ETTR of one job per time bucket: t_s (bucket start), ettr, ettr_cumulative (from the job's start).

    `ettr` is the productive share of the part of the bucket after the job's start (null before it);
    `ettr_cumulative` is productive time / wall-clock time from the job's start to the bucket's end, the
    definition of Kokolis et al. (reference README §3).
    """
    if bucket_s <= 0:
        raise ValueError(f"bucket_s must be positive, got {bucket_s}")
    edges = np.append(np.arange(0.0, duration_s, bucket_s), duration_s)
    a_start, a_end, u_start, u_end = productive_intervals(job_attempts, checkpoints, job_id)
    if len(a_start) == 0:
        return pl.DataFrame(
            {
                "t_s": edges[:-1],
                "ettr": [None] * (len(edges) - 1),
                "ettr_cumulative": [None] * (len(edges) - 1),
            },
            schema={"t_s": pl.Float64, "ettr": pl.Float64, "ettr_cumulative": pl.Float64},
        )
    # unproductive time only counts where it lies inside an attempt
    u_start, u_end = _clip_to(u_start, u_end, a_start, a_end)
    productive = _coverage(a_start, a_end, edges) - _coverage(u_start, u_end, edges)
    job_start = a_start.min()
    wall = np.clip(edges - job_start, 0.0, None)
    per_bucket_wall = np.diff(wall)
    per_bucket_prod = np.diff(productive)
    with np.errstate(divide="ignore", invalid="ignore"):
        ettr = np.where(per_bucket_wall > 0, per_bucket_prod / per_bucket_wall, np.nan)
        cumulative = np.where(wall[1:] > 0, productive[1:] / wall[1:], np.nan)
    return pl.DataFrame({"t_s": edges[:-1], "ettr": ettr, "ettr_cumulative": cumulative}).fill_nan(None)


def _clip_to(
    starts: np.ndarray, ends: np.ndarray, a_start: np.ndarray, a_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each interval cut to the attempt it starts in (attempts sorted and disjoint)."""
    i = np.clip(np.searchsorted(a_start, starts, side="right") - 1, 0, len(a_start) - 1)
    lo = np.maximum(starts, a_start[i])
    hi = np.minimum(ends, a_end[i])
    return lo, np.maximum(hi, lo)


def loss_breakdown(summary: dict) -> pl.DataFrame:
    """The flagship job's goodput losses (category, gpu_hours, usd) from a run summary."""
    job = summary.get("job", {})
    hours = job.get("losses_gpu_hours", {})
    usd = job.get("losses_usd", {})
    return pl.DataFrame(
        {
            "category": list(LOSS_CATEGORIES),
            "gpu_hours": [float(hours.get(c, 0.0)) for c in LOSS_CATEGORIES],
            "usd": [float(usd.get(c, 0.0)) for c in LOSS_CATEGORIES],
        },
        schema={"category": pl.String, "gpu_hours": pl.Float64, "usd": pl.Float64},
    )


# ----- goodness of fit (calibration checks: simulated cause counts against the Llama 3 table) --------------
# scipy is imported where it is used: this module is imported by every simulation (engine.analysis.summary), and
# scipy.stats alone takes about a second to import.


def chi_square_pvalue(observed, expected) -> float:
    """Pearson's chi-square test of counts against expected counts (same total): P(X^2 >= observed), by
    scipy.stats.chisquare (k - 1 degrees of freedom)."""
    from scipy import stats

    observed, expected = np.asarray(observed, dtype=float), np.asarray(expected, dtype=float)
    return float(stats.chisquare(observed, expected).pvalue)


def gamma_quantile(shape: float, p: float) -> float:
    """The p-quantile of a Gamma(shape, 1) variable (shape > 0, 0 < p < 1), by scipy.special.gammaincinv (the
    inverse of the regularized lower incomplete gamma function, what scipy.stats.gamma.ppf calls): the exact
    Poisson intervals and Gamma posteriors of engine.twin.calibrate (Garwood's interval after n events is
    gamma_quantile(n, 0.05) to gamma_quantile(n + 1, 0.95))."""
    if shape <= 0 or not 0 < p < 1:
        raise ValueError(f"gamma_quantile needs shape > 0 and 0 < p < 1, got {shape}, {p}")
    from scipy import special

    return float(special.gammaincinv(shape, p))


def _upper_regularized_gamma(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a), by scipy.special.gammaincc (1 at x <= 0)."""
    from scipy import special

    if x <= 0:
        return 1.0
    return float(special.gammaincc(a, x))
