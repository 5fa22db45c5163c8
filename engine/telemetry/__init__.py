"""Per-GPU telemetry of a simulated run, generated vectorised from the hosts' state intervals.

`gpu_samples` yields the `gpu_samples` table in chunks of whole hosts (memory stays flat for 131,072 GPUs over
54 days): one sample per GPU every `simulation.telemetry_resolution` seconds over [0, duration), except while
its host is down, being diagnosed or repaired, and while the GPU itself has fallen off the bus. For each chunk
the sample grid is built as (GPUs x samples) arrays; each sample finds its host's state interval by a
`searchsorted` over interval starts, and what the GPU reads follows from what it does (engine.telemetry.model),
plus the precursors of its incidents (engine.telemetry.precursors). No Python loop runs per sample, per state
interval or per incident.

`xid_events` and `xid_counts` (the kernel's XID lines for each GPU incident) live in engine.telemetry.xid and
are re-exported here: the simulator imports both from this module.
"""

import itertools
import math
import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import polars as pl

from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.store.schema import HOST_STATES, polars_schema
from engine.telemetry import precursors
from engine.telemetry.clocks import Throttles, clock_readings, max_sm_clock, throttled_reads
from engine.telemetry.model import (
    BURN_IN,
    CHECKPOINT,
    DIURNAL_POWER_SWING,
    DIURNAL_TEMP_SWING_C,
    HOT_GPU_EXTRA_C,
    HOT_GPU_SHARE,
    IDLE,
    IDLE_OFFSET_SCALE,
    MEM_LEVEL,
    MEM_SPREAD,
    POWER_DECIMALS,
    POWER_GPU_SPREAD,
    POWER_LEVEL,
    POWER_SPREAD,
    RUNNING,
    SBE_PRONE_RATE_PER_DAY,
    SBE_PRONE_SHARE,
    TEMP_GPU_SPREAD,
    TEMP_LEVEL,
    TEMP_SPREAD,
    UTIL_LEVEL,
    UTIL_SPREAD,
    diurnal_cosine,
    first_sample_at_or_after,
    hash_noise,
    unit_noise,
)
from engine.telemetry.xid import pci_bus_id, xid_counts, xid_events
from engine.units import SECONDS_PER_DAY

__all__ = [
    "gpu_samples",
    "xid_events",
    "xid_counts",
    "pci_bus_id",
    "sample_times",
    "SILENT_STATES",
    "SIMULATED_COLUMNS",
]

SAMPLE_SCHEMA = polars_schema("gpu_samples")
# What the simulation generates; other columns of the table (read only from real DCGM scrapes) are null here.
# The SM clock and clocks-event reasons come from engine.telemetry.clocks.
CLOCK_COLUMNS = ("sm_clock_mhz", "clocks_event_reasons")
SIMULATED_COLUMNS = (
    "t_s",
    "gpu_id",
    "temp_c",
    "power_w",
    "util_pct",
    "mem_util_pct",
    "ecc_sbe",
    "ecc_dbe",
    *CLOCK_COLUMNS,
)
MEASURED_COLUMNS = SIMULATED_COLUMNS[2:]  # all but where and when: what a block computes
# A host in these states is off the fleet's telemetry: powered down, or on a bench being diagnosed and fixed.
# burn_in reports (it runs stress tests, hot); draining reports (its job is being stopped).
SILENT_STATES = ("down", "diagnosing", "repair")
STATE_CODE = {state: code for code, state in enumerate(HOST_STATES)}
_HEALTHY, _RUNNING, _DRAINING = (STATE_CODE[s] for s in ("healthy", "running", "draining"))
# what a host state means for its GPUs (the activity codes of engine.telemetry.model)
_ACTIVITY_OF_STATE = np.array(
    [{"running": RUNNING, "draining": RUNNING, "burn_in": BURN_IN}.get(s, IDLE) for s in HOST_STATES],
    dtype=np.int8,
)
_REPORTS_IN_STATE = np.array([s not in SILENT_STATES for s in HOST_STATES])
DEFAULT_WORKERS = min(2, os.cpu_count() or 1)  # this project's machines have 2 cores
# Chunks handed out: big enough that the store writes whole row groups (DuckDB inserts of 250 k rows took 50%
# more CPU and a 50% bigger file than inserts of 1 M and more); ~90 MB each.
DEFAULT_CHUNK_ROWS = 2_000_000
# Blocks computed at once inside a chunk: working arrays of ~1 MB stay in cache (measured 20% less CPU than 1 M).
BLOCK_ROWS = 250_000


