"""Jobs: a time window over the run and its filters; a Gantt of the jobs' attempts (flagship first, the largest
next), one bar per attempt coloured by how it ended, with failure, restart and checkpoint marks where the window
holds few enough to tell apart; under it one row of tabs: the filterable table of jobs that downloads as CSV or
Parquet, the queue, waits and why (counted over the table's jobs), GPUs allocated, out of service and fragmented,
and, for a run with an op-level timeline (goodput ingest step-times), its stragglers (the what-if slowdown, its
kind and culprit, the heat map of workers); then one job's attempts, hosts, waits and, for the flagship job, its
goodput ledger bucket by bucket (with its fail-slow slowdown and the episode that cost most of it where the run
simulated fail-slow hosts).

Only the open tab is drawn (dashboard/lazy.py): every Plotly chart and table costs the browser its time whether
it is seen or not, so the first look is the window, the figures, the Gantt and the table. Under a Gantt of more
than GANTT_ROWS_IN_VIEW rows the tabs and one job are drawn once scrolled to (at once where a click, ?tab= or
?job= asks for them: dashboard/lazy.below_fold).

Every metric takes its label and help from engine.analysis.definitions (tests/test_page_jobs_truth.py checks it).
URL: ?from=&to= (seconds since the run's start) the window; ?job= (job id) the drill-down; ?q=, ?states=,
?kinds= the filters; ?order= the Gantt's order; ?tab= the open tab (its label).
"""

import polars as pl
import streamlit as st

from dashboard import chart_view, exports, fault_history, lazy, state, table_view
from dashboard.charts import jobs as charts
from dashboard.charts import queue as queue_charts
from dashboard.format import fmt_duration, fmt_int, fmt_pct, fmt_time
from dashboard.jobs.common import column, metric
from dashboard.jobs.one_job import choose_job, one_job
from dashboard.jobs.stragglers import has_timeline, stragglers_section
from dashboard.queries import jobs as queries
from dashboard.queries import jobs_table as tables
from dashboard.text import md
from dashboard.time_slider import time_axis, window_slider
from engine.analysis.definitions import definition
from engine.report.palette import readable
from engine.store import RunInfo

MAX_GANTT_ROWS = 500  # more rows than this stop being readable and slow the browser
# A Gantt of up to this many rows (22 px each, dashboard/charts/jobs.py) leaves what is under it on a 1000 px
# screen: drawn at once; a taller one puts it below the fold, drawn once scrolled to
GANTT_ROWS_IN_VIEW = 16
BUCKETS = 200  # points per time series, whatever the window: the cost stays flat with the run's length
# The tabs under the Gantt, in order (the first is open by default; ?tab=LABEL opens another)
TABLE_TAB = "Jobs in the window"
QUEUE_TAB = "Queue and waits"
GPUS_TAB = "GPU allocation"
STRAGGLERS_TAB = "Stragglers"  # only for a run with an op-level timeline


def page(run_id: str) -> None:
    """The page, top to bottom: the window and filters, the figures, the Gantt of attempts, a row of tabs (the
    table of jobs, queue and waits, GPU allocation, the stragglers of a run with an op-level timeline), and one
    job opened. A run that is one job's op-level timeline alone (no jobs) shows its stragglers only."""
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    total = queries.jobs(run.run_id, run.duration_s)
    if total.is_empty() and has_timeline(run):  # one job's op-level timeline alone: no schedule to show
        st.caption(
            "This run is one training job's op-level timeline (`goodput ingest step-times`): it has no "
            "scheduler's jobs, attempts or queue, only the job's steps."
        )
        stragglers_section(run)
        return
    if total.is_empty() and fault_history.is_fault_history(run):  # outages of nodes only: no schedule at all
        st.info(fault_history.lacks(run, "jobs") + " Its outages are on the Incidents page.")
        st.page_link(
            "app_pages/incidents.py",
            label="Incidents",
            icon=":material/report:",
            query_params={state.RUN_PARAM: run.run_id},
        )
        return
    window = window_section(run)
    jobs, order, rows = filters_section(run, window)
    headline(total)
    clicked, gantt_rows = gantt_section(run, jobs, window, order, rows)
    click = charts.clicked_job(clicked.selection if clicked else None)
    # under a Gantt taller than the screen's remainder the tabs and the one job are drawn once scrolled to (their
    # table and charts cost a visit about 0.8 s, dashboard/lazy.py), at once where a link or a click asks for them
    lazy.below_fold(
        f"jobs_below:{run.run_id}",
        "The tabs below (the table of jobs, queue, GPU allocation) and one job",
        lambda: below_gantt(run, jobs, total, window, clicked),
        opened=gantt_rows <= GANTT_ROWS_IN_VIEW or click is not None,
        url_keys=("tab", "job"),
    )


