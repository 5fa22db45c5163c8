"""The GPUs page of a fault history (`goodput ingest node-events`): a history names nodes, not GPUs, so each node's
GPUs are assumed (the ingest's --gpus-per-node) and take its state. What the page can say is which GPUs were out of
service at t and which hosts kept failing; it says in one line that there is no telemetry, XID or GPU fault to show,
and one GPU opened shows its host's outages."""

import polars as pl
import streamlit as st

from dashboard import fault_history, state, table_view
from dashboard.format import fmt_int
from dashboard.gpus.common import metric
from dashboard.text import md
from dashboard.text_exprs import cause_label_text, duration_text, time_text
from engine.report.palette import OUT_OF_SERVICE_STATES
from engine.store import RunInfo

HOST_OUTAGES = """
SELECT incident_id, t_s, repaired_s, cause, coalesce(planned, false) AS planned
FROM incidents WHERE host_id = ? ORDER BY t_s, incident_id
"""


def history_counts(run: RunInfo, grid: pl.DataFrame) -> None:
    """GPUs in the run and out of service at t; in one line, what a fault history does not hold."""
    out = grid.filter(pl.col("host_state").is_in(OUT_OF_SERVICE_STATES)).height
    cols = st.columns(4)
    metric(cols[0], "gpus_in_run", fmt_int(grid.height))
    metric(cols[1], "gpus_out_of_service", fmt_int(out))
    per_node = fault_history.summary_of(run).get("gpus_per_node")
    assumed = f"{per_node} a node" if per_node else "a node's"
    st.caption(
        fault_history.lacks(run, "telemetry")
        + f" It names nodes, not GPUs: their GPUs ({assumed}) are assumed and take their node's state, out of "
        "service while it is out. Hosts that kept failing are under *Lemons and repeat offenders*."
    )


def host_outages(run: RunInfo, host_id: int, hostname: str) -> None:
    """One GPU opened in a fault history: its host's outages (the history knows nothing of the GPU itself)."""
    outages = state.query(run.run_id, HOST_OUTAGES, (int(host_id),))
    st.markdown(f"**Its host's outages** ({outages.height:,})")
    if outages.is_empty():
        st.caption("Its host was never out in this history.")
        return
    table_view.dataframe(
        outages.select(
            pl.col("incident_id").alias("incident"),
            time_text("t_s", run.started_at).alias("time (UTC)"),
            pl.when(pl.col("repaired_s").is_null())
            .then(pl.lit("open"))
            .otherwise(duration_text(pl.col("repaired_s") - pl.col("t_s")))
            .alias("down for"),
            cause_label_text("cause").alias("cause"),
            "planned",
        ),
        hide_index=True,
        width="stretch",
    )
    st.caption(f"What was written about each outage is on the Incidents page (host {md(hostname)}).")
