"""Network: the fabric's links by tier, utilisation by tier over time, the hottest links, the fabric drawn and
coloured by load, links that failed or flapped with the jobs they slowed or stopped, the network incidents,
and this run's fabric beside another run's (RoCE against InfiniBand: ?vs=)."""

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.charts import network as charts
from dashboard.charts import text_exprs
from dashboard.charts.common import fmt_duration, fmt_gpu_hours, fmt_int
from dashboard.charts.text_exprs import duration_text, tier_rank
from dashboard.queries import network as queries
from dashboard.text import code
from engine.topology import FABRIC_TIERS

UTILISATION_POINTS = 400  # time buckets drawn, whatever the run's length
HEATMAP_POINTS = 150
HOT_LINKS = 25
COLOUR_BY = {"mean": "mean_util", "peak": "peak_util"}

st.title("Network")
run = state.run_or_stop()


def fabric_of(tier_names: list[str]) -> str | None:
    """The engine's fabric whose tier names this run's links use (None: a fabric the engine did not build)."""
    return next((name for name, tiers in FABRIC_TIERS.items() if set(tiers) & set(tier_names)), None)


def level_map(fabric: str) -> dict[str, int]:
    return {tier: level for level, tier in enumerate(FABRIC_TIERS[fabric])}


def time_text(column: str) -> pl.Expr:
    return text_exprs.time_text(column, run.started_at)


# ----- the fabric -----------------------------------------------------------------------------------------
st.subheader("Links by tier")
tiers = queries.tiers(run.run_id)
fabric = fabric_of(tiers["tier"].to_list()) if not tiers.is_empty() else None
network_summary = (run.summary or {}).get("network") or {}
if tiers.is_empty():
    st.info("This run has no links table: its fabric was not modelled or observed.")
else:
    cols = st.columns(4)
    cols[0].metric("Links", fmt_int(tiers["links"].sum()))
    cols[1].metric("Tiers", fmt_int(tiers.height))
    cols[2].metric("Capacity", f"{tiers['capacity_gbps'].sum() / 1000:,.1f} Tbps", help="every link's capacity summed")
    cols[3].metric("Fabric", {"roce": "RoCE", "infiniband": "InfiniBand"}.get(fabric, "other"))
    st.plotly_chart(charts.tiers(tiers), width="stretch")
    st.dataframe(tiers.sort(tier_rank("tier"), "tier"),
                 hide_index=True, width="stretch", column_config={
                     c: st.column_config.NumberColumn(format="localized") for c in ("capacity_gbps", "min_link_gbps",
                                                                                 "max_link_gbps")})

# ----- utilisation ----------------------------------------------------------------------------------------
def show_utilisation(samples: int) -> None:
    st.subheader("Utilisation by tier")
    if network_summary:
        cols = st.columns(4)
        cols[0].metric("Demand a GPU", f"{network_summary.get('gbps_per_gpu', 0):g} Gbps",
                       help="network.gbps_per_gpu: each multi-host job's ring traffic a GPU")
        mean, worst = network_summary.get("flagship_slowdown_mean"), network_summary.get("flagship_slowdown_max")
        cols[1].metric("Flagship slowdown", "-" if mean is None else f"{mean:.3f}x",
                       help="mean over the run of the flagship's step time over its step time on an idle network")
        cols[2].metric("Worst flagship slowdown", "-" if worst is None else f"{worst:.3f}x")
        cols[3].metric("Link faults", fmt_int(network_summary.get("link_faults", 0)),
                       help="network incidents plus the fabric's own faults (network.fabric_faults_per_day)")
    utilisation = queries.utilisation_by_tier(run.run_id, UTILISATION_POINTS)
    st.caption(f"{samples:,} link samples, averaged over {fmt_duration(utilisation['bucket_s'][0])} buckets; "
               "dotted: the hottest link of the tier.")
    st.plotly_chart(charts.utilisation(utilisation, run.started_at), width="stretch")


