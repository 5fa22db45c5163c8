"""The Incidents page of a run with no job (a fault history of `goodput ingest node-events`, or telemetry): its
incidents newest first with what people wrote about each outage (reason, description, who), and one outage's node
events as read. Text stays text: it reaches the page in table cells only (dashboard/table_view.py), never as
Markdown."""

import polars as pl
import streamlit as st

from dashboard import table_view
from dashboard.incidents import tables
from dashboard.queries import incidents as queries
from engine.store import RunInfo


def newest_section(run: RunInfo, shown: pl.DataFrame) -> None:
    """A run with no job: the incidents the filters keep, newest first, with what people wrote about each."""
    if shown.is_empty():
        st.info("No incident matches the filters.")
        return
    st.markdown(
        f"**Incidents, newest first** ({shown.height:,}; click a column's header to sort by it). "
        "Reason, description and reporter as the history wrote them."
    )
    table_view.dataframe(
        tables.history_table(run, shown),
        hide_index=True,
        width="stretch",
        column_config=tables.HISTORY_COLUMNS,
    )


def written_section(run: RunInfo, incident_id: int) -> None:
    """What people wrote about an outage of a fault history: each node event it merged, as read (text as text)."""
    events = queries.node_events(run.run_id, incident_id)
    if events.is_empty():
        return
    many = f"the {events.height} node events it merged" if events.height > 1 else "its node event"
    st.markdown(f"**What was written**: {many}, as read")
    table_view.dataframe(tables.events_table(run, events), hide_index=True, width="stretch")
