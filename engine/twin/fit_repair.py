"""Time to repair, fitted to a run's incidents: quantiles as observed and the simulator's repair law
(engine.sim.repair) fitted to them.

The simulator takes a failed host through fixed steps (repair.drain, repair.diagnose, repair.burn_in: their
defaults are kept) and a hands-on repair of exponential length (mean repair.fix); a share repair.rma_fraction
of repairs then wait for the vendor (exponential, mean repair.rma_time). So the time from an incident to its
host's return, less the fixed steps, is a mixture: Exp(fix) with probability 1 - p, and about Exp(fix + rma)
with probability p (the sum of the two exponentials, taken as one exponential of their summed mean: the vendor's
days dwarf the repair's hours). Both are fitted by expectation-maximisation with right-censoring (hosts still in
repair at the window's end count as "at least this long"), the exact chi-square interval of each mean over its
expected events, and a Wilson interval of the share. With fewer than MIN_EVENTS repairs longer than
RMA_AFTER_S, no vendor return is told apart: one exponential is fitted and the RMA keys keep their defaults.

The Kaplan-Meier median and 90th percentile of the whole time, censored the same way, are reported beside.
"""

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME
from engine.twin.estimate import MIN_EVENTS, Estimate, exponential_mean_interval
from engine.units import SECONDS_PER_DAY

RMA_AFTER_S = SECONDS_PER_DAY  # repairs longer than a day are the evidence of vendor returns
FIXED_STEPS = ("repair.drain", "repair.diagnose", "repair.burn_in")
EM_ITERATIONS = 500
EM_TOLERANCE = 1e-9
Z90 = 1.6449  # the normal quantile of a two-sided 90 % interval


@dataclass(frozen=True)
class RepairFit:
    """Time to repair over the window (Kaplan-Meier, right-censored)."""

    repairs: int  # completed within the window
    censored: int  # still in repair at the window's end
    median_s: float | None
    p90_s: float | None


def repair_times(incidents: pl.DataFrame, end_s: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(seconds from incident to repaired, completed?) of the unexpected incidents on a host, censored at end_s."""
    took = incidents.filter(~pl.col("planned").fill_null(False) & pl.col("host_id").is_not_null())
    if "repaired_s" not in took.columns or took.is_empty():
        return None
    took = took.filter(pl.col("repaired_s").is_null() | (pl.col("repaired_s") > pl.col("t_s")))
    if took.is_empty():
        return None
    done = (took["repaired_s"].is_not_null() & (took["repaired_s"] <= end_s)).to_numpy()
    ended = np.where(done, took["repaired_s"].fill_null(0.0).to_numpy(), end_s)
    return ended - took["t_s"].to_numpy(), done


def fit_repair(incidents: pl.DataFrame, end_s: float, source: str) -> tuple[RepairFit | None, dict]:
    """The repair quantiles and the fitted keys (repair.fix, and repair.rma_fraction and repair.rma_time where
    vendor returns show) of the incidents up to end_s."""
    times = repair_times(incidents, end_s)
    if times is None:
        return None, {}
    durations, done = times
    median, p90 = kaplan_meier_quantiles(durations, done, (0.5, 0.9))
    fit = RepairFit(int(done.sum()), int((~done).sum()), median, p90)
    if fit.repairs < MIN_EVENTS:
        return fit, {}
    steps = sum(parse_duration(KEY_BY_NAME[k].default) for k in FIXED_STEPS)
    hands_on = np.clip(durations - steps, 1.0, None)  # a repair quicker than the steps took about none
    if int((hands_on[done] > RMA_AFTER_S).sum() + (hands_on[~done] > RMA_AFTER_S).sum()) < MIN_EVENTS:
        low, high = exponential_mean_interval(float(hands_on.sum()), float(done.sum()))
        mean = float(hands_on.sum() / done.sum())
        return fit, {"repair.fix": Estimate(mean, low, high, fit.repairs, source)}
    return fit, _mixture_keys(hands_on, done, source)


def _mixture_keys(y: np.ndarray, done: np.ndarray, source: str) -> dict[str, Estimate]:
    short, rma, share = _two_exponentials(y, done)
    weight_rma = share["responsibility"]
    events_fix = float(((1 - weight_rma) * done).sum())
    events_rma = float((weight_rma * done).sum())
    fix_low, fix_high = exponential_mean_interval(float(((1 - weight_rma) * y).sum()), events_fix)
    long_low, long_high = exponential_mean_interval(float((weight_rma * y).sum()), events_rma)
    p, n = share["p"], y.size
    p_low, p_high = _wilson(p, n)
    return {
        "repair.fix": Estimate(short, fix_low, fix_high, round(events_fix), source),
        "repair.rma_fraction": Estimate(p, p_low, p_high, n, source),
        "repair.rma_time": Estimate(
            max(rma - short, 0.0),
            max(long_low - fix_high, 0.0),
            max(long_high - fix_low, 0.0),
            round(events_rma),
            source,
        ),
    }


def _two_exponentials(y: np.ndarray, done: np.ndarray) -> tuple[float, float, dict]:
    """Means of the short and long exponential and the long one's share, by censored EM."""
    long = y > RMA_AFTER_S
    p = float(np.clip(long.mean(), 0.01, 0.5))
    short = float(y[~long].mean()) if (~long).any() else float(y.mean())
    rma = float(y[long].mean())
    for _ in range(EM_ITERATIONS):
        log_short = np.log1p(-p) - y / short - np.where(done, np.log(short), 0.0)
        log_long = np.log(p) - y / rma - np.where(done, np.log(rma), 0.0)
        top = np.maximum(log_short, log_long)
        weight = np.exp(log_long - top) / (np.exp(log_short - top) + np.exp(log_long - top))
        new_p = float(np.clip(weight.mean(), 1e-6, 1 - 1e-6))
        new_short = float(((1 - weight) * y).sum() / max(((1 - weight) * done).sum(), 1e-9))
        new_rma = float((weight * y).sum() / max((weight * done).sum(), 1e-9))
        moved = abs(new_p - p) + abs(new_short - short) / short + abs(new_rma - rma) / rma
        p, short, rma = new_p, new_short, new_rma
        if moved < EM_TOLERANCE:
            break
    return short, rma, {"p": p, "responsibility": weight}


def _wilson(p: float, n: int) -> tuple[float, float]:
    """Wilson's 90 % score interval of a share p out of n."""
    centre = (p + Z90**2 / (2 * n)) / (1 + Z90**2 / n)
    half = Z90 * math.sqrt(p * (1 - p) / n + Z90**2 / (4 * n * n)) / (1 + Z90**2 / n)
    return max(centre - half, 0.0), min(centre + half, 1.0)


def kaplan_meier_quantiles(
    durations: np.ndarray, observed: np.ndarray, quantiles: tuple[float, ...]
) -> list[float | None]:
    """Quantiles of a right-censored sample from the Kaplan-Meier survival curve (None where the curve never
    falls that far: too many censored)."""
    order = np.lexsort((~observed, durations))  # at a tie, an event before a censoring
    d, e = durations[order], observed[order]
    at_risk = np.arange(d.size, 0, -1, dtype=float)
    survival = np.cumprod(np.where(e, 1.0 - 1.0 / at_risk, 1.0))
    out: list[float | None] = []
    for q in quantiles:
        below = np.flatnonzero(survival <= 1.0 - q + 1e-12)
        out.append(float(d[below[0]]) if below.size else None)
    return out
