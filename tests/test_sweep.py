"""Sweeps, Monte-Carlo bands and the executors (engine.twin.sweep) and `goodput sweep`."""

import json
import math
from dataclasses import asdict

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.analysis.window_figures import window_figures
from engine.cli import main
from engine.errors import GoodputError
from engine.scenario import build
from engine.twin.simulate import simulate
from engine.twin.sweep import (
    METRICS,
    Axis,
    LocalExecutor,
    RayExecutor,
    Task,
    bands,
    chunks,
    grid,
    make_executor,
    monte_carlo,
    parse_vary,
    result_row,
    run_task,
    seeds_of,
    sweep,
)

# demo: a small cluster, ~0.1 s a summary-only run
DEMO = build("demo")
TINY_AXES = [
    parse_vary("training.checkpoint_interval=5m,30m"),
    parse_vary("training.restart_overhead=10m,1h"),
]


class NoRuns:
    """An executor that must never be reached (validation happens before anything runs)."""

    def run(self, tasks, progress=None):
        raise AssertionError(f"{len(tasks)} tasks ran")


# ----- parsing and the grid --------------------------------------------------------------------------------


def test_parse_vary_keeps_values_as_given():
    assert parse_vary("training.checkpoint_interval=5m, 30m,1h") == Axis(
        "training.checkpoint_interval", ("5m", "30m", "1h")
    )
    assert parse_vary("failures.scale=1").values == ("1",)


@pytest.mark.parametrize(
    "text, words",
    [
        ("training.checkpoint_interval", "expected KEY=V1,V2"),
        ("=5m", "expected KEY=V1,V2"),
        ("training.checkpoint_interval=5m,,10m", "empty value"),
        ("training.checkpoint_interval=5m,5m", "given twice"),
    ],
)
def test_parse_vary_rejects_malformed_text(text, words):
    with pytest.raises(GoodputError, match=words):
        parse_vary(text)


@given(st.lists(st.from_regex(r"[0-9]{1,4}(s|m|h|d)", fullmatch=True), min_size=1, max_size=6, unique=True))
@settings(max_examples=50, deadline=None)
def test_parse_vary_round_trips_any_list_of_values(values):
    axis = parse_vary("training.restart_overhead=" + ",".join(values))
    assert axis.key == "training.restart_overhead" and axis.values == tuple(values)


def test_grid_is_every_combination_first_axis_slowest_each_point_validated():
    points = grid(DEMO, TINY_AXES)
    assert [tuple(p.given.values()) for p in points] == [
        ("5m", "10m"),
        ("5m", "1h"),
        ("30m", "10m"),
        ("30m", "1h"),
    ]
    assert [p.index for p in points] == [0, 1, 2, 3]
    assert [p.scenario["training.checkpoint_interval"] for p in points] == [300, 300, 1800, 1800]
    assert [p.scenario["training.restart_overhead"] for p in points] == [600, 3600, 600, 3600]
    assert all(p.scenario["cluster.gpus"] == DEMO["cluster.gpus"] for p in points)  # the base stays


@pytest.mark.parametrize(
    "vary, words",
    [
        ("training.checkpoint_interval=5m,0s", "training.checkpoint_interval=0s: .*must be at least 1"),
        ("training.checkpoint_interval=5m,soon", "training.checkpoint_interval=soon"),
        ("training.checkpoint_intervl=5m", "did you mean 'training.checkpoint_interval'"),
        ("failures.scale=1,-2", "failures.scale=-2"),
    ],
)
def test_a_bad_value_is_one_clear_error_and_nothing_runs(vary, words):
    with pytest.raises(GoodputError, match=words):
        sweep(DEMO, [parse_vary(vary)], 2, executor=NoRuns())


def test_a_key_varied_twice_is_refused():
    with pytest.raises(GoodputError, match="varied twice"):
        grid(DEMO, [parse_vary("failures.scale=1,2"), parse_vary("failures.scale=3")])


def test_seeds_count_up_from_the_scenario_seed():
    assert seeds_of(DEMO, 3) == [DEMO["simulation.seed"] + k for k in range(3)]
    assert seeds_of(DEMO.with_overrides(["simulation.seed=100"]), 2) == [100, 101]
    with pytest.raises(GoodputError, match="--seeds: must be at least 1"):
        seeds_of(DEMO, 0)


@given(st.integers(0, 300), st.integers(1, 16))
def test_chunks_cover_the_tasks_in_order(n, workers):
    tasks = [Task(i, DEMO, i) for i in range(n)]
    parts = chunks(tasks, workers)
    assert [t for part in parts for t in part] == tasks
    assert all(parts) and len(parts) <= max(1, workers * 4)


# ----- running ---------------------------------------------------------------------------------------------


