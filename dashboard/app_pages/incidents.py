"""Incidents: a review tool for a run's failures and planned stops.

Filters (time window, cause, category, rack, job, planned or unexpected) narrow every part of the page through
engine.analysis.incidents.filter_incidents, the function the exports use; the figures are counted as the Llama 3 paper
counts them (engine.analysis.incidents.summary_counts). Under them, one row of tabs of which only the open one is
drawn (dashboard/lazy.py: every chart and table costs the browser its time, hidden or not): a table sortable by cost,
open by default (drawn faster than the timeline's chart: bench/bench_pages.py); a timeline sized by cost; the figures
by cause and by day; one incident's chain as a Gantt with its blast radius (opened at once by a click on the
timeline or by ?incident=); the run's fail-slow episodes with what each cost (dashboard.incidents.fail_slow);
downloads from engine.report.export.export_run_incidents (the code path of `goodput export incidents`); and "replay
with other settings", which forks the run on the same failures.

A run with no job (a fault history of `goodput ingest node-events`, telemetry) lost no job's GPU-hours: its figures
are the incidents, those still open and the share of unknown cause, its table lists them newest first (the
"Newest first" tab) with what people wrote about each outage (reason, description, who) as text, and one incident
shows the node events it merged.

URL: ?tab= (the open tab's label), ?since=&until= (seconds from the run's start), ?causes=, ?categories=, ?racks=,
?jobs= (comma-separated), ?planned= (planned, unexpected), ?incident= (id), ?anon=1 and ?replay= (the forked run)
reproduce the view.
"""

from dataclasses import dataclass

import polars as pl
import streamlit as st

from dashboard import chart_view, fault_history, lazy, state, table_view
from dashboard.charts import incidents as charts
from dashboard.format import fmt_duration, fmt_gpu_hours, fmt_int, fmt_pct, fmt_time
from dashboard.incidents import history, tables, tabs
from dashboard.incidents.fail_slow import fail_slow_section
from dashboard.incidents.filters import filters_section
from dashboard.incidents.replay import replay_section
from dashboard.incidents.tabs import (
    BY_CAUSE,
    BY_COST,
    EXPORT,
    FAIL_SLOW,
    NEWEST,
    ONE_INCIDENT,
    REPLAY,
    TIMELINE,
)
from dashboard.queries import incidents as queries
from dashboard.queries import slow_episodes
from dashboard.text import code, md
from dashboard.text_exprs import duration_text, time_text
from engine.analysis.definitions import definition
from engine.analysis.incidents import filter_incidents, summary_counts
from engine.report.palette import cause_label
from engine.report.visible_text import visible
from engine.store import RunInfo
from engine.units import SECONDS_PER_DAY

FORMATS = {"csv": "CSV", "json": "JSON", "parquet": "Parquet", "html": "HTML report"}


def page(run_id: str) -> None:
    """The page, top to bottom: filters and the figures they keep, then one row of tabs: the table by cost,
    the timeline, the figures by cause and by day, one incident's chain and blast radius, fail-slow episodes,
    exports, and the run replayed with other settings."""
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    everything = queries.incidents(run.run_id)
    if everything.is_empty():
        st.info("This run has no incidents: nothing failed and nothing was planned.")
        fail_slow_section(run)
        return
    window, filters = filters_section(run, everything)
    shown = filter_incidents(everything, **filters)
    flagship = queries.flagship(run.run_id)
    jobs = queries.has_jobs(run.run_id)
    figures = counted_section(run, everything, shown, window, flagship, jobs)
    exported = Export(filters, anonymised(run))
    table = (
        {BY_COST: lambda: cost_section(run, shown)}
        if jobs
        else {NEWEST: lambda: history.newest_section(run, shown)}
    )
    sections = {
        **table,
        TIMELINE: lambda: timeline_section(run, shown, jobs),
        BY_CAUSE: lambda: by_cause_section(run, shown, figures, window, flagship, jobs),
        ONE_INCIDENT: lambda: incident_section(run, everything, shown, exported, jobs),
        FAIL_SLOW: lambda: fail_slow_section(run),
        EXPORT: lambda: export_section(run, shown, filters),
        REPLAY: lambda: replay_section(run, flagship),
    }
    if not slow_episodes.slowness_on(run):
        del sections[FAIL_SLOW]  # a run without slowness has no episodes to list
    tabs.open_linked()  # a link to an incident opens it at once
    lazy.tabs(sections)


@dataclass(frozen=True)
class Export:
    """What every download on the page shares: the filters it applies and whether names are pseudonyms."""

    filters: dict
    anonymise: bool


def with_time(run: RunInfo, column: str = "t_s", alias: str = "time") -> pl.Expr:
    return time_text(column, run.started_at).alias(alias)


