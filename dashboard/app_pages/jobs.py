"""Jobs: a time window over the run; a Gantt of the jobs' attempts (flagship first, the largest next) with
failures, restarts and checkpoints; the queue, waits and why; utilisation and fragmentation; a filterable
table that downloads as CSV or Parquet; one job's attempts, hosts and waits.

URL: ?from=&to= (seconds since the run's start) the window; ?job= (job id) the drill-down; ?q=, ?states=,
?kinds= the filters; ?order= the Gantt's order.
"""

from datetime import UTC, timedelta

import polars as pl
import streamlit as st

from dashboard import exports, state
from dashboard.charts import jobs as charts
from dashboard.charts.common import fmt_duration, fmt_gpu_hours, fmt_int, fmt_pct, fmt_time
from dashboard.charts.text_exprs import duration_text, time_text
from dashboard.queries import jobs as queries
from dashboard.text import md

MAX_GANTT_ROWS = 500  # more rows than this stop being readable and slow the browser
MAX_CHECKPOINT_MARKS = 3000  # past this the ticks merge into a bar anyway; every k-th is drawn
BUCKETS = 200  # points per time series, whatever the window: the cost stays flat with the run's length

st.title("Jobs")
run = state.run_or_stop()


# ----- time window ----------------------------------------------------------------------------------------
def _url_seconds(name: str, default: float) -> float:
    try:
        return min(max(float(st.query_params.get(name, default)), 0.0), run.duration_s)
    except ValueError:
        return default


origin = run.started_at.astimezone(UTC).replace(tzinfo=None)  # the slider works in naive UTC
step = timedelta(minutes=1) if run.duration_s <= 2 * 86400 else timedelta(hours=1)
end = origin + timedelta(seconds=run.duration_s)
t0, t1 = 0.0, max(run.duration_s, 1.0)
if run.duration_s > 0:
    lo, hi = _url_seconds("from", 0.0), _url_seconds("to", run.duration_s)
    if hi <= lo:
        lo, hi = 0.0, run.duration_s
    picked = st.slider("Window (UTC)", origin, end, step=step, format="YYYY-MM-DD HH:mm",
                       key=state.seed(f"jobs_window:{run.run_id}",
                                      (origin + timedelta(seconds=lo), origin + timedelta(seconds=hi))))
    t0, t1 = ((p - origin).total_seconds() for p in picked)
    if t1 <= t0:  # both handles on one spot: a window of one step
        t1 = min(t0 + step.total_seconds(), run.duration_s)
        t0 = t1 - step.total_seconds()
    whole = t0 <= 0 and t1 >= run.duration_s
    state.set_url("from", "" if whole else f"{t0:g}")
    state.set_url("to", "" if whole else f"{t1:g}")
window = (t0, t1)

# ----- filters --------------------------------------------------------------------------------------------
present = queries.choices(run.run_id)
all_states = [s for s in present["states"].to_list()[0] or [] if s is not None]
all_kinds = [k for k in present["kinds"].to_list()[0] or [] if k is not None]
cols = st.columns([2, 2, 2, 2, 1])
text = cols[0].text_input("Name or id contains", key=state.seed(f"jobs_q:{run.run_id}", st.query_params.get("q", "")))
states = cols[1].multiselect("State", all_states, key=state.seed(f"jobs_states:{run.run_id}", state.url_list("states", all_states)),
                             placeholder="every state")
kinds = cols[2].multiselect("Kind", all_kinds, key=state.seed(f"jobs_kinds:{run.run_id}", state.url_list("kinds", all_kinds)),
                            placeholder="every kind")
order = cols[3].selectbox("Gantt order", list(queries.ORDERS), key=state.seed(
    f"jobs_order:{run.run_id}", st.query_params.get("order") if st.query_params.get("order") in queries.ORDERS else "GPU-time"))
rows = cols[4].number_input("Gantt rows", 1, MAX_GANTT_ROWS, step=50, key=state.seed("jobs_rows", 100))
state.set_url("q", text.strip())
state.set_url("states", ",".join(states))
state.set_url("kinds", ",".join(kinds))
state.set_url("order", "" if order == "GPU-time" else order)
jobs = queries.jobs(run.run_id, run.duration_s, queries.JobFilter(text.strip(), tuple(states), tuple(kinds), window))

