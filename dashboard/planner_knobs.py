"""The Planner's knobs as widgets: sliders for what is continuous (rates, durations, sizes, prices), number
inputs for what is counted (GPUs, hosts, technicians), each with its unit in the label or in its values.

Durations slide over round values (engine.analysis.planner.DURATION_LADDER_S) and read as durations ("30 min"); a value
a URL brings that is not on the ladder joins it, so a shared link shows exactly its own settings.
"""

import math
from collections.abc import Callable, Iterable

import streamlit as st

from dashboard import planner_model as model
from engine.analysis.planner import DURATION_LADDER_S, NICE_MANTISSAS
from engine.twin.scale import STRATEGIES, STRATEGY_LABELS

# Why these knobs leave the closed-form ETTR where it is (the issue: every knob moves the headline, or the
# page says why not). Shown next to them.
WHY_CLUSTER_AND_SPARES = (
    "Cluster GPUs and hot spares do not move the closed-form ETTR: it counts the job's own hosts only. They "
    "move the spare cover below (spare hosts in use, chance the spares run out, technician load); Run shows "
    "what running out costs as waiting for spare hosts."
)
WHY_REPAIR = (
    "Repair turnaround and technicians do not move the closed-form ETTR either (a failed host is swapped for a "
    "spare at once): they move the spare cover below."
)
# What each strategy does, under its selector (the scenario key training.recovery gives the sources).
STRATEGY_HELP = {
    "restart": "Every failure stops the whole job: a spare host is swapped in and the job reloads its last "
    "checkpoint (today's practice, the closed form's model).",
    "in_memory_checkpoint": "Gemini (SOSP'23): the job also copies its state to peer hosts' CPU memory, and "
    "reloads from there unless the peers' copy is lost too; storage checkpoints remain the fallback.",
    "replica_drop": "Meta's fault-tolerant HSDP (arXiv 2602.00277): the failed data-parallel replica drops out "
    "and rejoins later; the others train on at reduced throughput.",
    "hot_spare": "NVIDIA NVRx / ByteRobust: warm standby hosts, initialised and idle, are swapped in without a "
    "scheduling round. The standbys come out of the hot spares above.",
}
WHY_STRATEGY = (
    "The closed form models restart: the strategy's effect shows in a simulated run, on the Strategies at scale "
    "tab and, for warm standbys, on the Standby break-even tab."
)


def knob_duration(seconds: float) -> str:
    """A duration knob's value, exact to the second in its two largest units: "1 min 30 s", "1 h 30 min",
    "2 d"; under 10 s with its decimals ("0.077 s", "3.3 s"). Two positions of a slider never read the same."""
    if 0 < seconds < 10 and seconds != round(seconds):
        return f"{seconds:.2g} s"
    left, parts = round(seconds), []
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")):
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count} {unit}")
    return " ".join(parts[:2]) or "0 s"


def duration_options(low_s: float, high_s: float, *keep: float) -> list[float]:
    """The ladder's durations from `low_s` to `high_s` (0 first when low_s is 0), plus each value in `keep`."""
    ladder = [0.0] if low_s == 0 else []
    ladder += [float(v) for v in DURATION_LADDER_S if low_s <= v <= high_s]
    return sorted({*ladder, *(float(v) for v in keep if v is not None)})


def number_options(low: float, high: float, *keep: float, zero: bool = False) -> list[float]:
    """Nice numbers (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) from `low` to `high`, plus each value in `keep`."""
    values = {0.0} if zero else set()
    for power in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        values |= {float(f"{m * 10.0**power:.6g}") for m in NICE_MANTISSAS if low <= m * 10.0**power <= high}
    return sorted(values | {float(v) for v in keep if v is not None})


def ladder(
    label: str, options: Iterable[float], key: str, fmt: Callable[[float], str], help: str | None = None
):
    """A select_slider over `options`, whose current value (the session's, else the URL's) is always one; an
    option that would read the same as it ("1 min 30 s" for 90 s beside 90.2 s) gives way to it."""
    current = float(st.session_state[key])
    by_text = {fmt(v): float(v) for v in sorted(options)} | {fmt(current): current}
    return st.select_slider(label, sorted(by_text.values()), key=key, format_func=fmt, help=help)


def settings(first: model.Knobs, preset: str, key: Callable[[str, object], str]) -> model.Knobs:
    """The Settings section: three columns of knobs, starting from `first` (the URL's), as Knobs."""
    default = model.defaults(preset)
    left, middle, right = st.columns(3)
    with left:
        cluster = cluster_knobs(first, key)
    with middle:
        failures = failure_knobs(first, default, key)
    with right:
        checkpoints = checkpoint_knobs(first, default, key)
        recovery = recovery_knobs(first, default, key)
    return model.Knobs(
        preset=preset, gpus_per_host=first.gpus_per_host, **cluster, **failures, **checkpoints, **recovery
    )


