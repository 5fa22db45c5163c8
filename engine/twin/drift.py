"""Drift: whether the failure rate and the repair time stayed one level over the window, or changed (a fleet
burning in, a repair process maturing), and from when.

- The series: by week from the window's start, the fault events (a burst counts once: its hosts fail for one
  reason, engine.twin.fit_bursts), the host-days in service (the exposure) and the median time to repair of the
  week's faults.
- The rate: Poisson counts over exposures, one rate against a rate that changed once. The statistic is the largest
  likelihood ratio over every split that leaves MIN_WEEKS on each side (a scan: Worsley 1986's test for a change in
  a Poisson rate); its p-value is exact given the total, by simulation: under one rate the week's counts are
  multinomial in proportion to their exposure (P_DRAWS draws, a fixed seed). A change at p < ALPHA is taken, and
  the part after it scanned again, so the level found is the most recent one.
- The repair time: the same scan over the log repair times of the faults in order of start (the largest two-sample
  t over splits), its p-value by permutation.
Where the rate changed, the twin takes the recent level (engine.twin.calibrate fits the rates after the change and
says from when); where the repair time did, its repair law is fitted to the repairs after the change.
"""

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from engine.analysis.window_figures import seconds_by_bucket
from engine.store.schema import IN_SERVICE_STATES
from engine.units import SECONDS_PER_DAY, SECONDS_PER_WEEK

ALPHA = 0.01  # a change is taken when one level explains the weeks this badly in at most 1 % of histories
MIN_WEEKS = 4  # each side of a change holds at least four weeks
P_DRAWS = 999  # draws of the p-value's simulation (its resolution: 0.001)
MIN_REPAIRS = 20  # each side of a repair-time change holds at least 20 repairs
REPAIR_DRAWS = 199  # permutations of the repair times (each as long as the history: fewer than the rate's)
DRAWS_AT_ONCE = 20
SEED = 46  # the p-values' draws: the same run gives the same answer


@dataclass(frozen=True)
class Week:
    start_s: float
    faults: int  # fault events (a burst once)
    host_days: float  # in service
    repair_median_s: float | None


@dataclass(frozen=True)
class Change:
    """A change of level at `at_s` (seconds from the run's start), before and after, and its p-value."""

    at_s: float
    before: float
    after: float
    p_value: float


@dataclass(frozen=True)
class Drift:
    weeks: list[Week] = field(default_factory=list)
    rate_changes: list[Change] = field(default_factory=list)  # per 1,000 host-days, oldest first
    repair_change: Change | None = None  # median seconds to repair
    rate_p_value: float | None = None  # the whole window's test (None: too short to test)
    repair_p_value: float | None = None

    @property
    def recent_rate_from_s(self) -> float | None:
        return self.rate_changes[-1].at_s if self.rate_changes else None

    def to_json(self) -> dict:
        return {
            "weeks": [
                {
                    "start_s": w.start_s,
                    "faults": w.faults,
                    "host_days": round(w.host_days, 6),
                    "rate_per_1000_node_days": round(1000.0 * w.faults / w.host_days, 6)
                    if w.host_days
                    else None,
                    "repair_median_s": None if w.repair_median_s is None else round(w.repair_median_s, 3),
                }
                for w in self.weeks
            ],
            "rate_p_value": self.rate_p_value,
            "rate_changes": [vars(c) for c in self.rate_changes],
            "repair_p_value": self.repair_p_value,
            "repair_change": None if self.repair_change is None else vars(self.repair_change),
            "alpha": ALPHA,
        }


def weekly(
    events: pl.DataFrame,
    repairs: pl.DataFrame,
    states: pl.DataFrame,
    hosts: int,
    start_s: float,
    end_s: float,
) -> list[Week]:
    """The window's weeks: `events` has t_s (one row a fault event), `repairs` t_s and repair_s."""
    weeks = max(1, int(np.ceil((end_s - start_s) / SECONDS_PER_WEEK - 1e-9)))
    edges = start_s + np.arange(weeks + 1) * SECONDS_PER_WEEK
    edges[-1] = end_s
    counts = np.bincount(_week_of(events["t_s"], start_s, weeks), minlength=weeks)
    exposure = _exposure(states, hosts, edges)
    medians: list[float | None] = [None] * weeks
    if repairs.height:
        by_week = (
            repairs.with_columns(week=pl.Series(_week_of(repairs["t_s"], start_s, weeks)))
            .group_by("week")
            .agg(pl.col("repair_s").median())
        )
        for week, median in by_week.iter_rows():
            medians[week] = float(median)
    return [Week(float(edges[i]), int(counts[i]), float(exposure[i]), medians[i]) for i in range(weeks)]


