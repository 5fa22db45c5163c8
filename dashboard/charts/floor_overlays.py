"""What the floor plan draws over its cells: the greyed racks and the rings of the problems-only view, a cross on
each rack over its power budget, the rack handles a click selects (clicked_rack reads the selection), and the
row numbers of a wrapped floor's further blocks."""

from collections.abc import Collection

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.floor_grid import PLOT_WIDTH_PX, FloorGrid
from dashboard.charts.host_states import state_words_expr

RACK_HANDLES = "racks"  # the name of the trace whose points select a rack (customdata: rack_id)
OVER_BUDGET = "over budget"  # the trace that crosses out racks drawing more than their power budget
PROBLEM_RACKS = "racks with a problem"  # the ring around each of them in the problems-only view
NO_PROBLEM = "no problem at t (greyed out)"
NO_PROBLEM_COLOUR = "#e9ecef"
PROBLEM_RING_COLOUR = "#000000"


def greyed_racks(grid: FloorGrid, y: np.ndarray, x: np.ndarray, gaps: dict) -> go.Heatmap:
    """A flat grey layer on the cells of racks without a problem (blank in the measure's own layer)."""
    z = np.full(grid.shape, np.nan)
    z[y, x] = 0.0
    return go.Heatmap(
        z=z,
        name=NO_PROBLEM,
        colorscale=[[0.0, NO_PROBLEM_COLOUR], [1.0, NO_PROBLEM_COLOUR]],
        zmin=0.0,
        zmax=1.0,
        showscale=False,
        hoverinfo="skip",
        **gaps,
    )


def problem_rings(cells: pl.DataFrame, grid: FloorGrid, problem_racks: Collection[int]) -> go.Scatter:
    """A ring around each rack with a problem, sized to the rack, so a few racks stand out among 1,536."""
    racks = (
        cells.filter(pl.col("rack_id").is_in(list(problem_racks)))
        .group_by("rack_id")
        .agg(pl.col("row").first(), pl.col("position").first())
        .sort("rack_id")
    )
    x, y = grid.rack_centre(racks["row"].to_numpy(), racks["position"].to_numpy())
    rack_px = PLOT_WIDTH_PX / max(grid.shape[1], 1) * grid.per_rack
    return go.Scatter(
        x=x,
        y=y,
        mode="markers",
        name=PROBLEM_RACKS,
        customdata=racks["rack_id"].to_numpy(),
        hoverinfo="skip",
        showlegend=racks.height > 0,
        marker={
            "symbol": "circle-open",
            "size": float(np.clip(rack_px * 1.2, 14, 40)),
            "color": PROBLEM_RING_COLOUR,
            "line": {"width": 2.5, "color": PROBLEM_RING_COLOUR},
        },
    )


def over_budget(cells: pl.DataFrame, grid: FloorGrid) -> go.Scatter | None:
    """A red cross on each rack over its power budget (rack_kw > budget_kw), whatever the measure; None when
    `cells` carries no power."""
    if not {"rack_kw", "budget_kw"} <= set(cells.columns):
        return None
    over = (
        cells.filter(pl.col("rack_kw") > pl.col("budget_kw"))
        .group_by("rack_id")
        .agg(pl.col("row").first(), pl.col("position").first())
        .sort("rack_id")
    )
    x, y = grid.rack_centre(over["row"].to_numpy(), over["position"].to_numpy())
    return go.Scatter(
        x=x,
        y=y,
        mode="markers",
        name=OVER_BUDGET,
        customdata=over["rack_id"].to_numpy(),
        hoverinfo="skip",
        showlegend=over.height > 0,
        marker={
            "symbol": "x-thin-open",
            "size": 14,
            "color": "#d7191c",
            "line": {"width": 3, "color": "#d7191c"},
        },
    )


