"""The lemons and repeat offenders: the lemon rule scored against the simulator's ground truth, and the incident
history of the hosts and GPUs that failed more than once (a click on one opens that GPU)."""

from datetime import datetime

import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import as_time, time_axis
from dashboard.text import plot, plot_expr
from engine.report.palette import (
    category_of,
    cause_colour,
    cause_label,
)

SYMBOLS = ("diamond", "circle", "square", "triangle-up", "x", "star", "cross", "hexagon")


def offender_history(incidents: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Each incident of the repeat offenders (columns label, t_s, cause) as a marker on the offender's row,
    in the order the rows come. A cause, named in words, takes its category's colour and a symbol of its own
    in that category."""
    fig = go.Figure()
    incidents = incidents.with_columns(plot_expr("label"))  # hostnames: Plotly text only as entities
    causes = sorted(incidents["cause"].unique().to_list(), key=lambda c: (category_of(c), c))
    rank_in_category: dict[str, int] = {}
    for cause in causes:
        symbol = SYMBOLS[rank_in_category.get(category_of(cause), 0) % len(SYMBOLS)]
        rank_in_category[category_of(cause)] = rank_in_category.get(category_of(cause), 0) + 1
        part = incidents.filter(pl.col("cause") == cause)
        gpu = part["gpu_id"].to_list() if "gpu_id" in part.columns else [None] * part.height
        fig.add_trace(
            go.Scatter(
                x=as_time(started_at, part["t_s"].to_numpy()),
                y=part["label"].to_list(),
                mode="markers",
                name=plot(cause_label(cause)),
                marker={"size": 11, "symbol": symbol, "color": cause_colour(cause)},
                customdata=gpu,  # what a click hands the page: the GPU to open (None: a host-level incident)
                text=[f"GPU {g}" if g is not None else "the host" for g in gpu],
                hovertemplate="%{y}<br>%{x}<br>%{text}<extra>%{fullData.name}</extra>",
            )
        )
    labels = incidents["label"].unique(maintain_order=True).to_list()
    fig.update_layout(height=max(200, 28 * len(labels) + 100), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=list(reversed(labels)))
    return time_axis(fig, started_at)


def clicked_gpu(selection) -> int | None:
    """The GPU id (customdata) of the first selected offender incident on a GPU, else None."""
    points = (
        (selection or {}).get("points", [])
        if isinstance(selection, dict)
        else getattr(selection, "points", [])
    )
    for point in points or []:
        if isinstance(point.get("customdata"), int | float):
            return int(point["customdata"])
    return None


# The lemon rule against the ground truth: bad hosts in the red of a fault, good ones in a neutral grey-blue, so
# the eye finds the bad hosts' bars; the flagged side of the threshold is shaded, not coloured, to keep both.
BAD_HOST_COLOUR = "#c92a2a"
GOOD_HOST_COLOUR = "#74a9cf"
FLAGGED_SHADE = "#fff3bf"


def lemon_truth(counts: pl.DataFrame, failures: int) -> go.Figure:
    """Bad and good hosts (ground truth) by their most repair-sending incidents in one window (columns
    most_in_window, bad, hosts from dashboard.queries.gpus.lemon_truth_counts), each as the share of its own
    group, so a few bad hosts among thousands still show; the bars' text gives the hosts. Hosts at or right of
    the dashed line (`failures`, repair.lemon_failures) meet the lemon rule: the bad hosts' share there is the
    rule's recall."""
    largest = max(int(counts["most_in_window"].max() or 0), failures)
    fig = go.Figure()
    fig.add_vrect(
        x0=failures - 0.5, x1=largest + 0.5, fillcolor=FLAGGED_SHADE, opacity=0.6, line_width=0, layer="below"
    )
    for bad, name, colour in ((True, "Bad hosts", BAD_HOST_COLOUR), (False, "Good hosts", GOOD_HOST_COLOUR)):
        part = counts.filter(pl.col("bad") == bad).sort("most_in_window")
        total = int(part["hosts"].sum())
        hosts = part["hosts"].to_list()
        fig.add_trace(
            go.Bar(
                x=part["most_in_window"].to_list(),
                y=[100.0 * n / total for n in hosts] if total else [],
                text=[f"{n:,}" for n in hosts],
                textposition="outside",
                name=f"{name} ({total:,})",
                marker_color=colour,
                hovertemplate=f"{name}: %{{text}} hosts (%{{y:.1f}}% of them)<br>"
                "at most %{x} incidents in one window<extra></extra>",
            )
        )
    fig.add_vline(
        x=failures - 0.5,
        line_dash="dash",
        line_color="#495057",
        annotation_text=f"lemon rule: {failures} or more are flagged",
        annotation_position="top right",
    )
    fig.update_layout(
        barmode="group",
        height=340,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "y": -0.25},
    )
    fig.update_xaxes(
        title="most repair-sending incidents of a host in one window",
        range=[-0.5, largest + 0.5],
        dtick=1,
        tickformat=",d",
    )
    fig.update_yaxes(title="share of the group's hosts (%)", rangemode="tozero", range=[0, 115])
    return fig
