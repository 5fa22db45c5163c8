"""Incidents charts: the timeline (time x cause, coloured by category, sized by cost), counts, a day's count."""

from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import CATEGORY_COLORS, OTHER_COLOR
from dashboard.charts.jobs import as_time

# The shared palette: a category keeps its colour on every page.
CATEGORY_COLOURS = CATEGORY_COLORS
OTHER_COLOUR = OTHER_COLOR
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
        fig.add_trace(go.Scatter(
            x=as_time(started_at, part["t_s"].to_numpy()), y=part["cause"].to_list(), mode="markers",
            name=category, marker={"size": part["size"].to_numpy(), "color": CATEGORY_COLOURS.get(category,
                                   OTHER_COLOUR), "opacity": 0.75, "line": {"width": 0.5, "color": "white"}},
            customdata=part["incident_id"].to_numpy(),  # what a click on the marker hands the page
            text=part["gpu_hours_lost"].fill_null(0).map_elements(lambda v: f"{v:,.1f}", return_dtype=pl.String)
            .to_list(),
            hovertemplate="incident %{customdata}<br>%{y}<br>%{x}<br>%{text} GPU-hours lost"
                          "<extra>%{fullData.name}</extra>",
        ))
    causes = incidents["cause"].unique().len()
    fig.update_layout(height=max(260, 26 * causes + 120), margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
    fig.update_yaxes(categoryorder="total ascending")
    return fig


def clicked_incident(selection) -> int | None:
    """The incident id (customdata) of the first selected timeline marker, else None."""
    points = (selection or {}).get("points", []) if isinstance(selection, dict) else getattr(selection, "points", [])
    for point in points or []:
        if point.get("customdata") is not None:
            return int(point["customdata"])
    return None


def by_cause(counts: pl.DataFrame) -> go.Figure:
    """Interruptions by cause (cause, category, interruptions), largest at the top, coloured by category."""
    frame = counts.sort("interruptions")
    fig = go.Figure(go.Bar(
        x=frame["interruptions"].to_list(), y=frame["cause"].to_list(), orientation="h",
        text=frame["interruptions"].to_list(),
        marker_color=[CATEGORY_COLOURS.get(c, OTHER_COLOUR) for c in frame["category"].fill_null("").to_list()],
    ))
    fig.update_layout(height=max(220, 24 * frame.height + 80), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis_title="interruptions")
    return fig


def per_day(days: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Interruptions a day (day index, planned, unexpected) as stacked bars."""
    x = as_time(started_at, days["day"].to_numpy() * 86400.0)
    fig = go.Figure([
        go.Bar(x=x, y=days["unexpected"].to_list(), name="unexpected", marker_color="#e03131"),
        go.Bar(x=x, y=days["planned"].to_list(), name="planned", marker_color=CATEGORY_COLOURS["Planned"]),
    ])
    fig.update_layout(barmode="stack", height=260, margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      yaxis_title="interruptions a day", legend={"orientation": "h"})
    return fig
