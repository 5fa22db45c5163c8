"""Where each rack, host and GPU of the floor plan sits on the heatmap's grid, so that a whole floor fits a screen.

A floor is rows of racks; each rack a column of hosts (slot 0 at the bottom), each host a line of cells (one
cell a host, or one a GPU side by side). Drawn as the data lays it out, llama3-405b's 96 rows of 16 racks are
288 lines of cells: a 2,400 px scroll. So when a floor has more lines than fit a 1080p screen, its rows wrap
into blocks set side by side (rows 0-47 on the left, 48-95 on the right), the number of blocks chosen to keep
cells about as wide as tall. A small floor stays one block, exactly as laid out.
"""

import math
from typing import NamedTuple

import numpy as np

MAX_LINES = 150  # lines of cells in a block: at the floor's full height each is still 5 px or more
MAX_HEIGHT_PX = 820  # the figure's height: with the page's header, a 1080p screen shows the whole floor
MIN_HEIGHT_PX = 240
LINE_PX = 9  # a line's height while the floor is small enough
FRAME_PX = 120  # legend, axes and margins around the cells
PLOT_WIDTH_PX = (
    1100  # about the width Streamlit gives a chart on a 1600 px screen (for the cells' shape only)
)
MAX_BLOCKS = 12


class FloorGrid(NamedTuple):
    """The grid of one floor: `rows` rows of `positions` racks, `slots` hosts a rack, `per_rack` columns a
    rack (1 for host cells; GPUs + a blank column for GPU cells), wrapped into `blocks` blocks of
    `rows_per_block` rows, `gap` blank columns between blocks."""

    rows: int
    positions: int
    slots: int
    per_rack: int
    blocks: int
    rows_per_block: int
    gap: int

    @property
    def block_columns(self) -> int:
        return self.positions * self.per_rack

    @property
    def shape(self) -> tuple[int, int]:
        return (
            self.rows_per_block * (self.slots + 1),
            self.blocks * self.block_columns + (self.blocks - 1) * self.gap,
        )

    @property
    def height_px(self) -> int:
        return int(min(MAX_HEIGHT_PX, max(MIN_HEIGHT_PX, LINE_PX * self.shape[0] + FRAME_PX)))

    def block_left(self, row: np.ndarray) -> np.ndarray:
        """The first column of the block a row falls in."""
        return (row // self.rows_per_block) * (self.block_columns + self.gap)

    def x(self, row: np.ndarray, position: np.ndarray, column: np.ndarray | int = 0) -> np.ndarray:
        """The column of a cell: its rack's place in its row's block, plus its column inside the rack."""
        return self.block_left(row) + position * self.per_rack + column

    def y(self, row: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """The line of a host: slots + 1 lines a row (a blank one between rows), slot 0 at the bottom."""
        return (row % self.rows_per_block) * (self.slots + 1) + (self.slots - 1 - slot)

    def rack_centre(self, row: np.ndarray, position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where a rack's handle (its dot) sits: the middle of its cells."""
        inside = (self.per_rack - 2) / 2 if self.per_rack > 1 else 0.0
        return (
            self.x(row, position) + inside,
            (row % self.rows_per_block) * (self.slots + 1) + (self.slots - 1) / 2,
        )

    def block_rows(self) -> list[tuple[int, int]]:
        """(first row, last row) of each block, left to right."""
        return [
            (b * self.rows_per_block, min(self.rows, (b + 1) * self.rows_per_block) - 1)
            for b in range(self.blocks)
        ]


def grid_for(rows: int, positions: int, slots: int, per_rack: int) -> FloorGrid:
    """The grid of a floor: one block while its lines fit MAX_LINES, else the number of blocks (each of at
    most MAX_LINES lines) whose cells come closest to square on a screen-sized figure."""
    gap = max(
        per_rack, 3
    )  # a rack's width between blocks, and room for the row numbers of the block right of it

    def lines(blocks: int) -> int:
        return math.ceil(rows / blocks) * (slots + 1)

    def squareness(blocks: int) -> float:
        columns = blocks * positions * per_rack + (blocks - 1) * gap
        height = min(MAX_HEIGHT_PX, max(MIN_HEIGHT_PX, LINE_PX * lines(blocks) + FRAME_PX)) - FRAME_PX
        return abs(math.log((PLOT_WIDTH_PX / columns) / (height / lines(blocks))))

    blocks = 1
    if lines(1) > MAX_LINES:
        fitting = [k for k in range(2, min(rows, MAX_BLOCKS) + 1) if lines(k) <= MAX_LINES]
        blocks = min(fitting, key=squareness) if fitting else min(rows, MAX_BLOCKS)
    per_block = math.ceil(rows / blocks)
    return FloorGrid(rows, positions, slots, per_rack, math.ceil(rows / per_block), per_block, gap)
