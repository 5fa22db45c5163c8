"""Jobs: a time window over the run; a Gantt of the jobs' attempts (flagship first, the largest next), one bar
per attempt coloured by how it ended, with failure, restart and checkpoint marks where the window holds few
enough to tell apart; the queue, waits and why (counted over the table's jobs); GPUs allocated, out of
service and fragmented; a filterable table that downloads as CSV or Parquet; one job's attempts, hosts, waits
and, for the flagship job, its goodput ledger bucket by bucket.

Every metric takes its label and help from engine.analysis.definitions (tests/test_page_jobs_truth.py checks it).
URL: ?from=&to= (seconds since the run's start) the window; ?job= (job id) the drill-down; ?q=, ?states=,
?kinds= the filters; ?order= the Gantt's order.
"""

import polars as pl
import streamlit as st

from dashboard import exports, state, table_view
from dashboard.charts import jobs as charts
from dashboard.format import fmt_duration, fmt_gpu_hours, fmt_int, fmt_pct, fmt_time
from dashboard.queries import jobs as queries
from dashboard.queries import jobs_table as tables
from dashboard.queries.summary import losses_from_summary
from dashboard.text import md
from dashboard.text_exprs import duration_text, time_text
from dashboard.time_slider import time_axis, window_slider
from engine.analysis.definitions import definition
from engine.analysis.run_summary import RunSummary
from engine.report.palette import end_reason_label, readable, wait_reason_label
from engine.report.visible_text import visible
from engine.store import RunInfo

MAX_GANTT_ROWS = 500  # more rows than this stop being readable and slow the browser
BUCKETS = 200  # points per time series, whatever the window: the cost stays flat with the run's length
# The flagship job's goodput buckets (run summary job.losses_gpu_hours) and the definitions that name them.
LOSS_DEFINITIONS = {
    "lost_work": "lost_work",
    "restart": "restart_overhead",
    "checkpoint": "checkpoint_writes",
    "waiting_for_spares": "waiting_for_spares",
}


def metric(where, key: str, value: str, delta: str | None = None, note: str = "", **kwargs) -> None:
    """st.metric under the label and help of engine.analysis.definitions' `key` (`note`: what this view adds)."""
    d = definition(key)
    where.metric(d.label, value, delta, help=f"{d.help} {note}".strip(), **kwargs)


def column(key: str, kind=st.column_config.Column, **kwargs):
    """A table column named and explained by engine.analysis.definitions' `key`."""
    return kind(definition(key).label, help=definition(key).help, **kwargs)


def page(run_id: str) -> None:
    """The page, top to bottom: the window and filters, the Gantt of attempts, queue and waits, GPUs allocated
    and fragmented, the table of jobs, and one job opened."""
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    window = window_section(run)
    jobs, order, rows = filters_section(run, window)
    total = queries.jobs(run.run_id, run.duration_s)
    headline(total)
    clicked = gantt_section(run, jobs, window, order, rows)
    queue_section(run, jobs, window)
    utilisation_section(run, window)
    table_section(run, jobs)
    job_id = choose_job(run, jobs, total, clicked)
    if job_id is not None:
        one_job(run, total.filter(pl.col("job_id") == job_id).row(0, named=True))


# ----- time window ----------------------------------------------------------------------------------------
def window_section(run: RunInfo) -> tuple[float, float]:
    """The window (seconds since the run's start) every section counts in, kept in the URL as ?from=&to=."""
    step_s = 60.0 if run.duration_s <= 2 * 86400 else 3600.0
    t0, t1 = 0.0, max(run.duration_s, 1.0)
    if run.duration_s > 0:
        lo, hi = _url_seconds(run, "from", 0.0), _url_seconds(run, "to", run.duration_s)
        if hi <= lo:
            lo, hi = 0.0, run.duration_s
        t0, t1 = window_slider(
            time_axis(run.started_at, run.duration_s, step_s), f"jobs_window:{run.run_id}", (lo, hi)
        )
        if t1 <= t0:  # both handles on one spot: a window of one step
            t1 = min(t0 + step_s, run.duration_s)
            t0 = max(t1 - step_s, 0.0)
        whole = t0 <= 0 and t1 >= run.duration_s
        state.set_url("from", "" if whole else f"{t0:g}")
        state.set_url("to", "" if whole else f"{t1:g}")
    return t0, t1


