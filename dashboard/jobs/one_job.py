"""One job (?job=): chosen in the table, the Gantt or a selectbox; its figures, attempts, waits and the incidents
that hit it."""

import polars as pl
import streamlit as st

from dashboard import state, table_view
from dashboard.charts import jobs as charts
from dashboard.format import fmt_duration, fmt_gpu_hours, fmt_int, fmt_time
from dashboard.incidents.fail_slow import culprit_line
from dashboard.jobs.common import column, metric
from dashboard.queries import jobs as queries
from dashboard.queries import jobs_table as tables
from dashboard.queries.summary import losses_from_summary
from dashboard.text import md
from dashboard.text_exprs import duration_text, time_text
from engine.analysis.definitions import definition
from engine.analysis.run_summary import RunSummary
from engine.report.palette import end_reason_label, readable, wait_reason_label
from engine.report.visible_text import visible
from engine.store import RunInfo

# The flagship job's goodput buckets (run summary job.losses_gpu_hours) and the definitions that name them.
LOSS_DEFINITIONS = {
    "lost_work": "lost_work",
    "restart": "restart_overhead",
    "checkpoint": "checkpoint_writes",
    "waiting_for_spares": "waiting_for_spares",
}
# Buckets shown only where the summary has them: slowdown is in the ledger of a run with fail-slow on (slow.*).
LATER_LOSS_DEFINITIONS = {"slowdown": "slowdown_fail_slow"}


def choose_job(run: RunInfo, jobs: pl.DataFrame, total: pl.DataFrame, clicked) -> str | None:
    """The job opened: clicked on the Gantt, else chosen, else the URL's (?job=)."""
    st.subheader("One job")
    ids = jobs["job_id"].to_list()
    job_key = f"jobs_job:{run.run_id}"
    click = charts.clicked_job(clicked.selection if clicked else None)
    if click is not None and click != st.session_state.get("jobs_last_click"):
        st.session_state[job_key] = click  # a new click on the Gantt opens that job
    st.session_state["jobs_last_click"] = click
    wanted = st.session_state.get(job_key, st.query_params.get("job"))
    if wanted and wanted not in ids:  # the chosen job stays choosable when the filters leave it out
        ids = [wanted, *ids] if wanted in total["job_id"].to_list() else ids
    if wanted not in ids:
        wanted = st.session_state[job_key] = None
    labels = dict(zip(total["job_id"].to_list(), total["label"].to_list(), strict=True))
    job_id = st.selectbox(
        "Job",
        ids,
        key=state.seed(job_key, wanted),
        format_func=lambda j: visible(labels.get(j, j)),
        placeholder="Choose a job to see its attempts",
    )
    if job_id is None:
        st.query_params.pop("job", None)
        return None
    st.query_params["job"] = job_id
    return job_id


def one_job(run: RunInfo, job: dict) -> None:
    """One job: its figures, attempts, waits and the incidents that hit it."""
    job_figures(run, job)
    attempts = job_attempts(run, job["job_id"])
    job_waits(run, job)
    job_incidents(run, job, attempts)


def job_figures(run: RunInfo, job: dict) -> None:
    """The job's size, wait, attempts and checkpoints or lost work (the flagship's ledger bucket by bucket), and
    a line on who ran it and when."""
    is_flagship = job["kind"] == "flagship"
    losses = losses_from_summary(RunSummary.from_json(run.summary)) if is_flagship else None
    cols = st.columns(4)
    metric(cols[0], "job_gpus", f"{job['gpus']:,g}")
    metric(cols[1], "job_wait", fmt_duration(job["wait_s"]) if job["wait_s"] is not None else "not started")
    metric(
        cols[2],
        "flagship_attempts" if is_flagship else "job_attempts",
        fmt_int(job["attempts"]),
        f"{job['failures']:,} failed" if job["failures"] else None,
        delta_color="inverse",
    )  # no red arrow for "0 failed"
    if is_flagship:
        metric(cols[3], "checkpoints_written", fmt_int(job["checkpoints"]))
    else:
        metric(cols[3], "job_lost_work", fmt_gpu_hours(job["lost_gpu_hours"]))
    if losses:  # the flagship job: its goodput ledger, bucket by bucket, as the Overview shows it
        shown = LOSS_DEFINITIONS | {b: k for b, k in LATER_LOSS_DEFINITIONS.items() if b in losses}
        cols = st.columns(len(shown))
        for where, (bucket, key) in zip(cols, shown.items(), strict=True):
            metric(where, key, fmt_gpu_hours(losses.get(bucket, 0.0)), note="Over the whole run.")
        if losses.get("slowdown"):  # which fail-slow episode cost it most
            culprit_line(run)
    elif is_flagship:
        st.metric(
            definition("job_lost_work").label,
            fmt_gpu_hours(job["lost_gpu_hours"]),
            help=definition("job_lost_work").help,
        )
    st.caption(
        f"{md(readable(job['kind'] or 'job'))} of {md(job['user'] or 'unknown user')}, priority {job['priority']}, "
        f"{md(readable(job['state'] or 'unknown'))}; submitted {fmt_time(run.started_at, job['submit_s'])}, "
        f"started {fmt_time(run.started_at, job['start_s'])}, ended {fmt_time(run.started_at, job['end_s'])}"
        + (
            "."
            if is_flagship
            else f"; {definition('job_checkpoints').label.lower()}: {fmt_int(job['checkpoints'])}."
        )
    )


