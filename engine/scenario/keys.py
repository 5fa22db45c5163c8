"""Every scenario key with its type, default, bounds, meaning and source (presets: engine.scenario.presets).

Defaults are the `llama3-405b` scenario; each figure taken from ../shared/reference names its source.
engine.scenario validates values against these keys and builds scenarios from them.
"""

from dataclasses import dataclass
from typing import Any

from engine.limits import MAX_CLUSTER_GPUS, MAX_HOSTS, MAX_RUN_DAYS, MAX_SEED
from engine.reference import CAUSES, LLAMA3_DAYS, LLAMA3_PLANNED, LLAMA3_RATE_PER_1000_NODE_DAYS

# ----- the keys ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    """One scenario key: its type (`kind`), default, bounds and meaning."""

    name: str
    kind: str  # int, float, duration, bool, str, choice, datetime, optional_duration, optional_float
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    exclusive_minimum: bool = False


def _k(name, kind, default, doc, **bounds) -> Key:
    return Key(name, kind, default, doc, **bounds)


def _slow_keys(cause: str, what: str, factor: float, factor_source: str) -> tuple[Key, ...]:
    """slow.<cause>_rate, _duration and _factor: one cause of fail-slow episodes (engine.sim.slow)."""
    return (
        _k(
            f"slow.{cause}_rate",
            "float",
            0.0,
            f"fail-slow episodes of {what} per 1,000 host-days; 0: none (the default, so every calibrated preset "
            "stays as published: their measured ETTRs and times to train already hold whatever slowness those "
            "clusters had). FALCON (arXiv 2410.12588, ATC'25) saw fail-slows delay large jobs 1.34x on average: 4 "
            "a cause (16 in all) with the default durations and factors give a 2,048-host job that (Goodput's "
            "calibration, tests/test_fail_slow.py)",
            minimum=0,
        ),
        _k(
            f"slow.{cause}_duration",
            "duration",
            "1h",
            f"mean length of a {cause} fail-slow episode, log-normal with sigma 1.5 (engine.sim.slow), so a 1 h mean "
            "spans about 40 s to 10 h (1st to 99th percentile): FALCON (arXiv 2410.12588) saw fail-slows last from "
            "tens of seconds to nearly ten hours",
            minimum=1,
        ),
        _k(
            f"slow.{cause}_factor",
            "float",
            factor,
            f"slowdown of a {cause} fail-slow: the slow component runs at 1/factor of its speed, and a synchronous "
            f"job at the pace of its slowest host ({factor_source})",
            minimum=1,
            maximum=100,
        ),
    )


# the classes of cause a repair law can differ by: the scope of the fault's cause (engine.sim.failures.SCOPE)
REPAIR_CLASSES = ("gpu", "host", "network")
_CLASS_WORDS = {
    "gpu": "a GPU's fault (a reseat, a swap)",
    "host": "a host's fault (a PSU, a board, memory)",
    "network": "a network fault (a cable, a switch)",
}


def _repair_class_keys() -> tuple[Key, ...]:
    """repair.fix_<class>, repair.rma_fraction_<class> and repair.rma_time_<class>: the repair law of one class of
    cause (engine.sim.repair); None (empty), the overall law's key. A PSU can take weeks and a GPU reseat hours:
    one law misfits both (issue 46)."""
    keys = []
    for base, kind, what in (
        ("fix", "optional_duration", "mean hands-on repair time"),
        ("rma_fraction", "optional_float", "share of repairs that return the part to the vendor"),
        ("rma_time", "optional_duration", "mean turnaround of a return to the vendor"),
    ):
        bounds = {"minimum": 0, "maximum": 1} if kind == "optional_float" else {}
        for cls in REPAIR_CLASSES:
            keys.append(
                _k(
                    f"repair.{base}_{cls}",
                    kind,
                    "",
                    f"{what} of {_CLASS_WORDS[cls]}; None: repair.{base} (the overall law; empty in a scenario"
                    " file)",
                    **bounds,
                )
            )
    return tuple(keys)


