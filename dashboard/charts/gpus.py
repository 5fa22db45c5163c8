"""GPUs charts: the health grid, health counts, XID counts (in total, over time, or event by event for a short
observed run), ECC trends. The lemons and the repeat offenders' history are in dashboard.charts.lemons, one
GPU's telemetry and a watched fleet's band in dashboard.charts.gpu_telemetry.

Every colour and label comes from engine.report.palette, as on the other pages and in the HTML export: a state, a
cause or an XID code has one colour and one name in words on every chart. XID codes are categories, never a
numeric axis ("20034" is a code, not 20.034k), and counts take whole-number ticks (dashboard.charts.common.
count_axis).
"""

from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import as_time, count_axis, hover_time, legend_squares, time_axis

# named here too for the tests that read them through this module (tests/test_charts_gpus.py,
# tests/test_charts_pages.py, tests/test_charts_unknown_start.py, tests/test_page_gpus*.py)
from dashboard.charts.gpu_telemetry import fleet_band as fleet_band
from dashboard.charts.gpu_telemetry import gpu_telemetry as gpu_telemetry
from dashboard.charts.lemons import clicked_gpu as clicked_gpu
from dashboard.charts.lemons import lemon_truth as lemon_truth
from dashboard.charts.lemons import offender_history as offender_history
from dashboard.format import fmt_duration
from dashboard.text import plot, plot_expr
from engine.analysis.definitions import definition
from engine.reference import CAUSES, PLANNED_CAUSE, XID_BY_CODE
from engine.report.palette import (
    GPU_FAILED_COLOUR,
    GPU_FAILED_LABEL,
    HOST_STATE_COLOURS,
    HOST_STATE_LABELS,
    OTHER_COLOUR,
    UNKNOWN_STATE_COLOUR,
    UNKNOWN_STATE_LABEL,
    cause_label,
    xid_colour,
    xid_label,
)
from engine.store.schema import HOST_STATES

# A GPU cell's state: its host's, unless the GPU itself has an unrepaired incident ("failed"); "unknown" when
# no host_states interval covers the moment (observed runs).
GPU_STATE_ORDER: tuple[str, ...] = (*HOST_STATES, "failed", "unknown")
GPU_STATE_COLOURS: dict[str, str] = {
    **HOST_STATE_COLOURS,
    "failed": GPU_FAILED_COLOUR,
    "unknown": UNKNOWN_STATE_COLOUR,
}
GPU_STATE_LABELS: dict[str, str] = {
    **HOST_STATE_LABELS,
    "failed": GPU_FAILED_LABEL,
    "unknown": UNKNOWN_STATE_LABEL,
}


def gpu_state_label(state: str) -> str:
    return GPU_STATE_LABELS.get(state, state)


def gpu_state_text(column: str | pl.Expr) -> pl.Expr:
    """gpu_state_label for a column (a null state is "unknown")."""
    x = (pl.col(column) if isinstance(column, str) else column).cast(pl.String).fill_null("unknown")
    return x.replace_strict(GPU_STATE_LABELS, default=x, return_dtype=pl.String)


def xid_label_text(column: str | pl.Expr) -> pl.Expr:
    """engine.report.palette.xid_label for a column: "79 GPU_HAS_FALLEN_OFF_THE_BUS", a code the catalogue
    lacks bare."""
    x = pl.col(column) if isinstance(column, str) else column
    labels = {code: xid_label(code) for code in XID_BY_CODE}
    return (
        pl.when(x.is_not_null())
        .then(x.cast(pl.Int64).replace_strict(labels, default=x.cast(pl.String), return_dtype=pl.String))
        .name.keep()
    )


_CAUSE_LABELS = {c.cause: cause_label(c.cause) for c in (*CAUSES, PLANNED_CAUSE)}


def causes_text(column: str | pl.Expr) -> pl.Expr:
    """A list column of cause keys as the list of their labels, engine.report.palette.cause_label element by element
    (text_exprs.cause_label_text keeps its column's name, which a list element has none of)."""
    x = pl.col(column) if isinstance(column, str) else column
    key = pl.element().cast(pl.String)
    words = key.str.replace_all("_", " ", literal=True)
    readable = words.str.head(1).str.to_uppercase() + words.str.slice(1).str.to_lowercase()
    return x.list.eval(key.replace_strict(_CAUSE_LABELS, default=readable, return_dtype=pl.String))


