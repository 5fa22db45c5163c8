"""Overview figures: where the flagship job's time went, ETTR over time, interruptions by cause, host states.

Pure functions, frames and numbers in, Plotly figures out, so they can be tested without Streamlit.
"""

from datetime import datetime
from typing import NamedTuple

import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import as_time, hover_time, time_axis
from dashboard.format import fmt_gpu_hours, fmt_pct
from dashboard.text import plot
from engine.analysis.definitions import definition
from engine.report.palette import (
    CATEGORY_COLOURS,
    HOST_STATE_LABELS,
    LOSS_COLOURS,
    LOSS_LABELS,
    OTHER_COLOUR,
    category_of,
    cause_label,
    state_colour,
)

# A residual smaller than this share of wall-clock time is rounding, not a loss worth a bar of its own.
RESIDUAL_SHARE = 0.005
_MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}


def _two_lines(label: str) -> str:
    """A bucket label broken at its middle space, so six bars' labels fit side by side without tilting."""
    if len(label) <= 12 or " " not in label:
        return label
    middle = len(label) // 2
    cut = min((i for i, c in enumerate(label) if c == " "), key=lambda i: abs(i - middle))
    return label[:cut] + "<br>" + label[cut + 1 :]


def goodput_waterfall(
    wall_gpu_hours: float, losses: dict[str, float], productive_gpu_hours: float | None = None
) -> go.Figure:
    """Wall-clock GPU-hours of the job, each loss taken away in turn, ending at productive GPU-hours.

    `losses` maps loss categories (engine.analysis.analytics.LOSS_CATEGORIES) to GPU-hours. When the productive figure
    is given (ETTR x wall-clock) and the losses do not account for the whole difference, an "Other" step shows
    the rest instead of hiding it. Losses are often a few percent of the wall-clock, so the value axis starts
    above zero (the title says where) to keep them visible.
    """
    steps = [(k, _two_lines(LOSS_LABELS.get(k, k)), -float(v)) for k, v in losses.items() if v]
    accounted = wall_gpu_hours - sum(v for v in losses.values())
    productive = accounted if productive_gpu_hours is None else productive_gpu_hours
    residual = accounted - productive
    if abs(residual) > RESIDUAL_SHARE * wall_gpu_hours:
        steps.append(("other", "Other", -residual))
    labels = ["Wall clock", *(s[1] for s in steps), _two_lines(LOSS_LABELS["productive"])]
    hover = [
        "Wall-clock time of the job x its GPUs",
        *(LOSS_LABELS.get(s[0], "Not broken down") for s in steps),
        "Productive training (ETTR x wall-clock)",
    ]
    # Drawn as floating bars (each with its own base) rather than go.Waterfall, which colours bars only by
    # direction: here every loss keeps the colour it has everywhere else in the dashboard.
    level, bases, heights = wall_gpu_hours, [0.0], [wall_gpu_hours]
    for _, _, delta in steps:
        level += delta
        bases.append(min(level, level - delta))
        heights.append(abs(delta))
    bases.append(0.0)
    heights.append(productive)
    share = [h / wall_gpu_hours if wall_gpu_hours else 0.0 for h in heights]
    text = [f"{fmt_gpu_hours(h)}<br>{fmt_pct(p)}" for h, p in zip(heights, share, strict=True)]
    colors = ["#4c78a8", *(LOSS_COLOURS.get(s[0], OTHER_COLOUR) for s in steps), LOSS_COLOURS["productive"]]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=heights,
            base=bases,
            marker={"color": colors},
            text=text,
            textposition="outside",
            cliponaxis=False,
            customdata=hover,
            hovertemplate="%{customdata}: %{y:,.1f} GPU-h<extra></extra>",
        )
    )
    lost = wall_gpu_hours - min(productive, wall_gpu_hours)
    floor = axis_floor(productive, lost)
    title = "Flagship job: wall-clock to productive GPU-hours"
    if floor > 0:
        title += f"<br><sup>value axis starts at {fmt_gpu_hours(floor)} so the losses show</sup>"
    fig.update_layout(
        title=title, yaxis_title="GPU-hours", showlegend=False, margin={**_MARGIN, "t": 60}, height=400
    )
    fig.update_yaxes(range=[floor, max(wall_gpu_hours, productive) + 0.35 * max(lost, 0.02 * wall_gpu_hours)])
    return fig


