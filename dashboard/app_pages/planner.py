"""Planner: start from a preset, move the knobs of the checkpoint/restart model, read the closed-form ETTR at once;
run the simulator on the same settings and keep the result as a run if it is worth keeping.

URL: ?preset= and the knobs (?gpus=, ?rate=, ?interval=, ?write=, ?restart=, seconds for durations).
"""

import math

import streamlit as st

from dashboard import state
from dashboard.charts import planner as charts
from dashboard.charts.common import (
    LOSS_LABELS,
    fmt_duration,
    fmt_gpu_hours,
    fmt_hours,
    fmt_int,
    fmt_pct,
    fmt_usd,
)
from engine.analytics import closed_form_ettr, young_daly_interval
from engine.errors import GoodputError
from engine.scenario import PRESETS, build

KNOBS = ("gpus", "rate", "interval", "write", "restart")
MAX_PLANNER_SAMPLES = 5_000_000  # telemetry beyond this takes minutes and gigabytes: the command line's job


st.title("Planner")
st.caption("The closed form is Kokolis et al.'s first-order estimate (HPCA 2025); the optimum interval is "
           "Young-Daly's sqrt(2 w MTTF). Neither needs a run: they follow the knobs at once.")

# ----- the preset -----------------------------------------------------------------------------------------
presets = list(PRESETS)
wanted = st.query_params.get("preset", "demo" if "demo" in presets else presets[0])
preset = st.selectbox("Start from preset", presets,
                      key=state.seed("planner_preset", wanted if wanted in presets else presets[0]))
if preset != st.query_params.get("preset"):  # a new preset: its own defaults, not the old knobs
    for knob in KNOBS:
        st.query_params.pop(knob, None)
    st.query_params["preset"] = preset
base = build(preset)
per_host = base["cluster.gpus_per_host"]


def url_number(name: str, default: float, low: float, high: float) -> float:
    try:
        value = float(st.query_params.get(name, default))
    except ValueError:
        return default
    return min(max(value, low), high) if math.isfinite(value) else default


