"""Incidents: counts by cause and category as the Llama 3 paper counts them, a timeline sized by cost, a table
sortable by cost with filters, one incident's chain.

URL: ?incident= (id), ?causes=, ?categories=, ?planned= (planned, unexpected) reproduce the view.
"""

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.charts import incidents as charts
from dashboard.charts.common import fmt_duration, fmt_gpu_hours, fmt_int, fmt_pct, fmt_time
from dashboard.queries import incidents as queries

PLANNED_CHOICES = {"all": "planned and unexpected", "planned": "planned only", "unexpected": "unexpected only"}

st.title("Incidents")
run = state.selected_run()
if run is None:
    state.empty_state()
    st.stop()

everything = queries.incidents(run.run_id)
if everything.is_empty():
    st.info("This run has no incidents: nothing failed and nothing was planned.")
    st.stop()
days = run.duration_s / 86400.0


def with_time(column: str = "t_s", alias: str = "time") -> pl.Expr:
    return pl.col(column).map_elements(lambda t: fmt_time(run.started_at, t), return_dtype=pl.String).alias(alias)


# ----- counted as the Llama 3 paper counts them -----------------------------------------------------------
st.subheader("Interruptions")
flagship = queries.flagship(run.run_id)
counted = queries.of_job(everything, flagship) if flagship else everything
if flagship:
    st.caption(f"Interruptions of the flagship job `{flagship}`, counted as the Llama 3 paper counts its 466 "
               f"(this run has {everything.height:,} incidents in all).")
else:
    st.caption("This run has no flagship job: every incident is counted.")
figures = queries.headline(counted, days)
cols = st.columns(5)
cols[0].metric("Interruptions", fmt_int(figures["total"]))
cols[1].metric("Unexpected", fmt_int(figures["unexpected"]))
cols[2].metric("Planned", fmt_int(figures["planned"]))
cols[3].metric("Hardware share", fmt_pct(figures["hardware_share"], 0),
               help="unexpected interruptions of GPU, host or network cause (Llama 3: about 78%)")
cols[4].metric("Interruptions a day", f"{figures['per_day']:.1f}")
if counted.height:
    left, right = st.columns([3, 2])
    causes = queries.by_cause(counted)
    left.plotly_chart(charts.by_cause(causes), width="stretch")
    gpu_hours = {"gpu_hours_lost": st.column_config.NumberColumn("GPU-h lost", format="%.1f")}
    right.dataframe(queries.by_category(counted), hide_index=True, width="stretch", column_config=gpu_hours)
    right.dataframe(causes.drop("planned"), hide_index=True, width="stretch", column_config=gpu_hours)
    st.plotly_chart(charts.per_day(queries.per_day(counted, days), run.started_at), width="stretch")

# ----- filters, timeline and table ------------------------------------------------------------------------
st.subheader("Timeline")
all_causes = sorted(everything["cause"].drop_nulls().unique().to_list())
all_categories = sorted(everything["category"].drop_nulls().unique().to_list())
cols = st.columns([3, 3, 2])
causes_chosen = cols[0].multiselect("Cause", all_causes, placeholder="every cause",
                                    key=state.seed(f"incidents_causes:{run.run_id}", state.url_list("causes", all_causes)))
categories = cols[1].multiselect("Category", all_categories, placeholder="every category",
                                 key=state.seed(f"incidents_categories:{run.run_id}", state.url_list("categories", all_categories)))
planned_key = st.query_params.get("planned", "all")
planned_key = cols[2].radio("Planned", list(PLANNED_CHOICES), format_func=PLANNED_CHOICES.get,
                            key=state.seed(f"incidents_planned:{run.run_id}",
                                     planned_key if planned_key in PLANNED_CHOICES else "all"))
state.set_url("causes", ",".join(causes_chosen))
state.set_url("categories", ",".join(categories))
state.set_url("planned", "" if planned_key == "all" else planned_key)
shown = everything
if causes_chosen:
    shown = shown.filter(pl.col("cause").is_in(causes_chosen))
if categories:
    shown = shown.filter(pl.col("category").is_in(categories))
if planned_key != "all":
    shown = shown.filter(pl.col("planned") == (planned_key == "planned"))
