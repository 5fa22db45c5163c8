"""The closed form of the knobs: Kokolis et al.'s first-order ETTR, Young-Daly's interval, what the losses cost,
the placement's slowdown and the spare cover, all at once, without a run."""

import math

import polars as pl
import streamlit as st

from dashboard import chart_view, lazy
from dashboard import planner_model as model
from dashboard.charts import planner as charts
from dashboard.format import DASH, fmt_duration, fmt_gpu_hours, fmt_hours, fmt_pct, fmt_usd
from dashboard.planner.common import BESIDE, metric, short_duration
from dashboard.text import md
from engine.analysis.analytics import closed_form_ettr, young_daly_interval
from engine.analysis.definitions import definition
from engine.analysis.ledger import LOSSES
from engine.analysis.planner import closed_form_losses, placement_slowdown_of, spare_cover
from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR


def closed_form_section(preset: str, knobs: model.Knobs) -> Scenario | None:
    """The closed form of the knobs; returns their scenario, or None (having said why) where they make none."""
    estimate = model.closed_form(knobs)
    write_now = model.write_seconds(knobs)
    optimum_s = young_daly_interval(write_now, estimate.mttf_s)
    curve_args = curve_args_of(knobs, write_now)
    try:
        scenario, invalid = model.scenario(knobs), None
    except GoodputError as err:
        scenario, invalid = None, err
    days_s = (scenario or model.base_scenario(preset)).duration_s  # the base's days where the knobs make none
    st.subheader("Closed form")
    ettr_metrics(estimate, curve_args, optimum_s)
    cost_metrics(knobs, scenario, estimate, write_now, days_s)
    st.caption(
        f"Failure rate with the multipliers: {curve_args['rate_per_1000_node_days']:.3g} per 1,000 host-days; "
        f"checkpoint write {short_duration(write_now)}; "
        f"{definition('closed_form_unexpected_interruptions').label.lower()}: "
        f"{estimate.failures_per_s * days_s:,.1f} in {days_s / SECONDS_PER_DAY:g} days. A failed host is away "
        f"{fmt_duration(spare_cover(scenario).time_away_s) if scenario else DASH} (drain, diagnosis, repair, "
        "burn-in)."
    )
    # under the knobs and these figures (more than a 1000 px screen): drawn once the reader scrolls to it, as the
    # figures above follow the knobs at once; the chart cost every visit 0.3 s in the browser, and the first one
    # 1 s more to load Plotly (bench/bench_pages.py)
    lazy.below_fold(
        "planner_curve",
        "The ETTR curve over the checkpoint interval",
        lambda: chart_view.plotly(charts.ettr_curve(**curve_args), width="stretch"),
    )
    if scenario is None:
        st.error(f"These settings do not make a valid scenario: {md(invalid)}")
    return scenario


def curve_args_of(knobs: model.Knobs, write_s: float) -> dict:
    """The arguments of the closed-form ETTR (engine.analysis.analytics.closed_form_ettr) at these knobs."""
    return {
        "gpus": knobs.job_gpus,
        "rate_per_1000_node_days": model.effective_rate(knobs),
        "checkpoint_interval_s": knobs.interval_s,
        "checkpoint_write_s": write_s,
        "restart_overhead_s": knobs.restart_s,
        "gpus_per_host": knobs.gpus_per_host,
    }


def ettr_metrics(estimate, curve_args: dict, optimum_s: float) -> None:
    """The closed-form ETTR and job MTTF, Young-Daly's interval and the ETTR it would give."""
    at_optimum = (
        closed_form_ettr(**{**curve_args, "checkpoint_interval_s": optimum_s}).ettr
        if math.isfinite(optimum_s) and optimum_s > 0
        else None
    )
    cols = st.columns(4)
    metric(cols[0], "closed_form_ettr", fmt_pct(estimate.ettr))
    metric(cols[1], "closed_form_job_mttf", fmt_hours(estimate.mttf_s / SECONDS_PER_HOUR))
    metric(cols[2], "young_daly_interval", short_duration(optimum_s) if math.isfinite(optimum_s) else "none")
    metric(
        cols[3],
        "closed_form_ettr_at_young_daly",
        fmt_pct(at_optimum) if at_optimum is not None else DASH,
        f"{(at_optimum - estimate.ettr) * 100:+.1f} pts" if at_optimum is not None else None,
    )


def cost_metrics(
    knobs: model.Knobs, scenario: Scenario | None, estimate, write_s: float, days_s: float
) -> None:
    """The goodput the closed form loses over the run's days, the placement's slowdown and, for a valid
    scenario, how far the spares and technicians cover the failures."""
    cf_losses = closed_form_losses(
        estimate,
        gpus=knobs.job_gpus,
        interval_s=knobs.interval_s,
        write_s=write_s,
        restart_s=knobs.restart_s,
        duration_s=days_s,
        gpu_hour_usd=knobs.gpu_hour_usd,
    )
    cf_lost = cf_losses.filter(pl.col("category").is_in(LOSSES))
    cols = st.columns(4)
    metric(
        cols[0],
        "closed_form_goodput_lost",
        fmt_gpu_hours(cf_lost["gpu_hours"].sum()),
        f"{fmt_usd(cf_lost['usd'].sum())} in {days_s / SECONDS_PER_DAY:g} days",
        **BESIDE,
    )
    if scenario is None:
        return
    slowdown = placement_slowdown_of(scenario)
    metric(
        cols[1],
        "planner_placement_slowdown",
        "none" if slowdown <= 1.0 else f"{slowdown:.2f}x",
        f"{knobs.placement}, {knobs.gbps_per_gpu:g} Gbps a GPU",
        **BESIDE,
    )
    spare_cover_metrics(scenario)


def spare_cover_metrics(scenario: Scenario) -> None:
    """How far the hot spares and technicians cover the failures (engine.analysis.planner.spare_cover)."""
    st.markdown("**Spare cover**: how far the hot spares and technicians cover the failures (closed form)")
    cover = spare_cover(scenario)
    cols = st.columns(4)
    metric(cols[0], "spare_hosts_in_use", f"{cover.hosts_away:,.1f}", f"of {cover.spares:,} held", **BESIDE)
    metric(cols[1], "spares_run_out", "< 0.1%" if cover.run_out < 0.001 else fmt_pct(cover.run_out), **BESIDE)
    metric(
        cols[2],
        "technician_load",
        fmt_pct(cover.technician_load),
        "a queue grows without end" if cover.technician_load >= 1 else None,
        **BESIDE,
    )
