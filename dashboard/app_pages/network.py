"""Network: the fabric's links by tier, what each tier carried and how long it was down (over every link),
utilisation by tier over time, the hottest links, the fabric drawn and coloured by load, links that failed or
flapped with the jobs they slowed, degraded links (NIC ports slow or erring, fail-slow NICs and cables), the
network incidents and the jobs they hit, and this run's fabric beside another run's (RoCE against InfiniBand:
?vs=). Every figure is named and explained by engine.analysis.definitions."""

import polars as pl
import streamlit as st

from dashboard import state, table_view
from dashboard.charts import network as charts
from dashboard.format import fmt_duration, fmt_gpu_hours, fmt_int
from dashboard.network.common import (
    TIER_COLUMNS,
    UTILISATION_POINTS,
    fabric_of,
    metric,
    network_summary,
    number,
    tier_table,
    time_text,
)
from dashboard.network.compare import compare_section
from dashboard.network.degraded import degraded_section
from dashboard.queries import network as queries
from dashboard.text_exprs import duration_text, tier_rank
from engine.analysis.run_summary import RunSummary
from engine.fabric.network_incidents import network_incident_counts
from engine.fabric.topology import FABRIC_TIERS
from engine.store import RunInfo

HEATMAP_POINTS = 150
HOT_LINKS = 25
COLOUR_BY = {"mean": "mean_util", "peak": "peak_util"}
FABRIC_NAMES = {"roce": "RoCE", "infiniband": "InfiniBand"}


def page(run_id: str) -> None:
    """The page, top to bottom: the fabric, its utilisation and trouble (where link telemetry exists), the
    network incidents, and another run's fabric beside this one."""
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    tiers, fabric = fabric_section(run)
    figures = queries.tier_figures(queries.tier_coverage(run.run_id), network_summary(run).get("tiers"))
    samples = queries.sample_count(run.run_id)
    if samples == 0:
        no_telemetry(run, figures)
    else:
        show_utilisation(run, samples, figures)
        show_hot_links(run, tiers, fabric, tuple(figures.filter(pl.col("complete"))["tier"]))
        show_fabric(run, fabric)
        show_failed_links(run)
    degraded_section(run)
    incidents_section(run)
    compare_section(run, fabric, figures, samples)


# ----- the fabric -----------------------------------------------------------------------------------------
def fabric_section(run: RunInfo) -> tuple[pl.DataFrame, str | None]:
    """Links by tier; returns the tiers and the engine's fabric they belong to (None: not one it builds)."""
    st.subheader("Links by tier")
    tiers = queries.tiers(run.run_id)
    fabric = fabric_of(tiers["tier"].to_list()) if not tiers.is_empty() else None
    if tiers.is_empty():
        st.info("This run has no links table: its fabric was not modelled or observed.")
        return tiers, fabric
    cols = st.columns(4)
    metric(cols[0], "fabric_links", fmt_int(tiers["links"].sum()))
    metric(cols[1], "fabric_tiers", fmt_int(tiers.height))
    metric(cols[2], "fabric_capacity", f"{tiers['capacity_gbps'].sum() / 1000:,.1f} Tbps")
    metric(cols[3], "fabric_kind", FABRIC_NAMES.get(fabric, "other"))
    st.plotly_chart(charts.tiers(tiers), width="stretch")
    table_view.dataframe(
        tiers.sort(tier_rank("tier"), "tier").with_columns(
            charts.tier_text("tier"),
            pl.col("capacity_gbps").round(0),
            pl.col("min_link_gbps", "max_link_gbps").round(1),
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "tier": "Tier",
            "links": number("fabric_links"),
            "capacity_gbps": number("fabric_capacity", unit=" (Gbps)"),
            "min_link_gbps": st.column_config.NumberColumn("Slowest link (Gbps)", format="localized"),
            "max_link_gbps": st.column_config.NumberColumn("Fastest link (Gbps)", format="localized"),
        },
    )
    return tiers, fabric


