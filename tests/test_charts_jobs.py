"""The Jobs page's queries, charts and exports on `queue_run`, a hand-made replayed run whose queue,
utilisation and fragmentation are worked out by hand below.

The run: 1,000 s on 3 hosts (h0 and h1 of 4 GPUs, h2 of 2: 10 GPUs).
    A  4 GPUs on h0   submitted 0, waits [0,100) priority, runs [100,600) completed
    B  2 GPUs on h1   submitted 0, waits [0,300) no_capacity, runs [300,500) until h1 fails (faulty_gpu),
                      h1 is down [500,700) and B waits [500,700) failed_hosts, runs again [700,1000)
    C  8 GPUs         submitted 200, never starts: waits [200,600) no_capacity, [600,1000) fragmentation
    D  0.5 GPU on h2  submitted 0, runs [0,1000) (a fractional GPU)
Buckets of 250 s: [0,250) [250,500) [500,750) [750,1000).
"""

from datetime import UTC, datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import exports
from dashboard.charts import jobs as charts
from dashboard.charts.common import text_px
from dashboard.queries import jobs as queries
from dashboard.queries import jobs_table as tables
from engine.report.csv_safety import restore_frame
from engine.report.palette import END_REASON_COLOURS, WAIT_REASON_COLOURS
from engine.store import Store
from engine.store.run import Run

STARTED = datetime(2024, 3, 1, tzinfo=UTC)


def queue_run(name: str = "queue") -> Run:
    hosts = pl.DataFrame(
        {
            "host_id": [0, 1, 2],
            "hostname": ["h0", "h1", "h2"],
            "rack_id": [0, 0, 1],
            "pod_id": [0, 0, 0],
            "row": [0, 0, 0],
            "position": [0, 0, 1],
            "slot": [0, 1, 0],
        },
        schema_overrides=dict.fromkeys(("host_id", "rack_id", "pod_id", "row", "position", "slot"), pl.Int32),
    )
    host_of_gpu = [0] * 4 + [1] * 4 + [2] * 2
    gpus = pl.DataFrame(
        {
            "gpu_id": range(10),
            "host_id": host_of_gpu,
            "index": [0, 1, 2, 3, 0, 1, 2, 3, 0, 1],
            "uuid": [f"GPU-{g}" for g in range(10)],
            "model": ["P100"] * 10,
        },
        schema_overrides={"gpu_id": pl.Int32, "host_id": pl.Int32, "index": pl.Int16},
    )
    jobs = pl.DataFrame(
        {
            "job_id": ["A", "B", "C", "D"],
            "name": ["train-a", "train-b", "big-c", "notebook-d"],
            "gpus": [4.0, 2.0, 8.0, 0.5],
            "priority": [1, 2, 2, 2],
            "submit_s": [0.0, 0.0, 200.0, 0.0],
            "start_s": [100.0, 300.0, None, 0.0],
            "end_s": [600.0, 1000.0, None, 1000.0],
            "state": ["completed", "running", "pending", "running"],
            "user": ["ann", "bob", "cy", "dee"],
            "kind": ["trace"] * 4,
            "wait_reason": ["priority", "no_capacity", "no_capacity", None],
        },
        schema_overrides={"priority": pl.Int32},
    )
    attempts = pl.DataFrame(
        {
            "job_id": ["A", "B", "B", "D"],
            "attempt": [1, 1, 2, 1],
            "start_s": [100.0, 300.0, 700.0, 0.0],
            "end_s": [600.0, 500.0, 1000.0, 1000.0],
            "end_reason": ["completed", "faulty_gpu", "end_of_run", "end_of_run"],
            "lost_work_s": [0.0, 120.0, 0.0, 0.0],
            "hosts": [[0], [1], [1], [2]],
        },
        schema_overrides={"attempt": pl.Int32, "hosts": pl.List(pl.Int32)},
    )
    waits = pl.DataFrame(
        {
            "job_id": ["A", "B", "B", "C", "C"],
            "start_s": [0.0, 0.0, 500.0, 200.0, 600.0],
            "end_s": [100.0, 300.0, 700.0, 600.0, 1000.0],
            "reason": ["priority", "no_capacity", "failed_hosts", "no_capacity", "fragmentation"],
        }
    )
    states = pl.DataFrame(
        {
            "host_id": [0, 0, 1, 1, 1, 1, 2],
            "state": ["running", "healthy", "running", "down", "healthy", "running", "running"],
            "start_s": [0.0, 600.0, 0.0, 500.0, 700.0, 700.0, 0.0],
            "end_s": [600.0, 1000.0, 500.0, 700.0, 700.0, 1000.0, 1000.0],
            "job_id": ["A", None, "B", None, None, "B", "D"],
        },
        schema_overrides={"host_id": pl.Int32},
    )
    checkpoints = pl.DataFrame({"job_id": ["B", "B"], "start_s": [350.0, 800.0], "end_s": [360.0, 810.0]})
    return Run(
        kind="replay",
        name=name,
        started_at=STARTED,
        duration_s=1000.0,
        tables={
            "hosts": hosts,
            "gpus": gpus,
            "jobs": jobs,
            "job_attempts": attempts,
            "job_waits": waits,
            "host_states": states,
            "checkpoints": checkpoints,
        },
    )


