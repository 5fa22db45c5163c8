"""Twin charts: each cause's fitted failure rate against the default it replaces, the backtest's observed
figures against the simulated bands, and hosts in repair day by day against the twin's band."""

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.text import plot_all
from engine.report.palette import cause_label

INSIDE = "#2e7d32"
OUTSIDE = "#c62828"
BAND = "rgba(33, 113, 181, 0.25)"
MEDIAN = "#2171b5"
PRIOR = "#9e9e9e"
FITTED = "#2171b5"


def cause_rates(rates: pl.DataFrame) -> go.Figure:
    """Horizontal bars of each cause's fitted rate (columns cause, rate, low, high, n, prior, default), its
    90 % interval as error bars, grey where it rests on the prior; the default's rate as a marker."""
    rows = rates.reverse()  # the largest on top
    labels = plot_all([cause_label(c) for c in rows["cause"].to_list()])
    rate = rows["rate"].fill_null(0.0).to_list()
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            y=labels,
            x=rate,
            orientation="h",
            name="fitted (90 % interval)",
            marker_color=[PRIOR if p else FITTED for p in rows["prior"].to_list()],
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [h - r for h, r in zip(rows["high"].fill_null(0.0).to_list(), rate, strict=True)],
                "arrayminus": [
                    r - lo for lo, r in zip(rows["low"].fill_null(0.0).to_list(), rate, strict=True)
                ],
                "thickness": 1.2,
            },
            customdata=list(
                zip(rows["n"].to_list(), ["prior" if p else "this run" for p in rows["prior"]], strict=True)
            ),
            hovertemplate="%{y}: %{x:.3g} per 1,000 host-days<br>n=%{customdata[0]}, from %{customdata[1]}"
            "<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            y=labels,
            x=rows["default"].to_list(),
            mode="markers",
            name="default (llama3-405b)",
            marker={"symbol": "line-ns-open", "size": 14, "color": "#333", "line": {"width": 2}},
            hovertemplate="%{y}: default %{x:.3g}<extra></extra>",
        )
    )
    fig.update_layout(
        height=max(260, 22 * rows.height + 80),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis_title="failures per 1,000 host-days",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        bargap=0.25,
    )
    return fig


def backtest_bands(rows: list[dict]) -> go.Figure:
    """One small panel a figure (rows of label, observed, low, median, high, inside, unit): the twin's band
    (engine.twin.prediction) as a bar, its median as a tick, the observed value as a diamond, green inside, red
    outside."""
    fig = make_subplots(rows=len(rows), cols=1, vertical_spacing=0.5 / max(len(rows), 1))
    for i, row in enumerate(rows, start=1):
        low, high, median, observed = row["low"], row["high"], row["median"], row["observed"]
        if low is not None and high is not None:
            fig.add_trace(
                go.Scatter(
                    x=[low, high],
                    y=[0, 0],
                    mode="lines",
                    line={"width": 14, "color": BAND},
                    hovertemplate=f"twin band: %{{x:.4g}} {row['unit']}<extra></extra>",
                    showlegend=False,
                ),
                row=i,
                col=1,
            )
            fig.add_trace(
                go.Scatter(
                    x=[median],
                    y=[0],
                    mode="markers",
                    marker={"symbol": "line-ns-open", "size": 18, "color": MEDIAN, "line": {"width": 2}},
                    hovertemplate=f"median of the twin: %{{x:.4g}} {row['unit']}<extra></extra>",
                    showlegend=False,
                ),
                row=i,
                col=1,
            )
        if observed is not None:
            colour = OUTSIDE if row["inside"] is False else INSIDE
            fig.add_trace(
                go.Scatter(
                    x=[observed],
                    y=[0],
                    mode="markers",
                    marker={"symbol": "diamond", "size": 13, "color": colour},
                    hovertemplate=f"observed: %{{x:.4g}} {row['unit']}<extra></extra>",
                    showlegend=False,
                ),
                row=i,
                col=1,
            )
        fig.update_yaxes(visible=False, row=i, col=1)
        fig.update_xaxes(title_text=row["label"], title_standoff=2, range=_padded(row), row=i, col=1)
    fig.update_layout(height=95 * len(rows) + 20, margin={"l": 10, "r": 10, "t": 10, "b": 10})
    return fig


def _padded(row: dict) -> list[float] | None:
    """An x range holding the band and the observed value with room on both sides, so a band never fills the
    panel's whole width and an observed value far outside stays in view."""
    values = [v for v in (row["low"], row["high"], row["observed"]) if v is not None]
    if not values:
        return None
    low, high = min(values), max(values)
    pad = (high - low) * 0.25 or abs(high) * 0.05 or 1.0
    return [low - pad, high + pad]


def repair_over_days(days: dict[str, list[float]]) -> go.Figure:
    """Hosts in repair each day: the twin's band shaded, its median dashed, the observed as a line."""
    x = list(range(len(days["observed"])))
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=x, y=days["high"], mode="lines", line={"width": 0}, showlegend=False, hoverinfo="skip")
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=days["low"],
            mode="lines",
            line={"width": 0},
            fill="tonexty",
            fillcolor=BAND,
            name="twin, band",
            hovertemplate="day %{x}: twin band low %{y:.2f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x, y=days["median"], mode="lines", line={"dash": "dash", "color": MEDIAN}, name="twin, median"
        )
    )
    fig.add_trace(
        go.Scatter(x=x, y=days["observed"], mode="lines+markers", line={"color": "#222"}, name="observed")
    )
    fig.update_layout(
        height=300,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis_title="day of the window",
        yaxis_title="hosts in repair (day's mean)",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    return fig
