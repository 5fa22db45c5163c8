"""The Jobs page's tables as people read them and as the downloads carry them, and "why they waited".

All three start from one frame, `dashboard.queries.jobs.jobs` under the page's window and filters, so the
chart of why jobs waited counts exactly the table's rows (engine.analysis.definitions "jobs_waited") and the CSV holds
what the table shows. Pure Polars expressions: no Python callback in a plan (tests/test_no_python_in_polars).
"""

from datetime import datetime

import polars as pl

from dashboard.format import FARTHEST_TIME_S
from dashboard.text_exprs import cause_label_text, duration_text, time_text
from engine.report.palette import END_REASON_LABELS, NO_WAIT_REASON, WAIT_REASON_COLOURS, WAIT_REASON_LABELS


def words(column: str | pl.Expr) -> pl.Expr:
    """engine.report.palette.readable as an expression: "end_of_run" -> "End of run"."""
    x = (pl.col(column) if isinstance(column, str) else column).cast(pl.String)
    spaced = x.str.replace_all("_", " ", literal=True)
    return spaced.str.head(1).str.to_uppercase() + spaced.str.slice(1).str.to_lowercase()


def end_reason_text(column: str = "end_reason") -> pl.Expr:
    """engine.report.palette.end_reason_label: "Completed", "Still running at the end of the run", "Faulty GPU"."""
    return pl.col(column).replace_strict(
        END_REASON_LABELS, default=cause_label_text(column), return_dtype=pl.String
    )


def wait_reason_text(column: str = "wait_reason") -> pl.Expr:
    """engine.report.palette.wait_reason_label: "No free capacity", ...; null stays null (the job did not wait)."""
    return pl.col(column).replace_strict(WAIT_REASON_LABELS, default=words(column), return_dtype=pl.String)


def waited() -> pl.Expr:
    """Whether a job of `jobs` waited (engine.analysis.definitions "jobs_waited"): it started after its submission,
    never started, or has a recorded wait reason (a requeue after a prompt first start)."""
    return (
        pl.col("wait_reason").is_not_null()
        | pl.col("start_s").is_null()
        | (pl.col("start_s") > pl.col("submit_s")).fill_null(False)
    )


def why_waited(jobs: pl.DataFrame) -> pl.DataFrame:
    """The jobs of `jobs` that waited, by the reason each waited longest for, the most jobs first: reason
    (key), label (words), colour, jobs, waited_s (their waits before first start summed; jobs never started
    add none) and never_started (how many of them never started)."""
    if jobs.is_empty():
        return pl.DataFrame(
            schema={
                "reason": pl.String,
                "label": pl.String,
                "colour": pl.String,
                "jobs": pl.UInt32,
                "waited_s": pl.Float64,
                "never_started": pl.UInt32,
            }
        )
    return (
        jobs.filter(waited())
        .with_columns(pl.col("wait_reason").fill_null(NO_WAIT_REASON).alias("reason"))
        .group_by("reason")
        .agg(
            pl.len().alias("jobs"),
            pl.col("wait_s").fill_null(0.0).sum().alias("waited_s"),
            pl.col("start_s").is_null().sum().alias("never_started"),
        )
        .with_columns(
            wait_reason_text("reason").alias("label"),
            pl.col("reason")
            .replace_strict(
                WAIT_REASON_COLOURS, default=WAIT_REASON_COLOURS[NO_WAIT_REASON], return_dtype=pl.String
            )
            .alias("colour"),
        )
        .sort("jobs", "reason", descending=[True, False])
        .select("reason", "label", "colour", "jobs", "waited_s", "never_started")
    )


# The table's columns as the page shows them, in order; the page labels them from engine.analysis.definitions.
SHOWN = (
    "job_id",
    "name",
    "kind",
    "state",
    "user",
    "gpus",
    "priority",
    "submitted",
    "started",
    "ended",
    "waited",
    "why_it_waited",
    "attempts",
    "failures",
    "checkpoints",
    "lost_gpu_hours",
)


