"""Overview: the page people open.

The selected run's goodput (ETTR) and what it lost, how ETTR moved over the run, what interrupted the flagship
job, and which hosts are down at a chosen time (the end of the run unless ?t= in the URL says otherwise). The
losses' waterfall and ETTR over time are two tabs of which only the open one is drawn (?tab=Losses, the default,
or ?tab=ETTR over time). The charts (hosts by state, the losses, the causes) lie under the first screen: drawn once
the reader scrolls to them, or at once where ?tab= asks for one (dashboard/lazy.below_fold).
Runs without a simulator summary (replayed or ingested) show what their tables allow.
"""

from datetime import timedelta

import polars as pl
import streamlit as st

from dashboard import chart_view, fault_history, lazy, state, table_view
from dashboard.charts import overview as charts
from dashboard.format import fmt_duration, fmt_gpu_hours, fmt_hours, fmt_int, fmt_pct, fmt_run_time, fmt_time
from dashboard.queries import overview as q
from dashboard.queries import summary as summaries
from dashboard.text import md
from dashboard.time_slider import moment_slider, time_axis
from engine.analysis.analytics import ettr_timeline
from engine.analysis.definitions import definition
from engine.analysis.run_summary import RunSummary
from engine.ingest.watch import source_states
from engine.report.palette import cause_label
from engine.store import RunInfo
from engine.store.run import start_known
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

TIME_PARAM = "t"
# the tabs of where the flagship job's time went (?tab=)
LOSSES_TAB = "Losses"
ETTR_TAB = "ETTR over time"
OBSERVED_JOBS_SHOWN = 20  # rows of a watched cluster's jobs that lost the most (the count says how many did)


def page(run_id: str) -> None:
    """Every section of the page. Reads the run again on each call: a live-ingest run grows between reruns."""
    run = state.store().info(run_id)
    every = state.live_refresh_s(run)
    watched = isinstance(run.scenario, dict) and run.scenario.get("source") == "watch"
    if every:
        st.caption(state.live_note(run, every))
    summary = RunSummary.from_json(run.summary)
    sizes = q.host_count(run.run_id)
    flagship = q.flagship_job(run.run_id)
    run_caption(run, sizes, flagship)
    if watched:
        watch_section(run)
    timeline = flagship_timeline(run, flagship)
    headline_section(run, summary, timeline)
    # what an operator looks for first, right under the headline: which hosts are out of service
    moment = what_is_down(run, sizes)
    # under the headline and what is down (a 1000 px screen's worth): drawn once the user scrolls near them, or at
    # once where a link opens one of the tabs (?tab=). Their charts cost a second visit about 0.25 s in the
    # browser, and a first visit a second more: with no chart in view, Plotly's code is not even loaded
    lazy.below_fold(
        f"overview_below:{run.run_id}",
        "Hosts by state, the flagship job's losses and what interrupted it",
        lambda: charts_below(run, summary, flagship, timeline, moment),
        url_keys=(lazy.TAB_PARAMETER,),
    )


def charts_below(
    run: RunInfo,
    summary: RunSummary,
    flagship: dict | None,
    timeline: pl.DataFrame | None,
    moment: float | None,
) -> None:
    """What lies under what is down: the hosts by state at its moment (None: none to show), then where the
    flagship job's time went and what interrupted it (else what the GPUs reported)."""
    if moment is not None:
        states = q.state_counts_at(run.run_id, moment, run.duration_s)
        if states.height:
            chart_view.plotly(charts.hosts_by_state(states), key="states_at")
    losses_section(run, summary, flagship, timeline)
    counts = causes_section(run, summary)
    if counts.height == 0 or counts["count"].sum() == 0:
        xids_section(run)


def run_caption(run: RunInfo, sizes: dict, flagship: dict | None) -> None:
    """The run in one line: name, kind, span, size, seed and flagship job."""
    end = run.started_at + timedelta(seconds=run.duration_s)
    # a boot-relative kernel log has no date (engine.store.run.start_known): its span, never an invented 1970 date
    span = (
        f"{run.started_at:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M} UTC"
        if start_known(run.started_at)
        else f"date unknown (times from the start), {fmt_duration(run.duration_s)} long"
    )
    st.caption(
        f"**{md(run.name)}** · {md(run.kind)} · {span} "
        f"({run.duration_s / SECONDS_PER_DAY:.1f} days) · {fmt_int(sizes['gpus'])} GPUs "
        f"on {fmt_int(sizes['hosts'])} hosts"
        + (f" · seed {run.seed}" if run.seed is not None else "")
        + (
            f" · flagship job **{md(flagship['name'])}** on {fmt_int(flagship['gpus'])} GPUs"
            if flagship
            else ""
        )
    )


