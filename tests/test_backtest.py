"""The twin's published error (issue 23, 2): the figures a backtest compares, counted alike on both sides, the
fitted twin reproducing a window it learned, a misfit said plainly, and `goodput calibrate` on the command
line."""

import json
from dataclasses import replace

import polars as pl
import pytest

from engine.analysis.run_summary import RunSummary
from engine.analysis.window_figures import window_figures
from engine.cli import main
from engine.scenario import build, load
from engine.scenario.keys import KEY_BY_NAME
from engine.store import Store
from engine.twin.backtest import FIGURES, backtest
from engine.twin.calibrate import RUN_KEY, Estimate, calibrate
from engine.twin.simulate import simulate
from engine.twin.sweep import LocalExecutor

TRUTH = ["simulation.days=20", "simulation.telemetry=false", "failures.rate_per_1000_node_days=60"]
HOUR = 3600.0


def _tables() -> dict[str, pl.DataFrame]:
    """A 10-hour run by hand: a 16-GPU job (the largest) and a 8-GPU one; two incidents hit the large job."""
    return {
        "jobs": pl.DataFrame(
            {
                "job_id": ["small", "big"],
                "gpus": [8.0, 16.0],
                "start_s": [0.0, 1 * HOUR],
                "end_s": [2 * HOUR, None],
            }
        ),
        "job_attempts": pl.DataFrame(
            {
                "job_id": ["big", "big", "small"],
                "attempt": [1, 2, 1],
                "start_s": [1 * HOUR, 5 * HOUR, 0.0],
                "end_s": [4 * HOUR, 10 * HOUR, 2 * HOUR],
                "end_reason": ["faulty_gpu", "end_of_run", "completed"],
                "lost_work_s": [0.5 * HOUR, 0.0, 0.0],
            }
        ),
        "checkpoints": pl.DataFrame(
            {
                "job_id": ["big", "big"],
                "start_s": [2 * HOUR, 6 * HOUR],
                "end_s": [2 * HOUR + 36, 6 * HOUR + 36],
            }
        ),
        "incidents": pl.DataFrame(
            {
                "t_s": [4 * HOUR, 7 * HOUR, 8 * HOUR],
                "cause": ["faulty_gpu", "planned_maintenance", "nic"],
                "planned": [False, True, False],
                "job_ids": [["big"], ["big"], []],
            }
        ),
        "host_states": pl.DataFrame(
            {
                "host_id": [0, 1],
                "state": ["repair", "running"],
                "start_s": [4 * HOUR, 0.0],
                "end_s": [6 * HOUR, 10 * HOUR],
            }
        ),
    }


def test_window_figures_of_a_small_run_by_hand():
    f = window_figures(_tables(), 0.0, 10 * HOUR)
    assert f.largest_job == "big" and f.largest_job_gpus == 16 and f.checkpointed
    assert f.interruptions == 2  # the GPU failure and the planned stop hit it; the NIC failure hit nothing
    assert f.incidents == 2 and f.incidents_by_cause == {"faulty_gpu": 1, "nic": 1}
    # wall 9 h (1 h to 10 h); kept: 3 h - 0.5 h lost + 5 h, less two 36 s checkpoint writes
    kept = 7.5 * HOUR - 72
    assert f.ettr == pytest.approx(kept / (9 * HOUR))
    assert f.gpu_hours_lost == pytest.approx((9 * HOUR - kept) * 16 / HOUR)
    assert f.hosts_in_repair_mean == pytest.approx(2 / 10)
    assert f.hosts_in_repair_by_day == pytest.approx([2 / 10])


def test_window_figures_of_part_of_the_run():
    f = window_figures(_tables(), 5 * HOUR, 10 * HOUR)
    assert f.interruptions == 1 and f.incidents == 1 and f.incidents_by_cause == {"nic": 1}
    assert f.ettr == pytest.approx((5 * HOUR - 36) / (5 * HOUR))
    assert f.hosts_in_repair_mean == pytest.approx(1 / 5)


def test_without_checkpoints_the_figures_are_bounds_and_empty_tables_are_no_job():
    tables = _tables()
    tables["checkpoints"] = tables["checkpoints"].head(0)
    assert not window_figures(tables, 0.0, 10 * HOUR).checkpointed
    empty = window_figures({}, 0.0, 10 * HOUR)
    # no job: no interruptions, lost GPU-hours or ETTR (a fault history), not zeros
    assert (empty.interruptions, empty.incidents, empty.gpu_hours_lost, empty.ettr, empty.largest_job) == (
        None,
        0,
        None,
        None,
        None,
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_over_a_whole_simulated_run_the_window_figures_are_its_summary(seed):
    run = simulate(build("demo", sets=[*TRUTH, f"simulation.seed={seed}"]))
    summary = RunSummary.from_json(run.summary)
    f = window_figures(run.tables, 0.0, run.duration_s)
    assert f.interruptions == summary.interruptions.total
    assert f.incidents == run.tables["incidents"].filter(~pl.col("planned")).height
    assert f.ettr == pytest.approx(summary.job.ettr, abs=1e-6)
    assert f.gpu_hours_lost == pytest.approx(summary.job.lost_gpu_hours, rel=1e-4)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("backtest") / "store")
    runs = []
    for seed in range(4):
        run_id = store.write_run(simulate(build("demo", sets=[*TRUTH, f"simulation.seed={seed}"])))
        runs.append((run_id, calibrate(store, run_id)))
    return store, runs