def cluster_knobs(first: model.Knobs, key: Callable[[str, object], str]) -> dict:
    """The cluster and the job: sizes, hot spares, placement, network demand and price, as Knobs fields."""
    per_host = first.gpus_per_host
    st.markdown("**Cluster and job**")
    cluster_gpus = st.number_input(
        "Cluster GPUs",
        min_value=per_host,
        max_value=1_048_576,
        step=per_host * 256,
        key=key("cluster", first.cluster_gpus),
    )
    job_gpus = st.number_input(
        "Job GPUs",
        min_value=0,
        max_value=1_048_576,
        step=per_host,
        key=key("gpus", first.job_gpus),
        help=f"whole hosts of {per_host} GPUs",
    )
    spares = st.number_input(
        "Hot spares (hosts)",
        min_value=0,
        max_value=100_000,
        step=1,
        key=key("spares", first.spares),
        help="held back to replace a failed job host",
    )
    st.caption(WHY_CLUSTER_AND_SPARES)
    placement = st.radio(
        "Placement",
        model.PLACEMENTS,
        horizontal=True,
        key=key("place", first.placement),
        help="pack: whole racks and pods in host order, ranked so (Meta's topology-aware "
        "placement). spread: dealt round-robin over the pods, one host a rack first, "
        "ranked in that order: every rack-switch fault reaches the job and its rings "
        "cross pods",
    )
    gbps_key = key("gbps", first.gbps_per_gpu)
    gbps = st.slider(
        "Network demand per GPU (Gbps)",
        0.0,
        max(400.0, math.ceil(st.session_state[gbps_key])),
        step=5.0,
        format="%.0f Gbps",
        key=gbps_key,
        help="what the job's collectives ask of each GPU's 400 Gbps NIC (Llama 3 405B: ~25)",
    )
    price_key = key("price", first.gpu_hour_usd)
    price = st.slider(
        "GPU-hour price (USD)",
        0.0,
        max(10.0, math.ceil(st.session_state[price_key])),
        step=0.05,
        format="$%.2f",
        key=price_key,
    )
    return {
        "cluster_gpus": int(cluster_gpus),
        "job_gpus": int(job_gpus),
        "spares": int(spares),
        "placement": placement,
        "gbps_per_gpu": float(gbps),
        "gpu_hour_usd": float(price),
    }


def failure_knobs(first: model.Knobs, default: model.Knobs, key: Callable[[str, object], str]) -> dict:
    """Failures and repair: the rate, its per-category multipliers, repair turnaround and technicians, as Knobs
    fields."""
    st.markdown("**Failures and repair**")
    rate = ladder(
        "Failure rate (per 1,000 host-days)",
        number_options(0.1, 1000.0, default.rate, zero=True),
        key("rate", first.rate),
        lambda v: f"{v:.3g}",
        help="unexpected interruptions per 1,000 host-days, every category at x1 (Llama 3: 3.79; RSC-1: 6.5)",
    )
    with st.expander("Per-category multipliers"):
        st.caption("Scale the causes of one category (the Llama 3 table's), and with them the total rate.")
        multipliers = {
            cat: st.slider(f"{cat} (x)", 0.0, 10.0, step=0.1, key=key(url, min(first.multipliers[cat], 10.0)))
            for cat, url in model.CATEGORIES.items()
        }
    fix_s = ladder(
        "Repair turnaround",
        duration_options(15 * 60, 14 * 86400, default.repair_fix_s),
        key("fix", first.repair_fix_s),
        knob_duration,
        help="mean hands-on repair time of a failed host (repair.fix)",
    )
    technicians = st.number_input(
        "Technicians", min_value=1, max_value=10_000, step=1, key=key("techs", first.technicians)
    )
    st.caption(WHY_REPAIR)
    return {
        "rate": float(rate),
        "multipliers": multipliers,
        "repair_fix_s": float(fix_s),
        "technicians": int(technicians),
    }