@pytest.fixture
def run_id(store_dir) -> str:
    return Store(store_dir).write_run(queue_run())


# ----- queries ------------------------------------------------------------------------------------------


def test_queue_counts_first_waits_and_requeues_time_weighted(run_id):
    q = queries.queue(run_id, 0.0, 250.0, 4, 1000.0)
    assert q["t_s"].to_list() == [0.0, 250.0, 500.0, 750.0]
    # bucket 0: A 100 s + B 250 s + C 50 s; bucket 2: B requeued [500,700) 200 s + C 250 s
    assert q["queued_jobs"].to_list() == pytest.approx([1.6, 1.2, 1.8, 1.0])
    assert q["queued_gpus"].to_list() == pytest.approx([5.2, 8.4, 9.6, 8.0])


def test_queue_of_an_empty_bucket_is_zero(run_id):
    # after the run: no interval meets it (DuckDB's least/greatest would otherwise count the bucket's width)
    q = queries.queue(run_id, 1000.0, 100.0, 2, 1000.0)
    assert q["queued_jobs"].to_list() == [0.0, 0.0] and q["queued_gpus"].to_list() == [0.0, 0.0]


def test_utilisation_time_weighted_with_fractional_gpus_and_down_hosts(run_id):
    u = queries.utilisation(run_id, 0.0, 250.0, 4)
    assert u["busy_gpus"].to_list() == pytest.approx([2.9, 6.1, 2.5, 2.5])
    assert u["utilisation"].to_list() == pytest.approx([0.29, 0.61, 0.25, 0.25])
    assert u["unavailable_gpus"].to_list() == pytest.approx([0.0, 0.0, 3.2, 0.0])  # h1 down 200 s x 4 GPUs
    assert u["total_gpus"].to_list() == [10] * 4


def test_fragmentation_is_the_share_of_free_gpus_on_partly_used_hosts(run_id):
    f = queries.fragmentation(run_id, 0.0, 250.0, 4)
    assert f["t_s"].to_list() == [125.0, 375.0, 625.0, 875.0]
    # t=125: h0 full, h2 holds 0.5 of 2: free 5.5, scattered 1.5; t=375: h1 2 of 4 and h2 scattered, h0 full;
    # t=625: h1 down (not free), A gone; t=875: B back on h1
    assert f["free_gpus"].to_list() == pytest.approx([5.5, 3.5, 5.5, 7.5])
    assert f["scattered_gpus"].to_list() == pytest.approx([1.5, 3.5, 1.5, 3.5])
    assert f["fragmentation"].to_list() == pytest.approx([1.5 / 5.5, 1.0, 1.5 / 5.5, 3.5 / 7.5])


def test_wait_times_and_reasons_in_a_window(run_id):
    assert queries.wait_times(run_id, 0.0, 1000.0)["wait_s"].to_list() == [0.0, 100.0, 300.0]
    assert queries.wait_times(run_id, 200.0, 1000.0)["wait_s"].to_list() == [300.0]  # B started at 300
    # why they waited: the jobs of the table, each under the reason it waited longest for (jobs.wait_reason)
    r = tables.why_waited(queries.jobs(run_id, 1000.0))
    assert r.select("reason", "label", "jobs", "waited_s", "never_started").rows() == [
        ("no_capacity", "No free capacity", 2, 300.0, 1),  # B waited 300 s, C never started; D did not wait
        ("priority", "Higher-priority jobs first", 1, 100.0, 0),
    ]
    late = tables.why_waited(queries.jobs(run_id, 1000.0, queries.JobFilter(window=(650.0, 1000.0))))
    assert late.select("reason", "jobs").rows() == [("no_capacity", 2)]  # A ended before the window


