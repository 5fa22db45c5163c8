"""The GPUs page's health grid: every GPU at one moment as one cell of a canvas (dashboard/gpus/grid_canvas.py).

A rack is a column of hosts, each host a line of its GPUs side by side; racks stand in their row's positions, rows
one under the other with a blank line between. What the browser gets is `HealthGridData`: per GPU its cell, its
colour code and what its hover says, in columns (a 24,576-GPU run sends about 1.2 MB). A Plotly heatmap of the
same grid cost a first visit 1.8 s and a second 0.6 s in headless Chromium on 2 cores (Plotly's 4.7 MB module,
Streamlit's JSON passes over 2.2 MB of hover text, the heatmap's draw): issue 28.

A cell's hover, as the canvas writes it from these columns (tests/test_browser_gpus.py checks it):

    GPU 8 | gt-p00-r00000-h1 #0, rack 0 | Running a job | 72 C, 621 W | XIDs 2 (last 79) | incidents: Faulty GPU

the temperature and power only where a sample is known ("n/a" for the one missing), XIDs and incidents only where
there are any (`notes`).
"""

from typing import TypedDict

import numpy as np
import polars as pl

from dashboard.charts.common import STREAMLIT_FONT, STREAMLIT_LEGEND_TEXT, STREAMLIT_TEXT
from dashboard.charts.gpus import GPU_STATE_COLOURS, GPU_STATE_LABELS, GPU_STATE_ORDER, causes_text
from engine.report.visible_text import visible_expr

FILTERED_OUT = "filtered out"
FILTERED_COLOUR = "#f1f3f5"
GRID_ORDER = (*GPU_STATE_ORDER, FILTERED_OUT)
GRID_COLOURS = {**GPU_STATE_COLOURS, FILTERED_OUT: FILTERED_COLOUR}
GRID_LABELS = {**GPU_STATE_LABELS, FILTERED_OUT: "Filtered out"}
LINE_PX = 6  # a host's line of GPUs (and the blank line under a row of racks)
MAX_HEIGHT_PX = 1400
ROW_LABELS = 40  # at most this many rows labelled ("row 1234"): every k-th where there are more
X_TITLE = "rack position in its row (a rack's hosts stacked, each host's GPUs side by side)"


class HealthGridData(TypedDict):
    """What the canvas draws (JSON). Codes index `colours` and `labels` (GRID_ORDER); GPU columns share one order;
    a label's place is in cells (a row's centre line, a rack position's centre column)."""

    columns: int  # cells across: positions x (GPUs a host + a blank column)
    lines: int  # cells down: rows x (slots + a blank line)
    height_px: int
    colours: list[str]
    labels: list[str]
    legend: list[int]  # the codes in use, in GRID_ORDER
    cell: list[int]  # per GPU: line x columns + column
    shown: list[int]  # per GPU: the code drawn (FILTERED_OUT where the filters leave it out)
    state: list[int]  # per GPU: its state's code (what its hover says, filtered out or not)
    gpu: list[int]
    host: list[int]  # per GPU: its host's place in `hosts`
    index: list[int]  # per GPU: its index on its host
    temp: list[int | None]  # per GPU: its last temperature (C) and power (W), rounded; None where not known
    power: list[int | None]
    notes: dict[str, str]  # GPU's place -> " | XIDs n (last x) | incidents: ...", for the GPUs with any
    hosts: list[str]
    racks: list[int]  # per host
    row_labels: list[tuple[float, str]]
    position_labels: list[tuple[float, str]]
    x_title: str
    font: str
    text_colour: str
    legend_colour: str
    summary: str  # the canvas's accessible name: GPUs by state, in words


def health_grid_height(cells: pl.DataFrame) -> int:
    """The health grid's height in pixels: LINE_PX a line (a host, or the blank line under a row of racks) and
    room for the legend and the axis, at most MAX_HEIGHT_PX."""
    lines = (int(cells["row"].max()) + 1) * (int(cells["slot"].max()) + 2) if cells.height else 1
    return min(MAX_HEIGHT_PX, max(240, LINE_PX * lines + 120))