# ----- counted as the Llama 3 paper counts them -----------------------------------------------------------
def counted_section(
    run: RunInfo,
    everything: pl.DataFrame,
    shown: pl.DataFrame,
    window: tuple[float | None, float | None],
    flagship: str | None,
    jobs: bool = True,
) -> dict:
    """The figures of the incidents the filters keep; returns them (engine.analysis.incidents.summary_counts)."""
    since_s, until_s = window
    days = ((until_s if until_s is not None else run.duration_s) - (since_s or 0.0)) / SECONDS_PER_DAY
    figures = summary_counts(shown, days, job=flagship)
    span = f"{days:,.1f} days" if days >= 1 else fmt_duration(days * SECONDS_PER_DAY)
    if flagship:
        st.subheader("Interruptions of the flagship job")
        st.caption(
            f"Counted as the Llama 3 paper counts its 466: interruptions of the flagship job {code(flagship)}, "
            f"among the {shown.height:,} incidents the filters keep ({everything.height:,} in the run), "
            f"over {span}."
        )
        shown_figures = (
            ("interruptions", fmt_int(figures["total"])),
            ("unexpected_interruptions", fmt_int(figures["unexpected"])),
            ("planned_interruptions", fmt_int(figures["planned"])),
            ("hardware_share", fmt_pct(figures["hardware_share"], 0)),
            # a rate from less than a day of data says nothing: the count and the span say it instead
            (
                "interruptions_per_day",
                "–" if figures["per_day"] is None or days < 1 else f"{figures['per_day']:.1f}",
            ),
            ("interruption_gpu_hours_lost", fmt_gpu_hours(figures["gpu_hours_lost"])),
        )
    elif not jobs:
        # no job at all (a fault history, telemetry): no GPU-hours lost to count, but outages open and unknown
        st.subheader("Incidents")
        what = (
            "A fault history: each outage of a node is an incident"
            if fault_history.is_fault_history(run)
            else "This run has no jobs"
        )
        st.caption(
            f"{what}; {shown.height:,} the filters keep ({everything.height:,} in the run), over {span}. "
            "No job ran in it, so none lost GPU-hours."
        )
        unknown = int((shown["cause"] == "unknown").sum())
        shown_figures = (
            ("incidents", fmt_int(figures["total"])),
            ("open_incidents", fmt_int(shown["repaired_s"].null_count())),
            ("unknown_cause_incidents", fmt_pct(unknown / shown.height) if shown.height else "–"),
        )
    else:
        # no flagship job (a replayed trace, ingested telemetry): nothing here is an interruption of it
        st.subheader("Incidents")
        st.caption(
            f"This run has no flagship job, so every incident is counted: {shown.height:,} the filters keep "
            f"({everything.height:,} in the run), over {span}."
        )
        shown_figures = (
            ("incidents", fmt_int(figures["total"])),
            ("incident_gpu_hours_lost", fmt_gpu_hours(figures["gpu_hours_lost"])),
        )
    # rows of three: six side by side cut the longer labels ("GPU-hours lost to interruptions") short
    for row in range(0, len(shown_figures), 3):
        for column, (key, value) in zip(st.columns(3), shown_figures[row : row + 3], strict=False):
            column.metric(definition(key).label, value, help=definition(key).help)
    return figures


def by_cause_section(
    run: RunInfo,
    shown: pl.DataFrame,
    figures: dict,
    window: tuple[float | None, float | None],
    flagship: str | None,
    jobs: bool = True,
) -> None:
    """The figures above by cause (a chart, then a table by category and one by cause) and a day's count; no
    GPU-hours column in a run with no job to lose them."""
    counted = "interruptions" if flagship else "incidents"
    if not figures["total"]:
        st.info(f"No {counted} among the incidents the filters keep.")
        return
    st.caption(f"The {counted} counted above by cause and category, and by day (planned or unexpected).")
    # the chart above its tables, each as wide as the page: beside the chart, their five columns were cut
    chart_view.plotly(charts.by_cause(figures["by_cause"]), width="stretch")
    for key in ("category", "cause"):
        shares = tables.share_table(figures[f"by_{key}"], key)
        table_view.dataframe(
            shares if jobs else shares.drop("gpu_hours_lost"),
            hide_index=True,
            width="stretch",
            column_config=tables.share_columns(key, counted),
        )
    since_s, until_s = window
    per_day = queries.days_in_window(
        shown, since_s, until_s if until_s is not None else run.duration_s, job=flagship
    )
    chart_view.plotly(charts.per_day(per_day, run.started_at), width="stretch")


