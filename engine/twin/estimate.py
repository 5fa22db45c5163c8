"""What every fitted key is (an Estimate: value, 90 % interval, evidence n, source) and the exact intervals the
fits share: Garwood's for a Poisson count, the chi-square one for an exponential mean, order statistics for a
median (all from scipy: scipy.special.gammaincinv, scipy.stats.quantile_test)."""

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.analysis.analytics import gamma_quantile
from engine.twin.uncertainty import Law

LEVEL = 0.90  # every interval here is a two-sided 90 % one
MIN_EVENTS = 5  # fewer events than this keep the default (or shrink toward it) and say "prior"


@dataclass(frozen=True)
class Estimate:
    """One fitted key: its value (in the key's own unit: seconds for durations), the 90 % interval, the number
    of events or samples behind it and where it came from ("run <id> <window>", "prior", "default")."""

    value: Any
    low: float | None = None
    high: float | None = None
    n: int = 0
    source: str = "default"


@dataclass
class Fitted:
    """Keys, their laws and what could not be fitted, as each part of calibrate returns them."""

    keys: dict[str, Estimate] = field(default_factory=dict)
    laws: list[Law] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, other: "Fitted") -> None:
        self.keys |= other.keys
        self.laws += other.laws
        self.warnings += other.warnings


def poisson_interval(n: int) -> tuple[float, float]:
    """Garwood's exact two-sided 90 % interval of a Poisson mean after n events: Gamma(n) and Gamma(n + 1)
    quantiles (chi-square ones with 2n and 2n + 2 degrees, halved), by scipy.special.gammaincinv
    (engine.analysis.analytics.gamma_quantile)."""
    low = gamma_quantile(n, (1 - LEVEL) / 2) if n > 0 else 0.0
    return low, gamma_quantile(n + 1, (1 + LEVEL) / 2)


def exponential_mean_interval(total_s: float, events: float) -> tuple[float, float]:
    """The exact 90 % interval of an exponential mean from `events` completions over `total_s` of exposure
    (censored times included): total / Gamma(events) quantiles, the chi-square interval with 2n degrees, by
    scipy.special.gammaincinv (engine.analysis.analytics.gamma_quantile)."""
    return (
        total_s / gamma_quantile(events, (1 + LEVEL) / 2),
        total_s / gamma_quantile(events, (1 - LEVEL) / 2),
    )


def median_estimate(values: np.ndarray, source: str) -> Estimate:
    """The median with its distribution-free 90 % interval: the order statistics X(k) and X(n + 1 - k) with the
    largest k for which P(Binomial(n, 1/2) < k) <= 5 %, by scipy.stats.quantile_test(...).confidence_interval.
    Below 5 values no pair of order statistics holds the median with 90 %: the interval is then the smallest to
    the largest value (it holds 1 - 2^(1 - n))."""
    from scipy.stats import quantile_test  # scipy.stats takes about a second to import: only where it is used

    ordered = np.sort(np.asarray(values, dtype=float))
    n = ordered.size
    low, high = float(ordered[0]), float(ordered[-1])
    if n >= 5:
        interval = quantile_test(ordered, p=0.5).confidence_interval(LEVEL)
        low, high = float(interval.low), float(interval.high)
    return Estimate(float(np.median(ordered)), low, high, n, source)