def test_the_fitted_twin_reproduces_the_window_it_learned(fitted):
    """Round trip on runs of a known truth: each observed figure falls inside the 10-seed band in at least 3
    of 4 runs (a 5-95 % band of 10 runs holds a new draw about 80 % of the time; the fit adds its own error)."""
    store, runs = fitted
    tests = [backtest(store, fit, 10, executor=LocalExecutor(1)) for _, fit in runs]
    for name in FIGURES:
        inside = [t.figures[name].inside for t in tests]
        assert sum(inside) >= 3, (name, [t.figures[name] for t in tests])
    document = tests[0].to_json()
    assert {"interruptions", "incidents", "gpu_hours_lost", "ettr"} <= set(document)
    assert set(document["ettr"]) >= {"observed", "low", "median", "high", "inside"}
    days = document["hosts_in_repair_by_day"]
    assert len(days["observed"]) == len(days["low"]) == 20


def test_a_twin_that_misses_the_cluster_says_so(fitted):
    store, runs = fitted
    _, fit = runs[0]
    wrong = replace(
        fit, keys=fit.keys | {RUN_KEY: Estimate(6.0, 5.0, 7.0, 10, "test")}
    )  # a tenth of the truth
    test = backtest(store, wrong, 6, executor=LocalExecutor(1))
    assert test.figures["incidents"].inside is False
    assert "incidents" in test.outside() and "interruptions" in test.outside()


def test_a_band_needs_two_runs(fitted):
    store, runs = fitted
    with pytest.raises(Exception, match="at least 2"):
        backtest(store, runs[0][1], 1)


def test_calibrate_on_the_command_line(fitted, tmp_path, capsys):
    store, runs = fitted
    run_id = runs[0][0]
    out = tmp_path / "fit.toml"
    flags = ["--run", run_id, "--store", str(store.root)]
    assert main(["calibrate", *flags, "--backtest", "--seeds", "3", "--output", str(out), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) >= {"run_id", "window", "exposure_host_days", "keys", "warnings", "backtest"}
    assert set(document["window"]) == {"start", "end", "days"}
    assert RUN_KEY in document["keys"] and set(document["keys"]) <= set(KEY_BY_NAME)  # scenario keys only
    assert {"interruptions", "incidents", "gpu_hours_lost", "ettr"} <= set(document["backtest"])
    scenario = load(out, sets=["simulation.days=1"])
    assert scenario.failures.rate_per_1000_node_days == pytest.approx(document["keys"][RUN_KEY]["value"])

    assert main(["calibrate", *flags]) == 0
    text = capsys.readouterr().out
    assert f"Run {run_id}" in text and RUN_KEY in text and "90 % INTERVAL" in text
    assert main(["calibrate", *flags, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backtest"] is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--run", "sim-nope"], "no run"),
        (["--since", "40d"], "not inside the run"),
        (["--seeds", "3"], "--seeds: only with --backtest"),
        (["--backtest", "--seeds", "1"], "at least 2"),
        (["--since", "someday"], "--since"),
    ],
)
def test_calibrate_refuses_bad_input_in_one_line(fitted, tmp_path, capsys, extra, message):
    store, runs = fitted
    out = tmp_path / "never.toml"
    args = ["calibrate", "--run", runs[0][0], "--store", str(store.root), "--output", str(out), *extra]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("goodput: error:") and message in err and "\n" not in err
    assert not out.exists()


def test_a_forecast_of_the_fitted_cluster_and_what_ifs_from_its_scenario_file(fitted, tmp_path, capsys):
    """The fitted scenario forecasts the next days with bands, and the planning commands take its file."""
    store, runs = fitted
    out = tmp_path / "fit.toml"
    flags = ["--run", runs[0][0], "--store", str(store.root)]
    assert main(["calibrate", *flags, "--forecast", "7", "--seeds", "3", "--output", str(out), "--json"]) == 0
    ahead = json.loads(capsys.readouterr().out)["forecast"]
    assert ahead["days"] == 7 and ahead["seeds"] == 3
    for name in ("ettr", "interruptions", "lost_gpu_hours"):
        assert ahead[name]["low"] <= ahead[name]["mean"] <= ahead[name]["high"], name
    sweep = ["sweep", "--scenario", str(out), "--set", "simulation.days=3", "--vary", "spares.hosts=0,4"]
    assert main([*sweep, "--seeds", "2", "--workers", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows["results"]) == 4
    assert main(["calibrate", *flags, "--forecast", "0"]) == 2
    assert "--forecast" in capsys.readouterr().err
    # with the work left, the forecast says when training finishes
    assert main(["calibrate", *flags, "--forecast", "10", "--work", "3", "--seeds", "2", "--json"]) == 0
    ahead = json.loads(capsys.readouterr().out)["forecast"]
    assert ahead["work_days"] == 3 and ahead["finished"] == 2
    assert 3 < ahead["time_to_train_days"]["low"] <= ahead["time_to_train_days"]["high"] < 10
    assert main(["calibrate", *flags, "--work", "3"]) == 2
    assert "--work: only with --forecast" in capsys.readouterr().err