def rack_handles(cells: pl.DataFrame, states: pl.Series, grid: FloorGrid, faint: bool = False) -> go.Scatter:
    """A small dot in the middle of each rack: one scatter trace a page can listen to for clicks (a heatmap
    cell sends no selection event), its hover summing up the rack's hosts."""
    failed = pl.col("state") == "failed"
    if "host_state" in cells.columns:  # host cells: the host's own state, and how many of its GPUs failed
        host_state, failed_gpus = (
            pl.col("host_state").first().fill_null("unknown"),
            pl.col("failed_gpus").sum(),
        )
    else:  # GPU cells: the state of its GPUs that did not fail is the host's
        host_state, failed_gpus = pl.col("state").filter(~failed).first().fill_null("failed"), failed.sum()
    hosts = (
        cells.with_columns(states.alias("state"))
        .group_by("rack_id", "hostname", maintain_order=True)
        .agg(
            pl.col("row").first(),
            pl.col("position").first(),
            pl.col("slot").first(),
            host_state.alias("state"),
            failed_gpus.alias("failed_gpus"),
        )
        .with_columns(
            (
                pl.col("hostname")
                + ": "
                + state_words_expr("state")
                + pl.when(pl.col("failed_gpus") > 0)
                .then(pl.format(", {} GPU failed", pl.col("failed_gpus")))
                .otherwise(pl.lit(""))
            ).alias("line")
        )
    )
    racks = (
        hosts.sort("slot", descending=True, maintain_order=True)  # the top host first, as in the rack
        .group_by("rack_id", maintain_order=True)
        .agg(
            pl.col("row").first(), pl.col("position").first(), pl.col("line").str.join("<br>").alias("hosts")
        )
        .sort("rack_id")
    )
    head = "<b>rack " + racks["rack_id"].cast(pl.String) + "</b> (click to open)"
    if {"rack_kw", "budget_kw"} <= set(cells.columns):
        power = (
            cells.group_by("rack_id")
            .agg(pl.col("rack_kw").first(), pl.col("budget_kw").first())
            .sort("rack_id")
        )
        racks = racks.join(power, on="rack_id", how="left", maintain_order="left")
        over = (racks["rack_kw"] > racks["budget_kw"]).fill_null(False)
        head = (
            head
            + racks.select(
                pl.format("<br>{} of {} kW", pl.col("rack_kw").round(1), pl.col("budget_kw").round(1))
            )["rack_kw"]
            + pl.Series(np.where(over.to_numpy(), " <b>over budget</b>", ""))
        )
    head = head + racks.select(pl.format("<br>row {}, position {}", "row", "position"))["row"]
    centre_x, centre_y = grid.rack_centre(racks["row"].to_numpy(), racks["position"].to_numpy())
    return go.Scatter(
        x=centre_x,
        y=centre_y,
        customdata=racks["rack_id"].to_numpy(),
        mode="markers",
        name=RACK_HANDLES,
        showlegend=False,
        text=(head + "<br>" + racks["hosts"]).to_list(),
        hovertemplate="%{text}<extra></extra>",
        # on a big floor a small faint dot, so the handles do not hide the cells they sit on
        marker={"symbol": "circle", "size": 4, "color": "rgba(255, 255, 255, 0.6)", "line": {"width": 0}}
        if faint
        else {
            "symbol": "circle-open",
            "size": 7,
            "color": "rgba(255, 255, 255, 0.8)",
            "line": {"width": 1.5},
        },
    )


def clicked_rack(selection) -> int | None:
    """The rack of the first selected rack handle in a `st.plotly_chart` selection (None: no rack clicked)."""
    points = (
        (selection or {}).get("points", [])
        if isinstance(selection, dict)
        else getattr(selection, "points", [])
    )
    for point in points or []:
        if point.get("customdata") is not None and "curve_number" in point:
            return int(point["customdata"])
    return None


def block_row_labels(grid: FloorGrid, row_step: int) -> go.Scatter:
    """The row numbers of every block but the first (whose rows the y axis names), each in the blank gap
    just left of its block, level with its row's racks: on a wrapped floor the axis's "row 3" is only the
    first block's row 3, and the block beside it holds row 3 + rows_per_block there."""
    x, y, text = [], [], []
    for first, last in grid.block_rows()[1:]:
        left = float(grid.x(np.array(first), np.array(0)))
        for row in range(first, last + 1, row_step):
            x.append(left - (grid.gap + 1) / 2)
            y.append(float((row % grid.rows_per_block) * (grid.slots + 1) + (grid.slots - 1) / 2))
            text.append(str(row))
    return go.Scatter(
        x=x,
        y=y,
        text=text,
        mode="text",
        textfont={"size": 9, "color": "#555"},
        hoverinfo="skip",
        showlegend=False,
        name="row numbers",
    )