def test_one_point_one_seed_is_the_simulation_of_that_scenario():
    frame = sweep(DEMO, [parse_vary("training.checkpoint_interval=30m")], 1, executor=LocalExecutor(1))
    run = simulate(DEMO.with_overrides(["training.checkpoint_interval=30m"]), summary_only=True)
    expected = result_row(run.summary)
    row = frame.row(0, named=True)
    assert frame.height == 1 and row["training.checkpoint_interval"] == "30m"
    assert row["seed"] == DEMO["simulation.seed"] and row["point"] == 0
    assert {m: row[m] for m in METRICS} == expected
    job = run.summary["job"]
    assert row["interruptions"] == run.summary["interruptions"]["total"]
    assert math.isclose(row["lost_gpu_hours"], sum(job["losses_gpu_hours"].values()))


def test_sweep_rows_in_grid_then_seed_order_and_progress_reaches_one():
    seen = []
    frame = sweep(DEMO, TINY_AXES, 2, executor=LocalExecutor(1), progress=seen.append)
    assert frame.columns[:4] == ["training.checkpoint_interval", "training.restart_overhead", "point", "seed"]
    assert frame["point"].to_list() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert frame["seed"].to_list() == [7, 8] * 4
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) == 8
    # the same seed sees the same failures at every point: a longer restart only costs more restart time
    by_seed = frame.filter(pl.col("training.checkpoint_interval") == "5m").sort(
        "seed", "training.restart_overhead"
    )
    short, long_ = (
        by_seed.filter(pl.col("training.restart_overhead") == "10m"),
        by_seed.filter(pl.col("training.restart_overhead") == "1h"),
    )
    assert (long_["restart_gpu_hours"] > short["restart_gpu_hours"]).all()
    assert (long_["ettr"] < short["ettr"]).all()


def test_process_pool_gives_the_same_rows_as_one_process():
    one = sweep(DEMO, TINY_AXES[:1], 2, executor=LocalExecutor(1))
    pool = sweep(DEMO, TINY_AXES[:1], 2, executor=LocalExecutor(2))
    assert one.equals(pool)


def test_ray_in_local_mode_gives_the_same_rows_as_local_processes():
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray session is already running in this process")
    local = sweep(DEMO, TINY_AXES[:1], 2, executor=LocalExecutor(1))
    remote = sweep(DEMO, TINY_AXES[:1], 2, executor=RayExecutor(workers=1))
    assert local.equals(remote)
    assert not ray.is_initialized()  # the session the executor started is shut down


def test_make_executor_checks_its_flags():
    assert isinstance(make_executor("local", workers=2), LocalExecutor)
    assert make_executor("ray", address="auto") == RayExecutor("auto", None)
    with pytest.raises(GoodputError, match="--ray-address: only with --executor ray"):
        make_executor("local", address="auto")
    with pytest.raises(GoodputError, match="--workers: must be at least 1"):
        make_executor("local", workers=0)
    with pytest.raises(GoodputError, match="unknown executor"):
        make_executor("slurm")


# ----- Monte-Carlo and bands -------------------------------------------------------------------------------


def test_bands_are_mean_and_linear_5_95_percentiles_per_group():
    frame = pl.DataFrame(
        {
            "k": ["a"] * 11 + ["b"] * 2,
            "ettr": [float(i) for i in range(11)] + [1.0, 3.0],
            "mttf_hours": [None] * 10 + [4.0] + [None, None],
        },
        schema={"k": pl.String, "ettr": pl.Float64, "mttf_hours": pl.Float64},
    )
    table = bands(frame, by=["k"])
    a, b = table.row(0, named=True), table.row(1, named=True)
    assert table["k"].to_list() == ["a", "b"] and a["runs"] == 11 and b["runs"] == 2
    assert (
        a["ettr_mean"] == 5.0 and a["ettr_p5"] == pytest.approx(0.5) and a["ettr_p95"] == pytest.approx(9.5)
    )
    assert b["ettr_p5"] == pytest.approx(1.1) and b["ettr_p95"] == pytest.approx(2.9)
    assert a["mttf_hours_mean"] == 4.0 and b["mttf_hours_mean"] is None  # nulls left out, not zeros
    whole = bands(frame)
    assert whole.height == 1 and whole["runs"][0] == 13 and "interruptions_mean" not in whole.columns


