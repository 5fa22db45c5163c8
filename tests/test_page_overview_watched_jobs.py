"""The Overview of a watched cluster lists the jobs that lost the most, each with the goodput the run's summary
totals (engine.ingest.watch.job_goodput, definition observed_job_goodput) and whether it is measured from the
job's checkpoints or an upper bound. The run is written here from the exact small case of test_watch_goodput."""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.format import fmt_gpu_hours
from engine.analysis.definitions import definition
from engine.ingest.watch import jobs_goodput
from engine.store import Store
from engine.store.run import Run
from tests.test_watch_goodput import ATTEMPTS, CHECKPOINTS, JOBS

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
NOW_S = 100.0


@pytest.fixture
def watched(store_dir):
    total = jobs_goodput(JOBS, ATTEMPTS, NOW_S, CHECKPOINTS)
    jobs = JOBS.with_columns(name=pl.format("**train-{}**", "job_id"))
    run = Run(
        kind="ingest",
        name="watched",
        started_at=datetime(2026, 12, 1, 10, 0, tzinfo=UTC),
        duration_s=NOW_S,
        scenario={"source": "watch", "prometheus": None, "slurm": "default", "every_s": 60.0},
        summary={
            "jobs_goodput": total.goodput,
            "jobs_goodput_measured": total.measured,
            "jobs_goodput_upper_bounds": total.upper_bounds,
            "jobs_ledger_gpu_hours": total.ledger.as_summary(),
            "cycles": 1,
            "sources": [],
        },
        tables={"jobs": jobs, "job_attempts": ATTEMPTS, "checkpoints": CHECKPOINTS},
    )
    return Store(store_dir).write_run(run), total


def test_the_jobs_that_lost_the_most_come_first_with_their_basis(watched):
    run_id, total = watched
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception
    [metric] = [m for m in at.metric if m.label == definition("observed_job_goodput").label]
    assert metric.value == f"{total.goodput:.1%}"
    assert any(f"{total.measured} jobs measured" in c.value and "upper bound" in c.value for c in at.caption)
    shown = {m.label: m.value for m in at.metric}
    for key, figure in (
        ("wall", "observed_wall_gpu_hours"),
        ("lost_work", "observed_lost_work"),
        ("between_attempts", "observed_between_attempts"),
    ):
        assert shown[definition(figure).label] == fmt_gpu_hours(total.ledger.as_summary()[key])
    [table] = [d.value for d in at.dataframe if "lost_gpu_h" in d.value.columns]
    # the table's lost GPU-hours are the ledger's lost work and time between attempts, job by job
    assert table["lost_gpu_h"].sum() == pytest.approx(
        total.ledger.lost_work_gpu_h + total.ledger.between_attempts_gpu_h, rel=1e-9
    )
    # lost GPU-hours = (wall - kept) x GPUs: job 1 (8 GPUs) kept 70 of its 100 s
    lost = {row["job_id"]: row["lost_gpu_h"] for row in table.to_dict("records")}
    assert list(lost) == sorted(lost, key=lost.get, reverse=True)
    assert lost["1"] == pytest.approx(8 * 30 / 3600)
    assert dict(zip(table["job_id"], table["basis"], strict=True))["3"] == "upper bound"
    assert dict(zip(table["job_id"], table["name"], strict=True))["1"] == "**train-1**"  # shown as text
