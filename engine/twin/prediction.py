"""The twin's bands: where the next value of a figure will fall, from N simulated runs of it.

A band of the twin answers "what will the next window show?", so it is a prediction interval, not a quantile
estimate: the k-th smallest and k-th largest of N runs hold a new run's value with probability
(N + 1 - 2k) / (N + 1), whatever the figure's law (the runs and the new value being alike and independent). The
band takes the largest k that still gives at least LEVEL; with fewer than 19 runs no k does, and the band is the
smallest and largest run, holding (N - 1) / (N + 1) (10 runs: 82 %), which is said beside it. The 5 % and 95 %
quantiles of N runs, read between order statistics, hold less than 90 % (about 81 % at 20 runs): a band that
claims 90 % must be the order statistics.
"""

import math
from dataclasses import dataclass

import numpy as np

LEVEL = 0.90
RUNS_FOR_LEVEL = 19  # the fewest runs whose smallest and largest hold a new one with probability LEVEL


@dataclass(frozen=True)
class Interval:
    low: float
    median: float
    high: float
    level: float  # the probability the band holds a new run's value


def prediction_interval(values) -> Interval | None:
    """The band of the module's docstring over `values` (None, NaN left out); None with fewer than 2 values."""
    data = np.sort(np.array([v for v in values if v is not None], dtype=float))
    data = data[~np.isnan(data)]
    n = data.size
    if n < 2:
        return None
    k = max(1, math.floor((1 - LEVEL) / 2 * (n + 1)))
    return Interval(float(data[k - 1]), float(np.median(data)), float(data[n - k]), band_level(n))


def band_level(runs: int) -> float:
    """What a band of `runs` runs holds of a new run's value."""
    k = max(1, math.floor((1 - LEVEL) / 2 * (runs + 1)))
    return (runs + 1 - 2 * k) / (runs + 1)
