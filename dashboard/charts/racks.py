"""Racks charts: the floor plan (one heatmap trace for the whole cluster) and a host state history.

The floor plan puts each rack in its row and position and stacks its hosts (slot 0 at the bottom) inside the
rack's column; a blank line separates rows, and a floor too tall for a screen wraps its rows into blocks side
by side (dashboard.charts.floor_grid). One Heatmap trace keeps 3,072 hosts quick where a shape per host would
not be. States are named in words (engine.report.palette), never by their keys.
"""

import math
from collections.abc import Collection
from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import time_axis
from dashboard.charts.floor_grid import PLOT_WIDTH_PX, FloorGrid, grid_for
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


def _discrete_colourscale(colours: list[str]) -> list[list]:
    """A colourscale that maps integer codes 0..n-1 to flat colour bands."""
    n = len(colours)
    scale = []
    for i, colour in enumerate(colours):
        scale += [[i / n, colour], [(i + 1) / n, colour]]
    return scale


MEASURES = {  # what the floor plan can be coloured by
    "state": "Health state",
    "temp": "Temperature",
    "power": "Power against the rack budget",
    "job": "Job",
    "failures": "Failures in the window",
}
NO_READING = "#ced4da"  # a GPU without a recent sample (its host is silent: down or on the bench)
TEMP_RANGE_C = (25.0, 90.0)  # idle H100s sit near 30 °C, busy ones near 70 °C; 85+ °C throttles
TEMP_STOPS = ("#313695", "#74add1", "#e0f3f8", "#fee090", "#f46d43", "#a50026")
POWER_MAX_SHARE = 1.25  # the power scale runs to 125% of the rack budget; the budget sits at 0.8 of it
POWER_STOPS = (
    (0.0, "#f7fcf5"),
    (0.4, "#a1d99b"),
    (0.6, "#41ab5d"),
    (0.72, "#fee08b"),
    (0.8, "#fdae61"),
    (0.8, "#d73027"),
    (1.0, "#67001f"),
)  # over budget: a hard step to red
FAILURE_BANDS = (
    ("no failure", "#e9ecef"),
    ("1 failure", "#fdae61"),
    ("2 failures", "#f46d43"),
    ("3+ failures", "#a50026"),
)
# the blast radius drawn on the floor (measure "blast", read from a `blast` column: 0, 1 or 2)
BLAST_BANDS = (
    ("unaffected", "#e9ecef"),
    ("in a job that stops", "#fd8d3c"),
    ("behind the failed part", "#bd0026"),
)
FLAGSHIP_COLOUR = "#1f77b4"
BIG_FLOOR_COLUMNS = 60  # wider than this many cells, cells touch (no gap) and rack handles are faint
JOB_PALETTE = (
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
)
OTHER_JOBS, NO_JOB = "#adb5bd", "#f1f3f5"
_EDGE = 0.02  # the bottom 2% of a continuous scale is the grey of "no reading"


