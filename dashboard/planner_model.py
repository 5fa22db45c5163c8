"""The Planner page's model, free of Streamlit: knobs <-> URL parameters, knobs -> scenario values, and the sweep
axes the page offers. The maths (category multipliers, checkpoint writes, the closed form's loss split, the
placement slowdown) is engine.analysis.planner's, so the command line can show the same figures.

The failure knobs: `rate` is the all-cause rate per 1,000 host-days with every category at x1; a category's
multiplier scales the weights of its causes (failures.mix.*) *and* the total rate by the same share, so
"GPU x2" doubles GPU failures and leaves every other category's rate alone. In scenario keys that is
failures.rate_per_1000_node_days = rate, failures.scale = sum(w x m) / sum(w), failures.mix.<cause> = w x m.
"""

import functools
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.analysis.analytics import ClosedForm, closed_form_ettr
from engine.analysis.planner import (
    category_scale,
    cause_weights,
    checkpoint_write_seconds,
    scaled_mix,
)
from engine.errors import GoodputError
from engine.reference import CAUSES
from engine.scenario import PRESETS, Scenario, build
from engine.scenario.keys import KEY_BY_NAME
from engine.store import Store
from engine.twin.calibrate import Calibration, calibrate
from engine.twin.scale import STRATEGIES, ScaleStudy
from engine.twin.sweep import Draw, LocalExecutor, usable_cores

# The failure categories of the Llama 3 table (engine.reference.CAUSES) and their URL names.
CATEGORIES: dict[str, str] = {
    "GPU": "m_gpu",
    "Host": "m_host",
    "Network": "m_network",
    "Dependency": "m_dependency",
    "Unplanned maintenance": "m_maint",
    "Unknown": "m_unknown",
}
assert {c.category for c in CAUSES} == set(CATEGORIES), "every reference category needs a multiplier"
WRITE_MODES = ("time", "storage")  # checkpoint write given as a time, or as size per GPU / bandwidth
MAX_MULTIPLIER = 100.0
IN_PROCESS_RUNS = 4  # up to this many runs always stay in this process
POOL_WORTH_S = 15.0  # less work than this stays in this process: starting a pool costs seconds


@dataclass(frozen=True)
class Knobs:
    """Every planner input, in page units (seconds, GPUs, USD)."""

    preset: str
    cluster_gpus: int
    job_gpus: int
    rate: float  # unexpected interruptions per 1,000 host-days, every category at x1
    interval_s: float
    write_mode: str
    write_s: float
    checkpoint_gb_per_gpu: float
    bandwidth_gb_per_s: float
    restart_s: float
    spares: int
    repair_fix_s: float
    technicians: int
    gpu_hour_usd: float
    multipliers: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 1.0))
    gpus_per_host: int = 8
    placement: str = "pack"  # training.placement
    gbps_per_gpu: float = 25.0  # network.gbps_per_gpu: what the job's collectives ask of each GPU's NIC
    # training.recovery and the recovery.* knobs (engine/scenario/keys.py gives each default its source)
    recovery: str = "restart"
    memory_interval_s: float = 60.0
    memory_copies: int = 1
    replicas: int = 16
    drop_stall_s: float = 180.0
    rejoin_s: float = 600.0
    hot_spares: int = 16
    hot_swap_s: float = 180.0


TWIN_PREFIX = "twin:"  # a base named "twin:RUN_ID": the scenario fitted to a stored run (the Twin page)


def twin_base(run_id: str) -> str:
    return TWIN_PREFIX + run_id


def base_scenario(preset: str) -> Scenario:
    """The scenario the knobs start from: a preset, or the twin fitted to a stored run ("twin:RUN_ID",
    engine.twin.calibrate, cached per run file by dashboard.queries.twin); a GoodputError names a run that
    is gone or has nothing to fit."""
    if preset.startswith(TWIN_PREFIX):
        store = Store(os.environ.get("GOODPUT_STORE") or None)  # the dashboard's store (dashboard.state)
        run_id = preset[len(TWIN_PREFIX) :]
        try:
            version = store.path_of(run_id).stat().st_mtime_ns
        except (OSError, GoodputError):
            raise GoodputError(f"no run {run_id!r} in the store to plan from") from None
        return _fitted_scenario(str(store.root), run_id, version)
    return build(preset)


