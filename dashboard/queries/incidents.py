"""Incidents page queries: the run's incidents and one incident's detail from engine.analysis.incidents (the code the
exports use), the URL's filters as engine.analysis.incidents.filter_incidents keywords, export bytes and file names,
and the figures of two runs side by side after "replay with other settings"."""

import math
from datetime import timedelta

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.format import DASH, fmt_gpu_hours, fmt_int, fmt_pct, fmt_usd
from engine.analysis.incidents import (
    FLAGSHIP_JOB_SQL,
    IncidentDetail,
    incident_detail,
    load_incidents,
    summary_counts,
)
from engine.analysis.run_summary import RunSummary
from engine.report.export import export_run_incidents
from engine.report.outage_text import events_of, with_outage_text
from engine.store import RunInfo
from engine.units import SECONDS_PER_DAY


def incidents(run_id: str) -> pl.DataFrame:
    """engine.analysis.incidents.load_incidents of the run (hostname, rack, jobs hit and their names) with what people
    wrote about each outage of a fault history (engine.report.outage_text: reason, description, reported_by), cached
    per file version like every other query."""
    s = state.store()
    return _incidents(str(s.root), run_id, state.file_version(s, run_id))


@st.cache_data(max_entries=64, ttl=timedelta(hours=1), show_spinner=False)
def _incidents(root: str, run_id: str, version: int) -> pl.DataFrame:
    con = state.cursor(run_id)
    try:
        return with_outage_text(con, load_incidents(con))
    finally:
        con.close()


def detail(run_id: str, incident_id: int) -> IncidentDetail:
    """The incident's chain, per-job cost and blast radius (engine.analysis.incidents.incident_detail)."""
    con = state.cursor(run_id)
    try:
        return incident_detail(con, incident_id)
    finally:
        con.close()


def node_events(run_id: str, incident_id: int) -> pl.DataFrame:
    """Every node event merged into one incident of a fault history, as read (engine.report.outage_text.events_of)."""
    con = state.cursor(run_id)
    try:
        return events_of(con, incident_id)
    finally:
        con.close()


def has_jobs(run_id: str) -> bool:
    return bool(state.query(run_id, "SELECT EXISTS (SELECT 1 FROM jobs) AS e")["e"][0])


def flagship(run_id: str) -> str | None:
    ids = state.query(run_id, FLAGSHIP_JOB_SQL)
    return ids["job_id"][0] if ids.height else None


def xid_events(run_id: str, incident_id: int) -> pl.DataFrame:
    return state.query(
        run_id,
        "SELECT t_s, gpu_id, host_id, xid, message FROM xid_events WHERE incident_id = ? ORDER BY t_s",
        (incident_id,),
    )


def hostnames(run_id: str, host_ids: list[int]) -> list[str]:
    names = state.query(
        run_id,
        "SELECT host_id, coalesce(hostname, CAST(host_id AS VARCHAR)) AS name FROM hosts"
        " WHERE list_contains(?, host_id) ORDER BY host_id",
        ([int(h) for h in host_ids],),
    )
    return names["name"].to_list()


# ----- filters --------------------------------------------------------------------------------------------

PLANNED = {"planned": True, "unexpected": False}


def filter_keywords(
    *,
    since_s: float | None,
    until_s: float | None,
    causes: list[str],
    categories: list[str],
    racks: list[int],
    jobs: list[str],
    planned: str,
) -> dict:
    """The page's choices as engine.analysis.incidents.filter_incidents keywords: an empty choice filters nothing (the
    page says "every cause"), so it is left out rather than passed as an empty list (which matches nothing)."""
    keywords: dict = {"since_s": since_s, "until_s": until_s, "planned": PLANNED.get(planned)}
    for name, values in (("causes", causes), ("categories", categories), ("racks", racks), ("jobs", jobs)):
        if values:
            keywords[name] = list(values)
    return {k: v for k, v in keywords.items() if v is not None}


def url_seconds(text: str | None, low: float, high: float) -> float | None:
    """?since= or ?until= as seconds from the run's start, clipped to [low, high]; anything else None."""
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    if value is None or not math.isfinite(value):
        return None
    return min(max(value, low), high)


def days_in_window(
    frame: pl.DataFrame, since_s: float | None, until_s: float, *, job: str | None = None
) -> pl.DataFrame:
    """Planned and unexpected interruptions (of `job`, if given) for every day of the run that the window
    [since_s, until_s) touches, days counted from the run's start (engine.analysis.incidents.summary_counts's
    bins, which start at day 0, shifted to the window's first day)."""
    first = int((since_s or 0.0) // SECONDS_PER_DAY)
    shifted = frame.with_columns(pl.col("t_s") - first * SECONDS_PER_DAY)
    days = summary_counts(shifted, (until_s - first * SECONDS_PER_DAY) / SECONDS_PER_DAY, job=job)["days"]
    return days.with_columns(pl.col("day") + first)


# ----- exports --------------------------------------------------------------------------------------------

MIME = {
    "csv": "text/csv",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
    "html": "text/html",
}


def export_file_name(
    run_id: str, fmt: str, *, incident_id: int | None = None, anonymise: bool = False
) -> str:
    """incidents-<run>.csv for the filtered set, incident-<id>-<run>.csv for one; "-anon" when anonymised."""
    what = f"incident-{incident_id}" if incident_id is not None else "incidents"
    return f"{what}-{run_id}{'-anon' if anonymise else ''}.{fmt}"


def export_bytes(
    run_id: str,
    fmt: str,
    *,
    anonymise: bool = False,
    incident_id: int | None = None,
    filters: dict | None = None,
) -> bytes:
    """The export's bytes from engine.report.export.export_run_incidents: the same code path as
    `goodput export incidents`."""
    return export_run_incidents(
        state.store(), run_id, fmt, anonymise=anonymise, incident_id=incident_id, **(filters or {})
    )


# ----- replay with other settings -------------------------------------------------------------------------


def run_cost_usd(summary: RunSummary) -> float | None:
    """The flagship job's losses in dollars (the summary's losses_usd: lost work, restarts, checkpoints,
    waiting for spares), None when the run has no such figures."""
    losses = summary.job.losses_usd if summary.job is not None else None
    return float(sum(losses.values())) if losses else None


# (label, definition, formatter): the figures of two runs side by side, each read where its definition says
SIDE_BY_SIDE = (
    ("ETTR", "ettr", fmt_pct),
    ("interruptions", "interruptions", fmt_int),
    ("unexpected", "unexpected_interruptions", fmt_int),
    ("lost GPU-hours", "goodput_lost", fmt_gpu_hours),
)


def side_by_side(before: RunInfo, after: RunInfo) -> pl.DataFrame:
    """ETTR, interruptions, lost GPU-hours and the cost of the losses of two runs, formatted, one column each."""
    columns: dict[str, list[str]] = {
        "figure": [label for label, _, _ in SIDE_BY_SIDE] + ["cost of the losses"]
    }
    for info in (before, after):
        summary = RunSummary.from_json(info.summary)
        values = [
            DASH if summary.figure(key) is None else fmt(summary.figure(key)) for _, key, fmt in SIDE_BY_SIDE
        ]
        cost = run_cost_usd(summary)
        values.append(fmt_usd(cost))
        columns[f"{info.name} ({info.run_id})"] = values
    return pl.DataFrame(columns)