def _url_seconds(run: RunInfo, name: str, default: float) -> float:
    try:
        return min(max(float(st.query_params.get(name, default)), 0.0), run.duration_s)
    except ValueError:
        return default


# ----- filters --------------------------------------------------------------------------------------------
def filters_section(run: RunInfo, window: tuple[float, float]) -> tuple[pl.DataFrame, str, int]:
    """The filters, kept in the URL; returns the jobs they keep, the Gantt's order and its number of rows."""
    present = queries.choices(run.run_id)
    all_states = [s for s in present["states"].to_list()[0] or [] if s is not None]
    all_kinds = [k for k in present["kinds"].to_list()[0] or [] if k is not None]
    cols = st.columns([2, 2, 2, 2, 1])
    text = cols[0].text_input(
        "Name or id contains", key=state.seed(f"jobs_q:{run.run_id}", st.query_params.get("q", ""))
    )
    states = cols[1].multiselect(
        "State",
        all_states,
        key=state.seed(f"jobs_states:{run.run_id}", state.url_list("states", all_states)),
        placeholder="every state",
        format_func=readable,
    )
    kinds = cols[2].multiselect(
        "Kind",
        all_kinds,
        key=state.seed(f"jobs_kinds:{run.run_id}", state.url_list("kinds", all_kinds)),
        placeholder="every kind",
        format_func=readable,
    )
    order = cols[3].selectbox(
        "Gantt order",
        list(queries.ORDERS),
        key=state.seed(
            f"jobs_order:{run.run_id}",
            st.query_params.get("order") if st.query_params.get("order") in queries.ORDERS else "GPU-time",
        ),
    )
    rows = cols[4].number_input("Gantt rows", 1, MAX_GANTT_ROWS, step=50, key=state.seed("jobs_rows", 100))
    state.set_url("q", text.strip())
    state.set_url("states", ",".join(states))
    state.set_url("kinds", ",".join(kinds))
    state.set_url("order", "" if order == "GPU-time" else order)
    jobs = queries.jobs(
        run.run_id, run.duration_s, queries.JobFilter(text.strip(), tuple(states), tuple(kinds), window)
    )
    return jobs, order, int(rows)


def headline(total: pl.DataFrame) -> None:
    flagship = total.filter(pl.col("kind") == "flagship")
    cols = st.columns(5)
    metric(cols[0], "jobs", fmt_int(total.height))
    metric(cols[1], "jobs_never_started", fmt_int(total.filter(pl.col("start_s").is_null()).height))
    metric(cols[2], "failed_attempts", fmt_int(total["failures"].sum()))
    if flagship.height:
        metric(cols[3], "flagship_attempts", fmt_int(flagship["attempts"][0]))
        metric(cols[4], "checkpoints_written", fmt_int(flagship["checkpoints"][0]))