# ----- the knobs ------------------------------------------------------------------------------------------
max_gpus = base["cluster.gpus"] - base["spares.hosts"] * per_host  # the job and its spares fit the cluster
cols = st.columns(5)
gpus = cols[0].number_input(
    "Job GPUs", min_value=per_host, max_value=max_gpus, step=per_host,
    key=state.seed(f"planner_gpus:{preset}",
             int(url_number("gpus", base["training.gpus"], per_host, max_gpus)) // per_host * per_host),
    help=f"whole hosts of {per_host} GPUs, up to the cluster less its {base['spares.hosts']} spare hosts")
rate = cols[1].number_input(
    "Failures / 1,000 host-days", min_value=0.0, max_value=1000.0, step=0.1, format="%.2f",
    key=state.seed(f"planner_rate:{preset}",
             url_number("rate", base["failures.rate_per_1000_node_days"] * base["failures.scale"], 0.0, 1000.0)),
    help="unexpected interruptions per 1,000 host-days (Llama 3: 3.79; RSC-1: 6.5)")
interval_min = cols[2].number_input(
    "Checkpoint interval (min)", min_value=0.1, max_value=24 * 60.0, step=1.0, format="%.1f",
    key=state.seed(f"planner_interval:{preset}",
             url_number("interval", base["training.checkpoint_interval"], 6.0, 86400.0) / 60.0))
write_s = cols[3].number_input(
    "Checkpoint write (s)", min_value=0.0, max_value=3600.0, step=1.0, format="%.1f",
    key=state.seed(f"planner_write:{preset}", url_number("write", base.checkpoint_write_s, 0.0, 3600.0)),
    help="how long a checkpoint blocks training")
restart_min = cols[4].number_input(
    "Restart overhead (min)", min_value=0.0, max_value=24 * 60.0, step=1.0, format="%.1f",
    key=state.seed(f"planner_restart:{preset}",
             url_number("restart", base["training.restart_overhead"], 0.0, 86400.0) / 60.0),
    help="detection, rescheduling, initialisation and restore after an interruption")
interval_s, restart_s = interval_min * 60.0, restart_min * 60.0
for knob, value in zip(KNOBS, (gpus, rate, interval_s, write_s, restart_s), strict=True):
    st.query_params[knob] = f"{value:g}"

# ----- the closed form ------------------------------------------------------------------------------------
model = {"gpus": int(gpus), "rate_per_1000_node_days": rate, "checkpoint_interval_s": interval_s,
         "checkpoint_write_s": write_s, "restart_overhead_s": restart_s, "gpus_per_host": per_host}
estimate = closed_form_ettr(**model)
optimum_s = young_daly_interval(write_s, estimate.mttf_s)
at_optimum = closed_form_ettr(**{**model, "checkpoint_interval_s": optimum_s}).ettr if math.isfinite(
    optimum_s) and optimum_s > 0 else None
st.subheader("Closed form")
cols = st.columns(4)
cols[0].metric("ETTR", fmt_pct(estimate.ettr))
cols[1].metric("Job MTTF", fmt_hours(estimate.mttf_s / 3600.0), help="1 / (hosts x failure rate)")
cols[2].metric("Young-Daly interval", fmt_duration(optimum_s) if math.isfinite(optimum_s) else "none",
               help="no failures: no optimum, checkpoint as rarely as you like")
cols[3].metric("ETTR at that interval", fmt_pct(at_optimum) if at_optimum is not None else "–",
               f"{(at_optimum - estimate.ettr) * 100:+.1f} pts" if at_optimum is not None else None)
st.plotly_chart(charts.ettr_curve(**model), width="stretch")

# ----- the simulator --------------------------------------------------------------------------------------
st.subheader("Simulation")
sets = [f"training.gpus={int(gpus)}", f"failures.rate_per_1000_node_days={rate}", "failures.scale=1",
        f"training.checkpoint_interval={interval_s:g}s", f'training.checkpoint_write="{write_s:g}s"',
        f"training.restart_overhead={restart_s:g}s"]
cols = st.columns([2, 1, 1])
samples = base["cluster.gpus"] * base.duration_s / base["simulation.telemetry_resolution"]
telemetry = cols[0].checkbox(
    "With GPU telemetry", value=False, disabled=samples > MAX_PLANNER_SAMPLES,
    help=f"{samples:,.0f} samples: slower; only needed to browse a kept run on the GPUs page"
    + (" (too many for the page: use `goodput simulate`)" if samples > MAX_PLANNER_SAMPLES else ""))
days = base["simulation.days"]
cols[1].caption(f"{base.hosts:,} hosts, {days:g} days, seed {base['simulation.seed']}")
if cols[2].button("Run simulation", type="primary"):
    try:
        from engine.simulate import simulate

        scenario = build(preset, sets=[*sets, f"simulation.telemetry={'true' if telemetry else 'false'}"])
        bar = st.progress(0.0, text="Simulating…")
        result = simulate(scenario, name=f"planner · {preset}",
                          progress=lambda done: bar.progress(done, text=f"Simulating… {done:.0%}"))
        bar.empty()
        st.session_state["planner_result"] = (preset, tuple(sets), result)
    except GoodputError as err:
        st.error(str(err))

kept = st.session_state.get("planner_result")
if kept is None:
    st.caption("Run the simulator to see simulated ETTR beside the closed form. Nothing is stored unless you "
               "keep the result as a run.")
    st.stop()
ran_preset, ran_sets, result = kept
if (ran_preset, ran_sets) != (preset, tuple(sets)):
    st.warning("The knobs changed since this simulation ran: its figures are for the earlier settings.")
job = result.summary.get("job", {})
interruptions = result.summary.get("interruptions", {})
cols = st.columns(4)
simulated = job.get("ettr")
cols[0].metric("Simulated ETTR", fmt_pct(simulated),
               f"{(simulated - estimate.ettr) * 100:+.1f} pts vs closed form" if simulated is not None else None)
cols[1].metric("Simulated MTTF", fmt_hours(job.get("mttf_hours")))
cols[2].metric("Interruptions", fmt_int(interruptions.get("total")),
               f"{interruptions.get('planned', 0)} planned", delta_color="off")
cols[3].metric("Lost GPU-hours", fmt_gpu_hours(job.get("lost_gpu_hours")))
losses = job.get("losses_gpu_hours") or {}
if losses:
    money = job.get("losses_usd") or {}
    st.markdown("**Where the flagship's time went** (simulated)")
    st.dataframe([{"loss": LOSS_LABELS.get(k, k), "GPU-hours": fmt_gpu_hours(v), "cost": fmt_usd(money.get(k))}
                  for k, v in losses.items()], hide_index=True)
if st.button("Keep as run"):
    run_id = state.store().write_run(result)
    st.session_state.pop("planner_result")
    st.success(f"Kept as run {run_id}: pick it in the sidebar to browse it on every page.")
