"""Racks charts: the floor plan (one heatmap trace for the whole cluster) and a host state history.

The floor plan puts each rack in its row and position and stacks its hosts (slot 0 at the bottom) inside the
rack's column; a blank line separates rows. One Heatmap trace keeps 3,072 hosts quick where a shape per host
would not be.
"""

from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import HOST_STATE_COLORS
from dashboard.charts.jobs import bars_over_time
from engine.schema import HOST_STATES

# The shared palette, plus `failed` (a GPU with an unrepaired incident, in GPU cells) and `unknown` (no interval).
STATE_COLOURS = {**HOST_STATE_COLORS, "failed": "#5c0011", "unknown": "#dee2e6"}
STATE_ORDER = (*HOST_STATES, "failed", "unknown")


def _discrete_colourscale(colours: list[str]) -> list[list]:
    """A colourscale that maps integer codes 0..n-1 to flat colour bands."""
    n = len(colours)
    scale = []
    for i, colour in enumerate(colours):
        scale += [[i / n, colour], [(i + 1) / n, colour]]
    return scale


def floor_plan(cells: pl.DataFrame, title: str = "") -> go.Figure:
    """Heatmap of every host (or GPU) at one moment, coloured by state.

    `cells`: one row per host with hostname, rack_id, row, position, slot, state (None: unknown); with a
    `gpu_index` column, one row per GPU, drawn side by side inside its host's line.
    """
    states = cells["state"].fill_null("unknown")
    codes = states.replace_strict({s: i for i, s in enumerate(STATE_ORDER)}, default=len(STATE_ORDER) - 1,
                                  return_dtype=pl.Int64).to_numpy()
    slots = int(cells["slot"].max()) + 1 if cells.height else 1
    rows = int(cells["row"].max()) + 1 if cells.height else 1
    positions = int(cells["position"].max()) + 1 if cells.height else 1
    # slots + 1 lines a row (a blank one between rows); slot 0 at the bottom of its rack, row 0 at the top
    y = cells["row"].to_numpy() * (slots + 1) + (slots - 1 - cells["slot"].to_numpy())
    per_rack = 1  # columns a rack takes: 1 for host cells, GPUs + a blank column for GPU cells
    label = cells["hostname"] + " · rack " + cells["rack_id"].cast(pl.String)
    if "gpu_index" in cells.columns:
        per_rack = int(cells["gpu_index"].max()) + 2 if cells.height else 1
        x = cells["position"].to_numpy() * per_rack + cells["gpu_index"].to_numpy()
        label = label + " · GPU " + cells["gpu_index"].cast(pl.String)
    else:
        x = cells["position"].to_numpy()
    z = np.full((rows * (slots + 1), positions * per_rack), np.nan)
    z[y, x] = codes
    text = np.full(z.shape, "", dtype=object)
    text[y, x] = (label + " · " + states).to_numpy()
    fig = go.Figure(go.Heatmap(
        z=z, text=text, hoverinfo="text", zmin=-0.5, zmax=len(STATE_ORDER) - 0.5, xgap=1 if per_rack > 1 else 2,
        ygap=1,
        colorscale=_discrete_colourscale([STATE_COLOURS[s] for s in STATE_ORDER]), showscale=False,
    ))
    # The legend: one invisible marker trace per state present, so the colours are named.
    for state in [s for s in STATE_ORDER if s in set(states.to_list())]:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=state, showlegend=True,
                                 marker={"symbol": "square", "size": 12, "color": STATE_COLOURS[state]}))
    fig.add_trace(_rack_handles(cells, states, slots, per_rack))
    row_ticks = np.arange(rows) * (slots + 1) + (slots - 1) / 2
    fig.update_layout(
        title=title, height=min(1600, max(240, 9 * z.shape[0] + 120)), margin={"l": 10, "r": 10, "t": 40, "b": 10},
        plot_bgcolor="white", legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"},
        # a rack's handle takes the hover (and the click) only under the pointer; elsewhere the cells answer
        hoverdistance=1, clickmode="event+select",
    )
    rack_ticks = np.arange(positions) * per_rack + (per_rack - 2) / 2 if per_rack > 1 else np.arange(positions)
    fig.update_xaxes(title="position in row", showgrid=False, zeroline=False, tickvals=rack_ticks,
                     ticktext=[str(p) for p in range(positions)])
    fig.update_yaxes(tickvals=row_ticks, ticktext=[f"row {r}" for r in range(rows)], showgrid=False,
                     zeroline=False, autorange="reversed")
    return fig


