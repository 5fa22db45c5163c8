"""GPUs charts: health counts, XID counts, the history of repeat offenders, one GPU's telemetry."""

from datetime import datetime

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.charts.common import category_of, cause_color
from dashboard.charts.jobs import as_time
from dashboard.charts.racks import STATE_COLOURS
from engine.reference import XIDS

FAILED_COLOUR = "#c92a2a"
GPU_STATE_COLOURS = {**STATE_COLOURS, "failed": FAILED_COLOUR}
XID_NAMES = {x.xid: x.mnemonic for x in XIDS}
FATAL_XIDS = {x.xid for x in XIDS if x.fatal}


def health_counts(counts: pl.DataFrame) -> go.Figure:
    """GPUs by state (columns state, gpus) as one bar per state in the state colours."""
    fig = go.Figure(go.Bar(
        x=counts["state"].to_list(), y=counts["gpus"].to_list(), text=counts["gpus"].to_list(),
        marker_color=[GPU_STATE_COLOURS.get(s, "#adb5bd") for s in counts["state"].to_list()],
    ))
    fig.update_layout(height=280, margin={"l": 10, "r": 10, "t": 10, "b": 10}, yaxis_title="GPUs")
    return fig


def xid_counts(counts: pl.DataFrame) -> go.Figure:
    """XID events by code (columns xid, events): fatal codes red, the others grey; labels name the code."""
    labels = [f"{x} {XID_NAMES.get(x, '')}".strip() for x in counts["xid"].to_list()]
    fig = go.Figure(go.Bar(
        x=counts["events"].to_list(), y=labels, orientation="h", text=counts["events"].to_list(),
        marker_color=[FAILED_COLOUR if x in FATAL_XIDS else "#868e96" for x in counts["xid"].to_list()],
    ))
    fig.update_layout(height=max(200, 28 * counts.height + 80), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis_title="events")
    fig.update_yaxes(autorange="reversed")
    return fig


SYMBOLS = ("diamond", "circle", "square", "triangle-up", "x", "star", "cross", "hexagon")


def offender_history(incidents: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Each incident of the repeat offenders (columns label, t_s, cause) as a marker on the offender's row,
    in the order the rows come. A cause takes its category's colour and a symbol of its own in that category."""
    fig = go.Figure()
    causes = sorted(incidents["cause"].unique().to_list(), key=lambda c: (category_of(c), c))
    rank_in_category: dict[str, int] = {}
    for cause in causes:
        symbol = SYMBOLS[rank_in_category.get(category_of(cause), 0) % len(SYMBOLS)]
        rank_in_category[category_of(cause)] = rank_in_category.get(category_of(cause), 0) + 1
        part = incidents.filter(pl.col("cause") == cause)
        gpu = part["gpu_id"].to_list() if "gpu_id" in part.columns else [None] * part.height
        fig.add_trace(go.Scatter(
            x=as_time(started_at, part["t_s"].to_numpy()), y=part["label"].to_list(), mode="markers",
            name=cause, marker={"size": 11, "symbol": symbol, "color": cause_color(cause)},
            customdata=gpu,  # what a click hands the page: the GPU to open (None: a host-level incident)
            text=[f"GPU {g}" if g is not None else "the host" for g in gpu],
            hovertemplate="%{y}<br>%{x}<br>%{text}<extra>%{fullData.name}</extra>",
        ))
    labels = incidents["label"].unique(maintain_order=True).to_list()
    fig.update_layout(height=max(200, 28 * len(labels) + 100), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(labels)))
    return fig


def clicked_gpu(selection) -> int | None:
    """The GPU id (customdata) of the first selected offender incident on a GPU, else None."""
    points = (selection or {}).get("points", []) if isinstance(selection, dict) else getattr(selection, "points", [])
    for point in points or []:
        if isinstance(point.get("customdata"), int | float):
            return int(point["customdata"])
    return None


TELEMETRY_PANELS = (("temp_c", "temperature (°C)"), ("power_w", "power (W)"), ("util_pct", "utilisation (%)"))


def gpu_telemetry(samples: pl.DataFrame, started_at: datetime, tdp_w: float | None = None) -> go.Figure:
    """Temperature, power and utilisation over time (columns t_s and TELEMETRY_PANELS), one panel each."""
    fig = make_subplots(rows=len(TELEMETRY_PANELS), cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        subplot_titles=[title for _, title in TELEMETRY_PANELS])
    x = as_time(started_at, samples["t_s"].to_numpy())
    for i, (column, title) in enumerate(TELEMETRY_PANELS, start=1):
        fig.add_trace(go.Scatter(x=x, y=samples[column].to_numpy(), mode="lines", name=title,
                                 showlegend=False), row=i, col=1)
    if tdp_w:
        fig.add_hline(y=tdp_w, line_dash="dot", line_color=FAILED_COLOUR, annotation_text="TDP", row=2, col=1)
    fig.update_layout(height=560, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return fig