def job_attempts(run: RunInfo, job_id: str) -> pl.DataFrame:
    """The job's attempts in a table and their end reasons counted; returns the attempts."""
    attempts = queries.attempts(run.run_id, [job_id])
    if attempts.is_empty():
        st.info("This job has no attempts: it never started.")
    else:
        hosts = queries.attempt_hosts(run.run_id, job_id)
        table_view.dataframe(
            tables.attempts_shown(attempts, hosts, run.started_at),
            hide_index=True,
            width="stretch",
            column_config={
                "attempt": "Attempt",
                "start": "Started (UTC)",
                "end": "Ended (UTC)",
                "ran": "Ran",
                "ended_by": "Ended by",
                "lost_work_min": st.column_config.NumberColumn(
                    "Lost work (minutes of training)", help=definition("job_lost_work").help
                ),
                "hosts": "Hosts",
                "on_hosts": st.column_config.ListColumn("Hosts (the first 8)"),
            },
        )
        reasons_ended = (
            attempts.group_by("end_reason")
            .len("attempts")
            .sort("attempts", "end_reason", descending=[True, False])
        )
        st.markdown(
            "**End reasons**: "
            + ", ".join(f"{md(end_reason_label(r))} ({n:,})" for r, n in reasons_ended.iter_rows())
        )
    return attempts


def job_waits(run: RunInfo, job: dict) -> None:
    """Why the job waited: its wait pieces by reason, or its one recorded reason."""
    job_id = job["job_id"]
    own_waits = queries.waits_of(run.run_id, job_id)
    if own_waits.is_empty():
        st.caption(
            f"{definition('job_wait_reason').label}: {md(wait_reason_label(job['wait_reason']))} (no pieces "
            "recorded)."
            if job["wait_reason"]
            else "No wait reasons recorded for this job."
            if job["wait_s"]
            else "It did not wait."
        )
    else:
        by_reason = (
            own_waits.group_by("reason").agg(pl.col("waited_s").sum()).sort("waited_s", descending=True)
        )
        st.markdown(
            "**Why it waited**: "
            + ", ".join(f"{md(wait_reason_label(r))} ({fmt_duration(s)})" for r, s in by_reason.iter_rows())
        )
        table_view.dataframe(
            own_waits.with_columns(
                _when(run, "start_s").alias("from"),
                _when(run, "end_s").alias("to"),
                duration_text("waited_s").alias("waited"),
                tables.wait_reason_text("reason").alias("reason"),
            ).select("from", "to", "waited", "reason"),
            hide_index=True,
            width="stretch",
            column_config={"from": "From (UTC)", "to": "To (UTC)", "waited": "Waited", "reason": "Reason"},
        )


def job_incidents(run: RunInfo, job: dict, attempts: pl.DataFrame) -> None:
    """The incidents that hit the job (for the flagship: its interruptions, and why they outnumber its failed
    attempts)."""
    is_flagship = job["kind"] == "flagship"
    hits = queries.incidents_of(run.run_id, job["job_id"])
    if not hits.is_empty():
        if (
            is_flagship
        ):  # DESIGN: what hits the flagship job is an interruption, and why they outnumber failed attempts
            planned_ends = attempts.filter(pl.col("end_reason") == "planned_maintenance").height
            st.markdown(
                f"**{definition('interruptions').label}** ({hits.height:,})",
                help=definition("interruptions").help,
            )
            others = hits.height - job["failures"] - planned_ends
            if others >= 0:
                st.caption(
                    f"{hits.height:,} interruptions: {job['failures']:,} ended an attempt by a failure and "
                    f"{planned_ends:,} by planned maintenance"
                    + (
                        f"; the other {others:,} hit the job while it was already restarting, which ends no "
                        "attempt."
                        if others
                        else "."
                    )
                )
        else:
            st.markdown(f"**Incidents that hit it** ({hits.height:,})")
        table_view.dataframe(
            tables.incidents_shown(hits, run.started_at),
            hide_index=True,
            width="stretch",
            column_config={
                "incident_id": "Incident",
                "at": "At (UTC)",
                "cause": "Cause",
                "category": "Category",
                "planned": "Planned",
                "hostname": "Host",
                "gpu_id": "GPU id",
                "gpu_hours_lost": column("incident_cost", st.column_config.NumberColumn, format="localized"),
            },
        )


def _when(run: RunInfo, column: str) -> pl.Expr:
    return time_text(column, run.started_at)
