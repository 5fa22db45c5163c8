"""How many technicians a cluster's repairs wait for (repair.technicians), from the waits it showed.

In the simulator (engine.sim.repair) a diagnosed host waits, first come first served, for one of
`repair.technicians`; the wait shows in host_states as "down" between "diagnosing" and "repair". Given the times
the hosts joined that queue within the window, a candidate number k of technicians is replayed: each
replica draws the hands-on times from the fitted law (exponential, mean repair.fix) and plays the queue, every
wait cut at the window's end as the observed ones are. The total wait observed is then set beside the replicas'
at each k (it falls as k grows):
- the estimate is the k whose replicas' median total wait is nearest the observed one (on a log scale);
- the 90 % set is every k whose replicas' 5-95 % band of total wait holds the observed one;
- no wait at all (no queue) says only "at least": the fewest technicians under which a twentieth of the
  replicas or more had no wait either. The default is kept where it is at least that many.
Replicas use common random numbers across k (the same hands-on draws), so the comparison is of k, not of luck.
"""

import math
from dataclasses import dataclass

import numpy as np

from engine.scenario.keys import KEY_BY_NAME
from engine.twin.estimate import Estimate

REPLICAS = 40
SEED = 0  # fixed: the same run gives the same fit
MAX_TECHNICIANS = 1024  # the search stops here: past it no queue of a run this size could form
BAND = (0.05, 0.95)


@dataclass(frozen=True)
class QueueFit:
    technicians: Estimate
    waited: int  # repairs that waited for a technician at all
    total_wait_s: float


def fit_technicians(
    joined_s: np.ndarray, waits_s: np.ndarray, fix_s: float, end_s: float, source: str
) -> QueueFit | None:
    """`joined_s`: when each host joined the queue (diagnosed); `waits_s`: how long it waited, cut at end_s."""
    order = np.argsort(joined_s, kind="stable")
    joined, waits = np.asarray(joined_s, float)[order], np.asarray(waits_s, float)[order]
    if joined.size == 0 or not fix_s > 0:
        return None
    observed = float(waits.sum())
    hands_on = np.random.default_rng(SEED).exponential(fix_s, (REPLICAS, joined.size))
    totals: dict[int, np.ndarray] = {}

    def total(k: int) -> np.ndarray:
        if k not in totals:
            totals[k] = _replay(joined, hands_on, k, end_s)
        return totals[k]

    waited = int((waits > 0).sum())
    n = joined.size
    default = int(KEY_BY_NAME["repair.technicians"].default)
    if observed <= 0:
        lowest = _first(lambda k: np.quantile(total(k), BAND[0]) <= 0, n)
        value = max(default, lowest)
        return QueueFit(Estimate(value, float(lowest), None, n, source), waited, observed)
    # the median total wait falls as k grows: the first k at or under the observed, or the one before it
    at_or_under = _first(lambda k: np.median(total(k)) <= observed, n)
    candidates = [k for k in (at_or_under - 1, at_or_under) if k >= 1]
    value = min(candidates, key=lambda k: abs(math.log1p(float(np.median(total(k)))) - math.log1p(observed)))
    low = _first(lambda k: np.quantile(total(k), BAND[0]) <= observed, n)
    high = _first(lambda k: np.quantile(total(k), BAND[1]) < observed, n) - 1
    low, high = min(low, value), max(high, value)
    return QueueFit(Estimate(value, float(low), float(high), waited, source), waited, observed)


def _first(holds, n: int) -> int:
    """The smallest k in 1..MAX_TECHNICIANS where `holds(k)` (a property that stays true as k grows), by
    bisection; more technicians than hosts queued never wait, so the search stops at n + 1."""
    lo, hi = 1, min(n + 1, MAX_TECHNICIANS)
    if not holds(hi):
        return hi
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _replay(joined: np.ndarray, hands_on: np.ndarray, k: int, end_s: float) -> np.ndarray:
    """Each replica's total wait with k technicians, first come first served, every wait cut at end_s."""
    replicas = hands_on.shape[0]
    free_at = np.zeros((replicas, k))  # when each technician is next free
    rows = np.arange(replicas)
    total = np.zeros(replicas)
    for i, t in enumerate(joined):
        soonest = free_at.argmin(axis=1)
        start = np.maximum(free_at[rows, soonest], t)
        total += np.minimum(start, end_s) - t
        free_at[rows, soonest] = start + hands_on[:, i]
    return total
