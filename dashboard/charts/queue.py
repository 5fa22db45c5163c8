"""The Jobs page's queue charts: queued jobs and the GPUs they ask for over time, how long jobs waited (percentiles
and a histogram) and why, and the cluster's allocation, time out of service and fragmentation."""

from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.charts.common import as_time, count_axis, time_axis
from dashboard.format import fmt_duration
from engine.report.palette import state_colour


def queue_over_time(queue: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Queued jobs (left axis) and the GPUs they ask for (right axis) per bucket: `queue` has t_s (bucket
    start), queued_jobs, queued_gpus; steps, since each value holds for its whole bucket."""
    x = as_time(started_at, queue["t_s"].to_numpy())
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(
        go.Scatter(
            x=x,
            y=queue["queued_jobs"].to_list(),
            name="queued jobs",
            line_shape="hv",
            line={"color": "#1f77b4"},
        ),
        secondary_y=False,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=queue["queued_gpus"].to_list(),
            name="GPUs asked for",
            line_shape="hv",
            line={"color": "#ff7f0e", "dash": "dot"},
        ),
        secondary_y=True,
    )
    fig.update_yaxes(title_text="jobs waiting (mean)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="GPUs asked for", rangemode="tozero", secondary_y=True)
    fig.update_layout(
        height=300,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        hovermode="x unified",
        legend={"orientation": "h", "y": 1.12},
    )
    return time_axis(fig, started_at, precision="minutes")


def wait_percentiles(waits_s: np.ndarray) -> tuple[float, float]:
    """p50 and p95 of the waits in seconds (linear interpolation, like DuckDB's quantile_cont)."""
    if len(waits_s) == 0:
        return float("nan"), float("nan")
    p50, p95 = np.percentile(np.asarray(waits_s, dtype=float), [50, 95])
    return float(p50), float(p95)


# Wait bins in minutes, at the steps an operator thinks in: "no wait" (under a minute), then 1, 5, 15, 30 min,
# 1, 2, 6, 12 h, 1, 2, 7, 30 days, the last bin open-ended: a queue of seconds and one of weeks on one axis.
WAIT_EDGES_MIN = np.array([0.0, 1, 5, 15, 30, 60, 120, 360, 720, 1440, 2880, 10080, 43200])


def wait_histogram(waits_s: np.ndarray) -> go.Figure:
    """Jobs per wait bin (WAIT_EDGES_MIN) with the count, p50 and p95 in the title."""
    minutes = np.asarray(waits_s, dtype=float) / 60.0
    edges = WAIT_EDGES_MIN
    index = np.clip(np.searchsorted(edges, minutes, side="right") - 1, 0, len(edges) - 1)
    counts = np.bincount(index, minlength=len(edges))
    labels = ["< 1 min"] + [
        f"{_minutes(a)}–{_minutes(b)}" for a, b in zip(edges[1:-1], edges[2:], strict=True)
    ]
    labels.append(f"≥ {_minutes(edges[-1])}")
    p50, p95 = wait_percentiles(waits_s)
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=counts.tolist(),
            marker_color="#1f77b4",
            name="jobs",
            hovertemplate="%{x}: %{y} jobs<extra></extra>",
        )
    )
    title = (
        "no job started"
        if len(minutes) == 0
        else (f"{len(minutes):,} jobs started · p50 {fmt_duration(p50)} · p95 {fmt_duration(p95)}")
    )
    fig.update_layout(
        title={"text": title, "font": {"size": 13}},
        height=300,
        bargap=0.05,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis_title="wait before a first start",
        yaxis={"title": "jobs", **count_axis(int(counts.max()) if counts.size else None)},
    )
    return fig


def _minutes(m: float) -> str:
    """A bin edge in minutes, short: "5 min", "6 h", "7 d"."""
    if m < 60:
        return f"{m:g} min"
    if m < 1440:
        return f"{m / 60:g} h"
    return f"{m / 1440:g} d"


def why_waited(reasons: pl.DataFrame) -> go.Figure:
    """Jobs that waited by the reason each waited longest for, the most jobs on top: `reasons` is
    dashboard.queries.jobs_table.why_waited (label, colour, jobs, waited_s, never_started)."""
    ordered = reasons.reverse()  # Plotly draws the first bar at the bottom
    fig = go.Figure(
        go.Bar(
            x=ordered["jobs"].to_list(),
            y=ordered["label"].to_list(),
            orientation="h",
            marker_color=ordered["colour"].to_list(),
            text=[f"{n:,} jobs" for n in ordered["jobs"].to_list()],
            textposition="auto",
            customdata=np.column_stack(
                [
                    [fmt_duration(w) for w in ordered["waited_s"].to_list()],
                    ordered["never_started"].to_numpy(),
                ]
            ),
            hovertemplate="%{y}: %{x:,} jobs<br>%{customdata[0]} of waits before a first start, "
            "%{customdata[1]} never started<extra></extra>",
        )
    )
    fig.update_layout(
        height=80 + 40 * max(ordered.height, 1),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={
            "title": "jobs (each under its longest reason)",
            **count_axis(ordered["jobs"].max() if ordered.height else None),
        },
    )
    return fig


def utilisation_and_fragmentation(util: pl.DataFrame, frag: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Two panels sharing the time axis: allocated and out-of-service GPUs as % of all GPUs (`util`: t_s,
    busy_gpus, unavailable_gpus, total_gpus), in the palette's colours of a running and a down host, and
    fragmentation, the % of free GPUs stranded on partly used hosts
    (`frag`: t_s, fragmentation)."""
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        row_heights=[0.6, 0.4],
        subplot_titles=("GPUs allocated and out of service", "Fragmentation of free GPUs"),
    )
    total = util["total_gpus"].cast(pl.Float64).replace(0.0, None)
    x = as_time(started_at, util["t_s"].to_numpy())
    fig.add_trace(
        go.Scatter(
            x=x,
            y=(util["busy_gpus"] / total * 100).to_list(),
            name="allocated to a running attempt",
            line_shape="hv",
            stackgroup="gpus",
            line={"color": state_colour("running")},
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=(util["unavailable_gpus"] / total * 100).to_list(),
            name="out of service",
            line_shape="hv",
            stackgroup="gpus",
            line={"color": state_colour("down")},
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=as_time(started_at, frag["t_s"].to_numpy()),
            y=(frag["fragmentation"] * 100).to_list(),
            name="fragmentation",
            mode="lines",
            line={"color": "#ff7f0e"},
            connectgaps=False,
        ),
        row=2,
        col=1,
    )
    fig.update_yaxes(title_text="% of GPUs", range=[0, 100], row=1, col=1)
    fig.update_yaxes(title_text="% of free", range=[0, 100], row=2, col=1)
    fig.update_layout(
        height=440,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        hovermode="x unified",
        legend={"orientation": "h", "y": 1.0, "yanchor": "top", "yref": "container"},
    )  # above the titles
    return time_axis(fig, started_at, precision="minutes")
