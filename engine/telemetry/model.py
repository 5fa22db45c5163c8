"""What a GPU reads while it does each kind of work: the levels, spreads and noise behind `gpu_samples`.

The figures are for a training fleet like Meta's Llama 3 cluster (H100 SXM at a 700 W power limit; reference
README §1) and are scaled to `cluster.gpu_tdp_w` so an A100 cluster (400 W) reads sensibly too. Only the diurnal
swing comes from a paper; the rest are engineering assumptions stated where they are made, chosen so the
invariants the tests check hold strictly (bounded noise, never above the power limit).

Noise is a pure function of (key, gpu_id, sample index), a counter-based hash in the style of SplitMix64, not a
stream drawn in order: a sample's value then never depends on how the samples are chunked or ordered, so the
generator can hand out a few hundred hosts at a time and still give the same table for the same seed. The key
itself is drawn from the run's generator.
"""

import math
from datetime import datetime

import numpy as np

from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE

# ----- activities: what a sample's GPU is doing -----------------------------------------------------------
IDLE, RUNNING, CHECKPOINT, BURN_IN = 0, 1, 2, 3

# Levels per activity, indexed by the codes above.
# util_pct: training keeps an H100 busy 95-100% of the time (a synchronous job never lets an SM idle for long);
# a blocked checkpoint write leaves it mostly waiting on storage; burn-in stress tests pin it at 100%.
UTIL_LEVEL = np.array([0.0, 97.5, 15.0, 100.0], dtype=np.float32)
UTIL_SPREAD = np.array([0.0, 2.5, 10.0, 0.0], dtype=np.float32)  # +- around the level, uniform
# power as a share of the power limit: an idle H100 reads ~75 W of 700 W (assumption: typical nvidia-smi idle
# figure, 60-90 W); dense training draws near but below the limit; a stress test draws close to it.
POWER_LEVEL = np.array([75 / 700, 0.88, 0.35, 0.96], dtype=np.float32)
POWER_SPREAD = np.array([0.05, 0.01, 0.05, 0.005], dtype=np.float32)  # relative, uniform
POWER_GPU_SPREAD = 0.02  # persistent per-GPU spread of power (silicon lottery), relative
# temperature in C: idle ~30-40, training ~65-80, stress a little hotter. A checkpoint write lasts seconds, too
# short for the heat sink to cool, so it reads close to training.
TEMP_LEVEL = np.array([34.0, 72.0, 69.0, 80.0], dtype=np.float32)
TEMP_SPREAD = 1.0  # C, uniform sensor and load jitter
TEMP_GPU_SPREAD = 4.0  # C, persistent per-GPU offset: airflow and position in the chassis
HOT_GPU_SHARE, HOT_GPU_EXTRA_C = (
    0.02,
    6.0,
)  # a few GPUs run clearly hotter (poor thermal paste, blocked airflow)
IDLE_OFFSET_SCALE = 0.5  # an idle GPU shows half its offset: less heat to move
# memory bandwidth utilisation (DCGM_FI_DEV_MEM_COPY_UTIL) in %: training streams weights and activations,
# a checkpoint copies device memory to the host, a burn-in runs memory tests.
MEM_LEVEL = np.array([0.0, 45.0, 30.0, 90.0], dtype=np.float32)
MEM_SPREAD = np.array([0.0, 8.0, 10.0, 5.0], dtype=np.float32)

# Sensor resolution: DCGM_FI_DEV_GPU_TEMP, _GPU_UTIL and _MEM_COPY_UTIL are whole numbers; POWER_USAGE has
# milliwatt digits, but an on-board power sensor is good to a few watts, so tenths of a watt keep all that means
# anything (and compress far better in the store than noise digits).
POWER_DECIMALS = 1