def twin_draw(preset: str) -> Draw | None:
    """For a twin base, what each Monte-Carlo run simulates: the knobs' scenario with the fitted keys the knobs
    left at the fit drawn from their laws (engine.twin.uncertainty); None for a preset."""
    if not preset.startswith(TWIN_PREFIX):
        return None
    store = Store(os.environ.get("GOODPUT_STORE") or None)
    run_id = preset[len(TWIN_PREFIX) :]
    try:
        version = store.path_of(run_id).stat().st_mtime_ns
    except (OSError, GoodputError):
        return None
    return _calibration(str(store.root), run_id, version).uncertainty().scenario_for


@functools.lru_cache(maxsize=16)
def _calibration(root: str, run_id: str, version: int) -> Calibration:
    """The fit of one version of a run's file (a watched run grows: a new version is a new fit)."""
    return calibrate(Store(root), run_id)


@functools.lru_cache(maxsize=16)
def _fitted_scenario(root: str, run_id: str, version: int) -> Scenario:
    return _calibration(root, run_id, version).scenario()


def known_base(preset: str) -> bool:
    """Whether `preset` names a preset or a twin that can be fitted now."""
    if preset in PRESETS:
        return True
    if not preset.startswith(TWIN_PREFIX):
        return False
    try:
        base_scenario(preset)
    except GoodputError:
        return False
    return True


def defaults(preset: str) -> Knobs:
    """The knobs of a preset (or a twin, "twin:RUN_ID") as it stands (its failures.scale folded into the rate)."""
    base = base_scenario(preset)
    given = base["training.checkpoint_write"]
    return Knobs(
        preset=preset,
        cluster_gpus=base["cluster.gpus"],
        job_gpus=base["training.gpus"],
        rate=base["failures.rate_per_1000_node_days"] * base["failures.scale"],
        interval_s=base["training.checkpoint_interval"],
        write_mode="storage" if given is None else "time",
        write_s=base.checkpoint_write_s,
        checkpoint_gb_per_gpu=base["storage.checkpoint_gb_per_gpu"],
        bandwidth_gb_per_s=base["storage.bandwidth_gb_per_s"],
        restart_s=base["training.restart_overhead"],
        spares=base["spares.hosts"],
        repair_fix_s=base["repair.fix"],
        technicians=base["repair.technicians"],
        gpu_hour_usd=base["cost.gpu_hour_usd"],
        gpus_per_host=base["cluster.gpus_per_host"],
        placement=base["training.placement"],
        gbps_per_gpu=base["network.gbps_per_gpu"],
        recovery=base["training.recovery"],
        memory_interval_s=base["recovery.memory_checkpoint_interval"],
        memory_copies=base["recovery.memory_copies"],
        replicas=base["recovery.replicas"],
        drop_stall_s=base["recovery.drop_stall"],
        rejoin_s=base["recovery.rejoin"],
        hot_spares=base["recovery.hot_spares"],
        hot_swap_s=base["recovery.hot_swap"],
    )


# (knob field, URL name, lowest, highest): numbers outside are clamped, text that is no number falls back.
NUMERIC: tuple[tuple[str, str, float, float], ...] = (
    ("cluster_gpus", "cluster", 8, 1_048_576),
    ("job_gpus", "gpus", 0, 1_048_576),
    ("rate", "rate", 0, 1000),
    ("interval_s", "interval", 1, 7 * 86400),
    ("write_s", "write", 0, 86400),
    ("checkpoint_gb_per_gpu", "gb", 0, 1e4),
    ("bandwidth_gb_per_s", "bw", 0.001, 1e7),
    ("restart_s", "restart", 0, 7 * 86400),
    ("spares", "spares", 0, 1e5),
    ("repair_fix_s", "fix", 0, 365 * 86400),
    ("technicians", "techs", 1, 10_000),
    ("gpu_hour_usd", "price", 0, 1e4),
    ("gbps_per_gpu", "gbps", 0, 3200),
)
# The strategies' own knobs, read like NUMERIC but written to the URL only under their strategy (RECOVERY_KNOBS).
RECOVERY_NUMERIC: tuple[tuple[str, str, float, float], ...] = (
    ("memory_interval_s", "mem_interval", 1, 86400),
    ("memory_copies", "copies", 1, 7),
    ("replicas", "replicas", 2, 100_000),
    ("drop_stall_s", "stall", 0, 86400),
    ("rejoin_s", "rejoin", 0, 7 * 86400),
    ("hot_spares", "standbys", 0, 100_000),
    ("hot_swap_s", "swap", 0, 86400),
)
PLACEMENTS = KEY_BY_NAME["training.placement"].choices
INTEGER_FIELDS = frozenset(
    {"cluster_gpus", "job_gpus", "spares", "technicians", "memory_copies", "replicas", "hot_spares"}
)
# Each strategy's own knobs (Knobs field -> scenario key): shown, kept in the URL and set in the scenario only
# under that strategy, so a link to a restart plan carries no replica count it does not use.
RECOVERY_KNOBS: dict[str, dict[str, str]] = {
    "restart": {},
    "in_memory_checkpoint": {
        "memory_interval_s": "recovery.memory_checkpoint_interval",
        "memory_copies": "recovery.memory_copies",
    },
    "replica_drop": {
        "replicas": "recovery.replicas",
        "drop_stall_s": "recovery.drop_stall",
        "rejoin_s": "recovery.rejoin",
    },
    "hot_spare": {"hot_spares": "recovery.hot_spares", "hot_swap_s": "recovery.hot_swap"},
}
assert set(RECOVERY_KNOBS) == set(STRATEGIES), "every training.recovery choice needs its knobs"
STRATEGY_FIELDS = frozenset(field for knobs in RECOVERY_KNOBS.values() for field in knobs)
URL_NAMES = (
    "preset",
    "ckpt",
    "place",
    "recovery",
    *(url for _, url, _, _ in NUMERIC + RECOVERY_NUMERIC),
    *CATEGORIES.values(),
)


