"""Jobs charts: a Gantt of job attempts with failure, restart and checkpoint marks; the queue, waits and why;
utilisation and fragmentation over time. Frames in, Plotly figures out.

Also home to the time helpers the other page charts share: run times are seconds since the run's start and
pages show dates, so every chart turns `*_s` columns into UTC datetimes the same way.
"""

from datetime import UTC, datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from dashboard.charts.common import fmt_duration
from dashboard.text import plot_all, plot_expr

# End reasons that are not failures (everything else in job_attempts.end_reason is a failure cause).
CLEAN_ENDS = ("completed", "end_of_run", "preempted", "planned_maintenance", "running")
END_COLOURS = {
    "completed": "#2ca02c",
    "end_of_run": "#7f7f7f",
    "running": "#1f77b4",
    "preempted": "#ff7f0e",
    "planned_maintenance": "#9467bd",
    "failure": "#d62728",
}


def as_time(started_at: datetime, seconds) -> np.ndarray:
    """Seconds since the run's start as naive-UTC datetime64[ms] (what Plotly draws on a date axis)."""
    origin = np.datetime64(started_at.astimezone(UTC).replace(tzinfo=None), "ms")
    ms = np.rint(np.asarray(seconds, dtype=float) * 1000.0).astype("int64")
    return origin + ms.astype("timedelta64[ms]")


def end_kind(reasons: pl.Series) -> pl.Series:
    """Collapse end reasons to the colour classes of END_COLOURS (any failure cause becomes `failure`)."""
    return pl.select(
        pl.when(reasons.is_in(CLEAN_ENDS)).then(reasons).otherwise(pl.lit("failure")).alias("kind")
    ).to_series()


def bars_over_time(frame: pl.DataFrame, *, started_at: datetime, row: str, colour_by: str,
                   colours: dict[str, str], hover: str = "", key: str = "") -> list[go.Bar]:
    """Horizontal bars from start_s to end_s, one trace per colour class (so the legend names them).

    `frame` has `row` (the y label), `start_s`, `end_s` and `colour_by`; `hover` names a text column and
    `key` a column each bar carries as customdata (what a click on it hands the page).
    """
    traces = []
    for value in [v for v in colours if v in set(frame[colour_by].to_list())]:
        part = frame.filter(pl.col(colour_by) == value)
        width_ms = ((part["end_s"] - part["start_s"]) * 1000.0).to_numpy()
        traces.append(go.Bar(
            base=as_time(started_at, part["start_s"].to_numpy()), x=width_ms, y=part[row].to_list(),
            orientation="h", name=value, marker_color=colours[value],
            hovertext=part[hover].to_list() if hover else None, hoverinfo="text+name" if hover else "all",
            customdata=part[key].to_list() if key else None,
        ))
    return traces


def clicked_job(selection) -> str | None:
    """The job id (customdata) of the first selected bar or failure mark of the Gantt, else None."""
    points = (selection or {}).get("points", []) if isinstance(selection, dict) else getattr(selection, "points", [])
    for point in points or []:
        if isinstance(point.get("customdata"), str):
            return point["customdata"]
    return None


WAITING_COLOUR = "#d9d9d9"  # the wait before a first start: light, behind the attempts


