"""GPUs charts: health counts, XID counts (in total, over time, or event by event for a short observed run), ECC
trends. The health grid is drawn on a canvas from dashboard.charts.health_grid's data; the lemons and the repeat
offenders' history are in dashboard.charts.lemons, one GPU's telemetry and a watched fleet's band in
dashboard.charts.gpu_telemetry.

Every colour and label comes from engine.report.palette, as on the other pages and in the HTML export: a state, a
cause or an XID code has one colour and one name in words on every chart. XID codes are categories, never a
numeric axis ("20034" is a code, not 20.034k), and counts take whole-number ticks (dashboard.charts.common.
count_axis).
"""

from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import as_time, count_axis, hover_time, time_axis

# named here too for the tests that read them through this module (tests/test_charts_gpus.py,
# tests/test_charts_pages.py, tests/test_charts_unknown_start.py, tests/test_page_gpus*.py)
from dashboard.charts.gpu_telemetry import fleet_band as fleet_band
from dashboard.charts.gpu_telemetry import gpu_telemetry as gpu_telemetry
from dashboard.charts.lemons import clicked_gpu as clicked_gpu
from dashboard.charts.lemons import lemon_truth as lemon_truth
from dashboard.charts.lemons import offender_history as offender_history
from dashboard.format import fmt_duration
from dashboard.text import plot
from engine.analysis.definitions import definition
from engine.reference import CAUSES, PLANNED_CAUSE, XID_BY_CODE
from engine.report.palette import (
    GPU_FAILED_COLOUR,
    GPU_FAILED_LABEL,
    HOST_STATE_COLOURS,
    HOST_STATE_LABELS,
    OTHER_COLOUR,
    UNKNOWN_STATE_COLOUR,
    UNKNOWN_STATE_LABEL,
    cause_label,
    xid_colour,
    xid_label,
)
from engine.store.schema import HOST_STATES

# A GPU cell's state: its host's, unless the GPU itself has an unrepaired incident ("failed"); "unknown" when
# no host_states interval covers the moment (observed runs).
GPU_STATE_ORDER: tuple[str, ...] = (*HOST_STATES, "failed", "unknown")
GPU_STATE_COLOURS: dict[str, str] = {
    **HOST_STATE_COLOURS,
    "failed": GPU_FAILED_COLOUR,
    "unknown": UNKNOWN_STATE_COLOUR,
}
GPU_STATE_LABELS: dict[str, str] = {
    **HOST_STATE_LABELS,
    "failed": GPU_FAILED_LABEL,
    "unknown": UNKNOWN_STATE_LABEL,
}


def gpu_state_label(state: str) -> str:
    return GPU_STATE_LABELS.get(state, state)


def gpu_state_text(column: str | pl.Expr) -> pl.Expr:
    """gpu_state_label for a column (a null state is "unknown")."""
    x = (pl.col(column) if isinstance(column, str) else column).cast(pl.String).fill_null("unknown")
    return x.replace_strict(GPU_STATE_LABELS, default=x, return_dtype=pl.String)


def xid_label_text(column: str | pl.Expr) -> pl.Expr:
    """engine.report.palette.xid_label for a column: "79 GPU_HAS_FALLEN_OFF_THE_BUS", a code the catalogue
    lacks bare."""
    x = pl.col(column) if isinstance(column, str) else column
    labels = {code: xid_label(code) for code in XID_BY_CODE}
    return (
        pl.when(x.is_not_null())
        .then(x.cast(pl.Int64).replace_strict(labels, default=x.cast(pl.String), return_dtype=pl.String))
        .name.keep()
    )


_CAUSE_LABELS = {c.cause: cause_label(c.cause) for c in (*CAUSES, PLANNED_CAUSE)}


def causes_text(column: str | pl.Expr) -> pl.Expr:
    """A list column of cause keys as the list of their labels, engine.report.palette.cause_label element by element
    (text_exprs.cause_label_text keeps its column's name, which a list element has none of)."""
    x = pl.col(column) if isinstance(column, str) else column
    key = pl.element().cast(pl.String)
    words = key.str.replace_all("_", " ", literal=True)
    readable = words.str.head(1).str.to_uppercase() + words.str.slice(1).str.to_lowercase()
    return x.list.eval(key.replace_strict(_CAUSE_LABELS, default=readable, return_dtype=pl.String))


def health_counts(counts: pl.DataFrame) -> go.Figure:
    """GPUs by state (columns state, gpus) as one bar per state, named in words, in the state colours."""
    states = counts["state"].fill_null("unknown").to_list()
    fig = go.Figure(
        go.Bar(
            x=[gpu_state_label(s) for s in states],
            y=counts["gpus"].to_list(),
            text=counts["gpus"].to_list(),
            marker_color=[GPU_STATE_COLOURS.get(s, OTHER_COLOUR) for s in states],
        )
    )
    fig.update_layout(height=280, margin={"l": 10, "r": 10, "t": 10, "b": 10})
    fig.update_xaxes(type="category")
    fig.update_yaxes(title="GPUs", **count_axis(max(counts["gpus"].to_list(), default=0)))
    return fig