def axis_floor(productive: float, lost: float) -> float:
    """Where the waterfall's axis starts: zero when losses are a large share, else just below productive."""
    floor = productive - 2.0 * lost
    if floor < 0.25 * productive:
        return 0.0
    magnitude = 10 ** max(0, len(str(int(floor))) - 2)  # a round number: 62,913 -> 62,000
    return float(floor // magnitude * magnitude)


def ettr_over_time(
    timeline: pl.DataFrame,
    started_at: datetime,
    interruptions: pl.DataFrame | None = None,
    closed_form: float | None = None,
) -> go.Figure:
    """ETTR per time bucket (bars) and cumulative from the job's start (line), with interruptions marked.

    `timeline` is engine.analysis.analytics.ettr_timeline's frame (t_s, ettr, ettr_cumulative); `interruptions` has
    t_s and cause (the attempts that ended in a failure or planned stop).
    """
    when = as_time(started_at, timeline["t_s"].to_numpy()).tolist()  # datetimes, or ms for an unknown date
    width_ms = (float(timeline["t_s"][1] - timeline["t_s"][0]) * 1000) if timeline.height > 1 else None
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=when,
            y=timeline["ettr"].to_list(),
            name="ETTR in the bucket",
            width=width_ms,
            offset=0,
            marker={"color": "#9ecae1"},
            hovertemplate=hover_time(started_at, "minutes") + ": %{y:.1%}<extra>bucket</extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=when,
            y=timeline["ettr_cumulative"].to_list(),
            name="ETTR since the job started",
            mode="lines",
            line={"color": "#08519c", "width": 2.5},
            line_shape="hv",
            hovertemplate=hover_time(started_at, "minutes") + ": %{y:.1%}<extra>cumulative</extra>",
        )
    )
    if closed_form is not None:
        fig.add_hline(
            y=closed_form,
            line={"dash": "dash", "color": "#555"},
            annotation_text=f"closed form {fmt_pct(closed_form)}",
            annotation_position="bottom right",
        )
    lowest = min([v for v in timeline["ettr"].to_list() if v is not None] + [closed_form or 1.0, 1.0])
    bottom = max(0.0, (int(lowest * 10) - 1) / 10)  # a tenth below the worst bucket, never below 0
    fig.update_layout(
        title="ETTR over time",
        yaxis={"title": "ETTR", "tickformat": ".0%", "range": [bottom, 1.02], "domain": [0.3, 1.0]},
        legend={"orientation": "h", "y": -0.15},
        margin=_MARGIN,
        height=440,
        bargap=0.05,
        barmode="stack",
    )
    _interruption_counts(fig, interruptions, timeline, when, width_ms, started_at)
    return time_axis(fig, started_at, precision="minutes")