def sample_times(duration_s: float, resolution_s: float) -> np.ndarray:
    """The sample grid: 0, r, 2r, ... while below `duration_s`."""
    count = math.ceil(duration_s / resolution_s)
    while count > 0 and (count - 1) * resolution_s >= duration_s:
        count -= 1
    return np.arange(count, dtype=np.float64) * resolution_s


@dataclass(frozen=True)
class _Fleet:
    """The GPUs sorted by (host, gpu_id) with what persists per GPU, and the state intervals per host."""

    gpu_id: np.ndarray
    gpu_host: np.ndarray  # host position of each GPU
    host_first_gpu: np.ndarray  # (hosts + 1) offsets into the GPU arrays
    temp_offset: np.ndarray
    power_factor: np.ndarray
    sbe_rate_per_s: np.ndarray
    hs_host: np.ndarray  # state intervals sorted by (host position, start)
    hs_start: np.ndarray
    hs_end: np.ndarray
    hs_state: np.ndarray
    hs_activity: np.ndarray  # what the interval's GPUs do (engine.telemetry.model activity codes)
    hs_job: np.ndarray  # row of the interval's job in the checkpoint matrix, -1 for none
    host_first_state: np.ndarray  # (hosts + 1) offsets into the interval arrays
    in_checkpoint: np.ndarray  # (checkpointing jobs x samples) bool