# ----- Gantt ----------------------------------------------------------------------------------------------
def gantt_section(run: RunInfo, jobs: pl.DataFrame, window: tuple[float, float], order: str, rows: int):
    """The attempts of the jobs kept, a row a job; returns the Gantt's selection state (a click opens a job)."""
    t0, t1 = window
    st.subheader("Attempts over time")
    clicked = None
    started = jobs.filter(pl.col("attempts") > 0)
    started = queries.gantt_order(started, order)
    drawn = started.head(int(rows))
    if drawn.is_empty():
        st.info("No job matching the filters has run yet." if jobs.height else "No job matches the filters.")
    else:
        ids = drawn["job_id"].to_list()
        labels_of = drawn.select("job_id", "label")
        frame = queries.attempts(run.run_id, ids).join(labels_of, on="job_id")
        # checkpoints only of the rows whose window holds few enough to tell apart (charts.MARKS_IN_VIEW)
        counts = queries.checkpoint_counts(run.run_id, ids, t0, t1)
        crowded = counts.filter(pl.col("checkpoints") > charts.MARKS_IN_VIEW)
        sparse = counts.filter(pl.col("checkpoints") <= charts.MARKS_IN_VIEW)["job_id"].to_list()
        marks = queries.checkpoints(run.run_id, sparse, t0, t1).join(labels_of, on="job_id")
        then = {
            "GPU-time": "the most GPU-time",
            "started": "the earliest started",
            "waited": "the longest waits",
            "failures": "the most failed attempts",
        }[order]
        names = dict(zip(drawn["job_id"].to_list(), drawn["label"].to_list(), strict=True))
        hidden = f" Marks are drawn on rows with at most {charts.MARKS_IN_VIEW} of each in the window"
        hidden += (
            " (not on "
            + ", ".join(f"{md(names[j])}: {n:,} checkpoints" for j, n in crowded.iter_rows())
            + "): narrow the window to see them."
            if crowded.height
            else "."
        )
        st.caption(
            f"{drawn.height:,} of {started.height:,} jobs that ran in the window (flagship first, then "
            f"{then}). Each bar is one attempt, coloured by how it ended; light orange is the gap before the "
            "next attempt (restart, spares or requeue), grey the wait before a first start; x marks a "
            f"failure, ▸ a restart, | a checkpoint.{hidden} Times in UTC. Click a bar to open its job."
        )
        clicked = st.plotly_chart(
            charts.attempts_gantt(
                frame,
                run.started_at,
                drawn["label"].to_list(),
                marks,
                window,
                drawn.select("job_id", "label", "submit_s", "start_s"),
            ),
            width="stretch",
            on_select="rerun",
            selection_mode="points",
            key=f"jobs_gantt:{run.run_id}",
        )
    return clicked


# ----- queue and waits ------------------------------------------------------------------------------------
def queue_section(run: RunInfo, jobs: pl.DataFrame, window: tuple[float, float]) -> None:
    t0, t1 = window
    width = (t1 - t0) / BUCKETS
    st.subheader("Queue and waits")
    waits = queries.wait_times(run.run_id, t0, t1)["wait_s"].to_numpy()
    queue = queries.queue(run.run_id, t0, width, BUCKETS, run.duration_s)
    p50, p95 = charts.wait_percentiles(waits)
    cols = st.columns(4)
    metric(cols[0], "jobs_started_in_window", fmt_int(len(waits)))
    metric(cols[1], "wait_p50", fmt_duration(p50))
    metric(cols[2], "wait_p95", fmt_duration(p95))
    metric(cols[3], "jobs_queued_mean", f"{queue['queued_jobs'].mean():,.1f}" if queue.height else "–")
    st.plotly_chart(charts.queue_over_time(queue, run.started_at), width="stretch", key="jobs_queue")
    cols = st.columns(2)
    cols[0].markdown("**How long jobs waited before their first start**")
    cols[0].plotly_chart(charts.wait_histogram(waits), width="stretch", key="jobs_waits")
    cols[1].markdown("**Why they waited**")
    reasons = tables.why_waited(jobs)  # the table's rows, so the chart and the table count the same jobs
    metric(cols[1], "jobs_waited", fmt_int(reasons["jobs"].sum()), note="Of the jobs in the table below.")
    if reasons.is_empty():
        cols[1].info("No job in the table below waited.")
    else:
        cols[1].plotly_chart(charts.why_waited(reasons), width="stretch", key="jobs_reasons")
        cols[1].caption(
            f"Of the {fmt_int(jobs.height)} jobs in the table below (its window and filters), each under "
            "the reason it waited longest for: "
            + " · ".join(f"{r['label']}: {fmt_int(r['jobs'])}" for r in reasons.iter_rows(named=True))
            + "."
        )


