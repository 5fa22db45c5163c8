"""SM clocks and clocks-event (throttle) reasons of simulated GPUs (engine.telemetry.clocks): DCGM's documented
bits, the clocks and reasons of held-down GPUs on a tiny grid, and what a thermally throttled GPU reads in a
simulated run."""

import numpy as np
import polars as pl
import pytest

from engine.fabric.topology import FLAGSHIP, build_topology
from engine.scenario import build
from engine.sim import simulate as simulate_module
from engine.sim.records import SlowEpisode
from engine.sim.streams import Stream, generator
from engine.telemetry.clocks import (
    DCGM_FI_DEV_CLOCKS_EVENT_REASONS,
    REASON_BITS,
    Throttles,
    clock_readings,
    decode_reasons,
    max_sm_clock,
    reasons_of,
)
from engine.twin.simulate import simulate

# dcgm_fields.h: DCGM_CLOCKS_EVENT_REASON_* (a 1:1 map of NVML's clocks event reasons)
DCGM_DOCUMENTED = {
    "GPU_IDLE": 0x0000000000000001,
    "CLOCKS_SETTING": 0x0000000000000002,
    "SW_POWER_CAP": 0x0000000000000004,
    "HW_SLOWDOWN": 0x0000000000000008,
    "SYNC_BOOST": 0x0000000000000010,
    "SW_THERMAL": 0x0000000000000020,
    "HW_THERMAL": 0x0000000000000040,
    "HW_POWER_BRAKE": 0x0000000000000080,
    "DISPLAY_CLOCKS": 0x0000000000000100,
}


def test_the_bits_are_dcgms():
    assert DCGM_FI_DEV_CLOCKS_EVENT_REASONS == 112
    assert {name.upper(): bit for name, bit in REASON_BITS.items()} == DCGM_DOCUMENTED


def test_decoding_a_bitmask():
    assert decode_reasons(0) == ()
    assert decode_reasons(0x1) == ("gpu_idle",)
    assert decode_reasons(0x80 | 0x8 | 0x4) == ("sw_power_cap", "hw_slowdown", "hw_power_brake")
    assert decode_reasons(0x20 | 0x40) == ("sw_thermal", "hw_thermal")
    assert decode_reasons(0x1000 | 0x20) == ("sw_thermal",)  # a bit DCGM does not define is left out


def test_each_cause_sets_the_bits_dcgm_would():
    assert reasons_of("gpu_thermal", 1.3) == REASON_BITS["sw_thermal"]
    assert decode_reasons(reasons_of("gpu_thermal", 2.0)) == ("hw_slowdown", "sw_thermal", "hw_thermal")
    assert reasons_of("gpu_power", 1.2) == REASON_BITS["sw_power_cap"]
    assert decode_reasons(reasons_of("gpu_power", 3.0)) == ("sw_power_cap", "hw_slowdown", "hw_power_brake")
    assert reasons_of("host", 2.0) == reasons_of("network", 2.0) == 0  # slow hosts and links: GPUs just wait


def test_clocks_of_a_held_down_gpu_on_a_tiny_grid():
    t = np.arange(6, dtype=np.float64)
    episodes = [
        SlowEpisode(0, 2.0, 4.0, "gpu_thermal", 2.0, 1),
        SlowEpisode(0, 3.0, 9.0, "gpu_power", 1.25, 1),
    ]
    throttles = Throttles.of(episodes, 8, lambda ids: ids)  # GPU id = fleet row
    assert throttles.grid(2, 8, t) is None  # no episode on GPUs 2..7
    held = throttles.grid(0, 2, t)
    idle = np.zeros((2, 6), dtype=bool)
    idle[0, 5] = True
    clock, reasons = clock_readings(idle, held, max_sm_clock("H100-SXM5-80GB"))
    assert clock[0].tolist() == [1980.0] * 5 + [345.0]
    assert clock[1].tolist() == [1980.0, 1980.0, 990.0, 990.0, 1584.0, 1584.0]  # the slowest episode sets it
    assert reasons[0].tolist() == [0] * 5 + [REASON_BITS["gpu_idle"]]
    both = reasons_of("gpu_thermal", 2.0) | reasons_of("gpu_power", 1.25)
    assert reasons[1].tolist() == [0, 0, reasons_of("gpu_thermal", 2.0), both, 0x4, 0x4]
    assert max_sm_clock("A100-SXM4-80GB") == 1410.0


def test_a_thermally_throttled_gpu_reads_hot_and_draws_less(monkeypatch):
    sets = [
        "simulation.days=1",
        "simulation.telemetry_resolution=15m",
        "failures.rate_per_1000_node_days=0",
        "failures.planned_per_day=0",
        "slow.gpu_thermal_rate=1",
    ]
    scenario = build("demo", sets=sets)
    host = int(
        build_topology(scenario, generator(scenario.simulation.seed, Stream.TOPOLOGY)).hosts_with(FLAGSHIP)[0]
    )
    episode = SlowEpisode(host, 20_000.0, 40_000.0, "gpu_thermal", 1.3, 3)
    monkeypatch.setattr(simulate_module, "draw_episodes", lambda scenario, n_hosts: [episode])
    samples = pl.concat(list(simulate(scenario).tables["gpu_samples"]))
    gpu = host * scenario.cluster.gpus_per_host + 3
    mine = samples.filter(pl.col("gpu_id") == gpu)
    during = mine.filter(pl.col("t_s").is_between(20_000.0, 40_000.0, closed="left"))
    before = mine.filter(pl.col("t_s") < 20_000.0)
    assert during.height > 0 and (during["temp_c"] >= 87.0).all()
    assert during["power_w"].mean() == pytest.approx(before["power_w"].mean() / 1.3, rel=0.03)
    neighbour = samples.filter(
        pl.col("gpu_id") == gpu + 1, pl.col("t_s").is_between(20_000.0, 40_000.0, closed="left")
    )
    assert (neighbour["temp_c"] < 87.0).all()  # the episode holds one GPU down


def test_simulated_samples_carry_the_clock_and_its_reasons(monkeypatch):
    sets = ["simulation.days=1", "simulation.telemetry_resolution=1h", "slow.gpu_power_rate=1"]
    scenario = build("demo", sets=sets)
    host = int(
        build_topology(scenario, generator(scenario.simulation.seed, Stream.TOPOLOGY)).hosts_with(FLAGSHIP)[0]
    )
    episode = SlowEpisode(host, 0.0, 86_400.0, "gpu_power", 2.5, 0)
    monkeypatch.setattr(simulate_module, "draw_episodes", lambda scenario, n_hosts: [episode])
    run = simulate(scenario)
    samples = pl.concat(list(run.tables["gpu_samples"]))
    gpu = host * scenario.cluster.gpus_per_host
    assert run.tables["slow_episodes"].select("gpu_id", "cause").rows() == [(gpu, "gpu_power")]
    mine = samples.filter(pl.col("gpu_id") == gpu, pl.col("util_pct") > 50)
    assert mine.height > 0 and (mine["sm_clock_mhz"] == 792.0).all()  # 1,980 MHz / 2.5
    assert set(mine["clocks_event_reasons"].to_list()) == {reasons_of("gpu_power", 2.5)}
    others = samples.filter(pl.col("gpu_id") != gpu)
    assert set(others["sm_clock_mhz"].unique().to_list()) <= {1980.0, 345.0}
    idle = others.filter(pl.col("sm_clock_mhz") == 345.0)
    assert set(idle["clocks_event_reasons"].to_list()) <= {REASON_BITS["gpu_idle"]}
    assert samples["power_violation_ns"].null_count() == samples.height  # counters come from scrapes only