def gpu_samples(
    scenario: Scenario,
    gpus: pl.DataFrame,
    host_states: pl.DataFrame,
    incidents: pl.DataFrame,
    checkpoints: pl.DataFrame,
    rng: np.random.Generator,
    *,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    workers: int = DEFAULT_WORKERS,
    slow_episodes: Sequence = (),
) -> Iterator[pl.DataFrame]:
    """The gpu_samples table as an iterator of chunks of whole hosts, each chunk's rows ordered by
    (t_s, host, gpu_id).

    Inputs are checked and every draw from `rng` is made here, before this returns; the chunks are computed by
    `workers` threads ahead of the consumer, the first ones from the moment this returns (NumPy releases the GIL
    in its loops, so a store writer, or the network's routing before it, and the generator overlap), at most
    `workers + 1` chunks alive at once. `chunk_rows` bounds a chunk before silent samples are dropped. The
    concatenated chunks are the same whatever the chunking and threads, because a sample's noise is a hash of (key,
    gpu, sample), not a position in a stream. `slow_episodes` (engine.sim.records.SlowEpisode) hold GPUs down:
    their clocks, reasons, power and heat (engine.telemetry.clocks).
    """
    resolution = float(scenario.simulation.telemetry_resolution)
    t = sample_times(scenario.duration_s, resolution)
    tdp = float(scenario.cluster.gpu_tdp_w)
    fleet, pre, key = _prepare(gpus, host_states, incidents, checkpoints, rng, t, resolution)
    n_hosts = fleet.host_first_gpu.size - 1
    if not t.size or not n_hosts:
        return iter(())
    diurnal = diurnal_cosine(scenario.simulation.start, t)
    clocks = _Clocks(
        Throttles.of(
            slow_episodes,
            scenario.cluster.gpus_per_host,
            lambda ids: _positions(fleet.gpu_id, ids, np.argsort(fleet.gpu_id)),
        ),
        max_sm_clock(scenario.cluster.gpu_model),
    )
    widest_host = int(np.diff(fleet.host_first_gpu).max())
    hosts_per_chunk = max(1, chunk_rows // (widest_host * t.size))
    hosts_per_block = max(1, min(hosts_per_chunk, BLOCK_ROWS // (widest_host * t.size)))
    starts = range(0, n_hosts, hosts_per_chunk)

    def chunk(h0: int) -> pl.DataFrame:
        h1 = min(n_hosts, h0 + hosts_per_chunk)
        blocks = [
            _block(fleet, pre, key, b0, min(h1, b0 + hosts_per_block), t, resolution, tdp, diurnal, clocks)
            for b0 in range(h0, h1, hosts_per_block)
        ]
        g0, g1 = int(fleet.host_first_gpu[h0]), int(fleet.host_first_gpu[h1])
        measured = {
            name: np.concatenate([columns[name] for columns, _ in blocks]) for name in MEASURED_COLUMNS
        }
        reports = (
            None
            if all(reporting is None for _, reporting in blocks)
            else np.concatenate(
                [np.ones(columns["temp_c"].shape, bool) if r is None else r for columns, r in blocks]
            )
        )
        return _time_major(t, fleet.gpu_id[g0:g1].astype(np.int32), measured, reports)

    return _ahead(chunk, starts, workers) if workers > 1 else map(chunk, starts)


def _ahead(work, items, workers: int) -> Iterator[pl.DataFrame]:
    """`map(work, items)` in order, computed by `workers` threads at most `workers` items ahead. The first
    `workers` start at once, so they are computed while the caller does other work before it reads them (the
    network's routing, engine.twin.simulate)."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gpu-samples")
    items = iter(items)
    pending = deque(pool.submit(work, item) for item in itertools.islice(items, workers))

    def results() -> Iterator[pl.DataFrame]:
        try:
            while pending:
                following = next(items, _NO_ITEM)
                if following is not _NO_ITEM:
                    pending.append(pool.submit(work, following))
                yield pending.popleft().result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    return results()


_NO_ITEM = object()


def _time_major(
    t: np.ndarray, gpu_ids: np.ndarray, measured: dict[str, np.ndarray], reports: np.ndarray | None
) -> pl.DataFrame:
    """A chunk's rows time-major, (t_s, GPU) in the fleet's order, silent samples left out: the store's row groups
    then each cover a slice of time, so reading every GPU at one moment (the GPUs and Racks pages) touches a row
    group a chunk instead of the whole table. `measured` holds (GPUs, samples) arrays, `reports` which samples are
    reported (None: all). Each column is read once through its transpose (and the mask of what is reported): a
    third of the CPU of gathering a GPU-major frame by index and filtering it (issue 28: the default store)."""
    shape = (t.size, gpu_ids.size)
    if reports is None:
        columns = {"t_s": np.repeat(t, gpu_ids.size), "gpu_id": np.tile(gpu_ids, t.size)}
        columns |= {name: values.T.ravel() for name, values in measured.items()}
    else:
        kept = reports.T
        columns = {
            "t_s": np.broadcast_to(t[:, None], shape)[kept],
            "gpu_id": np.broadcast_to(gpu_ids[None, :], shape)[kept],
        }
        columns |= {name: values.T[kept] for name, values in measured.items()}
    frame = pl.DataFrame(columns, schema={name: SAMPLE_SCHEMA[name] for name in SIMULATED_COLUMNS})
    return frame.select(
        pl.col(name) if name in SIMULATED_COLUMNS else pl.lit(None, dtype).alias(name)
        for name, dtype in SAMPLE_SCHEMA.items()
    )


def _prepare(gpus, host_states, incidents, checkpoints, rng, t, resolution):
    for frame, name, columns in (
        (gpus, "gpus", ("gpu_id", "host_id")),
        (host_states, "host_states", ("host_id", "state", "start_s", "end_s")),
        (checkpoints, "checkpoints", ("job_id", "start_s", "end_s")),
    ):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise GoodputError(f"{name}: missing column(s) {', '.join(missing)} needed for GPU telemetry")
    ordered = gpus.select(pl.col("host_id").cast(pl.Int64), pl.col("gpu_id").cast(pl.Int64)).sort(
        "host_id", "gpu_id"
    )
    gpu_id, gpu_host_id = ordered["gpu_id"].to_numpy(), ordered["host_id"].to_numpy()
    if np.unique(gpu_id).size != gpu_id.size:
        raise GoodputError("gpus: gpu_id values must be unique")
    host_ids, gpu_host = np.unique(gpu_host_id, return_inverse=True)
    n = gpu_id.size

    # persistent per-GPU traits, drawn once for the whole fleet in (host, gpu_id) order
    key = int(rng.integers(0, 2**63))
    temp_offset = (
        rng.uniform(-1.0, 1.0, n) * TEMP_GPU_SPREAD + (rng.random(n) < HOT_GPU_SHARE) * HOT_GPU_EXTRA_C
    ).astype(np.float32)
    power_factor = (1.0 + rng.uniform(-1.0, 1.0, n) * POWER_GPU_SPREAD).astype(np.float32)
    low, high = np.log(SBE_PRONE_RATE_PER_DAY)
    per_day = np.where(rng.random(n) < SBE_PRONE_SHARE, np.exp(rng.uniform(low, high, n)), 0.0)
    sbe_rate = per_day / SECONDS_PER_DAY

    jobs = checkpoints["job_id"].cast(pl.String).unique().sort().to_list()
    states = _state_intervals(host_states, host_ids, {job: row for row, job in enumerate(jobs)})

    pre = precursors.prepare(
        incidents,
        lambda ids: _positions(gpu_id, ids, np.argsort(gpu_id)),
        lambda ids: _positions(host_ids, ids, np.arange(host_ids.size)),
        *_returns_from_silence(states),
        rng,
    )
    fleet = _Fleet(
        gpu_id=gpu_id,
        gpu_host=gpu_host,
        host_first_gpu=np.searchsorted(gpu_host, np.arange(host_ids.size + 1)),
        temp_offset=temp_offset,
        power_factor=power_factor,
        sbe_rate_per_s=sbe_rate,
        **states,
        in_checkpoint=_checkpoint_matrix(checkpoints, jobs, t, resolution),
    )
    return fleet, pre, key


def _positions(values: np.ndarray, ids: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Position in `values` of each of `ids` (-1 where absent); `order` sorts `values`."""
    if not values.size:
        return np.full(ids.size, -1, dtype=np.int64)
    at = order[np.minimum(np.searchsorted(values, ids, sorter=order), values.size - 1)]
    return np.where(values[at] == ids, at, -1)


def _state_intervals(host_states: pl.DataFrame, host_ids: np.ndarray, job_row: dict[str, int]) -> dict:
    unknown = host_states.filter(~pl.col("state").is_in(HOST_STATES))
    if unknown.height:
        raise GoodputError(
            f"host_states: unknown state {unknown['state'][0]!r} for host {unknown['host_id'][0]}"
            f" (states: {', '.join(HOST_STATES)})"
        )
    job = (
        pl.col("job_id").cast(pl.String).replace_strict(job_row, default=-1, return_dtype=pl.Int64)
        if "job_id" in host_states.columns
        else pl.lit(-1, dtype=pl.Int64)
    )
    frame = (
        host_states.select(
            pl.col("host_id").cast(pl.Int64),
            pl.col("start_s").cast(pl.Float64),
            pl.col("end_s").cast(pl.Float64),
            pl.col("state").replace_strict(STATE_CODE, return_dtype=pl.Int8),
            job.alias("job"),
        )
        .filter(pl.col("host_id").is_in(host_ids.tolist()) & (pl.col("end_s") > pl.col("start_s")))
        .sort("host_id", "start_s")
    )
    hs_host = np.searchsorted(host_ids, frame["host_id"].to_numpy())
    state = frame["state"].to_numpy()
    activity = _ACTIVITY_OF_STATE[state]
    # a drain winds down what ran before it: a host drained while idle (a spare pulled for maintenance) stays idle
    after_running = np.zeros(state.size, dtype=bool)
    after_running[1:] = (hs_host[1:] == hs_host[:-1]) & (state[:-1] == _RUNNING)
    activity[(state == _DRAINING) & ~after_running] = IDLE
    return {
        "hs_host": hs_host,
        "hs_start": frame["start_s"].to_numpy(),
        "hs_end": frame["end_s"].to_numpy(),
        "hs_state": state,
        "hs_activity": activity,
        "hs_job": frame["job"].to_numpy(),
        "host_first_state": np.searchsorted(hs_host, np.arange(host_ids.size + 1)),
    }


def _returns_from_silence(states: dict) -> tuple[np.ndarray, np.ndarray]:
    """(host position, time) where a host starts reporting again after a silent state: its driver reloaded,
    its volatile ECC counters start from zero. Sorted by (host, time), as the intervals are."""
    host, silent = states["hs_host"], ~_REPORTS_IN_STATE[states["hs_state"]]
    back = np.zeros(host.size, dtype=bool)
    back[1:] = (host[1:] == host[:-1]) & silent[:-1] & ~silent[1:]
    return host[back], states["hs_start"][back]


def _checkpoint_matrix(
    checkpoints: pl.DataFrame, jobs: list[str], t: np.ndarray, resolution: float
) -> np.ndarray:
    """(jobs x samples): True where a sample time falls inside one of that job's checkpoint writes."""
    marks = np.zeros((len(jobs), t.size + 1), dtype=np.int32)
    if checkpoints.height and t.size:
        row = (
            checkpoints["job_id"]
            .cast(pl.String)
            .replace_strict({job: i for i, job in enumerate(jobs)}, return_dtype=pl.Int64)
            .to_numpy()
        )
        first = first_sample_at_or_after(
            checkpoints["start_s"].cast(pl.Float64).to_numpy(), resolution, t.size
        )
        stop = first_sample_at_or_after(checkpoints["end_s"].cast(pl.Float64).to_numpy(), resolution, t.size)
        np.add.at(marks, (row, first), 1)
        np.add.at(marks, (row, stop), -1)
    return np.cumsum(marks, axis=1)[:, :-1] > 0


def _host_grid(fleet: _Fleet, h0: int, h1: int, t: np.ndarray, resolution: float):
    """(hosts x samples) state code, activity, fade (1, falling to 0 across a drain) and reporting flag."""
    n_t = t.size
    lo, hi = fleet.host_first_state[h0], fleet.host_first_state[h1]
    host = fleet.hs_host[lo:hi] - h0
    start, end = fleet.hs_start[lo:hi], fleet.hs_end[lo:hi]
    first_k = first_sample_at_or_after(start, resolution, n_t)
    keys = host * (n_t + 1) + first_k  # sorted: intervals are sorted by (host, start)
    sample_host = np.repeat(np.arange(h1 - h0), n_t)
    sample_k = np.tile(np.arange(n_t), h1 - h0)
    found = np.searchsorted(keys, sample_host * (n_t + 1) + sample_k, side="right") - 1
    at = np.maximum(found, 0)
    sample_t = t[sample_k]
    if host.size:
        covered = (found >= 0) & (host[at] == sample_host) & (sample_t < end[at])
    else:
        covered = np.zeros(sample_k.size, dtype=bool)
    # a gap in a host's intervals reads as healthy: the host is powered and idle
    state = np.where(covered, fleet.hs_state[lo:hi][at] if host.size else 0, _HEALTHY).astype(np.int8)
    activity = np.where(covered, fleet.hs_activity[lo:hi][at] if host.size else IDLE, IDLE).astype(np.int8)
    if fleet.in_checkpoint.size and host.size:
        job = np.where(covered & (state == _RUNNING), fleet.hs_job[lo:hi][at], -1)
        writing = job >= 0
        writing[writing] = fleet.in_checkpoint[job[writing], sample_k[writing]]
        activity = np.where(writing, CHECKPOINT, activity).astype(np.int8)
    fade = np.ones(state.size, dtype=np.float32)
    draining = state == _DRAINING
    if draining.any():
        span = end[at[draining]] - start[at[draining]]
        fade[draining] = np.clip(1.0 - (sample_t[draining] - start[at[draining]]) / span, 0.0, 1.0)
    shape = (h1 - h0, n_t)
    return activity.reshape(shape), fade.reshape(shape), _REPORTS_IN_STATE[state].reshape(shape)


def _block(
    fleet: _Fleet,
    pre,
    key: int,
    h0: int,
    h1: int,
    t: np.ndarray,
    resolution: float,
    tdp: float,
    diurnal: np.ndarray,
    clocks: "_Clocks",
) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """The samples of hosts h0..h1 (their GPUs) at times `t`, as DCGM reports them: MEASURED_COLUMNS, each a (GPUs,
    samples) array, and which of them are reported (None: all; a GPU off the bus or a host down reports nothing)."""
    at = _Layout.of(fleet, h0, h1, t.size)
    g0, g1, shape = at.g0, at.g1, (at.n_gpus, at.n_t)
    activity, fade, host_reports = _host_grid(fleet, h0, h1, t, resolution)
    util, power, temp, mem = _levels(fleet, at, key, activity, fade, tdp, diurnal)
    extra_heat = precursors.heat(pre, g0, g1, t, shape)
    if extra_heat is not None:
        temp += extra_heat
    util, power, temp, mem = _as_dcgm_reads(util, power, temp, mem, tdp)
    clock_columns = clocks.apply(at, activity, t, power, temp)  # fail-slow GPUs held down

    reset = precursors.last_reset(pre, h0, h1, t, resolution)
    sbe, dbe = precursors.ecc_counters(pre, g0, g1, t, reset, at.local_host, fleet.sbe_rate_per_s[g0:g1])
    reports = np.broadcast_to(at.to_gpus(host_reports), at.grid).reshape(shape)
    gone = precursors.off_bus(pre, g0, g1, t, shape)
    if gone is not None:
        reports = reports & ~gone

    measured = {
        "temp_c": temp,
        "power_w": power,
        "util_pct": util,
        "mem_util_pct": mem,
        "ecc_sbe": sbe,
        "ecc_dbe": dbe,
        **clock_columns,
    }
    return measured, None if reports.all() else reports


@dataclass(frozen=True)
class _Clocks:
    """The GPUs fail-slow episodes hold down, and the model's boost clock."""

    throttles: Throttles
    max_clock: float

    def apply(
        self, at: "_Layout", activity: np.ndarray, t: np.ndarray, power: np.ndarray, temp: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Hold the block's throttled GPUs down (their power and heat, in place) and give the clock columns
        (CLOCK_COLUMNS), each (GPUs, samples)."""
        held = self.throttles.grid(at.g0, at.g1, t)
        idle = np.broadcast_to(at.to_gpus(activity == IDLE), at.grid).reshape(at.n_gpus, at.n_t)
        throttled_reads(power, temp, idle, held)
        clock, reasons = clock_readings(idle, held, self.max_clock)
        return {"sm_clock_mhz": clock, "clocks_event_reasons": reasons}


@dataclass(frozen=True)
class _Layout:
    """A block's GPUs g0..g1 (of hosts h0..), n_t samples each. What a host does sets its GPUs' levels: computed
    per (host, sample), then broadcast to the GPUs. Hosts of equal size (the usual case) broadcast as a (hosts,
    GPUs a host, samples) view without copying; otherwise the grid is (GPUs, samples)."""

    g0: int
    g1: int
    n_t: int
    local_host: np.ndarray  # per GPU: its host, counted from h0
    grid: tuple[int, ...]
    equal_hosts: bool

    @classmethod
    def of(cls, fleet: _Fleet, h0: int, h1: int, n_t: int) -> "_Layout":
        g0, g1 = int(fleet.host_first_gpu[h0]), int(fleet.host_first_gpu[h1])
        per_host = np.diff(fleet.host_first_gpu[h0 : h1 + 1])
        equal_hosts = bool((per_host == per_host[0]).all())
        grid = (h1 - h0, int(per_host[0]), n_t) if equal_hosts else (g1 - g0, n_t)
        return cls(g0, g1, n_t, fleet.gpu_host[g0:g1] - h0, grid, equal_hosts)

    @property
    def n_gpus(self) -> int:
        return self.g1 - self.g0

    def to_gpus(self, host_values: np.ndarray) -> np.ndarray:
        """(hosts, samples) values on the grid of GPUs."""
        return host_values[:, None, :] if self.equal_hosts else host_values[self.local_host]

    def per_gpu(self, values: np.ndarray) -> np.ndarray:
        """A fleet-wide per-GPU array: this block's part, on the grid (one sample)."""
        return values[self.g0 : self.g1].reshape(*self.grid[:-1], 1)


def _levels(
    fleet: _Fleet,
    at: _Layout,
    key: int,
    activity: np.ndarray,
    fade: np.ndarray,
    tdp: float,
    diurnal: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Utilisation, power, temperature and memory utilisation, (GPUs, samples) each, before rounding."""
    busy = np.where(activity == IDLE, np.float32(0.0), fade)  # 0 idle .. 1 at full load
    lanes = unit_noise(hash_noise(key, at.per_gpu(fleet.gpu_id), np.arange(at.n_t)))
    to_gpus = at.to_gpus

    util = to_gpus(UTIL_LEVEL[activity] * fade) + to_gpus(UTIL_SPREAD[activity] * fade) * lanes[0]
    # power: the level blends from idle to the activity's level as load fades; clocks dip at the day's hottest
    # hour (DVFS) by DIURNAL_POWER_SWING peak to trough; never above the power limit
    swing = 1.0 - np.float32(DIURNAL_POWER_SWING / 2) * diurnal[None, :] * (busy > 0)
    watts = np.float32(tdp) * (POWER_LEVEL[IDLE] + (POWER_LEVEL[activity] - POWER_LEVEL[IDLE]) * fade) * swing
    power = (
        to_gpus(watts) * at.per_gpu(fleet.power_factor) * (1.0 + to_gpus(POWER_SPREAD[activity]) * lanes[1])
    )
    degrees = (
        TEMP_LEVEL[IDLE]
        + (TEMP_LEVEL[activity] - TEMP_LEVEL[IDLE]) * fade
        + np.float32(DIURNAL_TEMP_SWING_C / 2) * diurnal[None, :]
    )
    offset_share = np.float32(IDLE_OFFSET_SCALE) + np.float32(1 - IDLE_OFFSET_SCALE) * busy
    temp = (
        to_gpus(degrees)
        + at.per_gpu(fleet.temp_offset) * to_gpus(offset_share)
        + np.float32(TEMP_SPREAD) * lanes[2]
    )
    mem = to_gpus(MEM_LEVEL[activity] * fade) + to_gpus(MEM_SPREAD[activity] * fade) * lanes[3]
    return tuple(x.reshape(at.n_gpus, at.n_t) for x in (util, power, temp, mem))


def _as_dcgm_reads(
    util: np.ndarray, power: np.ndarray, temp: np.ndarray, mem: np.ndarray, tdp: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Read as DCGM reports them: whole degrees and percents, tenths of a watt (also what keeps the store
    small); utilisations within 0..100, power never above the limit."""
    for whole in (util, mem, temp):
        np.rint(whole, out=whole)
    np.clip(util, 0, 100, out=util)
    np.clip(mem, 0, 100, out=mem)
    power = np.minimum(np.round(power, POWER_DECIMALS), np.float32(tdp))
    return util, power, temp, mem
