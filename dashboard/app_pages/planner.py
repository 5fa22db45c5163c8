"""Planner: start from a preset, move the knobs, read the closed-form ETTR and Young-Daly interval at once; run
the simulator (one seed, many seeds, or a grid of settings) on the same knobs; keep a run, download its TOML.

URL: ?preset= and every knob (dashboard.planner_model.URL_NAMES; seconds for durations, ?ckpt=time|storage,
?m_gpu= ... for the category multipliers) reproduce the view.
"""

import math

import streamlit as st

from dashboard import auth, state
from dashboard import planner_model as model
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
from dashboard.text import md
from engine.analytics import closed_form_ettr, young_daly_interval
from engine.errors import GoodputError
from engine.scenario import PRESETS, build
from engine.sweep import bands, monte_carlo, sweep

BESIDE = {"delta_color": "off", "delta_arrow": "off"}  # a metric's delta here is a comparison, not a change
MAX_PLANNER_SAMPLES = 5_000_000  # telemetry beyond this takes minutes and gigabytes: the command line's job

st.title("Planner")
st.caption("The closed form is Kokolis et al.'s first-order estimate (HPCA 2025); the optimum interval is "
           "Young-Daly's sqrt(2 w MTTF). Neither needs a run: they follow the knobs at once.")

# ----- the preset and the knobs' first values (from the URL) ----------------------------------------------------
presets = list(PRESETS)
# start from the selected run's own preset (plan from what you are looking at), else the Llama 3 cluster
selected = state.selected_run()
run_preset = selected.scenario.get("preset") if selected else None
start = run_preset if run_preset in presets else "llama3-405b"
wanted = st.query_params.get("preset", start)
preset = st.selectbox("Start from preset", presets,
                      key=state.seed("planner_preset", wanted if wanted in presets else start))
if preset != st.query_params.get("preset"):  # a new preset: its own defaults, not the old knobs
    for name in model.URL_NAMES:
        st.query_params.pop(name, None)
    st.query_params["preset"] = preset
first = model.from_params(st.query_params.to_dict())
per_host = first.gpus_per_host


def key(name: str, value) -> str:
    """A knob's widget key, per preset so a new preset starts from its own values."""
    return state.seed(f"planner_{name}:{preset}", value)


st.subheader("Settings")
left, middle, right = st.columns(3)
with left:
    st.markdown("**Cluster and job**")
    cluster_gpus = st.number_input("Cluster GPUs", min_value=per_host, max_value=1_048_576, step=per_host * 256,
                                   key=key("cluster", first.cluster_gpus))
    job_gpus = st.number_input("Job GPUs", min_value=0, max_value=1_048_576, step=per_host,
                               key=key("gpus", first.job_gpus), help=f"whole hosts of {per_host} GPUs")
    spares = st.number_input("Hot spares (hosts)", min_value=0, max_value=100_000, step=1,
                             key=key("spares", first.spares), help="held back to replace a failed job host")
    placement = st.radio("Placement", model.PLACEMENTS, horizontal=True, key=key("place", first.placement),
                         help="pack: whole racks and pods in host order, ranked so (Meta's topology-aware "
                              "placement). spread: dealt round-robin over the pods, one host a rack first, ranked "
                              "in that order: every rack-switch fault reaches the job and its rings cross pods")
    gbps = st.number_input("Network demand per GPU (Gbps)", min_value=0.0, max_value=3200.0, step=5.0,
                           format="%.0f", key=key("gbps", first.gbps_per_gpu),
                           help="what the job's collectives ask of each GPU's 400 Gbps NIC (Llama 3 405B: ~25)")
    price = st.number_input("GPU-hour price (USD)", min_value=0.0, max_value=10_000.0, step=0.1, format="%.2f",
                            key=key("price", first.gpu_hour_usd))
with middle:
    st.markdown("**Failures and repair**")
    rate = st.number_input("Failures / 1,000 host-days", min_value=0.0, max_value=1000.0, step=0.1,
                           format="%.2f", key=key("rate", first.rate),
                           help="unexpected interruptions per 1,000 host-days, every category at x1 "
                                "(Llama 3: 3.79; RSC-1: 6.5)")
    with st.expander("Per-category multipliers"):
        st.caption("Scale the causes of one category (the Llama 3 table's), and with them the total rate.")
        multipliers = {cat: st.slider(cat, 0.0, 10.0, step=0.1,
                                      key=key(url, min(first.multipliers[cat], 10.0)))
                       for cat, url in model.CATEGORIES.items()}
    fix_h = st.number_input("Repair turnaround (h)", min_value=0.0, max_value=365 * 24.0, step=0.5,
                            format="%.1f", key=key("fix", first.repair_fix_s / 3600.0),
                            help="mean hands-on repair time of a failed host (repair.fix)")
    technicians = st.number_input("Technicians", min_value=1, max_value=10_000, step=1,
                                  key=key("techs", first.technicians))
