"""The planner's chart builders, exact on small frames: loss waterfall, Monte-Carlo spread, sweep heat map and
band, and the Compare page's ETTR-over-time lines."""

import math

import polars as pl
import pytest

from dashboard.charts import compare, planner

LOSSES = pl.DataFrame(
    {
        "category": ["lost_work", "restart", "checkpoint", "waiting_for_spares"],
        "sim_gpu_hours": [10.0, 20.0, 1.0, 5.0],
        "sim_usd": [25.0, 50.0, 2.5, 12.5],
        "cf_gpu_hours": [12.0, 18.0, 1.5, 0.0],
        "cf_usd": [30.0, 45.0, 3.75, 0.0],
    }
)


def test_waterfall_steps_up_to_goodput_lost():
    fig = planner.loss_waterfall(LOSSES)
    sim, cf = fig.data
    assert (sim.name, cf.name) == ("simulated", "closed form")
    assert list(sim.x) == [
        "Lost work",
        "Restart overhead",
        "Checkpoint writes",
        "Waiting for spare hosts",
        "Goodput lost",
    ]  # the ledger's labels (engine.analysis.definitions), the total its own
    assert list(sim.y) == [10.0, 20.0, 1.0, 5.0, 0.0] and list(cf.y) == [12.0, 18.0, 1.5, 0.0, 0.0]
    assert list(sim.measure) == ["relative"] * 4 + ["total"]
    assert list(sim.text) == [
        "10 GPU-h",
        "20 GPU-h",
        "1 GPU-h",
        "5 GPU-h",
        "36 GPU-h",
    ]  # dollars in the hover
    assert sim.customdata[0] == "$25" and sim.customdata[-1] == "$90"
    assert cf.text[2] == "1.5 GPU-h" and cf.text[-1] == "31.5 GPU-h" and cf.customdata[-1] == "$78.8"
    assert fig.layout.yaxis.title.text == "GPU-hours"


def test_waterfall_shows_the_network_slowdown_apart_from_goodput_lost():
    slowed = pl.concat(
        [
            LOSSES,
            pl.DataFrame(
                {
                    "category": ["network_slowdown"],
                    "sim_gpu_hours": [7.0],
                    "sim_usd": [17.5],
                    "cf_gpu_hours": [6.0],
                    "cf_usd": [15.0],
                }
            ),
        ]
    )
    sim, _ = planner.loss_waterfall(slowed).data
    assert list(sim.x)[-2:] == ["Goodput lost", "Network slowdown"]
    assert list(sim.measure)[-2:] == ["total", "absolute"]  # from zero: not stacked on goodput lost
    assert sim.text[-2] == "36 GPU-h" and sim.text[-1] == "7 GPU-h"


def test_waterfall_labels_wrap_and_never_tilt():
    fig = planner.loss_waterfall(LOSSES)
    assert fig.layout.xaxis.tickangle == 0
    assert list(fig.layout.xaxis.tickvals) == list(fig.data[0].x)
    assert all(len(line) <= 18 for text in fig.layout.xaxis.ticktext for line in text.split("<br>"))
    assert planner.tick_text("Waiting for spare hosts") == "Waiting for spare<br>hosts"


def test_monte_carlo_histogram_marks_mean_and_band():
    fig = planner.monte_carlo_histogram([0.9, 0.92, 0.94], (0.92, 0.902, 0.938))
    assert list(fig.data[0].x) == [0.9, 0.92, 0.94]
    rect, line = fig.layout.shapes
    assert (rect.x0, rect.x1) == (0.902, 0.938) and (line.x0, line.x1) == (0.92, 0.92)


