"""Planner: start from a preset, move the knobs, read the closed-form ETTR and Young-Daly interval at once; run
the simulator (one seed, many seeds, or a grid of settings) on the same knobs; keep a run, download its TOML.
Choose how the job recovers from a failure, see which strategy wins at which job size, and whether warm
standby hosts pay for themselves.

URL: ?preset= and every knob (dashboard.planner_model.URL_NAMES; seconds for durations, ?ckpt=time|storage,
?m_gpu= ... for the category multipliers, ?recovery= and the strategy's own knobs) reproduce the view.
"""

import math
from dataclasses import dataclass

import polars as pl
import streamlit as st

from dashboard import auth, state, table_view
from dashboard import planner_knobs as knobs_ui
from dashboard import planner_model as model
from dashboard.charts import planner as charts
from dashboard.format import DASH, fmt_duration, fmt_gpu_hours, fmt_hours, fmt_int, fmt_pct, fmt_usd
from dashboard.text import md
from engine.analysis.analytics import closed_form_ettr, young_daly_interval
from engine.analysis.definitions import definition
from engine.analysis.ledger import LOSSES
from engine.analysis.planner import (
    closed_form_losses,
    closed_form_of,
    job_slowdown,
    loss_table,
    placement_slowdown_of,
    spare_cover,
)
from engine.errors import GoodputError
from engine.report.palette import LOSS_LABELS
from engine.scenario import PRESETS, Scenario, build
from engine.twin import scale, standby
from engine.twin.sweep import bands, monte_carlo, sweep
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

BESIDE = {"delta_color": "off", "delta_arrow": "off"}  # a metric's delta here is a comparison, not a change
MAX_PLANNER_SAMPLES = 5_000_000  # telemetry beyond this takes minutes and gigabytes: the command line's job


def page() -> None:
    """The page, top to bottom: the preset and the knobs, the closed form they give at once, then a run, many
    seeds or a sweep of the same settings."""
    st.caption(
        "The closed form is Kokolis et al.'s first-order estimate (HPCA 2025); the optimum interval is "
        "Young-Daly's sqrt(2 w MTTF). Neither needs a run: they follow the knobs at once."
    )
    preset, knobs = settings_section()
    scenario = closed_form_section(preset, knobs)
    if scenario is None:
        return
    st.download_button(
        "Download scenario",
        scenario.to_toml(),
        file_name=f"planner-{preset}.toml",
        mime="application/toml",
        on_click="ignore",
        help="`goodput simulate --scenario FILE` runs it from the command line",
    )
    may_plan = auth.can(auth.Role.PLANNER)  # simulations run on this server: planners only, where login is on
    if not may_plan:
        auth.missing(auth.Role.PLANNER, "Running simulations, Monte-Carlo and sweeps")
    # the settings are kept beside each result: did the knobs move since it ran?
    plan = Plan(preset, scenario, model.settings_of(knobs), may_plan)
    tabs = st.tabs(["Simulate", "Monte-Carlo", "Sweep", "Strategies at scale", "Standby break-even"])
    with tabs[0]:
        simulate_tab(plan, knobs)
    with tabs[1]:
        monte_carlo_tab(plan)
    with tabs[2]:
        sweeps_tab(plan)
    with tabs[3]:
        scale_tab(plan)
    with tabs[4]:
        standby_tab(plan)


@dataclass(frozen=True)
class Plan:
    """What the three tabs run: the knobs' valid scenario, its settings key, and whether this user may run."""

    preset: str
    scenario: Scenario
    settings: (
        tuple  # planner_model.settings_of: kept beside each result, to tell whether the knobs moved since
    )
    may_plan: bool


