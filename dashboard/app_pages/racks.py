"""Racks: the floor plan of every rack, host and GPU at time t, coloured by health, temperature, power against
the rack's budget, job or recent failures; a time slider that plays; one rack's elevation (hosts, GPUs, NICs,
its switch), links and events; and the blast radius of a rack, host or switch failing at t.

URL: ?t= (seconds since the run's start), ?measure=, ?window= (failures), ?cells= (hosts, gpus), ?rack= and
?blast= (kind:name) reproduce the view.
"""

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.charts import racks as charts
from dashboard.charts.common import fmt_time
from dashboard.charts.text_exprs import duration_text, time_text
from dashboard.queries import racks as queries

UP_STATES = ("running", "healthy", "spare")
OUT_STATES = ("draining", "down", "diagnosing", "repair", "burn_in")
# A cell a GPU up to this size (llama3-405b's 24,576 GPUs: ~4 MB of figure); larger clusters a cell a host.
GPU_CELLS_UP_TO = 32768
PLAY_EVERY_S = 2.0  # seconds between frames while playing: a full page rerun each, with fresh queries

st.title("Racks")
run = state.run_or_stop()

# ----- time t, and play -------------------------------------------------------------------------------------
duration_h = max(run.duration_s / 3600.0, 1 / 60)
t_key = state.seed(f"racks_t:{run.run_id}", queries.parse_t(st.query_params.get("t"), run.duration_s) / 3600.0)
if "racks_next_t" in st.session_state:  # a step of play, applied before the slider is drawn
    st.session_state[t_key] = st.session_state.pop("racks_next_t")
if st.session_state.pop("racks_stop", False):
    st.session_state["racks_play"] = False
controls = st.columns([6, 1, 1])
t_h = controls[0].slider("Time (hours since the run's start)", 0.0, duration_h,
                         step=max(duration_h / 500, 1 / 60), format="%.2f h", key=t_key)
playing = controls[1].toggle("Play", key="racks_play", help="Step the floor forward through the run")
step_key = state.seed("racks_step", "1h")
step = controls[2].selectbox("Step", list(queries.PLAY_STEPS), key=step_key)
st.query_params["t"] = f"{t_h * 3600.0:.0f}"
t_s = queries.state_time(t_h * 3600.0, run.duration_s)
st.caption(f"The cluster at {fmt_time(run.started_at, t_s)}")


@st.fragment(run_every=PLAY_EVERY_S if playing else None)
def _clock() -> None:
    """While playing, each tick moves t one step and reruns the page (the app run itself does not step)."""
    if st.session_state.pop("racks_app_run", False) or not st.session_state.get("racks_play"):
        return
    t_next, more = queries.next_t(st.session_state[t_key] * 3600.0, queries.PLAY_STEPS[step], run.duration_s)
    st.session_state["racks_next_t"] = t_next / 3600.0
    st.session_state["racks_stop"] = not more
    st.rerun(scope="app")


st.session_state["racks_app_run"] = True
_clock()

# ----- the floor at t -------------------------------------------------------------------------------------
hosts = queries.hosts_at(run.run_id, t_s)
if hosts.is_empty():
    st.info("This run has no hosts table (nothing to lay out on the floor).")
    st.stop()
tdp_w, budget_kw = queries.power_limits(run.scenario)
measure_key = state.seed(f"racks_measure:{run.run_id}", st.query_params.get("measure")
                         if st.query_params.get("measure") in charts.MEASURES else "state")
measure = st.segmented_control("Colour by", list(charts.MEASURES), key=measure_key,
                               format_func=charts.MEASURES.get) or "state"
st.query_params["measure"] = measure
window_key = state.seed(f"racks_window:{run.run_id}", st.query_params.get("window")
                        if st.query_params.get("window") in queries.WINDOWS else "1d")
window = st.session_state[window_key]
if measure == "failures":
    window = st.selectbox("Failures in the last", list(queries.WINDOWS), key=window_key,
                          format_func=queries.WINDOW_WORDS.get)
    st.query_params["window"] = window
cells_frame = queries.floor_cells(run.run_id, t_s, run.scenario, queries.WINDOWS[window])
cells_frame = cells_frame.join(queries.jobs(run.run_id).select("job_id", "kind"), on="job_id", how="left")
power = queries.rack_power(cells_frame)
over = power.filter(pl.col("over"))