clicked = None
if shown.is_empty():
    st.info("No incident matches the filters.")
else:
    st.caption(f"{shown.height:,} incidents; marker area follows the GPU-hours each cost. Click one to open it "
               "below.")
    clicked = st.plotly_chart(charts.timeline(shown, run.started_at), width="stretch", on_select="rerun",
                              selection_mode="points", key=f"incidents_timeline:{run.run_id}")
    st.markdown(f"**Incidents by cost** ({shown.height:,})")
    st.dataframe(
        shown.sort("gpu_hours_lost", descending=True, nulls_last=True).with_columns(
            with_time(), pl.col("job_ids").list.join(", "))
        .select("incident_id", "time", "cause", "category", "planned", "gpu_hours_lost", "jobs_hit", "job_ids",
                "hostname", "gpu_id", "link_id", "xid"),
        hide_index=True, width="stretch",
        column_config={"gpu_hours_lost": st.column_config.NumberColumn("GPU-h lost", format="%.1f")},
    )

# ----- one incident ---------------------------------------------------------------------------------------
st.subheader("One incident")
ids = shown.sort("gpu_hours_lost", descending=True, nulls_last=True)["incident_id"].to_list()
incident_key = f"incidents_incident:{run.run_id}"
click = charts.clicked_incident(clicked.selection if clicked else None)
if click is not None and click != st.session_state.get("incidents_last_click"):
    st.session_state[incident_key] = click  # a new click on the timeline opens that incident
st.session_state["incidents_last_click"] = click
try:
    wanted = st.session_state[incident_key] if incident_key in st.session_state else int(
        st.query_params.get("incident", ""))
except ValueError:
    wanted = None
if wanted is not None and wanted not in ids and wanted in everything["incident_id"].to_list():
    ids = [wanted, *ids]  # the chosen incident stays choosable when the filters leave it out
if wanted not in ids:
    wanted = st.session_state[incident_key] = None
by_id = {row["incident_id"]: row for row in everything.iter_rows(named=True)}
chosen = st.selectbox("Incident (costliest first)", ids, key=state.seed(incident_key, wanted),
                      format_func=lambda i: f"{i} · {by_id[i]['cause']} · {fmt_time(run.started_at, by_id[i]['t_s'])}",
                      placeholder="Choose an incident to see its chain")
if chosen is None:
    st.query_params.pop("incident", None)
    st.stop()
st.query_params["incident"] = str(chosen)
row = by_id[chosen]
cols = st.columns(4)
cols[0].metric("Cause", row["cause"])
cols[1].metric("Category", row["category"] or "–")
cols[2].metric("Cost", fmt_gpu_hours(row["gpu_hours_lost"]))
cols[3].metric("Jobs hit", fmt_int(row["jobs_hit"]))
chain = pl.DataFrame({
    "step": ["occurred", "detected", "mitigated", "repaired"],
    "t_s": [row["t_s"], row["detected_s"], row["mitigated_s"], row["repaired_s"]],
}, schema={"step": pl.String, "t_s": pl.Float64})
st.dataframe(chain.with_columns(
    with_time(),
    (pl.col("t_s") - row["t_s"]).map_elements(fmt_duration, return_dtype=pl.String).alias("after"),
).drop("t_s").fill_null("not by the run's end"), hide_index=True, width="stretch")
where = [f"host {row['hostname']} (rack {row['rack_id']})" if row["hostname"] else None,
         f"GPU {row['gpu_id']}" if row["gpu_id"] is not None else None,
         f"link {row['link_id']}" if row["link_id"] is not None else None,
         f"XID {row['xid']}" if row["xid"] is not None else None]
st.markdown(f"**Where**: {', '.join(w for w in where if w) or 'no single host (planned or job-wide)'}; "
            f"{'planned' if row['planned'] else 'unexpected'}.")
if row["job_ids"]:
    st.markdown("**Jobs it interrupted**")
    st.dataframe(queries.jobs_named(run.run_id, list(row["job_ids"])), hide_index=True, width="stretch")
xids = queries.xid_events(run.run_id, chosen)
if not xids.is_empty():
    st.markdown("**XID events**")
    st.dataframe(xids.with_columns(with_time()).drop("t_s"), hide_index=True, width="stretch")