def _number(text: str | None, default: float, low: float, high: float) -> float:
    try:
        value = float(text) if text is not None else default
    except ValueError:
        return default
    return min(max(value, low), high) if math.isfinite(value) else default


def from_params(params: Mapping[str, str]) -> Knobs:
    """The knobs a URL names: its preset's defaults, overridden by every parameter that parses."""
    preset = params.get("preset", "demo")
    knobs = defaults(preset if known_base(preset) else "demo")
    changes: dict = {}
    for name, url, low, high in NUMERIC + RECOVERY_NUMERIC:
        value = _number(params.get(url), getattr(knobs, name), low, high)
        changes[name] = int(value) if name in INTEGER_FIELDS else value
    if params.get("ckpt") in WRITE_MODES:
        changes["write_mode"] = params["ckpt"]
    if params.get("place") in PLACEMENTS:
        changes["placement"] = params["place"]
    if params.get("recovery") in STRATEGIES:
        changes["recovery"] = params["recovery"]
    changes["multipliers"] = {
        cat: _number(params.get(url), 1.0, 0.0, MAX_MULTIPLIER) for cat, url in CATEGORIES.items()
    }
    return replace(knobs, **changes)


def to_params(knobs: Knobs) -> dict[str, str]:
    """The URL parameters that reproduce `knobs` (multipliers only where they are not x1, a strategy's own
    knobs only under that strategy)."""
    params = {
        "preset": knobs.preset,
        "ckpt": knobs.write_mode,
        "place": knobs.placement,
        "recovery": knobs.recovery,
    }
    own = RECOVERY_KNOBS[knobs.recovery]
    for name, url, _, _ in NUMERIC + tuple(k for k in RECOVERY_NUMERIC if k[0] in own):
        # ten digits: exact for whole numbers, no float noise ("0.0768")
        value = getattr(knobs, name)
        params[url] = str(value) if name in INTEGER_FIELDS else f"{value:.10g}"
    for cat, url in CATEGORIES.items():
        if knobs.multipliers.get(cat, 1.0) != 1.0:
            params[url] = f"{knobs.multipliers[cat]:g}"
    return params


# ----- knobs -> scenario --------------------------------------------------------------------------------------


def base_weights(preset: str) -> dict[str, float]:
    return cause_weights(base_scenario(preset))


def write_seconds(knobs: Knobs) -> float:
    """Blocking time of one checkpoint: as given, or every job GPU's share through the shared bandwidth."""
    if knobs.write_mode == "time":
        return knobs.write_s
    return checkpoint_write_seconds(knobs.checkpoint_gb_per_gpu, knobs.job_gpus, knobs.bandwidth_gb_per_s)


def effective_rate(knobs: Knobs) -> float:
    """The all-cause rate per 1,000 host-days with the category multipliers (engine.analysis.planner.category_scale)."""
    return knobs.rate * category_scale(base_weights(knobs.preset), knobs.multipliers)