states = hosts["state"].fill_null("unknown")
up, out, unknown = (int(states.is_in(s).sum()) for s in (UP_STATES, OUT_STATES, ("unknown",)))
cols = st.columns(6)
cols[0].metric("Racks", f"{hosts['rack_id'].n_unique():,}")
cols[1].metric("Hosts up", f"{up:,}", help="running, healthy or spare at t")
cols[2].metric("Hosts out of service", f"{out:,}", help="draining, down, diagnosing, in repair or burn-in at t")
cols[3].metric("Hosts without a state", f"{unknown:,}", help="no host_states interval covers t")
cluster_kw = float(power["rack_kw"].sum())
cols[4].metric("Cluster power", f"{cluster_kw / 1000:,.2f} MW" if cluster_kw >= 1000 else f"{cluster_kw:,.1f} kW",
               help="the latest GPU readings at or before t, summed (GPUs only, not CPUs, fans or switches)")
cols[5].metric("Racks over budget", f"{over.height:,}", help=f"drawing more than {budget_kw:g} kW "
               "(cluster.rack_power_budget_kw)")

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
    shown = cells_frame
    st.caption("A GPU shows its host's state, or *failed* from its own incident until its repair.")
else:  # a host cell: its host's state, its hottest GPU, its mean GPU power, its most failed GPU
    shown = (hosts.join(cells_frame.group_by("host_id").agg(
        pl.col("temp_c").max(), pl.col("power_w").mean(), pl.col("failures").max(), pl.col("host_kw").first(),
        pl.col("rack_kw").first(), pl.col("budget_kw").first(), pl.col("kind").first()), on="host_id", how="left")
        .with_columns(pl.col("failures").fill_null(0), pl.col("rack_kw").fill_null(0.0),
                      pl.col("budget_kw").fill_null(budget_kw)))
    st.caption("A host cell shows its hottest GPU, its mean GPU power and its most failed GPU.")
figure = charts.floor_plan(shown, measure, tdp_w=tdp_w, window=queries.WINDOW_WORDS[window])
clicked = st.plotly_chart(figure, width="stretch", on_select="rerun", selection_mode="points",
                          key=f"racks_floor:{run.run_id}")
notes = ["Click a rack's dot to open it below."]
if measure == "power":
    notes.append(f"Each GPU's latest reading at or before t, summed per host and rack against the rack budget of "
                 f"{budget_kw:g} kW; a GPU's TDP is {tdp_w:.0f} W (H100, Llama 3 paper). Racks over budget: red ×.")
if measure in ("temp", "power") and not queries.has_table(run.run_id, "gpu_samples"):
    notes.append("This run has no GPU telemetry: no readings to show.")
st.caption(" ".join(notes))
if unknown == hosts.height:
    st.caption("This run records no host states at t, so every host shows as unknown.")
if over.height:
    st.markdown("**Racks over their power budget at t**: " + ", ".join(
        f"rack {r} ({kw:.1f} kW)" for r, kw in over.select("rack_id", "rack_kw").head(20).iter_rows())
        + (" …" if over.height > 20 else ""))

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
rack = st.selectbox("Rack", rack_ids, key=rack_key,
                    placeholder="Choose a rack to see its elevation, links and events")
if rack is None:
    st.query_params.pop("rack", None)
