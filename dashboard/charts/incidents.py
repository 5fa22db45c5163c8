"""Incidents charts: the timeline (time x cause, coloured by category, sized by cost), counts, a day's count,
and one incident's chain as a Gantt of its steps in hours from the fault."""

from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import as_time, count_axis, time_axis
from dashboard.text import plot, plot_all
from dashboard.text_exprs import category_text, cause_label_text
from engine.report.palette import CATEGORY_COLOURS, OTHER_COLOUR
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

# The shared palette: a category keeps its colour on every page.
CATEGORY_COLOURS = CATEGORY_COLOURS
OTHER_COLOUR = OTHER_COLOUR
MIN_SIZE, MAX_SIZE = 6.0, 30.0


def marker_sizes(cost: np.ndarray) -> np.ndarray:
    """Area proportional to GPU-hours lost, between MIN_SIZE and MAX_SIZE pixels across; no cost: MIN_SIZE."""
    cost = np.nan_to_num(np.asarray(cost, dtype=float), nan=0.0).clip(min=0.0)
    top = cost.max() if cost.size else 0.0
    if top <= 0:
        return np.full(cost.shape, MIN_SIZE)
    return MIN_SIZE + (MAX_SIZE - MIN_SIZE) * np.sqrt(cost / top)


def timeline(incidents: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Incidents (incident_id, t_s, cause, category, gpu_hours_lost): one trace per category."""
    fig = go.Figure()
    sizes = marker_sizes(incidents["gpu_hours_lost"].to_numpy())
    frame = incidents.with_columns(pl.Series("size", sizes))
    for category in sorted(frame["category"].fill_null("Unknown").unique().to_list()):
        part = frame.filter(pl.col("category").fill_null("Unknown") == category)
        fig.add_trace(
            go.Scatter(
                x=as_time(started_at, part["t_s"].to_numpy()),
                y=plot_all(part.select(cause_label_text("cause")).to_series().to_list()),
                mode="markers",
                name=plot(category),
                marker={
                    "size": part["size"].to_numpy(),
                    "color": CATEGORY_COLOURS.get(category, OTHER_COLOUR),
                    "opacity": 0.75,
                    "line": {"width": 0.5, "color": "white"},
                },
                customdata=part["incident_id"].to_numpy(),  # what a click on the marker hands the page
                text=[
                    f"{v:,.1f}" for v in part["gpu_hours_lost"].fill_null(0).to_list()
                ],  # Python after collect
                hovertemplate="incident %{customdata}<br>%{y}<br>%{x}<br>%{text} GPU-hours lost"
                "<extra>%{fullData.name}</extra>",
            )
        )
    causes = incidents["cause"].unique().len()
    fig.update_layout(
        height=max(260, 26 * causes + 120),
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_yaxes(categoryorder="total ascending")
    return time_axis(fig, started_at)


def clicked_incident(selection) -> int | None:
    """The incident id (customdata) of the first selected timeline marker, else None."""
    points = (
        (selection or {}).get("points", [])
        if isinstance(selection, dict)
        else getattr(selection, "points", [])
    )
    for point in points or []:
        if point.get("customdata") is not None:
            return int(point["customdata"])
    return None


def by_cause(counts: pl.DataFrame) -> go.Figure:
    """Interruptions by cause (cause, interruptions; category optional, else the cause's own), largest at the
    top, coloured by category."""
    # bottom to top: plotly draws the first bar lowest, so the table's order (most first, then by name) reads down
    frame = counts.sort(["interruptions", "cause"], descending=[False, True])
    if "category" not in frame.columns:
        frame = frame.with_columns(category_text("cause").alias("category"))
    fig = go.Figure(
        go.Bar(
            x=frame["interruptions"].to_list(),
            y=plot_all(frame.select(cause_label_text("cause")).to_series().to_list()),
            orientation="h",
            text=frame["interruptions"].to_list(),
            # Plotly turns a label sideways when that fits a thin bar better ("auto"): counts read level
            textangle=0,
            marker_color=[
                CATEGORY_COLOURS.get(c, OTHER_COLOUR) for c in frame["category"].fill_null("").to_list()
            ],
        )
    )
    fig.update_layout(
        height=max(220, 24 * frame.height + 80),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={"title": "interruptions", **count_axis(frame["interruptions"].max())},
    )
    return fig


def per_day(days: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Interruptions a day (day index, planned, unexpected) as stacked bars."""
    x = as_time(started_at, days["day"].to_numpy() * SECONDS_PER_DAY)
    fig = go.Figure(
        [
            go.Bar(x=x, y=days["unexpected"].to_list(), name="unexpected", marker_color="#e03131"),
            go.Bar(
                x=x, y=days["planned"].to_list(), name="planned", marker_color=CATEGORY_COLOURS["Planned"]
            ),
        ]
    )
    fig.update_layout(
        barmode="stack",
        height=260,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis={"title": "interruptions a day", "tickformat": ",d", "rangemode": "tozero"},
        legend={"orientation": "h"},
    )
    return time_axis(fig, started_at, precision="minutes")


# Phases of a chain and their colours: the time from one step to the next is coloured by the step it starts.
CHAIN_COLOURS = {
    "checkpoint": "#1f77b4",
    "occurred": "#d62728",
    "detected": "#ff7f0e",
    "job interrupted": "#e03131",
    "hosts drained": "#ff7f0e",
    "spares swapped in": "#17becf",
    "job running again": "#2ca02c",
    "repair": "#9467bd",
    "host returned": "#2ca02c",
}


def chain_bars(chain: pl.DataFrame) -> pl.DataFrame:
    """The chain (step, t_s, what, detail) as Gantt bars in hours from the fault (the `occurred` step, else the
    first): each step starts at its own time and lasts until the next step's (the last one has no length).
    Columns: label ("3 · job interrupted"), what, detail, start_h, hours."""
    t = chain["t_s"].to_numpy().astype(float)
    occurred = chain.filter(pl.col("what") == "occurred")["t_s"]
    origin = float(occurred[0]) if occurred.len() else (float(t.min()) if t.size else 0.0)
    ends = np.append(t[1:], t[-1:]) if t.size else t
    return pl.DataFrame(
        {
            # label and detail are Plotly text (a detail names hosts and jobs); `what` keeps the raw step name
            "label": [
                plot(f"{s} · {w}")
                for s, w in zip(chain["step"].to_list(), chain["what"].to_list(), strict=True)
            ],
            "what": chain["what"],
            "detail": plot_all(chain["detail"].to_list()),
            "start_h": (t - origin) / SECONDS_PER_HOUR,
            "hours": (ends - t) / SECONDS_PER_HOUR,
        },
        schema={
            "label": pl.String,
            "what": pl.String,
            "detail": pl.String,
            "start_h": pl.Float64,
            "hours": pl.Float64,
        },
    )


def chain_figure(chain: pl.DataFrame) -> go.Figure:
    """One incident's chain as a Gantt: a row per step (in story order, top down), a bar from the step to the
    next, a marker at the step itself so instantaneous steps show too."""
    bars = chain_bars(chain)
    colours = [CHAIN_COLOURS.get(w.split(":")[0], OTHER_COLOUR) for w in bars["what"].to_list()]
    fig = go.Figure(
        [
            go.Bar(
                x=bars["hours"].to_list(),
                base=bars["start_h"].to_list(),
                y=bars["label"].to_list(),
                orientation="h",
                marker_color=colours,
                opacity=0.55,
                name="until the next step",
                customdata=bars["detail"].to_list(),
                hovertemplate="%{y}<br>%{base:.2f} h after the fault, lasts %{x:.2f} h<br>%{customdata}"
                "<extra></extra>",
            ),
            go.Scatter(
                x=bars["start_h"].to_list(),
                y=bars["label"].to_list(),
                mode="markers",
                name="step",
                marker={"color": colours, "size": 10, "symbol": "diamond"},
                customdata=bars["detail"].to_list(),
                hovertemplate="%{y}<br>%{x:.2f} h after the fault<br>%{customdata}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        height=max(220, 28 * bars.height + 90),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        showlegend=False,
        xaxis_title="hours after the fault",
    )
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=bars["label"].to_list())
    fig.add_vline(x=0, line_dash="dot", line_color="#d62728")
    return fig
