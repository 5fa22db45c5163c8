"""Incidents chart builders, exact on small frames: marker sizes, the timeline, counts by cause (from
engine.analysis.incidents.summary_counts), a day's count, and one incident's chain as a Gantt."""

from datetime import UTC, datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest

from dashboard.charts import incidents as charts
from engine.analysis.incidents import CHAIN_SCHEMA, summary_counts
from engine.report.palette import CATEGORY_COLOURS

STARTED = datetime(2024, 3, 1, tzinfo=UTC)


def frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "incident_id": [1, 2, 3, 4],
            "t_s": [3600.0, 7200.0, 90000.0, 100000.0],
            "cause": ["faulty_gpu", "network_switch_cable", "planned_maintenance", "faulty_gpu"],
            "category": ["GPU", "Network", "Planned", "GPU"],
            "planned": [False, False, True, False],
            "gpu_hours_lost": [16.0, 4.0, 0.0, None],
            "job_ids": [["a"], ["b"], ["a"], []],
        }
    )


def test_marker_area_follows_cost():
    sizes = charts.marker_sizes(np.array([16.0, 4.0, 0.0, np.nan]))
    # area proportional to cost: the diameter grows with its square root, from MIN_SIZE to MAX_SIZE
    assert sizes == pytest.approx([30.0, 6.0 + 24.0 * 0.5, 6.0, 6.0])
    assert charts.marker_sizes(np.zeros(3)).tolist() == [6.0, 6.0, 6.0]


def test_timeline_one_trace_per_category_with_ids_to_click():
    fig = charts.timeline(frame(), STARTED)
    assert [t.name for t in fig.data] == ["GPU", "Network", "Planned"]
    gpu = fig.data[0]
    assert gpu.customdata.tolist() == [1, 4] and list(gpu.y) == [
        "Faulty GPU",
        "Faulty GPU",
    ]  # causes in words
    assert gpu.marker.color == CATEGORY_COLOURS["GPU"] and gpu.marker.size.tolist() == [30.0, 6.0]
    assert str(gpu.x[0]) == "2024-03-01T01:00:00.000"
    assert charts.clicked_incident({"points": [{"customdata": 4}]}) == 4
    assert charts.clicked_incident({"points": []}) is None and charts.clicked_incident(None) is None


def test_by_cause_from_summary_counts_coloured_by_category():
    counts = summary_counts(frame(), 2.0)["by_cause"]
    assert "category" not in counts.columns  # the chart finds each cause's category itself
    fig = charts.by_cause(counts)
    bar = fig.data[0]
    # drawn bottom up: read top down, the largest first, then by name (the table's order)
    assert list(bar.y) == ["Planned maintenance", "Network switch/cable", "Faulty GPU"]  # in words
    assert fig.layout.xaxis.tickformat == ",d"  # no half interruptions on the axis
    assert list(bar.x) == [1, 1, 2]
    assert list(bar.marker.color) == [
        CATEGORY_COLOURS["Planned"],
        CATEGORY_COLOURS["Network"],
        CATEGORY_COLOURS["GPU"],
    ]


def test_per_day_stacks_planned_on_unexpected():
    days = summary_counts(frame(), 2.0)["days"]
    fig = charts.per_day(days, STARTED)
    assert [t.name for t in fig.data] == ["unexpected", "planned"] and fig.layout.barmode == "stack"
    assert list(fig.data[0].y) == [2, 1] and list(fig.data[1].y) == [0, 1]
    assert [str(x) for x in fig.data[0].x] == ["2024-03-01T00:00:00.000", "2024-03-02T00:00:00.000"]


def chain() -> pl.DataFrame:
    rows = [
        (1, 1000.0, "checkpoint", "j: restarts from here"),
        (2, 1600.0, "occurred", "faulty_gpu"),
        (3, 1660.0, "detected", "XID 79"),
        (4, 1660.0, "job interrupted", "j: attempt 1 ended"),
        (5, 3460.0, "job running again", "j: attempt 2"),
        (6, 5200.0, "repair: repair", "h1"),
        (7, 16000.0, "host returned", "h1 back as healthy"),
    ]
    return pl.DataFrame(rows, schema=CHAIN_SCHEMA, orient="row")


def test_chain_bars_in_hours_from_the_fault():
    bars = charts.chain_bars(chain())
    assert bars["label"].to_list()[:2] == ["1 · checkpoint", "2 · occurred"]
    # a step lasts until the next one; the checkpoint lies before the fault (the work lost)
    assert bars["start_h"].to_list() == pytest.approx(
        [-600 / 3600, 0.0, 60 / 3600, 60 / 3600, 1860 / 3600, 3600 / 3600, 14400 / 3600]
    )
    assert bars["hours"].to_list() == pytest.approx(
        [600 / 3600, 60 / 3600, 0.0, 1800 / 3600, 1740 / 3600, 10800 / 3600, 0.0]
    )


def test_chain_figure_is_a_gantt_in_story_order():
    fig = charts.chain_figure(chain())
    bar, marks = fig.data
    assert isinstance(bar, go.Bar) and bar.orientation == "h" and isinstance(marks, go.Scatter)
    assert list(bar.y) == charts.chain_bars(chain())["label"].to_list()
    assert list(bar.base) == pytest.approx(list(marks.x))
    assert list(fig.layout.yaxis.categoryarray) == list(bar.y) and fig.layout.yaxis.autorange == "reversed"
    colours = list(bar.marker.color)
    assert colours[1] == charts.CHAIN_COLOURS["occurred"] and colours[5] == charts.CHAIN_COLOURS["repair"]
    assert fig.layout.xaxis.title.text == "hours after the fault"


def test_a_chain_without_occurred_starts_at_its_first_step():
    one = chain().filter(pl.col("what") != "occurred")
    assert charts.chain_bars(one)["start_h"][0] == 0.0
    assert charts.chain_bars(chain().head(0)).height == 0


def test_cause_counts_are_written_level_inside_their_bars():
    counts = pl.DataFrame({"cause": ["gpu_hbm3", "network_switch_cable"], "interruptions": [1, 2]})
    assert charts.by_cause(counts).data[0].textangle == 0


def test_a_few_interruptions_get_a_tick_at_every_whole_number():
    counts = pl.DataFrame({"cause": ["gpu_hbm3", "network_switch_cable"], "interruptions": [1, 3]})
    axis = charts.by_cause(counts).layout.xaxis
    assert (axis.dtick, axis.tickformat, axis.rangemode) == (1, ",d", "tozero")
