"""GPUs charts: the health grid, health counts, XID counts (in total and over time), ECC trends, the history of
repeat offenders, one GPU's telemetry."""

from datetime import datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.charts.common import category_of, cause_color
from dashboard.charts.jobs import as_time
from dashboard.charts.racks import STATE_COLOURS, STATE_ORDER, _discrete_colourscale
from dashboard.text import plot, plot_expr
from engine.reference import XIDS

FAILED_COLOUR = "#c92a2a"
GPU_STATE_COLOURS = {**STATE_COLOURS, "failed": FAILED_COLOUR}
XID_NAMES = {x.xid: x.mnemonic for x in XIDS}
FATAL_XIDS = {x.xid for x in XIDS if x.fatal}


def health_counts(counts: pl.DataFrame) -> go.Figure:
    """GPUs by state (columns state, gpus) as one bar per state in the state colours."""
    fig = go.Figure(go.Bar(
        x=counts["state"].to_list(), y=counts["gpus"].to_list(), text=counts["gpus"].to_list(),
        marker_color=[GPU_STATE_COLOURS.get(s, "#adb5bd") for s in counts["state"].to_list()],
    ))
    fig.update_layout(height=280, margin={"l": 10, "r": 10, "t": 10, "b": 10}, yaxis_title="GPUs")
    return fig


def xid_counts(counts: pl.DataFrame) -> go.Figure:
    """XID events by code (columns xid, events): fatal codes red, the others grey; labels name the code."""
    labels = [f"{x} {XID_NAMES.get(x, '')}".strip() for x in counts["xid"].to_list()]
    fig = go.Figure(go.Bar(
        x=counts["events"].to_list(), y=labels, orientation="h", text=counts["events"].to_list(),
        marker_color=[FAILED_COLOUR if x in FATAL_XIDS else "#868e96" for x in counts["xid"].to_list()],
    ))
    fig.update_layout(height=max(200, 28 * counts.height + 80), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis_title="events")
    fig.update_yaxes(autorange="reversed")
    return fig


SYMBOLS = ("diamond", "circle", "square", "triangle-up", "x", "star", "cross", "hexagon")


def offender_history(incidents: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Each incident of the repeat offenders (columns label, t_s, cause) as a marker on the offender's row,
    in the order the rows come. A cause takes its category's colour and a symbol of its own in that category."""
    fig = go.Figure()
    incidents = incidents.with_columns(plot_expr("label"))  # hostnames: Plotly text only as entities
    causes = sorted(incidents["cause"].unique().to_list(), key=lambda c: (category_of(c), c))
    rank_in_category: dict[str, int] = {}
    for cause in causes:
        symbol = SYMBOLS[rank_in_category.get(category_of(cause), 0) % len(SYMBOLS)]
        rank_in_category[category_of(cause)] = rank_in_category.get(category_of(cause), 0) + 1
        part = incidents.filter(pl.col("cause") == cause)
        gpu = part["gpu_id"].to_list() if "gpu_id" in part.columns else [None] * part.height
        fig.add_trace(go.Scatter(
            x=as_time(started_at, part["t_s"].to_numpy()), y=part["label"].to_list(), mode="markers",
            name=plot(cause), marker={"size": 11, "symbol": symbol, "color": cause_color(cause)},
            customdata=gpu,  # what a click hands the page: the GPU to open (None: a host-level incident)
            text=[f"GPU {g}" if g is not None else "the host" for g in gpu],
            hovertemplate="%{y}<br>%{x}<br>%{text}<extra>%{fullData.name}</extra>",
        ))
    labels = incidents["label"].unique(maintain_order=True).to_list()
    fig.update_layout(height=max(200, 28 * len(labels) + 100), margin={"l": 10, "r": 10, "t": 10, "b": 10})
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(labels)))
    return fig


def clicked_gpu(selection) -> int | None:
    """The GPU id (customdata) of the first selected offender incident on a GPU, else None."""
    points = (selection or {}).get("points", []) if isinstance(selection, dict) else getattr(selection, "points", [])
    for point in points or []:
        if isinstance(point.get("customdata"), int | float):
            return int(point["customdata"])
    return None


TELEMETRY_PANELS = (("temp_c", "temperature (°C)"), ("power_w", "power (W)"), ("util_pct", "utilisation (%)"))