# Defaults are the `llama3-405b` scenario; each figure from ../shared/reference names its source.
KEYS: tuple[Key, ...] = (
    # cluster shape: Llama 3 paper §3.3 (24,576 H100 in 8 pods of 192 racks of 2 Grand Teton hosts of 8 GPUs)
    _k("cluster.preset", "str", "", "take the cluster shape (cluster.*) of this preset"),
    _k(
        "cluster.gpus",
        "int",
        24576,
        "GPUs in the cluster (a multiple of cluster.gpus_per_host)",
        minimum=1,
        maximum=MAX_CLUSTER_GPUS,
    ),
    _k("cluster.gpus_per_host", "int", 8, "GPUs per host (Grand Teton: 8)", minimum=1, maximum=64),
    _k(
        "cluster.hosts_per_rack",
        "int",
        2,
        "hosts per rack, behind one rack switch (RTSW)",
        minimum=1,
        maximum=MAX_HOSTS,
    ),
    _k(
        "cluster.racks_per_pod",
        "int",
        192,
        "racks per pod (AI zone; 192 racks = 3,072 GPUs)",
        minimum=1,
        maximum=MAX_HOSTS,
    ),
    _k(
        "cluster.racks_per_row", "int", 16, "racks in one row of the floor plan", minimum=1, maximum=MAX_HOSTS
    ),
    _k("cluster.fabric", "choice", "roce", "network fabric", choices=("roce", "infiniband")),
    _k("cluster.gpu_model", "str", "H100-SXM5-80GB", "GPU model name"),
    _k("cluster.gpu_tdp_w", "float", 700.0, "GPU power limit in watts (H100 raised to 700 W)", minimum=1),
    _k(
        "cluster.rack_power_budget_kw",
        "float",
        24.0,
        "power budget of one rack in kW (2 Grand Teton hosts at ~10.2 kW each, plus the switch)",
        minimum=0.1,
    ),
    # simulation
    _k(
        "simulation.days",
        "float",
        float(LLAMA3_DAYS),
        "simulated days (Llama 3 snapshot: 54)",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_RUN_DAYS,
    ),
    _k(
        "simulation.seed",
        "int",
        7,
        "seed of the one random generator everything draws from",
        minimum=0,
        maximum=MAX_SEED,
    ),
    _k("simulation.start", "datetime", "2024-03-01T00:00:00Z", "wall-clock time of t = 0"),
    _k("simulation.telemetry", "bool", True, "generate per-GPU telemetry (off: summary tables only)"),
    _k(
        "simulation.telemetry_resolution",
        "duration",
        "1h",
        "interval between GPU telemetry samples",
        minimum=1,
    ),
    # failures: Llama 3 paper Table 5 and §3.3.4 (reference README §2)
    _k(
        "failures.rate_per_1000_node_days",
        "float",
        round(LLAMA3_RATE_PER_1000_NODE_DAYS, 4),
        "unexpected interruptions per 1,000 host-days, all causes (Llama 3: 419 / 54 d / 2,048 hosts)",
        minimum=0,
    ),
    _k("failures.scale", "float", 1.0, "multiplier on every unexpected rate", minimum=0),
    _k(
        "failures.planned_per_day",
        "float",
        round(LLAMA3_PLANNED / LLAMA3_DAYS, 4),
        "planned interruptions of the flagship job a day (Llama 3: 47 in 54 days)",
        minimum=0,
    ),
    _k(
        "failures.distribution",
        "choice",
        "exponential",
        "inter-arrival law of failures per host",
        choices=("exponential", "weibull"),
    ),
    _k(
        "failures.weibull_shape",
        "float",
        0.7,
        "Weibull shape (< 1: infant mortality, as Meta sees for GPUs off the bus and cables)",
        minimum=0,
        exclusive_minimum=True,
        maximum=10,
    ),
    _k(
        "failures.sdc_detection_delay",
        "duration",
        "1h",
        "how late silent data corruption is noticed (training continues on bad data meanwhile)",
    ),
    _k(
        "failures.nccl_timeout_detection",
        "duration",
        "10m",
        "how late a hung collective is noticed (PyTorch's NCCL watchdog default: 10 min)",
    ),
    _k(
        "failures.network_rack_share",
        "float",
        0.2,
        "share of network faults that take a rack switch (every host of the rack) rather than one cable "
        "(Goodput's choice: Meta reports cables as the common case)",
        minimum=0,
        maximum=1,
    ),
    # network: the fabric's traffic and its own faults (engine.fabric.network, engine.fabric.traffic)
    _k(
        "network.gbps_per_gpu",
        "float",
        25.0,
        "mean network demand of a GPU in a multi-host job, Gbps (Goodput's estimate for Llama 3 405B, whose "
        "parallelism is in the paper's Table 4, not in ../shared/reference: TP 8 inside the host, PP 16, DP 128 "
        "with FSDP; ~6.3 GB of bf16 gradients per GPU reduce-scattered in fp32 and all-gathered each ~6 s step "
        "gives ~25 Gbps of the 400 Gbps NIC)",
        minimum=0,
    ),
    _k(
        "network.fabric_faults_per_day",
        "float",
        0.5,
        "faults a day of the fabric above the racks (rack-to-spine cables; 1 in 10 a whole spine switch) that "
        "ECMP routes around without interrupting jobs (Goodput's assumption)",
        minimum=0,
    ),
    _k(
        "network.link_samples",
        "choice",
        "switches",
        "which links get a utilisation sample at every telemetry step: all (every NIC cable too: 1.9x the rows "
        "on llama3-405b), switches (the links between switches; a NIC cable only while it is down or logs "
        "errors: its load is its GPU's job's demand), or off",
        choices=("switches", "all", "off"),
    ),
    _k(
        "network.flap_window",
        "duration",
        "2h",
        "how long a cable flaps (raising its error counters) before it fails (Goodput's assumption)",
    ),
    # training: the flagship job
    _k("training.name", "str", "llama3-405b-pretrain", "name of the flagship job"),
    _k(
        "training.gpus",
        "int",
        16384,
        "GPUs of the flagship job (Llama 3 405B: 16,384)",
        minimum=0,
        maximum=MAX_CLUSTER_GPUS,
    ),
    _k(
        "training.placement",
        "choice",
        "pack",
        "where the flagship job and its spares sit: pack (whole racks and pods in host order, ranked in that "
        "order: Meta's topology-aware placement, Llama 3 paper §3.3) or spread (dealt round-robin over pods, one "
        "host a rack first, ranked in that order: every rack-switch fault reaches the job and its rings cross "
        "pods)",
        choices=("pack", "spread"),
    ),
    _k(
        "training.checkpoint_interval",
        "duration",
        "5m",
        "time between checkpoints (Young-Daly sqrt(2 w MTTF) with w ~ 3.3 s and MTTF ~ 3.1 h gives ~4.5 min)",
        minimum=1,
    ),
    _k(
        "training.checkpoint_write",
        "optional_duration",
        "",
        "time a checkpoint blocks training; empty: derived from storage.* (size per GPU / shared bandwidth)",
    ),
    _k(
        "training.restart_overhead",
        "duration",
        "10m",
        "detection, rescheduling, initialisation and restore after an interruption "
        "(ByteDance MegaScale: detection + diagnosis under 10 min)",
    ),
    _k(
        "training.recovery",
        "choice",
        "restart",
        "how the flagship job recovers from a failure: restart (stop every host, swap in spares, reload the last "
        "checkpoint), in_memory_checkpoint (Gemini, SOSP'23: reload from peers' CPU memory), replica_drop (Meta "
        "FT-HSDP, arXiv 2602.00277: the failed data-parallel replica drops out, the rest train on) or hot_spare "
        "(NVIDIA NVRx / ByteRobust: swap in a warm standby without a scheduling round)",
        choices=("restart", "in_memory_checkpoint", "replica_drop", "hot_spare"),
    ),
    _k(
        "training.work",
        "optional_duration",
        "",
        "the flagship job's work as ideal compute: its wall clock with no failure, checkpoint or restart (e.g. "
        "40d); set, the run ends when the job has trained that long (its time to train) or at simulation.days, "
        "whichever comes first; empty: it trains until simulation.days. AIReSim (arXiv 2603.07041) simulates until "
        "the job's work is done: a fixed horizon misreads every knob that changes how long a run takes",
    ),
    # ----- recovery strategies (engine.sim.recovery) -----
    _k(
        "recovery.memory_checkpoint_interval",
        "duration",
        "1m",
        "in_memory_checkpoint: time between copies of the job's state into peers' CPU memory (Gemini, SOSP'23, "
        "copies every iteration)",
        minimum=1,
    ),
    _k(
        "recovery.memory_copies",
        "int",
        1,
        "in_memory_checkpoint: peer hosts holding a copy of each host's state (Gemini: groups of 2 hosts, one "
        "peer); a failure that takes a host and all its peers loses the copy and falls back to storage",
        minimum=1,
        maximum=7,
    ),
    _k(
        "recovery.replicas",
        "int",
        16,
        "replica_drop: data-parallel replicas of the model (HSDP replica groups; the job's hosts split evenly in "
        "rank order); while k are out the job trains at (replicas - k) / replicas of its throughput (Goodput's "
        "choice: arXiv 2602.00277 does not give its count; 16 keeps a replica of the 16,384-GPU default job at "
        "1,024 GPUs)",
        minimum=2,
        maximum=MAX_HOSTS,
    ),
    _k(
        "recovery.drop_stall",
        "duration",
        "3m",
        "replica_drop: time every replica stalls while the failed one is dropped (arXiv 2602.00277: 3 min, against "
        "10 min for a full restart)",
    ),
    _k(
        "recovery.rejoin",
        "duration",
        "10m",
        "replica_drop: time a dropped replica takes to rejoin once its hosts are replaced: it restarts as a job "
        "would (training.restart_overhead's 10 min, Goodput's assumption) and catches up from its peers without "
        "stalling them (arXiv 2602.00277's non-blocking catch-up)",
    ),
    _k(
        "recovery.hot_spares",
        "int",
        16,
        "hot_spare: warm standby hosts the job holds initialised and idle, taken from the spare pool at the start "
        "(spares.hosts must hold them) and replaced from it when used (AIReSim Table 1: 16)",
        minimum=0,
        maximum=MAX_HOSTS,
    ),
    _k(
        "recovery.hot_swap",
        "duration",
        "3m",
        "hot_spare: restart with a warm standby swapped in, no scheduling round (AIReSim Table 1: 3 min)",
    ),
    # ----- end of recovery strategies -----
    # ----- fail-slow episodes (engine.sim.slow) -----
    *(
        key
        for cause, what, factor, factor_source in (
            (
                "gpu_thermal",
                "GPU thermal throttling (clocks cut as the GPU or its inlet runs hot)",
                1.3,
                "Goodput's assumption: an H100 throttled from its 1,980 MHz boost clock to about 1,500 MHz",
            ),
            (
                "gpu_power",
                "GPU power capping or power brake (clocks cut to hold the power limit)",
                1.2,
                "Goodput's assumption: a 700 W H100 capped near 600 W",
            ),
            (
                "host",
                "slow host: CPU contention, memory, a PCIe link trained down",
                1.5,
                "Goodput's assumption; FALCON (arXiv 2410.12588) finds CPU contention among the causes of "
                "computation fail-slows",
            ),
            (
                "network",
                "degraded NIC or cable: a link retrained at lower speed, FEC/symbol errors, flaps",
                2.0,
                "Goodput's assumption: a 400G port retrained at 200G halves a communication-bound step; FALCON "
                "finds cross-node communication fail-slows the most costly",
            ),
        )
        for key in _slow_keys(cause, what, factor, factor_source)
    ),
    _k(
        "slow.gpu_thermal_daily_swing",
        "float",
        0.5,
        "gpu_thermal: how much the rate swings with the time of day (simulation.start's clock): the rate is "
        "rate x (1 + swing x cos(2 pi (hour - 15) / 24)), highest at 15:00 (Goodput's assumption; the Llama 3 "
        "paper, arXiv 2407.21783 §3.3.4, reports 1-2 % throughput swings with the time of day from temperature)",
        minimum=0,
        maximum=1,
    ),
    _k(
        "slow.policy",
        "choice",
        "ignore",
        "what is done about a fail-slow host of the flagship job: ignore (it runs slow until the episode ends), "
        "swap (detected slow.detect_after into the episode, the job stops gracefully, the host is swapped for a "
        "spare and goes to repair: one restart, no work lost) or drain (detected, the host leaves at the job's "
        "next interruption)",
        choices=("ignore", "swap", "drain"),
    ),
    _k(
        "slow.detect_after",
        "duration",
        "1h",
        "time from the start of a fail-slow episode to its detection (swap, drain) (Goodput's assumption: FALCON, "
        "arXiv 2410.12588, reports fail-slows found by hand today, over hours; its own detector takes minutes)",
    ),
    # ----- end of fail-slow episodes -----
    # storage: Tectonic (Llama 3 paper §3.3)
    _k(
        "storage.checkpoint_gb_per_gpu",
        "float",
        0.4,
        "checkpoint size per GPU in GB (405B params x 16 B / 16,384 GPUs ~ 0.4 GB; reference: 1 MB to 4 GB)",
        minimum=0,
    ),
    _k(
        "storage.bandwidth_gb_per_s",
        "float",
        2000.0,
        "storage write bandwidth shared by all writers, GB/s (Tectonic: 2 TB/s sustained)",
        minimum=0,
        exclusive_minimum=True,
    ),
    _k(
        "storage.peak_bandwidth_gb_per_s",
        "float",
        7000.0,
        "burst bandwidth, GB/s (Tectonic: 7 TB/s peak)",
        minimum=0,
        exclusive_minimum=True,
    ),
    # spares
    _k(
        "spares.hosts",
        "int",
        48,
        "hot spare hosts held back for the flagship job",
        minimum=0,
        maximum=MAX_HOSTS,
    ),
    _k(
        "spares.preempt_research",
        "bool",
        True,
        "with no spare left, the flagship job takes a research job's host (preempting it) instead of waiting",
    ),
    _k(
        "spares.preempt_handover",
        "duration",
        "20m",
        "time to stop a preempted research job and hand its host to the flagship job, which waits that long on "
        "top of its restart (AIReSim, arXiv 2603.07041: 20 min a preemption of its spare pool's work)",
    ),
    # repair: DCGM diagnostic levels (reference README §4)
    _k(
        "repair.technicians",
        "int",
        8,
        "technicians working on failed hosts at once",
        minimum=1,
        maximum=MAX_HOSTS,
    ),
    _k("repair.drain", "duration", "2m", "time to drain a failed host"),
    _k("repair.diagnose", "duration", "15m", "diagnosis of a failed host (dcgmi diag -r 3: ~15 min)"),
    _k("repair.fix", "duration", "4h", "mean hands-on repair time (reseat, swap a part, reflash)"),
    _k(
        "repair.rma_fraction",
        "float",
        0.1,
        "share of hardware repairs that return the part to the vendor",
        minimum=0,
        maximum=1,
    ),
    _k("repair.rma_time", "duration", "5d", "mean turnaround of a return to the vendor"),
    *_repair_class_keys(),
    _k(
        "repair.burn_in",
        "duration",
        "2h",
        "burn-in before a repaired host returns (dcgmi diag -r 4 + stress)",
    ),
    _k(
        "repair.lemon_failures",
        "int",
        3,
        "failures within repair.lemon_window that mark a host a lemon",
        minimum=2,
        maximum=1_000_000,
    ),
    _k("repair.lemon_window", "duration", "14d", "window over which repeated failures are counted"),
    # ----- bad hosts, diagnosis, repair outcomes, retirement (engine.sim.failures, engine.sim.repair) -----
    _k(
        "failures.bad_host_fraction",
        "float",
        0.0,
        "share of hosts that are systematically bad and fail at failures.bad_host_multiplier times the rate "
        "(AIReSim, arXiv 2603.07041, Table 1: 15 %)",
        minimum=0,
        maximum=1,
    ),
    _k(
        "failures.bad_host_multiplier",
        "float",
        5.0,
        "failure rate of a bad host, times the base rate, until a repair cures it (AIReSim Table 1: 5x, which "
        "AIReSim adds to a bad server's random rate: 6x in all, the value its 62.3 % ETR was computed with)",
        minimum=1,
        maximum=100,
    ),
    _k(
        "failures.only_while_computing",
        "bool",
        False,
        "drop the failures of hosts that are not computing: spares, idle hosts and the flagship job's hosts while "
        "it restarts or waits (AIReSim, arXiv 2603.07041: servers fail only while the job runs on them); off: "
        "hosts fail whatever they do",
    ),
    # ----- bursts: failures of several hosts at one instant (engine.sim.failures.draw_bursts) -----
    # Goodput's model, no published figure behind the defaults: real fault histories come in bursts (a rack's
    # PDU, a leaf switch, a bad batch of parts), which a calibration fits from the observed faults (DESIGN's
    # word: faults of several hosts starting together).
    _k(
        "failures.burst_per_day",
        "float",
        0.0,
        "correlated failures a day across the whole cluster, each striking at least 2 hosts at the same instant "
        "(a rack's PDU, a leaf switch, a bad batch of parts), on top of the per-host rate and times "
        "failures.scale; each host struck is an incident of its own, and a job hit on several hosts is "
        "interrupted once; 0: none (the default)",
        minimum=0,
        maximum=1000,
    ),
    _k(
        "failures.burst_size_mean",
        "float",
        4.0,
        "mean hosts one burst strikes, at least 2: the size is 2 + k, k geometric on 0, 1, 2, ... with P(size = "
        "2 + k) = (1 - p)^k p, p = 1 / (burst_size_mean - 1) (mean 2: always 2 hosts), capped at the cluster's "
        "hosts (Goodput's choice: 4, two racks of 2 hosts)",
        minimum=2,
        maximum=MAX_HOSTS,
    ),
    _k(
        "failures.burst_hosts",
        "choice",
        "rack",
        "which hosts a burst strikes: rack (consecutive hosts in host order from a uniformly drawn first host, "
        "wrapping around past the last: host ids are rack-contiguous, so a rack's PDU or a leaf switch's hosts) "
        "or any (distinct hosts drawn uniformly over the cluster)",
        choices=("rack", "any"),
    ),
    _k(
        "failures.burst_window",
        "duration",
        "1m",
        "failures of different hosts starting within this window are one burst: how a calibration groups "
        "observed faults into bursts; the simulator strikes a burst's hosts at one instant, so its bursts are "
        "always within the window",
        minimum=0,
    ),
    # ----- end of bursts -----
    _k(
        "diagnosis.probability",
        "float",
        1.0,
        "share of single-host failures whose diagnosis finds a host to repair; otherwise the host stays in service, "
        "its job restarts on it and a bad host's fault recurs (AIReSim: diagnosis probability)",
        minimum=0,
        maximum=1,
    ),
    _k(
        "diagnosis.wrong_host",
        "float",
        0.0,
        "share of diagnosed failures of a flagship job host that blame another host of the job: it goes to "
        "repair and the faulty one stays (AIReSim: diagnosis uncertainty)",
        minimum=0,
        maximum=1,
    ),
    _k(
        "diagnosis.over_eviction",
        "int",
        0,
        "extra suspect hosts evicted with each host blamed for a flagship job failure: its nearest neighbours in "
        "the job's rank order, each repaired on its own (ByteRobust, SOSP'25, evicts beyond the proven faulty)",
        minimum=0,
        maximum=64,
    ),
    _k(
        "repair.automatic",
        "duration",
        "0s",
        "mean automatic repair (reboot, reset, reflash; exponential) tried before hands-on repair (AIReSim Table "
        "1: 2 h); 0s: none",
    ),
    _k(
        "repair.escalation",
        "float",
        1.0,
        "share of automatic repairs that do not fix the host and go on to hands-on repair (AIReSim Table 1: 80 %)",
        minimum=0,
        maximum=1,
    ),
    _k(
        "repair.automatic_silent_failure",
        "float",
        0.0,
        "share of automatic repairs that report success but leave the fault: a bad host comes back still bad (a "
        "good host's failures are random: nothing is left to fix; AIReSim's model) (AIReSim Table 1: 40 %)",
        minimum=0,
        maximum=1,
    ),
    _k(
        "repair.manual_silent_failure",
        "float",
        0.0,
        "share of hands-on repairs that report success but leave the fault: a bad host comes back still bad "
        "(AIReSim Table 1: 20 %)",
        minimum=0,
        maximum=1,
    ),
    _k(
        "retirement.policy",
        "choice",
        "none",
        "when a host is retired for good: none, threshold (retirement.failures within retirement.window) or "
        "score (failures weighted by age, half-life retirement.window, reaching retirement.failures)",
        choices=("none", "threshold", "score"),
    ),
    _k(
        "retirement.failures",
        "int",
        3,
        "failures blamed on a host (threshold), or its score (score), that retire it instead of repairing it",
        minimum=1,
        maximum=1_000_000,
    ),
    _k(
        "retirement.window",
        "duration",
        "30d",
        "window (threshold) or half-life (score) of the failures counted",
        minimum=1,
    ),
    _k(
        "spares.selection",
        "choice",
        "reserved",
        "where the flagship job's replacement hosts come from: reserved, its own spare pool (spares.hosts), then a "
        "research host only when the pool is empty (spares.preempt_research); any_idle, every idle host of the "
        "cluster (the spare pool and research hosts with no job running), those that never ran the job first, "
        "as AIReSim's host selection rebuilds a job from its working pool's idle servers (arXiv 2603.07041, "
        "scheduler.py): hosts never used, bad ones among them, rotate into the job. Half AIReSim's Table 1 job "
        "on its cluster (2,048 of 4,360 servers, 411 days; 3 seeds each): AIReSim's own code 75.7 % ETTR and "
        "648 systematic failures; Goodput reserved 76.9 % and 327, any_idle 76.0 % and 601 (tests/"
        "test_validation_airesim.py)",
        choices=("reserved", "any_idle"),
    ),
    _k(
        "spares.prefer_healthy",
        "bool",
        False,
        "take the spare host with the fewest recent failures first (failures within retirement.window, or the "
        "score under retirement.policy = score; AIReSim's fewest-failures host selection), not the first free",
    ),
    # ----- end of bad hosts -----
    # research jobs on the GPUs outside the flagship job
    _k(
        "research.utilization",
        "float",
        0.85,
        "share of the remaining GPUs research jobs keep busy",
        minimum=0,
        maximum=1,
    ),
    _k("research.median_duration", "duration", "6h", "median research job length (log-normal)", minimum=1),
    _k("research.max_hosts", "int", 64, "largest research job in hosts", minimum=1, maximum=MAX_HOSTS),
    # money
    _k("cost.gpu_hour_usd", "float", 2.5, "price of one GPU-hour in USD", minimum=0),
)
KEY_BY_NAME = {k.name: k for k in KEYS}
MIX_PREFIX = "failures.mix."
for _cause in CAUSES:  # failures.mix.<cause>: relative weights, default = the Llama 3 counts
    KEY_BY_NAME[MIX_PREFIX + _cause.cause] = Key(
        MIX_PREFIX + _cause.cause,
        "float",
        float(_cause.count),
        f"relative weight of {_cause.label} (Llama 3: {_cause.count} of 419)",
        minimum=0,
    )
SECTIONS = sorted({name.split(".")[0] for name in KEY_BY_NAME})
