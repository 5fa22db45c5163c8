"""Bursts: unexpected faults of several hosts that begin together (a rack's PDU, a leaf switch, a bad batch),
fitted as correlated events with a size, in the simulator's terms (failures.burst_per_day, burst_size_mean).

- Grouping: the window's unexpected faults in order of start; a fault that begins within failures.burst_window of
  the one before it joins its group (chained). A group holding k >= 2 distinct hosts is a burst of size k.
- Chance: independent faults also begin within a minute of each other, the more often the larger the fleet (100,000
  faults over three years fall 15 minutes apart on average: 6 % of them within a minute of the next). The
  simulator's own independent arrivals make those chance groups too, so they are not bursts to add: each gap
  between consecutive faults is shorter than the window with probability q = 1 - exp(-lambda w) for faults
  arriving at lambda, so among n faults about n (1 - q)^2 q^(k - 1) chance groups hold k; the bursts are the
  groups beyond those expected, and the hosts they struck the hosts beyond (never below none).
- The size law is the simulator's: 2 + a geometric count, P(size = 2 + k) = (1 - p)^k p, whose maximum-likelihood
  mean is 2 + the mean of k; its law is p's Jeffreys posterior, Beta(n + 1/2, sum k + 1/2).
- The hosts struck by bursts are taken out of the independent rate (engine.twin.calibrate applies the share), so
  the twin does not count them twice.
"""

import math
from dataclasses import dataclass, replace

import numpy as np
import polars as pl
from scipy.stats import beta

from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME
from engine.twin.estimate import Estimate, Fitted, poisson_interval
from engine.twin.uncertainty import RUN_KEY, FailureRates, GammaRate

RATE_KEY = "failures.burst_per_day"
SIZE_KEY = "failures.burst_size_mean"
WINDOW_KEY = "failures.burst_window"


@dataclass(frozen=True)
class Bursts:
    """What the grouping found in a window: groups of two hosts or more and the chance groups expected among them
    (see the module)."""

    groups: int  # groups of >= 2 hosts
    sizes: tuple[int, ...]  # their sizes, largest first
    chance: float  # groups expected by chance from independent faults
    chance_hosts: float  # the hosts those chance groups hold
    faults: int  # unexpected faults in the window

    @property
    def bursts(self) -> float:
        return max(0.0, self.groups - self.chance)

    @property
    def hosts_struck(self) -> float:
        """Faults that belong to bursts beyond chance."""
        if self.bursts == 0:
            return 0.0
        return max(2.0 * self.bursts, float(sum(self.sizes)) - self.chance_hosts)


@dataclass(frozen=True)
class BurstSize:
    """The burst size mean's law: p ~ Beta(n + 1/2, sum k + 1/2) (Jeffreys), mean = 1 + 1/p."""

    key: str
    bursts: float
    extra_hosts: float  # sum over bursts of size - 2

    def point(self) -> dict[str, float]:
        return {self.key: 2.0 + self.extra_hosts / self.bursts}

    def draw(self, rng: np.random.Generator) -> dict[str, float]:
        p = rng.beta(self.bursts + 0.5, self.extra_hosts + 0.5)
        return {self.key: 1.0 + 1.0 / max(p, 1e-9)}


def burst_window_s() -> float:
    return parse_duration(str(KEY_BY_NAME[WINDOW_KEY].default), WINDOW_KEY)


def find_bursts(incidents: pl.DataFrame, start_s: float, end_s: float, window_s: float) -> Bursts:
    """Group the unexpected faults of [start_s, end_s) (see the module)."""
    faults = _grouped_faults(incidents, start_s, end_s, window_s)
    n = faults.height
    if n < 2:
        return Bursts(0, (), 0.0, 0.0, n)
    hosts = (
        faults.group_by("group").agg(pl.col("host_id").n_unique().alias("hosts")).filter(pl.col("hosts") >= 2)
    )
    sizes = tuple(sorted(hosts["hosts"].to_list(), reverse=True))
    q = -math.expm1(-n / max(end_s - start_s, 1.0) * window_s)
    k = np.arange(2, max(sizes, default=2) + 1)
    expected = n * (1 - q) ** 2 * q ** (k - 1.0)
    return Bursts(len(sizes), sizes, float(expected.sum()), float((k * expected).sum()), n)


