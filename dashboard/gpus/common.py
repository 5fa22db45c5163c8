"""What the GPUs page's sections share: figures under their definitions, tables with their columns in words,
and times as the page writes them."""

import polars as pl
import streamlit as st

from dashboard import table_view
from dashboard.charts import gpus as charts
from dashboard.format import fmt_time
from dashboard.text_exprs import time_text
from engine.analysis.definitions import definition
from engine.store import RunInfo

SHOWN_ROWS = 50  # rows of the lemon and repeat-offender tables (their metrics count them all)
SHORT_RUN_S = 3600.0  # in a run shorter than this, times also say their seconds from the run's start


def metric(column, key: str, value: str) -> None:
    """A figure of the ledger (engine.analysis.definitions): its label and its help, wherever it is shown."""
    column.metric(definition(key).label, value, help=definition(key).help)


def figure_column(key: str, **kwargs) -> st.column_config.Column:
    """A table column that shows a registered figure: the figure's label and help."""
    return st.column_config.NumberColumn(definition(key).label, help=definition(key).help, **kwargs)


# How the page's tables show their columns: names in words, counts whole, GPU-hours to one decimal.
COLUMNS = {
    "gpu_id": st.column_config.NumberColumn("GPU", format="%d"),
    "host_id": st.column_config.NumberColumn("host id", format="%d"),
    "hostname": st.column_config.TextColumn("host"),
    "rack_id": st.column_config.NumberColumn("rack", format="%d"),
    "gpu_index": st.column_config.NumberColumn("GPU index", format="%d"),
    "state": st.column_config.TextColumn("state"),
    "temp_c": st.column_config.NumberColumn("temperature (°C)", format="%.0f"),
    "power_w": st.column_config.NumberColumn("power (W)", format="%.0f"),
    "xid_events": figure_column("xid_events", format="%d"),
    "last_xid": st.column_config.TextColumn("last XID"),
    "xid": st.column_config.TextColumn("XID"),
    # wide enough for two or three causes in words ("Faulty GPU", "GPU HBM3 memory") without a cut
    "causes": st.column_config.ListColumn("causes", width="large"),
    "incidents": figure_column("unplanned_incidents", format="%d"),
    "gpu_hours_lost": figure_column("incident_gpu_hours_lost", format="%,.1f"),
    "failures": st.column_config.NumberColumn("repair-sending incidents", format="%d"),
    "most_in_window": st.column_config.NumberColumn("most in one window", format="%d"),
    "flagged": st.column_config.TextColumn("meets the rule at (UTC)"),
    "bad": st.column_config.TextColumn(
        "ground truth",
        help="Whether the simulator drew the host bad: " + definition("bad_hosts_ground_truth").help,
    ),
    "first": st.column_config.TextColumn("first (UTC)"),
    "last": st.column_config.TextColumn("last (UTC)"),
    "time": st.column_config.TextColumn("time (UTC)"),
    "from_start_s": st.column_config.NumberColumn("seconds from start", format="%.3f"),
    "ecc_dbe": st.column_config.NumberColumn("double-bit ECC (most)", format="%d"),
    "ecc_sbe": st.column_config.NumberColumn("single-bit ECC (most)", format="%d"),
    "kind": st.column_config.TextColumn("kind"),
    "what": st.column_config.TextColumn("what"),
    "incident_id": st.column_config.NumberColumn("incident", format="%d"),
}


def table(place, frame: pl.DataFrame) -> None:
    table_view.dataframe(
        frame,
        where=place,
        hide_index=True,
        width="stretch",
        column_config={c: COLUMNS[c] for c in frame.columns if c in COLUMNS},
    )


def times(frame: pl.DataFrame, run: RunInfo, *columns: str) -> pl.DataFrame:
    """Seconds-since-start columns shown as UTC times (column `first_s` becomes `first`)."""
    return frame.with_columns(time_text(c, run.started_at).alias(c.removesuffix("_s")) for c in columns).drop(
        *columns
    )


def in_words(frame: pl.DataFrame) -> pl.DataFrame:
    """States, causes and XIDs as engine.report.palette names them; lost GPU-hours to one decimal."""
    named = {
        "state": charts.gpu_state_text("state"),
        "causes": charts.causes_text("causes"),
        "last_xid": charts.xid_label_text("last_xid"),
        "xid": charts.xid_label_text("xid"),
        "gpu_hours_lost": pl.col("gpu_hours_lost").round(1),
        "bad": pl.when(pl.col("bad")).then(pl.lit("bad")).when(~pl.col("bad")).then(pl.lit("good")),
    }
    return frame.with_columns(expr.alias(c) for c, expr in named.items() if c in frame.columns)


def when(run: RunInfo, t_s: float) -> str:
    """A moment of the run as a UTC date, and for a short run (minutes of a log) its seconds from the start."""
    text = fmt_time(run.started_at, t_s)
    return text + (f" ({t_s:,.1f} s from the start)" if run.duration_s < SHORT_RUN_S else "")
