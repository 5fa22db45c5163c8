"""Overview page: headline figures, charts (plain functions), what is down at ?t=, runs lacking a summary."""

import json
import re
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.charts import overview as charts
from dashboard.queries import overview as q
from dashboard.queries import summary as summaries
from engine.analysis.analytics import ettr_timeline
from engine.analysis.run_summary import RunSummary
from engine.report.palette import CATEGORY_COLOURS, LOSS_COLOURS, state_colour
from tests.runs import (
    DURATION_S,
    STARTED_AT,
    bare_run,
    expected_summary,
    flagship_checkpoints,
    incidents,
    job_attempts,
    make_store,
    small_run,
)

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
RUN = "sim-20240301-000000-aaaaaa"


def overview(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def metrics(at: AppTest) -> dict[str, tuple[str, str | None]]:
    return {m.label: (m.value, m.delta or None) for m in at.metric}


def down_table(at: AppTest) -> pl.DataFrame:
    """The Overview's one table, a few hosts: static cells, each as its text (dashboard.table_view.short)."""
    [frame] = at.table
    return pl.from_pandas(frame.value)


# ----- the page ---------------------------------------------------------------------------------------------


def test_headline_figures_of_the_hand_made_run(store_dir):
    make_store(store_dir, small_run())
    at = overview()
    assert not at.exception
    # every figure follows from tests/runs.py: ETTR 152,400 / 172,800 s; 16 GPUs x 20,400 s lost; ...
    assert metrics(at) == {
        "ETTR (goodput)": ("88.2%", "-1.8 pts vs closed form 90.0%"),
        "Job MTTF": ("24.0 h", None),
        "Interruptions": ("3", "2 unexpected · 1 planned"),
        "Goodput lost": ("90.7 GPU-h", "$227"),
        "Utilisation (allocated)": ("71.2%", None),
        "GPU-hours out of service": ("264 GPU-h", "17.2% of the cluster"),
    }
    assert "2024-03-01 00:00 → 2024-03-03 00:00 UTC (2.0 days)" in at.main.caption[0].value
    assert "32 GPUs on 4 hosts" in at.main.caption[0].value
    headers = [h.value for h in at.subheader]
    assert headers == [
        "What is down",
        "Where the flagship job's time went",
        "What interrupted it",
    ]  # down first
    md = [m.value for m in at.main.markdown]
    assert "**Interruptions: 3** of the flagship job. The most frequent causes:" in md
    assert "One unexpected interruption every **24.0 h** on average (Job MTTF)." in md


def test_what_is_down_at_the_end_of_the_run_by_default(store_dir):
    make_store(store_dir, small_run())
    at = overview()
    assert at.slider[0].value == datetime(2024, 3, 3)
    assert "t" not in at.query_params
    assert "**1 of 4 hosts** (8 GPUs) are out of service at the end of the run." in [
        m.value for m in at.markdown
    ]
    table = down_table(at)
    assert table.select(
        "host", "state", "down since (UTC)", "down for", "cause", "category", "incident #", "GPU id", "XID"
    ).rows() == [("h0003", "In repair", "2024-03-02 22:40 UTC", "1 h 20 min", "SSD", "Host", "5", "–", "–")]


def test_what_is_down_at_a_time_from_the_url(store_dir):
    make_store(store_dir, small_run())
    at = overview(t="155000")
    assert not at.exception
    assert at.slider[0].value == datetime(2024, 3, 2, 19, 3, 20)
    assert at.query_params["t"] == "155000"
    table = down_table(at)
    # the rack switch's cable took both hosts of rack 1 down at 150,000 s; the incident names no host
    assert table.select("host", "rack", "down since (UTC)", "cause", "incident #").rows() == [
        ("h0002", "1", "2024-03-02 17:40 UTC", "Network switch/cable", "4"),
        ("h0003", "1", "2024-03-02 17:40 UTC", "Network switch/cable", "4"),
    ]


def test_moving_the_time_slider_updates_the_url(store_dir):
    make_store(store_dir, small_run())
    at = overview()
    at.slider[0].set_value(
        datetime(2024, 3, 1, 16, 40)
    ).run()  # 60,000 s: host 1 in repair, host 2 diagnosing
    assert not at.exception
    assert at.query_params["t"] == "60000"
    assert down_table(at)["host"].to_list() == ["h0001", "h0002"]
    at.slider[0].set_value(datetime(2024, 3, 1, 0, 0)).run()
    assert [s.value for s in at.success] == [
        "All 4 hosts are healthy, running or spare at 2024-03-01 00:00 UTC (day 1 00:00)."
    ]


def test_a_malformed_time_in_the_url_means_the_end_of_the_run(store_dir):
    make_store(store_dir, small_run())
    at = overview(t="yesterday")
    assert not at.exception
    assert at.slider[0].value == datetime(2024, 3, 3)


def test_ingested_run_without_summary_or_host_states(store_dir):
    make_store(store_dir, bare_run())
    at = overview()
    assert not at.exception
    # no summary: the figures are counted in the tables the run has
    assert metrics(at) == {
        "Telemetry samples": ("96", None),
        "XID events": ("4", None),
        "GPUs with XIDs": ("3", None),
    }
    infos = [i.value for i in at.info]
    assert any("has no flagship training job" in i for i in infos)
    assert any("records no host states" in i for i in infos)
    [xids] = at.dataframe
    assert xids.value[["xid", "name", "fatal", "events", "gpus"]].values.tolist() == [
        [13, "GR_EXCEPTION", False, 1, 1],
        [48, "GPU_ECC_DBE", True, 1, 1],
        [63, "DRAM_RETIREMENT_EVENT", False, 1, 1],
        [79, "GPU_HAS_FALLEN_OFF_THE_BUS", True, 1, 1],
    ]


def test_summary_with_only_some_keys(store_dir):
    run = small_run(run_id="rep-20240301-000000-dddddd")
    run.kind, run.summary = "replay", {"job": {"ettr": 0.5}, "interruptions": {"total": 7}}
    make_store(store_dir, run)
    at = overview()
    assert not at.exception
    assert metrics(at) == {"ETTR (goodput)": ("50.0%", None), "Interruptions": ("7", None)}
    # no counts by cause in the summary: the incidents table is counted instead
    assert "**Incidents: 5** recorded in the run. The most frequent causes:" in [m.value for m in at.markdown]
    # ... and titled by what it counts: the cluster's incidents, not interruptions of a flagship job
    assert "What failed" in [h.value for h in at.subheader]
    assert "What interrupted it" not in [h.value for h in at.subheader]
    layouts = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
    causes = next(
        layout for layout in layouts if "Incidents by cause" in layout.get("title", {}).get("text", "")
    )
    assert "Interruptions by cause" not in json.dumps(causes)


def test_ettr_is_computed_from_attempts_when_the_summary_has_none(store_dir):
    run = small_run(run_id="rep-20240301-000000-eeeeee")
    run.kind, run.summary = "replay", {}
    make_store(store_dir, run)
    at = overview()
    assert not at.exception
    assert metrics(at) == {"ETTR (from attempts)": ("88.2%", None)}


# ----- queries ----------------------------------------------------------------------------------------------


@pytest.fixture
def run_store(store_dir):
    return make_store(store_dir, small_run())


@pytest.mark.parametrize(
    ("t_s", "down"),
    [
        (0.0, []),
        (36000.0, [(1, "down", 36000.0, 1)]),
        (60500.0, [(1, "repair", 36000.0, 1), (2, "diagnosing", 60000.0, 2)]),
        (110000.0, [(1, "burn_in", 36000.0, 1)]),
        (121000.0, []),  # host 1 is a spare again
        (150000.0, [(2, "down", 150000.0, 4), (3, "down", 150000.0, 4)]),
        (166000.0, []),
        (DURATION_S, [(3, "repair", 168000.0, 5)]),
        (10 * DURATION_S, [(3, "repair", 168000.0, 5)]),  # past the end reads the end
    ],
)
def test_down_at(run_store, t_s, down):
    frame = q.down_at(RUN, t_s, DURATION_S)
    assert frame.select("host_id", "state", "down_since_s", "incident_id").rows() == down


def test_a_rack_wide_incident_recorded_on_one_host_explains_its_neighbour(store_dir):
    """The simulator records a rack switch's cable fault on one host of the rack; both hosts go down."""
    run = small_run()
    run.tables["incidents"] = incidents().with_columns(
        host_id=pl.when(pl.col("incident_id") == 4).then(3).otherwise(pl.col("host_id")).cast(pl.Int32)
    )
    make_store(store_dir, run)
    assert q.down_at(RUN, 155000.0, DURATION_S).select("host_id", "incident_id").rows() == [(2, 4), (3, 4)]
    # an incident of a host in another rack explains nothing here
    run = small_run(run_id="sim-20240301-000000-ffffff")
    run.tables["incidents"] = incidents().with_columns(
        host_id=pl.when(pl.col("incident_id") == 4).then(0).otherwise(pl.col("host_id")).cast(pl.Int32)
    )
    make_store(store_dir, run)
    assert q.down_at(run.run_id, 155000.0, DURATION_S)["incident_id"].to_list() == [None, None]


def test_down_at_names_the_cause_and_how_long(run_store):
    row = q.down_at(RUN, 100000.0, DURATION_S).row(0, named=True)
    assert (row["hostname"], row["rack_id"], row["cause"], row["category"], row["gpu_id"], row["xid"]) == (
        "h0001",
        0,
        "faulty_gpu",
        "GPU",
        11,
        79,
    )
    assert row["state_since_s"] == 100000.0 and row["down_for_s"] == 64000.0


def test_state_counts_and_sizes(run_store):
    counts = q.state_counts_at(RUN, 155000.0, DURATION_S)
    assert dict(counts.iter_rows()) == {"repair": 2, "running": 2}
    assert q.host_count(RUN) == {"hosts": 4, "gpus": 32}
    assert q.flagship_job(RUN) == {
        "job_id": "flagship",
        "name": "tiny-pretrain",
        "gpus": 16.0,
        "start_s": 0.0,
    }
    assert q.interruptions(RUN, "flagship").rows() == [
        (36000.0, "faulty_gpu"),
        (96000.0, "planned_maintenance"),
        (150000.0, "network_switch_cable"),
    ]
    assert q.has_host_states(RUN)


def test_instant_reads_the_last_moment_inside_the_run():
    assert q.instant(500.0, 1000.0) == 500.0
    assert q.instant(1000.0, 1000.0) == pytest.approx(1000.0 - 1e-3)
    assert q.instant(-5.0, 1000.0) == 0.0


def headline_of(summary: dict) -> list:
    """The Overview's headline of a summary as stored (JSON), read through its typed record."""
    return summaries.headline(RunSummary.from_json(summary))


def causes_of(summary: dict):
    return summaries.causes_from_summary(RunSummary.from_json(summary))


def test_headline_from_a_full_and_an_empty_summary():
    full = headline_of(expected_summary())
    assert [h.label for h in full] == [
        "ETTR (goodput)",
        "Job MTTF",
        "Interruptions",
        "Goodput lost",
        "Utilisation (allocated)",
        "GPU-hours out of service",
    ]
    assert all(h.help for h in full)
    assert headline_of({}) == []
    assert headline_of({"job": {"ettr": "n/a", "mttf_hours": True}}) == []  # not numbers: not shown
    [only] = headline_of({"job": {"lost_gpu_hours": 12345.0}})
    assert (only.label, only.value, only.delta) == ("Goodput lost", "12.3k GPU-h", None)


def test_causes_from_summary():
    counts = causes_of(expected_summary())
    assert dict(counts.filter(pl.col("count") > 0).iter_rows()) == {
        "faulty_gpu": 1,
        "network_switch_cable": 1,
        "planned_maintenance": 1,
    }
    # a summary that already counts planned maintenance by cause is not counted twice
    twice = causes_of({"interruptions": {"planned": 2, "by_cause": {"planned_maintenance": 2}}})
    assert twice.rows() == [("planned_maintenance", 2)]
    assert causes_of({"interruptions": {"total": 3}}) is None


# ----- charts -----------------------------------------------------------------------------------------------


def test_waterfall_steps_from_wall_clock_to_productive():
    s = expected_summary()
    wall = 16 * 48.0
    fig = charts.goodput_waterfall(wall, s["job"]["losses_gpu_hours"], wall * s["job"]["ettr"])
    bar = fig.data[0]
    # the buckets named by their definitions (engine/analysis/definitions/goodput.py), long ones on two lines
    assert list(bar.x) == [
        "Wall clock",
        "Lost work",
        "Restart<br>overhead",
        "Checkpoint<br>writes",
        "Productive<br>training",
    ]
    assert list(bar.y) == pytest.approx([768.0, 38.6667, 24.0, 28.0, 677.3333], abs=1e-3)
    assert list(bar.base) == pytest.approx([0.0, 729.3333, 705.3333, 677.3333, 0.0], abs=1e-3)
    assert list(bar.marker.color)[1:4] == [
        LOSS_COLOURS["lost_work"],
        LOSS_COLOURS["restart"],
        LOSS_COLOURS["checkpoint"],
    ]
    assert "38.7 GPU-h<br>5.0%" in bar.text[1]
    # losses are 12% of the wall-clock: the axis starts above zero, and the title says where
    assert fig.layout.yaxis.range[0] == 490.0 and "starts at 490 GPU-h" in fig.layout.title.text


def test_waterfall_shows_what_the_losses_do_not_explain():
    fig = charts.goodput_waterfall(100.0, {"lost_work": 5.0, "restart": 5.0}, productive_gpu_hours=80.0)
    assert list(fig.data[0].x) == [
        "Wall clock",
        "Lost work",
        "Restart<br>overhead",
        "Other",
        "Productive<br>training",
    ]
    assert list(fig.data[0].y) == pytest.approx([100.0, 5.0, 5.0, 10.0, 80.0])
    # within rounding the residual is left out
    assert "Other" not in charts.goodput_waterfall(100.0, {"lost_work": 10.0}, 89.8).data[0].x


def test_axis_floor():
    assert charts.axis_floor(62913.0, 1588.0) == 59000.0
    assert charts.axis_floor(50.0, 50.0) == 0.0  # big losses: from zero


def test_where_the_time_went_draws_only_its_open_tab(store_dir):
    """The losses' waterfall by default; ETTR over time only once its tab is open (dashboard/lazy.py), from
    ?tab= as from a click; the headline and what is down above, drawn whichever is open."""
    make_store(store_dir, small_run())
    at = overview()
    assert not at.exception
    assert [t.label for t in at.tabs] == ["Losses", "ETTR over time"]

    def titles(at: AppTest) -> list[str]:
        """The titled charts' titles (the hosts by state have none)."""
        layouts = [json.loads(c.proto.spec)["layout"] for c in at.get("plotly_chart")]
        # (in bold, as Streamlit's chart theme sets a title: dashboard.charts.common.plain_theme)
        return [re.sub("</?b>", "", layout["title"]["text"]) for layout in layouts if "title" in layout]

    assert [t.split("<br>")[0] for t in titles(at)] == [
        "Flagship job: wall-clock to productive GPU-hours",
        "Interruptions by cause",
    ]
    at = overview(tab="ETTR over time")
    assert not at.exception
    assert titles(at) == ["ETTR over time", "Interruptions by cause"]
    assert any(c.value.startswith("Bars: ETTR in each ") for c in at.caption)
    assert metrics(at)["ETTR (goodput)"][0] == "88.2%" and down_table(at).height == 1
    at.session_state["tab"] = at.query_params["tab"] = "Losses"
    at.run()
    assert titles(at)[0].startswith("Flagship job")


def test_ettr_over_time_figure():
    timeline = ettr_timeline(job_attempts(), flagship_checkpoints(), "flagship", 3600.0, DURATION_S)
    marks = pl.DataFrame({"t_s": [36000.0, 96000.0], "cause": ["faulty_gpu", "planned_maintenance"]})
    fig = charts.ettr_over_time(timeline, STARTED_AT, marks, closed_form=0.9)
    bars, line, gpu, planned = fig.data
    assert len(bars.x) == 48 and bars.x[0] == datetime(2024, 3, 1) and bars.x[10] == datetime(2024, 3, 1, 10)
    assert line.y[-1] == pytest.approx(152400 / 172800)
    # interruptions counted per hour bucket in the strip under the chart (its own axis), by category
    assert (gpu.name, gpu.yaxis, list(gpu.x), list(gpu.y)) == (
        "GPU interruptions",
        "y2",
        [datetime(2024, 3, 1, 10)],
        [1],
    )
    assert (planned.marker.color, list(planned.x)) == (CATEGORY_COLOURS["Planned"], [datetime(2024, 3, 2, 2)])
    assert gpu.marker.color == CATEGORY_COLOURS["GPU"] and fig.layout.yaxis2.tickformat == "d"
    # a bucket spent restarting has ETTR 0, so the axis runs from 0 here ...
    assert min(v for v in bars.y if v is not None) == 0.0 and list(fig.layout.yaxis.range) == [0.0, 1.02]
    assert fig.layout.shapes[0].y0 == 0.9  # the closed form
    # ... and from a tenth below the worst bucket when every bucket made progress
    steady = pl.DataFrame({"t_s": [0.0, 3600.0], "ettr": [0.97, 0.93], "ettr_cumulative": [0.97, 0.95]})
    assert charts.ettr_over_time(steady, STARTED_AT).layout.yaxis.range[0] == pytest.approx(0.8)


def test_interruptions_by_cause_figure():
    counts = pl.DataFrame(
        {"cause": ["faulty_gpu", "gpu_hbm3", "network_switch_cable", "ssd"], "count": [3, 1, 2, 0]}
    )
    fig = charts.interruptions_by_cause(counts)
    assert [t.name for t in fig.data] == ["GPU", "Network"]  # ssd has no interruption: no bar
    gpu = fig.data[0]
    assert list(gpu.y) == ["GPU HBM3 memory", "Faulty GPU"] and list(gpu.x) == [1, 3]
    assert gpu.marker.color == CATEGORY_COLOURS["GPU"]
    assert fig.layout.xaxis.dtick == 1 and fig.layout.xaxis.tickformat == ",d"  # no half interruptions
    assert list(fig.layout.yaxis.categoryarray) == ["GPU HBM3 memory", "Network switch/cable", "Faulty GPU"]


def test_hosts_by_state_figure():
    """A bar a state, its name in words on the axis and its count outside the bar: a state of 3 hosts among
    60 reads as well as the biggest (the stacked bar squeezed "repair 3" into a rotated sliver)."""
    fig = charts.hosts_by_state(pl.DataFrame({"state": ["running", "repair", "spare"], "hosts": [50, 3, 0]}))
    (bars,) = fig.data
    assert (list(bars.y), list(bars.x), list(bars.marker.color)) == (
        ["Running a job", "In repair"],  # no bar for a state no host is in
        [50, 3],
        [state_colour("running"), state_colour("repair")],
    )
    assert (bars.orientation, bars.textposition, list(bars.text)) == ("h", "outside", ["50", "3"])
    assert list(fig.layout.yaxis.categoryarray) == ["In repair", "Running a job"]  # the biggest on top
    assert fig.layout.xaxis.range[1] > 50  # room for the count after the longest bar


def test_causes_figure_is_titled_by_what_it_counts():
    """A run without a flagship job has incidents, not interruptions (engine.analysis.definitions)."""
    counts = pl.DataFrame({"cause": ["faulty_gpu"], "count": [1]})
    flagship = charts.interruptions_by_cause(counts)
    assert (flagship.layout.title.text, flagship.layout.xaxis.title.text) == (
        "Interruptions by cause",
        "interruptions",
    )
    cluster = charts.interruptions_by_cause(counts, "incidents")
    assert (cluster.layout.title.text, cluster.layout.xaxis.title.text) == ("Incidents by cause", "incidents")
    assert (
        "incidents" in cluster.data[0].hovertemplate and "interruptions" not in cluster.data[0].hovertemplate
    )


@pytest.mark.parametrize(
    ("days", "bucket"), [(0.05, 300.0), (2, 1800.0), (7, 2 * 3600.0), (54, 12 * 3600.0), (365, 7 * 86400.0)]
)
def test_timeline_bucket_keeps_the_bars_readable(days, bucket):
    assert q.timeline_bucket(days * 86400) == bucket


def test_headline_of_replay_and_ingest_summaries():
    replay = {
        "jobs": 500,
        "gpus": 128,
        "days": 4.43,
        "pending": 3,
        "utilization": 0.302,
        "wait_mean_s": 5400.0,
        "wait_p95_s": 86400.0,
    }
    assert [(h.label, h.value, h.delta) for h in headline_of(replay)] == [
        ("Jobs", "500", "3 never started"),
        ("Utilisation (allocated)", "30.2%", None),
        ("Mean queue wait", "1 h 30 min", "p95 1 d"),
    ]
    ingest = {"hosts": 1, "gpus": 1, "samples": 23, "xid_events": 0}
    assert [(h.label, h.value) for h in headline_of(ingest)] == [("Metric values read", "23")]


def test_a_trace_without_flagship_job_has_no_ettr(store_dir):
    run = small_run(run_id="rep-20240301-000000-gggggg")
    run.kind, run.summary = "replay", {}
    run.tables["jobs"] = run.tables["jobs"].with_columns(kind=pl.lit("trace"))
    make_store(store_dir, run)
    assert q.flagship_job(run.run_id) is None
    at = overview()
    assert not at.exception
    assert metrics(at) == {
        "Jobs": ("3", None),
        "Incidents": ("5", None),
        "Telemetry samples": ("96", None),
        "XID events": ("4", None),
        "GPUs with XIDs": ("3", None),
    }
    assert any("has no flagship training job" in i.value for i in at.info)
    assert "Where the flagship job's time went" not in [h.value for h in at.subheader]


def test_a_run_spanning_no_time(store_dir):
    run = bare_run(run_id="ing-20240301-000000-hhhhhh")
    run.duration_s = 0.0
    run.tables["host_states"] = pl.DataFrame(
        {"host_id": [0], "state": ["healthy"], "start_s": [0.0], "end_s": [0.0]},
        schema_overrides={"host_id": pl.Int32},
    )
    make_store(store_dir, run)
    at = overview()
    assert not at.exception
    assert not at.slider
    assert any("spans no time" in i.value for i in at.info)