def fit_bursts(found: Bursts, days: float, source: str) -> Fitted:
    """The burst keys and their laws from what `find_bursts` found over `days`."""
    out = Fitted()
    if days <= 0 or found.faults < 2:
        return out
    bursts = found.bursts
    low, high = poisson_interval(round(bursts))
    out.keys[RATE_KEY] = Estimate(bursts / days, low / days, high / days, round(bursts), source)
    out.laws.append(GammaRate(RATE_KEY, bursts + 0.5, days, bursts / days))
    if bursts >= 1.0:
        extra = max(0.0, found.hosts_struck - 2.0 * bursts)
        mean = 2.0 + extra / bursts
        law = BurstSize(SIZE_KEY, bursts, extra)
        p = beta(bursts + 0.5, extra + 0.5)  # the mean 1 + 1/p falls as p rises: its quantiles swap ends
        low, high = 1.0 + 1.0 / float(p.ppf(0.95)), 1.0 + 1.0 / float(p.ppf(0.05))
        # at sizes all 2 the maximum likelihood sits on the law's edge, where Jeffreys' interval starts just above
        out.keys[SIZE_KEY] = Estimate(mean, min(low, mean), high, round(bursts), source)
        out.laws.append(law)
        out.warnings.append(
            f"{found.groups:,} times several hosts failed within {_words(burst_window_s())} of each other"
            f" (about {found.chance:.1f} of them expected by chance): {bursts:.0f} bursts, {bursts / days:.3g} a"
            f" day, {mean:.2f} hosts each on average (largest {found.sizes[0]}); the twin strikes them together"
        )
    return out


def _words(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def independent_share(found: Bursts) -> float:
    """The share of the window's faults that were not struck by bursts beyond chance (the independent rate's)."""
    if found.faults == 0:
        return 1.0
    return max(0.0, 1.0 - found.hosts_struck / found.faults)


def fault_events(incidents: pl.DataFrame, start_s: float, end_s: float, window_s: float) -> pl.DataFrame:
    """The window's unexpected faults as events (t_s): a group of faults within `window_s` of each other once."""
    return _grouped_faults(incidents, start_s, end_s, window_s).unique(
        "group", keep="first", maintain_order=True
    )


def _grouped_faults(incidents: pl.DataFrame, start_s: float, end_s: float, window_s: float) -> pl.DataFrame:
    """The unexpected faults of [start_s, end_s) in order of start (t_s, host_id), each with its group: a fault
    that begins within `window_s` of the one before it joins its group (chained)."""
    faults = incidents.filter(
        ~pl.col("planned").fill_null(False) & pl.col("t_s").is_between(start_s, end_s, closed="left")
    ).select("t_s", "host_id")
    return faults.sort("t_s").with_columns(
        group=(pl.col("t_s").diff().fill_null(float("inf")) > window_s).cum_sum()
    )


def thin_independent_rate(failures: Fitted, share: float) -> None:
    """Take the bursts' hosts out of the independent rate: its estimate, interval and law times `share`."""
    if share >= 1.0 or RUN_KEY not in failures.keys:
        return
    rate = failures.keys[RUN_KEY]
    failures.keys[RUN_KEY] = replace(
        rate,
        value=rate.value * share,
        low=None if rate.low is None else rate.low * share,
        high=None if rate.high is None else rate.high * share,
    )
    failures.laws = [_thinned(law, share) for law in failures.laws]


def _thinned(law, share: float):
    if isinstance(law, FailureRates):
        return replace(law, events=tuple(n * share for n in law.events))
    if isinstance(law, GammaRate) and law.key == RUN_KEY:
        return replace(law, shape=law.shape * share, estimate=law.estimate * share)
    return law