with right:
    st.markdown("**Checkpoint and restart**")
    interval_min = st.number_input("Checkpoint interval (min)", min_value=1 / 60, max_value=7 * 24 * 60.0,
                                   step=1.0, format="%.1f", key=key("interval", first.interval_s / 60.0))
    write_mode = st.radio("Checkpoint write", model.WRITE_MODES, horizontal=True, key=key("ckpt", first.write_mode),
                          format_func={"time": "as a time", "storage": "size and bandwidth"}.get)
    if write_mode == "time":
        write_s = st.number_input("Checkpoint write (s)", min_value=0.0, max_value=86400.0, step=1.0,
                                  format="%.1f", key=key("write", first.write_s),
                                  help="how long a checkpoint blocks training")
        gb, bandwidth = first.checkpoint_gb_per_gpu, first.bandwidth_gb_per_s
    else:
        gb = st.number_input("Checkpoint size per GPU (GB)", min_value=0.0, max_value=1e4, step=0.1,
                             format="%.2f", key=key("gb", first.checkpoint_gb_per_gpu))
        bandwidth = st.number_input("Storage bandwidth (GB/s)", min_value=0.001, max_value=1e7, step=100.0,
                                    format="%.1f", key=key("bw", first.bandwidth_gb_per_s),
                                    help="shared by every writer of the job")
        write_s = first.write_s
    restart_min = st.number_input("Restart overhead (min)", min_value=0.0, max_value=7 * 24 * 60.0, step=1.0,
                                  format="%.1f", key=key("restart", first.restart_s / 60.0),
                                  help="detection, rescheduling, initialisation and restore after an interruption")

knobs = model.Knobs(
    preset=preset, cluster_gpus=int(cluster_gpus), job_gpus=int(job_gpus), rate=rate,
    interval_s=interval_min * 60.0, write_mode=write_mode, write_s=write_s, checkpoint_gb_per_gpu=gb,
    bandwidth_gb_per_s=bandwidth, restart_s=restart_min * 60.0, spares=int(spares), repair_fix_s=fix_h * 3600.0,
    technicians=int(technicians), gpu_hour_usd=price, multipliers=multipliers, gpus_per_host=per_host,
    placement=placement, gbps_per_gpu=gbps)
params = model.to_params(knobs)
for name in model.URL_NAMES:
    if name in params:
        st.query_params[name] = params[name]
    else:
        st.query_params.pop(name, None)