# ----- headline figures -------------------------------------------------------------------------------------
def flagship_timeline(run: RunInfo, flagship: dict | None) -> pl.DataFrame | None:
    """The flagship job's ETTR over time from its attempts and checkpoints; None without a flagship's attempts."""
    if flagship:
        attempts, checkpoints = q.attempts_and_checkpoints(run.run_id, flagship["job_id"])
        if attempts.height:
            return ettr_timeline(
                attempts, checkpoints, flagship["job_id"], q.timeline_bucket(run.duration_s), run.duration_s
            )
    return None


def headline_section(run: RunInfo, summary: RunSummary, timeline: pl.DataFrame | None) -> None:
    """The headline figures in rows of cards (ETTR from the attempts where the summary has none; the run's
    tables' figures where it has nothing)."""
    figures = summaries.headline(summary)
    if (
        summary.figure("ettr") is None
        and timeline is not None
        and timeline["ettr_cumulative"].drop_nulls().len()
    ):
        ettr = timeline["ettr_cumulative"].drop_nulls()[-1]
        figures.insert(
            0,
            summaries.Headline(
                definition("ettr_from_attempts").label,
                fmt_pct(ettr),
                help=definition("ettr_from_attempts").help,
            ),
        )
    if summary.figure("ettr") is None and timeline is None:
        if fault_history.is_fault_history(run):
            # outages of nodes and nothing else: what it is, what the ingest noted, and its own figures
            st.info(
                fault_history.outline(run) + " It has no jobs or GPU telemetry, so there is no ETTR to show."
            )
            notes = fault_history.ingest_notes(run)
            if notes:
                st.caption("The ingest noted: " + "; ".join(notes) + ".")
            figures = figures or q.history_headline(run.run_id)
        else:
            st.info(
                f"This {run.kind} run has no flagship training job, so there is no ETTR to show; "
                "here is what it holds."
            )
    if not figures:
        figures = q.table_headline(run.run_id)

    PER_ROW = 3  # wide enough cards that "1.6k GPU-h" and its note never get cut off
    for first in range(0, len(figures), PER_ROW):
        row = figures[first : first + PER_ROW]
        for column, figure in zip(st.columns(PER_ROW), row, strict=False):
            column.metric(
                figure.label,
                figure.value,
                figure.delta,
                help=figure.help,
                border=True,
                delta_color="normal" if figure.trend else "off",
                delta_arrow="auto" if figure.trend else "off",
            )


# ----- goodput and its losses -------------------------------------------------------------------------------
def losses_section(
    run: RunInfo, summary: RunSummary, flagship: dict | None, timeline: pl.DataFrame | None
) -> None:
    """Where the flagship job's time went: the waterfall of its losses, and its ETTR over time, in two lazy tabs
    (dashboard/lazy.py: the ETTR chart alone cost the page about 0.45 s in the browser, bench/bench_pages.py)."""
    losses = summaries.losses_from_summary(summary)
    if losses or timeline is not None:
        st.subheader("Where the flagship job's time went")
        lazy.tabs(
            {
                LOSSES_TAB: lambda: waterfall(run, summary, flagship, losses),
                ETTR_TAB: lambda: ettr_over_time(run, summary, flagship, timeline),
            }
        )


def waterfall(run: RunInfo, summary: RunSummary, flagship: dict | None, losses: dict) -> None:
    """The flagship job's wall-clock GPU-hours, each loss taken away in turn, down to the productive ones."""
    ettr = summary.figure("ettr")
    job_gpus = (summary.job.gpus if summary.job else None) or (flagship["gpus"] if flagship else None)
    if losses and job_gpus:
        start_s = flagship["start_s"] if flagship and flagship["start_s"] is not None else 0.0
        wall = job_gpus * (run.duration_s - start_s) / SECONDS_PER_HOUR
        chart_view.plotly(
            charts.goodput_waterfall(wall, losses, wall * ettr if ettr is not None else None),
            key="waterfall",
            width="stretch",
        )
    else:
        st.info("The summary of this run has no loss breakdown.")


