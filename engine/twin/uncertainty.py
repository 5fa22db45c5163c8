"""The fit's own uncertainty, carried into every simulated run of the twin (issue 44).

A calibrated scenario holds each key at its point estimate; the data fix it only to within its interval. A band
made of runs at the point values shows the luck of the next weeks under those values, not how well the values are
known, and one window's fit error is about as large as one window's luck: such bands held 56 % of what happened
next. So each run of a backtest, forecast or twin-based Monte-Carlo first draws the fitted keys from their laws
here (a parametric bootstrap of the fit), then simulates: the band then holds both.

The laws, one per kind of estimate (each names its keys; `FitUncertainty` draws them all for one run):
- a Poisson rate after n events over an exposure: Jeffreys' posterior Gamma(n + 1/2) / exposure, which stays
  proper at n = 0 (a fitted zero still draws small rates up to about its upper bound);
- the failure rates of every cause together (FailureRates): each cause's rate as above but with Jeffreys' half
  event shared among the causes (Perks' prior), the overall rate their sum and the mix their shares, the bad
  hosts drawn from their bootstrap (engine.twin.fit_hosts);
- an exponential mean after n completions over a total time: total / Gamma(n), the law whose quantiles are its
  exact chi-square interval;
- maximum-likelihood estimates with their covariance (the repair law): a normal law on the scale they were
  fitted on (log, logit);
- a median with its order-statistic interval: a normal law of that width, kept above the key's minimum;
- an integer known to lie in a set (technicians): drawn uniformly from it.

Each run's draws come from the seed's own stream (engine.sim.streams.Stream.FIT), so a band is the same on every
executor and every call. A key the caller has moved away from the fitted value (a planner's what-if) is the
caller's, and is not drawn.
"""

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy.special import expit, ndtri

from engine.scenario import Scenario
from engine.scenario.keys import KEY_BY_NAME, MIX_PREFIX
from engine.sim.streams import Stream, generator

Z90 = float(ndtri(0.95))  # the normal quantile of a two-sided 90 % interval (scipy.special.ndtri: norm.ppf)
RUN_KEY = "failures.rate_per_1000_node_days"
METHOD = (
    "each run draws the fitted keys from their laws first (a parametric bootstrap: Poisson rates from Jeffreys'"
    " posterior, means and medians from their sampling laws, the repair law from its likelihood), so the band"
    " holds the fit's uncertainty as well as the luck of the runs"
)


class Law(Protocol):
    """The law of one or more fitted keys: `point` gives the estimate of each, `draw` one value of each."""

    def point(self) -> dict[str, float]: ...

    def draw(self, rng: np.random.Generator) -> dict[str, float]: ...


@dataclass(frozen=True)
class GammaRate:
    """A rate estimated at `estimate`, whose law is Gamma(shape) / rate, times `scale` (per 1,000 host-days: 1000)."""

    key: str
    shape: float
    rate: float
    estimate: float
    scale: float = 1.0

    @classmethod
    def after(cls, key: str, events: int, exposure: float, scale: float = 1.0) -> "GammaRate":
        """A Poisson rate after `events` over `exposure`: events / exposure, drawn from Jeffreys' posterior."""
        return cls(key, events + 0.5, exposure, events / exposure, scale)

    def point(self) -> dict[str, float]:
        return {self.key: self.scale * self.estimate}

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        return {self.key: self.scale * rng.gamma(self.shape) / self.rate}


@dataclass(frozen=True)
class MeanOfExponential:
    """An exponential mean after `events` completions over `total` time (censored time included)."""

    key: str
    total: float
    events: float

    def point(self) -> dict[str, float]:
        return {self.key: self.total / self.events}

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        return {self.key: self.total / rng.gamma(self.events)}


@dataclass(frozen=True)
class NormalOnScale:
    """Maximum-likelihood estimates, normal with `covariance` on their fitted scales ("log", "logit")."""

    keys: tuple[str, ...]
    scales: tuple[str, ...]
    centre: tuple[float, ...]
    covariance: np.ndarray

    def point(self) -> dict[str, float]:
        return self._back(np.asarray(self.centre))

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        return self._back(rng.multivariate_normal(np.asarray(self.centre), self.covariance))

    def _back(self, theta: np.ndarray) -> dict[str, float]:
        back = {"log": math.exp, "logit": lambda v: float(expit(v))}
        return {k: back[s](float(v)) for k, s, v in zip(self.keys, self.scales, theta, strict=True)}


