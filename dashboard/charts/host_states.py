"""Host and GPU states in words and colours (engine.report.palette, plus a failed GPU and an unknown state),
names from the data as Plotly text, and a rack's hosts' state history."""

from datetime import datetime

import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import time_axis
from dashboard.charts.jobs import bars_over_time
from dashboard.text import plot_expr
from engine.report.palette import (
    GPU_FAILED_COLOUR,
    GPU_FAILED_LABEL,
    HOST_STATE_COLOURS,
    HOST_STATE_LABELS,
    UNKNOWN_STATE_COLOUR,
    UNKNOWN_STATE_LABEL,
)
from engine.store.schema import HOST_STATES

# The shared palette, plus `failed` (a GPU with an unrepaired incident, in GPU cells) and `unknown` (no interval).
STATE_COLOURS = {**HOST_STATE_COLOURS, "failed": GPU_FAILED_COLOUR, "unknown": UNKNOWN_STATE_COLOUR}
STATE_ORDER = (*HOST_STATES, "failed", "unknown")
STATE_WORDS = {**HOST_STATE_LABELS, "failed": GPU_FAILED_LABEL, "unknown": UNKNOWN_STATE_LABEL}


def state_words(states: pl.Series) -> pl.Series:
    """Cell states in words ("In repair", "Failed GPU"); a state the palette does not know keeps its key."""
    return states.fill_null("unknown").replace(STATE_WORDS)


def state_words_expr(column: str) -> pl.Expr:
    """state_words as a Polars expression, for the page's tables."""
    return pl.col(column).fill_null("unknown").replace(STATE_WORDS)


def as_plot_text(frame: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Names from the data (hostnames, job ids, link ends) as Plotly text, where `frame` has them: they reach
    hover text, legend names and annotations. Every lookup inside a figure sees the same escaped values."""
    return frame.with_columns(plot_expr(c) for c in columns if c in frame.columns)


def state_history(intervals: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Host state intervals (hostname, state, start_s, end_s, job_id) as a bar per interval, a row per host."""
    frame = as_plot_text(intervals, "hostname", "job_id").with_columns(
        state_words_expr("state").alias("state"),
        (state_words_expr("state") + pl.lit(" ") + pl.col("job_id").fill_null("")).alias("hover"),
    )
    colours = {STATE_WORDS[s]: STATE_COLOURS[s] for s in STATE_ORDER}
    fig = go.Figure(
        bars_over_time(
            frame, started_at=started_at, row="hostname", colour_by="state", colours=colours, hover="hover"
        )
    )
    hosts = frame["hostname"].unique().sort().to_list()
    fig.update_layout(
        barmode="overlay", height=max(200, 40 * len(hosts) + 120), margin={"l": 10, "r": 10, "t": 30, "b": 10}
    )
    fig.update_yaxes(categoryorder="array", categoryarray=hosts)
    return time_axis(fig, started_at, type="date")
