"""What incidents do to a GPU's samples: ECC counters, heat before thermal faults, GPUs gone off the bus.

All of it is computed for one chunk of GPUs at once, as (incidents in the chunk x samples) matrices added into the
chunk's (GPUs x samples) arrays with `np.add.at`; incidents are few (hundreds in a 54-day run), samples many.

ECC counters are the volatile totals DCGM reports (DCGM_FI_DEV_ECC_SBE_VOL_TOTAL / _DBE_VOL_TOTAL): cumulative
since the driver last loaded, so they reset when the GPU's host comes back from being down or repaired (the
first reporting interval after a silent one: a burn-in already runs on the fresh driver). With E(t) the errors
a GPU would have counted since forever, the counter reads E(t) - E(r(t)), r(t) being the last reset before t.
A GPU's incident lasts until its repaired_s or its host's next reset, whichever comes first.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from engine.errors import GoodputError
from engine.telemetry.model import (
    HEAT_EXTRA_C,
    HEAT_TAU_S,
    HEAT_WINDOW_S,
    SBE_AT_FAILURE,
    SBE_RAMP_S,
    first_sample_at_or_after,
)

INCIDENT_COLUMNS = ("t_s", "repaired_s", "cause", "host_id", "gpu_id", "xid")
ECC_FAILURE_CAUSES = (
    "gpu_hbm3",
    "gpu_sram",
)  # uncorrectable memory errors: each one counts a double-bit error
SBE_RAMP_CAUSE = "gpu_hbm3"  # only DRAM wears out gradually enough to show single-bit errors first
THERMAL_CAUSE = "gpu_thermal"
OFF_BUS_XID = 79  # the driver cannot reach the GPU on PCIe: DCGM reads nothing from it until it is repaired


@dataclass(frozen=True)
class GpuEvents:
    """Incidents that touch one GPU each: its position in the generator's GPU order, when, and until when."""

    pos: np.ndarray  # int64 positions into the sorted GPU arrays
    t_s: np.ndarray
    until_s: np.ndarray  # repaired_s or the host's next reset, +inf when neither happens within the run
    size: np.ndarray  # per-incident magnitude (SBE count reached at the failure), else zeros

    def in_range(self, g0: int, g1: int) -> "GpuEvents":
        keep = (self.pos >= g0) & (self.pos < g1)
        return GpuEvents(self.pos[keep] - g0, self.t_s[keep], self.until_s[keep], self.size[keep])


@dataclass(frozen=True)
class Precursors:
    sbe_ramps: GpuEvents
    dbe: GpuEvents
    heat: GpuEvents
    off_bus: GpuEvents
    reset_host: np.ndarray  # host positions, sorted together with reset_s: returns from silent states
    reset_s: np.ndarray


def check_incidents(incidents: pl.DataFrame) -> None:
    missing = [c for c in INCIDENT_COLUMNS if c not in incidents.columns]
    if missing:
        raise GoodputError(f"incidents: missing column(s) {', '.join(missing)} needed for GPU telemetry")


def prepare(
    incidents: pl.DataFrame,
    gpu_pos_of: Callable[[np.ndarray], np.ndarray],
    host_pos_of: Callable[[np.ndarray], np.ndarray],
    reset_host: np.ndarray,
    reset_s: np.ndarray,
    rng: np.random.Generator,
) -> Precursors:
    """Split the incident list into the effects above. `*_pos_of` map ids to positions (-1: not in the run);
    resets, sorted by (host, time), are the moments hosts come back from silent states."""
    check_incidents(incidents)
    order = [c for c in ("t_s", "incident_id") if c in incidents.columns]
    inc = incidents.sort(order) if incidents.height else incidents
    t_s = inc["t_s"].cast(pl.Float64).to_numpy()
    until = inc["repaired_s"].cast(pl.Float64).fill_null(np.inf).fill_nan(np.inf).to_numpy()
    cause = inc["cause"].cast(pl.String).fill_null("").to_numpy()
    xid = inc["xid"].cast(pl.Int64).fill_null(-1).to_numpy()
    gpu = gpu_pos_of(inc["gpu_id"].cast(pl.Int64).fill_null(-1).to_numpy())
    host = host_pos_of(inc["host_id"].cast(pl.Int64).fill_null(-1).to_numpy())
    # One draw per incident, in time order, whatever its cause: the draws never depend on the mix of causes.
    sbe_size = rng.integers(SBE_AT_FAILURE[0], SBE_AT_FAILURE[1], size=inc.height, endpoint=True)
    on_gpu = gpu >= 0
    until = np.minimum(until, _next_reset(host, t_s, reset_host, reset_s))

    def events(mask: np.ndarray, size: np.ndarray | None = None) -> GpuEvents:
        mask = mask & on_gpu
        sizes = size[mask].astype(np.float64) if size is not None else np.zeros(int(mask.sum()))
        return GpuEvents(gpu[mask], t_s[mask], until[mask], sizes)

    return Precursors(
        sbe_ramps=events(cause == SBE_RAMP_CAUSE, sbe_size),
        dbe=events(np.isin(cause, ECC_FAILURE_CAUSES)),
        heat=events(cause == THERMAL_CAUSE),
        off_bus=events(xid == OFF_BUS_XID),
        reset_host=reset_host,
        reset_s=reset_s,
    )