def test_jobs_in_a_window_and_a_jobs_hosts_and_waits(run_id):
    everything = queries.jobs(run_id, 1000.0)
    assert everything["job_id"].to_list() == ["A", "B", "D", "C"]  # GPU-time 2000, 1400, 500 s; C never ran
    late = queries.jobs(run_id, 1000.0, queries.JobFilter(window=(650.0, 1000.0)))
    assert sorted(late["job_id"].to_list()) == ["B", "C", "D"]  # A ended at 600
    early = queries.jobs(run_id, 1000.0, queries.JobFilter(window=(0.0, 150.0)))
    assert sorted(early["job_id"].to_list()) == ["A", "B", "D"]  # C submitted at 200
    b = everything.filter(pl.col("job_id") == "B").row(0, named=True)
    assert (b["attempts"], b["failures"], b["wait_s"], b["lost_gpu_hours"]) == (2, 1, 300.0, 2 * 120 / 3600)
    assert queries.attempt_hosts(run_id, "B").rows() == [(1, ["h1"]), (2, ["h1"])]
    assert queries.waits_of(run_id, "B").rows() == [
        (0.0, 300.0, 300.0, "no_capacity"),
        (500.0, 700.0, 200.0, "failed_hosts"),
    ]
    assert queries.checkpoints(run_id, ["B"], 400.0, 1000.0)["start_s"].to_list() == [800.0]


def test_gantt_orders(run_id):
    frame = queries.jobs(run_id, 1000.0)
    assert queries.gantt_order(frame, "GPU-time")["job_id"].to_list() == ["A", "B", "D", "C"]
    assert queries.gantt_order(frame, "started")["job_id"].to_list() == [
        "D",
        "A",
        "B",
        "C",
    ]  # C never started
    assert queries.gantt_order(frame, "waited")["job_id"].to_list() == ["B", "A", "D", "C"]
    assert queries.gantt_order(frame, "failures")["job_id"].to_list() == ["B", "A", "C", "D"]  # ties by id
    flagship = frame.with_columns(
        pl.when(pl.col("job_id") == "D").then(pl.lit("flagship")).otherwise("kind").alias("kind")
    )
    assert queries.gantt_order(flagship, "waited")["job_id"].to_list() == ["D", "B", "A", "C"]


# ----- charts -------------------------------------------------------------------------------------------


def test_gantt_marks_restarts_and_checkpoints_and_shows_the_window():
    run = queue_run()
    attempts = run.tables["job_attempts"].with_columns(pl.col("job_id").alias("label"))
    marks = run.tables["checkpoints"].with_columns(pl.col("job_id").alias("label"))
    waiting = run.tables["jobs"].with_columns(pl.col("job_id").alias("label")).filter(pl.col("job_id") != "C")
    fig = charts.attempts_gantt(
        attempts, STARTED, ["A", "B", "D"], marks, window=(250.0, 750.0), waiting=waiting
    )
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {
        "Waiting for a first start",
        "Restarting or requeued",
        "Completed",
        "Still running at the end of the run",
        "Failure",
        "Failure here",
        "Restart",
        "Checkpoint",
    }
    assert fig.data[0].name == "Waiting for a first start"  # drawn first: behind the attempts
    waits = by_name["Waiting for a first start"]
    assert list(waits.y) == ["A", "B"] and list(waits.x) == [100_000.0, 300_000.0]
    assert [str(x) for x in waits.base] == ["2024-03-01T00:00:00.000"] * 2
    assert list(waits.hovertext) == [
        "submitted 2024-03-01 00:00 UTC<br>waited 1 min before its first start",
        "submitted 2024-03-01 00:00 UTC<br>waited 5 min before its first start",
    ]
    gap = by_name["Restarting or requeued"]  # B between its attempts: h1 down [500, 700)
    assert (
        list(gap.y) == ["B"] and list(gap.x) == [200_000.0] and str(gap.base[0]) == "2024-03-01T00:08:20.000"
    )
    failure = by_name["Failure"]
    assert list(failure.y) == ["B"] and list(failure.x) == [200_000.0]  # 200 s in ms
    assert failure.marker.color == END_REASON_COLOURS["failure"] and failure.marker.line.color == "white"
    assert list(failure.hovertext) == [
        "attempt 1: 2024-03-01 00:05 UTC → 2024-03-01 00:08 UTC<br>ran 3 min · "
        "ended by Faulty GPU<br>2 min of training lost"
    ]
    assert list(by_name["Failure here"].text) == ["Faulty GPU"]
    restart = by_name["Restart"]
    assert list(restart.y) == ["B"] and [str(x) for x in restart.x] == ["2024-03-01T00:11:40.000"]
    assert list(restart.customdata) == ["B"] and list(restart.text) == ["2"]
    # only the checkpoints inside the window
    assert [str(x) for x in by_name["Checkpoint"].x] == ["2024-03-01T00:05:50.000"]
    assert [str(x) for x in fig.layout.xaxis.range] == ["2024-03-01 00:04:10", "2024-03-01 00:12:30"]
    # without checkpoints or window: no checkpoint trace, Plotly picks the range
    fig = charts.attempts_gantt(attempts, STARTED, ["A", "B", "D"])
    assert "Checkpoint" not in {t.name for t in fig.data} and fig.layout.xaxis.range is None


