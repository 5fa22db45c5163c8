"""SM clocks and clocks-event (throttle) reasons of simulated GPUs, and what a throttled GPU reads.

DCGM reports the SM clock as field 100 (DCGM_FI_DEV_SM_CLOCK, MHz) and why clocks are held down as field 112,
DCGM_FI_DEV_CLOCKS_EVENT_REASONS (its older name DCGM_FI_DEV_CLOCK_THROTTLE_REASONS): a bitmask of the
DCGM_CLOCKS_EVENT_REASON_* values, a 1:1 map of NVML's clocks event reasons (dcgm_fields.h): REASON_BITS.

A simulated GPU runs at its model's boost clock while it works and at IDLE_SM_CLOCK_MHZ (bit gpu_idle) while it
idles. A fail-slow episode of a GPU cause (engine.sim.slow: gpu_thermal, gpu_power) on one GPU holds its clock
at 1/factor of that, with the reasons DCGM would set: sw_thermal or sw_power_cap, and, for a factor of 2 or
more ("HW Slowdown ... reducing the core clocks by a factor of 2 or more", dcgm_fields.h), hw_slowdown with
hw_thermal or hw_power_brake. Its power falls by the same factor (fewer cycles at the same voltage, Goodput's
first-order assumption) and a thermally throttled GPU reads at least THROTTLE_TEMP_C. Slow hosts and links leave
their GPUs' clocks alone: those GPUs wait, they are not held down.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

DCGM_FI_DEV_SM_CLOCK = 100
DCGM_FI_DEV_CLOCKS_EVENT_REASONS = 112  # also DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, its deprecated name
# DCGM_CLOCKS_EVENT_REASON_* (dcgm_fields.h; NVML nvmlClocksEventReason*), by their DCGM names in lower case
REASON_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal": 0x20,
    "hw_thermal": 0x40,
    "hw_power_brake": 0x80,
    "display_clocks": 0x100,
}
# Boost SM clocks (NVIDIA datasheets: H100 SXM5 1,980 MHz, A100 SXM4 1,410 MHz) by the start of cluster.gpu_model
MAX_SM_CLOCK_MHZ: dict[str, float] = {"H100": 1980.0, "A100": 1410.0}
IDLE_SM_CLOCK_MHZ = 345.0  # an idle H100's SM clock as nvidia-smi shows it (Goodput's assumption)
HW_SLOWDOWN_FACTOR = 2.0  # DCGM's hardware slowdowns cut clocks by a factor of 2 or more
THROTTLE_TEMP_C = 87.0  # a thermally throttled GPU sits at its limit (H100 SXM's max operating temperature)
_CAUSE_BITS = {  # (below HW_SLOWDOWN_FACTOR, at or above it)
    "gpu_thermal": (REASON_BITS["sw_thermal"], REASON_BITS["hw_thermal"] | REASON_BITS["hw_slowdown"]),
    "gpu_power": (REASON_BITS["sw_power_cap"], REASON_BITS["hw_power_brake"] | REASON_BITS["hw_slowdown"]),
}

# The clocks-event reasons that hold a GPU's clocks down for power or heat, in words, in DCGM's bit order. The
# other bits (idle, an applications-clocks setting, sync boost, display clocks) are not throttling.
THROTTLE_WORDS: dict[str, str] = {
    "sw_power_cap": "power cap",
    "hw_slowdown": "HW slowdown",
    "sw_thermal": "SW thermal slowdown",
    "hw_thermal": "HW thermal slowdown",
    "hw_power_brake": "HW power brake",
}
OTHER_WORDS: dict[str, str] = {
    "gpu_idle": "idle",
    "clocks_setting": "clocks setting",
    "sync_boost": "sync boost",
    "display_clocks": "display clocks",
}


def decode_reasons(mask: int) -> tuple[str, ...]:
    """The reasons set in a DCGM clocks-event bitmask, in bit order; bits DCGM does not define are left out."""
    return tuple(name for name, bit in REASON_BITS.items() if int(mask) & bit)


def reasons_of(cause: str, factor: float) -> int:
    """The bits a fail-slow episode of `cause` at `factor` sets (0 for a cause that does not hold clocks down)."""
    soft, hard = _CAUSE_BITS.get(cause, (0, 0))
    return soft | (hard if factor >= HW_SLOWDOWN_FACTOR else 0)


def max_sm_clock(gpu_model: str) -> float:
    """The model's boost SM clock (an H100's for a model Goodput does not know)."""
    return next((mhz for name, mhz in MAX_SM_CLOCK_MHZ.items() if gpu_model.upper().startswith(name)), 1980.0)


@dataclass(frozen=True)
class Throttles:
    """The GPU-cause episodes of a run, one row each, sorted by the fleet row of their GPU."""

    gpu_row: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    factor: np.ndarray
    reasons: np.ndarray
    thermal: np.ndarray  # bool: a thermal episode (the GPU reads hot)

    @classmethod
    def of(cls, episodes: Sequence[Any], gpus_per_host: int, gpu_row) -> "Throttles":
        """From engine.sim.records.SlowEpisode records; `gpu_row(gpu_ids)` is each GPU's fleet row (-1: not in
        the fleet); a GPU's id is host x gpus_per_host + its index, as engine.sim.simulate numbers them."""
        held = [e for e in episodes if e.cause in _CAUSE_BITS]
        ids = np.array([e.host * gpus_per_host + e.gpu_index for e in held], dtype=np.int64)
        rows = gpu_row(ids) if ids.size else ids
        order = np.argsort(rows, kind="stable")
        order = order[rows[order] >= 0]
        pick = [held[i] for i in order.tolist()]
        return cls(
            gpu_row=rows[order],
            start_s=np.array([e.start_s for e in pick], dtype=np.float64),
            end_s=np.array([e.end_s for e in pick], dtype=np.float64),
            factor=np.array([e.factor for e in pick], dtype=np.float32),
            reasons=np.array([reasons_of(e.cause, e.factor) for e in pick], dtype=np.int64),
            thermal=np.array([e.cause == "gpu_thermal" for e in pick], dtype=bool),
        )

    def grid(self, g0: int, g1: int, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(factor, reasons, thermal) over GPUs g0..g1 x samples t, None when none of them is held down. A loop
        over the block's episodes (a few a GPU-year), never over samples."""
        first, last = np.searchsorted(self.gpu_row, [g0, g1])
        if first == last:
            return None
        factor = np.ones((g1 - g0, t.size), dtype=np.float32)
        reasons = np.zeros((g1 - g0, t.size), dtype=np.int64)
        thermal = np.zeros((g1 - g0, t.size), dtype=bool)
        begins = np.searchsorted(t, self.start_s[first:last])
        ends = np.searchsorted(t, self.end_s[first:last])
        for k, (i0, i1) in enumerate(zip(begins.tolist(), ends.tolist(), strict=True)):
            row, e = int(self.gpu_row[first + k]) - g0, first + k
            np.maximum(factor[row, i0:i1], self.factor[e], out=factor[row, i0:i1])
            reasons[row, i0:i1] |= self.reasons[e]
            thermal[row, i0:i1] |= self.thermal[e]
        return factor, reasons, thermal


def clock_readings(idle: np.ndarray, held: tuple | None, max_clock: float) -> tuple[np.ndarray, np.ndarray]:
    """SM clock (MHz) and clocks-event reasons of each sample: `idle` says which GPUs idle; `held` is
    Throttles.grid's (factor, reasons, thermal) or None."""
    clock = np.where(idle, np.float32(IDLE_SM_CLOCK_MHZ), np.float32(max_clock))
    reasons = np.where(idle, np.int64(REASON_BITS["gpu_idle"]), np.int64(0))
    if held is not None:
        factor, bits, _thermal = held
        busy = ~idle
        clock = np.where(busy, clock / factor, clock)
        reasons = reasons | np.where(busy, bits, 0)
    return np.rint(clock).astype(np.float32), reasons


def throttled_reads(power: np.ndarray, temp: np.ndarray, idle: np.ndarray, held: tuple | None) -> None:
    """A held-down GPU's power falls by its factor and a thermally throttled one reads at least THROTTLE_TEMP_C
    (in place; nothing changes where no GPU is held down)."""
    if held is None:
        return
    factor, _bits, thermal = held
    busy = ~idle
    power /= np.where(busy, factor, np.float32(1.0))
    np.round(power, 1, out=power)
    np.maximum(temp, np.where(busy & thermal, np.float32(THROTTLE_TEMP_C), temp), out=temp)
