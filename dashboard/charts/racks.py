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
from dashboard.text import plot_expr
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
POWER_STOPS = ((0.0, "#f7fcf5"), (0.4, "#a1d99b"), (0.6, "#41ab5d"), (0.72, "#fee08b"), (0.8, "#fdae61"),
               (0.8, "#d73027"), (1.0, "#67001f"))  # over budget: a hard step to red
FAILURE_BANDS = (("no failure", "#e9ecef"), ("1 failure", "#fdae61"), ("2 failures", "#f46d43"),
                 ("3+ failures", "#a50026"))
# the blast radius drawn on the floor (measure "blast", read from a `blast` column: 0, 1 or 2)
BLAST_BANDS = (("unaffected", "#e9ecef"), ("in a job that stops", "#fd8d3c"), ("behind the failed part", "#bd0026"))
FLAGSHIP_COLOUR = "#1f77b4"
BIG_FLOOR_COLUMNS = 60  # wider than this many cells, cells touch (no gap) and rack handles are faint
JOB_PALETTE = ("#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#393b79",
               "#637939", "#8c6d31", "#843c39", "#7b4173")
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
        codes = states.replace_strict({s: i for i, s in enumerate(STATE_ORDER)}, default=len(STATE_ORDER) - 1,
                                      return_dtype=pl.Int64).to_numpy().astype(float)
        present = set(states.to_list())
        legend = [(s, STATE_COLOURS[s]) for s in STATE_ORDER if s in present]
        return (codes, _discrete_colourscale([STATE_COLOURS[s] for s in STATE_ORDER]), -0.5,
                len(STATE_ORDER) - 0.5, states, legend, None)
    if measure == "job":
        jobs = cells["job_id"].fill_null("")
        sizes = (cells.filter(pl.col("job_id").is_not_null()).group_by("job_id").agg(pl.len().alias("n"))
                 .sort(["n", "job_id"], descending=[True, False]))
        kinds = dict(zip(cells["job_id"].to_list(), cells["kind"].to_list(), strict=True)) \
            if "kind" in cells.columns else {}
        named = sizes["job_id"].to_list()[:len(JOB_PALETTE)]
        palette = iter(JOB_PALETTE)
        colours = {j: FLAGSHIP_COLOUR if kinds.get(j) == "flagship" else next(palette) for j in named}
        categories = [*named, "other jobs", "no job"]
        lookup = {j: i for i, j in enumerate(named)}
        codes = jobs.replace_strict(lookup, default=len(named), return_dtype=pl.Int64).to_numpy().astype(float)
        codes[(jobs == "").to_numpy()] = len(named) + 1
        scale_colours = [*colours.values(), OTHER_JOBS, NO_JOB]
        present = set(codes.astype(int).tolist())
        legend = [(c, col) for i, (c, col) in enumerate(zip(categories, scale_colours, strict=True)) if i in present]
        text = pl.when(jobs == "").then(pl.lit("no job")).otherwise(pl.lit("job ") + jobs)
        return (codes, _discrete_colourscale(scale_colours), -0.5, len(categories) - 0.5,
                cells.select(text.alias("t"))["t"], legend, None)
    if measure == "failures":
        count = cells["failures"].fill_null(0)
        codes = np.minimum(count.to_numpy(), len(FAILURE_BANDS) - 1).astype(float)
        present = set(codes.astype(int).tolist())
        legend = [(n, c) for i, (n, c) in enumerate(FAILURE_BANDS) if i in present]
        text = count.cast(pl.String) + f" failure(s) in the last {window}"
        return (codes, _discrete_colourscale([c for _, c in FAILURE_BANDS]), -0.5, len(FAILURE_BANDS) - 0.5,
                text, legend, None)
    if measure == "blast":
        codes = cells["blast"].fill_null(0).to_numpy().astype(float)
        present = set(codes.astype(int).tolist())
        legend = [(n, c) for i, (n, c) in enumerate(BLAST_BANDS) if i in present]
        text = cells["blast"].fill_null(0).replace_strict(dict(enumerate(n for n, _ in BLAST_BANDS)),
                                                          return_dtype=pl.String)
        return (codes, _discrete_colourscale([c for _, c in BLAST_BANDS]), -0.5, len(BLAST_BANDS) - 0.5, text,
                legend, None)
    if measure == "temp":
        temp = cells["temp_c"].cast(pl.Float64).to_numpy()
        low, high = TEMP_RANGE_C
        stops = [(i / (len(TEMP_STOPS) - 1), c) for i, c in enumerate(TEMP_STOPS)]
        ticks = np.arange(30.0, high + 1, 10.0)
        bar = {"title": {"text": "°C"}, "tickvals": _continuous(ticks, low, high).tolist(),
               "ticktext": [f"{t:.0f}" for t in ticks], "thickness": 12, "len": 0.6}
        text = cells.select(pl.when(pl.col("temp_c").is_null()).then(pl.lit("no reading"))
                            .otherwise(pl.col("temp_c").round(0).cast(pl.Int64).cast(pl.String) + " °C"))
        legend = [("no reading", NO_READING)] if np.isnan(temp).any() else []
        return _continuous(temp, low, high), _scale_with_grey(stops), 0.0, 1.0, text.to_series(), legend, bar
    if measure == "power":
        share = (cells["rack_kw"] / cells["budget_kw"]).cast(pl.Float64).to_numpy()
        ticks = np.array([0.0, 0.25, 0.5, 0.75, 1.0, POWER_MAX_SHARE])
        bar = {"title": {"text": "rack / budget"}, "tickvals": _continuous(ticks, 0, POWER_MAX_SHARE).tolist(),
               "ticktext": [f"{t:.0%}" for t in ticks], "thickness": 12, "len": 0.6}
        gpu_w = pl.when(pl.col("power_w").is_null()).then(pl.lit("GPU no reading")).otherwise(
            pl.format("{} W = {}% TDP", pl.col("power_w").round(0).cast(pl.Int64),
                      (pl.col("power_w") / tdp_w * 100).round(0).cast(pl.Int64)))
        # short: 24,576 of these travel to the browser (the 5 MB budget); the rack handle says the rest
        text = cells.select(pl.format("{} · host {} kW · rack {}/{} kW", gpu_w, pl.col("host_kw").round(1),
                                      pl.col("rack_kw").round(1), pl.col("budget_kw").round(1)))
        return _continuous(share, 0.0, POWER_MAX_SHARE), _scale_with_grey(POWER_STOPS), 0.0, 1.0, text.to_series(), [], bar
    raise ValueError(f"unknown measure {measure!r}; one of {', '.join(MEASURES)}")