# ----- utilisation ----------------------------------------------------------------------------------------
def partial_note(figures: pl.DataFrame) -> str:
    """Which tiers link_samples holds only in part (so nothing of them is drawn from it), with how much."""
    partial = figures.filter(~pl.col("complete") & (pl.col("links_sampled") > 0))
    return " ".join(
        f"{row['tier']}: link_samples holds {row['links_sampled']:,} of its {row['links']:,} links, and those "
        "only at the samples where they were down or logged errors (network.link_samples = switches), a "
        "selection by trouble rather than a sample, so the tier is not drawn from them."
        for row in partial.with_columns(charts.tier_text("tier")).iter_rows(named=True)
    )


def no_telemetry(run: RunInfo, figures: pl.DataFrame) -> None:
    st.subheader("Utilisation by tier")
    if network_summary(run).get("tiers"):
        table_view.dataframe(
            tier_table(figures).select(*TIER_COLUMNS),
            hide_index=True,
            width="stretch",
            column_config=TIER_COLUMNS,
        )
    st.info(
        "This run has no link telemetry (its link_samples table is empty), so there is no utilisation to "
        "show: simulate with telemetry on (simulation.telemetry) and network.link_samples other than off."
    )


def show_utilisation(run: RunInfo, samples: int, figures: pl.DataFrame) -> None:
    st.subheader("Utilisation by tier")
    summary, typed = network_summary(run), RunSummary.from_json(run.summary)
    cols = st.columns(4)
    metric(cols[0], "link_samples", fmt_int(samples))
    if summary:
        metric(cols[1], "gbps_per_gpu", f"{typed.figure('gbps_per_gpu') or 0:g} Gbps")
        mean, worst = typed.figure("flagship_slowdown_mean"), typed.figure("flagship_slowdown_max")
        metric(cols[2], "flagship_slowdown_mean", "-" if mean is None else f"{mean:.3f}x")
        metric(cols[3], "flagship_slowdown_max", "-" if worst is None else f"{worst:.3f}x")
    from_engine = bool(summary.get("tiers"))
    table_view.dataframe(
        tier_table(figures).select(*TIER_COLUMNS),
        hide_index=True,
        width="stretch",
        column_config=TIER_COLUMNS,
    )
    st.caption(
        (
            "Each tier over the whole run, from every link at every sample time (the engine's count while "
            "it routed the traffic). "
            if from_engine
            else "Each tier over the whole run, from link_samples: a tier it does not hold completely has no "
            "figures. "
        )
        + partial_note(figures)
    )
    drawn = tuple(figures.filter(pl.col("complete"))["tier"])
    if not drawn:
        st.info("No tier has a sample of every link at every step, so no utilisation over time is drawn.")
        return
    utilisation = queries.utilisation_by_tier(run.run_id, UTILISATION_POINTS)
    st.caption(
        f"Tiers sampled at every step, averaged over {fmt_duration(utilisation['bucket_s'][0])} buckets: "
        "solid, the mean of the tier's links; dotted, its busiest link."
    )
    st.plotly_chart(
        charts.utilisation(utilisation.filter(pl.col("tier").is_in(drawn)), run.started_at), width="stretch"
    )


HOT_COLUMNS = {
    "link_id": "Link",
    "tier": "Tier",
    "a": "From",
    "b": "To",
    "capacity_gbps": st.column_config.NumberColumn("Capacity (Gbps)", format="localized"),
    "mean_util": st.column_config.NumberColumn("Its mean utilisation (%)", format="%.2f"),
    "max_util": st.column_config.NumberColumn("Its peak utilisation (%)", format="%.2f"),
    "errors": st.column_config.NumberColumn("Errors", format="localized"),
}


def show_hot_links(run: RunInfo, tiers: pl.DataFrame, fabric: str | None, complete: tuple[str, ...]) -> None:
    st.subheader("Hottest links")
    above_nic = tuple(
        t
        for t in (FABRIC_TIERS[fabric][1:] if fabric else tiers["tier"].to_list())
        if t in complete and charts.tier_sort_key(t)[0] > 1
    )
    heat = queries.hot_link_heatmap(run.run_id, above_nic, HOT_LINKS, HEATMAP_POINTS) if above_nic else None
    if heat is None or heat.is_empty():
        st.info("No samples of links between switches in this run.")
    else:
        st.caption(
            f"The {heat['link_id'].n_unique()} links between switches with the highest mean utilisation, "
            "over time (rack uplinks and core links)."
        )
        st.plotly_chart(charts.hot_links(heat, run.started_at), width="stretch")
    table_view.dataframe(
        queries.hottest_links(run.run_id, complete).with_columns(charts.tier_text("tier")),
        hide_index=True,
        width="stretch",
        column_config=HOT_COLUMNS,
    )