def flagship_like(attempts: int, checkpoints: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One job of `attempts` attempts of 100 s, each failed (the last still running) after a 10 s gap, and
    `checkpoints` checkpoints spread evenly over them."""
    starts = np.arange(attempts) * 110.0
    frame = pl.DataFrame(
        {
            "job_id": "F",
            "label": "flagship",
            "attempt": np.arange(1, attempts + 1, dtype=np.int32),
            "start_s": starts,
            "end_s": starts + 100.0,
            "end_reason": ["faulty_gpu"] * (attempts - 1) + ["end_of_run"],
            "lost_work_s": 5.0,
        }
    )
    marks = pl.DataFrame(
        {
            "job_id": "F",
            "label": "flagship",
            "start_s": np.linspace(0.0, attempts * 110.0, checkpoints, endpoint=False),
        }
    )
    return frame, marks


def test_a_crowded_row_shows_its_attempts_and_no_marks_until_the_window_narrows():
    # the llama3-405b flagship's shape: 436 attempts and 14,287 checkpoints on one row
    attempts, marks = flagship_like(436, 14_287)
    whole = (0.0, 436 * 110.0)
    fig = charts.attempts_gantt(attempts, STARTED, ["flagship"], marks, window=whole)
    bars = {t.name: t for t in fig.data if isinstance(t, go.Bar)}
    assert (
        len(bars["Failure"].x) == 435 and len(bars["Still running at the end of the run"].x) == 1
    )  # a bar each
    assert len(bars["Restarting or requeued"].x) == 435  # every gap between two attempts
    assert not [t for t in fig.data if isinstance(t, go.Scatter)]  # no x, ▸ or | by the hundred
    # a window holding 5 attempts and at most MARKS_IN_VIEW checkpoints: every mark drawn
    narrow = (0.0, 550.0)
    fig = charts.attempts_gantt(attempts, STARTED, ["flagship"], marks, window=narrow)
    by_name = {t.name: t for t in fig.data}
    inside = marks.filter(pl.col("start_s") < 550.0).height
    assert inside <= charts.MARKS_IN_VIEW and len(by_name["Checkpoint"].x) == inside
    assert len(by_name["Failure here"].x) == 5 and len(by_name["Restart"].x) == 4  # attempt 1 is no restart
    assert by_name["Checkpoint"].marker.line.color == charts.CHECKPOINT_COLOUR


def test_few_enough_keeps_rows_by_their_count_in_the_window():
    marks = pl.DataFrame({"label": ["a"] * 3 + ["b"], "t": [1.0, 2.0, 30.0, 2.0]})
    assert charts.few_enough(marks, "t", (0.0, 10.0), limit=2).rows() == [("a", 1.0), ("a", 2.0), ("b", 2.0)]
    assert charts.few_enough(marks, "t", None, limit=2).rows() == [("b", 2.0)]  # a has 3 in the whole run


def test_queue_chart_puts_jobs_and_gpus_on_two_axes():
    q = pl.DataFrame({"t_s": [0.0, 250.0], "queued_jobs": [1.6, 1.2], "queued_gpus": [5.2, 8.4]})
    fig = charts.queue_over_time(q, STARTED)
    jobs_trace, gpus_trace = fig.data
    assert list(jobs_trace.y) == [1.6, 1.2] and list(gpus_trace.y) == [5.2, 8.4]
    assert jobs_trace.yaxis == "y" and gpus_trace.yaxis == "y2" and jobs_trace.line.shape == "hv"
    assert str(jobs_trace.x[1]) == "2024-03-01T00:04:10.000"


def test_wait_percentiles_match_duckdb_quantile_cont():
    assert charts.wait_percentiles(np.array([0.0, 100.0, 300.0])) == pytest.approx((100.0, 280.0))
    p50, p95 = charts.wait_percentiles(np.array([]))
    assert np.isnan(p50) and np.isnan(p95)


def test_wait_histogram_bins_waits_at_operator_steps():
    waits = np.array([0.0, 30.0, 60.0, 299.0, 300.0, 3 * 3600.0, 10 * 86400.0, 400 * 86400.0])
    fig = charts.wait_histogram(waits)
    bar = fig.data[0]
    counts = dict(zip(bar.x, bar.y, strict=True))
    assert list(bar.x) == [
        "< 1 min",
        "1 min–5 min",
        "5 min–15 min",
        "15 min–30 min",
        "30 min–1 h",
        "1 h–2 h",
        "2 h–6 h",
        "6 h–12 h",
        "12 h–1 d",
        "1 d–2 d",
        "2 d–7 d",
        "7 d–30 d",
        "≥ 30 d",
    ]
    assert sum(bar.y) == 8
    assert (counts["< 1 min"], counts["1 min–5 min"], counts["5 min–15 min"]) == (2, 2, 1)  # 300 s: next bin
    assert (counts["2 h–6 h"], counts["7 d–30 d"], counts["≥ 30 d"]) == (1, 1, 1)
    # p50 of 8 waits: halfway between 299 s and 300 s; p95: 10 d + 0.65 x 390 d
    assert fig.layout.title.text == "8 jobs started · p50 5 min · p95 263 d 12 h"
    assert charts.wait_histogram(np.array([])).layout.title.text == "no job started"


def test_why_waited_bars_count_jobs_most_on_top_in_reason_colours():
    jobs = pl.DataFrame(
        {
            "wait_reason": ["no_capacity", "no_capacity", "priority", None, None, "failed_hosts"],
            "submit_s": [0.0, 0.0, 0.0, 0.0, 5.0, 0.0],
            "start_s": [10.0, None, 20.0, 0.0, 65.0, 0.0],
            "wait_s": [10.0, None, 20.0, 0.0, 60.0, 0.0],
        }
    )
    reasons = tables.why_waited(jobs)
    # the 4th job did not wait; the 5th waited with no reason recorded; the 6th was requeued after a prompt start
    assert reasons.select("reason", "jobs", "waited_s", "never_started").rows() == [
        ("no_capacity", 2, 10.0, 1),
        ("failed_hosts", 1, 0.0, 0),
        ("not_recorded", 1, 60.0, 0),
        ("priority", 1, 20.0, 0),
    ]
    bar = charts.why_waited(reasons).data[0]
    assert list(bar.y) == [
        "Higher-priority jobs first",
        "Reason not recorded",
        "Hosts failed or in repair",
        "No free capacity",
    ]  # Plotly draws the last on top
    assert list(bar.x) == [1, 1, 1, 2] and list(bar.text) == ["1 jobs", "1 jobs", "1 jobs", "2 jobs"]
    assert list(bar.marker.color) == [
        WAIT_REASON_COLOURS[r] for r in ("priority", "not_recorded", "failed_hosts", "no_capacity")
    ]
    assert [list(c) for c in bar.customdata] == [["20 s", "0"], ["1 min", "0"], ["0 s", "0"], ["10 s", "1"]]


wait_rows = st.lists(
    st.tuples(
        st.sampled_from([None, "no_capacity", "fragmentation", "priority", "failed_hosts"]),
        st.floats(0, 1e6),
        st.one_of(st.none(), st.floats(0, 1e6)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(wait_rows)
def test_why_waited_counts_exactly_the_tables_rows(rows):
    """The chart's bars add up, reason by reason, to the table's rows under "Why it waited" (a job that
    waited without a reason counted as not recorded), whatever the jobs."""
    # wait_s as the jobs query computes it: start - submit
    jobs = pl.DataFrame(
        [(r, s, None if w is None else s + w, None if w is None else (s + w) - s) for r, s, w in rows],
        schema={
            "wait_reason": pl.String,
            "submit_s": pl.Float64,
            "start_s": pl.Float64,
            "wait_s": pl.Float64,
        },
        orient="row",
    )
    reasons = tables.why_waited(jobs)
    bar = charts.why_waited(reasons).data[0] if reasons.height else None
    charted = dict(zip(bar.y, bar.x, strict=True)) if bar else {}
    table = jobs.with_columns(tables.wait_reason_text().alias("why"))
    expected = {}
    for why, wait in zip(table["why"].to_list(), table["wait_s"].to_list(), strict=True):
        if why is not None or wait is None or wait > 0:
            label = why or "Reason not recorded"
            expected[label] = expected.get(label, 0) + 1
    assert charted == expected


def test_utilisation_and_fragmentation_panels():
    util = pl.DataFrame(
        {"t_s": [0.0, 250.0], "busy_gpus": [2.9, 6.1], "unavailable_gpus": [0.0, 3.2], "total_gpus": [10, 10]}
    )
    frag = pl.DataFrame({"t_s": [125.0, 375.0], "fragmentation": [0.25, None]})
    fig = charts.utilisation_and_fragmentation(util, frag, STARTED)
    busy, down, fragmented = fig.data
    assert list(busy.y) == pytest.approx([29.0, 61.0]) and list(down.y) == pytest.approx([0.0, 32.0])
    assert busy.stackgroup == down.stackgroup == "gpus"  # unavailable drawn on top of busy
    assert (
        list(fragmented.y)[0] == pytest.approx(25.0) and list(fragmented.y)[1] is None
    )  # no free GPU: a gap
    assert fragmented.yaxis == "y2" and str(fragmented.x[0]) == "2024-03-01T00:02:05.000"


# ----- exports ------------------------------------------------------------------------------------------


def test_csv_and_parquet_round_trip_to_the_same_frame():
    frame = queue_run().tables["jobs"]
    assert pl.read_parquet(exports.to_parquet(frame)).equals(frame)
    back = restore_frame(pl.read_csv(exports.to_csv(frame), schema=frame.schema))
    assert back.equals(frame)


def test_csv_joins_list_columns():
    frame = pl.DataFrame({"attempt": [1, 2], "hosts": [["h0", "h1"], []]})
    assert exports.to_csv(frame).decode() == 'attempt,hosts\n1,h0;h1\n2,""\n'
    assert pl.read_parquet(exports.to_parquet(frame)).equals(frame)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=12),
            st.one_of(st.none(), st.floats(allow_nan=False)),
            st.one_of(st.none(), st.integers(-(2**40), 2**40)),
        ),
        max_size=30,
    )
)
def test_any_table_round_trips(rows):
    frame = pl.DataFrame(rows, schema={"name": pl.String, "x": pl.Float64, "n": pl.Int64}, orient="row")
    assert pl.read_parquet(exports.to_parquet(frame)).equals(frame)
    back = restore_frame(pl.read_csv(exports.to_csv(frame), schema=frame.schema))
    # CSV cannot tell an empty string from a missing one; everything else comes back as it was
    assert back.with_columns(pl.col("name").fill_null("")).equals(
        frame.with_columns(pl.col("name").fill_null(""))
    )


def test_gantt_margin_is_set_from_its_job_names_and_measured_only_past_the_widest_it_sets():
    """Plotly's automargin would measure every label and draw the Gantt twice (issue 28): the left margin holds the
    widest name as Chromium draws it in Source Sans at 12 px ("research-05492" 76.5 px, "llama3-405b-pretrain"
    106.2 px, measured) and the gap Plotly leaves; names past MAX_LABEL_PX are left for Plotly to measure."""
    run = queue_run()
    names = {"A": "llama3-405b-pretrain", "B": "research-05492", "C": "C", "D": "D"}
    attempts = run.tables["job_attempts"].with_columns(pl.col("job_id").replace_strict(names).alias("label"))
    fig = charts.attempts_gantt(attempts, STARTED, [names[j] for j in "ABD"])
    assert text_px("research-05492") == pytest.approx(76.49, abs=0.5)
    assert text_px("llama3-405b-pretrain") == pytest.approx(106.23, abs=0.5)
    assert fig.layout.margin.l == 127 and fig.layout.margin.t == 130  # 106.2 px + the 18.8 px gap, rounded up
    assert fig.layout.xaxis.automargin is False and fig.layout.yaxis.automargin is False
    # a CJK name counts a full em a character: set while it fits, measured by Plotly past it
    long = "训练" * 14  # 28 characters of 12 px: 336 px, past the 320 px set by hand
    fig = charts.attempts_gantt(attempts.with_columns(pl.lit(long).alias("label")), STARTED, [long])
    assert text_px(long) == 336.0
    assert fig.layout.yaxis.automargin is True and fig.layout.margin.l == 10
