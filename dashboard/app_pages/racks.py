"""Racks: the floor plan of every rack, each host coloured by its state at time t; a rack's hosts, history and incidents.

URL: ?t= (seconds since the run's start), ?cells= (hosts, gpus) and ?rack= (rack id) reproduce the view.
"""

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.charts import racks as charts
from dashboard.charts.common import fmt_duration, fmt_time
from dashboard.queries import racks as queries

UP_STATES = ("running", "healthy", "spare")
OUT_STATES = ("draining", "down", "diagnosing", "repair", "burn_in")
GPU_CELLS_UP_TO = 4096  # clusters this small show a cell per GPU by default; larger ones a cell per host


st.title("Racks")
run = state.selected_run()
if run is None:
    state.empty_state()
    st.stop()

# ----- time t ---------------------------------------------------------------------------------------------
duration_h = max(run.duration_s / 3600.0, 1 / 60)
t_key = state.seed(f"racks_t:{run.run_id}", queries.parse_t(st.query_params.get("t"), run.duration_s) / 3600.0)
t_h = st.slider("Time (hours since the run's start)", 0.0, duration_h, step=max(duration_h / 500, 1 / 60),
                format="%.2f h", key=t_key)
st.query_params["t"] = f"{t_h * 3600.0:.0f}"
t_s = queries.state_time(t_h * 3600.0, run.duration_s)
st.caption(f"The cluster at {fmt_time(run.started_at, t_s)}")

# ----- the floor at t -------------------------------------------------------------------------------------
hosts = queries.hosts_at(run.run_id, t_s)
if hosts.is_empty():
    st.info("This run has no hosts table (nothing to lay out on the floor).")
    st.stop()
states = hosts["state"].fill_null("unknown")
up, out, unknown = (int(states.is_in(s).sum()) for s in (UP_STATES, OUT_STATES, ("unknown",)))
cols = st.columns(4)
cols[0].metric("Racks", f"{hosts['rack_id'].n_unique():,}")
cols[1].metric("Hosts up", f"{up:,}", help="running, healthy or spare at t")
cols[2].metric("Hosts out of service", f"{out:,}", help="draining, down, diagnosing, in repair or burn-in at t")
cols[3].metric("Hosts without a state", f"{unknown:,}", help="no host_states interval covers t")

st.subheader("Floor plan")
gpus = queries.gpu_count(run.run_id)
default_cells = "gpus" if 0 < gpus <= GPU_CELLS_UP_TO else "hosts"
wanted_cells = st.query_params.get("cells")
cells_key = state.seed(f"racks_cells:{run.run_id}", wanted_cells if wanted_cells in ("hosts", "gpus") else default_cells)
cells = st.segmented_control("Cells", ["hosts", "gpus"], key=cells_key,
                             format_func={"hosts": "a cell a host", "gpus": "a cell a GPU"}.get) or default_cells
if gpus == 0:
    cells = "hosts"
st.query_params["cells"] = cells
if cells == "gpus":
    st.caption("A GPU shows its host's state, or *failed* from its own incident until its repair.")
figure = charts.floor_plan(queries.gpus_at(run.run_id, t_s) if cells == "gpus" else hosts)
clicked = st.plotly_chart(figure, width="stretch", on_select="rerun", selection_mode="points",
                          key=f"racks_floor:{run.run_id}")
st.caption("Click a rack's dot to open it below.")
if unknown == hosts.height:
    st.caption("This run records no host states at t, so every host shows as unknown.")

# ----- one rack -------------------------------------------------------------------------------------------
st.subheader("Rack")
rack_ids = queries.racks(run.run_id)["rack_id"].to_list()
try:
    wanted = int(st.query_params.get("rack", ""))
except ValueError:
    wanted = None
rack_key = state.seed(f"racks_rack:{run.run_id}", wanted if wanted in rack_ids else None)
click = charts.clicked_rack(clicked.selection if clicked else None)
if click is not None and click != st.session_state.get("racks_last_click") and click in rack_ids:
    st.session_state[rack_key] = click  # a new click on the floor opens that rack; the selectbox can move on
st.session_state["racks_last_click"] = click
rack = st.selectbox("Rack", rack_ids, key=rack_key, placeholder="Choose a rack to see its hosts, history and incidents")
if rack is None:
    st.query_params.pop("rack", None)
    st.stop()
st.query_params["rack"] = str(rack)

rack_hosts = hosts.filter(pl.col("rack_id") == rack)
st.markdown(f"**Rack {rack}**: pod {rack_hosts['pod_id'][0]}, row {rack_hosts['row'][0]}, position "
            f"{rack_hosts['position'][0]}, {rack_hosts.height} hosts (top slot first)")
in_rack = rack_hosts.select("hostname", "slot", pl.col("state").fill_null("unknown"), "job_id", "host_id")
st.dataframe(in_rack.sort("slot", descending=True), hide_index=True, width="stretch")

history = queries.rack_history(run.run_id, rack)
st.markdown("**State history**")
if history.is_empty():
    st.caption("No state intervals recorded for this rack's hosts.")
else:
    st.plotly_chart(charts.state_history(history, run.started_at), width="stretch")

incidents = queries.rack_incidents(run.run_id, rack)
st.markdown(f"**Incidents** ({incidents.height})")
if incidents.is_empty():
    st.caption("No incidents on this rack's hosts in this run.")
else:
    st.dataframe(incidents.with_columns(
        pl.col("t_s").map_elements(lambda t: fmt_time(run.started_at, t), return_dtype=pl.String).alias("time"),
        pl.col("out_of_service_s").map_elements(fmt_duration, return_dtype=pl.String).fill_null("not repaired")
        .alias("out_of_service"),
    ).select("incident_id", "time", "hostname", "gpu_id", "cause", "category", "planned", "xid", "jobs_hit",
             "gpu_hours_lost", "out_of_service"), hide_index=True, width="stretch")
