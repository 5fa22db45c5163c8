"""Recovery strategies: what a simulated run's strategy costs, which strategy wins at which job size (the
Strategies at scale tab, engine.twin.scale) and whether warm standbys pay (the Standby break-even tab,
engine.twin.standby)."""

import polars as pl
import streamlit as st

from dashboard import chart_view, state, table_view
from dashboard import planner_model as model
from dashboard.charts import strategies as strategy_charts
from dashboard.format import DASH, fmt_duration, fmt_gpu_hours, fmt_pct, fmt_usd
from dashboard.planner.common import BESIDE, Plan, column, executor, metric, with_progress
from dashboard.text import md
from engine.analysis.definitions import definition
from engine.analysis.run_summary import FlagshipJob
from engine.errors import GoodputError
from engine.twin import scale, standby


def recovery_costs(job: FlagshipJob) -> None:
    """A simulated run's strategy and what it costs besides its ledger (the summary's job.recovery_cost)."""
    strategy = job.recovery or "restart"
    if strategy == "restart":
        return
    cost = job.recovery_cost
    cols = st.columns(4)
    metric(cols[0], "recovery_strategy", scale.STRATEGY_LABELS.get(strategy, strategy))
    metric(
        cols[1],
        "standby_hosts_idle",
        fmt_gpu_hours(cost.standby_gpu_hours or 0.0),
        fmt_usd(cost.standby_usd or 0.0),
        **BESIDE,
    )
    metric(
        cols[2],
        "degraded_replicas_out",
        fmt_gpu_hours(cost.degraded_gpu_hours or 0.0),
        fmt_usd(cost.degraded_usd or 0.0),
        **BESIDE,
    )
    metric(cols[3], "memory_checkpoint_per_host", f"{cost.memory_gb_per_host or 0.0:,.1f} GB")


# ----- strategies at scale --------------------------------------------------------------------------------------
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
        format_func=strategy_charts.gpus_text,
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
    if result is not None:
        scale_result(plan, result)


def scale_result(plan: Plan, result: tuple) -> None:
    """A scale study's best strategy (at its largest size and at this plan's), its chart and its bands."""
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
    chart_view.plotly(
        strategy_charts.scale_chart(bands, scale.STRATEGY_LABELS, ran_seeds, plan.scenario["training.gpus"]),
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


# ----- standby break-even ---------------------------------------------------------------------------------------
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
    if result is not None:
        standby_result(plan, result, counts)


def standby_result(plan: Plan, result: tuple, counts: list[int]) -> None:
    """What the current standby count wins and costs, the best count and the break-even, their chart and
    table."""
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
    chart_view.plotly(strategy_charts.break_even_chart(bands, current, verdict.break_even), width="stretch")
    table_view.dataframe(
        bands.select(
            "standbys", "won_usd_mean", "standby_usd_mean", "net_usd_mean", "net_usd_p10", "net_usd_p90"
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "standbys": st.column_config.NumberColumn("warm standbys", format="%,d"),
            "won_usd_mean": column("standby_goodput_won_usd", "dollar"),
            "standby_usd_mean": column("standby_cost_usd", "dollar"),
            "net_usd_mean": column("standby_net_usd", "dollar"),
            "net_usd_p10": st.column_config.NumberColumn("net, 10th percentile", format="dollar"),
            "net_usd_p90": st.column_config.NumberColumn("net, 90th percentile", format="dollar"),
        },
    )