def shown(jobs: pl.DataFrame, started_at: datetime) -> pl.DataFrame:
    """The table on the page: dates in UTC, the wait as a duration, states, kinds and reasons in words, lost
    work rounded to a tenth of a GPU-hour."""
    return jobs.with_columns(
        words("kind").alias("kind"),
        words("state").alias("state"),
        time_text("submit_s", started_at).alias("submitted"),
        time_text("start_s", started_at).alias("started"),
        time_text("end_s", started_at).alias("ended"),
        pl.when(pl.col("start_s").is_null())
        .then(pl.lit("not started"))
        .otherwise(duration_text("wait_s"))
        .alias("waited"),
        wait_reason_text().alias("why_it_waited"),
        pl.col("lost_gpu_hours").round(1),
    ).select(SHOWN)


def _iso(column: str, started_at: datetime) -> pl.Expr:
    """Seconds since the run's start as an ISO 8601 UTC date to the second, "2024-03-01T00:05:50Z"."""
    x = pl.col(column).cast(pl.Float64)
    kept = x.is_finite() & (x.abs() <= FARTHEST_TIME_S)  # as fmt_time: no overflow, no five-digit year
    at = pl.lit(started_at) + pl.duration(milliseconds=(x * 1000).round(0).cast(pl.Int64))
    return pl.when(kept).then(at.dt.strftime("%Y-%m-%dT%H:%M:%SZ")).otherwise(None)


def export(jobs: pl.DataFrame, started_at: datetime) -> pl.DataFrame:
    """The table as the CSV and Parquet downloads carry it: each time as an ISO UTC date (`*_utc`) and as
    seconds since the run's start (`*_s`, to a tenth of a second), the wait reason as its key (what
    `goodput replay --json` counts) and in words, lost work in GPU-hours to a tenth. No list column: a list
    would need a separator the column's name would have to state."""
    return jobs.select(
        "job_id",
        "name",
        "kind",
        "state",
        "user",
        "gpus",
        "priority",
        _iso("submit_s", started_at).alias("submitted_utc"),
        pl.col("submit_s").round(1),
        _iso("start_s", started_at).alias("started_utc"),
        pl.col("start_s").round(1),
        _iso("end_s", started_at).alias("ended_utc"),
        pl.col("end_s").round(1),
        pl.col("wait_s").round(1).alias("wait_before_start_s"),
        "wait_reason",
        wait_reason_text().alias("why_it_waited"),
        "attempts",
        pl.col("failures").alias("failed_attempts"),
        "checkpoints",
        pl.col("lost_gpu_hours").round(1).alias("lost_work_gpu_hours"),
    )


def attempts_shown(
    attempts: pl.DataFrame, hosts: pl.DataFrame, started_at: datetime, first_hosts: int = 8
) -> pl.DataFrame:
    """One job's attempts (dashboard.queries.jobs.attempts) with their hosts (attempt_hosts): dates, how long
    each ran, how it ended in words, the work it lost in minutes, and the first `first_hosts` hostnames as a
    list (a flagship attempt holds 2,048 hosts; `hosts` counts them all)."""
    return (
        attempts.join(hosts, on="attempt", how="left")
        .with_columns(
            time_text("start_s", started_at).alias("start"),
            time_text("end_s", started_at).alias("end"),
            duration_text(pl.col("end_s") - pl.col("start_s")).alias("ran"),
            end_reason_text().alias("ended_by"),
            (pl.col("lost_work_s") / 60).round(1).alias("lost_work_min"),
            pl.col("hostnames").list.head(first_hosts).alias("on_hosts"),
        )
        .select("attempt", "start", "end", "ran", "ended_by", "lost_work_min", "hosts", "on_hosts")
    )


def incidents_shown(incidents: pl.DataFrame, started_at: datetime) -> pl.DataFrame:
    """The incidents that hit one job (dashboard.queries.jobs.incidents_of): date, cause in words, host."""
    return incidents.with_columns(
        time_text("t_s", started_at).alias("at"),
        cause_label_text("cause").alias("cause"),
        pl.col("gpu_hours_lost").round(1),
    ).select("incident_id", "at", "cause", "category", "planned", "hostname", "gpu_id", "gpu_hours_lost")
