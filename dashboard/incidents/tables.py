"""The Incidents page's tables for people: causes in words, headers in words, one number format a column, and
a dash where an incident has no value (never "None")."""

import polars as pl
import streamlit as st

from dashboard.format import DASH
from dashboard.text_exprs import cause_label_text, duration_text, time_text
from engine.store import RunInfo


def share_table(counts: pl.DataFrame, key: str) -> pl.DataFrame:
    """A share table of summary_counts (by cause or category) for people: causes in words, GPU-hours whole
    (totals of thousands), a share with no unexpected incident as a dash."""
    named = cause_label_text(key).alias(key) if key == "cause" else pl.col(key).fill_null(DASH)
    return counts.with_columns(
        named,
        pl.col("gpu_hours_lost").round(0),
        pl.col("pct_of_unexpected").round(1).cast(pl.String).fill_null(DASH),
    )


def share_columns(key: str, counted: str) -> dict:
    """Headers in words and one format a column; the name column wide enough for "Host maintenance
    (unplanned)" at 1280 px."""
    return {
        key: st.column_config.TextColumn(key, width=190 if key == "cause" else 150),
        "interruptions": st.column_config.NumberColumn(counted, format="%,d"),
        "unexpected": st.column_config.NumberColumn("unexpected", format="%,d"),
        "gpu_hours_lost": st.column_config.NumberColumn("GPU-h lost", format="localized"),
        "pct_of_unexpected": st.column_config.TextColumn("% of unexpected", alignment="right"),
    }


# The table by cost: headers for people, one format a column, missing places as a dash.
COST_COLUMNS = {
    "incident_id": st.column_config.NumberColumn("incident", format="%d", width=70),
    "time": st.column_config.TextColumn(
        "time", width=150
    ),  # UTC, or from the start where the date is unknown
    "cause": st.column_config.TextColumn("cause", width=205),
    "category": st.column_config.TextColumn("category", width=170),
    "planned": st.column_config.CheckboxColumn("planned", width=70),
    "gpu_hours_lost": st.column_config.NumberColumn("GPU-h lost", format="%,.1f", width=90),
    "jobs_hit": st.column_config.NumberColumn("jobs hit", format="%,d", width=70),
    "jobs": st.column_config.ListColumn("jobs", width=200),
    "hostname": st.column_config.TextColumn("host", width=160),
    "rack_id": st.column_config.TextColumn("rack", width=60, alignment="right"),
    "gpu_id": st.column_config.TextColumn("GPU", width=60, alignment="right"),
    "link_id": st.column_config.TextColumn("link", width=60, alignment="right"),
    "xid": st.column_config.TextColumn("XID", width=60, alignment="right"),
}


# The cost of one incident to each job it hit.
BLAST_COLUMNS = {
    "job_id": st.column_config.TextColumn("job"),
    "name": st.column_config.TextColumn("name"),
    "gpus": st.column_config.NumberColumn("GPUs", format="%,d"),
    "attempt": st.column_config.TextColumn("attempt"),
    "lost_work_s": st.column_config.TextColumn("lost work"),
    "restart_s": st.column_config.TextColumn("restart"),
    "gpu_hours_lost": st.column_config.NumberColumn("GPU-h lost", format="%,.1f"),
}


def cost_table(run: RunInfo, shown: pl.DataFrame) -> pl.DataFrame:
    """The incidents the filters keep, costliest first, as COST_COLUMNS shows them: a place an incident has
    none of (a planned stop has no GPU, most have no link) as a dash, not "None"."""
    places = ("hostname", "rack_id", "gpu_id", "link_id", "xid")
    return (
        shown.sort("gpu_hours_lost", descending=True, nulls_last=True)
        .with_columns(
            time_text("t_s", run.started_at).fill_null(DASH).alias("time"),
            cause_label_text("cause").alias("cause"),
            pl.col("category").fill_null(DASH),
            pl.col("job_names").alias("jobs"),
            *(pl.col(c).cast(pl.String).fill_null(DASH) for c in places),
        )
        .select(*COST_COLUMNS)
    )


# The table of a run with no job (a fault history): no cost to sort by, so newest first; what people wrote about
# each outage beside it, as text (engine.report.outage_text).
HISTORY_COLUMNS = {
    "incident_id": COST_COLUMNS["incident_id"],
    "time": COST_COLUMNS["time"],
    "down_for": st.column_config.TextColumn(
        "down for", width=95, help="From the outage's start to its node's return; open: still out at the end"
    ),
    "hostname": st.column_config.TextColumn("host", width=130),
    "cause": st.column_config.TextColumn("cause", width=170),
    "reason": st.column_config.TextColumn(
        "reason", width=140, help="Slurm's Reason, or the ticket's cause, as written"
    ),
    "description": st.column_config.TextColumn(
        "description", width=330, help="The ticket's text, as written"
    ),
    "reported_by": st.column_config.TextColumn(
        "reported by", width=100, help="Slurm's User (who set the state), or the ticket's user"
    ),
    "category": st.column_config.TextColumn("category", width=110),
    "planned": COST_COLUMNS["planned"],
    "xid": COST_COLUMNS["xid"],
}
STILL_OPEN = "open"


def history_table(run: RunInfo, shown: pl.DataFrame) -> pl.DataFrame:
    """The incidents the filters keep, newest first, as HISTORY_COLUMNS shows them: texts as they were written
    (a cell shows text, never Markdown), a dash where an outage has none."""
    return (
        shown.sort("t_s", "incident_id", descending=True)
        .with_columns(
            time_text("t_s", run.started_at).fill_null(DASH).alias("time"),
            pl.when(pl.col("repaired_s").is_null())
            .then(pl.lit(STILL_OPEN))
            .otherwise(duration_text(pl.col("repaired_s") - pl.col("t_s")))
            .alias("down_for"),
            cause_label_text("cause").alias("cause"),
            pl.col("category").fill_null(DASH),
            *(pl.col(c).cast(pl.String).fill_null(DASH) for c in ("hostname", "xid")),
        )
        .select(*HISTORY_COLUMNS)
    )


def events_table(run: RunInfo, events: pl.DataFrame) -> pl.DataFrame:
    """One outage's node events (engine.report.outage_text.events_of) for people: times in UTC, the cause in words,
    where each was read (file:line)."""
    return events.select(
        time_text("start_s", run.started_at).alias("start"),
        pl.when(pl.col("end_s").is_null())
        .then(pl.lit(STILL_OPEN))
        .otherwise(time_text("end_s", run.started_at))
        .alias("end"),
        "state",
        "reason",
        "description",
        pl.col("user").alias("reported by"),
        cause_label_text("cause").alias("cause"),
        (pl.col("source").str.split("/").list.last() + ":" + pl.col("line").cast(pl.String)).alias(
            "read from"
        ),
    )


def blast_table(cost: pl.DataFrame) -> pl.DataFrame:
    """One incident's cost to each job it hit (engine.analysis.incidents.IncidentDetail.cost), as BLAST_COLUMNS
    shows it: durations in words, as the chain's "after" column writes them."""
    return cost.sort("gpu_hours_lost", descending=True).with_columns(
        pl.col("attempt").cast(pl.String).fill_null(DASH),
        duration_text("lost_work_s").fill_null(DASH),
        duration_text("restart_s").fill_null(DASH),
    )