# ----- timeline and table ---------------------------------------------------------------------------------
def timeline_section(run: RunInfo, shown: pl.DataFrame, jobs: bool = True) -> None:
    """The timeline (a click opens an incident in the One incident tab)."""
    if shown.is_empty():
        st.info("No incident matches the filters.")
        return
    sized = (
        "marker area follows the GPU-hours each cost" if jobs else "no job ran, so every marker is one size"
    )
    st.caption(f"{shown.height:,} incidents; {sized}. Click one to open it in the {ONE_INCIDENT} tab.")
    chart_view.plotly(
        charts.timeline(shown, run.started_at),
        width="stretch",
        on_select=lambda: tabs.open_clicked(run.run_id),
        selection_mode="points",
        key=tabs.timeline_key(run.run_id),
    )


def cost_section(run: RunInfo, shown: pl.DataFrame) -> None:
    """The incidents the filters keep in a table, costliest first."""
    if shown.is_empty():
        st.info("No incident matches the filters.")
        return
    st.markdown(f"**Incidents by cost** ({shown.height:,}; click a column's header to sort by it)")
    table_view.dataframe(
        tables.cost_table(run, shown),
        hide_index=True,
        width="stretch",
        column_config=tables.COST_COLUMNS,
    )


# ----- exports --------------------------------------------------------------------------------------------
def anon_key(run: RunInfo) -> str:
    return f"incidents_anon:{run.run_id}"


def anonymised(run: RunInfo) -> bool:
    """Whether downloads anonymise names: the Export tab's toggle, kept in the URL (?anon=1) for the other tabs."""
    return bool(st.session_state.get(anon_key(run), st.query_params.get("anon") == "1"))


def export_section(run: RunInfo, shown: pl.DataFrame, filters: dict) -> None:
    anonymise = st.toggle(
        "Anonymise (hostnames, job names and users become stable pseudonyms)",
        key=state.seed(anon_key(run), st.query_params.get("anon") == "1"),
        help=f"The {ONE_INCIDENT} tab's download follows it too",
    )
    state.set_url("anon", "1" if anonymise else "")
    download_row(
        run,
        f"The filtered set ({shown.height:,} incidents), as `goodput export incidents` writes it",
        None,
        Export(filters, anonymise),
    )


def download_row(run: RunInfo, label: str, incident_id: int | None, exported: Export) -> None:
    """One button per format; the bytes are made when clicked (an HTML report embeds plotly.js)."""
    st.markdown(label)
    cols = st.columns(len(FORMATS))
    for col, (fmt, name) in zip(cols, FORMATS.items(), strict=True):
        file_name = queries.export_file_name(
            run.run_id, fmt, incident_id=incident_id, anonymise=exported.anonymise
        )
        col.download_button(
            name,
            lambda fmt=fmt: queries.export_bytes(
                run.run_id,
                fmt,
                anonymise=exported.anonymise,
                incident_id=incident_id,
                filters=exported.filters,
            ),
            file_name=file_name,
            mime=queries.MIME[fmt],
            help=f"saves {file_name}",
            on_click="ignore",
            key=f"incidents_download:{fmt}:{incident_id}",
            icon=":material/download:",
        )


# ----- one incident ---------------------------------------------------------------------------------------
def incident_section(
    run: RunInfo, everything: pl.DataFrame, shown: pl.DataFrame, exported: Export, jobs: bool = True
) -> None:
    """The incident chooser and the chosen one's chain, blast radius and downloads."""
    chosen = choose_incident(run, everything, shown, jobs)
    if chosen is None:
        st.caption(f"Choose an incident above, or click one on the {TIMELINE} tab's chart.")
    else:
        drill_down(run, everything, chosen, exported, jobs)


def choose_incident(
    run: RunInfo, everything: pl.DataFrame, shown: pl.DataFrame, jobs: bool = True
) -> int | None:
    """The incident opened: clicked on the timeline (open_clicked) or chosen, else the URL's (?incident=). Listed
    costliest first, or newest first in a run with no job."""
    order = ("gpu_hours_lost",) if jobs else ("t_s", "incident_id")
    ids = shown.sort(order, descending=True, nulls_last=True)["incident_id"].to_list()
    key = tabs.incident_key(run.run_id)
    try:
        wanted = (
            st.session_state[key] if key in st.session_state else int(st.query_params.get("incident", ""))
        )
    except ValueError:
        wanted = None
    if wanted is not None and wanted not in ids and wanted in everything["incident_id"].to_list():
        ids = [wanted, *ids]  # the chosen incident stays choosable when the filters leave it out
    if wanted not in ids:
        wanted = st.session_state[key] = None
    by_id = {row["incident_id"]: row for row in everything.iter_rows(named=True)}
    chosen = st.selectbox(
        "Incident (costliest first)" if jobs else "Incident (newest first)",
        ids,
        key=state.seed(key, wanted),
        format_func=lambda i: visible(
            f"{i} · {cause_label(by_id[i]['cause'])} · {fmt_time(run.started_at, by_id[i]['t_s'])}"
        ),
        placeholder="Choose an incident to see its chain",
    )
    state.set_url("incident", "" if chosen is None else str(chosen))
    return chosen


