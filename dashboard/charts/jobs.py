"""Jobs charts: a Gantt of job attempts with failure, restart and checkpoint marks (the queue, waits and why,
utilisation and fragmentation over time: dashboard.charts.queue). Frames in, Plotly figures out.

`as_time` (dashboard.charts.common, imported here where the other page charts have long found it) turns run
times, seconds since the run's start, into what a date axis draws, the same way on every chart.
"""

import math
from datetime import datetime

import plotly.graph_objects as go
import polars as pl

from dashboard.charts.common import as_time, hover_time, text_px, time_axis

# named here too for the tests that read them through this module (tests/test_charts_jobs.py,
# tests/test_charts_unknown_start.py)
from dashboard.charts.queue import queue_over_time as queue_over_time
from dashboard.charts.queue import utilisation_and_fragmentation as utilisation_and_fragmentation
from dashboard.charts.queue import wait_histogram as wait_histogram
from dashboard.charts.queue import wait_percentiles as wait_percentiles
from dashboard.charts.queue import why_waited as why_waited
from dashboard.text import plot_all, plot_expr
from dashboard.text_exprs import cause_label_text, duration_text, time_text
from engine.report.palette import CLEAN_END_REASONS, END_REASON_COLOURS, END_REASON_LABELS

# A row of the Gantt gets its failure, restart and checkpoint marks only while the window holds at most this
# many of them: past it they merge into a black band (14,287 checkpoints of the flagship job in 54 days) and
# the attempt bars, coloured by how each ended, already say what the marks would.
MARKS_IN_VIEW = 200
# A Gantt's job names up to this wide (about 60 characters) get a margin set for them; wider, Plotly measures them
MAX_LABEL_PX = 320


def end_kind(reasons: pl.Series) -> pl.Series:
    """Collapse end reasons to the colour classes of END_REASON_COLOURS (any failure cause is `failure`)."""
    return pl.select(
        pl.when(reasons.is_in(CLEAN_END_REASONS)).then(reasons).otherwise(pl.lit("failure")).alias("kind")
    ).to_series()


def bars_over_time(
    frame: pl.DataFrame,
    *,
    started_at: datetime,
    row: str,
    colour_by: str,
    colours: dict[str, str],
    hover: str = "",
    key: str = "",
    names: dict[str, str] | None = None,
    outline: str | None = None,
) -> list[go.Bar]:
    """Horizontal bars from start_s to end_s, one trace per colour class (so the legend names them).

    `frame` has `row` (the y label), `start_s`, `end_s` and `colour_by`; `hover` names a text column and
    `key` a column each bar carries as customdata (what a click on it hands the page); `names` the legend's
    words for each class (else the class itself); `outline` a colour that parts neighbouring bars.
    """
    traces = []
    for value in [v for v in colours if v in set(frame[colour_by].to_list())]:
        part = frame.filter(pl.col(colour_by) == value)
        width_ms = ((part["end_s"] - part["start_s"]) * 1000.0).to_numpy()
        traces.append(
            go.Bar(
                base=as_time(started_at, part["start_s"].to_numpy()),
                x=width_ms,
                y=part[row].to_list(),
                orientation="h",
                name=(names or {}).get(value, value),
                marker_color=colours[value],
                marker_line={"width": 1, "color": outline} if outline else None,
                hovertext=part[hover].to_list() if hover else None,
                hoverinfo="text+name" if hover else "all",
                customdata=part[key].to_list() if key else None,
            )
        )
    return traces


def clicked_job(selection) -> str | None:
    """The job id (customdata) of the first selected bar or failure mark of the Gantt, else None."""
    points = (
        (selection or {}).get("points", [])
        if isinstance(selection, dict)
        else getattr(selection, "points", [])
    )
    for point in points or []:
        if isinstance(point.get("customdata"), str):
            return point["customdata"]
    return None


WAITING_COLOUR = "#d9d9d9"  # the wait before a first start: light, behind the attempts
GAP_COLOUR = "#ffd8a8"  # between two attempts of a job: restarting, waiting for spares or requeued
MARK_COLOUR = "rgba(0,0,0,0.7)"
CHECKPOINT_COLOUR = "rgba(90,90,90,0.45)"  # a thin, light tick: checkpoints are routine, not events


def _in_window(frame: pl.DataFrame, column: str, window: tuple[float, float] | None) -> pl.DataFrame:
    return (
        frame
        if window is None
        else frame.filter(pl.col(column).is_between(window[0], window[1], closed="left"))
    )


