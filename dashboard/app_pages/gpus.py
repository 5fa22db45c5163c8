"""GPUs: health by state at time t, repeat offenders (the lemon candidates), XIDs by code, one GPU's telemetry.

URL: ?t= (seconds since the run's start) and ?gpu= (GPU id) reproduce the view.
"""

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.charts import gpus as charts
from dashboard.charts.common import fmt_duration, fmt_time
from dashboard.queries import gpus as queries
from dashboard.queries.racks import parse_t, state_time

TELEMETRY_POINTS = 500  # buckets drawn for one GPU, whatever the run's length


st.title("GPUs")
run = state.selected_run()
if run is None:
    state.empty_state()
    st.stop()

# ----- health at t ----------------------------------------------------------------------------------------
st.subheader("Health")
duration_h = max(run.duration_s / 3600.0, 1 / 60)
t_key = state.seed(f"gpus_t:{run.run_id}", parse_t(st.query_params.get("t"), run.duration_s) / 3600.0)
t_h = st.slider("Time (hours since the run's start)", 0.0, duration_h, step=max(duration_h / 500, 1 / 60),
                format="%.2f h", key=t_key)
st.query_params["t"] = f"{t_h * 3600.0:.0f}"
t_s = state_time(t_h * 3600.0, run.duration_s)
health = queries.health_at(run.run_id, t_s)
if health.is_empty():
    st.info("This run has no GPUs table.")
else:
    by_state = dict(zip(health["state"].to_list(), health["gpus"].to_list(), strict=True))
    cols = st.columns(3)
    cols[0].metric("GPUs", f"{sum(by_state.values()):,}")
    cols[1].metric("Failed GPUs", f"{by_state.get('failed', 0):,}",
                   help="GPUs with an incident not yet repaired at t")
    cols[2].metric("GPUs training", f"{by_state.get('running', 0):,}", help="on hosts running a job at t")
    st.caption(f"GPUs by state at {fmt_time(run.started_at, t_s)} "
               "(a GPU takes its host's state unless it has failed itself)")
    st.plotly_chart(charts.health_counts(health), width="stretch")

# ----- repeat offenders -----------------------------------------------------------------------------------
st.subheader("Repeat offenders")
st.caption("Hosts and GPUs with two or more unplanned incidents: the lemon candidates to pull and send back.")
lemon_hosts = queries.offenders(run.run_id, "host", minimum=2)
lemon_gpus = queries.offenders(run.run_id, "gpu", minimum=2)
clicked = None
if lemon_hosts.is_empty() and lemon_gpus.is_empty():
    st.info("No host or GPU failed more than once in this run.")
else:
    def with_times(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(
            pl.col("first_s").map_elements(lambda t: fmt_time(run.started_at, t), return_dtype=pl.String)
            .alias("first"),
            pl.col("last_s").map_elements(lambda t: fmt_time(run.started_at, t), return_dtype=pl.String)
            .alias("last"),
        ).drop("first_s", "last_s")

    left, right = st.columns(2)
    left.markdown(f"**Hosts** ({lemon_hosts.height})")
    left.dataframe(with_times(lemon_hosts), hide_index=True, width="stretch")
    right.markdown(f"**GPUs** ({lemon_gpus.height})")
    right.dataframe(with_times(lemon_gpus), hide_index=True, width="stretch")
    history = queries.offender_incidents(run.run_id, minimum=2)
    if not history.is_empty():
        st.caption("Each incident of the worst hosts; click one on a GPU to open that GPU below.")
        clicked = st.plotly_chart(charts.offender_history(history, run.started_at), width="stretch",
                                  on_select="rerun", selection_mode="points", key=f"gpus_offenders:{run.run_id}")

with st.expander("Incidents per host and per GPU (top 50)"):
    left, right = st.columns(2)
    left.dataframe(queries.offenders(run.run_id, "host"), hide_index=True, width="stretch")
    right.dataframe(queries.offenders(run.run_id, "gpu"), hide_index=True, width="stretch")

# ----- XIDs -----------------------------------------------------------------------------------------------
st.subheader("XID events by code")
xids = queries.xid_counts(run.run_id)
if xids.is_empty():
    st.info("This run recorded no XID events.")
else:
    st.caption("Every XID event counted, not the last value of a gauge; fatal codes in red.")
    st.plotly_chart(charts.xid_counts(xids), width="stretch")

# ----- one GPU --------------------------------------------------------------------------------------------
st.subheader("One GPU")
ids = queries.gpu_ids(run.run_id)
first, last = ids["first"][0], ids["last"][0]
if first is None:
    st.stop()
try:
    wanted = int(st.query_params.get("gpu", ""))
except ValueError:
    wanted = None
wanted = wanted if wanted is not None and first <= wanted <= last else None
gpu_key = f"gpus_gpu:{run.run_id}"
click = charts.clicked_gpu(clicked.selection if clicked else None)
if click is not None and click != st.session_state.get("gpus_last_click") and first <= click <= last:
    st.session_state[gpu_key] = click  # a new click on an offender's incident opens its GPU
st.session_state["gpus_last_click"] = click
if wanted is None and not lemon_gpus.is_empty():
    st.caption(f"The worst repeat offender is GPU {lemon_gpus['gpu_id'][0]}.")
gpu = st.number_input("GPU id", min_value=int(first), max_value=int(last), step=1,
                      key=state.seed(gpu_key, wanted),
                      placeholder="Enter a GPU id to see its telemetry and events")
if gpu is None:
    st.query_params.pop("gpu", None)
    st.stop()
gpu = int(gpu)
st.query_params["gpu"] = str(gpu)
info = queries.gpu_info(run.run_id, gpu)
if info.is_empty():
    st.warning(f"GPU {gpu} is not in this run.")
    st.stop()
row = info.row(0, named=True)
st.markdown(f"**GPU {gpu}**: index {row['gpu_index']} of host {row['hostname']} (rack {row['rack_id']}), "
            f"{row['model']}, {row['uuid']}")
events = queries.gpu_events(run.run_id, gpu)
st.markdown(f"**Events** ({events.height})")
if events.is_empty():
    st.caption("No incident or XID event on this GPU.")
else:
    st.dataframe(events.with_columns(
        pl.col("t_s").map_elements(lambda t: fmt_time(run.started_at, t), return_dtype=pl.String).alias("time")),
        hide_index=True, width="stretch")
telemetry = queries.gpu_telemetry(run.run_id, gpu, TELEMETRY_POINTS)
st.markdown("**Telemetry**")
if telemetry.is_empty():
    st.caption("No telemetry samples for this GPU in this run.")
else:
    tdp = run.scenario.get("cluster", {}).get("gpu_tdp_w")
    st.caption(f"{int(telemetry['samples'].sum()):,} samples averaged over "
               f"{fmt_duration(telemetry['bucket_s'][0])} buckets.")
    st.plotly_chart(charts.gpu_telemetry(telemetry, run.started_at, float(tdp) if tdp else None), width="stretch")
