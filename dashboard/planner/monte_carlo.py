"""The Monte-Carlo tab: the knobs run over many seeds, the spread of ETTR, MTTF, interruptions and cost."""

import streamlit as st

from dashboard import chart_view, state
from dashboard.charts import planner as charts
from dashboard.format import fmt_hours, fmt_pct, fmt_usd
from dashboard.planner.common import BESIDE, Plan, executor, metric
from engine.analysis.definitions import definition
from engine.twin.sweep import bands, monte_carlo


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
        )
        bar.empty()
        st.session_state["planner_mc"] = (settings, frame)
    mc = st.session_state.get("planner_mc")
    if mc is not None:
        mc_settings, frame = mc
        if mc_settings != settings:
            st.warning("The knobs changed since these runs: their figures are for the earlier settings.")
        band = bands(frame).row(0, named=True)
        cols = st.columns(4)
        metric(
            cols[0],
            "mean_ettr_over_seeds",
            fmt_pct(band["ettr_mean"]),
            f"5-95 %: {fmt_pct(band['ettr_p5'])} – {fmt_pct(band['ettr_p95'])}",
            **BESIDE,
        )
        metric(
            cols[1],
            "mean_job_mttf_over_seeds",
            fmt_hours(band["mttf_hours_mean"]),
            f"5-95 %: {fmt_hours(band['mttf_hours_p5'])} – {fmt_hours(band['mttf_hours_p95'])}",
            **BESIDE,
        )
        metric(
            cols[2],
            "mean_interruptions_over_seeds",
            f"{band['interruptions_mean']:,.1f}",
            f"5-95 %: {band['interruptions_p5']:,.1f} – {band['interruptions_p95']:,.1f}",
            **BESIDE,
        )
        metric(
            cols[3],
            "mean_goodput_lost_usd_over_seeds",
            fmt_usd(band["lost_usd_mean"]),
            f"5-95 %: {fmt_usd(band['lost_usd_p5'])} – {fmt_usd(band['lost_usd_p95'])}",
            **BESIDE,
        )
        chart_view.plotly(
            charts.monte_carlo_histogram(
                frame["ettr"].to_list(), (band["ettr_mean"], band["ettr_p5"], band["ettr_p95"])
            ),
            width="stretch",
        )
        st.caption(
            f"{band['runs']} runs; {definition('closed_form_ettr').label.lower()} "
            f"{fmt_pct(band['closed_form_ettr_mean'])}."
        )
