"""Planner charts: closed-form ETTR against the checkpoint interval (Young-Daly optimum marked), the goodput
loss waterfall, the Monte-Carlo spread, and the sweep heat map and band (the recovery strategies' charts are in
dashboard.charts.strategies)."""

import math
import textwrap

import numpy as np

# plotly peeks at sys.modules['pandas']: load it whole before the first figure, or a rerun racing the previous
# run's first import of pandas finds it half-initialised (seen in the browser: "no attribute 'Series'")
import pandas  # noqa: F401
import plotly.graph_objects as go
import polars as pl

# named here too for tests/test_scale.py, which reads them through this module
from dashboard.charts.strategies import break_even_chart as break_even_chart
from dashboard.charts.strategies import gpus_text as gpus_text
from dashboard.charts.strategies import scale_chart as scale_chart
from dashboard.format import DASH, fmt_duration, fmt_gpu_hours, fmt_usd
from engine.analysis.analytics import closed_form_ettr, young_daly_interval
from engine.analysis.definitions import definition
from engine.analysis.ledger import LOSSES
from engine.report.palette import LOSS_LABELS

# Where the ETTR curve's interval axis is labelled: round durations a log axis spaces evenly enough.
CURVE_TICKS_S = (
    1,
    2,
    5,
    10,
    30,
    60,
    120,
    300,
    600,
    1800,
    3600,
    2 * 3600,
    4 * 3600,
    12 * 3600,
    86400,
    2 * 86400,
    7 * 86400,
)


def interval_text(seconds: float) -> str:
    """An optimum interval as a duration: "4 min 30 s" reads as "4.5 min", "45 s" as seconds."""
    return (
        f"{seconds:.3g} s"
        if seconds < 60
        else f"{seconds / 60:.3g} min"
        if seconds < 3600
        else fmt_duration(seconds)
    )


def interval_grid(current_s: float, optimum_s: float, points: int = 120) -> np.ndarray:
    """Log-spaced intervals covering a decade either side of both the current and the optimal interval."""
    anchors = [v for v in (current_s, optimum_s) if math.isfinite(v) and v > 0]
    low, high = min(anchors) / 10.0, max(anchors) * 10.0
    return np.geomspace(max(low, 1.0), max(high, 2.0), points)