def _interruption_counts(
    fig: go.Figure,
    interruptions: pl.DataFrame | None,
    timeline: pl.DataFrame,
    when: list,
    width_ms: float | None,
    started_at: datetime,
) -> None:
    """Interruptions per ETTR bucket, stacked by category, in a strip under the ETTR chart (its own y axis):
    hundreds of them stay legible as counts, where markers on one line would hide each other."""
    fig.update_layout(
        yaxis2={
            "title": "interruptions",
            "domain": [0.0, 0.22],
            "rangemode": "tozero",
            "tickformat": "d",
            "anchor": "x",
        }
    )
    if interruptions is None or not interruptions.height or timeline.height < 1:
        return
    starts = timeline["t_s"].cast(pl.Float64)
    width_s = float(starts[1] - starts[0]) if timeline.height > 1 else float("inf")
    first = float(starts[0])
    buckets = (
        interruptions.with_columns(
            bucket=((pl.col("t_s") - first) // width_s).clip(0, timeline.height - 1).cast(pl.Int64)
            if width_s != float("inf")
            else pl.lit(0, pl.Int64),
            category=pl.col("cause").replace_strict(
                {c: category_of(c) for c in interruptions["cause"].unique().to_list()}, return_dtype=pl.String
            ),
        )
        .group_by("category", "bucket")
        .len()
        .sort("category", "bucket")
    )
    order = (
        buckets.group_by("category")
        .agg(pl.col("len").sum())
        .sort(["len", "category"], descending=[True, False])
    )
    for category in order["category"].to_list():
        part = buckets.filter(pl.col("category") == category)
        fig.add_trace(
            go.Bar(
                x=[when[i] for i in part["bucket"].to_list()],
                y=part["len"].to_list(),
                width=width_ms,
                offset=0,
                yaxis="y2",
                name=f"{plot(category)} interruptions",
                legendgroup="interruptions",
                marker={"color": CATEGORY_COLOURS.get(category, OTHER_COLOUR)},
                hovertemplate=f"{hover_time(started_at, 'minutes')}: %{{y}} interruptions"
                f"<extra>{plot(category)}</extra>",
            )
        )


def interruptions_by_cause(counts: pl.DataFrame, what: str = "interruptions") -> go.Figure:
    """Horizontal bars of `what` per cause (columns cause, count), coloured by category: "interruptions" of the
    flagship job, or "incidents" of the cluster where a run has no flagship job (engine.analysis.definitions)."""
    frame = counts.filter(pl.col("count") > 0).sort("count")
    fig = go.Figure()
    categories = [category_of(c) for c in frame["cause"]]
    for category in dict.fromkeys(reversed(categories)):  # legend in order of the biggest bar first
        rows = frame.filter(pl.Series(categories) == category)
        fig.add_trace(
            go.Bar(
                y=[plot(cause_label(c)) for c in rows["cause"]],
                x=rows["count"].to_list(),
                orientation="h",
                name=category,
                marker={"color": CATEGORY_COLOURS.get(category, OTHER_COLOUR)},
                text=rows["count"].to_list(),
                textposition="outside",
                cliponaxis=False,
                hovertemplate=f"%{{y}}: %{{x}} {what}<extra>%{{fullData.name}}</extra>",
            )
        )
    fig.update_layout(
        title=f"{what.capitalize()} by cause",
        xaxis_title=what,
        barmode="stack",
        yaxis={"categoryorder": "array", "categoryarray": [plot(cause_label(c)) for c in frame["cause"]]},
        legend={"title": "category", "traceorder": "normal"},
        margin=_MARGIN,
        height=max(260, 60 + 26 * frame.height),
    )
    largest = frame["count"].max() or 0
    _whole_number_ticks(fig.layout.xaxis, largest)
    fig.update_xaxes(range=[0, largest * 1.12 + 0.5])  # room for the count printed after the longest bar
    return fig


class BarPart(NamedTuple):
    """One part of a stacked horizontal bar: its name (already plain text), size, colour and label inside."""

    name: str
    value: float
    colour: str
    text: str


def stacked_bar(parts: list[BarPart], unit: str, x_title: str, value_format: str) -> go.Figure:
    """One stacked horizontal bar of `parts`, their legend below the axis title in the bars' order."""
    fig = go.Figure()
    for part in parts:
        fig.add_trace(
            go.Bar(
                x=[part.value],
                y=[unit],
                orientation="h",
                name=part.name,
                marker={"color": part.colour},
                text=[part.text],
                textposition="inside",
                # the name, not the part pasted into the template: data there could hold `%{..}` placeholders
                hovertemplate=f"%{{fullData.name}}: %{{x:{value_format}}} {unit}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        height=170,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis_title=x_title,
        yaxis={"visible": False},
        # Plotly lists stacked horizontal bars last first: the legend in the bars' order instead
        legend={"orientation": "h", "y": -0.9, "traceorder": "normal"},
    )
    return fig


def hosts_by_state(counts: pl.DataFrame) -> go.Figure:
    """How many hosts are in each state (columns state, hosts): a bar a state, its name on the axis and its
    count after the bar, so a state of 3 hosts among 60 is as readable as the biggest (a stacked bar squeezed
    their labels into slivers)."""
    frame = counts.filter(pl.col("hosts") > 0)
    names = [plot(HOST_STATE_LABELS.get(s, s)) for s in frame["state"].to_list()]
    fig = go.Figure(
        go.Bar(
            x=frame["hosts"].to_list(),
            y=names,
            orientation="h",
            marker={"color": [state_colour(s) for s in frame["state"].to_list()]},
            text=[f"{n:,}" for n in frame["hosts"].to_list()],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}: %{x:,} hosts<extra></extra>",
            showlegend=False,
        )
    )
    largest = frame["hosts"].max() if frame.height else 0
    fig.update_layout(
        height=60 + 30 * max(frame.height, 1),
        margin={"l": 10, "r": 30, "t": 10, "b": 10},
        xaxis_title="hosts",
        # the states in the palette's order, top to bottom
        yaxis={"categoryorder": "array", "categoryarray": names[::-1], "automargin": True},
    )
    _whole_number_ticks(fig.layout.xaxis, largest or 0)
    fig.update_xaxes(range=[0, (largest or 1) * 1.1 + 0.5])  # room for the count after the longest bar
    return fig


def _whole_number_ticks(axis, largest: float) -> None:
    """Counts have no halves: whole-number ticks, one per unit while the axis is short."""
    axis.tickformat = ",d"
    if largest <= 10:
        axis.dtick = 1


# A watched cluster's jobs (engine.ingest.watch.goodput.ObservedLedger): the summary's key, the definition that
# names it, and the ledger colour of the simulated bucket it corresponds to (green kept, red lost work, orange for
# the time a restart costs).
OBSERVED_BUCKETS = (
    ("kept", "observed_job_goodput", LOSS_COLOURS["productive"]),
    ("lost_work", "observed_lost_work", LOSS_COLOURS["lost_work"]),
    ("between_attempts", "observed_between_attempts", LOSS_COLOURS["restart"]),
)


def observed_ledger(gpu_hours: dict) -> go.Figure:
    """One stacked horizontal bar: where the watched jobs' wall-clock GPU-hours went (the summary's
    jobs_ledger_gpu_hours: kept, lost_work, between_attempts)."""
    wall = sum(float(gpu_hours.get(key) or 0.0) for key, _, _ in OBSERVED_BUCKETS)
    parts = []
    for key, definition_key, colour in OBSERVED_BUCKETS:
        value = float(gpu_hours.get(key) or 0.0)
        label = "kept" if key == "kept" else definition(definition_key).label
        parts.append(BarPart(label, value, colour, f"{label} {value / wall:.0%}" if wall > 0 else ""))
    return stacked_bar(parts, "GPU-hours", "GPU-hours of the watched jobs' wall clock", ",.1f")