def gpu_telemetry(samples: pl.DataFrame, started_at: datetime, tdp_w: float | None = None) -> go.Figure:
    """Temperature, power and utilisation over time (columns t_s and TELEMETRY_PANELS), one panel each."""
    fig = make_subplots(rows=len(TELEMETRY_PANELS), cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        subplot_titles=[title for _, title in TELEMETRY_PANELS])
    x = as_time(started_at, samples["t_s"].to_numpy())
    for i, (column, title) in enumerate(TELEMETRY_PANELS, start=1):
        fig.add_trace(go.Scatter(x=x, y=samples[column].to_numpy(), mode="lines", name=title,
                                 showlegend=False), row=i, col=1)
    if tdp_w:
        fig.add_hline(y=tdp_w, line_dash="dot", line_color=FAILED_COLOUR, annotation_text="TDP", row=2, col=1)
    fig.update_layout(height=560, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return fig


FILTERED_OUT = "filtered out"
FILTERED_COLOUR = "#f1f3f5"
GRID_ORDER = (*STATE_ORDER, FILTERED_OUT)
GRID_COLOURS = {**STATE_COLOURS, FILTERED_OUT: FILTERED_COLOUR}


def _number(column: str) -> pl.Expr:
    return pl.col(column).round(0).cast(pl.Int64).cast(pl.String).fill_null("n/a")


def grid_hover(cells: pl.DataFrame) -> pl.Series:
    """One plain ASCII line per GPU: Plotly's JSON escapes every `<`, `/` and non-ASCII character (six bytes
    each), and a per-cell template over customdata costs ten times more to build and serialise, so 24,576 hover
    texts stay one line without markup (about 2 MB, 0.07 s on the page)."""
    return cells.select(pl.format(
        "GPU {} | {} #{}, rack {} | {} | {} C, {} W | XIDs {}{}{}",
        "gpu_id", plot_expr("hostname"), "gpu_index", "rack_id", pl.col("state").fill_null("unknown"), _number("temp_c"),
        _number("power_w"), "xid_events",
        pl.when(pl.col("last_xid").is_not_null()).then(pl.format(" (last {})", "last_xid")).otherwise(pl.lit("")),
        pl.when(pl.col("causes").list.len() > 0).then(pl.lit(" | incidents: ") + plot_expr(pl.col("causes").list.join(", ")))
        .otherwise(pl.lit("")),
    ).alias("hover"))["hover"]


def health_grid(cells: pl.DataFrame, match: pl.Series | None = None) -> go.Figure:
    """Every GPU at one moment as one heatmap cell (one trace, so 24,576 GPUs stay light).

    `cells` (dashboard.queries.gpus.grid_at): one row per GPU with its host's row, position (rack in the row)
    and slot (0 at the bottom of the rack), gpu_index, state, temp_c, power_w, xid_events, last_xid, causes.
    A rack is a column of hosts, each host a line of its GPUs side by side; racks stand in their row's
    positions, rows one under the other with a blank line between. `match`: False cells are drawn
    "filtered out" (pale) so the floor keeps its shape while the filters pick GPUs out.
    """
    states = cells["state"].fill_null("unknown")
    shown = states if match is None else pl.Series(np.where(match.to_numpy(), states.to_numpy(), FILTERED_OUT))
    codes = shown.replace_strict({s: i for i, s in enumerate(GRID_ORDER)}, default=GRID_ORDER.index("unknown"),
                                 return_dtype=pl.Int64).to_numpy()
    n = cells.height
    slots = int(cells["slot"].max()) + 1 if n else 1
    rows = int(cells["row"].max()) + 1 if n else 1
    positions = int(cells["position"].max()) + 1 if n else 1
    per_host = int(cells["gpu_index"].max()) + 1 if n else 1
    y = cells["row"].to_numpy() * (slots + 1) + (slots - 1 - cells["slot"].to_numpy())
    x = cells["position"].to_numpy() * (per_host + 1) + cells["gpu_index"].to_numpy()
    z = np.full((rows * (slots + 1), positions * (per_host + 1)), np.nan)
    z[y, x] = codes
    text = np.full(z.shape, "", dtype=object)
    text[y, x] = grid_hover(cells).to_numpy()
    fig = go.Figure(go.Heatmap(
        z=z, text=text, hovertemplate="%{text}<extra></extra>", hoverongaps=False, zmin=-0.5,
        zmax=len(GRID_ORDER) - 0.5, xgap=1, ygap=1,
        colorscale=_discrete_colourscale([GRID_COLOURS[s] for s in GRID_ORDER]), showscale=False,
    ))
    present = set(shown.to_list())
    for state in [s for s in GRID_ORDER if s in present]:  # a named legend entry for every colour in use
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=state, showlegend=True,
                                 marker={"symbol": "square", "size": 12, "color": GRID_COLOURS[state]}))
    fig.update_layout(height=min(1400, max(240, 6 * z.shape[0] + 120)), margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      plot_bgcolor="white", legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"})
    fig.update_xaxes(title="rack position in its row (a rack's hosts stacked, each host's GPUs side by side)",
                     showgrid=False, zeroline=False,
                     tickvals=np.arange(positions) * (per_host + 1) + (per_host - 1) / 2,
                     ticktext=[str(p) for p in range(positions)])
    fig.update_yaxes(tickvals=np.arange(rows) * (slots + 1) + (slots - 1) / 2,
                     ticktext=[f"row {r}" for r in range(rows)], showgrid=False, zeroline=False, autorange="reversed")
    return fig


def xid_timeline(counts: pl.DataFrame, started_at: datetime, window_s: float) -> go.Figure:
    """XID events per window (columns t_s, xid, count from engine xid_counts) as bars stacked by code, the
    fatal codes in reds first, the rest in greys and blues."""
    fig = go.Figure()
    totals = counts.group_by("xid").agg(pl.col("count").sum()).sort(["count", "xid"], descending=[True, False])
    reds = ("#c92a2a", "#e8590c", "#f08c00", "#a61e4d", "#862e9c", "#d6336c")
    others = ("#495057", "#1c7ed6", "#0ca678", "#868e96", "#5f3dc4", "#3bc9db", "#74b816", "#adb5bd")
    fatal_rank = other_rank = 0
    for xid in totals["xid"].to_list():
        if xid in FATAL_XIDS:
            colour, fatal_rank = reds[fatal_rank % len(reds)], fatal_rank + 1
        else:
            colour, other_rank = others[other_rank % len(others)], other_rank + 1
        part = counts.filter(pl.col("xid") == xid)
        fig.add_trace(go.Bar(
            x=as_time(started_at, part["t_s"].to_numpy() + window_s / 2), y=part["count"].to_list(),
            width=window_s * 1000 * 0.9, name=f"{xid} {XID_NAMES.get(xid, '')}".strip(), marker_color=colour,
            hovertemplate="%{x}<br>%{y} events<extra>%{fullData.name}</extra>",
        ))
    fig.update_layout(barmode="stack", height=320, margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      yaxis_title="XID events per window", legend={"orientation": "h", "y": -0.2})
    return fig


def ecc_trend(trend: pl.DataFrame, labels: dict[int, str], started_at: datetime) -> go.Figure:
    """Single-bit (top panel) and double-bit (bottom) ECC counts over time (columns gpu_id, t_s, ecc_sbe,
    ecc_dbe), a line per GPU named by `labels`. Two y axes on one x axis, laid out by hand: make_subplots
    costs a tenth of a second, a tenth of the page's budget."""
    fig = go.Figure()
    palette = ("#1c7ed6", "#e8590c", "#2f9e44", "#c92a2a", "#862e9c", "#f08c00", "#0c8599", "#5c940d",
               "#d6336c", "#495057")
    for i, gpu in enumerate(trend["gpu_id"].unique(maintain_order=True).to_list()):
        part = trend.filter(pl.col("gpu_id") == gpu)
        x = as_time(started_at, part["t_s"].to_numpy())
        style = {"color": palette[i % len(palette)]}
        name = plot(labels.get(gpu, f"GPU {gpu}"))
        fig.add_trace(go.Scatter(x=x, y=part["ecc_sbe"].to_list(), mode="lines", name=name, legendgroup=name,
                                 line=style, yaxis="y"))
        fig.add_trace(go.Scatter(x=x, y=part["ecc_dbe"].to_list(), mode="lines", name=name, legendgroup=name,
                                 line=style, showlegend=False, yaxis="y2"))
    fig.update_layout(
        height=460, margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis={"domain": [0.55, 1.0], "title": "single-bit (corrected)"},
        yaxis2={"domain": [0.0, 0.45], "title": "double-bit (uncorrectable)"},
    )
    return fig