total = queries.jobs(run.run_id, run.duration_s)
flagship = total.filter(pl.col("kind") == "flagship")
cols = st.columns(4)
cols[0].metric("Jobs", fmt_int(total.height), help="in this run, whatever the filters and the window")
cols[1].metric("Waiting or pending", fmt_int(total.filter(pl.col("start_s").is_null()).height))
cols[2].metric("Failed attempts", fmt_int(total["failures"].sum()), help="attempts ended by a failure cause")
cols[3].metric("Flagship checkpoints", fmt_int(flagship["checkpoints"].sum()) if flagship.height else "–")

# ----- Gantt ----------------------------------------------------------------------------------------------
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
    marks = queries.checkpoints(run.run_id, ids, t0, t1).join(labels_of, on="job_id")
    thinned = marks.height > MAX_CHECKPOINT_MARKS
    if thinned:
        marks = marks.gather_every(-(-marks.height // MAX_CHECKPOINT_MARKS))
    then = {"GPU-time": "the most GPU-time", "started": "the earliest started", "waited": "the longest waits",
            "failures": "the most failed attempts"}[order]
    st.caption(f"{drawn.height:,} of {started.height:,} jobs that ran in the window (flagship first, then "
               f"{then}); grey is the wait before a first start, bars are attempts coloured by how they ended, x marks a failure, "
               "▸ a restart, "
               f"| a checkpoint{' (every few drawn)' if thinned else ''}. Click a bar to open its job.")
    clicked = st.plotly_chart(charts.attempts_gantt(frame, run.started_at, drawn["label"].to_list(), marks, window,
                                                    drawn.select("job_id", "label", "submit_s", "start_s")),
                              width="stretch", on_select="rerun", selection_mode="points", key=f"jobs_gantt:{run.run_id}")

# ----- queue and waits ------------------------------------------------------------------------------------
width = (t1 - t0) / BUCKETS
st.subheader("Queue and waits")
waits = queries.wait_times(run.run_id, t0, t1)["wait_s"].to_numpy()
queue = queries.queue(run.run_id, t0, width, BUCKETS, run.duration_s)
p50, p95 = charts.wait_percentiles(waits)
cols = st.columns(4)
cols[0].metric("Jobs started", fmt_int(len(waits)), help="in the window")
cols[1].metric("Wait p50", fmt_duration(p50), help="submission to start, jobs started in the window")
cols[2].metric("Wait p95", fmt_duration(p95))
cols[3].metric("Queue (mean)", f"{queue['queued_jobs'].mean():,.1f} jobs" if queue.height else "–",
               help="jobs submitted and not yet started, or requeued, averaged over the window")
st.plotly_chart(charts.queue_over_time(queue, run.started_at), width="stretch", key="jobs_queue")
cols = st.columns(2)
cols[0].markdown("**How long jobs waited**")
cols[0].plotly_chart(charts.wait_histogram(waits), width="stretch", key="jobs_waits")
cols[1].markdown("**Why they waited**")
reasons = queries.wait_reasons(run.run_id, t0, t1)
if reasons.is_empty():
    cols[1].info("No wait reasons recorded in this window: the scheduler records them for replayed runs; a "
                 "simulated run's research jobs only carry their submit and start times.")
else:
    cols[1].plotly_chart(charts.wait_reasons(reasons), width="stretch", key="jobs_reasons")
    cols[1].caption(" · ".join(f"{md(r)}: {fmt_pct(s)} ({fmt_duration(w)} job-time)" for r, w, s, _ in reasons.iter_rows()))

# ----- utilisation and fragmentation -----------------------------------------------------------------------
st.subheader("Utilisation and fragmentation")
util = queries.utilisation(run.run_id, t0, width, BUCKETS)
frag = queries.fragmentation(run.run_id, t0, width, BUCKETS)
gpu_total = util["total_gpus"].max() if util.height else 0
cols = st.columns(3)
cols[0].metric("Utilisation (mean)", fmt_pct(util["busy_gpus"].mean() / gpu_total) if gpu_total else "–",
               help="GPUs held by running attempts over all GPUs, averaged over the window")
cols[1].metric("Unavailable (mean)", fmt_pct(util["unavailable_gpus"].mean() / gpu_total) if gpu_total else "–",
               help="GPUs of hosts draining, down, in diagnosis, repair or burn-in")
cols[2].metric("Fragmentation (mean)", fmt_pct(frag["fragmentation"].mean()) if frag.height else "–",
               help="free GPUs on partly used hosts over all free GPUs: a gang of whole hosts cannot use them")
if gpu_total:
    st.plotly_chart(charts.utilisation_and_fragmentation(util, frag, run.started_at), width="stretch", key="jobs_util")
    st.caption(f"{BUCKETS} buckets of {fmt_duration(width)}; utilisation is a mean over each bucket, "
               "fragmentation a snapshot at its middle.")
else:
    st.info("This run has no GPUs to measure.")

# ----- table ----------------------------------------------------------------------------------------------
st.subheader(f"Jobs ({jobs.height:,})")
table = jobs.drop("label").with_columns((pl.col("wait_s") / 3600).round(2).alias("wait_h")).drop("wait_s")
st.dataframe(table, hide_index=True, width="stretch",
             column_config={"lost_gpu_hours": st.column_config.NumberColumn("lost GPU-h", format="%.1f")})
cols = st.columns([1, 1, 4])
stem = f"jobs-{run.run_id}"
# the bytes are built when a button is clicked (a callable), not on every rerun; a download needs no rerun
cols[0].download_button("Download CSV", lambda: exports.to_csv(table), f"{stem}.csv", "text/csv", key="jobs_csv",
                        on_click="ignore")
cols[1].download_button("Download Parquet", lambda: exports.to_parquet(table), f"{stem}.parquet",
                        "application/vnd.apache.parquet", key="jobs_parquet", on_click="ignore")
cols[2].caption("The table as filtered, every row.")

# ----- one job --------------------------------------------------------------------------------------------
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
job_id = st.selectbox("Job", ids, key=state.seed(job_key, wanted), format_func=lambda j: labels.get(j, j),
                      placeholder="Choose a job to see its attempts")
if job_id is None:
    st.query_params.pop("job", None)
    st.stop()
st.query_params["job"] = job_id
job = total.filter(pl.col("job_id") == job_id).row(0, named=True)
cols = st.columns(5)
cols[0].metric("GPUs", f"{job['gpus']:,g}")
cols[1].metric("State", md(job["state"] or "–"))
cols[2].metric("Waited", fmt_duration(job["wait_s"]) if job["wait_s"] is not None else "not started")
cols[3].metric("Attempts", fmt_int(job["attempts"]), f"{job['failures']} failed" if job["failures"] else None,
               delta_color="inverse")  # no red arrow for "0 failed"
cols[4].metric("Lost work", fmt_gpu_hours(job["lost_gpu_hours"]))
st.caption(f"{md(job['kind'] or 'job')} of {md(job['user'] or 'unknown user')}, priority {job['priority']}, submitted "
           f"{fmt_time(run.started_at, job['submit_s'])}, {fmt_int(job['checkpoints'])} checkpoints")


def _when(column: str) -> pl.Expr:
    return time_text(column, run.started_at)


attempts = queries.attempts(run.run_id, [job_id])
if attempts.is_empty():
    st.info("This job has no attempts: it never started.")
else:
    hosts = queries.attempt_hosts(run.run_id, job_id)
    shown = attempts.join(hosts, on="attempt", how="left").with_columns(
        _when("start_s").alias("start"), _when("end_s").alias("end"),
        (pl.col("lost_work_s") / 60).round(1).alias("lost_work_min"),
        pl.col("hostnames").list.head(8).list.join(", ").alias("on_hosts")
        + pl.when(pl.col("hosts") > 8).then(pl.format(" … ({} hosts)", pl.col("hosts"))).otherwise(pl.lit("")),
    )
    st.dataframe(shown.select("attempt", "start", "end", "end_reason", "lost_work_min", "hosts", "on_hosts"),
                 hide_index=True, width="stretch")
    reasons_ended = attempts.group_by("end_reason").len("attempts").sort("attempts", descending=True)
    st.markdown("**End reasons**: " + ", ".join(f"{md(r)} ({n})" for r, n in reasons_ended.iter_rows()))
own_waits = queries.waits_of(run.run_id, job_id)
if own_waits.is_empty():
    st.caption("No wait reasons recorded for this job." if job["wait_s"] else "It did not wait.")
else:
    by_reason = own_waits.group_by("reason").agg(pl.col("waited_s").sum()).sort("waited_s", descending=True)
    st.markdown("**Why it waited**: " + ", ".join(f"{md(r)} ({fmt_duration(s)})" for r, s in by_reason.iter_rows()))
    st.dataframe(own_waits.with_columns(_when("start_s").alias("from"), _when("end_s").alias("to"),
                                        duration_text("waited_s").alias("waited"))
                 .select("from", "to", "waited", "reason"),
                 hide_index=True, width="stretch")
hits = queries.incidents_of(run.run_id, job_id)
if not hits.is_empty():
    st.markdown(f"**Incidents that hit it** ({hits.height})")
    st.dataframe(hits, hide_index=True, width="stretch")
