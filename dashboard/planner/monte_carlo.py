"""The Monte-Carlo tab: the knobs run over many seeds, the spread of ETTR, MTTF, interruptions and cost.

Started from a twin (a base "twin:RUN"), each run first draws the fitted keys the knobs left at the fit from their
laws (engine.twin.uncertainty), and each figure's band is the twin's band (engine.twin.prediction): where the
next run falls 90 % of the time, what the fit does not know included. From a preset, the band is the 5th to 95th
percentile of the seeds."""

import streamlit as st

from dashboard import chart_view, state
from dashboard import planner_model as model
from dashboard.charts import planner as charts
from dashboard.format import fmt_hours, fmt_pct, fmt_usd
from dashboard.planner.common import BESIDE, Plan, executor, metric
from engine.analysis.definitions import definition
from engine.twin.prediction import band_level, prediction_interval
from engine.twin.sweep import bands, monte_carlo


def _bands(frame, twin: bool) -> dict:
    """The sweep's bands of the runs; for a twin, each figure's p5 and p95 are the twin band's ends instead."""
    band = bands(frame).row(0, named=True)
    if twin:
        for name in ("ettr", "mttf_hours", "interruptions", "lost_usd"):
            interval = prediction_interval(frame[name].to_list())
            if interval is not None:
                band[f"{name}_p5"], band[f"{name}_p95"] = interval.low, interval.high
    return band


def monte_carlo_tab(plan: Plan) -> None:
    scenario, settings, may_plan = plan.scenario, plan.settings, plan.may_plan
    st.caption(
        "One run of a rare-event process misleads: a lucky month has no rack failure. Each seed is a "
        "summary-only run (seeds from the scenario's seed up)."
    )
    n_seeds = st.slider("Seeds", 2, 200, key=state.seed("planner_mc_seeds", 10))
    if may_plan and st.button("Run Monte-Carlo", type="primary"):
        bar = st.progress(0.0, text=f"{n_seeds} runs…")
        frame = monte_carlo(
            scenario,
            n_seeds,
            executor=executor(plan, n_seeds),
            progress=lambda done: bar.progress(done, text=f"{n_seeds} runs… {done:.0%}"),
            draw=model.twin_draw(plan.preset),
        )
        bar.empty()
        st.session_state["planner_mc"] = (settings, frame)
    mc = st.session_state.get("planner_mc")
    if mc is not None:
        mc_settings, frame = mc
        if mc_settings != settings:
            st.warning("The knobs changed since these runs: their figures are for the earlier settings.")
        twin = model.twin_draw(plan.preset) is not None
        band = _bands(frame, twin)
        name = "twin band" if twin else "5-95 %"
        cols = st.columns(4)
        for where, key, metric_name, shown in (
            (cols[0], "mean_ettr_over_seeds", "ettr", fmt_pct),
            (cols[1], "mean_job_mttf_over_seeds", "mttf_hours", fmt_hours),
            (cols[2], "mean_interruptions_over_seeds", "interruptions", lambda v: f"{v:,.1f}"),
            (cols[3], "mean_goodput_lost_usd_over_seeds", "lost_usd", fmt_usd),
        ):
            low, high = band[f"{metric_name}_p5"], band[f"{metric_name}_p95"]
            metric(
                where,
                key,
                shown(band[f"{metric_name}_mean"]),
                f"{name}: {shown(low)} – {shown(high)}",
                **BESIDE,
            )
        if twin:
            st.caption(
                "Started from a twin: each run first drew the fitted keys you left at the fit from their laws, so "
                f"the twin band holds what the fit does not know as well as luck; with {band['runs']} runs it holds "
                f"a new run {band_level(band['runs']):.1%} of the time ({definition('backtest_band').label})."
            )
        chart_view.plotly(
            charts.monte_carlo_histogram(
                frame["ettr"].to_list(), (band["ettr_mean"], band["ettr_p5"], band["ettr_p95"]), name
            ),
            width="stretch",
        )
        st.caption(
            f"{band['runs']} runs; {definition('closed_form_ettr').label.lower()} "
            f"{fmt_pct(band['closed_form_ettr_mean'])}."
        )