def _continuous(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Values mapped onto (_EDGE, 1]; missing ones to 0, the grey band."""
    code = _EDGE + (1 - _EDGE) * np.clip((values - low) / (high - low), 0.0, 1.0)
    return np.where(np.isnan(values), 0.0, code.round(3))  # 3 digits: enough for colour, short in JSON


def _as_plot_text(frame: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Names from the data (hostnames, job ids, link ends) as Plotly text, where `frame` has them: they reach
    hover text, legend names and annotations. Every lookup inside a figure sees the same escaped values."""
    return frame.with_columns(plot_expr(c) for c in columns if c in frame.columns)


def _scale_with_grey(stops) -> list[list]:
    """`stops` ((position 0..1, colour), ...) squeezed above the grey "no reading" band."""
    return [[0.0, NO_READING], [_EDGE, NO_READING]] + [[_EDGE + (1 - _EDGE) * p, c] for p, c in stops]


def _colouring(cells: pl.DataFrame, measure: str, states: pl.Series, tdp_w: float, window: str):
    """(codes, colourscale, zmin, zmax, value text per cell, legend entries, colourbar or None) of a measure."""
    if measure == "state":
        return _by_state(states)
    if measure == "job":
        return _by_job(cells)
    if measure == "failures":
        return _by_failures(cells, window)
    if measure == "blast":
        return _by_blast(cells)
    if measure == "temp":
        return _by_temp(cells)
    if measure == "power":
        return _by_power(cells, tdp_w)
    raise ValueError(f"unknown measure {measure!r}; one of {', '.join(MEASURES)}")


def _by_state(states: pl.Series):
    """States in their order and colours."""
    codes = (
        states.replace_strict(
            {s: i for i, s in enumerate(STATE_ORDER)}, default=len(STATE_ORDER) - 1, return_dtype=pl.Int64
        )
        .to_numpy()
        .astype(float)
    )
    present = set(states.to_list())
    legend = [(STATE_WORDS[s], STATE_COLOURS[s]) for s in STATE_ORDER if s in present]
    return (
        codes,
        _discrete_colourscale([STATE_COLOURS[s] for s in STATE_ORDER]),
        -0.5,
        len(STATE_ORDER) - 0.5,
        state_words(states),
        legend,
        None,
    )


def _by_job(cells: pl.DataFrame):
    """The largest jobs in their own colours (the flagship in its own), the others grouped, no job apart."""
    jobs = cells["job_id"].fill_null("")
    sizes = (
        cells.filter(pl.col("job_id").is_not_null())
        .group_by("job_id")
        .agg(pl.len().alias("n"))
        .sort(["n", "job_id"], descending=[True, False])
    )
    kinds = (
        dict(zip(cells["job_id"].to_list(), cells["kind"].to_list(), strict=True))
        if "kind" in cells.columns
        else {}
    )
    named = sizes["job_id"].to_list()[: len(JOB_PALETTE)]
    palette = iter(JOB_PALETTE)
    colours = {j: FLAGSHIP_COLOUR if kinds.get(j) == "flagship" else next(palette) for j in named}
    categories = [*named, "other jobs", "no job"]
    lookup = {j: i for i, j in enumerate(named)}
    codes = jobs.replace_strict(lookup, default=len(named), return_dtype=pl.Int64).to_numpy().astype(float)
    codes[(jobs == "").to_numpy()] = len(named) + 1
    scale_colours = [*colours.values(), OTHER_JOBS, NO_JOB]
    present = set(codes.astype(int).tolist())
    legend = [
        (c, col) for i, (c, col) in enumerate(zip(categories, scale_colours, strict=True)) if i in present
    ]
    text = pl.when(jobs == "").then(pl.lit("no job")).otherwise(pl.lit("job ") + jobs)
    return (
        codes,
        _discrete_colourscale(scale_colours),
        -0.5,
        len(categories) - 0.5,
        cells.select(text.alias("t"))["t"],
        legend,
        None,
    )


def _by_failures(cells: pl.DataFrame, window: str):
    """Failures in the window, in bands."""
    count = cells["failures"].fill_null(0)
    codes = np.minimum(count.to_numpy(), len(FAILURE_BANDS) - 1).astype(float)
    present = set(codes.astype(int).tolist())
    legend = [(n, c) for i, (n, c) in enumerate(FAILURE_BANDS) if i in present]
    text = count.cast(pl.String) + f" failure(s) in the last {window}"
    return (
        codes,
        _discrete_colourscale([c for _, c in FAILURE_BANDS]),
        -0.5,
        len(FAILURE_BANDS) - 0.5,
        text,
        legend,
        None,
    )


def _by_blast(cells: pl.DataFrame):
    """The blast radius of the chosen incident, in bands."""
    codes = cells["blast"].fill_null(0).to_numpy().astype(float)
    present = set(codes.astype(int).tolist())
    legend = [(n, c) for i, (n, c) in enumerate(BLAST_BANDS) if i in present]
    text = (
        cells["blast"]
        .fill_null(0)
        .replace_strict(dict(enumerate(n for n, _ in BLAST_BANDS)), return_dtype=pl.String)
    )
    return (
        codes,
        _discrete_colourscale([c for _, c in BLAST_BANDS]),
        -0.5,
        len(BLAST_BANDS) - 0.5,
        text,
        legend,
        None,
    )


def _by_temp(cells: pl.DataFrame):
    """GPU temperature on a continuous scale, "no reading" in grey."""
    temp = cells["temp_c"].cast(pl.Float64).to_numpy()
    low, high = TEMP_RANGE_C
    stops = [(i / (len(TEMP_STOPS) - 1), c) for i, c in enumerate(TEMP_STOPS)]
    ticks = np.arange(30.0, high + 1, 10.0)
    bar = {
        "title": {"text": "°C"},
        "tickvals": _continuous(ticks, low, high).tolist(),
        "ticktext": [f"{t:.0f}" for t in ticks],
        "thickness": 12,
        "len": 0.6,
    }
    text = cells.select(
        pl.when(pl.col("temp_c").is_null())
        .then(pl.lit("no reading"))
        .otherwise(pl.col("temp_c").round(0).cast(pl.Int64).cast(pl.String) + " °C")
    )
    legend = [("no reading", NO_READING)] if np.isnan(temp).any() else []
    return _continuous(temp, low, high), _scale_with_grey(stops), 0.0, 1.0, text.to_series(), legend, bar


def _by_power(cells: pl.DataFrame, tdp_w: float):
    """Rack power against its budget on a continuous scale; the text gives GPU, host and rack."""
    share = (cells["rack_kw"] / cells["budget_kw"]).cast(pl.Float64).to_numpy()
    ticks = np.array([0.0, 0.25, 0.5, 0.75, 1.0, POWER_MAX_SHARE])
    bar = {
        "title": {"text": "rack / budget"},
        "tickvals": _continuous(ticks, 0, POWER_MAX_SHARE).tolist(),
        "ticktext": [f"{t:.0%}" for t in ticks],
        "thickness": 12,
        "len": 0.6,
    }
    gpu_w = (
        pl.when(pl.col("power_w").is_null())
        .then(pl.lit("GPU no reading"))
        .otherwise(
            pl.format(
                "{} W = {}% TDP",
                pl.col("power_w").round(0).cast(pl.Int64),
                (pl.col("power_w") / tdp_w * 100).round(0).cast(pl.Int64),
            )
        )
    )
    # short: 24,576 of these travel to the browser (the 5 MB budget); the rack handle says the rest
    text = cells.select(
        pl.format(
            "{} · host {} kW · rack {}/{} kW",
            gpu_w,
            pl.col("host_kw").round(1),
            pl.col("rack_kw").round(1),
            pl.col("budget_kw").round(1),
        )
    )
    return (
        _continuous(share, 0.0, POWER_MAX_SHARE),
        _scale_with_grey(POWER_STOPS),
        0.0,
        1.0,
        text.to_series(),
        [],
        bar,
    )


def floor_plan(
    cells: pl.DataFrame,
    measure: str = "state",
    *,
    title: str = "",
    tdp_w: float = 700.0,
    window: str = "day",
    problem_racks: Collection[int] | None = None,
) -> go.Figure:
    """Heatmap of every host (or GPU) at one moment, coloured by `measure` (one of MEASURES).

    `cells`: one row per host with hostname, rack_id, row, position, slot, state (None: unknown); with a
    `gpu_index` column, one row per GPU, drawn side by side inside its host's line. The measures other than
    state read job_id (and kind), temp_c, power_w/host_kw/rack_kw/budget_kw, failures (queries.floor_cells).
    `tdp_w` scales a GPU's power in the hover (700 W: the H100 of the reference); `window` names the failure
    window in the hover. Racks over their power budget (rack_kw > budget_kw) get a red cross for a handle.
    `problem_racks` (the problems-only view): every other rack is greyed out and each of these gets a ring.
    """
    cells = _as_plot_text(cells, "hostname", "job_id")
    states = cells["state"].fill_null("unknown")
    codes, colourscale, zmin, zmax, values, legend, colourbar = _colouring(
        cells, measure, states, tdp_w, window
    )
    grid = floor_grid(cells)
    x, y, label = _cell_places(cells, grid)
    z = np.full(grid.shape, np.nan)
    z[y, x] = codes
    healthy = (
        ~cells["rack_id"].is_in(list(problem_racks)).to_numpy()
        if problem_racks is not None
        else np.zeros(cells.height, dtype=bool)
    )
    z[y[healthy], x[healthy]] = (
        np.nan
    )  # drawn grey by a layer of its own; their hover still says what they are
    big = z.shape[1] > BIG_FLOOR_COLUMNS
    text = np.full(z.shape, "", dtype=object)
    hover = label + " · " + values
    if measure != "state":
        hover = hover + " (" + state_words(states) + ")"
    text[y, x] = hover.to_numpy()
    # a big floor packs its cells (a gap a cell would be half the picture); racks stay apart by a blank column
    gaps = {"xgap": (0 if big else 1) if grid.per_rack > 1 else 2, "ygap": 1}
    fig = go.Figure(
        go.Heatmap(
            z=z,
            text=text,
            hoverinfo="text",
            zmin=zmin,
            zmax=zmax,
            colorscale=colourscale,
            showscale=colourbar is not None,
            colorbar=colourbar,
            **gaps,
        )
    )
    if problem_racks is not None:
        if healthy.any():
            legend = [*legend, (NO_PROBLEM, NO_PROBLEM_COLOUR)]
            fig.add_trace(_greyed(grid, y[healthy], x[healthy], gaps))
    fig.add_traces(_legend(legend))
    if problem_racks is not None:
        fig.add_trace(_problem_rings(cells, grid, problem_racks))
    over = _over_budget(cells, grid)
    if over is not None:
        fig.add_trace(over)
    fig.add_trace(_rack_handles(cells, states, grid, faint=big))
    fig.update_layout(
        title=title,
        height=grid.height_px,
        margin={"l": 10, "r": 10, "t": 40, "b": 10 if grid.blocks == 1 else 30},
        plot_bgcolor="white",
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"},
        # a rack's handle takes the hover (and the click) only under the pointer; elsewhere the cells answer
        hoverdistance=1,
        clickmode="event+select",
    )
    _floor_axes(fig, grid)
    return fig


def _cell_places(cells: pl.DataFrame, grid: FloorGrid) -> tuple[np.ndarray, np.ndarray, pl.Series]:
    """Each cell's column and line on the grid, and its label (host and rack, and GPU for a GPU cell)."""
    rows, slots = cells["row"].to_numpy(), cells["slot"].to_numpy()
    label = cells["hostname"] + " · rack " + cells["rack_id"].cast(pl.String)
    if "gpu_index" in cells.columns:
        x = grid.x(rows, cells["position"].to_numpy(), cells["gpu_index"].to_numpy())
        label = label + " · GPU " + cells["gpu_index"].cast(pl.String)
    else:
        x = grid.x(rows, cells["position"].to_numpy())
    return x, grid.y(rows, slots), label


def _legend(legend: list[tuple[str, str]]) -> list[go.Scatter]:
    """The legend: one invisible marker trace per colour present, so the colours are named."""
    return [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=name,
            showlegend=True,
            marker={"symbol": "square", "size": 12, "color": colour},
        )
        for name, colour in legend
    ]