def below_gantt(run: RunInfo, jobs: pl.DataFrame, total: pl.DataFrame, window: tuple[float, float], clicked):
    """The row of tabs (the table of jobs, queue and waits, GPU allocation, stragglers) and one job."""
    sections = {
        TABLE_TAB: lambda: table_section(run, jobs),
        QUEUE_TAB: lambda: queue_section(run, jobs, window),
        GPUS_TAB: lambda: utilisation_section(run, window),
    }
    if has_timeline(run):
        sections[STRAGGLERS_TAB] = lambda: stragglers_section(run)
    # only the open tab is drawn (dashboard/lazy.py): the queue's three charts and the GPUs' chart cost the
    # browser a second whether or not anyone scrolls to them
    lazy.tabs(sections)
    job_id = choose_job(run, jobs, total, clicked)  # below the tabs, whichever is open: a click shows its job
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
    """The attempts of the jobs kept, a row a job; returns the Gantt's selection state (a click opens a job)
    and its number of rows."""
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
        clicked = chart_view.plotly(
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
    return clicked, drawn.height


# ----- queue and waits ------------------------------------------------------------------------------------
def queue_section(run: RunInfo, jobs: pl.DataFrame, window: tuple[float, float]) -> None:
    t0, t1 = window
    width = (t1 - t0) / BUCKETS
    waits = queries.wait_times(run.run_id, t0, t1)["wait_s"].to_numpy()
    queue = queries.queue(run.run_id, t0, width, BUCKETS, run.duration_s)
    p50, p95 = queue_charts.wait_percentiles(waits)
    cols = st.columns(4)
    metric(cols[0], "jobs_started_in_window", fmt_int(len(waits)))
    metric(cols[1], "wait_p50", fmt_duration(p50))
    metric(cols[2], "wait_p95", fmt_duration(p95))
    metric(cols[3], "jobs_queued_mean", f"{queue['queued_jobs'].mean():,.1f}" if queue.height else "–")
    chart_view.plotly(queue_charts.queue_over_time(queue, run.started_at), width="stretch", key="jobs_queue")
    cols = st.columns(2)
    cols[0].markdown("**How long jobs waited before their first start**")
    chart_view.plotly(queue_charts.wait_histogram(waits), where=cols[0], width="stretch", key="jobs_waits")
    cols[1].markdown("**Why they waited**")
    reasons = tables.why_waited(jobs)  # the table's rows, so the chart and the table count the same jobs
    metric(
        cols[1],
        "jobs_waited",
        fmt_int(reasons["jobs"].sum()),
        note=f"Of the jobs in the table ({TABLE_TAB}).",
    )
    if reasons.is_empty():
        cols[1].info(f"No job in the table ({TABLE_TAB}) waited.")
    else:
        chart_view.plotly(
            queue_charts.why_waited(reasons), where=cols[1], width="stretch", key="jobs_reasons"
        )
        cols[1].caption(
            f"Of the {fmt_int(jobs.height)} jobs in the table ({TABLE_TAB}: the window and filters above), "
            "each under "
            "the reason it waited longest for: "
            + " · ".join(f"{r['label']}: {fmt_int(r['jobs'])}" for r in reasons.iter_rows(named=True))
            + "."
        )


# ----- utilisation and fragmentation -----------------------------------------------------------------------
def utilisation_section(run: RunInfo, window: tuple[float, float]) -> None:
    t0, t1 = window
    width = (t1 - t0) / BUCKETS
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
        chart_view.plotly(
            queue_charts.utilisation_and_fragmentation(util, frag, run.started_at),
            width="stretch",
            key="jobs_util",
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


st.title("Jobs")
state.render_run_page(page, state.run_or_stop())
