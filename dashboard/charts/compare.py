"""Compare charts: interruptions by cause (a bar group per cause, a bar per run), ETTR over time overlaid, and
what failures cost each run (its losses and standby hosts stacked)."""

import plotly.graph_objects as go
import polars as pl

from dashboard.text import plot, plot_all
from engine.report.palette import LOSS_COLOURS, cause_label


def causes_side_by_side(
    counts: pl.DataFrame, y_title: str = "interruptions", runs: list[str] | None = None
) -> go.Figure:
    """Counts (columns run, cause, interruptions) as grouped bars; causes ordered by their total.

    `runs` orders the bars (a run without any row still gets its zero bars); default: as they come."""
    order = (
        counts.group_by("cause")
        .agg(pl.col("interruptions").sum())
        .sort(["interruptions", "cause"], descending=[True, False])["cause"]
        .to_list()
    )
    fig = go.Figure()
    for run in runs if runs is not None else counts["run"].unique(maintain_order=True).to_list():
        part = counts.filter(pl.col("run") == run)
        by_cause = dict(zip(part["cause"].to_list(), part["interruptions"].to_list(), strict=True))
        fig.add_trace(
            go.Bar(
                x=plot_all([cause_label(c) for c in order]),
                y=[by_cause.get(c, 0) for c in order],
                name=plot(run),
            )
        )
    fig.update_layout(
        barmode="group",
        height=340,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis_title=y_title,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    return fig


def ettr_over_time(timeline: pl.DataFrame, runs: list[str] | None = None) -> go.Figure:
    """Cumulative ETTR (columns run, day, ettr_cumulative) as one line per run, overlaid."""
    fig = go.Figure()
    for run in runs if runs is not None else timeline["run"].unique(maintain_order=True).to_list():
        part = timeline.filter(pl.col("run") == run)
        fig.add_trace(
            go.Scatter(
                x=part["day"].to_list(), y=part["ettr_cumulative"].to_list(), mode="lines", name=plot(run)
            )
        )
    fig.update_layout(
        height=340,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis_title="ETTR since the start",
        xaxis_title="day",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_yaxes(tickformat=".0%")
    return fig


STANDBY_COLOUR = "#17becf"  # warm standbys: apart from every ledger bucket's colour (engine.report.palette)


def failure_costs(costs: pl.DataFrame, runs: list[str] | None = None) -> go.Figure:
    """Costs (columns run, item, label, usd: dashboard.queries.compare.failure_costs) as a stacked bar a run, an
    item a colour (the ledger's buckets, then the standby hosts), so strategies that trade lost work for
    standby hosts or degraded throughput compare by their total."""
    order = runs if runs is not None else costs["run"].unique(maintain_order=True).to_list()
    fig = go.Figure()
    for (item, label), part in costs.group_by(["item", "label"], maintain_order=True):
        by_run = dict(zip(part["run"].to_list(), part["usd"].to_list(), strict=True))
        fig.add_trace(
            go.Bar(
                x=plot_all(order),
                y=[by_run.get(r, 0.0) for r in order],
                name=plot(label),
                marker={"color": LOSS_COLOURS.get(item, STANDBY_COLOUR)},
                hovertemplate=f"{plot(label)}: %{{y:$,.0f}}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        height=340,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis_title="USD",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_yaxes(tickformat="$,.0f")
    return fig