def grid_notes(cells: pl.DataFrame) -> pl.Series:
    """Per GPU what its hover adds after its temperature and power: " | XIDs 3 (last 79)" where it has XIDs,
    " | incidents: Faulty GPU, ..." where it has incidents (causes in words), else ""."""
    return cells.select(
        (
            pl.when(pl.col("xid_events") > 0)
            .then(
                pl.format(" | XIDs {}", "xid_events")
                + pl.when(pl.col("last_xid").is_not_null())
                .then(pl.format(" (last {})", "last_xid"))
                .otherwise(pl.lit(""))
            )
            .otherwise(pl.lit(""))
            + pl.when(pl.col("causes").list.len() > 0)
            .then(pl.lit(" | incidents: ") + visible_expr(causes_text("causes").list.join(", ")))
            .otherwise(pl.lit(""))
        ).alias("notes")
    )["notes"]


def _rounded(column: pl.Series) -> list[int | None]:
    return column.round(0).cast(pl.Int64).to_list()


def health_grid(cells: pl.DataFrame, match: pl.Series | None = None) -> HealthGridData:
    """The grid of `cells` (dashboard.queries.gpus.grid_at joined with the last samples): one row per GPU with its
    host's row, position (rack in the row) and slot (0 at the bottom of the rack), gpu_index, hostname, rack_id,
    state, temp_c, power_w, xid_events, last_xid, causes. `match`: False cells are drawn "filtered out" (pale)
    so the floor keeps its shape while the filters pick GPUs out."""
    code = {s: i for i, s in enumerate(GRID_ORDER)}
    states = (
        cells["state"]
        .fill_null("unknown")
        .replace_strict(code, default=code["unknown"], return_dtype=pl.Int64)
    )
    shown = (
        states
        if match is None
        else pl.Series(np.where(match.to_numpy(), states.to_numpy(), code[FILTERED_OUT]))
    )
    n = cells.height
    slots = int(cells["slot"].max()) + 1 if n else 1
    rows = int(cells["row"].max()) + 1 if n else 1
    positions = int(cells["position"].max()) + 1 if n else 1
    per_host = int(cells["gpu_index"].max()) + 1 if n else 1
    columns = positions * (per_host + 1)
    line = cells["row"].to_numpy() * (slots + 1) + (slots - 1 - cells["slot"].to_numpy())
    column = cells["position"].to_numpy() * (per_host + 1) + cells["gpu_index"].to_numpy()
    hosts = cells.select(
        visible_expr("hostname").alias("hostname"), "rack_id", pl.col("hostname").rank("dense").alias("place")
    )
    by_host = hosts.unique("place").sort("place")
    notes = grid_notes(cells)
    noted = np.flatnonzero(notes.str.len_chars().to_numpy() > 0)
    row_step = max(1, rows // ROW_LABELS)
    in_use = set(shown.to_list())
    counts = states.value_counts().sort(
        ["count", "state"], descending=[True, False]
    )  # most first, then in order
    summary = ", ".join(f"{GRID_LABELS[GRID_ORDER[s]]} {c:,}" for s, c in counts.iter_rows())
    return HealthGridData(
        columns=columns,
        lines=rows * (slots + 1),
        height_px=health_grid_height(cells),
        colours=[GRID_COLOURS[s] for s in GRID_ORDER],
        labels=[GRID_LABELS[s] for s in GRID_ORDER],
        legend=[i for i in range(len(GRID_ORDER)) if i in in_use],
        cell=(line * columns + column).tolist(),
        shown=shown.to_list(),
        state=states.to_list(),
        gpu=cells["gpu_id"].to_list(),
        host=(hosts["place"] - 1).to_list(),
        index=cells["gpu_index"].to_list(),
        temp=_rounded(cells["temp_c"]),
        power=_rounded(cells["power_w"]),
        notes={str(i): notes[int(i)] for i in noted},
        hosts=by_host["hostname"].to_list(),
        racks=by_host["rack_id"].to_list(),
        row_labels=[(r * (slots + 1) + slots / 2, f"row {r}") for r in range(0, rows, row_step)],
        position_labels=[(p * (per_host + 1) + per_host / 2, str(p)) for p in range(positions)],
        x_title=X_TITLE,
        font=STREAMLIT_FONT,
        text_colour=STREAMLIT_TEXT,
        legend_colour=STREAMLIT_LEGEND_TEXT,
        summary=f"Health grid of {n:,} GPUs: {summary}." if n else "Health grid: no GPUs.",
    )