def show_fabric(run: RunInfo, fabric: str | None) -> None:
    st.subheader("The fabric")
    nodes = (
        charts.diagram_nodes(
            queries.switch_loads(run.run_id), queries.rack_pods(run.run_id), FABRIC_TIERS[fabric]
        )
        if fabric
        else None
    )
    if nodes is None or nodes.is_empty():
        st.info(
            "This run's switches are not named the way the engine names them, so the fabric cannot be drawn."
        )
        return
    initial = st.query_params.get("colour", "mean")
    colour = st.radio(
        "Colour switches by",
        list(COLOUR_BY),
        horizontal=True,
        key=state.seed("net_colour", initial if initial in COLOUR_BY else "mean"),
    )
    state.set_url("colour", "" if colour == "mean" else colour)
    st.caption(
        f"{(nodes['level'] == 0).sum():,} racks, {(nodes['level'] == 1).sum():,} spines and "
        f"{(nodes['level'] == 2).sum():,} core switches, coloured by the {colour} utilisation of their "
        "links; outlined: the switch was out of service (every link of it down at once) at some point. "
        "A single cable down is in the hover text, not outlined."
    )
    st.plotly_chart(charts.fabric_diagram(nodes, COLOUR_BY[colour]), width="stretch")


def show_failed_links(run: RunInfo) -> None:
    st.subheader("Failed and degraded links")
    summary, typed = network_summary(run), RunSummary.from_json(run.summary)
    outages = queries.outages(run.run_id)
    slowed = pl.DataFrame(
        summary.get("slowed") or [],
        schema={"job_id": pl.String, "start_s": pl.Float64, "end_s": pl.Float64, "worst": pl.Float64},
    )
    jobs_slowed = typed.figure("jobs_slowed")
    cols = st.columns(3)
    link_faults = typed.figure("link_faults")
    if link_faults is not None:
        fabric_faults = summary.get("fabric_faults")  # the network part's own count, no figure of its own
        metric(
            cols[0],
            "link_faults",
            fmt_int(link_faults),
            f" This run: {fmt_int(link_faults - (fabric_faults or 0))} "
            f"from network incidents, {fmt_int(fabric_faults)} of the fabric itself.",
        )
    metric(cols[1], "link_outages", fmt_int(outages.height))
    metric(
        cols[2], "jobs_slowed", fmt_int(slowed["job_id"].n_unique() if jobs_slowed is None else jobs_slowed)
    )
    outages_table(run, outages)
    slowed_table(run, slowed, outages)
    flapping_table(run)


def outages_table(run: RunInfo, outages: pl.DataFrame) -> None:
    """The link outages: when, how long, which links and tiers, and the jobs their incident hit."""
    if outages.is_empty():
        st.info("No link went down in this run.")
        return
    st.markdown(
        "**Outages** (a cable: one link; a rack switch: its NIC cables and uplinks; a spine switch: "
        "its uplinks and core links)"
    )
    table_view.dataframe(
        outages.with_columns(
            time_text(run, "from_s").alias("down_at"),
            duration_text(pl.col("until_s") - pl.col("from_s")).alias("down_for"),
            pl.col("tiers").list.eval(charts.tier_text(pl.element())).list.join(", "),
            pl.col("jobs_stopped").list.join(", ").fill_null("–"),
        ).select("down_at", "down_for", "links", "tiers", "a", "b", "jobs_stopped"),
        hide_index=True,
        width="stretch",
        column_config={
            "down_at": "Down at",
            "down_for": "Down for (to the sampling step)",
            "links": "Links down",
            "tiers": "Tiers",
            "a": "First link from",
            "b": "First link to",
            "jobs_stopped": "Jobs its network incident hit",
        },
    )