# ----- the preset and the knobs' first values (from the URL) ----------------------------------------------------
def settings_section() -> tuple[str, model.Knobs]:
    """The preset (the selected run's, else the URL's, else llama3-405b) and the knobs, kept in the URL."""
    presets = list(PRESETS)
    # start from the selected run's own preset (plan from what you are looking at), else the Llama 3 cluster
    selected = state.selected_run()
    run_preset = selected.scenario.get("preset") if selected else None
    start = run_preset if run_preset in presets else "llama3-405b"
    wanted = st.query_params.get("preset", start)
    preset = st.selectbox(
        "Start from preset", presets, key=state.seed("planner_preset", wanted if wanted in presets else start)
    )
    if preset != st.query_params.get("preset"):  # a new preset: its own defaults, not the old knobs
        for name in model.URL_NAMES:
            st.query_params.pop(name, None)
        st.query_params["preset"] = preset
    first = model.from_params(st.query_params.to_dict())
    st.subheader("Settings")
    knobs = knobs_ui.settings(first, preset, lambda name, value: knob_key(preset, name, value))
    params = model.to_params(knobs)
    for name in model.URL_NAMES:
        if name in params:
            st.query_params[name] = params[name]
        else:
            st.query_params.pop(name, None)
    return preset, knobs


def knob_key(preset: str, name: str, value) -> str:
    """A knob's widget key, per preset so a new preset starts from its own values."""
    return state.seed(f"planner_{name}:{preset}", value)


def metric(where, key: str, value: str, delta: str | None = None, **kwargs) -> None:
    """A figure under its registered label, with its definition's help (engine.analysis.definitions)."""
    d = definition(key)
    where.metric(d.label, value, delta, help=d.help, **kwargs)


def column(key: str, fmt: str):
    """A table column of a registered figure: its label and help."""
    return st.column_config.NumberColumn(definition(key).label, format=fmt, help=definition(key).help)