def floor_grid(cells: pl.DataFrame) -> FloorGrid:
    """The grid `cells` (host or GPU cells) are drawn on."""

    def size(column: str) -> int:
        return int(cells[column].max()) + 1 if cells.height else 1

    per_rack = size("gpu_index") + 1 if "gpu_index" in cells.columns and cells.height else 1
    return grid_for(size("row"), size("position"), size("slot"), per_rack)


def _floor_axes(fig: go.Figure, grid: FloorGrid) -> None:
    """Ticks: each rack's position under its column, every k-th row name at the left (those of the first
    block); with blocks side by side, each block says which rows it holds beneath it."""
    blocks = grid.block_rows()
    step = max(1, math.ceil(grid.positions * len(blocks) / 48))  # at most ~48 position labels across
    ticks = [
        (float(grid.rack_centre(np.array(first), np.array(p))[0]), str(p))
        for first, _ in blocks
        for p in range(0, grid.positions, step)
    ]
    fig.update_xaxes(
        title={"text": "position in row", "standoff": 8 if len(blocks) == 1 else 32},
        showgrid=False,
        zeroline=False,
        tickvals=[v for v, _ in ticks],
        ticktext=[t for _, t in ticks],
    )
    if len(blocks) > 1:
        for first, last in blocks:
            left = float(grid.x(np.array(first), np.array(0)))
            fig.add_annotation(
                x=left + (grid.block_columns - 1) / 2,
                y=0,
                yref="paper",
                yanchor="top",
                yshift=-26,
                showarrow=False,
                text=f"<b>rows {first}–{last}</b>",
            )
    rows = np.arange(grid.rows_per_block)
    row_step = max(1, grid.rows_per_block // 40)  # many rows: label every k-th so the labels stay legible
    fig.update_yaxes(
        tickvals=(rows * (grid.slots + 1) + (grid.slots - 1) / 2)[::row_step],
        ticktext=[f"row {r}" for r in rows[::row_step]],
        showgrid=False,
        zeroline=False,
        autorange="reversed",
    )


RACK_HANDLES = "racks"  # the name of the trace whose points select a rack (customdata: rack_id)


OVER_BUDGET = "over budget"  # the trace that crosses out racks drawing more than their power budget
PROBLEM_RACKS = "racks with a problem"  # the ring around each of them in the problems-only view
NO_PROBLEM = "no problem at t (greyed out)"
NO_PROBLEM_COLOUR = "#e9ecef"
PROBLEM_RING_COLOUR = "#000000"


def _greyed(grid: FloorGrid, y: np.ndarray, x: np.ndarray, gaps: dict) -> go.Heatmap:
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


def _problem_rings(cells: pl.DataFrame, grid: FloorGrid, problem_racks: Collection[int]) -> go.Scatter:
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


def _over_budget(cells: pl.DataFrame, grid: FloorGrid) -> go.Scatter | None:
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


def _rack_handles(cells: pl.DataFrame, states: pl.Series, grid: FloorGrid, faint: bool = False) -> go.Scatter:
    """A small dot in the middle of each rack: one scatter trace a page can listen to for clicks (a heatmap
    cell sends no selection event), its hover summing up the rack's hosts."""
    failed = pl.col("state") == "failed"
    hosts = (
        cells.with_columns(states.alias("state"))
        .group_by("rack_id", "hostname", maintain_order=True)
        .agg(
            pl.col("row").first(),
            pl.col("position").first(),
            pl.col("slot").first(),
            pl.col("state").filter(~failed).first().fill_null("failed").alias("state"),
            failed.sum().alias("failed_gpus"),
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


def state_history(intervals: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Host state intervals (hostname, state, start_s, end_s, job_id) as a bar per interval, a row per host."""
    frame = _as_plot_text(intervals, "hostname", "job_id").with_columns(
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