else:
    st.query_params["rack"] = str(rack)
    rack_hosts = hosts.filter(pl.col("rack_id") == rack)
    rack_power = power.filter(pl.col("rack_id") == rack)
    kw = float(rack_power["rack_kw"][0]) if rack_power.height else 0.0
    st.markdown(f"**Rack {rack}**: pod {rack_hosts['pod_id'][0]}, row {rack_hosts['row'][0]}, position "
                f"{rack_hosts['position'][0]}, {rack_hosts.height} hosts (top slot first) · {kw:.1f} of "
                f"{budget_kw:g} kW" + (" · **over budget**" if kw > budget_kw else ""))
    links = queries.rack_links(run.run_id, rack, t_s)
    st.plotly_chart(charts.elevation(cells_frame.filter(pl.col("rack_id") == rack), links, rack), width="stretch")
    in_rack = rack_hosts.join(cells_frame.group_by("host_id").agg(pl.col("host_kw").first()), on="host_id",
                              how="left").select("hostname", "slot", pl.col("state").fill_null("unknown"),
                                                 "job_id", "host_kw", "host_id")
    st.dataframe(in_rack.sort("slot", descending=True), hide_index=True, width="stretch")
    if links.height:
        st.markdown(f"**Links** ({links.height}: a cable per GPU NIC to the rack switch, the switch's uplinks)")
        st.dataframe(links, hide_index=True, width="stretch")

    incidents = queries.rack_incidents(run.run_id, rack).filter(pl.col("t_s") <= t_s).reverse()
    st.markdown(f"**Incidents up to t** ({incidents.height})")
    if incidents.is_empty():
        st.caption("No incidents on this rack's hosts, GPUs or links up to t.")
    else:
        st.dataframe(incidents.with_columns(
            time_text("t_s", run.started_at).alias("time"),
            duration_text("out_of_service_s").fill_null("not repaired")
            .alias("out_of_service"),
        ).select("incident_id", "time", "hostname", "gpu_id", "link_id", "cause", "category", "planned", "xid",
                 "jobs_hit", "gpu_hours_lost", "out_of_service"), hide_index=True, width="stretch")
    xids = queries.rack_xids(run.run_id, rack, t_s)
    if xids.height:
        st.markdown(f"**XID lines up to t** ({xids.height})")
        st.dataframe(xids.with_columns(time_text("t_s", run.started_at).alias("time"))
                     .select("time", "hostname", "gpu_index", "xid", "incident_id", "message"),
                     hide_index=True, width="stretch")
    if queries.has_table(run.run_id, "host_states"):
        history = queries.rack_history(run.run_id, rack)
        if history.height:
            st.markdown("**State history**")
            st.plotly_chart(charts.state_history(history, run.started_at), width="stretch")

# ----- blast radius ---------------------------------------------------------------------------------------
st.subheader("Blast radius")
st.caption("What a failure would interrupt at t: every job with a host behind the failed part stops as a whole "
           "(gang-scheduled jobs restart together).")
wanted_blast = queries.parse_blast(st.query_params.get("blast"))
kind_key = state.seed(f"racks_blast_kind:{run.run_id}", wanted_blast[0] if wanted_blast else "rack")
kind = st.segmented_control("A failure of", list(queries.BLAST_KINDS), key=kind_key,
                            format_func=queries.BLAST_KINDS.get) or "rack"
targets = queries.blast_targets(hosts, kind)
default_target = (wanted_blast[1] if wanted_blast and wanted_blast[0] == kind and wanted_blast[1] in targets
                  else None)
if default_target is None and rack is not None:  # the open rack (or its first host, its switch, its pod's spine)
    in_rack = hosts.filter(pl.col("rack_id") == rack)
    default_target = {"rack": str(rack), "host": in_rack["hostname"][0], "rtsw": f"rtsw-{rack}",
                      "ctsw": f"ctsw-{in_rack['pod_id'][0]}-0"}[kind]
target_key = f"racks_blast_target:{run.run_id}:{kind}"
if st.session_state.get(target_key) not in targets:
    st.session_state[target_key] = default_target if default_target in targets else targets[0]
target = st.selectbox(queries.BLAST_KINDS[kind], targets, key=target_key)
st.query_params["blast"] = f"{kind}:{target}"
hit_hosts, spanning = queries.blast_hosts(hosts, kind, target)
gpus_per_host = max(1, round(gpus / max(hosts.height, 1))) if gpus else 8
hit = queries.blast_radius(hosts, gpus_per_host, queries.jobs(run.run_id), hit_hosts, spanning)
cols = st.columns(3)
cols[0].metric("Jobs hit", f"{hit.height:,}")
cols[1].metric("GPUs interrupted", f"{int(hit['job_gpus'].sum()):,}",
               help="every GPU of every job hit: the whole job stops and restarts")
cols[2].metric("GPUs behind it", f"{hit_hosts.len() * gpus_per_host:,}",
               help="GPUs that lose their place in the fabric (the rack, host, or for a spine switch the pod)")
if hit.is_empty():
    st.caption("No job runs behind it at t" + (" across racks" if spanning else "") + ".")
else:
    st.dataframe(hit, hide_index=True, width="stretch")
if st.toggle("Show it on the floor", key="racks_blast_floor", help="the floor plan again, the blast radius in red"):
    st.plotly_chart(charts.floor_plan(queries.blast_cells(cells_frame, hit_hosts, hit), "blast"), width="stretch",
                    key=f"racks_blast_floor:{run.run_id}")