# ----- the day: Llama 3 paper, 1-2% throughput swing over the day from mid-day heat and DVFS (ref README §1) ---
DIURNAL_POWER_SWING = 0.015  # peak to trough, share of the level: inside the paper's 1-2%
DIURNAL_TEMP_SWING_C = 3.0  # peak to trough of the air the fans pull in (assumption)
DIURNAL_PEAK_HOUR = 15.0  # hottest hour of the local day: clocks (and so power) dip, temperatures peak


def first_sample_at_or_after(t_s: np.ndarray, resolution_s: float, n_samples: int) -> np.ndarray:
    """Index of the first sample k (at k * resolution) with k * resolution >= t_s, clipped to [0, n_samples].

    Exact in floating point: the division's rounding is corrected against the products the grid itself uses,
    so an interval starting a hair after a sample never claims it.
    """
    k = np.ceil(np.asarray(t_s, dtype=np.float64) / resolution_s)
    k += k * resolution_s < t_s
    k -= (k - 1) * resolution_s >= t_s
    return np.clip(k, 0, n_samples).astype(np.int64)


def hour_of_day(start: datetime, t_s: np.ndarray) -> np.ndarray:
    """Local hour of day (0-24) at each `t_s`, the site's clock being the one `simulation.start` is written in."""
    seconds = start.second + start.microsecond / 1e6
    start_hour = start.hour + start.minute / SECONDS_PER_MINUTE + seconds / SECONDS_PER_HOUR
    return np.mod(start_hour + t_s / SECONDS_PER_HOUR, 24.0)


def diurnal_cosine(start: datetime, t_s: np.ndarray) -> np.ndarray:
    """cos of the day's phase: +1 at the hottest hour, -1 twelve hours later."""
    return np.cos((hour_of_day(start, t_s) - DIURNAL_PEAK_HOUR) * (2 * math.pi / 24)).astype(np.float32)


# ----- precursors ---------------------------------------------------------------------------------------
# HBM failures announce themselves: correctable (single-bit) errors climb over days before an uncorrectable one
# (Meta tracks repeat offenders against thresholds, reference README §2). The count reached at the failure is
# drawn per incident; the ramp is cubic, so most of it lands in the last day.
SBE_RAMP_S = 3 * SECONDS_PER_DAY
SBE_AT_FAILURE = (200, 2000)
# A failing thermal interface heats its GPU over hours before the thermal fault, and stays hot until repaired.
HEAT_TAU_S = 2 * SECONDS_PER_HOUR
HEAT_WINDOW_S = 12 * SECONDS_PER_HOUR
HEAT_EXTRA_C = 12.0
# A few GPUs see a trickle of correctable errors all the time (assumption: 2% of GPUs, 0.5-20 a day).
SBE_PRONE_SHARE = 0.02
SBE_PRONE_RATE_PER_DAY = (0.5, 20.0)


# ----- counter-based noise --------------------------------------------------------------------------------
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def hash_noise(key: int, gpu_ids: np.ndarray, sample_index: np.ndarray) -> np.ndarray:
    """SplitMix64 of (key, gpu, sample) broadcast over the inputs: 64 well-mixed bits per sample (uint64)."""
    with np.errstate(over="ignore"):
        z = (gpu_ids.astype(np.uint64) << np.uint64(32)) | sample_index.astype(np.uint64)
        z ^= np.uint64(key)
        z += _GOLDEN
        z ^= z >> np.uint64(30)
        z *= _MIX1
        z ^= z >> np.uint64(27)
        z *= _MIX2
        z ^= z >> np.uint64(31)
    return z


def unit_noise(bits: np.ndarray) -> np.ndarray:
    """Four independent uniform [-1, 1) draws packed in each 64-bit hash (16 bits each): float32, lanes first.

    The 16-bit fields are read through a little-endian view, so the split costs no shifts or masks.
    """
    fields = bits.astype("<u8", copy=False).view("<u2").reshape(*bits.shape, 4)
    return np.moveaxis(fields, -1, 0) * np.float32(2.0 / 65536.0) - np.float32(1.0)
