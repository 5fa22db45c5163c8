"""Jobs charts: a Gantt of job attempts with failure marks. Frames in, Plotly figures out.

Also home to the time helpers the other page charts share: run times are seconds since the run's start and
pages show dates, so every chart turns `*_s` columns into UTC datetimes the same way.
"""

from datetime import UTC, datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl

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


def attempts_gantt(attempts: pl.DataFrame, started_at: datetime, row_order: list[str]) -> go.Figure:
    """Gantt of attempts: a row per job (`label`), a bar per attempt coloured by how it ended, an x at each failure.

    `attempts` has job_id, label, attempt, start_s, end_s, end_reason, lost_work_s; `row_order` lists labels
    top down. Bars and marks carry the job id as customdata.
    """
    frame = attempts.with_columns(
        end_kind(attempts["end_reason"]).alias("end_kind"),
        pl.format("attempt {}: {} ({} min lost)", pl.col("attempt"), pl.col("end_reason"),
                  (pl.col("lost_work_s") / 60).round(1)).alias("hover"),
    )
    fig = go.Figure(bars_over_time(frame, started_at=started_at, row="label", colour_by="end_kind",
                                   colours=END_COLOURS, hover="hover", key="job_id"))
    failed = frame.filter(pl.col("end_kind") == "failure")
    fig.add_trace(go.Scatter(
        x=as_time(started_at, failed["end_s"].to_numpy()), y=failed["label"].to_list(), mode="markers",
        marker={"symbol": "x", "size": 9, "color": "black"}, name="interrupted here", text=failed["end_reason"].to_list(),
        customdata=failed["job_id"].to_list(),
        hovertemplate="%{y}<br>%{x}<br>%{text}<extra>failure</extra>",
    ))
    fig.update_layout(
        barmode="overlay", height=max(260, 22 * len(row_order) + 140), margin={"l": 10, "r": 10, "t": 80, "b": 10},
        legend={"orientation": "h", "y": 1.0, "yanchor": "top", "yref": "container"},  # above the top axis
    )
    fig.update_xaxes(type="date", side="top")  # a Gantt of hundreds of rows: dates where the reading starts
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(row_order)), range=[-0.6, len(row_order) - 0.4])
    return fig
