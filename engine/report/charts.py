"""The two charts of the standalone HTML incident report (engine side: the engine never imports dashboard/), in
the dashboard's palette and words (engine.report.palette), so a category has the same colour in the report
and on the page.

Pure functions, frames in and Plotly figures out: a timeline of incidents (time against cause, coloured by
category, sized by GPU-hours lost) and interruptions by cause (stacked by category).

Plotly.js reads its labels, legend names and hover texts as a small HTML dialect (`<a href>`, `<b>`, ...), so a
cause or category from an imported file could add a link to the report: every data string is HTML-escaped
first (`text`), and Plotly shows the escaped text as the original characters.
"""

import html

import plotly.graph_objects as go
import polars as pl

from engine.report.palette import category_colour as _colour
from engine.report.palette import cause_label
from engine.report.visible_text import visible
from engine.units import SECONDS_PER_HOUR


def text(value: str | None) -> str | None:
    """A data string as Plotly must be given it to show it as text (its invisible characters as marks, its `&`,
    `<` and `>` escaped)."""
    return None if value is None else html.escape(visible(value), quote=False)


def _texts(series: pl.Series) -> list[str | None]:
    return [text(v) for v in series.to_list()]


def _causes(series: pl.Series) -> list[str | None]:
    """Cause keys as the palette's words ("Faulty GPU"), escaped."""
    return [None if v is None else text(cause_label(v)) for v in series.to_list()]


def timeline_figure(frame: pl.DataFrame) -> go.Figure:
    """Every incident at its time (UTC when known, else hours into the run) on its cause's row."""
    use_time = "time_utc" in frame.columns and frame["time_utc"].null_count() < frame.height
    fig = go.Figure()
    largest = max(float(frame["gpu_hours_lost"].max() or 0.0), 1e-9) if frame.height else 1.0
    for (category,), part in frame.group_by("category", maintain_order=True):
        x = part["time_utc"].to_list() if use_time else (part["t_s"] / SECONDS_PER_HOUR).to_list()
        size = (8 + 30 * (part["gpu_hours_lost"].fill_null(0.0) / largest).sqrt()).to_list()
        hover = [
            f"#{i} {text(cause_label(c))}<br>{g:,.1f} GPU-hours lost"
            for i, c, g in zip(
                part["incident_id"], part["cause"], part["gpu_hours_lost"].fill_null(0.0), strict=True
            )
        ]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=_causes(part["cause"]),
                mode="markers",
                name=text(category),
                marker={"size": size, "color": _colour(category), "opacity": 0.75},
                text=hover,
                hoverinfo="text+x",
            )
        )
    fig.update_layout(
        title="Incidents over time (size: GPU-hours lost)",
        height=420,
        xaxis_title="time (UTC)" if use_time else "hours into the run",
        # the margin grows to the longest cause ("Host maintenance (unplanned)" was cut at a fixed 160 px)
        yaxis={"title": {"text": "cause", "standoff": 8}, "automargin": True},
        margin={"l": 20, "r": 20, "t": 50, "b": 50},
        legend_title="category",
    )
    return fig


def by_cause_figure(frame: pl.DataFrame) -> go.Figure:
    """Incidents by cause, one bar segment per category, most frequent cause on top."""
    counts = frame.group_by("cause", "category").agg(n=pl.len())
    order = counts.group_by("cause").agg(pl.col("n").sum()).sort(["n", "cause"], descending=[False, True])
    fig = go.Figure()
    for (category,), part in counts.group_by("category", maintain_order=True):
        fig.add_trace(
            go.Bar(
                x=part["n"].to_list(),
                y=_causes(part["cause"]),
                orientation="h",
                name=text(category),
                marker_color=_colour(category),
            )
        )
    fig.update_layout(
        title="Incidents by cause",
        barmode="stack",
        height=max(260, 28 * order.height + 100),
        xaxis={"title": "incidents", "tickformat": ",d"},
        margin={"l": 20, "r": 20, "t": 50, "b": 50},
        yaxis={"categoryorder": "array", "categoryarray": _causes(order["cause"]), "automargin": True},
    )
    return fig
