"""The Fail-slow tab: what detecting slow hosts buys, by policy (ignore, swap, drain) and detection delay, on the
knobs' scenario with fail-slow episodes at a chosen rate (engine.twin.fail_slow)."""

import polars as pl
import streamlit as st

from dashboard import chart_view, state, table_view
from dashboard.charts import fail_slow as charts
from dashboard.format import fmt_gpu_hours, fmt_pct
from dashboard.planner.common import Plan, executor, with_progress
from engine.analysis.definitions import definition
from engine.scenario.durations import format_duration
from engine.twin.fail_slow import DETECT_AFTER_S, FALCON_RATE, POLICIES, policy_study

DELAY_CHOICES_S = (60.0, 600.0, 3600.0, 6 * 3600.0)


def fail_slow_tab(plan: Plan) -> None:
    st.caption(
        "Hosts that keep running slowly set the pace of a synchronous job. With fail-slow episodes at the rate "
        f"below ({FALCON_RATE:g} a cause per 1,000 host-days delay a large job about 1.34x, as FALCON saw), "
        "compare ignoring them with swapping the slow host for a spare (one restart) or draining it at the next "
        "interruption, each after a detection delay. Same seeds for every point."
    )
    left, middle, right = st.columns(3)
    rate = left.number_input(
        "Episodes a cause per 1,000 host-days", 0.0, 100.0, key=state.seed("planner_slow_rate", FALCON_RATE)
    )
    delays = middle.multiselect(
        "Detection delays",
        DELAY_CHOICES_S,
        key=state.seed("planner_slow_delays", list(DETECT_AFTER_S)),
        format_func=format_duration,
    )
    seeds = right.slider("Seeds", 2, 20, key=state.seed("planner_slow_seeds", 4))
    runs = seeds * (1 + 2 * len(delays))
    # a stable key: the help text follows the seeds, and a widget's identity must not
    asked = plan.may_plan and st.button(
        "Compare policies", type="primary", help=f"{runs} summary-only runs", key="planner_slow_run"
    )
    if asked:
        rows = with_progress(
            f"{runs} runs…",
            lambda progress: policy_study(
                plan.scenario,
                rate_per_cause=rate,
                policies=POLICIES,
                detect_after_s=delays or DETECT_AFTER_S,
                seeds=seeds,
                executor=executor(plan, runs),
                progress=progress,
            ),
        )
        if rows is not None:
            st.session_state["planner_slow"] = (plan.settings, rate, rows)
    shown = st.session_state.get("planner_slow")
    if shown is None:
        return
    ran_settings, ran_rate, rows = shown
    if ran_settings != plan.settings or ran_rate != rate:
        st.warning("The knobs changed since these runs: their figures are for the earlier settings.")
    chart_view.plotly(charts.policy_ettr(rows), width="stretch")
    table_view.dataframe(policy_table(rows), hide_index=True, width="stretch")
    best = rows.sort("ettr_mean", descending=True).row(0, named=True)
    st.caption(
        f"Best here: {best['policy']}"
        + (f" after {best['detect_after']}" if best["policy"] != "ignore" else "")
        + f", {best['ettr_gain_pts']:+.1f} pts of ETTR over ignoring slow hosts. A short detection delay swaps "
        "hosts whose episodes would have ended by themselves: each swap costs a restart."
    )


def policy_table(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows as text a person reads (a handful of rows: formatted in Python, not in a Polars plan)."""
    ettr = definition("ettr").label + " (5-95 %)"
    return pl.DataFrame(
        [
            {
                "policy": r["policy"],
                "detected after": r["detect_after"],
                ettr: f"{fmt_pct(r['ettr_mean'])} ({fmt_pct(r['ettr_p5'])} to {fmt_pct(r['ettr_p95'])})",
                "gain over ignore (pts)": f"{r['ettr_gain_pts']:+.2f}",
                definition("slowdown_fail_slow").label: fmt_gpu_hours(r["slowdown_gpu_hours_mean"]),
                definition("restart_overhead").label: fmt_gpu_hours(r["restart_gpu_hours_mean"]),
            }
            for r in rows.iter_rows(named=True)
        ]
    )