def attempts_gantt(attempts: pl.DataFrame, started_at: datetime, row_order: list[str],
                   checkpoints: pl.DataFrame | None = None, window: tuple[float, float] | None = None,
                   waiting: pl.DataFrame | None = None) -> go.Figure:
    """Gantt of attempts: a row per job (`label`), a bar per attempt coloured by how it ended, an x at each
    failure, a triangle at each restart (an attempt after the first) and a tick at each checkpoint.

    `attempts` has job_id, label, attempt, start_s, end_s, end_reason, lost_work_s; `row_order` lists labels
    top down; `checkpoints` (job_id, label, start_s) the checkpoints to mark; `waiting` (job_id, label,
    submit_s, start_s) a light bar from submission to first start; `window` (from, to) in run seconds sets
    the x range. Bars and marks carry the job id as customdata.
    """
    # job names and end reasons come from traces: Plotly text (labels, hover, the y axis) only as entities
    row_order = plot_all(row_order)
    attempts = attempts.with_columns(plot_expr("label"), plot_expr("end_reason"))
    checkpoints = checkpoints.with_columns(plot_expr("label")) if checkpoints is not None else None
    waiting = waiting.with_columns(plot_expr("label")) if waiting is not None else None
    frame = attempts.with_columns(
        end_kind(attempts["end_reason"]).alias("end_kind"),
        pl.format("attempt {}: {} ({} min lost)", pl.col("attempt"), pl.col("end_reason"),
                  (pl.col("lost_work_s") / 60).round(1)).alias("hover"),
    )
    fig = go.Figure()
    if waiting is not None:
        waits = waiting.filter(pl.col("start_s") > pl.col("submit_s")).select(
            "job_id", "label", pl.col("submit_s").alias("start_s"), pl.col("start_s").alias("end_s"),
            pl.lit("waiting").alias("kind"),
            pl.format("waited {} min", ((pl.col("start_s") - pl.col("submit_s")) / 60).round(1)).alias("hover"))
        fig.add_traces(bars_over_time(waits, started_at=started_at, row="label", colour_by="kind",
                                      colours={"waiting": WAITING_COLOUR}, hover="hover", key="job_id"))
    fig.add_traces(bars_over_time(frame, started_at=started_at, row="label", colour_by="end_kind",
                                  colours=END_COLOURS, hover="hover", key="job_id"))
    failed = frame.filter(pl.col("end_kind") == "failure")
    fig.add_trace(go.Scatter(
        x=as_time(started_at, failed["end_s"].to_numpy()), y=failed["label"].to_list(), mode="markers",
        marker={"symbol": "x", "size": 9, "color": "black"}, name="interrupted here", text=failed["end_reason"].to_list(),
        customdata=failed["job_id"].to_list(),
        hovertemplate="%{y}<br>%{x}<br>%{text}<extra>failure</extra>",
    ))
    restarts = frame.filter(pl.col("attempt") > 1)
    fig.add_trace(go.Scatter(
        x=as_time(started_at, restarts["start_s"].to_numpy()), y=restarts["label"].to_list(), mode="markers",
        marker={"symbol": "triangle-right", "size": 9, "color": "black"}, name="restart",
        text=restarts["attempt"].to_list(), customdata=restarts["job_id"].to_list(),
        hovertemplate="%{y}<br>%{x}<br>attempt %{text}<extra>restart</extra>",
    ))
    if checkpoints is not None and checkpoints.height:
        fig.add_trace(go.Scatter(
            x=as_time(started_at, checkpoints["start_s"].to_numpy()), y=checkpoints["label"].to_list(),
            mode="markers", marker={"symbol": "line-ns", "size": 11, "line": {"width": 1, "color": "rgba(0,0,0,0.55)"}},
            name="checkpoint", customdata=checkpoints["job_id"].to_list(),
            hovertemplate="%{y}<br>%{x}<extra>checkpoint</extra>",
        ))
    if window is not None:
        fig.update_xaxes(range=list(as_time(started_at, list(window))))
    fig.update_layout(
        barmode="overlay", height=max(260, 22 * len(row_order) + 140), margin={"l": 10, "r": 10, "t": 80, "b": 10},
        legend={"orientation": "h", "y": 1.0, "yanchor": "top", "yref": "container"},  # above the top axis
    )
    fig.update_xaxes(type="date", side="top")  # a Gantt of hundreds of rows: dates where the reading starts
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(row_order)), range=[-0.6, len(row_order) - 0.4])
    return fig


# ----- the queue, waits and why -----------------------------------------------------------------------------

REASON_COLOURS = {  # engine.wait_reasons.REASONS
    "no_capacity": "#1f77b4",
    "fragmentation": "#ff7f0e",
    "priority": "#9467bd",
    "failed_hosts": "#d62728",
}


