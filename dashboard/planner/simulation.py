"""The Simulate tab: one summary-only run of the knobs, its figures beside the closed form, where the flagship's
time went, and the run kept in the store on request."""

import polars as pl
import streamlit as st

from dashboard import chart_view, state, table_view
from dashboard import planner_model as model
from dashboard.charts import planner as charts
from dashboard.format import fmt_gpu_hours, fmt_hours, fmt_int, fmt_pct, fmt_usd
from dashboard.planner.common import BESIDE, Plan, metric, with_progress
from dashboard.planner.strategies import recovery_costs
from engine.analysis.definitions import definition
from engine.analysis.ledger import LOSSES
from engine.analysis.planner import closed_form_of, job_slowdown, loss_table
from engine.analysis.run_summary import FlagshipJob, Interruptions, RunSummary
from engine.report.palette import LOSS_LABELS
from engine.scenario import Scenario
from engine.units import SECONDS_PER_HOUR

MAX_PLANNER_SAMPLES = 5_000_000  # telemetry beyond this takes minutes and gigabytes: the command line's job


def simulate_tab(plan: Plan, knobs: model.Knobs) -> None:
    telemetry = run_controls(plan, knobs)
    kept = st.session_state.get("planner_result")
    if kept is None:
        st.caption(
            "Run the simulator to see simulated ETTR, MTTF and losses beside the closed form. Nothing is "
            "stored unless you keep the result as a run."
        )
        return
    ran_settings, summary = kept
    if ran_settings != plan.settings:
        st.warning("The knobs changed since this simulation ran: its figures are for the earlier settings.")
    ran = model.scenario_of(ran_settings) if ran_settings != plan.settings else plan.scenario
    losses = loss_table(summary, ran)  # the engine's planner maths read the summary as stored
    typed = RunSummary.from_json(summary)
    job = typed.job or FlagshipJob()
    result_metrics(typed, ran, losses)
    cluster_outcome(typed)
    recovery_costs(job)
    ran_slowdown = job_slowdown(summary.get("job", {}))  # absent (1) and null (no path: inf) differ there
    if ran_slowdown > 1.0:
        st.caption(
            f"The {job.placement or 'pack'} placement slows the job's collectives "
            f"{ran_slowdown:.2f}x: with it the simulated run makes progress "
            f"{fmt_pct(job.ettr_with_network)} of the time (the network slowdown step below)."
        )
    loss_breakdown(losses)
    keep_as_run(plan, ran_settings, telemetry)


def run_controls(plan: Plan, knobs: model.Knobs) -> bool:
    """The telemetry checkbox, the run's size and the Run button (which keeps its summary in the session);
    returns whether a kept run should carry GPU telemetry."""
    scenario = plan.scenario
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
    if plan.may_plan and cols[2].button("Run", type="primary", help="a summary-only simulation: seconds"):
        from engine.twin.simulate import simulate

        result = with_progress(
            "Simulating…",
            lambda progress: simulate(
                scenario, name=f"planner · {plan.preset}", summary_only=True, progress=progress
            ),
        )
        if result is not None:
            st.session_state["planner_result"] = (plan.settings, result.summary)
            st.session_state.pop("planner_kept", None)
    return telemetry


def result_metrics(summary: RunSummary, ran: Scenario, losses: pl.DataFrame) -> None:
    """The run's ETTR, MTTF, interruptions and goodput lost, each beside the closed form of its settings."""
    ran_estimate = closed_form_of(ran)
    job, inter = summary.job or FlagshipJob(), summary.interruptions or Interruptions()
    expected_failures = ran_estimate.failures_per_s * ran.duration_s
    lost = losses.filter(pl.col("category").is_in(LOSSES))  # goodput lost: no network slowdown
    cols = st.columns(4)
    simulated = job.ettr
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
        fmt_hours(job.mttf_hours),
        f"closed form {fmt_hours(ran_estimate.mttf_s / SECONDS_PER_HOUR)}",
        **BESIDE,
    )
    metric(
        cols[2],
        "interruptions",
        fmt_int(inter.total),
        f"{inter.unexpected or 0} unexpected, {inter.planned or 0} planned",
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


def cluster_outcome(summary: RunSummary) -> None:
    """What the rest of the cluster paid for the flagship's settings: the research jobs it preempted when its
    spares ran out, the research work thrown away, the flagship's wait for hosts and the cluster's progress.
    Fewer hot spares buy research capacity and cost preemptions: "how many spares?" has this trade-off."""
    cluster, job = summary.cluster, summary.job or FlagshipJob()
    if cluster is None:
        return
    st.markdown("**The rest of the cluster**: what these settings cost research work")
    cols = st.columns(4)
    metric(cols[0], "research_preemptions", fmt_int(cluster.research_preemptions))
    metric(cols[1], "research_lost_gpu_hours", fmt_gpu_hours(cluster.research_lost_gpu_hours))
    metric(cols[2], "waiting_for_spares", fmt_gpu_hours(job.losses_gpu_hours.get("waiting_for_spares")))
    metric(cols[3], "utilisation_by_progress", fmt_pct(cluster.utilization_progress))


def loss_breakdown(losses: pl.DataFrame) -> None:
    """Where the flagship's time went: the waterfall and its table, simulated beside the closed form."""
    st.markdown("**Where the flagship's time went**: simulated beside the closed form")
    chart_view.plotly(charts.loss_waterfall(losses), width="stretch")
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


def keep_as_run(plan: Plan, ran_settings: tuple, telemetry: bool) -> None:
    """The Keep as run button: the full run of the simulated settings, written to the store, and a link to it."""
    if plan.may_plan and st.button(
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