def test_monte_carlo_one_row_a_seed_and_a_band_around_the_mean():
    frame = monte_carlo(DEMO, 6, executor=LocalExecutor(1))
    assert frame["seed"].to_list() == list(range(7, 13)) and "point" not in frame.columns
    assert set(METRICS) <= set(frame.columns)
    band = bands(frame).row(0, named=True)
    assert band["ettr_p5"] <= band["ettr_mean"] <= band["ettr_p95"]
    assert band["ettr_p5"] < band["ettr_p95"]  # six seeds of a rare-event process do not agree
    assert frame["closed_form_ettr"].n_unique() == 1  # the closed form has no luck in it
    # twice the failure rate costs ETTR on average over the same seeds (demo: ~0.97 -> ~0.90)
    worse = monte_carlo(DEMO.with_overrides(["failures.scale=2"]), 6, executor=LocalExecutor(1))
    assert worse["ettr"].mean() < frame["ettr"].mean() - 0.02
    assert worse["unexpected"].sum() > frame["unexpected"].sum()


# ----- the command -----------------------------------------------------------------------------------------


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sweep_json_has_one_object_per_point_and_seed_with_values_as_given(capsys):
    code, out, _ = _cli(
        capsys,
        "sweep",
        "--preset",
        "demo",
        "--vary",
        "training.checkpoint_interval=5m,30m",
        "--vary",
        "failures.scale=1,1.5",
        "--seeds",
        "2",
        "--workers",
        "1",
        "--json",
    )
    results = json.loads(out)["results"]
    assert code == 0 and len(results) == 8
    assert [(r["training.checkpoint_interval"], r["failures.scale"], r["seed"]) for r in results[:3]] == [
        ("5m", "1", 7),
        ("5m", "1", 8),
        ("5m", "1.5", 7),
    ]
    for r in results:
        assert {"seed", "ettr", "mttf_hours", "interruptions", "closed_form_ettr", "lost_gpu_hours"} <= set(r)
        assert r["interruptions"] == r["unexpected"] + r["planned"] and 0 < r["ettr"] <= 1


def test_sweep_text_is_a_table_of_means_and_bands(capsys):
    code, out, _ = _cli(
        capsys,
        "sweep",
        "--preset",
        "demo",
        "--vary",
        "training.restart_overhead=10m,1h",
        "--seeds",
        "2",
        "--workers",
        "1",
    )
    lines = out.splitlines()
    assert code == 0 and lines[0] == "2 grid points x 2 seeds: mean [5%, 95%]"
    assert lines[1].split()[:2] == ["training.restart_overhead", "ETTR"]
    assert lines[2].startswith("10m ") and lines[3].startswith("1h ") and len(lines) == 4
    assert all("[" in line and "]" in line for line in lines[2:])


def test_sweep_text_shows_ettr_with_network_where_a_placement_slows_the_job(capsys):
    code, out, _ = _cli(
        capsys,
        "sweep",
        "--preset",
        "demo",
        "--set",
        "training.placement=spread",
        "--vary",
        "network.gbps_per_gpu=25,200",
        "--seeds",
        "1",
        "--workers",
        "1",
    )
    lines = out.splitlines()
    assert code == 0 and lines[1].split()[:4] == ["network.gbps_per_gpu", "ETTR", "with", "network"]
    ettr = [float(line.split()[1]) for line in lines[2:]]
    with_network = [float(line.split()[4]) for line in lines[2:]]  # after ETTR's mean and its [p5, p95]
    assert ettr[0] == ettr[1] == with_network[0]  # the demand changes no failure; at 25 Gbps nothing slows
    # the demo's 48 job hosts dealt over its 4 pods, 12 a pod, every ring hop leaving its pod:
    # 12 x 8 x 200 Gbps out of a pod against its core share, 8 racks x 16 x 400 / 7 -> 2.625 times slower
    assert with_network[1] == pytest.approx(ettr[1] / (12 * 8 * 200 / (8 * 16 * 400 / 7)), abs=0.001)


def test_sweep_bad_value_exits_2_naming_key_and_value(capsys):
    code, out, err = _cli(
        capsys, "sweep", "--preset", "demo", "--vary", "training.checkpoint_interval=5m,-1m", "--seeds", "2"
    )
    assert code == 2 and out == ""
    assert err.startswith("goodput: error: --vary training.checkpoint_interval=-1m")
    code, _, err = _cli(capsys, "sweep", "--vary", "failures.scale=1", "--seeds", "0")
    assert code == 2 and "--seeds: must be at least 1" in err


def test_a_window_task_leaves_telemetry_out_and_measures_what_the_full_run_would():
    scenario = build("demo", sets=["simulation.days=3"])
    assert scenario.simulation.telemetry  # the demo draws telemetry: the task must not need it
    full = simulate(scenario.with_overrides(["simulation.seed=4"]))
    expected = asdict(window_figures(full.tables, 0.0, full.duration_s))
    got = run_task(Task(0, scenario, 4, measure="window"))
    assert got == {"point": 0, "seed": 4, **expected}
