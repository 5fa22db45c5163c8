"""The Jobs page says one thing per figure: the flagship job's losses bucket by bucket under the goodput
ledger's names (never lost work + restart under "Lost work"), every metric named and explained by
engine.analysis.definitions, the same value as the Overview wherever both show a label, and a CSV with dates."""

from datetime import UTC, datetime

import polars as pl
import pytest
from test_charts_jobs import STARTED, queue_run
from test_charts_pages import open_page

from dashboard import exports
from dashboard.format import fmt_gpu_hours
from dashboard.queries import jobs_table as tables
from engine.analysis.definitions import by_label
from engine.report.csv_safety import restore_frame
from tests.runs import FLAGSHIP, expected_summary, make_store, small_run

PAGE = "app_pages/jobs.py"
RUN = "sim-20240301-000000-aaaaaa"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_the_flagship_shows_its_ledger_buckets_not_a_sum_called_lost_work(store_dir):
    make_store(store_dir, small_run())
    at = open_page(PAGE, {"run": RUN, "job": FLAGSHIP})
    assert not at.exception
    m = metrics(at)
    losses = expected_summary()["job"]["losses_gpu_hours"]
    # each bucket under its own name, as the Overview's ledger has it (tests/runs.expected_summary)
    assert (m["Lost work"], m["Restart overhead"], m["Checkpoint writes"], m["Waiting for spare hosts"]) == (
        fmt_gpu_hours(losses["lost_work"]),
        fmt_gpu_hours(losses["restart"]),
        fmt_gpu_hours(losses["checkpoint"]),
        fmt_gpu_hours(0.0),
    )
    assert m["Lost work"] != fmt_gpu_hours(losses["lost_work"] + losses["restart"])
    assert "Lost work of the job" not in m
    assert (m["Attempts of the flagship job"], m["Checkpoints written"]) == (
        "4",
        str(expected_summary()["job"]["checkpoints"]),
    )
    # the table's flagship row carries the same lost work as the ledger (job_attempts.lost_work_s x GPUs)
    # what hit it are interruptions, and the page says why they outnumber the failed attempts
    assert "**Interruptions** (3)" in [x.value for x in at.markdown]
    assert "3 interruptions: 2 ended an attempt by a failure and 1 by planned maintenance." in [
        c.value for c in at.caption
    ]
    row = at.dataframe[0].value.set_index("job_id").loc[FLAGSHIP]
    assert row["lost_gpu_hours"] == pytest.approx(round(losses["lost_work"], 1))


def test_a_research_job_shows_its_own_lost_work(store_dir):
    make_store(store_dir, small_run())
    at = open_page(PAGE, {"run": RUN, "job": "research-1"})
    assert not at.exception
    m = metrics(at)
    assert m["Lost work of the job"] == "12 GPU-h"  # (1,800 + 3,600 s) x 8 GPUs
    assert m["Attempts of the job"] == "3" and "Lost work" not in m and "Restart overhead" not in m


def test_every_metric_is_a_definition_and_agrees_with_the_overview(store_dir):
    make_store(store_dir, small_run())
    jobs_page = open_page(PAGE, {"run": RUN, "job": FLAGSHIP})
    overview = open_page("app_pages/overview.py", {"run": RUN})
    assert not jobs_page.exception and not overview.exception
    for m in jobs_page.metric:
        d = by_label(m.label)
        assert d is not None, f"{m.label!r} is no definition's label"
        assert m.help.startswith(d.help), f"{m.label!r} does not explain itself with its definition"
    # "Mean GPUs allocated (window)" is not the Overview's "Utilisation (allocated)": its own label
    assert "Utilisation (allocated)" not in metrics(jobs_page)
    shared = set(metrics(jobs_page)) & set(metrics(overview))  # a label on both pages: one value
    for label in shared:
        assert metrics(jobs_page)[label] == metrics(overview)[label], label


def test_the_csv_has_iso_dates_seconds_and_neutralised_text():
    run = queue_run()
    jobs = run.tables["jobs"].with_columns(
        pl.when(pl.col("job_id") == "A").then(pl.lit("=HYPERLINK(1)")).otherwise("name").alias("name"),
        (pl.col("start_s") - pl.col("submit_s")).alias("wait_s"),
        attempts=pl.lit(1),
        failures=pl.lit(0),
        checkpoints=pl.lit(0),
        lost_gpu_hours=pl.lit(1 / 3),
    )
    frame = tables.export(jobs, STARTED)
    assert frame.columns[:3] == ["job_id", "name", "kind"]
    back = restore_frame(pl.read_csv(exports.to_csv(frame), schema=frame.schema))
    assert back.equals(frame)  # the formula comes back as written, and stays text in a spreadsheet
    assert exports.to_csv(frame).decode().splitlines()[1].startswith("A,'=HYPERLINK(1),trace,")
    b = frame.filter(pl.col("job_id") == "B").row(0, named=True)
    assert (b["started_utc"], b["start_s"], b["ended_utc"], b["end_s"]) == (
        "2024-03-01T00:05:00Z",
        300.0,
        "2024-03-01T00:16:40Z",
        1000.0,
    )
    assert (b["wait_before_start_s"], b["wait_reason"], b["why_it_waited"]) == (
        300.0,
        "no_capacity",
        "No free capacity",
    )
    c = frame.filter(pl.col("job_id") == "C").row(0, named=True)
    assert c["started_utc"] is None and c["submitted_utc"] == "2024-03-01T00:03:20Z"
    assert frame["lost_work_gpu_hours"].to_list() == [0.3] * 4  # rounded to a tenth


def test_iso_dates_beyond_any_run_are_left_empty():
    frame = pl.DataFrame({"t": [0.5, 1e300, float("nan"), None]})
    out = frame.select(tables._iso("t", datetime(2024, 3, 1, tzinfo=UTC)).alias("t"))["t"].to_list()
    assert out == ["2024-03-01T00:00:00Z", None, None, None]  # a date to the second; `*_s` keeps the rest