def _week_of(times: pl.Series, start_s: float, weeks: int) -> np.ndarray:
    return np.clip(((times.to_numpy() - start_s) // SECONDS_PER_WEEK).astype(np.int64), 0, weeks - 1)


def _exposure(states: pl.DataFrame, hosts: int, edges: np.ndarray) -> np.ndarray:
    """Host-days in service in each week (every host in service where the run has no host states)."""
    if states.is_empty():
        return hosts * np.diff(edges) / SECONDS_PER_DAY
    up = states.filter(pl.col("state").is_in(IN_SERVICE_STATES))
    seconds = seconds_by_bucket(
        up["start_s"].to_numpy(), up["end_s"].to_numpy(), edges[0], edges[-1], SECONDS_PER_WEEK
    )
    return seconds / SECONDS_PER_DAY


def rate_changes(weeks: list[Week]) -> tuple[float | None, list[Change]]:
    """The whole window's p-value and the changes of rate found, the most recent level last."""
    counts = np.array([w.faults for w in weeks], dtype=float)
    exposure = np.array([w.host_days for w in weeks])
    first = _rate_change(counts, exposure)
    if first is None:
        return None, []
    p_value, split = first
    changes: list[Change] = []
    offset = 0
    while p_value < ALPHA and len(changes) < 3:
        at = offset + split
        before = 1000.0 * counts[offset:at].sum() / exposure[offset:at].sum()
        after = 1000.0 * counts[at:].sum() / exposure[at:].sum()
        changes.append(Change(weeks[at].start_s, float(before), float(after), float(p_value)))
        offset = at
        found = _rate_change(counts[offset:], exposure[offset:])
        if found is None:
            break
        p_value, split = found
    return first[0], changes


def _rate_change(counts: np.ndarray, exposure: np.ndarray) -> tuple[float, int] | None:
    """(p-value, first week after the change) of the best single change, or None if too short to test."""
    keep = exposure > 0
    if keep.sum() < 2 * MIN_WEEKS or counts.sum() < 2:
        return None
    statistic, split = _scan(counts[None, :], exposure)
    n = int(counts.sum())
    rng = np.random.default_rng(SEED)
    draws = rng.multinomial(n, exposure / exposure.sum(), size=P_DRAWS).astype(float)
    null, _ = _scan(draws, exposure)
    p_value = (1 + int((null >= statistic[0] - 1e-9).sum())) / (P_DRAWS + 1)
    return p_value, int(split[0])


def _scan(counts: np.ndarray, exposure: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of weekly counts: the largest Poisson log-likelihood ratio of two rates over one, over the
    splits leaving MIN_WEEKS each side, and where it is."""
    weeks = counts.shape[1]
    cum_n = np.cumsum(counts, axis=1)
    cum_x = np.cumsum(exposure)
    total_n, total_x = cum_n[:, -1:], cum_x[-1]
    splits = np.arange(MIN_WEEKS, weeks - MIN_WEEKS + 1)
    n1, x1 = cum_n[:, splits - 1], cum_x[splits - 1]
    n2, x2 = total_n - n1, total_x - x1
    ratio = _xlogy(n1, n1 / x1) + _xlogy(n2, n2 / x2) - _xlogy(total_n, total_n / total_x)
    best = ratio.argmax(axis=1)
    return 2.0 * ratio[np.arange(len(ratio)), best], splits[best]


def _xlogy(n: np.ndarray, rate: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, n * np.log(np.where(rate > 0, rate, 1.0)), 0.0)


def repair_change(repairs: pl.DataFrame) -> tuple[float | None, Change | None]:
    """The repair time's test over the repairs in order of start (`t_s`, `repair_s`): p-value and change."""
    ordered = repairs.filter(pl.col("repair_s") > 0).sort("t_s")
    n = ordered.height
    if n < 2 * MIN_REPAIRS:
        return None, None
    logs = np.log(ordered["repair_s"].to_numpy())
    statistic, split = _t_scan(logs[None, :])
    rng = np.random.default_rng(SEED)
    exceed = 0
    for _ in range(0, REPAIR_DRAWS, DRAWS_AT_ONCE):  # a few at a time: 100,000 repairs make 0.8 MB a draw
        shuffled = np.array([rng.permutation(logs) for _ in range(DRAWS_AT_ONCE)])
        null, _ = _t_scan(shuffled)
        exceed += int((null >= statistic[0] - 1e-9).sum())
    p_value = (1 + exceed) / (REPAIR_DRAWS + 1)
    at = int(split[0])
    times = ordered["repair_s"].to_numpy()
    change = Change(
        float(ordered["t_s"][at]), float(np.median(times[:at])), float(np.median(times[at:])), float(p_value)
    )
    return p_value, change if p_value < ALPHA else None


def _t_scan(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The largest |t| of the mean before against after, over splits leaving MIN_REPAIRS each side."""
    n = values.shape[1]
    cum = np.cumsum(values, axis=1)
    cum2 = np.cumsum(values**2, axis=1)
    splits = np.arange(MIN_REPAIRS, n - MIN_REPAIRS + 1)
    n1 = splits.astype(float)
    n2 = n - n1
    s1, s2 = cum[:, splits - 1], cum[:, -1:] - cum[:, splits - 1]
    q1, q2 = cum2[:, splits - 1], cum2[:, -1:] - cum2[:, splits - 1]
    var = (q1 - s1**2 / n1 + q2 - s2**2 / n2) / (n - 2)
    t = np.abs(s1 / n1 - s2 / n2) / np.sqrt(np.maximum(var, 1e-12) * (1 / n1 + 1 / n2))
    best = t.argmax(axis=1)
    return t[np.arange(len(t)), best], splits[best]
