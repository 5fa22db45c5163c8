"""The slow_episodes table a simulated run writes (engine.sim.tables.slow_episodes_frame): one row per fail-slow
episode the summary counts, its GPU for a GPU cause, what the policy did; empty where slowness is off."""

import math

import polars as pl

from engine.scenario import build
from engine.sim.slow import GPU_CAUSES, SLOW_CAUSES
from engine.store.schema import polars_schema
from engine.twin.simulate import simulate

QUIET = ["simulation.telemetry=false", "failures.rate_per_1000_node_days=0", "failures.planned_per_day=0"]


def test_a_run_with_fail_slow_lists_its_episodes():
    sets = [
        *QUIET,
        *(f"slow.{cause}_rate=40" for cause in SLOW_CAUSES),
        "slow.policy=swap",
        "slow.detect_after=10m",
    ]
    scenario = build("demo", sets=sets)
    run = simulate(scenario)
    episodes = run.tables["slow_episodes"]
    assert episodes.schema == pl.Schema(polars_schema("slow_episodes"))
    assert episodes.height == run.summary["cluster"]["slow_episodes"] > 0
    assert set(episodes["cause"]) <= set(SLOW_CAUSES)
    gpu = episodes.filter(pl.col("cause").is_in(GPU_CAUSES))
    other = episodes.filter(~pl.col("cause").is_in(GPU_CAUSES))
    assert gpu.height and other.height
    per_host = scenario.cluster.gpus_per_host
    assert (gpu["gpu_id"] // per_host == gpu["host_id"]).all()  # a GPU of the episode's host
    assert other["gpu_id"].null_count() == other.height  # a slow host or link holds no one GPU down
    assert (episodes["end_s"] >= episodes["start_s"]).all()
    assert episodes["end_s"].max() <= run.duration_s and episodes["start_s"].max() < run.duration_s
    assert set(episodes["action"]) <= {"none", "swap", "drain"}
    swapped = episodes.filter(pl.col("action") == "swap")
    assert swapped.height and swapped["detected_s"].null_count() == 0
    assert (swapped["detected_s"] - swapped["start_s"]).min() >= 600.0 - 1e-6  # detected 10 min into it
    assert swapped["left_s"].null_count() == 0
    assert not any(isinstance(x, float) and math.isnan(x) for x in episodes["detected_s"].to_list())


def test_a_run_without_slowness_has_an_empty_table():
    episodes = simulate(build("demo", sets=QUIET)).tables["slow_episodes"]
    assert episodes.is_empty() and episodes.schema == pl.Schema(polars_schema("slow_episodes"))