def ettr_over_time(
    run: RunInfo, summary: RunSummary, flagship: dict | None, timeline: pl.DataFrame | None
) -> None:
    """The flagship job's ETTR in each bucket and since its start, its interruptions in a strip under it."""
    if timeline is None:
        st.info("This run has no attempts of a flagship job to draw ETTR over time from.")
        return
    marks = q.interruptions(run.run_id, flagship["job_id"])
    chart_view.plotly(
        charts.ettr_over_time(timeline, run.started_at, marks, summary.figure("closed_form_ettr")),
        key="ettr_time",
        width="stretch",
    )
    st.caption(
        f"Bars: ETTR in each {fmt_duration(q.timeline_bucket(run.duration_s))} bucket; "
        "line: ETTR from the job's start; strip below: the flagship job's interruptions in each "
        "bucket, by category."
    )


# ----- interruptions by cause -------------------------------------------------------------------------------
def causes_section(run: RunInfo, summary: RunSummary) -> pl.DataFrame:
    """What interrupted the flagship job (else every incident of the run), by cause; returns the counts."""
    counts = summaries.causes_from_summary(summary)
    scope = "of the flagship job"
    if counts is None or counts["count"].sum() == 0:
        counts, scope = q.incidents_by_cause(run.run_id).select("cause", "count"), "recorded in the run"
    if counts.height and counts["count"].sum() > 0:
        flagship = scope == "of the flagship job"
        # a run without a flagship job has incidents, not interruptions (engine.analysis.definitions)
        st.subheader("What interrupted it" if flagship else "What failed")
        left, right = st.columns([2, 1])
        with left:
            chart_view.plotly(
                charts.interruptions_by_cause(counts, "interruptions" if flagship else "incidents"),
                key="causes",
            )
        with right:
            top = counts.sort("count", descending=True).head(3)
            total = int(counts["count"].sum())
            what = definition("interruptions" if flagship else "incidents").label
            st.markdown(f"**{what}: {total:,}** {scope}. The most frequent causes:")
            for row in top.iter_rows(named=True):
                if row["count"]:
                    st.markdown(
                        f"- {md(cause_label(row['cause']))}: {row['count']:,} ({fmt_pct(row['count'] / total)})"
                    )
            mttf = summary.figure("job_mttf")
            if mttf is not None:
                st.markdown(
                    f"One unexpected interruption every **{fmt_hours(mttf)}** on average "
                    f"({definition('job_mttf').label})."
                )
    return counts


# ----- XIDs, where no incident explains them (ingested telemetry) -------------------------------------------
def xids_section(run: RunInfo) -> None:
    xids = q.xid_counts(run.run_id)
    if xids.height:
        st.subheader("What the GPUs reported")
        table_view.dataframe(
            q.with_xid_names(xids),
            hide_index=True,
            key="xid_table",
            column_config={"xid": "XID", "gpus": "GPUs"},
        )


# ----- what is down -----------------------------------------------------------------------------------------
# A fragment: moving the time slider reruns this section only, not the charts above (seconds on a big run).