def checkpoint_knobs(first: model.Knobs, default: model.Knobs, key: Callable[[str, object], str]) -> dict:
    """Checkpoint and restart: the interval, the write (as a time, or size and bandwidth) and the restart
    overhead, as Knobs fields."""
    st.markdown("**Checkpoint and restart**")
    interval_s = ladder(
        "Checkpoint interval",
        duration_options(60, 86400, default.interval_s),
        key("interval", first.interval_s),
        knob_duration,
        help="time between checkpoints",
    )
    write_mode = st.radio(
        "Checkpoint write",
        model.WRITE_MODES,
        horizontal=True,
        key=key("ckpt", first.write_mode),
        format_func={"time": "as a time", "storage": "size and bandwidth"}.get,
    )
    if write_mode == "time":
        write_s = ladder(
            "Checkpoint write time",
            duration_options(0, 3600, default.write_s),
            key("write", first.write_s),
            knob_duration,
            help="how long a checkpoint blocks training",
        )
        gb, bandwidth = first.checkpoint_gb_per_gpu, first.bandwidth_gb_per_s
    else:
        gb = ladder(
            "Checkpoint size per GPU (GB)",
            number_options(0.01, 100.0, default.checkpoint_gb_per_gpu, zero=True),
            key("gb", first.checkpoint_gb_per_gpu),
            lambda v: f"{v:g} GB",
        )
        bandwidth = ladder(
            "Storage bandwidth (GB/s)",
            number_options(1.0, 100_000.0, default.bandwidth_gb_per_s),
            key("bw", first.bandwidth_gb_per_s),
            lambda v: f"{v:,g} GB/s",
            help="shared by every writer of the job",
        )
        write_s = first.write_s
    restart_s = ladder(
        "Restart overhead",
        duration_options(0, 4 * 3600, default.restart_s),
        key("restart", first.restart_s),
        knob_duration,
        help="detection, rescheduling, initialisation and restore after an interruption",
    )
    return {
        "interval_s": float(interval_s),
        "write_mode": write_mode,
        "write_s": float(write_s),
        "checkpoint_gb_per_gpu": float(gb),
        "bandwidth_gb_per_s": float(bandwidth),
        "restart_s": float(restart_s),
    }


def recovery_knobs(first: model.Knobs, default: model.Knobs, key: Callable[[str, object], str]) -> dict:
    """The recovery strategy and its own knobs (only the chosen strategy's are shown; the others keep their
    first values), as Knobs fields."""
    st.markdown("**Recovery from a failure**")
    strategy = st.selectbox(
        "Recovery strategy",
        STRATEGIES,
        format_func=STRATEGY_LABELS.get,
        key=key("recovery", first.recovery),
        help="training.recovery: how the flagship job recovers from a failure",
    )
    st.caption(STRATEGY_HELP[strategy])
    fields = {name: getattr(first, name) for name in model.STRATEGY_FIELDS}
    if strategy == "in_memory_checkpoint":
        fields["memory_interval_s"] = ladder(
            "Memory checkpoint interval",
            duration_options(1, 3600, default.memory_interval_s),
            key("mem_interval", first.memory_interval_s),
            knob_duration,
            help="time between copies of the job's state into peers' CPU memory",
        )
        fields["memory_copies"] = st.number_input(
            "Memory copies (peer hosts)",
            min_value=1,
            max_value=7,
            step=1,
            key=key("copies", first.memory_copies),
            help="peer hosts holding each host's copy: a failure that takes them all falls back to storage",
        )
    elif strategy == "replica_drop":
        fields["replicas"] = st.number_input(
            "Data-parallel replicas",
            min_value=2,
            max_value=100_000,
            step=1,
            key=key("replicas", first.replicas),
            help="the job's hosts split evenly into this many replicas; k out leave (replicas - k) / replicas "
            "of the throughput",
        )
        fields["drop_stall_s"] = ladder(
            "Drop stall",
            duration_options(0, 3600, default.drop_stall_s),
            key("stall", first.drop_stall_s),
            knob_duration,
            help="every replica stalls this long while the failed one is dropped",
        )
        fields["rejoin_s"] = ladder(
            "Rejoin time",
            duration_options(0, 86400, default.rejoin_s),
            key("rejoin", first.rejoin_s),
            knob_duration,
            help="a dropped replica's time to rejoin once its hosts are replaced",
        )
    elif strategy == "hot_spare":
        fields["hot_spares"] = st.number_input(
            "Warm standbys (hosts)",
            min_value=0,
            max_value=100_000,
            step=1,
            key=key("standbys", first.hot_spares),
            help="hosts kept initialised and idle, taken from the hot spares",
        )
        fields["hot_swap_s"] = ladder(
            "Hot swap",
            duration_options(0, 3600, default.hot_swap_s),
            key("swap", first.hot_swap_s),
            knob_duration,
            help="restart with a warm standby swapped in, instead of the restart overhead",
        )
    if strategy != "restart":
        st.caption(WHY_STRATEGY)
    int_fields = ("memory_copies", "replicas", "hot_spares")
    return {"recovery": strategy} | {k: int(v) if k in int_fields else float(v) for k, v in fields.items()}
