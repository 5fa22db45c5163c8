"""Network charts: links and capacity by tier, and link utilisation by tier over time.

Tiers are named and coloured by engine.report.palette (tier_label, tier_colour), as in the HTML export."""

from datetime import datetime

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.charts.common import as_time, time_axis
from dashboard.text import plot, plot_all
from engine.report.palette import TIER_LABELS, TIER_ORDER, tier_colour, tier_label
from engine.units import SECONDS_PER_DAY

# The fabric's levels from the GPUs up (engine.fabric.topology.FABRIC_TIERS' order), as the tiers' labels begin.
LEVEL_NAMES = ("NIC cables", "Rack uplinks", "Core links")
LEVEL_TIERS = ("gpu_rtsw", "rtsw_ctsw", "ctsw_atsw")  # the RoCE tier of each level: its colour is the level's
LOAD_SCALE = "YlOrRd"


def tier_sort_key(tier: str) -> tuple[int, str]:
    return (TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER), tier)


def tier_text(column: str | pl.Expr) -> pl.Expr:
    """engine.report.palette.tier_label as a Polars expression (no Python callback in the plan): a tier key in words."""
    x = (pl.col(column) if isinstance(column, str) else column).cast(pl.String)
    words = x.str.replace_all("_", " ", literal=True)
    made = words.str.head(1).str.to_uppercase() + words.str.slice(1).str.to_lowercase()
    return x.replace_strict(TIER_LABELS, default=made, return_dtype=pl.String)