def few_enough(
    frame: pl.DataFrame, column: str, window: tuple[float, float] | None, limit: int = MARKS_IN_VIEW
) -> pl.DataFrame:
    """The marks of `frame` (a row per mark at `column`, rows named by `label`) inside the window, kept only
    for the rows with at most `limit` of them there: more cannot be told apart on one row."""
    inside = _in_window(frame, column, window)
    return inside.filter(pl.len().over("label") <= limit)


def attempts_gantt(
    attempts: pl.DataFrame,
    started_at: datetime,
    row_order: list[str],
    checkpoints: pl.DataFrame | None = None,
    window: tuple[float, float] | None = None,
    waiting: pl.DataFrame | None = None,
) -> go.Figure:
    """Gantt of attempts: a row per job (`label`), a bar per attempt coloured by how it ended (parted from its
    neighbours by a white line), a light bar in each gap between two attempts, and, on rows where the window
    holds at most MARKS_IN_VIEW of them, an x at each failure, a triangle at each restart and a light tick at
    each checkpoint.

    `attempts` has job_id, label, attempt, start_s, end_s, end_reason, lost_work_s; `row_order` lists labels
    top down; `checkpoints` (job_id, label, start_s) the checkpoints to mark; `waiting` (job_id, label,
    submit_s, start_s) a light bar from submission to first start; `window` (from, to) in run seconds sets
    the x range and which marks are in view. Bars and marks carry the job id as customdata; hovers give times
    (dates, or the time from the start of a run whose date is unknown).
    """

    label_px = max((text_px(label) for label in row_order), default=0.0)
    # job names and end reasons come from traces: Plotly text (labels, hover, the y axis) only as entities
    row_order = plot_all(row_order)
    frame = _attempt_frame(attempts, started_at)
    fig = go.Figure()
    if waiting is not None:
        fig.add_traces(_waiting_bars(waiting, started_at))
    fig.add_traces(_gap_bars(frame, started_at))
    fig.add_traces(
        bars_over_time(
            frame,
            started_at=started_at,
            row="label",
            colour_by="end_kind",
            colours=END_REASON_COLOURS,
            hover="hover",
            key="job_id",
            names=END_REASON_LABELS,
            outline="white",
        )
    )
    fig.add_traces(_attempt_marks(frame, checkpoints, window, started_at))
    if window is not None:
        fig.update_xaxes(range=list(as_time(started_at, list(window))))
    # Margins set, not measured, where the job names fit: Plotly's automargin measures every label (a forced layout
    # each) and then draws the whole Gantt again (issue 28: about 0.2 s of a visit on 2 cores). Left: the widest
    # name and the gap to the bars Plotly leaves (18.5-18.8 px, measured); top: the legend, dates and "UTC" above
    # the bars, as automargin found them at 1280 px, where the legend wraps to three lines (92 px at 1920: one).
    measured = label_px > MAX_LABEL_PX  # names this long: Plotly measures them, rather than any cut
    fig.update_layout(
        barmode="overlay",
        height=max(260, 22 * len(row_order) + 140),
        margin={"l": 10 if measured else math.ceil(label_px) + 20, "r": 10, "t": 130, "b": 10},
        legend={"orientation": "h", "y": 1.0, "yanchor": "top", "yref": "container"},  # above the top axis
    )
    # a Gantt of hundreds of rows: dates where the reading starts, in UTC (the run's times are UTC)
    time_axis(fig, started_at, type="date", side="top", title_text="UTC", title_standoff=4, automargin=False)
    fig.update_yaxes(
        categoryorder="array",
        categoryarray=list(reversed(row_order)),
        range=[-0.6, len(row_order) - 0.4],
        automargin=measured,
    )
    return fig


def _attempt_frame(attempts: pl.DataFrame, started_at: datetime) -> pl.DataFrame:
    """The attempts in job and attempt order, with their plot-safe label, how they ended and their hover."""

    def when(column: str) -> pl.Expr:
        return time_text(column, started_at)

    ended_by = pl.col("end_reason").replace_strict(
        END_REASON_LABELS, default=cause_label_text("end_reason"), return_dtype=pl.String
    )
    ordered = attempts.sort("job_id", "attempt")
    return ordered.with_columns(
        plot_expr("label"),
        plot_expr(ended_by).alias("ended_by"),
        end_kind(ordered["end_reason"]).alias("end_kind"),
    ).with_columns(
        pl.format(
            "attempt {}: {} → {}<br>ran {} · ended by {}<br>{} of training lost",
            pl.col("attempt"),
            when("start_s"),
            when("end_s"),
            duration_text(pl.col("end_s") - pl.col("start_s")),
            pl.col("ended_by"),
            duration_text("lost_work_s"),
        ).alias("hover"),
    )


