"""Twin charts: each cause's fitted failure rate against the default it replaces, the history the twin learned
from (the weekly failure rate and repair time with their fitted levels), the backtest's observed figures against
the simulated bands, and faults by week and hosts in repair by day against the twin's band."""

from datetime import datetime

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.charts.common import as_time, time_axis
from dashboard.format import fmt_duration
from dashboard.text import plot_all
from engine.report.palette import cause_label
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_WEEK

INSIDE = "#2e7d32"
OUTSIDE = "#c62828"
BAND = "rgba(33, 113, 181, 0.25)"
MEDIAN = "#2171b5"
PRIOR = "#9e9e9e"
FITTED = "#2171b5"
WEEKLY = "rgba(33, 113, 181, 0.45)"  # a week's rate: the evidence, lighter than the levels fitted to it
LEVELS = ("#7f7f7f", "#e6550d")  # an older level, and the one the twin takes (the most recent)
REPAIR = "#555"


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


def failure_history(
    weeks: pl.DataFrame, rate_levels: list[dict], repair_levels: list[dict], started_at: datetime
) -> go.Figure:
    """Two panels over the window's weeks (dashboard.queries.twin.history: start_s, end_s, week, faults,
    host_days, rate, repair_h): above, each week's failure rate per 1,000 host-days as a bar and the fitted levels
    as horizontal segments (start_s, end_s, level, name: one level, or one before each change and the recent one,
    the twin's, in orange); below, each week's median time to repair in hours and its levels alike."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.62, 0.38], vertical_spacing=0.08)
    starts, ends = weeks["start_s"].to_numpy(), weeks["end_s"].to_numpy()
    middle = as_time(started_at, (starts + ends) / 2)
    width = (ends - starts) * 1000.0 * 0.85  # milliseconds, as the date axis counts
    fig.add_trace(
        go.Bar(
            x=middle,
            y=weeks["rate"].to_list(),
            width=width,
            marker_color=WEEKLY,
            name="each week",
            customdata=list(
                zip(
                    weeks["week"].to_list(),
                    weeks["faults"].to_list(),
                    weeks["host_days"].to_list(),
                    strict=True,
                )
            ),
            hovertemplate="week of %{customdata[0]}: %{customdata[1]} fault events over %{customdata[2]:,.0f}"
            " host-days"
            "<br>%{y:.3g} per 1,000 host-days<extra></extra>",
        ),
        row=1,
        col=1,
    )
    _levels(fig, rate_levels, started_at, "per 1,000 host-days", lambda v: f"{v:.3g}", row=1)
    repair = weeks.filter(pl.col("repair_h").is_not_null())
    fig.add_trace(
        go.Scatter(
            x=as_time(started_at, ((repair["start_s"] + repair["end_s"]) / 2).to_numpy()),
            y=repair["repair_h"].to_list(),
            mode="markers",
            marker={"color": REPAIR, "size": 6},
            name="each week's median repair",
            customdata=list(
                zip(
                    repair["week"].to_list(),
                    [fmt_duration(h * SECONDS_PER_HOUR) for h in repair["repair_h"].to_list()],
                    strict=True,
                )
            ),
            hovertemplate="week of %{customdata[0]}: median repair %{customdata[1]}<extra></extra>",
        ),
        row=2,
        col=1,
    )
    _levels(fig, repair_levels, started_at, "", lambda v: fmt_duration(v * SECONDS_PER_HOUR), row=2)
    fig.update_yaxes(title_text="fault events per 1,000 host-days", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="repair, median (h)", rangemode="tozero", row=2, col=1)
    fig.update_layout(
        height=420,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        bargap=0.1,
    )
    return time_axis(fig, started_at, precision="minutes")


def _levels(fig: go.Figure, levels: list[dict], started_at: datetime, unit: str, shown, row: int) -> None:
    """Each level a horizontal segment over its weeks, the last (the twin's) in orange, older ones grey."""
    for i, level in enumerate(levels):
        colour = LEVELS[1] if i == len(levels) - 1 else LEVELS[0]
        fig.add_trace(
            go.Scatter(
                x=as_time(started_at, [level["start_s"], level["end_s"]]),
                y=[level["level"], level["level"]],
                mode="lines",
                line={"color": colour, "width": 3},
                name=level["name"],
                hovertemplate=f"{level['name']}: {shown(level['level'])} {unit}<extra></extra>",
            ),
            row=row,
            col=1,
        )


def backtest_bands(rows: list[dict]) -> go.Figure:
    """One small panel a figure (rows of label, observed, low, median, high, inside, unit, and scaled where the
    page put the values in another unit than the figure's, said then in the axis title): the twin's band
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
        title = f"{row['label']} ({row['unit']})" if row.get("scaled") else row["label"]
        fig.update_xaxes(title_text=title, title_standoff=2, range=_padded(row), row=i, col=1)
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


def faults_by_week(weeks: dict[str, list], started_at: datetime, start_s: float, end_s: float) -> go.Figure:
    """The faults of each week after `start_s` (engine.twin.backtest: observed, low, median, high, inside): the
    twin's band of the week as a bar from low to high, its median as a tick, the observed count as a diamond,
    green inside, red outside (as backtest_bands)."""
    count = len(weeks["observed"])
    starts = [start_s + i * SECONDS_PER_WEEK for i in range(count)]
    ends = [min(a + SECONDS_PER_WEEK, end_s) for a in starts]
    middle = as_time(started_at, [(a + b) / 2 for a, b in zip(starts, ends, strict=True)])
    low, high = weeks["low"], weeks["high"]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=middle,
            base=low,
            y=[h - lo for lo, h in zip(low, high, strict=True)],
            width=[(b - a) * 1000.0 * 0.6 for a, b in zip(starts, ends, strict=True)],
            marker_color=BAND,
            name="twin, band",
            customdata=list(zip(low, high, strict=True)),
            hovertemplate="twin band: %{customdata[0]:.0f} to %{customdata[1]:.0f} faults<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=middle,
            y=weeks["median"],
            mode="markers",
            marker={"symbol": "line-ew-open", "size": 18, "color": MEDIAN, "line": {"width": 2}},
            name="twin, median",
            hovertemplate="twin median: %{y:.3g} faults<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=middle,
            y=weeks["observed"],
            mode="markers",
            marker={
                "symbol": "diamond",
                "size": 11,
                "color": [INSIDE if inside else OUTSIDE for inside in weeks["inside"]],
            },
            name="observed",
            hovertemplate="observed: %{y} faults<extra></extra>",
        )
    )
    fig.update_layout(
        height=300,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        yaxis_title="faults in the week",
        yaxis_rangemode="tozero",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        hovermode="x unified",
    )
    return time_axis(fig, started_at, precision="minutes")


def repair_over_days(
    days: dict[str, list[float]], started_at: datetime | None = None, start_s: float = 0.0
) -> go.Figure:
    """Hosts in repair each day: the twin's band shaded, its median dashed, the observed as a line; the days as
    dates from `start_s` where `started_at` is given, else counted from the window's first."""
    count = len(days["observed"])
    if started_at is None:
        x = list(range(count))
    else:
        x = as_time(started_at, [start_s + (i + 0.5) * SECONDS_PER_DAY for i in range(count)])
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=x,
            y=days["high"],
            mode="lines",
            line={"width": 0},
            showlegend=False,
            hovertemplate="twin band high: %{y:.2f}<extra></extra>",
        )
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
            hovertemplate="twin band low: %{y:.2f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=days["median"],
            mode="lines",
            line={"dash": "dash", "color": MEDIAN},
            name="twin, median",
            hovertemplate="twin median: %{y:.2f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=days["observed"],
            mode="lines+markers",
            line={"color": "#222"},
            name="observed",
            hovertemplate="observed: %{y:.2f}<extra></extra>",
        )
    )
    fig.update_layout(
        height=300,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis_title="day of the window" if started_at is None else None,
        yaxis_title="hosts in repair (day's mean)",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        hovermode="x unified",
    )
    return fig if started_at is None else time_axis(fig, started_at, precision="minutes")