def xid_counts(counts: pl.DataFrame) -> go.Figure:
    """XID events by code (columns xid, events), most first: one bar per code in its palette colour, the code
    and its name as a category label."""
    codes = counts["xid"].to_list()
    fig = go.Figure(
        go.Bar(
            x=counts["events"].to_list(),
            y=[xid_label(x) for x in codes],
            orientation="h",
            text=counts["events"].to_list(),
            marker_color=[xid_colour(x) for x in codes],
            hovertemplate="%{y}<br>%{x:,d} events<extra></extra>",
        )
    )
    fig.update_layout(height=max(200, 28 * counts.height + 80), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    fig.update_xaxes(
        title=definition("xid_events").label, **count_axis(max(counts["events"].to_list(), default=0))
    )
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


def xid_timeline(counts: pl.DataFrame, started_at: datetime, window_s: float) -> go.Figure:
    """XID events per window (columns t_s, xid, count from engine xid_counts) as bars stacked by code, the
    code with the most events first, each code in its palette colour."""
    fig = go.Figure()
    totals = (
        counts.group_by("xid").agg(pl.col("count").sum()).sort(["count", "xid"], descending=[True, False])
    )
    for xid in totals["xid"].to_list():
        part = counts.filter(pl.col("xid") == xid)
        fig.add_trace(
            go.Bar(
                x=as_time(started_at, part["t_s"].to_numpy() + window_s / 2),
                y=part["count"].to_list(),
                width=window_s * 1000 * 0.9,
                name=xid_label(xid),
                marker_color=xid_colour(xid),
                hovertemplate="%{x}<br>%{y:,d} events<extra>%{fullData.name}</extra>",
            )
        )
    per_window = counts.group_by("t_s").agg(pl.col("count").sum())["count"].max() if counts.height else 0
    fig.update_layout(
        barmode="stack",
        height=320,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        legend={"orientation": "h", "y": -0.2},
    )
    fig.update_yaxes(
        title=f"{definition('xid_events').label} per {fmt_duration(window_s)}", **count_axis(per_window)
    )
    return time_axis(fig, started_at)


def xid_strip(events: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Each XID event (columns t_s, xid) as a mark at its time on its code's row: for an observed run too
    short for counts per window (one kernel log of a few seconds), where bars would say nothing."""
    fig = go.Figure()
    order = (
        events.group_by("xid")
        .agg(pl.len().alias("n"))
        .sort(["n", "xid"], descending=[True, False])["xid"]
        .to_list()
    )
    for xid in order:
        part = events.filter(pl.col("xid") == xid)
        fig.add_trace(
            go.Scatter(
                x=as_time(started_at, part["t_s"].to_numpy()),
                y=[xid_label(xid)] * part.height,
                mode="markers",
                name=xid_label(xid),
                marker={"size": 22, "symbol": "line-ns-open", "line": {"width": 3}, "color": xid_colour(xid)},
                hovertemplate=hover_time(started_at, "milliseconds") + "<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_layout(
        height=max(180, 40 * len(order) + 100), margin={"l": 10, "r": 10, "t": 10, "b": 10}, showlegend=False
    )
    if events.height:  # a margin either side, so the first and last marks are not cut by the frame
        first, last = events["t_s"].min(), events["t_s"].max()
        pad = max(last - first, 1.0) * 0.05
        fig.update_xaxes(range=list(as_time(started_at, np.array([first - pad, last + pad]))))
    fig.update_yaxes(
        type="category", categoryorder="array", categoryarray=[xid_label(x) for x in reversed(order)]
    )
    return time_axis(fig, started_at, "milliseconds", tickformat="%H:%M:%S", title="time (UTC)")


def ecc_trend(trend: pl.DataFrame, labels: dict[int, str], started_at: datetime) -> go.Figure:
    """Single-bit (top panel) and double-bit (bottom) ECC counts over time (columns gpu_id, t_s, ecc_sbe,
    ecc_dbe), a line per GPU named by `labels`. Two y axes on one x axis, laid out by hand: make_subplots
    costs a tenth of a second, a tenth of the page's budget."""
    fig = go.Figure()
    palette = (
        "#1c7ed6",
        "#e8590c",
        "#2f9e44",
        "#c92a2a",
        "#862e9c",
        "#f08c00",
        "#0c8599",
        "#5c940d",
        "#d6336c",
        "#495057",
    )
    for i, gpu in enumerate(trend["gpu_id"].unique(maintain_order=True).to_list()):
        part = trend.filter(pl.col("gpu_id") == gpu)
        x = as_time(started_at, part["t_s"].to_numpy())
        style = {"color": palette[i % len(palette)]}
        name = plot(labels.get(gpu, f"GPU {gpu}"))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["ecc_sbe"].to_list(),
                mode="lines",
                name=name,
                legendgroup=name,
                line=style,
                yaxis="y",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["ecc_dbe"].to_list(),
                mode="lines",
                name=name,
                legendgroup=name,
                line=style,
                showlegend=False,
                yaxis="y2",
            )
        )
    fig.update_layout(
        height=460,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis={
            "domain": [0.55, 1.0],
            "title": "single-bit (corrected)",
            **count_axis(trend["ecc_sbe"].max()),
        },
        yaxis2={
            "domain": [0.0, 0.45],
            "title": "double-bit (uncorrectable)",
            **count_axis(trend["ecc_dbe"].max()),
        },
    )
    return time_axis(fig, started_at, precision="minutes")