def slowed_table(run: RunInfo, slowed: pl.DataFrame, outages: pl.DataFrame) -> None:
    """The jobs the network slowed, their worst step and the outages meanwhile."""
    if slowed.is_empty():
        return
    st.markdown(
        "**Jobs slowed by the network** (their busiest link over capacity; outages meanwhile: "
        "links down while they ran slowed, whose load the siblings took)"
    )
    table_view.dataframe(
        charts.with_outages_meanwhile(slowed, outages)
        .with_columns(
            time_text(run, "start_s").alias("from"),
            time_text(run, "end_s").alias("until"),
            pl.col("worst").fill_null(float("inf")).alias("worst_slowdown"),
        )
        .select("job_id", "from", "until", "worst_slowdown", "outages_meanwhile"),
        hide_index=True,
        width="stretch",
        column_config={
            "job_id": "Job",
            "from": "From",
            "until": "Until",
            "worst_slowdown": st.column_config.NumberColumn("Worst step slowdown", format="%.3fx"),
            "outages_meanwhile": st.column_config.NumberColumn("Outages meanwhile", format="%d"),
        },
    )


def flapping_table(run: RunInfo) -> None:
    """Links whose error counters rose, usually before they failed."""
    flapping = queries.flapping_links(run.run_id)
    if flapping.is_empty():
        return
    st.markdown("**Flapping links** (error counters rising, usually before the link fails)")
    table_view.dataframe(
        flapping.with_columns(
            time_text(run, "first_error_s").alias("first_errors"),
            time_text(run, "failed_s").alias("failed"),
            charts.tier_text("tier"),
        ).select("link_id", "tier", "a", "b", "errors", "first_errors", "failed"),
        hide_index=True,
        width="stretch",
        column_config={
            "link_id": "Link",
            "tier": "Tier",
            "a": "From",
            "b": "To",
            "errors": st.column_config.NumberColumn("Errors", format="localized"),
            "first_errors": "First errors",
            "failed": "Went down",
        },
    )


# ----- network incidents ----------------------------------------------------------------------------------
def incidents_section(run: RunInfo) -> None:
    st.subheader("Switch and cable failures")
    incidents = queries.network_incidents(run.run_id)
    if incidents.is_empty():
        st.info("No switch or cable failure in this run.")
    else:
        counts = network_incident_counts(incidents)
        cols = st.columns(4)
        metric(cols[0], "network_incidents", fmt_int(counts.incidents))
        metric(cols[1], "network_jobs_hit", fmt_int(counts.jobs_hit))
        metric(cols[2], "network_job_interruptions", fmt_int(counts.job_interruptions))
        metric(cols[3], "network_gpu_hours_lost", fmt_gpu_hours(counts.gpu_hours_lost))
        table_view.dataframe(
            incidents.with_columns(
                time_text(run, "t_s").alias("time"),
                duration_text("out_s").fill_null("not repaired").alias("out_of_service"),
                charts.tier_text("tier"),
                pl.col("job_ids").list.join(", "),
            ).select(
                "incident_id",
                "time",
                "out_of_service",
                "link_id",
                "tier",
                "a",
                "b",
                "hostname",
                "jobs_hit",
                "job_ids",
                "gpu_hours_lost",
            ),
            hide_index=True,
            width="stretch",
            column_config={
                "incident_id": "Incident",
                "time": "At",
                "out_of_service": "Out of service for",
                "link_id": "Link",
                "tier": "Tier",
                "a": "From",
                "b": "To",
                "hostname": "Host",
                "jobs_hit": number("jobs_hit"),
                "job_ids": "Jobs",
                "gpu_hours_lost": number("incident_gpu_hours_lost", "%.1f"),
            },
        )
        st.markdown("**Jobs they hit**")
        table_view.dataframe(
            queries.jobs_hit(run.run_id),
            hide_index=True,
            width="stretch",
            column_config={
                "job_id": "Job",
                "name": "Name",
                "kind": "Kind",
                "gpus": st.column_config.NumberColumn("GPUs", format="%d"),
                "network_incidents": number("network_job_interruptions"),
                "incident_gpu_hours_lost": st.column_config.NumberColumn(
                    "GPU-h lost in these incidents", format="%.1f"
                ),
            },
        )


st.title("Network")
state.render_run_page(page, state.run_or_stop())