def queue_over_time(queue: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Queued jobs (left axis) and the GPUs they ask for (right axis) per bucket: `queue` has t_s (bucket
    start), queued_jobs, queued_gpus; steps, since each value holds for its whole bucket."""
    x = as_time(started_at, queue["t_s"].to_numpy())
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=queue["queued_jobs"].to_list(), name="queued jobs", line_shape="hv",
                             line={"color": "#1f77b4"}), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=queue["queued_gpus"].to_list(), name="GPUs asked for", line_shape="hv",
                             line={"color": "#ff7f0e", "dash": "dot"}), secondary_y=True)
    fig.update_yaxes(title_text="jobs waiting (mean)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="GPUs asked for", rangemode="tozero", secondary_y=True)
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10}, hovermode="x unified",
                      legend={"orientation": "h", "y": 1.12})
    return fig


def wait_percentiles(waits_s: np.ndarray) -> tuple[float, float]:
    """p50 and p95 of the waits in seconds (linear interpolation, like DuckDB's quantile_cont)."""
    if len(waits_s) == 0:
        return float("nan"), float("nan")
    p50, p95 = np.percentile(np.asarray(waits_s, dtype=float), [50, 95])
    return float(p50), float(p95)


# Wait bins in minutes, at the steps an operator thinks in: "no wait" (under a minute), then 1, 5, 15, 30 min,
# 1, 2, 6, 12 h, 1, 2, 7, 30 days, the last bin open-ended: a queue of seconds and one of weeks on one axis.
WAIT_EDGES_MIN = np.array([0.0, 1, 5, 15, 30, 60, 120, 360, 720, 1440, 2880, 10080, 43200])


def wait_histogram(waits_s: np.ndarray) -> go.Figure:
    """Jobs per wait bin (WAIT_EDGES_MIN) with the count, p50 and p95 in the title."""
    minutes = np.asarray(waits_s, dtype=float) / 60.0
    edges = WAIT_EDGES_MIN
    index = np.clip(np.searchsorted(edges, minutes, side="right") - 1, 0, len(edges) - 1)
    counts = np.bincount(index, minlength=len(edges))
    labels = ["< 1 min"] + [f"{_minutes(a)}–{_minutes(b)}" for a, b in zip(edges[1:-1], edges[2:], strict=True)]
    labels.append(f"≥ {_minutes(edges[-1])}")
    p50, p95 = wait_percentiles(waits_s)
    fig = go.Figure(go.Bar(x=labels, y=counts.tolist(), marker_color="#1f77b4", name="jobs",
                           hovertemplate="%{x}: %{y} jobs<extra></extra>"))
    title = "no job started" if len(minutes) == 0 else (
        f"{len(minutes):,} jobs started · p50 {fmt_duration(p50)} · p95 {fmt_duration(p95)}")
    fig.update_layout(title={"text": title, "font": {"size": 13}}, height=300, bargap=0.05,
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, xaxis_title="wait", yaxis_title="jobs")
    return fig


def _minutes(m: float) -> str:
    """A bin edge in minutes, short: "5 min", "6 h", "7 d"."""
    if m < 60:
        return f"{m:g} min"
    if m < 1440:
        return f"{m / 60:g} h"
    return f"{m / 1440:g} d"


def wait_reasons(reasons: pl.DataFrame) -> go.Figure:
    """Share of waiting time by reason, largest on top: `reasons` has reason, waited_s, share, jobs."""
    ordered = reasons.sort("waited_s")
    fig = go.Figure(go.Bar(
        x=(ordered["share"] * 100).to_list(), y=plot_all(ordered["reason"].to_list()), orientation="h",
        marker_color=[REASON_COLOURS.get(r, "#bbbbbb") for r in ordered["reason"].to_list()],
        text=[f"{s:.0%}" for s in ordered["share"].to_list()], textposition="auto",
        customdata=np.column_stack([(ordered["waited_s"] / 3600).to_numpy(), ordered["jobs"].to_numpy()]),
        hovertemplate="%{y}: %{x:.1f}% of waiting time<br>%{customdata[0]:.1f} job-hours, "
                      "%{customdata[1]} jobs<extra></extra>",
    ))
    fig.update_layout(height=60 + 40 * max(ordered.height, 1), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis={"title": "share of waiting time (%)", "range": [0, 100]})
    return fig


# ----- utilisation and fragmentation ------------------------------------------------------------------------

def utilisation_and_fragmentation(util: pl.DataFrame, frag: pl.DataFrame, started_at: datetime) -> go.Figure:
    """Two panels sharing the time axis: busy and unavailable GPUs as % of all GPUs (`util`: t_s, busy_gpus,
    unavailable_gpus, total_gpus), and fragmentation, the % of free GPUs stranded on partly used hosts
    (`frag`: t_s, fragmentation)."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.6, 0.4],
                        subplot_titles=("GPUs busy and unavailable", "Fragmentation of free GPUs"))
    total = util["total_gpus"].cast(pl.Float64).replace(0.0, None)
    x = as_time(started_at, util["t_s"].to_numpy())
    fig.add_trace(go.Scatter(x=x, y=(util["busy_gpus"] / total * 100).to_list(), name="busy", line_shape="hv",
                             stackgroup="gpus", line={"color": "#1f77b4"}), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=(util["unavailable_gpus"] / total * 100).to_list(), name="unavailable",
                             line_shape="hv", stackgroup="gpus", line={"color": "#d62728"}), row=1, col=1)
    fig.add_trace(go.Scatter(x=as_time(started_at, frag["t_s"].to_numpy()),
                             y=(frag["fragmentation"] * 100).to_list(), name="fragmentation", mode="lines",
                             line={"color": "#ff7f0e"}, connectgaps=False), row=2, col=1)
    fig.update_yaxes(title_text="% of GPUs", range=[0, 100], row=1, col=1)
    fig.update_yaxes(title_text="% of free", range=[0, 100], row=2, col=1)
    fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 40, "b": 10}, hovermode="x unified",
                      legend={"orientation": "h", "y": 1.1})
    return fig
