"""Time to train (issue 23, 3): with training.work set, a run ends when the flagship job has done its work, so
its length and ETTR answer every knob that changes how long training takes; without it nothing changes."""

import polars as pl
import pytest

from engine.analysis.run_summary import RunSummary
from engine.scenario import build
from engine.twin.forecast import forecast
from engine.twin.simulate import simulate
from engine.twin.sweep import LocalExecutor
from engine.units import SECONDS_PER_DAY

QUIET = ["simulation.telemetry=false", "failures.scale=0", "failures.planned_per_day=0"]
AIRESIM_WALL_CLOCK_DAYS = (
    9866 / 24
)  # AIReSim's mean wall clock for its 256-day job (docs/SIMULATION_REPORT.md)


def _summary(preset: str, sets: list[str]) -> RunSummary:
    return RunSummary.from_json(simulate(build(preset, sets=sets), summary_only=True).summary)


def test_without_failures_the_time_to_train_is_the_work_and_its_checkpoint_writes():
    """One day of work, a checkpoint every 20 min that blocks 30 s: 71 writes come before the last minute of
    work (the 72nd would follow it), so training takes exactly 1 day + 71 x 30 s."""
    sets = [*QUIET, "training.work=1d", "training.checkpoint_interval=20m", "training.checkpoint_write=30s"]
    summary = _summary("demo", sets)
    assert summary.job.time_to_train_days * SECONDS_PER_DAY == pytest.approx(86400 + 71 * 30, abs=1e-6)
    assert summary.days == summary.job.time_to_train_days  # the run ended then
    assert summary.job.productive_hours == pytest.approx(24.0, abs=1e-9)
    assert summary.job.attempts == 1


@pytest.mark.parametrize("strategy", ["restart", "in_memory_checkpoint", "replica_drop", "hot_spare"])
def test_every_strategy_trains_exactly_its_work_and_its_ettr_is_work_over_time(strategy):
    sets = [
        "simulation.telemetry=false",
        f"training.recovery={strategy}",
        "training.work=20d",
        "simulation.days=60",
    ]
    summary = _summary("llama3-405b", sets)
    job = summary.job
    assert job.productive_hours == pytest.approx(20 * 24, rel=1e-9)
    assert 20 < job.time_to_train_days < 30
    assert job.ettr == pytest.approx(20 / job.time_to_train_days, rel=1e-9)


def test_work_not_done_by_the_horizon_runs_to_the_horizon():
    summary = _summary("demo", ["simulation.telemetry=false", "training.work=30d", "simulation.days=10"])
    assert summary.job.time_to_train_days is None and summary.days == 10


def test_a_run_without_work_keeps_its_summary_as_it_was():
    summary = simulate(build("demo", sets=["simulation.telemetry=false"]), summary_only=True).summary
    assert "time_to_train_days" not in summary["job"]


def test_airesims_job_run_to_completion_takes_airesims_wall_clock():
    """AIReSim runs its 256-day job to completion: 9,866 h (411 days) on average. Goodput's airesim-table1 with
    the work set instead of the fixed horizon ends within 2 % of it, at ETTR 256 / days."""
    summary = _summary("airesim-table1", ["simulation.seed=0", "training.work=256d", "simulation.days=550"])
    assert summary.job.time_to_train_days == pytest.approx(AIRESIM_WALL_CLOCK_DAYS, rel=0.02)
    assert summary.job.ettr == pytest.approx(0.623, abs=0.02)


def test_a_forecast_says_when_training_finishes():
    ahead = forecast(build("llama3-405b"), 120, 3, work_days=60, executor=LocalExecutor(1))
    assert ahead.finished == 3
    band = ahead.figures["time_to_train_days"]
    assert 60 < band.low <= band.mean <= band.high < 75
    plain = forecast(build("llama3-405b"), 10, 2, executor=LocalExecutor(1))
    assert plain.finished == 0 and plain.figures["time_to_train_days"].mean is None


def test_a_telemetry_run_that_ends_early_has_no_sample_after_its_end():
    run = simulate(build("demo", sets=["training.work=2d", "simulation.days=10", "failures.scale=0"]))
    assert run.duration_s < 3 * SECONDS_PER_DAY
    samples = pl.concat(list(run.tables["gpu_samples"]))  # the samples come in blocks
    assert 0 < samples["t_s"].max() < run.duration_s
    assert run.tables["host_states"]["end_s"].max() == pytest.approx(run.duration_s)