def after_fault_text(seconds: pl.Expr) -> pl.Expr:
    """How long after the fault a step came; the checkpoint a job restarts from came before it."""
    return pl.when(seconds < 0).then(duration_text(-seconds) + " before").otherwise(duration_text(seconds))


def drill_down(
    run: RunInfo, everything: pl.DataFrame, incident_id: int, exported: Export, jobs: bool = True
) -> None:
    row = everything.row(by_predicate=pl.col("incident_id") == incident_id, named=True)
    detail = queries.detail(run.run_id, incident_id)
    cols = st.columns(4)
    cols[0].metric("Cause", md(cause_label(row["cause"])))  # a cause or category read from input: as text
    cols[1].metric("Category", md(row["category"] or "–"))
    # with no job in the run nothing lost GPU-hours (a zero would read as measured), and a fault history knows
    # when a node went out, not when anyone noticed (its detection time is its start)
    if jobs:
        cols[2].metric(
            definition("incident_cost").label,
            fmt_gpu_hours(detail.gpu_hours_lost),
            help=definition("incident_cost").help,
        )
        cols[3].metric(
            definition("incident_detected_after").label,
            fmt_duration(row["detected_s"] - row["t_s"]),
            help=definition("incident_detected_after").help,
        )
    where = [
        f"host {md(row['hostname'])} (rack {row['rack_id']})" if row["hostname"] else None,
        f"GPU {row['gpu_id']}" if row["gpu_id"] is not None else None,
        f"link {row['link_id']}" + (" (the rack switch's uplink: the whole rack)" if row["rack_wide"] else "")
        if row["link_id"] is not None
        else None,
        f"XID {row['xid']}" if row["xid"] is not None else None,
    ]
    st.markdown(
        f"**Where**: {', '.join(w for w in where if w) or 'no single host (planned or job-wide)'}; "
        f"{'planned' if row['planned'] else 'unexpected'}; at {fmt_time(run.started_at, row['t_s'])}"
        + (
            f", back after {fmt_duration(row['repaired_s'] - row['t_s'])}."
            if row["repaired_s"] is not None
            else ("; still open at the end of the run." if not jobs else ".")
        )
    )
    history.written_section(run, incident_id)
    st.markdown("**Its chain**, in hours from the fault (a bar lasts until the next step)")
    chart_view.plotly(
        charts.chain_figure(detail.chain), width="stretch", key=f"incidents_chain:{incident_id}"
    )
    table_view.dataframe(
        detail.chain.with_columns(
            with_time(run), after_fault_text(pl.col("t_s") - row["t_s"]).alias("after")
        ).select("step", "time", "after", "what", "detail"),
        hide_index=True,
        width="stretch",
    )

    st.markdown("**Blast radius**")
    cols = st.columns(4)
    figures = (
        (cols[0], "incident_gpus_hit", fmt_int(len(detail.gpus))),
        (cols[1], "incident_hosts_taken_out", fmt_int(len(detail.hosts))),
        (cols[2], "jobs_hit", fmt_int(len(detail.jobs))),
        (cols[3], "incident_lost_time", fmt_duration(detail.lost_work_s + detail.restart_s)),
    )
    for column, key, value in figures if jobs else figures[:2]:  # no job to hit or to lose time
        column.metric(definition(key).label, value, help=definition(key).help)
    if detail.hosts:
        st.caption(
            "Hosts taken out of service: " + ", ".join(map(md, queries.hostnames(run.run_id, detail.hosts)))
        )
    if detail.cost.height:
        table_view.dataframe(
            tables.blast_table(detail.cost),
            hide_index=True,
            width="stretch",
            column_config=tables.BLAST_COLUMNS,
        )
    xids = queries.xid_events(run.run_id, incident_id)
    if not xids.is_empty():
        st.markdown("**XID events**")
        table_view.dataframe(xids.with_columns(with_time(run)).drop("t_s"), hide_index=True, width="stretch")
    anonymised_note = f" (anonymised, as set in the {EXPORT} tab)" if exported.anonymise else ""
    download_row(run, f"Incident {incident_id} with its chain{anonymised_note}", incident_id, exported)


st.title("Incidents")
state.render_run_page(page, state.run_or_stop())