def floor_plan(cells: pl.DataFrame, measure: str = "state", *, title: str = "", tdp_w: float = 700.0,
               window: str = "day") -> go.Figure:
    """Heatmap of every host (or GPU) at one moment, coloured by `measure` (one of MEASURES).

    `cells`: one row per host with hostname, rack_id, row, position, slot, state (None: unknown); with a
    `gpu_index` column, one row per GPU, drawn side by side inside its host's line. The measures other than
    state read job_id (and kind), temp_c, power_w/host_kw/rack_kw/budget_kw, failures (queries.floor_cells).
    `tdp_w` scales a GPU's power in the hover (700 W: the H100 of the reference); `window` names the failure
    window in the hover. Racks over their power budget (rack_kw > budget_kw) get a red cross for a handle.
    """
    cells = _as_plot_text(cells, "hostname", "job_id")
    states = cells["state"].fill_null("unknown")
    codes, colourscale, zmin, zmax, values, legend, colourbar = _colouring(cells, measure, states, tdp_w, window)
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
    big = z.shape[1] > BIG_FLOOR_COLUMNS
    text = np.full(z.shape, "", dtype=object)
    hover = label + " · " + values
    if measure != "state":
        hover = hover + " (" + states + ")"
    text[y, x] = hover.to_numpy()
    fig = go.Figure(go.Heatmap(
        # a big floor packs its cells (a gap a cell would be half the picture); racks stay apart by a blank column
        z=z, text=text, hoverinfo="text", zmin=zmin, zmax=zmax, xgap=(0 if big else 1) if per_rack > 1 else 2, ygap=1,
        colorscale=colourscale, showscale=colourbar is not None, colorbar=colourbar,
    ))
    # The legend: one invisible marker trace per colour present, so the colours are named.
    for name, colour in legend:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, showlegend=True,
                                 marker={"symbol": "square", "size": 12, "color": colour}))
    over = _over_budget(cells, slots, per_rack)
    if over is not None:
        fig.add_trace(over)
    fig.add_trace(_rack_handles(cells, states, slots, per_rack, faint=big))
    row_ticks = np.arange(rows) * (slots + 1) + (slots - 1) / 2
    fig.update_layout(
        title=title, height=min(2400, max(240, 9 * z.shape[0] + 120)), margin={"l": 10, "r": 10, "t": 40, "b": 10},
        plot_bgcolor="white", legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"},
        # a rack's handle takes the hover (and the click) only under the pointer; elsewhere the cells answer
        hoverdistance=1, clickmode="event+select",
    )
    rack_ticks = np.arange(positions) * per_rack + (per_rack - 2) / 2 if per_rack > 1 else np.arange(positions)
    fig.update_xaxes(title="position in row", showgrid=False, zeroline=False, tickvals=rack_ticks,
                     ticktext=[str(p) for p in range(positions)])
    # many rows: label every k-th so the labels stay legible
    step = max(1, rows // 40)
    fig.update_yaxes(tickvals=row_ticks[::step], ticktext=[f"row {r}" for r in range(0, rows, step)],
                     showgrid=False, zeroline=False, autorange="reversed")
    return fig


RACK_HANDLES = "racks"  # the name of the trace whose points select a rack (customdata: rack_id)


OVER_BUDGET = "over budget"  # the trace that crosses out racks drawing more than their power budget


def _over_budget(cells: pl.DataFrame, slots: int, per_rack: int) -> go.Scatter | None:
    """A red cross on each rack over its power budget (rack_kw > budget_kw), whatever the measure; None when
    `cells` carries no power."""
    if not {"rack_kw", "budget_kw"} <= set(cells.columns):
        return None
    over = (cells.filter(pl.col("rack_kw") > pl.col("budget_kw"))
            .group_by("rack_id").agg(pl.col("row").first(), pl.col("position").first()).sort("rack_id"))
    return go.Scatter(
        x=over["position"].to_numpy() * per_rack + ((per_rack - 2) / 2 if per_rack > 1 else 0.0),
        y=over["row"].to_numpy() * (slots + 1) + (slots - 1) / 2, mode="markers", name=OVER_BUDGET,
        customdata=over["rack_id"].to_numpy(), hoverinfo="skip", showlegend=over.height > 0,
        marker={"symbol": "x-thin-open", "size": 14, "color": "#d7191c", "line": {"width": 3, "color": "#d7191c"}},
    )


def _rack_handles(cells: pl.DataFrame, states: pl.Series, slots: int, per_rack: int, faint: bool = False
                  ) -> go.Scatter:
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
    head = "<b>rack " + racks["rack_id"].cast(pl.String) + "</b> (click to open)"
    if {"rack_kw", "budget_kw"} <= set(cells.columns):
        power = (cells.group_by("rack_id").agg(pl.col("rack_kw").first(), pl.col("budget_kw").first())
                 .sort("rack_id"))
        racks = racks.join(power, on="rack_id", how="left", maintain_order="left")
        over = (racks["rack_kw"] > racks["budget_kw"]).fill_null(False)
        head = (head + racks.select(pl.format("<br>{} of {} kW", pl.col("rack_kw").round(1),
                                              pl.col("budget_kw").round(1)))["rack_kw"]
                + pl.Series(np.where(over.to_numpy(), " <b>over budget</b>", "")))
    centre_x = racks["position"].to_numpy() * per_rack + ((per_rack - 2) / 2 if per_rack > 1 else 0.0)
    centre_y = racks["row"].to_numpy() * (slots + 1) + (slots - 1) / 2
    return go.Scatter(
        x=centre_x, y=centre_y, customdata=racks["rack_id"].to_numpy(), mode="markers", name=RACK_HANDLES,
        showlegend=False, text=(head + "<br>" + racks["hosts"]).to_list(),
        hovertemplate="%{text}<extra></extra>",
        # on a big floor a small faint dot, so the handles do not hide the cells they sit on
        marker={"symbol": "circle", "size": 4, "color": "rgba(255, 255, 255, 0.6)", "line": {"width": 0}} if faint
        else {"symbol": "circle-open", "size": 7, "color": "rgba(255, 255, 255, 0.8)", "line": {"width": 1.5}},
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
    frame = _as_plot_text(intervals, "hostname", "job_id").with_columns(
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


LINK_COLOURS = {"up": "#2ca02c", "down": "#d62728"}


def elevation(gpus: pl.DataFrame, links: pl.DataFrame, rack_id: int) -> go.Figure:
    """One rack seen from the front: hosts stacked (slot 0 at the bottom), each host's GPUs in a line coloured by
    state with its NICs (the gpu_rtsw cables) as small diamonds above them, and the rack switch (RTSW) on top
    with its uplinks to the spine, each coloured up or down.

    `gpus`: the rack's rows of queries.floor_cells (hostname, slot, gpu_index, state, job_id, temp_c, power_w,
    host_kw); `links`: queries.rack_links (tier, a, b, state, util_pct), possibly empty.
    """
    gpus, links = _as_plot_text(gpus, "hostname", "job_id"), _as_plot_text(links, "a", "b")
    states = gpus["state"].fill_null("unknown")
    slots = int(gpus["slot"].max()) + 1 if gpus.height else 1
    width = int(gpus["gpu_index"].max()) + 1 if gpus.height else 8
    fig = go.Figure()
    reading = pl.format(" · {} °C · {} W", pl.col("temp_c").round(0), pl.col("power_w").round(0)) \
        if {"temp_c", "power_w"} <= set(gpus.columns) else pl.lit("")
    hover = gpus.with_columns(states.alias("state")).select(pl.format(
        "<b>{} GPU {}</b><br>{} · {}{}", pl.col("hostname"), pl.col("gpu_index"), pl.col("state"),
        pl.col("job_id").fill_null("no job"), reading.fill_null(" · no reading")))["hostname"]
    for state in [s for s in STATE_ORDER if s in set(states.to_list())]:
        mine = (states == state).to_numpy()
        fig.add_trace(go.Scatter(
            x=gpus["gpu_index"].to_numpy()[mine], y=gpus["slot"].to_numpy()[mine], mode="markers", name=state,
            text=hover.to_numpy()[mine], hovertemplate="%{text}<extra></extra>",
            marker={"symbol": "square", "size": 26, "color": STATE_COLOURS[state], "line": {"width": 1,
                                                                                           "color": "#495057"}}))
    if links.height:
        nics = links.filter(pl.col("tier") == "gpu_rtsw").with_columns(
            pl.col("a").str.split(":gpu").list.get(0).alias("hostname"),
            pl.col("a").str.split(":gpu").list.get(1).cast(pl.Int64, strict=False).alias("gpu_index"))
        nics = nics.join(gpus.select("hostname", "slot").unique(), on="hostname", how="inner")
        for state in ("up", "down"):
            mine = nics.filter(pl.col("state") == state)
            if mine.height:
                fig.add_trace(go.Scatter(
                    x=mine["gpu_index"].to_numpy(), y=mine["slot"].to_numpy() + 0.4, mode="markers",
                    name=f"NIC {state}", hovertemplate="%{text}<extra></extra>",
                    text=mine.select(pl.format("NIC cable {} → {} ({} Gbps): {}", "a", "b", "capacity_gbps",
                                               "state"))["a"].to_list(),
                    marker={"symbol": "diamond", "size": 9, "color": LINK_COLOURS[state]}))
        uplinks = links.filter(pl.col("tier") == "rtsw_ctsw").with_row_index("k")
        if uplinks.height:
            x = np.linspace(0, width - 1, uplinks.height)
            for state in ("up", "down"):
                mine = uplinks.filter(pl.col("state") == state)
                if mine.height:
                    fig.add_trace(go.Scatter(
                        x=x[mine["k"].to_numpy()], y=np.full(mine.height, slots + 0.45), mode="markers",
                        name=f"uplink {state}", hovertemplate="%{text}<extra></extra>",
                        text=mine.select(pl.format("uplink {} → {} ({} Gbps): {}", "a", "b", "capacity_gbps",
                                                   "state"))["a"].to_list(),
                        marker={"symbol": "triangle-up", "size": 9, "color": LINK_COLOURS[state]}))
    down = int((links["state"] == "down").sum()) if links.height else 0
    switch = f"rtsw-{rack_id}" + (f" · {down} link(s) down" if down else "")
    fig.add_shape(type="rect", x0=-0.5, x1=width - 0.5, y0=slots - 0.3, y1=slots + 0.25,
                  fillcolor="#343a40", line={"width": 0})
    fig.add_annotation(x=(width - 1) / 2, y=slots - 0.02, text=switch, showarrow=False,
                       font={"color": "white", "size": 12})
    for host in gpus.group_by("slot", "hostname").agg(pl.col("state").first(), pl.col("job_id").first(),
                                                      *([pl.col("host_kw").first()] if "host_kw" in gpus.columns
                                                        else [])).iter_rows(named=True):
        kw = f" · {host['host_kw']:.1f} kW" if host.get("host_kw") is not None else ""
        fig.add_annotation(x=-0.01, xref="paper", y=host["slot"], xanchor="right", showarrow=False, align="right",
                           text=f"<b>{host['hostname']}</b><br>{host['state'] or 'unknown'} · "
                                f"{host['job_id'] or 'no job'}{kw}")
    fig.update_layout(height=120 + 70 * (slots + 1), margin={"l": 220, "r": 10, "t": 30, "b": 10},
                      plot_bgcolor="white", legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
    fig.update_xaxes(range=[-0.6, width - 0.4], tickvals=list(range(width)),
                     ticktext=[f"GPU {i}" for i in range(width)], showgrid=False, zeroline=False)
    fig.update_yaxes(range=[-0.6, slots + 0.8], showticklabels=False, showgrid=False, zeroline=False)
    return fig