def colour_bands(colours: list[str]) -> list[list]:
    """A colourscale that maps integer codes 0..n-1 to flat colour bands (a categorical heatmap)."""
    n = len(colours)
    scale = []
    for i, colour in enumerate(colours):
        scale += [[i / n, colour], [(i + 1) / n, colour]]
    return scale


def health_counts(counts: pl.DataFrame) -> go.Figure:
    """GPUs by state (columns state, gpus) as one bar per state, named in words, in the state colours."""
    states = counts["state"].fill_null("unknown").to_list()
    fig = go.Figure(
        go.Bar(
            x=[gpu_state_label(s) for s in states],
            y=counts["gpus"].to_list(),
            text=counts["gpus"].to_list(),
            marker_color=[GPU_STATE_COLOURS.get(s, OTHER_COLOUR) for s in states],
        )
    )
    fig.update_layout(height=280, margin={"l": 10, "r": 10, "t": 10, "b": 10})
    fig.update_xaxes(type="category")
    fig.update_yaxes(title="GPUs", **count_axis(max(counts["gpus"].to_list(), default=0)))
    return fig


def xid_counts(counts: pl.DataFrame) -> go.Figure:
    """XID events by code (columns xid, events), most first: one bar per code in its palette colour, the code
    and its name as a category label."""
    codes = counts["xid"].to_list()
    fig = go.Figure(
        go.Bar(
            x=counts["events"].to_list(),
            y=[xid_label(x) for x in codes],
            orientation="h",
            text=counts["events"].to_list(),
            marker_color=[xid_colour(x) for x in codes],
            hovertemplate="%{y}<br>%{x:,d} events<extra></extra>",
        )
    )
    fig.update_layout(height=max(200, 28 * counts.height + 80), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    fig.update_xaxes(
        title=definition("xid_events").label, **count_axis(max(counts["events"].to_list(), default=0))
    )
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


def xid_timeline(counts: pl.DataFrame, started_at: datetime, window_s: float) -> go.Figure:
    """XID events per window (columns t_s, xid, count from engine xid_counts) as bars stacked by code, the
    code with the most events first, each code in its palette colour."""
    fig = go.Figure()
    totals = (
        counts.group_by("xid").agg(pl.col("count").sum()).sort(["count", "xid"], descending=[True, False])
    )
    for xid in totals["xid"].to_list():
        part = counts.filter(pl.col("xid") == xid)
        fig.add_trace(
            go.Bar(
                x=as_time(started_at, part["t_s"].to_numpy() + window_s / 2),
                y=part["count"].to_list(),
                width=window_s * 1000 * 0.9,
                name=xid_label(xid),
                marker_color=xid_colour(xid),
                hovertemplate="%{x}<br>%{y:,d} events<extra>%{fullData.name}</extra>",
            )
        )
    per_window = counts.group_by("t_s").agg(pl.col("count").sum())["count"].max() if counts.height else 0
    fig.update_layout(
        barmode="stack",
        height=320,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        legend={"orientation": "h", "y": -0.2},
    )
    fig.update_yaxes(
        title=f"{definition('xid_events').label} per {fmt_duration(window_s)}", **count_axis(per_window)
    )
    return time_axis(fig, started_at)


def xid_strip(events: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Each XID event (columns t_s, xid) as a mark at its time on its code's row: for an observed run too
    short for counts per window (one kernel log of a few seconds), where bars would say nothing."""
    fig = go.Figure()
    order = (
        events.group_by("xid")
        .agg(pl.len().alias("n"))
        .sort(["n", "xid"], descending=[True, False])["xid"]
        .to_list()
    )
    for xid in order:
        part = events.filter(pl.col("xid") == xid)
        fig.add_trace(
            go.Scatter(
                x=as_time(started_at, part["t_s"].to_numpy()),
                y=[xid_label(xid)] * part.height,
                mode="markers",
                name=xid_label(xid),
                marker={"size": 22, "symbol": "line-ns-open", "line": {"width": 3}, "color": xid_colour(xid)},
                hovertemplate=hover_time(started_at, "milliseconds") + "<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_layout(
        height=max(180, 40 * len(order) + 100), margin={"l": 10, "r": 10, "t": 10, "b": 10}, showlegend=False
    )
    if events.height:  # a margin either side, so the first and last marks are not cut by the frame
        first, last = events["t_s"].min(), events["t_s"].max()
        pad = max(last - first, 1.0) * 0.05
        fig.update_xaxes(range=list(as_time(started_at, np.array([first - pad, last + pad]))))
    fig.update_yaxes(
        type="category", categoryorder="array", categoryarray=[xid_label(x) for x in reversed(order)]
    )
    return time_axis(fig, started_at, "milliseconds", tickformat="%H:%M:%S", title="time (UTC)")


FILTERED_OUT = "filtered out"
FILTERED_COLOUR = "#f1f3f5"
GRID_ORDER = (*GPU_STATE_ORDER, FILTERED_OUT)
GRID_COLOURS = {**GPU_STATE_COLOURS, FILTERED_OUT: FILTERED_COLOUR}
GRID_LABELS = {**GPU_STATE_LABELS, FILTERED_OUT: "Filtered out"}


def _number(column: str) -> pl.Expr:
    return pl.col(column).round(0).cast(pl.Int64).cast(pl.String).fill_null("n/a")


def grid_hover(cells: pl.DataFrame) -> pl.Series:
    """One plain ASCII line per GPU: Plotly's JSON escapes every `<`, `/` and non-ASCII character (six bytes
    each), and a per-cell template over customdata costs ten times more to build and serialise, so 24,576 hover
    texts stay one line without markup. States and causes in words; the last temperature and power where a
    sample is known, XIDs and incidents where there are any (what is not there costs every GPU bytes on every
    visit: issue 28)."""
    known = pl.col("temp_c").is_not_null() | pl.col("power_w").is_not_null()
    return cells.select(
        pl.format(
            "GPU {} | {} #{}, rack {} | {}{}{}{}",
            "gpu_id",
            plot_expr("hostname"),
            "gpu_index",
            "rack_id",
            gpu_state_text("state"),
            pl.when(known)
            .then(pl.format(" | {} C, {} W", _number("temp_c"), _number("power_w")))
            .otherwise(pl.lit("")),
            pl.when(pl.col("xid_events") > 0)
            .then(
                pl.format(" | XIDs {}", "xid_events")
                + pl.when(pl.col("last_xid").is_not_null())
                .then(pl.format(" (last {})", "last_xid"))
                .otherwise(pl.lit(""))
            )
            .otherwise(pl.lit("")),
            pl.when(pl.col("causes").list.len() > 0)
            .then(pl.lit(" | incidents: ") + plot_expr(causes_text("causes").list.join(", ")))
            .otherwise(pl.lit("")),
        ).alias("hover")
    )["hover"]


def health_grid_height(cells: pl.DataFrame) -> int:
    """The health grid's height in pixels: 6 a line (a host, or the blank line under a row of racks), at most
    1,400."""
    lines = (int(cells["row"].max()) + 1) * (int(cells["slot"].max()) + 2) if cells.height else 1
    return min(1400, max(240, 6 * lines + 120))


def health_grid(cells: pl.DataFrame, match: pl.Series | None = None) -> go.Figure:
    """Every GPU at one moment as one heatmap cell (one trace, so 24,576 GPUs stay light).

    `cells` (dashboard.queries.gpus.grid_at): one row per GPU with its host's row, position (rack in the row)
    and slot (0 at the bottom of the rack), gpu_index, state, temp_c, power_w, xid_events, last_xid, causes.
    A rack is a column of hosts, each host a line of its GPUs side by side; racks stand in their row's
    positions, rows one under the other with a blank line between. `match`: False cells are drawn
    "filtered out" (pale) so the floor keeps its shape while the filters pick GPUs out.
    """
    states = cells["state"].fill_null("unknown")
    shown = (
        states if match is None else pl.Series(np.where(match.to_numpy(), states.to_numpy(), FILTERED_OUT))
    )
    codes = shown.replace_strict(
        {s: i for i, s in enumerate(GRID_ORDER)}, default=GRID_ORDER.index("unknown"), return_dtype=pl.Int64
    ).to_numpy()
    n = cells.height
    slots = int(cells["slot"].max()) + 1 if n else 1
    rows = int(cells["row"].max()) + 1 if n else 1
    positions = int(cells["position"].max()) + 1 if n else 1
    per_host = int(cells["gpu_index"].max()) + 1 if n else 1
    y = cells["row"].to_numpy() * (slots + 1) + (slots - 1 - cells["slot"].to_numpy())
    x = cells["position"].to_numpy() * (per_host + 1) + cells["gpu_index"].to_numpy()
    # float32: the state codes are small whole numbers, and half the bytes of float64 go to the browser
    z = np.full((rows * (slots + 1), positions * (per_host + 1)), np.nan, dtype=np.float32)
    z[y, x] = codes
    text = np.full(z.shape, "", dtype=object)
    text[y, x] = grid_hover(cells).to_numpy()
    fig = go.Figure(
        go.Heatmap(
            z=z,
            text=text,
            hovertemplate="%{text}<extra></extra>",
            hoverongaps=False,
            zmin=-0.5,
            zmax=len(GRID_ORDER) - 0.5,
            xgap=1,
            ygap=1,
            colorscale=colour_bands([GRID_COLOURS[s] for s in GRID_ORDER]),
            showscale=False,
        )
    )
    present = set(shown.to_list())  # a named legend entry for every colour in use
    fig.add_traces(legend_squares((GRID_LABELS[s], GRID_COLOURS[s]) for s in GRID_ORDER if s in present))
    # Margins that hold the row labels ("row 1234"), the rack positions and the axis title, set rather than
    # measured: Plotly's automargin draws the grid, measures its labels and draws all 41k cells again (three
    # draws a visit instead of two, about 0.15 s on 2 cores: issue 28). The legend above may still push the top.
    fig.update_layout(
        height=health_grid_height(cells),
        margin={"l": 64, "r": 10, "t": 40, "b": 50},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"},
    )
    row_step = max(
        1, rows // 40
    )  # many rows: every k-th labelled, legible (as on the Racks page's floor plan)
    # labels may overflow the plot's edge: Plotly's check of each one costs a 24k-GPU grid 0.4 s (issue 28)
    fig.update_xaxes(
        title="rack position in its row (a rack's hosts stacked, each host's GPUs side by side)",
        showgrid=False,
        zeroline=False,
        tickvals=np.arange(positions) * (per_host + 1) + (per_host - 1) / 2,
        ticktext=[str(p) for p in range(positions)],
        ticklabeloverflow="allow",
        automargin=False,
    )
    fig.update_yaxes(
        tickvals=(np.arange(rows) * (slots + 1) + (slots - 1) / 2)[::row_step],
        ticktext=[f"row {r}" for r in range(rows)][::row_step],
        showgrid=False,
        zeroline=False,
        autorange="reversed",
        ticklabeloverflow="allow",
        automargin=False,
    )
    return fig


def ecc_trend(trend: pl.DataFrame, labels: dict[int, str], started_at: datetime) -> go.Figure:
    """Single-bit (top panel) and double-bit (bottom) ECC counts over time (columns gpu_id, t_s, ecc_sbe,
    ecc_dbe), a line per GPU named by `labels`. Two y axes on one x axis, laid out by hand: make_subplots
    costs a tenth of a second, a tenth of the page's budget."""
    fig = go.Figure()
    palette = (
        "#1c7ed6",
        "#e8590c",
        "#2f9e44",
        "#c92a2a",
        "#862e9c",
        "#f08c00",
        "#0c8599",
        "#5c940d",
        "#d6336c",
        "#495057",
    )
    for i, gpu in enumerate(trend["gpu_id"].unique(maintain_order=True).to_list()):
        part = trend.filter(pl.col("gpu_id") == gpu)
        x = as_time(started_at, part["t_s"].to_numpy())
        style = {"color": palette[i % len(palette)]}
        name = plot(labels.get(gpu, f"GPU {gpu}"))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["ecc_sbe"].to_list(),
                mode="lines",
                name=name,
                legendgroup=name,
                line=style,
                yaxis="y",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["ecc_dbe"].to_list(),
                mode="lines",
                name=name,
                legendgroup=name,
                line=style,
                showlegend=False,
                yaxis="y2",
            )
        )
    fig.update_layout(
        height=460,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis={
            "domain": [0.55, 1.0],
            "title": "single-bit (corrected)",
            **count_axis(trend["ecc_sbe"].max()),
        },
        yaxis2={
            "domain": [0.0, 0.45],
            "title": "double-bit (uncorrectable)",
            **count_axis(trend["ecc_dbe"].max()),
        },
    )
    return time_axis(fig, started_at, precision="minutes")