def scenario_values(knobs: Knobs) -> dict[str, Any]:
    """The values (engine units: seconds, GPUs) that turn the preset into the knobs' scenario
    (Scenario.with_values)."""
    weights = base_weights(knobs.preset)
    values: dict[str, Any] = {
        "cluster.gpus": knobs.cluster_gpus,
        "training.gpus": knobs.job_gpus,
        "failures.rate_per_1000_node_days": knobs.rate,
        "failures.scale": category_scale(weights, knobs.multipliers),
        "training.checkpoint_interval": knobs.interval_s,
        "training.restart_overhead": knobs.restart_s,
        "spares.hosts": knobs.spares,
        "repair.fix": knobs.repair_fix_s,
        "repair.technicians": knobs.technicians,
        "cost.gpu_hour_usd": knobs.gpu_hour_usd,
        "training.placement": knobs.placement,
        "network.gbps_per_gpu": knobs.gbps_per_gpu,
        "training.recovery": knobs.recovery,
        **{key: getattr(knobs, name) for name, key in RECOVERY_KNOBS[knobs.recovery].items()},
    }
    if knobs.write_mode == "time":
        values["training.checkpoint_write"] = knobs.write_s
    else:  # None: derived from the size and the bandwidth (Scenario.checkpoint_write_s)
        values |= {
            "training.checkpoint_write": None,
            "storage.checkpoint_gb_per_gpu": knobs.checkpoint_gb_per_gpu,
            "storage.bandwidth_gb_per_s": knobs.bandwidth_gb_per_s,
        }
    return values | scaled_mix(weights, knobs.multipliers)


def settings_of(knobs: Knobs) -> tuple:
    """The knobs' scenario as a key the page keeps beside a result: (preset, its values in order), hashable,
    so a result can tell whether the knobs moved since it ran, and `scenario_of` rebuilds it."""
    return knobs.preset, tuple(scenario_values(knobs).items())


def scenario_of(settings: tuple, *, telemetry: bool = False) -> Scenario:
    """The validated scenario of `settings_of` (GoodputError naming the key when the values do not fit, a
    strategy's knobs included: more warm standbys than spares, more replicas than job hosts)."""
    preset, values = settings
    return base_scenario(preset).with_values({**dict(values), "simulation.telemetry": telemetry})


def scenario(knobs: Knobs, *, telemetry: bool = False) -> Scenario:
    """The validated scenario of the knobs (GoodputError naming the key when they do not fit together)."""
    return scenario_of(settings_of(knobs), telemetry=telemetry)


# ----- the closed form ----------------------------------------------------------------------------------------


def closed_form(knobs: Knobs) -> ClosedForm:
    """The closed form of the knobs, even where they make no valid scenario (a job larger than the cluster)."""
    return closed_form_ettr(
        gpus=knobs.job_gpus,
        gpus_per_host=knobs.gpus_per_host,
        rate_per_1000_node_days=effective_rate(knobs),
        checkpoint_interval_s=knobs.interval_s,
        checkpoint_write_s=write_seconds(knobs),
        restart_overhead_s=knobs.restart_s,
    )


# ----- Monte-Carlo and sweeps ---------------------------------------------------------------------------------


def executor_for(runs: int, seconds_per_run: float | None = None) -> LocalExecutor:
    """In this process (no start-up; AppTest-safe) for a handful of runs, or where all of them take less than
    POOL_WORTH_S here; else a process per core. Measured on 2 busy cores: 48 demo runs take 1.0 s here and
    9.9 s in a pool, 16 llama3-405b runs 6.6 s here and 12.5 s in a pool (spawn re-imports the engine)."""
    if runs <= IN_PROCESS_RUNS or usable_cores() < 2:
        return LocalExecutor(1)
    if seconds_per_run is not None and runs * seconds_per_run <= POOL_WORTH_S:
        return LocalExecutor(1)
    return LocalExecutor()


def scale_executor(study: ScaleStudy) -> LocalExecutor:
    """The scale study's executor: its largest job's run, timed once, bounds every run's time (a run's cost
    grows with the cluster's hosts), so a study of small jobs stays in this process."""
    largest = max(study.points, key=lambda p: p.job_gpus)
    return executor_for(study.runs, seconds_per_run(largest.scenario))


def seconds_per_run(s: Scenario) -> float:
    """One summary-only run of `s`, timed: what decides whether a pool of processes pays off."""
    from engine.twin.simulate import simulate  # the engine's heavy part, only when something is to run

    started = time.perf_counter()
    simulate(s, summary_only=True)
    return time.perf_counter() - started
