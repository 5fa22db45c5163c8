"""The Sweep tab: one or two settings over a grid, each point run with the same seeds; ETTR as a line or a heatmap
(with Young-Daly's interval where the checkpoint interval is swept) and the bands of every point."""

import math

import polars as pl
import streamlit as st

from dashboard import chart_view, state, table_view
from dashboard import planner_model as model
from dashboard.charts import planner as charts
from dashboard.planner import sweep_params
from dashboard.planner.common import Plan, column, executor, knob_key
from dashboard.text import md
from engine.errors import GoodputError
from engine.twin.sweep import bands, sweep

CHECKPOINT_INTERVAL = "training.checkpoint_interval"


def sweeps_tab(plan: Plan) -> None:
    st.caption(
        "One or two settings over a grid, each point run with several seeds (the same seeds at every "
        "point, so points differ by their settings, not their luck)."
    )
    labels = {p.key: p.label for p in sweep_params.SWEEP_PARAMS}
    sweep_controls(plan, labels)
    result = st.session_state.get("planner_sweep")
    if result is not None:
        sweep_result(plan, labels, result)


def sweep_controls(plan: Plan, labels: dict[str, str]) -> None:
    """The settings to sweep and their values, the seeds per point, and the Run sweep button (which keeps its
    frame in the session)."""
    preset, scenario = plan.preset, plan.scenario
    cols = st.columns(2)
    x_key = cols[0].selectbox(
        "First setting (x)",
        list(labels),
        format_func=labels.get,
        key=state.seed("planner_sweep_x", CHECKPOINT_INTERVAL),
    )
    x_text = cols[0].text_input(
        "x values",
        key=knob_key(preset, f"sweep_values:{x_key}", sweep_params.default_values(scenario, x_key)),
    )
    y_options = ["", *[k for k in labels if k != x_key]]
    y_key = cols[1].selectbox(
        "Second setting (y)",
        y_options,
        format_func=lambda k: labels.get(k, "none"),
        key=state.seed("planner_sweep_y", "training.restart_overhead"),
    )
    y_text = (
        cols[1].text_input(
            "y values",
            key=knob_key(preset, f"sweep_values:{y_key}", sweep_params.default_values(scenario, y_key)),
            disabled=not y_key,
        )
        if y_key
        else ""
    )
    sweep_seeds = st.slider("Seeds per point", 1, 50, key=state.seed("planner_sweep_seeds", 3))
    try:
        x_axis, x_numbers = sweep_params.parse_values(scenario, x_key, x_text)
        axes = [x_axis]
        y_numbers: list[float] = []
        if y_key:
            y_axis, y_numbers = sweep_params.parse_values(scenario, y_key, y_text)
            axes.append(y_axis)
    except GoodputError as err:
        st.error(md(err))
        return
    total = math.prod(len(a.values) for a in axes) * sweep_seeds
    st.caption(f"{' x '.join(str(len(a.values)) for a in axes)} points x {sweep_seeds} seeds = {total} runs.")
    if plan.may_plan and st.button("Run sweep", type="primary"):
        bar = st.progress(0.0, text=f"{total} runs…")
        frame = sweep(
            scenario,
            axes,
            sweep_seeds,
            executor=executor(plan, total),
            progress=lambda done: bar.progress(done, text=f"{total} runs… {done:.0%}"),
        )
        bar.empty()
        st.session_state["planner_sweep"] = (plan.settings, axes, x_numbers, y_numbers, frame)


def sweep_result(plan: Plan, labels: dict[str, str], result: tuple) -> None:
    """A sweep's ETTR drawn over its settings and its bands point by point."""
    s_settings, s_axes, xs, ys, frame = result
    if s_settings != plan.settings:
        st.warning("The knobs changed since this sweep: its figures are for the earlier settings.")
    chart_view.plotly(sweep_chart(model.scenario_of(s_settings), s_axes, xs, ys, frame), width="stretch")
    shown = bands(frame, by=[a.key for a in s_axes]).select(
        *[a.key for a in s_axes],
        "runs",
        "ettr_mean",
        "ettr_p5",
        "ettr_p95",
        "closed_form_ettr_mean",
        "ettr_with_network_mean",
        "mttf_hours_mean",
        "lost_usd_mean",
    )
    table_view.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config={
            **{a.key: st.column_config.TextColumn(labels[a.key]) for a in s_axes},
            "ettr_mean": column("mean_ettr_over_seeds", "percent"),
            "ettr_p5": column("ettr_p5_over_seeds", "percent"),
            "ettr_p95": column("ettr_p95_over_seeds", "percent"),
            "closed_form_ettr_mean": column("closed_form_ettr", "percent"),
            "ettr_with_network_mean": column("mean_goodput_with_network_over_seeds", "percent"),
            "mttf_hours_mean": column("mean_job_mttf_over_seeds", "%.1f h"),
            "lost_usd_mean": column("mean_goodput_lost_usd_over_seeds", "dollar"),
        },
    )


def sweep_chart(base, axes: list, xs: list[float], ys: list[float], frame: pl.DataFrame):
    """Mean ETTR over one setting (a line with its band and the closed form) or two (a heatmap, with
    Young-Daly's interval drawn where one of them is the checkpoint interval)."""
    by_point = bands(frame, by=["point"]).sort("point")
    x_param = sweep_params.SWEEP_BY_KEY[axes[0].key]
    if len(axes) == 1:
        return charts.sweep_line(
            xs,
            by_point["ettr_mean"].to_list(),
            by_point["ettr_p5"].to_list(),
            by_point["ettr_p95"].to_list(),
            x_title=x_param.label,
            x_duration=x_param.duration,
            closed_form=by_point["closed_form_ettr_mean"].to_list(),
        )
    y_param = sweep_params.SWEEP_BY_KEY[axes[1].key]
    means = by_point["ettr_mean"].to_list()  # grid order: x slowest, y fastest
    grid = [[means[i * len(ys) + j] for i in range(len(xs))] for j in range(len(ys))]
    on = "x" if x_param.key == CHECKPOINT_INTERVAL else "y" if y_param.key == CHECKPOINT_INTERVAL else None
    other = axes[1] if on == "x" else axes[0]
    curve = sweep_params.young_daly_curve(base, other.key, other.values) if on else None
    return charts.sweep_heatmap(
        grid,
        xs,
        ys,
        x_title=x_param.label,
        y_title=y_param.label,
        x_duration=x_param.duration,
        y_duration=y_param.duration,
        young_daly_s=curve,
        young_daly_on=on or "x",
    )