RACK_HANDLES = "racks"  # the name of the trace whose points select a rack (customdata: rack_id)


def _rack_handles(cells: pl.DataFrame, states: pl.Series, slots: int, per_rack: int) -> go.Scatter:
    """A small dot in the middle of each rack: one scatter trace a page can listen to for clicks (a heatmap
    cell sends no selection event), its hover summing up the rack's hosts."""
    failed = pl.col("state") == "failed"
    hosts = (cells.with_columns(states.alias("state"))
             .group_by("rack_id", "hostname", maintain_order=True)
             .agg(pl.col("row").first(), pl.col("position").first(), pl.col("slot").first(),
                  pl.col("state").filter(~failed).first().fill_null("failed").alias("state"),
                  failed.sum().alias("failed_gpus"))
             .with_columns((pl.col("hostname") + ": " + pl.col("state") + pl.when(pl.col("failed_gpus") > 0)
                            .then(pl.format(", {} GPU failed", pl.col("failed_gpus"))).otherwise(pl.lit("")))
                           .alias("line")))
    racks = (hosts.sort("slot", descending=True, maintain_order=True)  # the top host first, as in the rack
             .group_by("rack_id", maintain_order=True)
             .agg(pl.col("row").first(), pl.col("position").first(), pl.col("line").str.join("<br>").alias("hosts"))
             .sort("rack_id"))
    centre_x = racks["position"].to_numpy() * per_rack + ((per_rack - 2) / 2 if per_rack > 1 else 0.0)
    centre_y = racks["row"].to_numpy() * (slots + 1) + (slots - 1) / 2
    return go.Scatter(
        x=centre_x, y=centre_y, customdata=racks["rack_id"].to_numpy(), mode="markers", name=RACK_HANDLES,
        showlegend=False, text=("<b>rack " + racks["rack_id"].cast(pl.String) + "</b> (click to open)<br>"
                                + racks["hosts"]).to_list(),
        hovertemplate="%{text}<extra></extra>",
        marker={"symbol": "circle-open", "size": 7, "color": "rgba(255, 255, 255, 0.8)", "line": {"width": 1.5}},
    )


def clicked_rack(selection) -> int | None:
    """The rack of the first selected rack handle in a `st.plotly_chart` selection (None: no rack clicked)."""
    points = (selection or {}).get("points", []) if isinstance(selection, dict) else getattr(selection, "points", [])
    for point in points or []:
        if point.get("customdata") is not None and "curve_number" in point:
            return int(point["customdata"])
    return None


def state_history(intervals: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Host state intervals (hostname, state, start_s, end_s, job_id) as a bar per interval, a row per host."""
    frame = intervals.with_columns(
        pl.col("state").fill_null("unknown"),
        (pl.col("state").fill_null("unknown") + pl.lit(" ") + pl.col("job_id").fill_null("")).alias("hover"),
    )
    fig = go.Figure(bars_over_time(frame, started_at=started_at, row="hostname", colour_by="state",
                                   colours=STATE_COLOURS, hover="hover"))
    hosts = frame["hostname"].unique().sort().to_list()
    fig.update_layout(barmode="overlay", height=max(200, 40 * len(hosts) + 120),
                      margin={"l": 10, "r": 10, "t": 30, "b": 10})
    fig.update_xaxes(type="date")
    fig.update_yaxes(categoryorder="array", categoryarray=hosts)
    return fig
