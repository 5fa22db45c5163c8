"""The floor plan at scale: the grid that wraps a tall floor into blocks (Hypothesis: every cell has a place of
its own), the problems-only view, the failed GPU's colour, and the rack a blast radius opens on."""

import math

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from test_charts_racks import cells_at, run_id  # noqa: F401 (the fixture)

from dashboard.charts import floor_grid
from dashboard.charts import racks as charts
from dashboard.queries import racks as queries
from dashboard.racks.floor import host_cells
from engine.report import palette


def _luminance(colour: str) -> float:
    """WCAG relative luminance of "#rrggbb"."""

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(colour[i : i + 2], 16) / 255) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_a_failed_gpu_differs_from_every_state_by_lightness_not_hue_alone():
    assert charts.STATE_COLOURS["failed"] == palette.GPU_FAILED_COLOUR
    others = {s: c for s, c in charts.STATE_COLOURS.items() if s != "failed"}
    # 3:1 is WCAG's contrast for graphics: readable without telling hues apart (any colour vision)
    assert min(_contrast(palette.GPU_FAILED_COLOUR, c) for c in others.values()) >= 3.0
    assert _contrast(palette.GPU_FAILED_COLOUR, charts.STATE_COLOURS["running"]) >= 4.0
    assert _contrast("#5c0011", charts.STATE_COLOURS["running"]) < 3.0  # the maroon it replaces did not


# ----- the grid ---------------------------------------------------------------------------------------------


def test_llama3_floor_wraps_into_two_blocks_that_fit_a_1080p_screen():
    grid = floor_grid.grid_for(rows=96, positions=16, slots=2, per_rack=9)  # 1,536 racks, GPU cells
    assert (grid.blocks, grid.rows_per_block) == (2, 48)
    assert grid.shape == (144, 2 * 144 + 9)  # 48 rows of 3 lines; two blocks a rack's width apart
    assert grid.height_px == floor_grid.MAX_HEIGHT_PX <= 820
    assert grid.block_rows() == [(0, 47), (48, 95)]
    # row 48 starts the second block, on the first block's top line
    assert int(grid.y(np.array(48), np.array(1))) == 0 and int(grid.x(np.array(48), np.array(0))) == 144 + 9
    hosts = floor_grid.grid_for(
        rows=96, positions=16, slots=2, per_rack=1
    )  # host cells: squarer, more blocks
    assert hosts.blocks > 2 and hosts.shape[0] <= floor_grid.MAX_LINES


def test_a_small_floor_stays_one_block_as_laid_out():
    grid = floor_grid.grid_for(rows=2, positions=2, slots=2, per_rack=3)
    assert (grid.blocks, grid.shape, grid.height_px) == (1, (6, 6), floor_grid.MIN_HEIGHT_PX)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.integers(1, 400),
    positions=st.integers(1, 40),
    slots=st.integers(1, 8),
    per_rack=st.sampled_from([1, 3, 5, 9]),
)
def test_every_cell_of_any_floor_has_a_place_of_its_own(rows, positions, slots, per_rack):
    grid = floor_grid.grid_for(rows, positions, slots, per_rack)
    row, position, slot, column = (
        a.ravel()
        for a in np.meshgrid(
            np.arange(rows),
            np.arange(positions),
            np.arange(slots),
            np.arange(max(per_rack - 1, 1)),
            indexing="ij",
        )
    )
    x, y = grid.x(row, position, column), grid.y(row, slot)
    assert x.min() >= 0 and y.min() >= 0 and x.max() < grid.shape[1] and y.max() < grid.shape[0]
    assert len(set(zip(x.tolist(), y.tolist(), strict=True))) == x.size  # no two cells on one spot
    lines_one_block = rows * (slots + 1)
    if lines_one_block <= floor_grid.MAX_LINES:
        assert grid.blocks == 1
    elif math.ceil(rows / floor_grid.MAX_BLOCKS) * (slots + 1) <= floor_grid.MAX_LINES:
        assert grid.shape[0] <= floor_grid.MAX_LINES  # a block never taller than a screen can show
    assert grid.blocks == math.ceil(rows / grid.rows_per_block)  # no empty block
    assert floor_grid.MIN_HEIGHT_PX <= grid.height_px <= floor_grid.MAX_HEIGHT_PX


