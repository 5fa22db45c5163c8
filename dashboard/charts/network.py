"""Network charts: links and capacity by tier, and link utilisation by tier over time."""

from datetime import datetime

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.charts.jobs import as_time

# Tiers from the bottom of the fabric up (DESIGN: gpu_rtsw, rtsw_ctsw, ctsw_atsw, ...); others follow.
TIER_ORDER = ("gpu_rtsw", "rtsw_ctsw", "ctsw_atsw")
TIER_COLOURS = {"gpu_rtsw": "#2b8a3e", "rtsw_ctsw": "#1971c2", "ctsw_atsw": "#c2255c"}
OTHER_COLOUR = "#868e96"


def tier_sort_key(tier: str) -> tuple[int, str]:
    return (TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER), tier)


def tiers(frame: pl.DataFrame) -> go.Figure:
    """Links and total capacity (Tbps) by tier (columns tier, links, capacity_gbps), side by side."""
    order = sorted(frame["tier"].to_list(), key=tier_sort_key)
    frame = frame.with_columns(pl.col("tier").cast(pl.Enum(order))).sort("tier")
    colours = [TIER_COLOURS.get(t, OTHER_COLOUR) for t in order]
    fig = make_subplots(rows=1, cols=2, subplot_titles=["links", "capacity (Tbps)"])
    fig.add_trace(go.Bar(x=order, y=frame["links"].to_list(), marker_color=colours, text=frame["links"].to_list(),
                         showlegend=False), row=1, col=1)
    tbps = (frame["capacity_gbps"] / 1000).round(1).to_list()
    fig.add_trace(go.Bar(x=order, y=tbps, marker_color=colours, text=tbps, showlegend=False), row=1, col=2)
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return fig


def utilisation(samples: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Mean and hottest-link utilisation by tier over time (columns t_s, tier, mean_util, max_util)."""
    fig = go.Figure()
    for tier in sorted(samples["tier"].unique().to_list(), key=tier_sort_key):
        part = samples.filter(pl.col("tier") == tier).sort("t_s")
        x = as_time(started_at, part["t_s"].to_numpy())
        colour = TIER_COLOURS.get(tier, OTHER_COLOUR)
        fig.add_trace(go.Scatter(x=x, y=part["mean_util"].to_numpy(), mode="lines", name=f"{tier} mean",
                                 line={"color": colour}))
        fig.add_trace(go.Scatter(x=x, y=part["max_util"].to_numpy(), mode="lines", name=f"{tier} hottest",
                                 line={"color": colour, "dash": "dot"}))
    fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 10, "b": 10}, yaxis_title="utilisation (%)")
    return fig
