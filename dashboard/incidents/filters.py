"""The Incidents page's filters, kept in the URL: the time window (?since=, ?until=), causes, categories,
planned or not, racks and jobs hit."""

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.queries import incidents as queries
from dashboard.time_slider import time_axis, window_slider
from engine.report.visible_text import visible
from engine.store import RunInfo
from engine.units import SECONDS_PER_HOUR

PLANNED_CHOICES = {
    "all": "planned and unexpected",
    "planned": "planned only",
    "unexpected": "unexpected only",
}


def filters_section(run: RunInfo, everything: pl.DataFrame) -> tuple[tuple[float | None, float | None], dict]:
    """The filters, kept in the URL; returns the time window (seconds; None: the run's start or end) and the
    engine.analysis.incidents.filter_incidents keywords."""
    st.subheader("Filters")
    since_s, until_s = time_window(run)

    all_causes = sorted(everything["cause"].drop_nulls().unique().to_list())
    all_categories = sorted(everything["category"].drop_nulls().unique().to_list())
    all_racks = [str(r) for r in sorted(everything["rack_id"].drop_nulls().unique().to_list())]
    hit = (
        everything.select(pl.col("job_ids").explode(), pl.col("job_names").explode())
        .drop_nulls()
        .unique("job_ids")
    )
    job_names = dict(zip(hit["job_ids"].to_list(), hit["job_names"].to_list(), strict=True))
    all_jobs = sorted(job_names)
    cols = st.columns(3)
    causes = cols[0].multiselect(
        "Cause",
        all_causes,
        placeholder="every cause",
        key=state.seed(f"incidents_causes:{run.run_id}", state.url_list("causes", all_causes)),
    )
    categories = cols[1].multiselect(
        "Category",
        all_categories,
        placeholder="every category",
        key=state.seed(f"incidents_categories:{run.run_id}", state.url_list("categories", all_categories)),
    )
    planned_key = st.query_params.get("planned", "all")
    planned_key = cols[2].radio(
        "Planned",
        list(PLANNED_CHOICES),
        format_func=PLANNED_CHOICES.get,
        horizontal=True,
        key=state.seed(
            f"incidents_planned:{run.run_id}", planned_key if planned_key in PLANNED_CHOICES else "all"
        ),
    )
    cols = st.columns(3)
    racks = cols[0].multiselect(
        "Rack",
        all_racks,
        placeholder="every rack",
        format_func=visible,
        key=state.seed(f"incidents_racks:{run.run_id}", state.url_list("racks", all_racks)),
    )
    # no incident hit a job (a fault history, telemetry): nothing to filter by
    jobs = (
        cols[1].multiselect(
            "Job hit",
            all_jobs,
            placeholder="any job or none",
            format_func=lambda j: visible(j if job_names.get(j) in (None, j) else f"{job_names[j]} ({j})"),
            key=state.seed(f"incidents_jobs:{run.run_id}", state.url_list("jobs", all_jobs)),
        )
        if all_jobs
        else []
    )
    state.set_url("causes", ",".join(causes))
    state.set_url("categories", ",".join(categories))
    state.set_url("racks", ",".join(racks))
    state.set_url("jobs", ",".join(jobs))
    state.set_url("planned", "" if planned_key == "all" else planned_key)
    filters = queries.filter_keywords(
        since_s=since_s,
        until_s=until_s,
        causes=causes,
        categories=categories,
        racks=[int(r) for r in racks],
        jobs=jobs,
        planned=planned_key,
    )
    return (since_s, until_s), filters


def time_window(run: RunInfo) -> tuple[float | None, float | None]:
    """The time window's slider, kept in the URL (?since=, ?until=); None: the run's start or end."""
    since_s = until_s = None
    if run.duration_s > 0:  # a run of one moment has no window to choose
        since = queries.url_seconds(st.query_params.get("since"), 0.0, run.duration_s)
        until = queries.url_seconds(st.query_params.get("until"), 0.0, run.duration_s)
        # about 400 steps across the run, never finer than 36 s (0.01 h)
        step_s = max(round(run.duration_s / SECONDS_PER_HOUR / 400.0, 2), 0.01) * SECONDS_PER_HOUR
        low, high = window_slider(
            time_axis(run.started_at, run.duration_s, step_s),
            f"incidents_window:{run.run_id}",
            (since or 0.0, until if until is not None else run.duration_s),
            what="Time window",
        )
        since_s = low if low > 0 else None
        until_s = high if high < run.duration_s else None
    state.set_url("since", "" if since_s is None else f"{since_s:g}")
    state.set_url("until", "" if until_s is None else f"{until_s:g}")
    return since_s, until_s
