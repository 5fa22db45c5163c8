"""Jobs: a Gantt of the jobs' attempts (flagship first, the largest next), a filterable table, one job's attempts.

URL: ?job= (job id) reproduces the drill-down; ?q=, ?states=, ?kinds= the filters.
"""

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.charts import jobs as charts
from dashboard.charts.common import fmt_duration, fmt_gpu_hours, fmt_int, fmt_time
from dashboard.queries import jobs as queries

MAX_GANTT_ROWS = 500  # more rows than this stop being readable and slow the browser

st.title("Jobs")
run = state.selected_run()
if run is None:
    state.empty_state()
    st.stop()


# ----- filters --------------------------------------------------------------------------------------------
present = queries.choices(run.run_id)
all_states = [s for s in present["states"].to_list()[0] or [] if s is not None]
all_kinds = [k for k in present["kinds"].to_list()[0] or [] if k is not None]
cols = st.columns([2, 2, 2, 1])
text = cols[0].text_input("Name or id contains", key=state.seed(f"jobs_q:{run.run_id}", st.query_params.get("q", "")))
states = cols[1].multiselect("State", all_states, key=state.seed(f"jobs_states:{run.run_id}", state.url_list("states", all_states)),
                             placeholder="every state")
kinds = cols[2].multiselect("Kind", all_kinds, key=state.seed(f"jobs_kinds:{run.run_id}", state.url_list("kinds", all_kinds)),
                            placeholder="every kind")
rows = cols[3].number_input("Gantt rows", 1, MAX_GANTT_ROWS, step=50, key=state.seed("jobs_rows", 100))
state.set_url("q", text.strip())
state.set_url("states", ",".join(states))
state.set_url("kinds", ",".join(kinds))
jobs = queries.jobs(run.run_id, run.duration_s, queries.JobFilter(text.strip(), tuple(states), tuple(kinds)))

total = queries.jobs(run.run_id, run.duration_s)
flagship = total.filter(pl.col("kind") == "flagship")
cols = st.columns(4)
cols[0].metric("Jobs", fmt_int(total.height), help="in this run, whatever the filters")
cols[1].metric("Waiting or pending", fmt_int(total.filter(pl.col("start_s").is_null()).height))
cols[2].metric("Failed attempts", fmt_int(total["failures"].sum()), help="attempts ended by a failure cause")
cols[3].metric("Flagship checkpoints", fmt_int(flagship["checkpoints"].sum()) if flagship.height else "–")

# ----- Gantt ----------------------------------------------------------------------------------------------
st.subheader("Attempts over time")
clicked = None
started = jobs.filter(pl.col("attempts") > 0)
drawn = started.head(int(rows))
if drawn.is_empty():
    st.info("No job matching the filters has run yet." if jobs.height else "No job matches the filters.")
else:
    st.caption(f"{drawn.height:,} of {started.height:,} jobs that ran (flagship first, then the most GPU-time); "
               "bars are attempts coloured by how they ended, x marks a failure. Click a bar to open its job.")
    frame = queries.attempts(run.run_id, drawn["job_id"].to_list()).join(
        drawn.select("job_id", "label"), on="job_id")
    clicked = st.plotly_chart(charts.attempts_gantt(frame, run.started_at, drawn["label"].to_list()),
                              width="stretch", on_select="rerun", selection_mode="points", key=f"jobs_gantt:{run.run_id}")

# ----- table ----------------------------------------------------------------------------------------------
st.subheader(f"Jobs ({jobs.height:,})")
st.dataframe(
    jobs.drop("label").with_columns((pl.col("wait_s") / 3600).round(2).alias("wait_h")).drop("wait_s"),
    hide_index=True, width="stretch",
    column_config={"lost_gpu_hours": st.column_config.NumberColumn("lost GPU-h", format="%.1f")},
)

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
cols[1].metric("State", job["state"] or "–")
cols[2].metric("Waited", fmt_duration(job["wait_s"]) if job["wait_s"] is not None else "not started")
cols[3].metric("Attempts", fmt_int(job["attempts"]), f"{job['failures']} failed", delta_color="inverse")
cols[4].metric("Lost work", fmt_gpu_hours(job["lost_gpu_hours"]))
st.caption(f"{job['kind'] or 'job'} of {job['user'] or 'unknown user'}, priority {job['priority']}, submitted "
           f"{fmt_time(run.started_at, job['submit_s'])}, {fmt_int(job['checkpoints'])} checkpoints")
attempts = queries.attempts(run.run_id, [job_id])
if attempts.is_empty():
    st.info("This job has no attempts: it never started.")
else:
    st.dataframe(attempts.with_columns(
        pl.col("start_s").map_elements(lambda t: fmt_time(run.started_at, t), return_dtype=pl.String).alias("start"),
        pl.col("end_s").map_elements(lambda t: fmt_time(run.started_at, t), return_dtype=pl.String).alias("end"),
        (pl.col("lost_work_s") / 60).round(1).alias("lost_work_min"),
    ).select("attempt", "start", "end", "end_reason", "lost_work_min", "hosts"), hide_index=True, width="stretch")
    reasons = attempts.group_by("end_reason").len("attempts").sort("attempts", descending=True)
    st.markdown("**End reasons**: " + ", ".join(f"{r} ({n})" for r, n in reasons.iter_rows()))
hits = queries.incidents_of(run.run_id, job_id)
if not hits.is_empty():
    st.markdown(f"**Incidents that hit it** ({hits.height})")
    st.dataframe(hits, hide_index=True, width="stretch")