# ----- utilisation and fragmentation -----------------------------------------------------------------------
def utilisation_section(run: RunInfo, window: tuple[float, float]) -> None:
    t0, t1 = window
    width = (t1 - t0) / BUCKETS
    st.subheader("GPUs allocated, out of service and fragmented")
    util = queries.utilisation(run.run_id, t0, width, BUCKETS)
    frag = queries.fragmentation(run.run_id, t0, width, BUCKETS)
    gpu_total = util["total_gpus"].max() if util.height else 0
    cols = st.columns(3)
    metric(
        cols[0], "gpus_allocated_mean", fmt_pct(util["busy_gpus"].mean() / gpu_total) if gpu_total else "–"
    )
    metric(
        cols[1],
        "gpus_out_of_service_mean",
        fmt_pct(util["unavailable_gpus"].mean() / gpu_total) if gpu_total else "–",
    )
    metric(cols[2], "fragmentation_mean", fmt_pct(frag["fragmentation"].mean()) if frag.height else "–")
    if gpu_total:
        st.plotly_chart(
            charts.utilisation_and_fragmentation(util, frag, run.started_at), width="stretch", key="jobs_util"
        )
        st.caption(
            f"{BUCKETS} buckets of {fmt_duration(width)} from {fmt_time(run.started_at, t0)} to "
            f"{fmt_time(run.started_at, t1)}; allocation and out of service are means over each bucket, "
            "fragmentation a snapshot at its middle."
        )
    else:
        st.info("This run has no GPUs to measure.")


# ----- table ----------------------------------------------------------------------------------------------
def table_section(run: RunInfo, jobs: pl.DataFrame) -> None:
    st.subheader(
        f"{definition('jobs_in_window').label} ({jobs.height:,})", help=definition("jobs_in_window").help
    )
    table_view.dataframe(
        tables.shown(jobs, run.started_at),
        hide_index=True,
        width="stretch",
        column_config={
            "job_id": "Job id",
            "name": "Name",
            "kind": "Kind",
            "state": "State",
            "user": "User",
            "gpus": column("job_gpus", st.column_config.NumberColumn, format="localized"),
            "priority": "Priority",
            "submitted": "Submitted (UTC)",
            "started": "Started (UTC)",
            "ended": "Ended (UTC)",
            "waited": column("job_wait"),
            "why_it_waited": column("job_wait_reason"),
            "attempts": column("job_attempts", st.column_config.NumberColumn),
            "failures": column("job_failed_attempts", st.column_config.NumberColumn),
            "checkpoints": column("job_checkpoints", st.column_config.NumberColumn, format="localized"),
            "lost_gpu_hours": column("job_lost_work", st.column_config.NumberColumn, format="localized"),
        },
    )
    cols = st.columns([1, 1, 4])
    stem = f"jobs-{run.run_id}"
    # the bytes are built when a button is clicked (a callable), not on every rerun; a download needs no rerun
    cols[0].download_button(
        "Download CSV",
        lambda: exports.to_csv(tables.export(jobs, run.started_at)),
        f"{stem}.csv",
        "text/csv",
        key="jobs_csv",
        on_click="ignore",
    )
    cols[1].download_button(
        "Download Parquet",
        lambda: exports.to_parquet(tables.export(jobs, run.started_at)),
        f"{stem}.parquet",
        "application/vnd.apache.parquet",
        key="jobs_parquet",
        on_click="ignore",
    )
    cols[2].caption(
        "The table as filtered, every row. Each time twice: an ISO date in UTC (`*_utc`) and seconds "
        "since the run's start (`*_s`); lost work in GPU-hours (`lost_work_gpu_hours`)."
    )


# ----- one job --------------------------------------------------------------------------------------------
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
    job_id = job["job_id"]
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
        cols = st.columns(len(LOSS_DEFINITIONS))
        for where, (bucket, key) in zip(cols, LOSS_DEFINITIONS.items(), strict=True):
            metric(where, key, fmt_gpu_hours(losses.get(bucket, 0.0)), note="Over the whole run.")
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
    hits = queries.incidents_of(run.run_id, job_id)
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


st.title("Jobs")
state.render_run_page(page, state.run_or_stop())