def test_heatmap_in_minutes_with_the_young_daly_curve():
    means = [[0.90, 0.95], [0.80, None]]  # rows: y values (restart 5 min, 10 min); columns: x (10, 20 min)
    fig = planner.sweep_heatmap(
        means,
        [600.0, 1200.0],
        [300.0, 600.0],
        x_title="Checkpoint interval",
        y_title="Restart overhead",
        x_duration=True,
        y_duration=True,
        young_daly_s=[900.0, math.inf],
    )
    heat, curve = fig.data
    assert list(heat.x) == [10.0, 20.0] and list(heat.y) == [5.0, 10.0]
    assert [list(r) for r in heat.z] == [[0.90, 0.95], [0.80, None]]
    assert heat.text[1][1] == "–" and heat.text[0][1] == "95.0%"
    assert list(curve.x) == [15.0] and list(curve.y) == [5.0]  # the row without failures has no optimum
    assert (
        list(fig.layout.xaxis.range) == [5.0, 25.0]
        and fig.layout.xaxis.title.text == "Checkpoint interval (min)"
    )
    assert list(fig.layout.yaxis.range) == [2.5, 12.5]


def test_heatmap_with_the_interval_on_y():
    fig = planner.sweep_heatmap(
        [[0.9, 0.8], [0.95, 0.85]],
        [1.0, 4.0],
        [600.0, 1200.0],
        x_title="Failures",
        y_title="Checkpoint interval",
        x_duration=False,
        y_duration=True,
        young_daly_s=[1200.0, 600.0],
        young_daly_on="y",
    )
    curve = fig.data[1]
    assert list(curve.x) == [1.0, 4.0] and list(curve.y) == [20.0, 10.0]


def test_heatmap_without_a_curve_and_plain_numbers():
    fig = planner.sweep_heatmap(
        [[0.5, 0.6]],
        [1.0, 4.0],
        [2.0],
        x_title="Spares",
        y_title="Technicians",
        x_duration=False,
        y_duration=False,
    )
    assert len(fig.data) == 1 and list(fig.data[0].x) == [1.0, 4.0]
    assert fig.layout.yaxis.range is None and fig.layout.xaxis.title.text == "Spares"


def test_line_with_band_and_closed_form():
    fig = planner.sweep_line(
        [600.0, 1200.0],
        [0.9, 0.95],
        [0.88, 0.93],
        [0.92, 0.97],
        x_title="Checkpoint interval",
        x_duration=True,
        closed_form=[0.91, 0.94],
    )
    upper, lower, mean, cf = fig.data
    assert list(upper.x) == [10.0, 20.0] and list(upper.y) == [0.92, 0.97]
    assert list(lower.y) == [0.88, 0.93] and lower.fill == "tonexty"
    assert list(mean.y) == [0.9, 0.95] and list(cf.y) == [0.91, 0.94] and cf.line.dash == "dash"


def test_compare_ettr_over_time_one_line_per_run():
    timeline = pl.DataFrame(
        {"run": ["a", "a", "b"], "day": [0.5, 1.0, 1.0], "ettr_cumulative": [0.8, 0.9, 0.7]}
    )
    fig = compare.ettr_over_time(timeline, ["b", "a"])
    assert [t.name for t in fig.data] == ["b", "a"]
    assert list(fig.data[1].x) == [0.5, 1.0] and list(fig.data[1].y) == pytest.approx([0.8, 0.9])


def test_ettr_curve_reads_intervals_as_durations_under_its_registered_label():
    fig = planner.ettr_curve(
        gpus=16384,
        rate_per_1000_node_days=3.79,
        checkpoint_interval_s=300.0,
        checkpoint_write_s=3.28,
        restart_overhead_s=600.0,
    )
    curve, chosen, optimum = fig.data
    assert curve.name == "Closed-form ETTR" and fig.layout.yaxis.title.text == "Closed-form ETTR"
    assert list(fig.layout.xaxis.ticktext) == ["30 s", "1 min", "2 min", "5 min", "10 min", "30 min"]
    assert list(fig.layout.xaxis.tickvals) == [0.5, 1.0, 2.0, 5.0, 10.0, 30.0]  # minutes on the log axis
    assert optimum.text[0] == "4.5 min" and chosen.x[0] == 5.0
