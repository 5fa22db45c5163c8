"""Fail-slow episodes (engine.sim.slow): the Incidents page's list of them, worst first with their cost, and the Jobs
page's culprit of the flagship job's slowdown.

Each episode's cost is engine.sim.slow.episode_costs' (the slow_episodes table's cost_gpu_hours): the flagship
job's slowdown while the episode's factor was the binding one, so the costs add up to the ledger's slowdown bucket.
The list covers the whole run (the page's filters choose incidents; an episode is none). A run whose scenario drew
episodes but got none says so in one sentence; a run without slowness (slow.* rates 0) shows nothing.
"""

import polars as pl
import streamlit as st

from dashboard import table_view
from dashboard.format import DASH, fmt_gpu_hours, fmt_int, fmt_pct
from dashboard.queries import slow_episodes as queries
from dashboard.text import md
from dashboard.text_exprs import duration_text, time_text
from engine.analysis.definitions import definition
from engine.report.slow_episodes import ACTION_WORDS, component_expr, slow_cause_expr, slow_cause_label
from engine.store import RunInfo

SHOWN = 200  # the costliest episodes listed; the total counts them all


def _columns() -> dict:
    """Headers in words, one format a column, each new figure with its definition."""
    d = definition
    return {
        "start": st.column_config.TextColumn("start", width=150),
        "end": st.column_config.TextColumn("end", width=150),
        "component": st.column_config.TextColumn("component", width=180),
        "cause": st.column_config.TextColumn("cause", width=180),
        "factor": st.column_config.NumberColumn(
            d("slow_episode_factor").label, format="%.2f", help=d("slow_episode_factor").help
        ),
        "detected_after": st.column_config.TextColumn(
            d("slow_episode_detected_after").label, help=d("slow_episode_detected_after").help
        ),
        "action": st.column_config.TextColumn("action", width=100),
        "cost_gpu_hours": st.column_config.NumberColumn(
            "GPU-h lost", format="%,.1f", help=d("slow_episode_cost").help
        ),
    }


def episodes_table(run: RunInfo, episodes: pl.DataFrame) -> pl.DataFrame:
    """The episodes as the page lists them: times as dates, the component as text (a host's name and the GPU's
    index), the cause and action in words, how long until detected; a missing value as a dash."""
    detected = pl.col("detected_s") - pl.col("start_s")
    return episodes.with_columns(
        time_text("start_s", run.started_at).fill_null(DASH).alias("start"),
        time_text("end_s", run.started_at).fill_null(DASH).alias("end"),
        component_expr().alias("component"),
        slow_cause_expr(),
        duration_text(detected).fill_null(DASH).alias("detected_after"),
        pl.col("action").replace(ACTION_WORDS).fill_null(DASH),
    ).select(list(_columns()))


def fail_slow_section(run: RunInfo) -> None:
    """The run's fail-slow episodes, worst first, under a one-line total (the flagship job's slowdown)."""
    if not queries.slowness_on(run):
        return  # slowness off: nothing to say
    episodes = queries.slow_episodes(run.run_id)
    st.subheader("Fail-slow episodes", help=definition("slow_episode_cost").help)
    if episodes.is_empty():
        st.caption("No component ran slow in this run.")
        return
    total = episodes["cost_gpu_hours"].sum() or 0.0
    label = definition("slow_episodes_cost_total").label
    shown = f"the {SHOWN:,} costliest of " if episodes.height > SHOWN else ""
    st.markdown(
        f"**{label}**: {fmt_gpu_hours(total)}, the flagship job's whole fail-slow slowdown; "
        f"{shown}{fmt_int(episodes.height)} episodes, worst first.",
        help=definition("slow_episodes_cost_total").help,
    )
    table_view.dataframe(
        episodes_table(run, episodes.head(SHOWN)),
        hide_index=True,
        width="stretch",
        column_config=_columns(),
    )


def culprit_line(run: RunInfo) -> None:
    """The Jobs page: the episode that cost the flagship job most of its fail-slow slowdown (nothing without one)."""
    episodes = queries.slow_episodes(run.run_id).filter(pl.col("cost_gpu_hours") > 0)
    if episodes.is_empty():
        return
    worst = episodes.with_columns(component_expr().alias("component")).row(0, named=True)
    total = episodes["cost_gpu_hours"].sum()
    d = definition("slowdown_culprit")
    st.markdown(
        f"**{d.label}**: {md(worst['component'])} ({md(slow_cause_label(worst['cause']))}, "
        f"{worst['factor']:g}× slower), {fmt_gpu_hours(worst['cost_gpu_hours'])}: "
        f"{fmt_pct(worst['cost_gpu_hours'] / total, 0)} of the slowdown, over {fmt_int(episodes.height)} "
        "episodes that slowed the job (the Incidents page lists them).",
        help=d.help,
    )
