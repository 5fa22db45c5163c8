"""Network: the fabric's links by tier, link utilisation over time where the run has link telemetry, and the
network incidents (switches and cables) with the jobs they hit."""

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.charts import network as charts
from dashboard.charts.common import fmt_duration, fmt_gpu_hours, fmt_int, fmt_time
from dashboard.queries import network as queries

UTILISATION_POINTS = 400  # time buckets drawn, whatever the run's length

st.title("Network")
run = state.selected_run()
if run is None:
    state.empty_state()
    st.stop()

# ----- the fabric -----------------------------------------------------------------------------------------
st.subheader("Links by tier")
tiers = queries.tiers(run.run_id)
if tiers.is_empty():
    st.info("This run has no links table: its fabric was not modelled or observed.")
else:
    cols = st.columns(3)
    cols[0].metric("Links", fmt_int(tiers["links"].sum()))
    cols[1].metric("Tiers", fmt_int(tiers.height))
    cols[2].metric("Capacity", f"{tiers['capacity_gbps'].sum() / 1000:,.1f} Tbps", help="every link's capacity summed")
    st.plotly_chart(charts.tiers(tiers), width="stretch")
    st.dataframe(tiers.sort(pl.col("tier").map_elements(lambda t: charts.tier_sort_key(t)[0], return_dtype=pl.Int64)),
                 hide_index=True, width="stretch", column_config={
                     c: st.column_config.NumberColumn(format="localized") for c in ("capacity_gbps", "min_link_gbps",
                                                                                 "max_link_gbps")})

# ----- utilisation ----------------------------------------------------------------------------------------
st.subheader("Utilisation by tier")
samples = queries.sample_count(run.run_id)
if samples == 0:
    st.info("This run has no link telemetry (its link_samples table is empty), so there is no utilisation to "
            "show. Link loads come with the fabric model of the network issue (issue 6).")
else:
    utilisation = queries.utilisation_by_tier(run.run_id, UTILISATION_POINTS)
    st.caption(f"{samples:,} link samples, averaged over {fmt_duration(utilisation['bucket_s'][0])} buckets; "
               "dotted: the hottest link of the tier.")
    st.plotly_chart(charts.utilisation(utilisation, run.started_at), width="stretch")
    st.markdown("**Hottest links** (mean utilisation over the run)")
    st.dataframe(queries.hottest_links(run.run_id), hide_index=True, width="stretch")

# ----- network incidents ----------------------------------------------------------------------------------
st.subheader("Switch and cable failures")
incidents = queries.network_incidents(run.run_id)
if incidents.is_empty():
    st.info("No switch or cable failure in this run.")
else:
    cols = st.columns(3)
    cols[0].metric("Network incidents", fmt_int(incidents.height))
    cols[1].metric("Jobs interrupted", fmt_int(incidents["jobs_hit"].sum()))
    cols[2].metric("GPU-hours lost", fmt_gpu_hours(incidents["gpu_hours_lost"].sum()),
                   help="by every job these incidents hit")
    st.dataframe(incidents.with_columns(
        pl.col("t_s").map_elements(lambda t: fmt_time(run.started_at, t), return_dtype=pl.String).alias("time"),
        pl.col("out_s").map_elements(fmt_duration, return_dtype=pl.String).fill_null("not repaired")
        .alias("out_of_service"),
        pl.col("job_ids").list.join(", "),
    ).select("incident_id", "time", "out_of_service", "link_id", "tier", "a", "b", "hostname", "jobs_hit",
             "job_ids", "gpu_hours_lost"), hide_index=True, width="stretch")
    st.markdown("**Jobs they hit**")
    st.dataframe(queries.jobs_hit(run.run_id), hide_index=True, width="stretch", column_config={
        "incident_gpu_hours_lost": st.column_config.NumberColumn("GPU-h lost in these incidents", format="%.1f")})