def short_duration(seconds: float) -> str:
    """Checkpoint writes and optimum intervals are often seconds: keep three digits there ("0.0768 s")."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        return f"{seconds / 60:.3g} min"
    return fmt_duration(seconds)


# ----- the closed form ------------------------------------------------------------------------------------------
estimate = model.closed_form(knobs)
write_now = model.write_seconds(knobs)
optimum_s = young_daly_interval(write_now, estimate.mttf_s)
curve_args = {"gpus": knobs.job_gpus, "rate_per_1000_node_days": model.effective_rate(knobs),
              "checkpoint_interval_s": knobs.interval_s, "checkpoint_write_s": write_now,
              "restart_overhead_s": knobs.restart_s, "gpus_per_host": per_host}
at_optimum = (closed_form_ettr(**{**curve_args, "checkpoint_interval_s": optimum_s}).ettr
              if math.isfinite(optimum_s) and optimum_s > 0 else None)
try:
    scenario, invalid = model.scenario(knobs), None
except GoodputError as err:
    scenario, invalid = None, err
slowdown = model.network_slowdown(scenario) if scenario is not None else None
st.subheader("Closed form")
cols = st.columns(5)
cols[0].metric("ETTR", fmt_pct(estimate.ettr))
cols[1].metric("Job MTTF", fmt_hours(estimate.mttf_s / 3600.0), help="1 / (hosts x failure rate)")
cols[2].metric("Young-Daly interval", short_duration(optimum_s) if math.isfinite(optimum_s) else "none",
               help="no failures: no optimum, checkpoint as rarely as you like")
cols[3].metric("ETTR at that interval", fmt_pct(at_optimum) if at_optimum is not None else "–",
               f"{(at_optimum - estimate.ettr) * 100:+.1f} pts" if at_optimum is not None else None)
if slowdown is not None:
    cols[4].metric("Network slowdown", "none" if slowdown <= 1.0 else f"{slowdown:.2f}x",
                   f"ETTR with it {fmt_pct(estimate.ettr / slowdown)}", **BESIDE,
                   help=f"{placement} placement at {gbps:g} Gbps a GPU: the flagship's ring alone on the fabric, every "
                        "link up. ETTR counts time, not speed: with it, the share of the time that is progress")
st.caption(f"Failure rate with the multipliers: {curve_args['rate_per_1000_node_days']:.3g} per 1,000 host-days; "
           f"checkpoint write {short_duration(write_now)}.")
st.plotly_chart(charts.ettr_curve(**curve_args), width="stretch")

if scenario is None:
    st.error(f"These settings do not make a valid scenario: {md(invalid)}")
    st.stop()
st.download_button("Download scenario", scenario.to_toml(), file_name=f"planner-{preset}.toml",
                   mime="application/toml", on_click="ignore",
                   help="`goodput simulate --scenario FILE` runs it from the command line")
may_plan = auth.can(auth.Role.PLANNER)  # simulations run on this server: planners only, where login is on
if not may_plan:
    auth.missing(auth.Role.PLANNER, "Running simulations, Monte-Carlo and sweeps")
run_tab, mc_tab, sweep_tab = st.tabs(["Simulate", "Monte-Carlo", "Sweep"])
sets = tuple(model.scenario_sets(knobs))


def executor(runs: int):
    """Processes only where the runs are worth them: one run of these settings, timed once, tells."""
    timed = st.session_state.get("planner_seconds_per_run")
    if runs > model.IN_PROCESS_RUNS and (timed is None or timed[0] != (preset, sets)):
        timed = ((preset, sets), model.seconds_per_run(scenario))
        st.session_state["planner_seconds_per_run"] = timed
    return model.executor_for(runs, timed[1] if timed else None)


# ----- one simulation -------------------------------------------------------------------------------------------
with run_tab:
    cols = st.columns([2, 2, 1, 1])
    samples = knobs.cluster_gpus * scenario.duration_s / scenario["simulation.telemetry_resolution"]
    telemetry = cols[0].checkbox(
        "Keep with GPU telemetry", value=False, disabled=samples > MAX_PLANNER_SAMPLES,
        help=f"{samples:,.0f} samples: slower; only needed to browse a kept run on the GPUs page"
        + (" (too many for the page: use `goodput simulate`)" if samples > MAX_PLANNER_SAMPLES else ""))
    cols[1].caption(f"{scenario.hosts:,} hosts, {scenario['simulation.days']:g} days, "
                    f"seed {scenario['simulation.seed']}")
    if may_plan and cols[2].button("Run", type="primary", help="a summary-only simulation: seconds"):
        bar = st.progress(0.0, text="Simulating…")
        from engine.simulate import simulate

        result = simulate(scenario, name=f"planner · {preset}", summary_only=True,
                          progress=lambda done: bar.progress(done, text=f"Simulating… {done:.0%}"))
        bar.empty()
        st.session_state["planner_result"] = (preset, sets, result.summary)
        st.session_state.pop("planner_kept", None)
    kept = st.session_state.get("planner_result")
    if kept is None:
        st.caption("Run the simulator to see simulated ETTR, MTTF and losses beside the closed form. Nothing is "
                   "stored unless you keep the result as a run.")
    else:
        ran_preset, ran_sets, summary = kept
        if (ran_preset, ran_sets) != (preset, sets):
            st.warning("The knobs changed since this simulation ran: its figures are for the earlier settings.")
        ran = build(ran_preset, sets=ran_sets) if (ran_preset, ran_sets) != (preset, sets) else scenario
        ran_estimate = model.closed_form_of(ran)
        job, inter = summary.get("job", {}), summary.get("interruptions", {})
        losses = model.loss_table(summary, ran)
        expected_failures = ran_estimate.failures_per_s * ran.duration_s
        cols = st.columns(5)
        simulated = job.get("ettr")
        cols[0].metric("Simulated ETTR", fmt_pct(simulated),
                       f"{(simulated - ran_estimate.ettr) * 100:+.1f} pts vs closed form"
                       if simulated is not None else None, help=f"closed form {fmt_pct(ran_estimate.ettr)}",
                       **BESIDE)
        cols[1].metric("Simulated MTTF", fmt_hours(job.get("mttf_hours")),
                       f"closed form {fmt_hours(ran_estimate.mttf_s / 3600.0)}", **BESIDE)
        cols[2].metric("Interruptions", fmt_int(inter.get("total")),
                       f"{inter.get('unexpected', 0)} unexpected, {inter.get('planned', 0)} planned", **BESIDE)
        cols[3].metric("Lost GPU-hours", fmt_gpu_hours(losses["sim_gpu_hours"].sum()),
                       f"closed form {fmt_gpu_hours(losses['cf_gpu_hours'].sum())}", **BESIDE)
        cols[4].metric("Lost money", fmt_usd(losses["sim_usd"].sum()),
                       f"closed form {fmt_usd(losses['cf_usd'].sum())}", **BESIDE)
        st.caption(f"The closed form expects {expected_failures:,.1f} unexpected interruptions in "
                   f"{ran['simulation.days']:g} days; it counts no planned ones.")
        ran_slowdown = model.job_slowdown(job)
        if ran_slowdown > 1.0:
            st.caption(f"The {job.get('placement', 'pack')} placement slows the job's collectives "
                       f"{ran_slowdown:.2f}x: with it the simulated run makes progress "
                       f"{fmt_pct(job.get('ettr_with_network'))} of the time (the network slowdown step below).")
        st.markdown("**Where the flagship's time went**: simulated beside the closed form")
        st.plotly_chart(charts.loss_waterfall(losses), width="stretch")
        st.dataframe([{"loss": LOSS_LABELS[r["category"]],
                       "simulated": fmt_gpu_hours(r["sim_gpu_hours"]), "simulated cost": fmt_usd(r["sim_usd"]),
                       "closed form": fmt_gpu_hours(r["cf_gpu_hours"]), "closed-form cost": fmt_usd(r["cf_usd"])}
                      for r in losses.iter_rows(named=True)], hide_index=True)
        st.caption("The closed form has no queue for spare hosts: its waiting time is always 0.")
        if may_plan and st.button("Keep as run",
                                  help="simulates the full run (every table) and writes it to the store"):
            from engine.simulate import simulate

            bar = st.progress(0.0, text="Simulating the full run…")
            full = simulate(build(ran_preset, sets=[*ran_sets, f"simulation.telemetry={str(telemetry).lower()}"]),
                            name=f"planner · {ran_preset}",
                            progress=lambda done: bar.progress(done, text=f"Simulating the full run… {done:.0%}"))
            bar.empty()
            st.session_state["planner_kept"] = state.store().write_run(full)
        run_id = st.session_state.get("planner_kept")
        if run_id:
            st.success(f"Kept as run {run_id}.")
            st.page_link("app_pages/overview.py", label=f"Open run {run_id}", icon=":material/open_in_new:",
                         query_params={state.RUN_PARAM: run_id})

# ----- Monte-Carlo ----------------------------------------------------------------------------------------------
with mc_tab:
    st.caption("One run of a rare-event process misleads: a lucky month has no rack failure. Each seed is a "
               "summary-only run (seeds from the scenario's seed up).")
    n_seeds = st.slider("Seeds", 2, 200, key=state.seed("planner_mc_seeds", 10))
    if may_plan and st.button("Run Monte-Carlo", type="primary"):
        bar = st.progress(0.0, text=f"{n_seeds} runs…")
        frame = monte_carlo(scenario, n_seeds, executor=executor(n_seeds),
                            progress=lambda done: bar.progress(done, text=f"{n_seeds} runs… {done:.0%}"))
        bar.empty()
        st.session_state["planner_mc"] = (preset, sets, frame)
    mc = st.session_state.get("planner_mc")
    if mc is not None:
        mc_preset, mc_sets, frame = mc
        if (mc_preset, mc_sets) != (preset, sets):
            st.warning("The knobs changed since these runs: their figures are for the earlier settings.")
        band = bands(frame).row(0, named=True)
        cols = st.columns(4)
        cols[0].metric("Mean ETTR", fmt_pct(band["ettr_mean"]),
                       f"5-95 %: {fmt_pct(band['ettr_p5'])} – {fmt_pct(band['ettr_p95'])}", **BESIDE)
        cols[1].metric("Mean MTTF", fmt_hours(band["mttf_hours_mean"]),
                       f"5-95 %: {fmt_hours(band['mttf_hours_p5'])} – {fmt_hours(band['mttf_hours_p95'])}",
                       **BESIDE)
        cols[2].metric("Mean interruptions", f"{band['interruptions_mean']:,.1f}",
                       f"5-95 %: {band['interruptions_p5']:,.1f} – {band['interruptions_p95']:,.1f}",
                       **BESIDE)
        cols[3].metric("Mean lost money", fmt_usd(band["lost_usd_mean"]),
                       f"5-95 %: {fmt_usd(band['lost_usd_p5'])} – {fmt_usd(band['lost_usd_p95'])}",
                       **BESIDE)
        st.plotly_chart(charts.monte_carlo_histogram(
            frame["ettr"].to_list(), (band["ettr_mean"], band["ettr_p5"], band["ettr_p95"])), width="stretch")
        st.caption(f"{band['runs']} runs; closed form {fmt_pct(band['closed_form_ettr_mean'])}.")

# ----- sweeps ---------------------------------------------------------------------------------------------------
with sweep_tab:
    st.caption("One or two settings over a grid, each point run with several seeds (the same seeds at every "
               "point, so points differ by their settings, not their luck).")
    labels = {p.key: p.label for p in model.SWEEP_PARAMS}
    cols = st.columns(2)
    x_key = cols[0].selectbox("First setting (x)", list(labels), format_func=labels.get,
                              key=state.seed("planner_sweep_x", "training.checkpoint_interval"))
    x_text = cols[0].text_input("x values", key=key(f"sweep_values:{x_key}", model.default_values(scenario, x_key)))
    y_options = ["", *[k for k in labels if k != x_key]]
    y_key = cols[1].selectbox("Second setting (y)", y_options, format_func=lambda k: labels.get(k, "none"),
                              key=state.seed("planner_sweep_y", "training.restart_overhead"))
    y_text = cols[1].text_input("y values", key=key(f"sweep_values:{y_key}", model.default_values(scenario, y_key)),
                                disabled=not y_key) if y_key else ""
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
        st.caption(f"{' x '.join(str(len(a.values)) for a in axes)} points x {sweep_seeds} seeds = {total} runs.")
        if may_plan and st.button("Run sweep", type="primary"):
            bar = st.progress(0.0, text=f"{total} runs…")
            frame = sweep(scenario, axes, sweep_seeds, executor=executor(total),
                          progress=lambda done: bar.progress(done, text=f"{total} runs… {done:.0%}"))
            bar.empty()
            st.session_state["planner_sweep"] = (preset, sets, axes, x_numbers, y_numbers, frame)
    result = st.session_state.get("planner_sweep")
    if result is not None:
        s_preset, s_sets, s_axes, xs, ys, frame = result
        if (s_preset, s_sets) != (preset, sets):
            st.warning("The knobs changed since this sweep: its figures are for the earlier settings.")
        base = build(s_preset, sets=s_sets)
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
            st.plotly_chart(charts.sweep_heatmap(grid, xs, ys, x_title=x_param.label, y_title=y_param.label,
                                                 x_duration=x_param.duration, y_duration=y_param.duration,
                                                 young_daly_s=curve, young_daly_on=on or "x"), width="stretch")
        else:
            st.plotly_chart(charts.sweep_line(xs, summary["ettr_mean"].to_list(), summary["ettr_p5"].to_list(),
                                              summary["ettr_p95"].to_list(), x_title=x_param.label,
                                              x_duration=x_param.duration,
                                              closed_form=summary["closed_form_ettr_mean"].to_list()),
                            width="stretch")
        shown = bands(frame, by=[a.key for a in s_axes]).select(
            *[a.key for a in s_axes], "runs", "ettr_mean", "ettr_p5", "ettr_p95", "closed_form_ettr_mean",
            "ettr_with_network_mean", "mttf_hours_mean", "lost_usd_mean")
        number = st.column_config.NumberColumn
        st.dataframe(shown, hide_index=True, width="stretch", column_config={
            "ettr_mean": number("mean ETTR", format="percent"), "ettr_p5": number("ETTR p5", format="percent"),
            "ettr_p95": number("ETTR p95", format="percent"),
            "closed_form_ettr_mean": number("closed form", format="percent"),
            "ettr_with_network_mean": number("with network", format="percent",
                                             help="mean ETTR over the placement's network slowdown"),
            "mttf_hours_mean": number("mean MTTF (h)", format="%.1f"),
            "lost_usd_mean": number("mean lost (USD)", format="dollar")})
