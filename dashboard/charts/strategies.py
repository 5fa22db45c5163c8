"""Recovery strategies: ETTR against job size, a line a strategy with its band over seeds (engine.twin.scale), and
the warm standbys' break-even, their net worth by count (engine.twin.standby)."""

import math

# plotly peeks at sys.modules['pandas']: load it whole before the first figure, or a rerun racing the previous
# run's first import of pandas finds it half-initialised (seen in the browser: "no attribute 'Series'")
import pandas  # noqa: F401
import plotly.graph_objects as go
import polars as pl

from dashboard.format import fmt_usd
from dashboard.text import plot
from engine.analysis.definitions import definition

# One colour a strategy, restart in the grey of "today's practice"; the others as far apart as the palette allows.
STRATEGY_COLOURS = {
    "restart": "#495057",
    "in_memory_checkpoint": "#1971c2",
    "replica_drop": "#2b8a3e",
    "hot_spare": "#e8590c",
}


def _rgba(colour: str, alpha: float) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def gpus_text(gpus: int) -> str:
    """A job size as the chart's ticks write it, in binary thousands as GPU counts go, three digits at most: 1k,
    16k, 256k; the largest job that fits beside its spares (256,136 GPUs) reads 250k."""
    return f"{gpus / 1024:.3g}k" if gpus >= 1024 else f"{gpus}"


def scale_chart(
    bands: pl.DataFrame, labels: dict[str, str], seeds: int, current_gpus: int | None = None
) -> go.Figure:
    """Mean ETTR against job GPUs (log axis), a line a strategy, each with its 10-90 % band over seeds.

    `bands`: engine.twin.scale.scale_bands (strategy, job_gpus, days, ettr_mean, ettr_p10, ettr_p90, ...);
    `labels`: the strategies in words; `current_gpus`: the Planner's own job size, marked."""
    fig = go.Figure()
    for strategy in bands["strategy"].unique(maintain_order=True).to_list():
        part = bands.filter(pl.col("strategy") == strategy).sort("job_gpus")
        colour, name = STRATEGY_COLOURS.get(strategy, "#868e96"), plot(labels.get(strategy, strategy))
        x = part["job_gpus"].to_list()
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["ettr_p90"].to_list(),
                mode="lines",
                line={"width": 0},
                showlegend=False,
                hoverinfo="skip",
                legendgroup=strategy,
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["ettr_p10"].to_list(),
                mode="lines",
                line={"width": 0},
                fill="tonexty",
                fillcolor=_rgba(colour, 0.18),
                name=f"{name}: 10-90 % of {seeds} seeds",
                legendgroup=strategy,
                showlegend=False,
                hoverinfo="skip",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=part["ettr_mean"].to_list(),
                mode="lines+markers",
                name=name,
                legendgroup=strategy,
                line={"color": colour, "width": 2.5},
                customdata=list(zip(part["ettr_p10"], part["ettr_p90"], part["days"], strict=True)),
                hovertemplate=f"{name}<br>%{{x:,}} GPUs: %{{y:.1%}} "
                "(10-90 %: %{customdata[0]:.1%} – %{customdata[1]:.1%}), runs of %{customdata[2]:g} days"
                "<extra></extra>",
            )
        )
    if current_gpus:
        fig.add_vline(x=current_gpus, line={"color": "#adb5bd", "dash": "dot"})
        fig.add_annotation(  # on a log axis an annotation's x is the log of the value (a shape's is not)
            x=math.log10(current_gpus),
            y=0.02,
            yref="paper",
            text=f"this plan: {current_gpus:,} GPUs",
            showarrow=False,
            xanchor="right",
            font={"color": "#868e96"},
        )
    ticks = sorted(set(bands["job_gpus"].to_list()))
    fig.update_layout(
        height=440,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        title={"text": f"Bands: 10th to 90th percentile over {seeds} seeds", "font": {"size": 13}, "x": 0.01},
        yaxis_title=definition("scale_mean_ettr").label,
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"},
    )
    fig.update_xaxes(
        type="log", title="job GPUs (log scale)", tickvals=ticks, ticktext=[gpus_text(g) for g in ticks]
    )
    fig.update_yaxes(tickformat=".0%")
    return fig


def break_even_chart(bands: pl.DataFrame, current: int, break_even: float | None) -> go.Figure:
    """Net value of warm standbys (goodput won - their cost, USD) against their count, with its 10-90 % band
    over seeds, zero marked, the plan's own count and the break-even where the net falls through zero.

    `bands`: engine.twin.standby.break_even_bands (standbys, won_usd_mean, standby_usd_mean, net_usd_mean,
    net_usd_p10, net_usd_p90)."""
    x = bands["standbys"].to_list()
    net = definition("standby_net_usd").label
    fig = go.Figure(
        [
            go.Scatter(
                x=x,
                y=bands["net_usd_p90"].to_list(),
                mode="lines",
                line={"width": 0},
                showlegend=False,
                hoverinfo="skip",
            ),
            go.Scatter(
                x=x,
                y=bands["net_usd_p10"].to_list(),
                mode="lines",
                line={"width": 0},
                fill="tonexty",
                fillcolor=_rgba(STRATEGY_COLOURS["hot_spare"], 0.18),
                name="10-90 % of seeds",
            ),
            go.Scatter(
                x=x,
                y=bands["net_usd_mean"].to_list(),
                mode="lines+markers",
                name=net,
                line={"color": STRATEGY_COLOURS["hot_spare"], "width": 2.5},
                customdata=[
                    (fmt_usd(w), fmt_usd(c))
                    for w, c in zip(bands["won_usd_mean"], bands["standby_usd_mean"], strict=True)
                ],
                hovertemplate="%{x} standbys: net %{y:$,.0f} (won %{customdata[0]}, cost %{customdata[1]})"
                "<extra></extra>",
            ),
        ]
    )
    fig.add_hline(y=0, line={"color": "#868e96", "width": 1})
    fig.add_vline(
        x=current, line={"color": "#adb5bd", "dash": "dot"}, annotation_text=f"this plan: {current}"
    )
    if break_even is not None:
        fig.add_trace(
            go.Scatter(
                x=[break_even],
                y=[0.0],
                mode="markers+text",
                name=definition("standby_break_even").label,
                text=[f"break-even ≈ {break_even:,.0f}"],
                textposition="top center",
                marker={"size": 12, "symbol": "x", "color": "#c92a2a"},
            )
        )
    fig.update_layout(
        height=360,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis_title="warm standby hosts",
        yaxis_title=f"{net}",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_yaxes(tickformat="$,.0f")
    return fig