def show_hot_links() -> None:
    st.subheader("Hottest links")
    above_nic = tuple(FABRIC_TIERS[fabric][1:]) if fabric else tuple(
        t for t in tiers["tier"].to_list() if charts.tier_sort_key(t)[0] > 1)
    heat = queries.hot_link_heatmap(run.run_id, above_nic, HOT_LINKS, HEATMAP_POINTS) if above_nic else None
    if heat is None or heat.is_empty():
        st.info("No samples of links between switches in this run.")
    else:
        st.caption(f"The {heat['link_id'].n_unique()} links between switches with the highest mean utilisation, "
                   "over time (rack uplinks and core links).")
        st.plotly_chart(charts.hot_links(heat, run.started_at), width="stretch")
    st.dataframe(queries.hottest_links(run.run_id), hide_index=True, width="stretch")


def show_fabric() -> None:
    st.subheader("The fabric")
    nodes = charts.diagram_nodes(queries.switch_loads(run.run_id), queries.rack_pods(run.run_id),
                                 FABRIC_TIERS[fabric]) if fabric else None
    if nodes is None or nodes.is_empty():
        st.info("This run's switches are not named the way the engine names them, so the fabric cannot be drawn.")
        return
    initial = st.query_params.get("colour", "mean")
    colour = st.radio("Colour switches by", list(COLOUR_BY), horizontal=True,
                      key=state.seed("net_colour", initial if initial in COLOUR_BY else "mean"))
    state.set_url("colour", "" if colour == "mean" else colour)
    st.caption(f"{(nodes['level'] == 0).sum():,} racks, {(nodes['level'] == 1).sum():,} spines and "
               f"{(nodes['level'] == 2).sum():,} core switches, coloured by the {colour} utilisation of their "
               "links; outlined: a link of the switch was down at some point.")
    st.plotly_chart(charts.fabric_diagram(nodes, COLOUR_BY[colour]), width="stretch")


def show_failed_links() -> None:
    st.subheader("Failed and degraded links")
    outages = queries.outages(run.run_id)
    slowed = pl.DataFrame(network_summary.get("slowed") or [], schema={
        "job_id": pl.String, "start_s": pl.Float64, "end_s": pl.Float64, "worst": pl.Float64})
    cols = st.columns(3)
    cols[0].metric("Link outages", fmt_int(outages.height), help="links that went down and came back together")
    cols[1].metric("Jobs stopped", fmt_int(outages["jobs_stopped"].explode().drop_nulls().n_unique()),
                   help="interrupted by the network incident that took the links down")
    cols[2].metric("Jobs slowed", fmt_int(slowed["job_id"].n_unique()),
                   help="ran slower than on an idle network because their busiest path was over capacity")
    if outages.is_empty():
        st.info("No link went down in this run.")
    else:
        st.markdown("**Outages** (a cable: one link; a rack switch: its NIC cables and uplinks; a spine switch: "
                    "its uplinks and core links)")
        st.dataframe(outages.with_columns(
            time_text("from_s").alias("down_at"),
            duration_text(pl.col("until_s") - pl.col("from_s")).alias("down_for"),
            pl.col("jobs_stopped").list.join(", "),
        ).select("down_at", "down_for", "links", "tiers", "a", "b", "jobs_stopped"), hide_index=True,
            width="stretch")
    if not slowed.is_empty():
        st.markdown("**Jobs slowed by the network** (their busiest link over capacity; outages meanwhile: "
                    "links down while they ran slowed, whose load the siblings took)")
        st.dataframe(charts.with_outages_meanwhile(slowed, outages).with_columns(
            time_text("start_s").alias("from"), time_text("end_s").alias("until"),
            pl.col("worst").fill_null(float("inf")).alias("worst_slowdown"),
        ).select("job_id", "from", "until", "worst_slowdown", "outages_meanwhile"), hide_index=True, width="stretch")
    flapping = queries.flapping_links(run.run_id)
    if not flapping.is_empty():
        st.markdown("**Flapping links** (error counters rising, usually before the link fails)")
        st.dataframe(flapping.with_columns(time_text("first_error_s").alias("first_errors"),
                                           time_text("failed_s").alias("failed")).select(
            "link_id", "tier", "a", "b", "errors", "first_errors", "failed"), hide_index=True, width="stretch")


