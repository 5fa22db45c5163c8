"""The Network page's failure sections: links that failed or flapped, with the jobs the network slowed (from the
fabric model's samples), and the switch and cable failures (network incidents) with the jobs they hit. Each is a
tab of the page, drawn only while open (dashboard/lazy.py)."""

import polars as pl
import streamlit as st

from dashboard import table_view
from dashboard.charts import network as charts
from dashboard.format import fmt_gpu_hours, fmt_int
from dashboard.network.common import metric, network_summary, no_telemetry_note, number, time_text
from dashboard.queries import network as queries
from dashboard.text_exprs import duration_text
from engine.analysis.run_summary import RunSummary
from engine.fabric.network_incidents import network_incident_counts
from engine.store import RunInfo


# ----- failed and flapping links --------------------------------------------------------------------------
def failed_links_section(run: RunInfo, samples: int) -> None:
    """Link faults, outages and the jobs the network slowed: the outages, the slowed jobs, the flapping links."""
    st.subheader("Failed and degraded links")
    if samples == 0:
        st.info(no_telemetry_note("no link outage or slowed job can be shown"))
        return
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
            "outages_meanwhile": st.column_config.NumberColumn("Outages meanwhile", format="%,d"),
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
                "gpus": st.column_config.NumberColumn("GPUs", format="%,d"),
                "network_incidents": number("network_job_interruptions"),
                "incident_gpu_hours_lost": st.column_config.NumberColumn(
                    "GPU-h lost in these incidents", format="%,.1f"
                ),
            },
        )