def ettr_curve(
    *,
    gpus: int,
    rate_per_1000_node_days: float,
    checkpoint_interval_s: float,
    checkpoint_write_s: float,
    restart_overhead_s: float,
    gpus_per_host: int = 8,
) -> go.Figure:
    """ETTR(interval) of the closed form, the chosen interval and the Young-Daly interval as markers."""

    def ettr(interval: float) -> float:
        return closed_form_ettr(
            gpus=gpus,
            rate_per_1000_node_days=rate_per_1000_node_days,
            checkpoint_interval_s=interval,
            checkpoint_write_s=checkpoint_write_s,
            restart_overhead_s=restart_overhead_s,
            gpus_per_host=gpus_per_host,
        ).ettr

    mttf = closed_form_ettr(
        gpus=gpus,
        rate_per_1000_node_days=rate_per_1000_node_days,
        checkpoint_interval_s=checkpoint_interval_s,
        checkpoint_write_s=checkpoint_write_s,
        restart_overhead_s=restart_overhead_s,
        gpus_per_host=gpus_per_host,
    ).mttf_s
    optimum = young_daly_interval(checkpoint_write_s, mttf)
    grid = interval_grid(checkpoint_interval_s, optimum)
    label = definition("closed_form_ettr").label
    fig = go.Figure(
        go.Scatter(
            x=grid / 60.0, y=[ettr(v) for v in grid], mode="lines", name=label, line={"color": "#1971c2"}
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[checkpoint_interval_s / 60.0],
            y=[ettr(checkpoint_interval_s)],
            mode="markers",
            name="chosen interval",
            marker={"size": 12, "color": "#f08c00"},
        )
    )
    if math.isfinite(optimum) and optimum > 0:
        fig.add_trace(
            go.Scatter(
                x=[optimum / 60.0],
                y=[ettr(optimum)],
                mode="markers+text",
                name="Young-Daly optimum",
                text=[interval_text(optimum)],
                textposition="top center",
                marker={"size": 12, "symbol": "star", "color": "#2b8a3e"},
            )
        )
    fig.update_layout(
        height=360,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis_title=label,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    ticks = [v for v in CURVE_TICKS_S if grid[0] <= v <= grid[-1]]  # durations, not 10^k minutes
    fig.update_xaxes(
        type="log",
        title="Checkpoint interval",
        tickvals=[v / 60.0 for v in ticks],
        ticktext=[fmt_duration(v) for v in ticks],
    )
    # Zoom on the curve (ETTR differences of a few points matter), never below 0 nor above 1.
    low = max(0.0, math.floor((min(fig.data[0].y) - 0.02) * 20) / 20)
    fig.update_yaxes(range=[low, 1.0])
    return fig


# ----- the goodput loss waterfall ---------------------------------------------------------------------------


def tick_text(label: str, width: int = 18) -> str:
    """A category label broken into lines of about `width` characters, so six bars' labels never overlap."""
    return "<br>".join(textwrap.wrap(label, width)) or label


def loss_waterfall(losses: pl.DataFrame) -> go.Figure:
    """The goodput losses stacked step by step up to Goodput lost, simulated beside the closed form; the
    network slowdown (counted apart from goodput lost, engine.analysis.definitions) stands on its own after the total.

    `losses`: engine.analysis.planner.loss_table (category, sim_gpu_hours, sim_usd, cf_gpu_hours, cf_usd). Bars carry
    GPU-hours, the hover adds dollars. The steps start from zero, not from the job's GPU-hours: beside those,
    losses of a few per cent would not show."""
    steps = losses.filter(pl.col("category").is_in(LOSSES))
    apart = losses.filter(~pl.col("category").is_in(LOSSES))
    total = definition("goodput_lost").label
    labels = [
        *(LOSS_LABELS[c] for c in steps["category"]),
        total,
        *(LOSS_LABELS[c] for c in apart["category"]),
    ]
    measure = ["relative"] * steps.height + ["total"] + ["absolute"] * apart.height
    fig = go.Figure()
    for name, hours, usd, color, step_color in (
        ("simulated", "sim_gpu_hours", "sim_usd", "#c92a2a", "#ff6b6b"),
        ("closed form", "cf_gpu_hours", "cf_usd", "#495057", "#adb5bd"),
    ):
        y = [*steps[hours], 0.0, *apart[hours]]
        shown = [*steps[hours], steps[hours].sum(), *apart[hours]]
        money = [*steps[usd], steps[usd].sum(), *apart[usd]]
        fig.add_trace(
            go.Waterfall(
                name=name,
                x=labels,
                y=y,
                measure=measure,
                text=[fmt_gpu_hours(h) for h in shown],
                textposition="outside",
                cliponaxis=False,
                textfont={"size": 12},
                customdata=[fmt_usd(u) for u in money],
                hovertemplate=f"{name}<br>%{{x}}: %{{text}} · %{{customdata}}<extra></extra>",
                connector={"line": {"color": "#dee2e6"}},
                increasing={"marker": {"color": step_color}},
                decreasing={"marker": {"color": step_color}},
                totals={"marker": {"color": color}},
            )
        )
    fig.update_layout(
        height=420,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        yaxis_title="GPU-hours",
        waterfallgroupgap=0.3,
        legend={"orientation": "h", "y": 1.08, "yanchor": "bottom"},
        uniformtext={"minsize": 12, "mode": "show"},
    )  # every bar's text the same size
    fig.update_xaxes(
        tickmode="array", tickvals=labels, ticktext=[tick_text(label) for label in labels], tickangle=0
    )
    return fig


# ----- Monte-Carlo and sweeps --------------------------------------------------------------------------------


def monte_carlo_histogram(
    ettr: list[float], band: tuple[float, float, float], band_name: str = "5-95 %"
) -> go.Figure:
    """ETTR of every seed as a histogram, with the mean and the band (mean, low, high) marked: the seeds' 5-95 %,
    or the twin's band of a Planner started from a twin."""
    mean, p5, p95 = band
    fig = go.Figure(
        go.Histogram(x=ettr, name="runs", marker={"color": "#74c0fc"}, nbinsx=max(5, len(ettr) // 2))
    )
    fig.add_vrect(
        x0=p5,
        x1=p95,
        fillcolor="#1971c2",
        opacity=0.12,
        line_width=0,
        annotation_text=band_name,
        annotation_position="top left",
    )
    fig.add_vline(x=mean, line={"color": "#1971c2", "width": 3}, annotation_text=f"mean {mean:.1%}")
    fig.update_layout(
        height=300,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        bargap=0.05,
        xaxis_title=definition("ettr").label,
        yaxis_title="runs",
        showlegend=False,
    )
    fig.update_xaxes(tickformat=".1%")
    return fig


def axis_scale(duration: bool) -> tuple[float, str]:
    """Durations are shown in minutes."""
    return (60.0, " (min)") if duration else (1.0, "")


def sweep_heatmap(
    means: list[list[float | None]],
    x: list[float],
    y: list[float],
    *,
    x_title: str,
    y_title: str,
    x_duration: bool,
    y_duration: bool,
    young_daly_s: list[float] | None = None,
    young_daly_on: str = "x",
    metric: str = "",
) -> go.Figure:
    """Mean ETTR over a two-parameter grid (means[i][j] at y[i], x[j]). Where one axis is the checkpoint
    interval (`young_daly_on`: "x" or "y"), the Young-Daly interval of the other axis's settings is drawn over
    it (`young_daly_s`, seconds, one per value of the other axis)."""
    xs, x_unit = axis_scale(x_duration)
    ys, y_unit = axis_scale(y_duration)
    metric = metric or definition("mean_ettr_over_seeds").label
    fig = go.Figure(
        go.Heatmap(
            z=means,
            x=[v / xs for v in x],
            y=[v / ys for v in y],
            colorscale="Viridis",
            zmin=None,
            colorbar={"title": metric, "tickformat": ".0%"},
            hovertemplate="%{x:g}, %{y:g}: %{z:.1%}<extra></extra>",
            text=[[DASH if v is None else f"{v:.1%}" for v in row] for row in means],
            texttemplate="%{text}",
        )
    )
    if young_daly_s is not None:
        if young_daly_on == "x":
            finite = [(t / xs, v / ys) for t, v in zip(young_daly_s, y, strict=True) if math.isfinite(t)]
        else:
            finite = [(v / xs, t / ys) for t, v in zip(young_daly_s, x, strict=True) if math.isfinite(t)]
        if finite:
            fig.add_trace(
                go.Scatter(
                    x=[p[0] for p in finite],
                    y=[p[1] for p in finite],
                    mode="lines+markers",
                    name="Young-Daly interval",
                    line={"color": "#ffffff", "dash": "dash", "width": 3},
                )
            )
    fig.update_layout(
        height=420,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_xaxes(title=x_title + x_unit, range=_edges(x, xs))
    fig.update_yaxes(title=y_title + y_unit, range=_edges(y, ys))
    return fig


def _edges(values: list[float], scale: float) -> list[float] | None:
    """The heat map's outer cell edges, so an overlaid curve beyond the grid does not stretch the axes."""
    v = sorted(x / scale for x in values)
    if len(v) < 2:
        return None
    return [v[0] - (v[1] - v[0]) / 2, v[-1] + (v[-1] - v[-2]) / 2]


def sweep_line(
    x: list[float],
    mean: list[float | None],
    p5: list[float | None],
    p95: list[float | None],
    *,
    x_title: str,
    x_duration: bool,
    closed_form: list[float | None] | None = None,
) -> go.Figure:
    """Mean ETTR against one parameter with its 5-95 % band, and the closed form as a dashed line."""
    xs, unit = axis_scale(x_duration)
    xv = [v / xs for v in x]
    fig = go.Figure(
        [
            go.Scatter(x=xv, y=p95, mode="lines", line={"width": 0}, showlegend=False, hoverinfo="skip"),
            go.Scatter(
                x=xv,
                y=p5,
                mode="lines",
                line={"width": 0},
                fill="tonexty",
                fillcolor="rgba(25, 113, 194, 0.2)",
                name="5-95 % of seeds",
            ),
            go.Scatter(
                x=xv,
                y=mean,
                mode="lines+markers",
                name=definition("mean_ettr_over_seeds").label,
                line={"color": "#1971c2"},
            ),
        ]
    )
    if closed_form is not None:
        fig.add_trace(
            go.Scatter(
                x=xv,
                y=closed_form,
                mode="lines",
                name=definition("closed_form_ettr").label,
                line={"color": "#868e96", "dash": "dash"},
            )
        )
    fig.update_layout(
        height=340,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis_title=definition("ettr").label,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_xaxes(title=x_title + unit)
    fig.update_yaxes(tickformat=".0%")
    return fig
