"""Charts of the GPUs page's throttled and slow GPUs: throttled GPUs per window by reason, and throttled GPUs by
reason over the whole run (pure functions: frames in, Plotly figures out)."""

from datetime import datetime

import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import as_time, count_axis, hover_time, time_axis
from dashboard.format import fmt_duration
from dashboard.text import plot
from engine.analysis.definitions import definition
from engine.telemetry.clocks import THROTTLE_WORDS

ANY_REASON = "any reason"
# power reasons in oranges, thermal ones in reds, the hardware slowdown both share in purple
REASON_COLOURS = {
    ANY_REASON: "#495057",
    THROTTLE_WORDS["sw_power_cap"]: "#f08c00",
    THROTTLE_WORDS["hw_power_brake"]: "#d9480f",
    THROTTLE_WORDS["sw_thermal"]: "#fa5252",
    THROTTLE_WORDS["hw_thermal"]: "#a61e4d",
    THROTTLE_WORDS["hw_slowdown"]: "#7048e8",
}
LAYOUT = {"margin": {"l": 10, "r": 10, "t": 10, "b": 10}, "legend": {"orientation": "h", "y": -0.25}}


def throttle_timeline(timeline: pl.DataFrame, started_at: datetime, window_s: float) -> go.Figure:
    """GPUs throttled per window (columns t_s, reason, gpus from queries.gpus_throttled.throttle_timeline): a
    step line a reason, 'any reason' dashed in grey (a GPU may have several reasons at once: lines, not stacks)."""
    fig = go.Figure()
    for reason in timeline["reason"].unique(maintain_order=True).to_list():
        part = timeline.filter(pl.col("reason") == reason)
        fig.add_trace(
            go.Scatter(
                x=as_time(started_at, part["t_s"].to_numpy() + window_s / 2),
                y=part["gpus"].to_list(),
                mode="lines",
                line={
                    "shape": "hvh",
                    "color": REASON_COLOURS.get(reason, "#868e96"),
                    "dash": "dash" if reason == ANY_REASON else "solid",
                },
                name=plot(reason),
                hovertemplate=f"{hover_time(started_at, 'minutes')}<br>%{{y:,d}} GPUs<extra>{plot(reason)}</extra>",
            )
        )
    largest = int(timeline["gpus"].max()) if timeline.height else 0
    fig.update_layout(height=280, **LAYOUT)
    fig.update_yaxes(
        title=f"{definition('throttled_gpus_per_window').label} ({fmt_duration(window_s)})",
        **count_axis(largest),
    )
    return time_axis(fig, started_at)


def reasons_count(gpus: pl.DataFrame) -> pl.DataFrame:
    """Throttled GPUs by reason (columns reason, gpus), in DCGM's bit order, from the per-GPU frame's reasons
    lists (one row a listed GPU: a small frame)."""
    order = pl.DataFrame({"reason": list(THROTTLE_WORDS.values()), "rank": range(len(THROTTLE_WORDS))})
    counts = (
        gpus.select(pl.col("reasons").explode().alias("reason"))
        .drop_nulls()
        .group_by("reason")
        .agg(pl.len().cast(pl.Int64).alias("gpus"))
    )
    return counts.join(order, on="reason").sort("rank").drop("rank")


def reasons_bars(counts: pl.DataFrame) -> go.Figure:
    """Throttled GPUs by reason (columns reason, gpus from `reasons_count`), a bar a reason in its colour."""
    fig = go.Figure(
        go.Bar(
            x=counts["gpus"].to_list(),
            y=[plot(r) for r in counts["reason"].to_list()],
            orientation="h",
            marker_color=[REASON_COLOURS.get(r, "#868e96") for r in counts["reason"].to_list()],
            hovertemplate="%{y}: %{x:,d} GPUs<extra></extra>",
        )
    )
    largest = int(counts["gpus"].max()) if counts.height else 0
    fig.update_layout(height=60 + 30 * max(counts.height, 1), showlegend=False, **LAYOUT)
    fig.update_xaxes(title=definition("throttled_gpus").label, **count_axis(largest))
    fig.update_yaxes(type="category", autorange="reversed")
    return fig
