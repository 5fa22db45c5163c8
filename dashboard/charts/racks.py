"""Racks charts: the floor plan (one heatmap trace for the whole cluster), coloured by a measure; what it draws
over its cells in dashboard.charts.floor_overlays; states in words and colours in dashboard.charts.host_states.

The floor plan puts each rack in its row and position and stacks its hosts (slot 0 at the bottom) inside the
rack's column; a blank line separates rows, and a floor too tall for a screen wraps its rows into blocks side by
side (dashboard.charts.floor_grid). One Heatmap trace keeps 3,072 hosts quick. States are named in words.
"""

import math
from collections.abc import Collection

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import legend_squares
from dashboard.charts.floor_grid import FloorGrid, grid_for
from dashboard.charts.floor_overlays import (
    NO_PROBLEM,
    NO_PROBLEM_COLOUR,
    block_row_labels,
    greyed_racks,
    over_budget,
    problem_rings,
    rack_handles,
)

# named here too for the callers that read them through this module (tests/test_charts_racks*.py,
# tests/test_charts_pages.py, tests/test_charts_unknown_start.py)
from dashboard.charts.floor_overlays import OVER_BUDGET as OVER_BUDGET
from dashboard.charts.floor_overlays import PROBLEM_RACKS as PROBLEM_RACKS
from dashboard.charts.floor_overlays import RACK_HANDLES as RACK_HANDLES
from dashboard.charts.floor_overlays import clicked_rack as clicked_rack
from dashboard.charts.host_states import STATE_COLOURS, STATE_ORDER, STATE_WORDS, as_plot_text, state_words
from dashboard.charts.host_states import state_history as state_history


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
    `problem_racks` (the problems-only view): the other racks are greyed out, these ringed and handled alone.
    """
    cells = as_plot_text(cells, "hostname", "job_id")
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
    # drawn grey by a layer of its own; their hover still says what they are
    z[y[healthy], x[healthy]] = np.nan
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
            fig.add_trace(greyed_racks(grid, y[healthy], x[healthy], gaps))
    fig.add_traces(legend_squares(legend))
    if problem_racks is not None:
        fig.add_trace(problem_rings(cells, grid, problem_racks))
    over = over_budget(cells, grid)
    if over is not None:
        fig.add_trace(over)
    handled = pl.Series(~healthy)  # problems only: 1,536 handles (SVG points) cost a visit ~0.35 s
    fig.add_trace(rack_handles(cells.filter(handled), states.filter(handled), grid, faint=big))
    fig.update_layout(
        title=title,
        height=grid.height_px,
        margin={"l": 64, "r": 14, "t": 40, "b": 60 if grid.blocks == 1 else 84},  # automargin's: _floor_axes
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


def floor_grid(cells: pl.DataFrame) -> FloorGrid:
    """The grid `cells` (host or GPU cells) are drawn on."""

    def size(column: str) -> int:
        return int(cells[column].max()) + 1 if cells.height else 1

    per_rack = size("gpu_index") + 1 if "gpu_index" in cells.columns and cells.height else 1
    return grid_for(size("row"), size("position"), size("slot"), per_rack)


def _floor_axes(fig: go.Figure, grid: FloorGrid) -> None:
    """Ticks: each rack's position under its column, every k-th row name at the left (those of the first
    block); with blocks side by side, each block says which rows it holds beneath it and numbers its own rows
    in the gap to its left (block_row_labels), so no row is labelled with another block's number."""
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
        ticklabeloverflow="allow",  # Plotly's check of each label costs a big floor a fifth of a second
        # margins set (floor_plan) to what automargin measured at 1280-1920 px: measuring makes Plotly draw every
        # cell again (issue 28)
        automargin=False,
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
    if len(blocks) > 1:
        fig.add_trace(block_row_labels(grid, row_step))
    fig.update_yaxes(
        tickvals=(rows * (grid.slots + 1) + (grid.slots - 1) / 2)[::row_step],
        ticktext=[f"row {r}" for r in rows[::row_step]],
        ticklabeloverflow="allow",
        showgrid=False,
        zeroline=False,
        autorange="reversed",
        automargin=False,
    )
