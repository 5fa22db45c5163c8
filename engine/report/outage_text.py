"""What people wrote about each outage of a fault history (`goodput ingest node-events`): its reason, its description
and who set it, read from the run's node_events table, one row an incident. The Incidents page and the exports show
them beside each incident, as text.

An outage may merge several events of its node (a DRAIN for a failing GPU, then a DOWN of the same node): its
reason is the distinct reasons of its events in the order they started (then by line read), joined by " | ", and
its description and reporter likewise; `node_events` counts its events. Runs without node events (simulated,
replayed, telemetry, files written before the table existed) have no such rows: their incidents' texts are null.

    outage_text(con)  # incident_id, reason, description, reported_by, node_events
"""

import duckdb
import polars as pl

from engine.store import query_frame

JOIN = " | "  # between the texts of an outage's events (Slurm's own separator: rare inside a reason)
TEXT_COLUMNS = ("reason", "description", "reported_by")
SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.Int32,
    "reason": pl.String,
    "description": pl.String,
    "reported_by": pl.String,
    "node_events": pl.Int32,
}

_EVENTS = """
SELECT incident_id, start_s, line, reason, description, "user" AS reported_by
FROM node_events WHERE incident_id IS NOT NULL
ORDER BY incident_id, start_s, line
"""


def has_node_events(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the run's file has a node_events table with a row (files written before it existed have none)."""
    present = query_frame(
        con, "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'node_events'"
    )["n"][0]
    return bool(present) and bool(query_frame(con, "SELECT EXISTS (SELECT 1 FROM node_events) AS e")["e"][0])


def outage_text(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row an incident that node events made (SCHEMA): its events' distinct texts in their order, joined."""
    if not has_node_events(con):
        return pl.DataFrame(schema=SCHEMA)
    events = query_frame(con, _EVENTS)
    return join_texts(events)


def join_texts(events: pl.DataFrame) -> pl.DataFrame:
    """`events` (incident_id and the TEXT_COLUMNS, in the order they happened) grouped by incident: each text
    column's distinct non-empty values in order, joined by JOIN (null where none has one)."""

    def joined(column: str) -> pl.Expr:
        kept = pl.col(column).filter(pl.col(column).is_not_null() & (pl.col(column) != ""))
        text = kept.unique(maintain_order=True).str.join(JOIN)
        return pl.when(kept.len() > 0).then(text).otherwise(None).alias(column)

    return (
        events.group_by("incident_id", maintain_order=True)
        .agg(*(joined(c) for c in TEXT_COLUMNS), pl.len().alias("node_events"))
        .cast(SCHEMA)
        .select(list(SCHEMA))
    )


def with_outage_text(con: duckdb.DuckDBPyConnection, incidents: pl.DataFrame) -> pl.DataFrame:
    """`incidents` (engine.analysis.incidents.load_incidents) with the SCHEMA's text columns beside each row."""
    text = outage_text(con)
    return incidents.drop([c for c in SCHEMA if c != "incident_id" and c in incidents.columns]).join(
        text, on="incident_id", how="left", maintain_order="left"
    )


def events_of(con: duckdb.DuckDBPyConnection, incident_id: int) -> pl.DataFrame:
    """Every node event merged into one incident, as read: start, end (null while open), Slurm's state, the
    reason, description and user, the cause the causes map gave it, and the file and line it came from."""
    if not has_node_events(con):
        return pl.DataFrame(
            schema={
                "start_s": pl.Float64,
                "end_s": pl.Float64,
                "state": pl.String,
                "reason": pl.String,
                "description": pl.String,
                "user": pl.String,
                "cause": pl.String,
                "source": pl.String,
                "line": pl.Int64,
            }
        )
    return query_frame(
        con,
        'SELECT start_s, end_s, state, reason, description, "user", cause, source, line FROM node_events'
        " WHERE incident_id = ? ORDER BY start_s, line",
        [int(incident_id)],
    )