samples = queries.sample_count(run.run_id)
if samples == 0:
    st.subheader("Utilisation by tier")
    st.info("This run has no link telemetry (its link_samples table is empty), so there is no utilisation to "
            "show: simulate with telemetry on (simulation.telemetry) and network.link_samples other than off.")
else:
    show_utilisation(samples)
    show_hot_links()
    show_fabric()
    show_failed_links()

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
        time_text("t_s").alias("time"),
        duration_text("out_s").fill_null("not repaired")
        .alias("out_of_service"),
        pl.col("job_ids").list.join(", "),
    ).select("incident_id", "time", "out_of_service", "link_id", "tier", "a", "b", "hostname", "jobs_hit",
             "job_ids", "gpu_hours_lost"), hide_index=True, width="stretch")
    st.markdown("**Jobs they hit**")
    st.dataframe(queries.jobs_hit(run.run_id), hide_index=True, width="stretch", column_config={
        "incident_gpu_hours_lost": st.column_config.NumberColumn("GPU-h lost in these incidents", format="%.1f")})

# ----- another run's fabric -------------------------------------------------------------------------------
st.subheader("Compare with another run")
others = [info for info in state.list_runs() if info.run_id != run.run_id]
if not fabric or not others or samples == 0:
    st.info("Another run with a modelled fabric is needed to compare (for example `goodput simulate --preset "
            "meta-24k-ib` beside `--preset llama3-405b`).")
    st.stop()
by_id = {info.run_id: info for info in others}
wanted = st.query_params.get("vs", "")
choice = st.selectbox("Second run", ["", *by_id], key=state.seed("net_vs", wanted if wanted in by_id else ""),
                      format_func=lambda r: "pick a run" if not r else f"{by_id[r].name} · {r}")
state.set_url("vs", choice)
if not choice:
    st.stop()
other_tiers = queries.tiers(choice)
other_fabric = fabric_of(other_tiers["tier"].to_list()) if not other_tiers.is_empty() else None
if other_fabric is None or queries.sample_count(choice) == 0:
    st.info(f"Run {code(choice)} has no modelled fabric with link telemetry to compare.")
    st.stop()
labels = {run.run_id: f"{run.name} ({fabric})", choice: f"{by_id[choice].name} ({other_fabric})"}
stats = pl.concat([queries.level_stats(r, level_map(f)).with_columns(run=pl.lit(labels[r]))
                   for r, f in ((run.run_id, fabric), (choice, other_fabric))])
st.dataframe(stats.with_columns(pl.col("level").replace_strict(dict(enumerate(charts.LEVEL_NAMES)),
                                                               return_dtype=pl.String))
             .select("level", "run", "tier", "links", "mean_util", "hottest_link_mean", "max_util", "down_share"),
             hide_index=True, width="stretch")
summaries = {run.run_id: network_summary, choice: (by_id[choice].summary or {}).get("network") or {}}
st.dataframe(pl.DataFrame([{"run": labels[r], "flagship_slowdown_mean": s.get("flagship_slowdown_mean"),
                            "flagship_slowdown_max": s.get("flagship_slowdown_max"),
                            "flagship_progress_rate": s.get("flagship_progress_rate"),
                            "jobs_slowed": len({e["job_id"] for e in s.get("slowed") or []}),
                            "link_faults": s.get("link_faults")} for r, s in summaries.items()],
                          schema={"run": pl.String, "flagship_slowdown_mean": pl.Float64,
                                  "flagship_slowdown_max": pl.Float64, "flagship_progress_rate": pl.Float64,
                                  "jobs_slowed": pl.Int64,
                                  "link_faults": pl.Int64}), hide_index=True, width="stretch")
st.plotly_chart(charts.compare_levels({labels[r]: queries.utilisation_by_level(r, level_map(f), UTILISATION_POINTS)
                                       for r, f in ((run.run_id, fabric), (choice, other_fabric))}), width="stretch")