def _next_reset(host: np.ndarray, t_s: np.ndarray, reset_host: np.ndarray, reset_s: np.ndarray) -> np.ndarray:
    """For each (host, t_s): the host's first reset strictly after t_s, +inf where none.

    Incidents and resets are merged in (host, time) order, resets first on ties; each incident then looks
    ahead to the nearest reset position (a reversed running minimum) and keeps it if it is on the same host.
    """
    n = host.size
    all_host = np.concatenate([host, reset_host])
    all_t = np.concatenate([t_s, reset_s])
    is_reset = np.concatenate([np.zeros(n, dtype=bool), np.ones(reset_host.size, dtype=bool)])
    order = np.lexsort((~is_reset, all_t, all_host))  # on a tie the reset sorts first: it is not "after"
    sorted_reset = is_reset[order]
    positions = np.where(sorted_reset, np.arange(order.size), order.size)
    nearest = np.minimum.accumulate(positions[::-1])[::-1]  # first reset at or after each position
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    ahead = nearest[rank[:n]]
    found = ahead < order.size
    target = order[np.minimum(ahead, order.size - 1)] if order.size else ahead
    same_host = found & (all_host[target] == host)
    return np.where(same_host, all_t[target], np.inf)


def last_reset(pre: Precursors, h0: int, h1: int, t: np.ndarray, resolution: float) -> np.ndarray:
    """(hosts h0..h1 x samples): the time of the host's last return from repair at or before each sample, else 0."""
    n_t = t.size
    lo, hi = np.searchsorted(pre.reset_host, [h0, h1])
    hosts, times = pre.reset_host[lo:hi] - h0, pre.reset_s[lo:hi]
    if not hosts.size:
        return np.zeros((h1 - h0, n_t))
    first_k = first_sample_at_or_after(times, resolution, n_t)
    keys = hosts * (n_t + 1) + first_k
    sample_keys = (np.arange(h1 - h0)[:, None] * (n_t + 1) + np.arange(n_t)[None, :]).ravel()
    found = np.searchsorted(keys, sample_keys, side="right") - 1
    same_host = (found >= 0) & (hosts[np.maximum(found, 0)] == sample_keys // (n_t + 1))
    reset = np.where(same_host, times[np.maximum(found, 0)], 0.0)
    return reset.reshape(h1 - h0, n_t)


def _cubic_ramp(x: np.ndarray, t_fail: np.ndarray) -> np.ndarray:
    """0 before the ramp window, rising as a cube to 1 at the failure, 1 after it."""
    return np.clip((x - (t_fail - SBE_RAMP_S)) / SBE_RAMP_S, 0.0, 1.0) ** 3


def ecc_counters(
    pre: Precursors,
    g0: int,
    g1: int,
    t: np.ndarray,
    host_reset: np.ndarray,
    local_host: np.ndarray,
    sbe_rate_per_s: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(sbe, dbe) int32 (GPUs g0..g1 x samples). `host_reset` is last_reset of the chunk's hosts, `local_host`
    each GPU's row in it. Only GPUs that count anything (2% with a trickle, those with incidents) are computed."""
    sbe = np.zeros((g1 - g0, t.size), dtype=np.int32)
    dbe = np.zeros((g1 - g0, t.size), dtype=np.int32)
    ramps, fails = pre.sbe_ramps.in_range(g0, g1), pre.dbe.in_range(g0, g1)
    rows = np.unique(np.concatenate([np.flatnonzero(sbe_rate_per_s), ramps.pos, fails.pos]))
    if not rows.size:
        return sbe, dbe
    reset = host_reset[local_host[rows]]
    errors = sbe_rate_per_s[rows, None] * (t[None, :] - reset)  # background trickle since the last reset
    if ramps.pos.size:
        at = np.searchsorted(rows, ramps.pos)
        t_fail, size = ramps.t_s[:, None], ramps.size[:, None]
        since_reset = size * (_cubic_ramp(t[None, :], t_fail) - _cubic_ramp(reset[at], t_fail))
        np.add.at(errors, at, since_reset)
    sbe[rows] = np.floor(errors)
    if fails.pos.size:
        at = np.searchsorted(rows, fails.pos)
        t_fail = fails.t_s[:, None]
        counted = (t[None, :] >= t_fail) & (reset[at] <= t_fail)  # a failure as the host returns counts
        np.add.at(dbe, rows[at], counted.astype(np.int32))
    return sbe, dbe


def heat(pre: Precursors, g0: int, g1: int, t: np.ndarray, shape: tuple[int, int]) -> np.ndarray | None:
    """Extra degrees from failing thermal interfaces (GPUs g0..g1 x samples), or None when there are none."""
    hot = pre.heat.in_range(g0, g1)
    if not hot.pos.size:
        return None
    lead = hot.t_s[:, None] - t[None, :]  # > 0 before the fault
    before = np.where((lead > 0) & (lead <= HEAT_WINDOW_S), HEAT_EXTRA_C * np.exp(-lead / HEAT_TAU_S), 0.0)
    after = np.where((lead <= 0) & (t[None, :] < hot.until_s[:, None]), HEAT_EXTRA_C, 0.0)
    extra = np.zeros(shape, dtype=np.float32)
    np.add.at(extra, hot.pos, (before + after).astype(np.float32))
    return extra


def off_bus(pre: Precursors, g0: int, g1: int, t: np.ndarray, shape: tuple[int, int]) -> np.ndarray | None:
    """True where a GPU has fallen off the bus and is not yet repaired (it reports nothing), or None."""
    gone = pre.off_bus.in_range(g0, g1)
    if not gone.pos.size:
        return None
    during = (t[None, :] >= gone.t_s[:, None]) & (t[None, :] < gone.until_s[:, None])
    count = np.zeros(shape, dtype=np.int16)
    np.add.at(count, gone.pos, during.astype(np.int16))
    return count > 0