def _waiting_bars(waiting: pl.DataFrame, started_at: datetime) -> list:
    """A light bar a job from its submission to its first start."""

    def when(column: str) -> pl.Expr:
        return time_text(column, started_at)

    waits = (
        waiting.with_columns(plot_expr("label"))
        .filter(pl.col("start_s") > pl.col("submit_s"))
        .select(
            "job_id",
            "label",
            pl.col("submit_s").alias("start_s"),
            pl.col("start_s").alias("end_s"),
            pl.lit("waiting").alias("kind"),
            pl.format(
                "submitted {}<br>waited {} before its first start",
                when("submit_s"),
                duration_text(pl.col("start_s") - pl.col("submit_s")),
            ).alias("hover"),
        )
    )
    return bars_over_time(
        waits,
        started_at=started_at,
        row="label",
        colour_by="kind",
        colours={"waiting": WAITING_COLOUR},
        hover="hover",
        key="job_id",
        names={"waiting": "Waiting for a first start"},
    )


def _gap_bars(frame: pl.DataFrame, started_at: datetime) -> list:
    """A light bar in each gap between two attempts of a job (restarting or requeued)."""
    gaps = (
        frame.with_columns(
            pl.col("end_s").alias("gap_from"), pl.col("start_s").shift(-1).over("job_id").alias("gap_to")
        )
        .filter(pl.col("gap_to") > pl.col("gap_from"))
        .select(
            "job_id",
            "label",
            pl.col("gap_from").alias("start_s"),
            pl.col("gap_to").alias("end_s"),
            pl.lit("gap").alias("kind"),
            pl.format(
                "after attempt {}: {} until the next attempt",
                pl.col("attempt"),
                duration_text(pl.col("gap_to") - pl.col("gap_from")),
            ).alias("hover"),
        )
    )
    return bars_over_time(
        gaps,
        started_at=started_at,
        row="label",
        colour_by="kind",
        colours={"gap": GAP_COLOUR},
        hover="hover",
        key="job_id",
        names={"gap": "Restarting or requeued"},
    )


def _attempt_marks(
    frame: pl.DataFrame,
    checkpoints: pl.DataFrame | None,
    window: tuple[float, float] | None,
    started_at: datetime,
) -> list[go.Scatter]:
    """An x at each failure, a triangle at each restart and a tick at each checkpoint, on the rows where the
    window holds few enough of them."""
    traces = []
    failed = few_enough(frame.filter(pl.col("end_kind") == "failure"), "end_s", window)
    if failed.height:
        traces.append(
            go.Scatter(
                x=as_time(started_at, failed["end_s"].to_numpy()),
                y=failed["label"].to_list(),
                mode="markers",
                marker={"symbol": "x", "size": 9, "color": MARK_COLOUR},
                name="Failure here",
                text=failed["ended_by"].to_list(),
                customdata=failed["job_id"].to_list(),
                hovertemplate=f"%{{y}}<br>{hover_time(started_at)}<br>%{{text}}<extra>failure</extra>",
            )
        )
    restarts = few_enough(frame.filter(pl.col("attempt") > 1), "start_s", window)
    if restarts.height:
        traces.append(
            go.Scatter(
                x=as_time(started_at, restarts["start_s"].to_numpy()),
                y=restarts["label"].to_list(),
                mode="markers",
                marker={"symbol": "triangle-right", "size": 9, "color": MARK_COLOUR},
                name="Restart",
                text=restarts["attempt"].to_list(),
                customdata=restarts["job_id"].to_list(),
                hovertemplate=f"%{{y}}<br>{hover_time(started_at)}<br>attempt %{{text}}<extra>restart</extra>",
            )
        )
    marks = (
        few_enough(checkpoints.with_columns(plot_expr("label")), "start_s", window)
        if checkpoints is not None
        else None
    )
    if marks is not None and marks.height:
        traces.append(
            go.Scatter(
                x=as_time(started_at, marks["start_s"].to_numpy()),
                y=marks["label"].to_list(),
                mode="markers",
                marker={"symbol": "line-ns", "size": 9, "line": {"width": 1, "color": CHECKPOINT_COLOUR}},
                name="Checkpoint",
                customdata=marks["job_id"].to_list(),
                hovertemplate=f"%{{y}}<br>{hover_time(started_at)}<extra>checkpoint</extra>",
            )
        )
    return traces
