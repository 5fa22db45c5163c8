"""The Network page's "Degraded links" section: links that kept working, badly.

An observed run's NIC ports (nic_samples, from node_exporter's infiniband collector) running below the fleet's
nominal rate or whose error counters rose, which counter, by how much and when; a simulated run's fail-slow
episodes of cause "network" (a degraded NIC or cable, scenario keys slow.network_*). Host names are table cells,
text only (table_view makes them visible), never Markdown."""

import polars as pl
import streamlit as st

from dashboard import table_view
from dashboard.format import DASH, fmt_int
from dashboard.network.common import metric, number, time_text
from dashboard.queries import network_degraded as queries
from dashboard.text_exprs import duration_text
from engine.analysis.definitions import definition
from engine.report.slow_episodes import ACTION_WORDS
from engine.store import RunInfo


def degraded_section(run: RunInfo) -> None:
    st.subheader("Degraded links")
    if run.kind == "simulate":
        episodes_part(run)
    else:
        ports_part(run)


def episodes_part(run: RunInfo) -> None:
    """The fail-slow episodes of cause network: host, start, duration, slowdown factor, detection, action."""
    episodes = queries.network_episodes(run.run_id)
    if episodes.is_empty():
        st.info(
            "No link was degraded in this run: it had no fail-slow episode of a NIC or cable (turn them on with "
            "--set slow.network_rate=50, episodes per 1,000 host-days)."
        )
        return
    cols = st.columns(2)
    metric(cols[0], "degraded_link_episodes", fmt_int(episodes.height))
    metric(cols[1], "degraded_link_worst_slowdown", f"{episodes['factor'].max():.2f}x")
    table_view.dataframe(
        episodes.with_columns(
            time_text(run, "start_s").alias("start"),
            duration_text("duration_s").alias("duration"),
            # blank where nobody detected it, as the Incidents page's fail-slow table and the definition say
            duration_text(pl.col("detected_s") - pl.col("start_s")).fill_null(DASH).alias("detected"),
            pl.col("action").replace(ACTION_WORDS).fill_null(DASH),
        ).select("hostname", "start", "duration", "factor", "detected", "action"),
        hide_index=True,
        width="stretch",
        column_config={
            "hostname": "Host",
            "start": "Started",
            "duration": "Lasted",
            "factor": number("degraded_link_slowdown", "%.2fx"),
            "detected": st.column_config.TextColumn(
                definition("slow_episode_detected_after").label,
                help=definition("slow_episode_detected_after").help,
            ),
            "action": "Action",
        },
    )


def ports_part(run: RunInfo) -> None:
    """Ports below the nominal rate or with rising error counters."""
    if not queries.has_nic_samples(run.run_id):
        st.info(
            "This run has no NIC port samples, so no degraded link can be shown: ingest node_exporter's "
            "infiniband metrics (goodput ingest node-exporter FILE, or goodput watch with Prometheus)."
        )
        return
    nominal = queries.nominal_rate(run.run_id)
    degraded = queries.degraded_ports(run.run_id, nominal)
    ports = degraded.select("hostname", "device", "port").unique().height
    cols = st.columns(2)
    metric(cols[0], "nominal_port_rate", "-" if nominal is None else f"{nominal:,.0f} Gbps")
    metric(cols[1], "degraded_ports", fmt_int(ports))
    if degraded.is_empty():
        st.info("No degraded link: every NIC port ran at the nominal rate and no error counter rose.")
        return
    table_view.dataframe(
        degraded.with_columns(
            time_text(run, "first_s").alias("first"), time_text(run, "last_s").alias("last")
        ).select("hostname", "device", "port", "problem", "rate_gbps", "rise", "first", "last"),
        hide_index=True,
        width="stretch",
        column_config={
            "hostname": "Host",
            "device": "Device",
            "port": st.column_config.NumberColumn("Port", format="%d"),
            "problem": "Problem",
            "rate_gbps": st.column_config.NumberColumn("Its rate (Gbps)", format="localized"),
            "rise": number("port_error_rise"),
            "first": "First seen",
            "last": "Last seen",
        },
    )