@st.fragment
def watch_section(run: RunInfo) -> None:
    """A watched cluster (`goodput watch`): where each source stands, and its jobs' goodput so far."""
    for source in source_states(run.summary):
        (st.success if source.reachable else st.error)(md(source.line()))
    summary = RunSummary.from_json(run.summary)
    jobs_goodput = summary.figure("observed_job_goodput")
    if jobs_goodput is None:
        return
    d = definition("observed_job_goodput")
    measured = summary.details.get("jobs_goodput_measured", 0)
    bounds = summary.details.get("jobs_goodput_upper_bounds", 0)
    left, right = st.columns([1, 3])
    left.metric(d.label, fmt_pct(jobs_goodput), help=d.help)
    right.caption(
        f"{fmt_int(measured)} {'job' if measured == 1 else 'jobs'} measured from the checkpoints they log;"
        f" {fmt_int(bounds)} without checkpoints, whose interrupted attempts count whole (an upper bound)."
        if bounds
        else f"Every job's goodput measured from the checkpoints it logs ({fmt_int(measured)} jobs)."
    )
    ledger = summary.details.get("jobs_ledger_gpu_hours")
    if isinstance(ledger, dict):  # watches before the ledger was kept have only the goodput
        cols = st.columns(3)
        for col, key in zip(cols, ("wall", "lost_work", "between_attempts"), strict=True):
            figure = definition("observed_wall_gpu_hours" if key == "wall" else f"observed_{key}")
            col.metric(figure.label, fmt_gpu_hours(ledger.get(key)), help=figure.help)
        chart_view.plotly(charts.observed_ledger(ledger), width="stretch")
    jobs = q.observed_jobs(run.run_id, run.duration_s)
    lost = jobs.filter(pl.col("lost_gpu_h") > 0).sort("lost_gpu_h", descending=True)
    if lost.is_empty():
        return
    st.markdown(
        f"**The jobs that lost the most** ({fmt_int(lost.height)} of the {fmt_int(jobs.height)} jobs that started"
        " lost time)"
    )
    table_view.dataframe(
        lost.head(OBSERVED_JOBS_SHOWN).select(
            "job_id",
            "name",
            "gpus",
            "lost_gpu_h",
            "interruptions",
            pl.when(pl.col("checkpointed"))
            .then(pl.lit("measured"))
            .otherwise(pl.lit("upper bound"))
            .alias("basis"),
            (pl.col("goodput") * 100).alias("goodput"),
        ),
        hide_index=True,
        column_config={
            "job_id": st.column_config.TextColumn("job"),
            "name": st.column_config.TextColumn("name"),
            "gpus": st.column_config.NumberColumn("GPUs", format="%,d"),
            "lost_gpu_h": st.column_config.NumberColumn(
                "GPU-hours lost", format="%,.1f", help="Wall-clock GPU-hours not kept: " + d.help
            ),
            "interruptions": st.column_config.NumberColumn("interruptions", format="%,d"),
            "basis": st.column_config.TextColumn("goodput is", help="measured: its checkpoints were read"),
            "goodput": st.column_config.NumberColumn(f"{d.label} (%)", format="%,.1f", help=d.help),
        },
    )


def what_is_down(run: RunInfo, sizes: dict) -> float | None:
    """The hosts out of service at a moment the user picks (?t=, the end of the run by default); returns the
    moment, or None where the run has no host states to tell."""
    st.subheader("What is down", anchor="what-is-down")
    if not q.has_host_states(run.run_id):
        st.info(
            f"This {run.kind} run records no host states, so it cannot tell which hosts were out of service."
        )
        return None
    if run.duration_s <= 0:
        st.info("This run spans no time (a single scrape), so there is no moment to choose.")
        return None
    # fine enough to reach any state change of a short run, coarse enough to drag through 54 days
    step_s = 1.0 if run.duration_s <= 3600 else 60.0 if run.duration_s <= 2 * 86400 else 900.0
    axis = time_axis(run.started_at, run.duration_s, step_s)
    try:
        asked = float(st.query_params.get(TIME_PARAM, run.duration_s))
    except ValueError:
        asked = run.duration_s
    t_s = moment_slider(
        axis,
        f"overview_t_{run.run_id}",
        asked,
        help="Hosts out of service at this moment. Kept in the URL as ?t= (seconds from the start).",
    )
    if t_s >= run.duration_s:
        st.query_params.pop(TIME_PARAM, None)  # the default, end of run: a clean URL
    else:
        st.query_params[TIME_PARAM] = str(round(t_s))

    down = q.down_at(run.run_id, t_s, run.duration_s)
    at_end = t_s >= run.duration_s
    when = "at the end of the run" if at_end else f"at {fmt_time(run.started_at, t_s)} ({fmt_run_time(t_s)})"
    per_host = sizes["gpus"] / sizes["hosts"] if sizes["hosts"] else 0
    if down.height == 0:
        st.success(f"All {fmt_int(sizes['hosts'])} hosts are healthy, running or spare {when}.")
    else:
        gpus_down = round(down.height * per_host)
        st.markdown(
            f"**{down.height:,} of {fmt_int(sizes['hosts'])} hosts** ({gpus_down:,} GPU{'s' * (gpus_down != 1)}) "
            f"are out of service {when}."
        )
        table_view.short(
            q.down_table(down, run.started_at).rename(
                {
                    "down_since": "down since (UTC)",
                    "down_for": "down for",
                    "incident": "incident #",
                    "gpu": "GPU id",
                    "xid": "XID",
                }
            ),
            key="down_table",
        )
    return t_s


st.title("Overview")
state.render_run_page(
    page, state.run_or_stop()
)  # while a live-ingest run is selected, reruns as scrapes arrive