# ----- problems only ----------------------------------------------------------------------------------------


def test_problem_racks_at_30000_and_before_the_failure(run_id):  # noqa: F811 (the fixture)
    at = queries.hosts_at(run_id, 30000.0)
    problems = queries.problem_racks(at, cells_at(run_id, 30000.0))
    assert problems.to_dicts() == [
        {
            "rack_id": 0,
            "row": 0,
            "position": 0,
            "hosts_out_of_service": 1,
            "failed_gpus": 1,
            "states": ["repair"],
        }
    ]
    # a link incident is no host out of service: at 51,000 s rack 2's uplink is down, yet only rack 0 counts
    assert queries.problem_racks(queries.hosts_at(run_id, 51000.0), cells_at(run_id, 51000.0))[
        "rack_id"
    ].to_list() == [0]
    assert queries.problem_racks(queries.hosts_at(run_id, 10000.0), cells_at(run_id, 10000.0)).is_empty()


def test_problems_only_greys_every_other_rack_and_rings_the_broken_one(run_id):  # noqa: F811
    cells = cells_at(run_id, 30000.0)
    fig = charts.floor_plan(cells, "state", problem_racks=[0])
    z = np.asarray(fig.data[0].z, dtype=float)
    grey = next(t for t in fig.data if t.type == "heatmap" and t.name == charts.NO_PROBLEM)
    greyed = ~np.isnan(np.asarray(grey.z, dtype=float))
    # rack 0 (columns 0-1 of lines 0-1) keeps its colours; racks 1-3 are grey only
    assert not greyed[0:2, 0:2].any() and not np.isnan(z[0:2, 0:2]).any()
    assert greyed[0:2, 3:5].all() and greyed[3:5, 0:2].all() and greyed[3:5, 3:5].all()
    assert np.isnan(z[greyed]).all() and int(greyed.sum()) == 12
    assert grey.colorscale[0][1] == charts.NO_PROBLEM_COLOUR and grey.hoverinfo == "skip"
    rings = next(t for t in fig.data if t.name == charts.PROBLEM_RACKS)
    assert list(rings.customdata) == [0] and list(rings.x) == [0.5] and list(rings.y) == [0.5]
    assert charts.NO_PROBLEM in {t.name for t in fig.data if t.type == "scatter"}  # named in the legend
    # the greyed cells still say what they are on hover
    assert fig.data[0].text[0][3] == "gt-p00-r00001-h1 · rack 1 · GPU 0 · Running a job"
    # only the ringed rack has a handle to click (Rack below the floor opens any other)
    handles = fig.data[-1]
    assert handles.name == charts.RACK_HANDLES and list(handles.customdata) == [0]
    assert handles.text[0].startswith("<b>rack 0</b> (click to open)")
    # every rack has one when the floor is shown whole
    assert list(charts.floor_plan(cells, "state").data[-1].customdata) == [0, 1, 2, 3]


def test_a_host_cell_shows_a_failed_gpu_unless_its_host_is_out_of_service(run_id):  # noqa: F811
    hosts, cells = queries.hosts_at(run_id, 30000.0), cells_at(run_id, 30000.0)
    shown = host_cells(hosts, cells, 2.5).sort("host_id")
    # host 1 is in repair with its failed GPU 3: the host's state is the larger news
    assert shown.filter(pl.col("host_id") == 1).select("state", "host_state", "failed_gpus").row(0) == (
        "repair",
        "repair",
        1,
    )
    # the same failed GPU on a host in service shows as a failed GPU, as a GPU cell would
    in_service = hosts.with_columns(
        pl.when(pl.col("host_id") == 1).then(pl.lit("running")).otherwise("state").alias("state")
    )
    again = host_cells(in_service, cells, 2.5).filter(pl.col("host_id") == 1)
    assert again.select("state", "host_state", "failed_gpus").row(0) == ("failed", "running", 1)
    assert shown.height == hosts.height and shown["failed_gpus"].sum() == 1
    # the rack's handle names the host by its own state and counts its failed GPU
    fig = charts.floor_plan(again.vstack(host_cells(in_service, cells, 2.5).filter(pl.col("host_id") == 0)))
    assert "gt-p00-r00000-h1: Running a job, 1 GPU failed" in fig.data[-1].text[0]