@dataclass(frozen=True)
class Median:
    """A median with its 90 % interval [low, high]: normal of that width, kept at or above `minimum`."""

    key: str
    value: float
    low: float
    high: float
    minimum: float = 0.0

    def point(self) -> dict[str, float]:
        return {self.key: self.value}

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        sd = (self.high - self.low) / (2 * Z90)
        return {self.key: max(self.minimum, self.value + sd * rng.standard_normal())}


@dataclass(frozen=True)
class IntegerBetween:
    """An integer estimated at `value`, known to lie in [low, high], drawn uniformly."""

    key: str
    value: int
    low: int
    high: int

    def point(self) -> dict[str, float]:
        return {self.key: self.value}

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        return {self.key: int(rng.integers(self.low, self.high + 1))}


@dataclass(frozen=True)
class FailureRates:
    """Every cause's unexpected failure rate (per host-day of its exposure) after its events; the overall rate
    per 1,000 host-days is their sum and each mix key its share. With bad hosts, one bootstrap row of (share,
    ratio of their hardware rate to the others') is drawn too, and turned into the simulator's keys as
    engine.twin.fit_failures does for the point values."""

    causes: tuple[str, ...]
    events: tuple[int, ...]
    host_days: tuple[float, ...]
    hardware: frozenset[str] = frozenset()
    bad_hosts: np.ndarray | None = None  # rows of (share, ratio), from the bootstrap of engine.twin.fit_hosts
    bad_host_point: tuple[float, float] | None = None  # the fit's own (share, ratio)

    def point(self) -> dict[str, float]:
        rates = {
            c: n / days if days > 0 else 0.0
            for c, n, days in zip(self.causes, self.events, self.host_days, strict=True)
        }
        return self._keys(rates, self.bad_host_point)

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        # Jeffreys' half an event is shared by the causes (Perks' prior, 1/(2K) each), not given to each: with 18
        # causes, half an event each drew the rate 4 % high on 240 events, and a cause never seen as often as one
        # seen half the time
        share = 0.5 / len(self.causes)
        rates = {
            c: (rng.gamma(n + share) / days if days > 0 else 0.0)
            for c, n, days in zip(self.causes, self.events, self.host_days, strict=True)
        }
        bad = None
        if self.bad_hosts is not None and len(self.bad_hosts):
            bad = tuple(self.bad_hosts[rng.integers(len(self.bad_hosts))])
        return self._keys(rates, bad)

    def _keys(self, rates: dict[str, float], bad: tuple[float, float] | None) -> dict[str, float]:
        total = sum(rates.values())
        out = {MIX_PREFIX + c: r / total for c, r in rates.items()}
        out[RUN_KEY] = 1000.0 * total
        if bad is not None:
            share, ratio = bad
            hardware = sum(out[MIX_PREFIX + c] for c in self.hardware)
            multiplier = 1.0 + hardware * (ratio - 1.0)
            out["failures.bad_host_fraction"] = float(share)
            out["failures.bad_host_multiplier"] = float(multiplier)
            out[RUN_KEY] /= 1.0 + share * (multiplier - 1.0)
        return out


@dataclass(frozen=True)
class FitUncertainty:
    """The laws of a calibration's keys."""

    laws: tuple[Law, ...]

    def scenario_for(self, scenario: Scenario, seed: int) -> Scenario:
        """`scenario` with each fitted key it still holds at the law's point estimate drawn for the run of `seed`
        (a key moved away from it, by a planner or a test, is kept as it is)."""
        rng = generator(seed, Stream.FIT)
        values: dict[str, Any] = {}
        for law in self.laws:
            point = law.point()
            for key, value in law.draw(rng).items():
                if _same(scenario[key], point[key]):
                    values[key] = _within_bounds(key, value)
        return scenario.with_values(values) if values else scenario


def _same(current: Any, point: Any) -> bool:
    """Whether a scenario still holds the fitted value (to rounding: a value that went through text)."""
    if isinstance(point, float) or isinstance(current, float):
        try:
            return math.isclose(float(current), float(point), rel_tol=1e-6, abs_tol=1e-9)
        except (TypeError, ValueError):
            return False
    return current == point


def _within_bounds(key: str, value: float) -> float:
    spec = KEY_BY_NAME.get(key)
    if spec is None:  # a mix key: a relative weight
        return max(0.0, float(value))
    if spec.minimum is not None:
        value = max(value, spec.minimum)
    if spec.maximum is not None:
        value = min(value, spec.maximum)
    return int(round(value)) if spec.kind == "int" else float(value)
