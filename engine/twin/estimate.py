"""What every fitted key is (an Estimate: value, 90 % interval, evidence n, source) and the exact intervals the
fits share: Garwood's for a Poisson count, the chi-square one for an exponential mean, order statistics for a
median."""

import math
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
    """Garwood's exact two-sided 90 % interval of a Poisson mean after n events."""
    low = gamma_quantile(n, (1 - LEVEL) / 2) if n > 0 else 0.0
    return low, gamma_quantile(n + 1, (1 + LEVEL) / 2)


def exponential_mean_interval(total_s: float, events: float) -> tuple[float, float]:
    """The exact 90 % interval of an exponential mean from `events` completions over `total_s` of exposure
    (censored times included): total / Gamma(events) quantiles, the chi-square interval with 2n degrees."""
    return (
        total_s / gamma_quantile(events, (1 + LEVEL) / 2),
        total_s / gamma_quantile(events, (1 - LEVEL) / 2),
    )


def median_estimate(values: np.ndarray, source: str) -> Estimate:
    """The median with its distribution-free 90 % interval (order statistics, normal approximation)."""
    ordered = np.sort(values)
    n = ordered.size
    half = 1.6449 * math.sqrt(n) / 2
    lo, hi = max(int(math.floor(n / 2 - half)), 0), min(int(math.ceil(n / 2 + half)), n - 1)
    return Estimate(float(np.median(ordered)), float(ordered[lo]), float(ordered[hi]), n, source)