def test_problems_only_without_a_problem_greys_the_whole_floor(run_id):  # noqa: F811
    fig = charts.floor_plan(cells_at(run_id, 10000.0), "temp", problem_racks=[])
    assert np.isnan(np.asarray(fig.data[0].z, dtype=float)).all()
    rings = next(t for t in fig.data if t.name == charts.PROBLEM_RACKS)
    assert len(rings.x) == 0 and not rings.showlegend


def test_the_24576_gpu_floor_in_problems_only_view_stays_small():
    host = np.repeat(np.arange(3072), 8)
    rack = host // 2
    cells = pl.DataFrame(
        {
            "host_id": host,
            "hostname": [f"h{h}" for h in host],
            "rack_id": rack,
            "row": rack // 16,
            "position": rack % 16,
            "slot": host % 2,
            "gpu_index": np.tile(np.arange(8), 3072),
            "state": np.where(host % 700 == 3, "repair", "running"),
        }
    )
    fig = charts.floor_plan(cells, "state", problem_racks=[1, 351, 701, 1051, 1401])
    assert len(fig.to_json()) < 5_000_000
    assert fig.layout.height <= floor_grid.MAX_HEIGHT_PX
    shown = np.count_nonzero(~np.isnan(np.asarray(fig.data[0].z, dtype=float)))
    assert shown == 5 * 16  # the five racks with a problem, 2 hosts of 8 GPUs each
    assert [a.text for a in fig.layout.annotations] == ["<b>rows 0–47</b>", "<b>rows 48–95</b>"]


def test_the_blast_radius_opens_on_the_open_rack(run_id):  # noqa: F811
    hosts = queries.hosts_at(run_id, 30000.0)
    assert [queries.blast_target_of_rack(hosts, k, 2) for k in queries.BLAST_KINDS] == [
        "2",
        "gt-p01-r00002-h1",
        "rtsw-2",
        "ctsw-1-0",
    ]
    assert queries.blast_target_of_rack(hosts, "rack", 99) is None


def test_the_elevation_names_each_hosts_own_state_in_words(run_id):  # noqa: F811
    from dashboard.charts.rack_elevation import elevation

    cells = cells_at(run_id, 30000.0).filter(pl.col("rack_id") == 0)
    fig = elevation(cells, queries.rack_links(run_id, 0, 30000.0), 0)
    hosts = sorted(a.text for a in fig.layout.annotations if a.text.startswith("<b>gt-"))
    # host 1's GPU 3 failed: its cell is a failed GPU, the host itself is in repair
    assert hosts == [
        "<b>gt-p00-r00000-h0</b><br>Running a job<br>flag · 1.3 kW",
        "<b>gt-p00-r00000-h1</b><br>In repair<br>no job · 0.0 kW",
    ]
    assert {t.name for t in fig.data if t.name in charts.STATE_WORDS.values()} == {
        "Running a job",
        "In repair",
        "Failed GPU",
    }


def test_a_wrapped_floor_labels_each_row_once():
    """Issue 28: on a floor wrapped into blocks, the y axis named only the first block's rows, so the block
    beside it read as rows 0-47 again. Each further block numbers its own rows in the gap to its left."""
    import plotly.graph_objects as go

    grid = floor_grid.grid_for(rows=96, positions=16, slots=2, per_rack=9)
    fig = go.Figure()
    charts._floor_axes(fig, grid)
    assert list(fig.layout.yaxis.ticktext)[:2] == ["row 0", "row 1"] and len(fig.layout.yaxis.ticktext) == 48
    (labels,) = [t for t in fig.data if t.mode == "text"]
    assert list(labels.text) == [str(r) for r in range(48, 96)]  # the right block's rows, each once
    named = [*fig.layout.yaxis.ticktext, *labels.text]
    assert sorted(int(t.removeprefix("row ")) for t in named) == list(range(96))
    # level with their rows, in the blank gap just left of the second block
    second = int(grid.x(np.array(48), np.array(0)))
    assert all(second - grid.gap <= x < second for x in labels.x)
    assert list(labels.y) == list(fig.layout.yaxis.tickvals)
    assert labels.hoverinfo == "skip" and labels.showlegend is False
    # a floor of one block has its axis only
    small = go.Figure()
    charts._floor_axes(small, floor_grid.grid_for(rows=4, positions=8, slots=2, per_rack=9))
    assert not small.data