def tiers(frame: pl.DataFrame) -> go.Figure:
    """Links and total capacity (Tbps) by tier (columns tier, links, capacity_gbps), side by side."""
    order = sorted(frame["tier"].to_list(), key=tier_sort_key)
    frame = frame.with_columns(pl.col("tier").cast(pl.Enum(order))).sort("tier")
    colours = [tier_colour(t) for t in order]
    # the label's words before its bracket on the axis ("NIC cables"), the whole label on hover
    names = plot_all(tier_label(t).split(" (")[0] for t in order)
    hover = plot_all(tier_label(t) for t in order)
    fig = make_subplots(rows=1, cols=2, subplot_titles=["Fabric links", "Fabric capacity (Tbps)"])
    fig.add_trace(
        go.Bar(
            x=names,
            y=frame["links"].to_list(),
            marker_color=colours,
            text=frame["links"].to_list(),
            texttemplate="%{text:,}",
            hovertext=hover,
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    tbps = (frame["capacity_gbps"] / 1000).round(1).to_list()
    fig.add_trace(
        go.Bar(
            x=names,
            y=tbps,
            marker_color=colours,
            text=tbps,
            texttemplate="%{text:,}",
            hovertext=hover,
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    fig.update_yaxes(tickformat=",d", row=1, col=1)
    return fig


def utilisation(samples: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Mean and hottest-link utilisation by tier over time (columns t_s, tier, mean_util, max_util): pass only
    tiers whose every link is sampled at every step (dashboard.queries.network.tier_figures' `complete`)."""
    fig = go.Figure()
    for tier in sorted(samples["tier"].unique().to_list(), key=tier_sort_key):
        part = samples.filter(pl.col("tier") == tier).sort("t_s")
        x = as_time(started_at, part["t_s"].to_numpy())
        colour, name = tier_colour(tier), tier_label(tier).split(" (")[0]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["mean_util"].to_numpy(),
                mode="lines",
                name=plot(f"{name}: mean"),
                line={"color": colour},
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["max_util"].to_numpy(),
                mode="lines",
                name=plot(f"{name}: busiest link"),
                line={"color": colour, "dash": "dot"},
            )
        )
    fig.update_layout(
        height=320,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis_title="link utilisation (%)",
        yaxis_rangemode="tozero",
    )
    return time_axis(fig, started_at, precision="minutes")


def with_outages_meanwhile(slowed: pl.DataFrame, outages: pl.DataFrame) -> pl.DataFrame:
    """Each slowed episode (job_id, start_s, end_s, ...) with the number of link outages (from_s, until_s)
    that overlap it."""
    if slowed.is_empty() or outages.is_empty():
        return slowed.with_columns(outages_meanwhile=pl.lit(0, pl.UInt32))
    pairs = (
        slowed.with_row_index("episode")
        .join(outages.select("from_s", "until_s"), how="cross")
        .filter((pl.col("from_s") < pl.col("end_s")) & (pl.col("until_s") > pl.col("start_s")))
    )
    counts = pairs.group_by("episode").agg(outages_meanwhile=pl.len())
    return (
        slowed.with_row_index("episode")
        .join(counts, on="episode", how="left")
        .with_columns(pl.col("outages_meanwhile").fill_null(0))
        .drop("episode")
    )


def hot_links(frame: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Heat map of the hottest links over time (columns label, mean_util, t_s, util), hottest on top."""
    order = frame.sort("mean_util", descending=True)["label"].unique(maintain_order=True).to_list()
    times = sorted(frame["t_s"].unique().to_list())
    grid = frame.pivot(on="t_s", index="label", values="util", aggregate_function="mean")
    grid = pl.DataFrame({"label": order}).join(grid, on="label", how="left")
    z = grid.select(
        [str(t) if str(t) in grid.columns else pl.lit(None).alias(str(t)) for t in times]
    ).to_numpy()
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=as_time(started_at, times),
            y=plot_all(order),
            colorscale=LOAD_SCALE,
            zmin=0,
            zmax=100,
            colorbar={"title": "util %"},
            hovertemplate="%{y}<br>%{x}<br>%{z:.1f}%<extra></extra>",
        )
    )
    fig.update_layout(
        height=max(260, 18 * len(order) + 80),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis={"autorange": "reversed"},
    )
    return time_axis(fig, started_at, precision="minutes")


def diagram_nodes(loads: pl.DataFrame, rack_pods: pl.DataFrame, tiers: tuple[str, str, str]) -> pl.DataFrame:
    """Switches placed for `fabric_diagram` from the per-switch loads (dashboard.queries.network.switch_loads)
    of a fabric whose tiers are `tiers` (NIC, uplink, core) and whose switches are named as engine.fabric.topology
    names them (`rtsw-R`, `ctsw-P-K`, `atsw-A`, or leaf/spine/core): racks in pod order with a gap between
    pods, each pod's spines spread over its racks, the core over the whole width. Empty when names differ."""
    _, up_tier, core_tier = tiers
    stats = [pl.col("mean_util"), pl.col("peak_util"), pl.col("down_samples"), pl.col("out")]
    dtypes = (pl.Float64, pl.Float64, pl.Int64, pl.Boolean)
    racks = (
        loads.filter((pl.col("tier") == up_tier) & (pl.col("side") == "up"))
        .with_columns(rack_id=pl.col("node").str.extract(r"^[a-z]+-(\d+)$").cast(pl.Int32, strict=False))
        .drop_nulls("rack_id")
        .join(rack_pods, on="rack_id")
        .sort("rack_id")
    )
    if racks.is_empty():
        return pl.DataFrame(
            schema={
                "level": pl.Int8,
                "pod": pl.Int32,
                "x": pl.Float64,
                "name": pl.String,
                "mean_util": pl.Float64,
                "peak_util": pl.Float64,
                "down_samples": pl.Int64,
                "out": pl.Boolean,
            }
        )
    gap = max(2.0, racks.height / 40)
    racks = racks.with_columns(x=pl.int_range(pl.len()).cast(pl.Float64) + pl.col("pod_id") * gap)
    span = racks.group_by("pod_id").agg(lo=pl.col("x").min(), hi=pl.col("x").max())
    spines = (
        loads.filter(
            ((pl.col("tier") == up_tier) & (pl.col("side") == "down"))
            | ((pl.col("tier") == core_tier) & (pl.col("side") == "up"))
        )
        .with_columns(
            pod_id=pl.col("node").str.extract(r"-(\d+)-\d+$").cast(pl.Int32, strict=False),
            k=pl.col("node").str.extract(r"-(\d+)$").cast(pl.Int32, strict=False),
        )
        .drop_nulls(["pod_id", "k"])
        .group_by("node", "pod_id", "k")
        .agg(
            mean_util=(pl.col("mean_util") * pl.col("links")).sum() / pl.col("links").sum(),
            peak_util=pl.col("peak_util").max(),
            down_samples=pl.col("down_samples").sum(),
            out=pl.col("out").any(),
        )
    )
    spines = spines.join(span, on="pod_id").with_columns(
        x=pl.col("lo")
        + (pl.col("hi") - pl.col("lo")) * (pl.col("k") + 0.5) / (pl.col("k").max().over("pod_id") + 1)
    )
    cores = (
        loads.filter((pl.col("tier") == core_tier) & (pl.col("side") == "down"))
        .with_columns(a=pl.col("node").str.extract(r"-(\d+)$").cast(pl.Int32, strict=False))
        .drop_nulls("a")
        .sort("a")
    )
    lo, hi = float(racks["x"].min()), float(racks["x"].max())
    cores = cores.with_columns(
        x=lo + (hi - lo) * (pl.col("a") + 0.5) / max(cores.height, 1), pod_id=pl.lit(None, pl.Int32)
    )
    return pl.concat(
        [
            part.select(
                pl.lit(level, pl.Int8).alias("level"),
                pl.col("pod_id").cast(pl.Int32).alias("pod"),
                pl.col("x").cast(pl.Float64),
                pl.col("node").alias("name"),
                *[c.cast(dtype) for c, dtype in zip(stats, dtypes, strict=True)],
            )
            for level, part in ((0, racks), (1, spines), (2, cores))
        ]
    )


def fabric_diagram(nodes: pl.DataFrame, colour_by: str = "mean_util") -> go.Figure:
    """The fabric as three rows: core switches on top, each pod's spines, each pod's racks at the bottom, one
    marker a switch coloured by the load of its links (`colour_by`: mean_util or peak_util); grey lines join
    each pod's spines to the core. Columns: level (0 racks, 1 spines, 2 cores), pod, x, name, mean_util,
    peak_util, down_samples, out (outlined: the switch was out, every link of it down at once)."""
    fig = go.Figure()
    pods = nodes.filter(pl.col("level") == 1).group_by("pod").agg(pl.col("x").mean()).sort("pod")
    cores = nodes.filter(pl.col("level") == 2)
    xs, ys = [], []
    for px in pods["x"].to_list():
        for cx in cores["x"].to_list():
            xs += [px, cx, None]
            ys += [1, 2, None]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"color": "#ced4da", "width": 0.5},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    sizes = {0: 6, 1: 9, 2: 12}
    for level, name in ((0, "racks"), (1, "spines"), (2, "core")):
        part = nodes.filter(pl.col("level") == level)
        if part.is_empty():
            continue
        down = part["out"].fill_null(False)
        fig.add_trace(
            go.Scatter(  # SVG: a WebGL context costs a browser without a GPU more than 2,000 markers do
                x=part["x"].to_list(),
                y=[level] * part.height,
                mode="markers",
                name=name,
                marker={
                    "size": sizes[level],
                    "symbol": "square",
                    "color": part[colour_by].fill_null(0).to_list(),
                    "colorscale": LOAD_SCALE,
                    "cmin": 0,
                    "cmax": max(1.0, float(nodes[colour_by].max() or 0)),
                    "line": {
                        "color": ["#000000" if d else "rgba(0,0,0,0)" for d in down.to_list()],
                        "width": 1.5,
                    },
                    "colorbar": {"title": "util %"} if level == 0 else None,
                    "showscale": level == 0,
                },
                text=[
                    f"{plot(n)} (pod {p})<br>mean {m:.1f}% · peak {k:.1f}% · {s:,} link-samples down"
                    + (" · was out" if d else "")
                    for n, p, m, k, s, d in zip(
                        part["name"],
                        part["pod"],
                        part["mean_util"].fill_null(0),
                        part["peak_util"].fill_null(0),
                        part["down_samples"].fill_null(0),
                        down,
                        strict=True,
                    )
                ],
                hoverinfo="text",
                showlegend=False,
            )
        )
    for pod, px in zip(pods["pod"].to_list(), pods["x"].to_list(), strict=True):
        fig.add_annotation(x=px, y=-0.45, text=f"pod {pod}", showarrow=False)
    fig.update_layout(
        height=360,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={"visible": False},
        yaxis={"tickvals": [0, 1, 2], "ticktext": ["racks", "spines", "core"], "range": [-0.7, 2.4]},
    )
    return fig


def compare_levels(frames: dict[str, pl.DataFrame]) -> go.Figure:
    """Mean utilisation per fabric level over time for each run (frames: label -> level, t_s, mean_util);
    one dash style a run, one colour a level."""
    fig = go.Figure()
    colours = tuple(tier_colour(t) for t in LEVEL_TIERS)
    for dash, (label, frame) in zip(("solid", "dash", "dot"), frames.items(), strict=False):
        for level in sorted(frame["level"].unique().to_list()):
            part = frame.filter(pl.col("level") == level).sort("t_s")
            fig.add_trace(
                go.Scatter(
                    x=(part["t_s"] / SECONDS_PER_DAY).to_list(),
                    y=part["mean_util"].to_list(),
                    mode="lines",
                    name=plot(f"{label}: {LEVEL_NAMES[level]}"),
                    line={"color": colours[level % 3], "dash": dash},
                )
            )
    fig.update_layout(
        height=320,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis_title="day of the run",
        yaxis_title="mean utilisation (%)",
    )
    return fig