def short_duration(seconds: float) -> str:
    """Checkpoint writes and optimum intervals are often seconds: keep three digits there ("0.0768 s")."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        return f"{seconds / 60:.3g} min"
    return fmt_duration(seconds)


# ----- the closed form ------------------------------------------------------------------------------------------
def closed_form_section(preset: str, knobs: model.Knobs) -> Scenario | None:
    """The closed form of the knobs; returns their scenario, or None (having said why) where they make none."""
    estimate = model.closed_form(knobs)
    write_now = model.write_seconds(knobs)
    optimum_s = young_daly_interval(write_now, estimate.mttf_s)
    curve_args = {
        "gpus": knobs.job_gpus,
        "rate_per_1000_node_days": model.effective_rate(knobs),
        "checkpoint_interval_s": knobs.interval_s,
        "checkpoint_write_s": write_now,
        "restart_overhead_s": knobs.restart_s,
        "gpus_per_host": knobs.gpus_per_host,
    }
    at_optimum = (
        closed_form_ettr(**{**curve_args, "checkpoint_interval_s": optimum_s}).ettr
        if math.isfinite(optimum_s) and optimum_s > 0
        else None
    )
    try:
        scenario, invalid = model.scenario(knobs), None
    except GoodputError as err:
        scenario, invalid = None, err
    slowdown = placement_slowdown_of(scenario) if scenario is not None else None
    days_s = (scenario or build(preset)).duration_s  # the preset's days where the knobs make no scenario
    cf_losses = closed_form_losses(
        estimate,
        gpus=knobs.job_gpus,
        interval_s=knobs.interval_s,
        write_s=write_now,
        restart_s=knobs.restart_s,
        duration_s=days_s,
        gpu_hour_usd=knobs.gpu_hour_usd,
    )
    cf_lost = cf_losses.filter(pl.col("category").is_in(LOSSES))
    st.subheader("Closed form")
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
    cols = st.columns(4)
    metric(
        cols[0],
        "closed_form_goodput_lost",
        fmt_gpu_hours(cf_lost["gpu_hours"].sum()),
        f"{fmt_usd(cf_lost['usd'].sum())} in {days_s / SECONDS_PER_DAY:g} days",
        **BESIDE,
    )
    if slowdown is not None:
        metric(
            cols[1],
            "planner_placement_slowdown",
            "none" if slowdown <= 1.0 else f"{slowdown:.2f}x",
            f"{knobs.placement}, {knobs.gbps_per_gpu:g} Gbps a GPU",
            **BESIDE,
        )
        st.markdown(
            "**Spare cover**: how far the hot spares and technicians cover the failures (closed form)"
        )
        cover = spare_cover(scenario)
        cols = st.columns(4)
        metric(
            cols[0], "spare_hosts_in_use", f"{cover.hosts_away:,.1f}", f"of {cover.spares:,} held", **BESIDE
        )
        metric(
            cols[1], "spares_run_out", "< 0.1%" if cover.run_out < 0.001 else fmt_pct(cover.run_out), **BESIDE
        )
        metric(
            cols[2],
            "technician_load",
            fmt_pct(cover.technician_load),
            "a queue grows without end" if cover.technician_load >= 1 else None,
            **BESIDE,
        )
    st.caption(
        f"Failure rate with the multipliers: {curve_args['rate_per_1000_node_days']:.3g} per 1,000 host-days; "
        f"checkpoint write {short_duration(write_now)}; "
        f"{definition('closed_form_unexpected_interruptions').label.lower()}: "
        f"{estimate.failures_per_s * days_s:,.1f} in {days_s / SECONDS_PER_DAY:g} days. A failed host is away "
        f"{fmt_duration(spare_cover(scenario).time_away_s) if scenario else DASH} (drain, diagnosis, repair, "
        "burn-in)."
    )
    st.plotly_chart(charts.ettr_curve(**curve_args), width="stretch")
    if scenario is None:
        st.error(f"These settings do not make a valid scenario: {md(invalid)}")
    return scenario


def executor(plan: Plan, runs: int):
    """Processes only where the runs are worth them: one run of these settings, timed once, tells."""
    timed = st.session_state.get("planner_seconds_per_run")
    if runs > model.IN_PROCESS_RUNS and (timed is None or timed[0] != plan.settings):
        timed = (plan.settings, model.seconds_per_run(plan.scenario))
        st.session_state["planner_seconds_per_run"] = timed
    return model.executor_for(runs, timed[1] if timed else None)


# ----- one simulation -------------------------------------------------------------------------------------------
def simulate_tab(plan: Plan, knobs: model.Knobs) -> None:
    preset, scenario, settings, may_plan = plan.preset, plan.scenario, plan.settings, plan.may_plan
    cols = st.columns([2, 2, 1, 1])
    samples = knobs.cluster_gpus * scenario.duration_s / scenario["simulation.telemetry_resolution"]
    telemetry = cols[0].checkbox(
        "Keep with GPU telemetry",
        value=False,
        disabled=samples > MAX_PLANNER_SAMPLES,
        help=f"{samples:,.0f} samples: slower; only needed to browse a kept run on the GPUs page"
        + (" (too many for the page: use `goodput simulate`)" if samples > MAX_PLANNER_SAMPLES else ""),
    )
    cols[1].caption(
        f"{scenario.hosts:,} hosts, {scenario['simulation.days']:g} days, seed {scenario['simulation.seed']}"
    )
    if may_plan and cols[2].button("Run", type="primary", help="a summary-only simulation: seconds"):
        from engine.twin.simulate import simulate

        result = with_progress(
            "Simulating…",
            lambda progress: simulate(
                scenario, name=f"planner · {preset}", summary_only=True, progress=progress
            ),
        )
        if result is not None:
            st.session_state["planner_result"] = (settings, result.summary)
            st.session_state.pop("planner_kept", None)
    kept = st.session_state.get("planner_result")
    if kept is None:
        st.caption(
            "Run the simulator to see simulated ETTR, MTTF and losses beside the closed form. Nothing is "
            "stored unless you keep the result as a run."
        )
    else:
        ran_settings, summary = kept
        if ran_settings != settings:
            st.warning(
                "The knobs changed since this simulation ran: its figures are for the earlier settings."
            )
        ran = model.scenario_of(ran_settings) if ran_settings != settings else scenario
        ran_estimate = closed_form_of(ran)
        job, inter = summary.get("job", {}), summary.get("interruptions", {})
        losses = loss_table(summary, ran)
        expected_failures = ran_estimate.failures_per_s * ran.duration_s
        lost = losses.filter(pl.col("category").is_in(LOSSES))  # goodput lost: no network slowdown
        cols = st.columns(4)
        simulated = job.get("ettr")
        metric(
            cols[0],
            "ettr",
            fmt_pct(simulated),
            f"{(simulated - ran_estimate.ettr) * 100:+.1f} pts vs closed form {fmt_pct(ran_estimate.ettr)}"
            if simulated is not None
            else None,
            **BESIDE,
        )
        metric(
            cols[1],
            "job_mttf",
            fmt_hours(job.get("mttf_hours")),
            f"closed form {fmt_hours(ran_estimate.mttf_s / SECONDS_PER_HOUR)}",
            **BESIDE,
        )
        metric(
            cols[2],
            "interruptions",
            fmt_int(inter.get("total")),
            f"{inter.get('unexpected', 0)} unexpected, {inter.get('planned', 0)} planned",
            **BESIDE,
        )
        metric(
            cols[3],
            "goodput_lost",
            fmt_gpu_hours(lost["sim_gpu_hours"].sum()),
            f"{fmt_usd(lost['sim_usd'].sum())}; closed form {fmt_gpu_hours(lost['cf_gpu_hours'].sum())}, "
            f"{fmt_usd(lost['cf_usd'].sum())}",
            **BESIDE,
        )
        st.caption(
            f"One summary-only run of these settings (seed {ran['simulation.seed']}), not stored: each "
            "figure is the run's own, under its definition; the deltas put the closed form beside it."
        )
        st.caption(
            f"{definition('closed_form_unexpected_interruptions').label}: {expected_failures:,.1f} in "
            f"{ran['simulation.days']:g} days; the closed form counts no planned ones."
        )
        recovery_costs(job)
        ran_slowdown = job_slowdown(job)
        if ran_slowdown > 1.0:
            st.caption(
                f"The {job.get('placement', 'pack')} placement slows the job's collectives "
                f"{ran_slowdown:.2f}x: with it the simulated run makes progress "
                f"{fmt_pct(job.get('ettr_with_network'))} of the time (the network slowdown step below)."
            )
        st.markdown("**Where the flagship's time went**: simulated beside the closed form")
        st.plotly_chart(charts.loss_waterfall(losses), width="stretch")
        table_view.dataframe(
            [
                {
                    "loss": LOSS_LABELS[r["category"]],
                    "simulated": fmt_gpu_hours(r["sim_gpu_hours"]),
                    "simulated cost": fmt_usd(r["sim_usd"]),
                    "closed form": fmt_gpu_hours(r["cf_gpu_hours"]),
                    "closed-form cost": fmt_usd(r["cf_usd"]),
                }
                for r in losses.iter_rows(named=True)
            ],
            hide_index=True,
        )
        st.caption(
            "The closed form has no queue for spare hosts and models restart: its waiting and degraded times "
            "are always 0."
        )
        if may_plan and st.button(
            "Keep as run", help="simulates the full run (every table) and writes it to the store"
        ):
            from engine.twin.simulate import simulate

            full = with_progress(
                "Simulating the full run…",
                lambda progress: simulate(
                    model.scenario_of(ran_settings, telemetry=telemetry),
                    name=f"planner · {ran_settings[0]}",
                    progress=progress,
                ),
            )
            if full is not None:
                st.session_state["planner_kept"] = state.store().write_run(full)
        run_id = st.session_state.get("planner_kept")
        if run_id:
            st.success(f"Kept as run {run_id}.")
            st.page_link(
                "app_pages/overview.py",
                label=f"Open run {run_id}",
                icon=":material/open_in_new:",
                query_params={state.RUN_PARAM: run_id},
            )


# ----- Monte-Carlo ----------------------------------------------------------------------------------------------
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
        st.plotly_chart(
            charts.monte_carlo_histogram(
                frame["ettr"].to_list(), (band["ettr_mean"], band["ettr_p5"], band["ettr_p95"])
            ),
            width="stretch",
        )
        st.caption(
            f"{band['runs']} runs; {definition('closed_form_ettr').label.lower()} "
            f"{fmt_pct(band['closed_form_ettr_mean'])}."
        )


# ----- sweeps ---------------------------------------------------------------------------------------------------
def sweeps_tab(plan: Plan) -> None:
    preset, scenario, settings, may_plan = plan.preset, plan.scenario, plan.settings, plan.may_plan
    st.caption(
        "One or two settings over a grid, each point run with several seeds (the same seeds at every "
        "point, so points differ by their settings, not their luck)."
    )
    labels = {p.key: p.label for p in model.SWEEP_PARAMS}
    cols = st.columns(2)
    x_key = cols[0].selectbox(
        "First setting (x)",
        list(labels),
        format_func=labels.get,
        key=state.seed("planner_sweep_x", "training.checkpoint_interval"),
    )
    x_text = cols[0].text_input(
        "x values", key=knob_key(preset, f"sweep_values:{x_key}", model.default_values(scenario, x_key))
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
            key=knob_key(preset, f"sweep_values:{y_key}", model.default_values(scenario, y_key)),
            disabled=not y_key,
        )
        if y_key
        else ""
    )
    sweep_seeds = st.slider("Seeds per point", 1, 50, key=state.seed("planner_sweep_seeds", 3))
    try:
        x_axis, x_numbers = model.parse_values(scenario, x_key, x_text)
        axes = [x_axis]
        y_numbers: list[float] = []
        if y_key:
            y_axis, y_numbers = model.parse_values(scenario, y_key, y_text)
            axes.append(y_axis)
    except GoodputError as err:
        st.error(md(err))
        axes = []
    if axes:
        total = math.prod(len(a.values) for a in axes) * sweep_seeds
        st.caption(
            f"{' x '.join(str(len(a.values)) for a in axes)} points x {sweep_seeds} seeds = {total} runs."
        )
        if may_plan and st.button("Run sweep", type="primary"):
            bar = st.progress(0.0, text=f"{total} runs…")
            frame = sweep(
                scenario,
                axes,
                sweep_seeds,
                executor=executor(plan, total),
                progress=lambda done: bar.progress(done, text=f"{total} runs… {done:.0%}"),
            )
            bar.empty()
            st.session_state["planner_sweep"] = (settings, axes, x_numbers, y_numbers, frame)
    result = st.session_state.get("planner_sweep")
    if result is not None:
        s_settings, s_axes, xs, ys, frame = result
        if s_settings != settings:
            st.warning("The knobs changed since this sweep: its figures are for the earlier settings.")
        base = model.scenario_of(s_settings)
        summary = bands(frame, by=["point"]).sort("point")
        x_param = model.SWEEP_BY_KEY[s_axes[0].key]
        if len(s_axes) == 2:
            y_param = model.SWEEP_BY_KEY[s_axes[1].key]
            means = summary["ettr_mean"].to_list()  # grid order: x slowest, y fastest
            grid = [[means[i * len(ys) + j] for i in range(len(xs))] for j in range(len(ys))]
            interval = "training.checkpoint_interval"
            on = "x" if x_param.key == interval else "y" if y_param.key == interval else None
            other = s_axes[1] if on == "x" else s_axes[0]
            curve = model.young_daly_curve(base, other.key, other.values) if on else None
            st.plotly_chart(
                charts.sweep_heatmap(
                    grid,
                    xs,
                    ys,
                    x_title=x_param.label,
                    y_title=y_param.label,
                    x_duration=x_param.duration,
                    y_duration=y_param.duration,
                    young_daly_s=curve,
                    young_daly_on=on or "x",
                ),
                width="stretch",
            )
        else:
            st.plotly_chart(
                charts.sweep_line(
                    xs,
                    summary["ettr_mean"].to_list(),
                    summary["ettr_p5"].to_list(),
                    summary["ettr_p95"].to_list(),
                    x_title=x_param.label,
                    x_duration=x_param.duration,
                    closed_form=summary["closed_form_ettr_mean"].to_list(),
                ),
                width="stretch",
            )
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


def with_progress(text: str, work):
    """`work(progress)` under a progress bar; None, having shown the engine's message, where it refuses the
    settings (a check only a run makes, e.g. a strategy's own)."""
    bar = st.progress(0.0, text=text)
    try:
        return work(lambda done: bar.progress(done, text=f"{text} {done:.0%}"))
    except GoodputError as err:
        st.error(md(err))
        return None
    finally:
        bar.empty()


# ----- recovery strategies --------------------------------------------------------------------------------------
def recovery_costs(job: dict) -> None:
    """A simulated run's strategy and what it costs besides its ledger (the summary's job.recovery_cost)."""
    strategy = job.get("recovery", "restart")
    if strategy == "restart":
        return
    cost = job.get("recovery_cost") or {}
    cols = st.columns(4)
    metric(cols[0], "recovery_strategy", scale.STRATEGY_LABELS.get(strategy, strategy))
    metric(
        cols[1],
        "standby_hosts_idle",
        fmt_gpu_hours(cost.get("standby_gpu_hours", 0.0)),
        fmt_usd(cost.get("standby_usd", 0.0)),
        **BESIDE,
    )
    metric(
        cols[2],
        "degraded_replicas_out",
        fmt_gpu_hours(cost.get("degraded_gpu_hours", 0.0)),
        fmt_usd(cost.get("degraded_usd", 0.0)),
        **BESIDE,
    )
    metric(cols[3], "memory_checkpoint_per_host", f"{cost.get('memory_gb_per_host', 0.0):,.1f} GB")


def scale_tab(plan: Plan) -> None:
    """ETTR against job size, a line a strategy with its band over seeds (engine.twin.scale)."""
    st.caption(
        "Which recovery strategy at which scale: each point is a job of that size alone on its hosts and "
        "spares (the spares per job host set above, at least the warm standbys), research and telemetry off, "
        "every other setting as set above, run for about 100 of its interruptions; every strategy and size "
        "sees the same seeds."
    )
    cols = st.columns(2)
    sizes = cols[0].multiselect(
        "Job sizes (GPUs)",
        list(scale.SIZES_GPUS),
        key=state.seed("planner_scale_sizes", list(scale.SIZES_GPUS)),
        format_func=charts.gpus_text,
    )
    seeds = cols[1].slider("Seeds per point", 2, 30, key=state.seed("planner_scale_seeds", scale.SEEDS))
    try:
        study = scale.plan_study(plan.scenario, sizes_gpus=sizes or scale.SIZES_GPUS, seeds=seeds)
    except GoodputError as err:
        st.error(md(err))
        return
    sizes_run = sorted({p.job_gpus for p in study.points})
    st.caption(
        f"{len(scale.STRATEGIES)} strategies x {len(sizes_run)} sizes x {seeds} seeds = {study.runs} "
        "summary-only runs."
    )
    if plan.may_plan and st.button("Run scale study", type="primary"):
        frame = with_progress(
            f"{study.runs} runs…",
            lambda progress: scale.run_study(study, executor=model.scale_executor(study), progress=progress),
        )
        if frame is not None:
            st.session_state["planner_scale"] = (plan.settings, seeds, frame)
    result = st.session_state.get("planner_scale")
    if result is None:
        return
    ran_settings, ran_seeds, frame = result
    if ran_settings != plan.settings:
        st.warning("The knobs changed since this study: its figures are for the earlier settings.")
    bands = scale.scale_bands(frame)
    best = scale.best_strategy(bands)
    largest = best.row(best.height - 1, named=True)
    cols = st.columns(2)
    metric(
        cols[0],
        "scale_best_strategy",
        scale.STRATEGY_LABELS[largest["strategy"]],
        f"at {largest['job_gpus']:,} GPUs: {fmt_pct(largest['ettr_mean'])}",
        **BESIDE,
    )
    own = best.filter(pl.col("job_gpus") == plan.scenario["training.gpus"])
    if own.height:
        mine = own.row(0, named=True)
        metric(
            cols[1],
            "scale_best_strategy",
            scale.STRATEGY_LABELS[mine["strategy"]],
            f"at this plan's {mine['job_gpus']:,} GPUs: {fmt_pct(mine['ettr_mean'])}",
            **BESIDE,
        )
    st.plotly_chart(
        charts.scale_chart(bands, scale.STRATEGY_LABELS, ran_seeds, plan.scenario["training.gpus"]),
        width="stretch",
    )
    table_view.dataframe(
        bands.select(
            pl.col("strategy").replace_strict(scale.STRATEGY_LABELS),
            "job_gpus",
            "spare_hosts",
            "days",
            "ettr_mean",
            "ettr_p10",
            "ettr_p90",
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "strategy": st.column_config.TextColumn(definition("recovery_strategy").label),
            "job_gpus": st.column_config.NumberColumn("job GPUs", format="localized"),
            "spare_hosts": st.column_config.NumberColumn("spare hosts", format="localized"),
            "days": column("scale_horizon_days", "%.2f d"),
            "ettr_mean": column("scale_mean_ettr", "percent"),
            "ettr_p10": column("scale_ettr_p10", "percent"),
            "ettr_p90": column("scale_ettr_p90", "percent"),
        },
    )


def standby_tab(plan: Plan) -> None:
    """Whether warm standbys pay: their cost against the goodput they win over restart, by standby count."""
    s = plan.scenario
    if s["training.recovery"] != "hot_spare":
        st.info(
            "The break-even weighs warm standbys against restart: choose **Warm standby hosts (hot spare)** as "
            "the recovery strategy above to set their number and swap time."
        )
        return
    st.caption(
        "Warm standbys cost their hosts' GPU-hours idle; they win the goodput of swapping in "
        f"{fmt_duration(s['recovery.hot_swap'])} instead of restarting in "
        f"{fmt_duration(s['training.restart_overhead'])}. Each count runs against restart on the same hosts and "
        "seeds, every other setting as set above."
    )
    seeds = st.slider(
        "Seeds per count", 2, 20, key=state.seed("planner_standby_seeds", standby.BREAK_EVEN_SEEDS)
    )
    try:
        study = standby.plan_break_even(s, seeds=seeds)
    except GoodputError as err:
        st.error(md(err))
        return
    counts = sorted({p.standbys for p in study.points if p.strategy == "hot_spare"})
    st.caption(f"Standby counts {', '.join(map(str, counts))}: {study.runs} summary-only runs.")
    if plan.may_plan and st.button("Run break-even", type="primary"):
        frame = with_progress(
            f"{study.runs} runs…",
            lambda progress: standby.run_break_even(
                study, executor=executor(plan, study.runs), progress=progress
            ),
        )
        if frame is not None:
            st.session_state["planner_standby"] = (plan.settings, study.current, frame)
    result = st.session_state.get("planner_standby")
    if result is None:
        return
    ran_settings, current, frame = result
    if ran_settings != plan.settings:
        st.warning("The knobs changed since these runs: their figures are for the earlier settings.")
    bands = standby.break_even_bands(frame)
    verdict = standby.break_even_of(bands)
    mine = bands.filter(pl.col("standbys") == current).row(0, named=True)
    # two rows: what the current count wins and costs, then the best count and the break-even (five in one row
    # cut their labels short)
    cols = [*st.columns(3), *st.columns(3)[:2]]
    metric(cols[0], "standby_goodput_won_usd", fmt_usd(mine["won_usd_mean"]), f"{current} standbys", **BESIDE)
    if verdict is None:
        st.warning(
            "These runs report no standby cost (the simulator's sweep rows lack it): only the goodput won is "
            "shown."
        )
        return
    metric(cols[1], "standby_cost_usd", fmt_usd(mine["standby_usd_mean"]), f"{current} standbys", **BESIDE)
    metric(
        cols[2],
        "standby_net_usd",
        fmt_usd(mine["net_usd_mean"]),
        "they pay" if mine["net_usd_mean"] > 0 else "they do not pay",
        delta_color="normal" if mine["net_usd_mean"] > 0 else "inverse",
    )
    metric(cols[3], "standby_best_count", f"{verdict.best:,}", fmt_usd(verdict.best_net_usd), **BESIDE)
    metric(
        cols[4],
        "standby_break_even",
        DASH if verdict.break_even is None else f"{verdict.break_even:,.0f}",
        None
        if verdict.break_even is not None
        else "no count pays"
        if verdict.best_net_usd <= 0
        else f"they still pay at {max(counts):,}",
        **BESIDE,
    )
    st.plotly_chart(charts.break_even_chart(bands, current, verdict.break_even), width="stretch")
    table_view.dataframe(
        bands.select(
            "standbys", "won_usd_mean", "standby_usd_mean", "net_usd_mean", "net_usd_p10", "net_usd_p90"
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "standbys": st.column_config.NumberColumn("warm standbys", format="%d"),
            "won_usd_mean": column("standby_goodput_won_usd", "dollar"),
            "standby_usd_mean": column("standby_cost_usd", "dollar"),
            "net_usd_mean": column("standby_net_usd", "dollar"),
            "net_usd_p10": st.column_config.NumberColumn("net, 10th percentile", format="dollar"),
            "net_usd_p90": st.column_config.NumberColumn("net, 90th percentile", format="dollar"),
        },
    )


st.title("Planner")
page()
