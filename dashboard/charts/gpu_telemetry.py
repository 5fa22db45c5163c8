"""Telemetry: one GPU's temperature, power and utilisation panels, and a watched fleet's band of every GPU over a
window (from Prometheus)."""

from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.charts.common import as_time, time_axis

TDP_COLOUR = "#c92a2a"  # the TDP line on the power panel: a limit, not a state
TELEMETRY_PANELS = (("temp_c", "temperature (°C)"), ("power_w", "power (W)"), ("util_pct", "utilisation (%)"))
FEW_POINTS = 50  # below this many buckets a line gets its markers too: one scrape is one point, not nothing


def gpu_telemetry(samples: pl.DataFrame, started_at: datetime, tdp_w: float | None = None) -> go.Figure:
    """Temperature, power and utilisation over time (columns t_s and TELEMETRY_PANELS), one panel each."""
    fig = make_subplots(
        rows=len(TELEMETRY_PANELS),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.05,
        subplot_titles=[title for _, title in TELEMETRY_PANELS],
    )
    x = as_time(started_at, samples["t_s"].to_numpy())
    mode = "lines+markers" if samples.height < FEW_POINTS else "lines"
    for i, (column, title) in enumerate(TELEMETRY_PANELS, start=1):
        fig.add_trace(
            go.Scatter(x=x, y=samples[column].to_numpy(), mode=mode, name=title, showlegend=False),
            row=i,
            col=1,
        )
    if tdp_w:
        fig.add_hline(y=tdp_w, line_dash="dot", line_color=TDP_COLOUR, annotation_text="TDP", row=2, col=1)
    fig.update_layout(height=560, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    dated = {}
    if samples.height and samples["t_s"].max() - samples["t_s"].min() < 1.0:
        # one scrape: a minute around it, so the axis reads as a time, not as milliseconds around one point
        t = as_time(started_at, np.array([samples["t_s"].min() - 30.0, samples["t_s"].max() + 30.0]))
        dated = {"range": list(t), "tickformat": "%H:%M:%S"}
    return time_axis(fig, started_at, **dated)


# The fleet window's lines (engine.ingest.prometheus.FleetWindow.band): the spread across every GPU at each step.
FLEET_LINES = (
    ("max", "max", "#c92a2a"),
    ("p99", "99th percentile", "#e8590c"),
    ("p50", "median", "#1c7ed6"),
    ("min", "min", "#868e96"),
)


def fleet_band(band: pl.DataFrame, unit: str) -> go.Figure:
    """The fleet's spread over time: max, p99, median and min across GPUs at each step (columns t in epoch
    seconds, then FLEET_LINES' columns); the area between min and max is shaded."""
    x = np.datetime64("1970-01-01T00:00:00", "ms") + np.rint(band["t"].to_numpy() * 1000.0).astype(
        "timedelta64[ms]"
    )
    fig = go.Figure()
    for i, (column, name, colour) in enumerate(reversed(FLEET_LINES)):  # min first, so max fills down to it
        fig.add_trace(
            go.Scatter(
                x=x,
                y=band[column].to_numpy(),
                mode="lines",
                name=name,
                line={"color": colour, "width": 1.5 if column in ("max", "p50") else 1},
                fill="tonexty" if i else None,
                fillcolor="rgba(201, 42, 42, 0.06)",
                hovertemplate=f"{name}: %{{y:.1f}} {unit}<extra></extra>",
            )
        )
    fig.update_layout(
        height=340,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis_title=unit,
        legend={"orientation": "h", "y": 1.08, "traceorder": "reversed"},
        hovermode="x unified",
    )
    fig.update_xaxes(hoverformat="%Y-%m-%d %H:%M:%S UTC")
    return fig
