"""The Planner page's model, free of Streamlit: knobs <-> URL parameters, knobs -> scenario, the closed form and
its loss breakdown, the tables beside the simulation, and the sweep axes the page offers.

The failure knobs: `rate` is the all-cause rate per 1,000 host-days with every category at x1; a category's
multiplier scales the weights of its causes (failures.mix.*) *and* the total rate by the same share, so
"GPU x2" doubles GPU failures and leaves every other category's rate alone. In scenario keys that is
failures.rate_per_1000_node_days = rate, failures.scale = sum(w x m) / sum(w), failures.mix.<cause> = w x m.
"""

import functools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import polars as pl

from engine.analytics import ClosedForm, closed_form_ettr, young_daly_interval
from engine.durations import format_duration
from engine.errors import GoodputError
from engine.planner import PLANNER_LOSSES, closed_form_losses, nice_duration, nice_number, slowed_share
from engine.reference import CAUSES
from engine.scenario import MIX_PREFIX, PRESETS, Scenario, build
from engine.scenario_keys import KEY_BY_NAME
from engine.sweep import Axis, LocalExecutor, usable_cores

# The failure categories of the Llama 3 table (engine.reference.CAUSES) and their URL names.
CATEGORIES: dict[str, str] = {"GPU": "m_gpu", "Host": "m_host", "Network": "m_network",
                              "Dependency": "m_dependency", "Unplanned maintenance": "m_maint",
                              "Unknown": "m_unknown"}
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


def defaults(preset: str) -> Knobs:
    """The knobs of a preset as it stands (its failures.scale folded into the rate)."""
    base = build(preset)
    given = base["training.checkpoint_write"]
    return Knobs(
        preset=preset, cluster_gpus=base["cluster.gpus"], job_gpus=base["training.gpus"],
        rate=base["failures.rate_per_1000_node_days"] * base["failures.scale"],
        interval_s=base["training.checkpoint_interval"], write_mode="storage" if given is None else "time",
        write_s=base.checkpoint_write_s, checkpoint_gb_per_gpu=base["storage.checkpoint_gb_per_gpu"],
        bandwidth_gb_per_s=base["storage.bandwidth_gb_per_s"], restart_s=base["training.restart_overhead"],
        spares=base["spares.hosts"], repair_fix_s=base["repair.fix"], technicians=base["repair.technicians"],
        gpu_hour_usd=base["cost.gpu_hour_usd"], gpus_per_host=base["cluster.gpus_per_host"],
        placement=base["training.placement"], gbps_per_gpu=base["network.gbps_per_gpu"])


# (knob field, URL name, lowest, highest): numbers outside are clamped, text that is no number falls back.
NUMERIC: tuple[tuple[str, str, float, float], ...] = (
    ("cluster_gpus", "cluster", 8, 1_048_576), ("job_gpus", "gpus", 0, 1_048_576), ("rate", "rate", 0, 1000),
    ("interval_s", "interval", 1, 7 * 86400), ("write_s", "write", 0, 86400), ("checkpoint_gb_per_gpu", "gb", 0, 1e4),
    ("bandwidth_gb_per_s", "bw", 0.001, 1e7), ("restart_s", "restart", 0, 7 * 86400), ("spares", "spares", 0, 1e5),
    ("repair_fix_s", "fix", 0, 365 * 86400), ("technicians", "techs", 1, 10_000), ("gpu_hour_usd", "price", 0, 1e4),
    ("gbps_per_gpu", "gbps", 0, 3200),
)
PLACEMENTS = KEY_BY_NAME["training.placement"].choices
INTEGER_FIELDS = frozenset({"cluster_gpus", "job_gpus", "spares", "technicians"})
URL_NAMES = ("preset", "ckpt", "place", *(url for _, url, _, _ in NUMERIC), *CATEGORIES.values())


def _number(text: str | None, default: float, low: float, high: float) -> float:
    try:
        value = float(text) if text is not None else default
    except ValueError:
        return default
    return min(max(value, low), high) if math.isfinite(value) else default


def from_params(params: Mapping[str, str]) -> Knobs:
    """The knobs a URL names: its preset's defaults, overridden by every parameter that parses."""
    preset = params.get("preset", "demo")
    knobs = defaults(preset if preset in PRESETS else "demo")
    changes: dict = {}
    for name, url, low, high in NUMERIC:
        value = _number(params.get(url), getattr(knobs, name), low, high)
        changes[name] = int(value) if name in INTEGER_FIELDS else value
    if params.get("ckpt") in WRITE_MODES:
        changes["write_mode"] = params["ckpt"]
    if params.get("place") in PLACEMENTS:
        changes["placement"] = params["place"]
    changes["multipliers"] = {cat: _number(params.get(url), 1.0, 0.0, MAX_MULTIPLIER)
                              for cat, url in CATEGORIES.items()}
    return replace(knobs, **changes)


def to_params(knobs: Knobs) -> dict[str, str]:
    """The URL parameters that reproduce `knobs` (multipliers only where they are not x1)."""
    params = {"preset": knobs.preset, "ckpt": knobs.write_mode, "place": knobs.placement}
    for name, url, _, _ in NUMERIC:  # ten digits: exact for whole numbers, no float noise ("0.0768")
        value = getattr(knobs, name)
        params[url] = str(value) if name in INTEGER_FIELDS else f"{value:.10g}"
    for cat, url in CATEGORIES.items():
        if knobs.multipliers.get(cat, 1.0) != 1.0:
            params[url] = f"{knobs.multipliers[cat]:g}"
    return params


# ----- knobs -> scenario --------------------------------------------------------------------------------------


def base_weights(preset: str) -> dict[str, float]:
    base = build(preset)
    return {c.cause: base[MIX_PREFIX + c.cause] for c in CAUSES}


def failure_scale(weights: Mapping[str, float], multipliers: Mapping[str, float]) -> float:
    """sum(w x m) / sum(w): how much the multipliers raise the all-cause rate (1 with every category x1)."""
    total = math.fsum(weights.values())
    if total == 0:
        return 1.0
    category = {c.cause: c.category for c in CAUSES}
    return math.fsum(w * multipliers.get(category[k], 1.0) for k, w in weights.items()) / total


def write_seconds(knobs: Knobs) -> float:
    """Blocking time of one checkpoint: as given, or every job GPU's share through the shared bandwidth."""
    if knobs.write_mode == "time":
        return knobs.write_s
    return knobs.checkpoint_gb_per_gpu * knobs.job_gpus / knobs.bandwidth_gb_per_s


def effective_rate(knobs: Knobs) -> float:
    return knobs.rate * failure_scale(base_weights(knobs.preset), knobs.multipliers)


def scenario_sets(knobs: Knobs) -> list[str]:
    """`--set` strings that turn the preset into the knobs' scenario."""
    weights = base_weights(knobs.preset)
    category = {c.cause: c.category for c in CAUSES}
    sets = [f"cluster.gpus={knobs.cluster_gpus}", f"training.gpus={knobs.job_gpus}",
            f"failures.rate_per_1000_node_days={knobs.rate:g}",
            f"failures.scale={failure_scale(weights, knobs.multipliers):.12g}",
            f"training.checkpoint_interval={knobs.interval_s:g}s", f"training.restart_overhead={knobs.restart_s:g}s",
            f"spares.hosts={knobs.spares}", f"repair.fix={knobs.repair_fix_s:g}s",
            f"repair.technicians={knobs.technicians}", f"cost.gpu_hour_usd={knobs.gpu_hour_usd:g}",
            f"training.placement={knobs.placement}", f"network.gbps_per_gpu={knobs.gbps_per_gpu:g}"]
    if knobs.write_mode == "time":
        sets.append(f'training.checkpoint_write="{knobs.write_s:g}s"')
    else:
        sets += ['training.checkpoint_write=""', f"storage.checkpoint_gb_per_gpu={knobs.checkpoint_gb_per_gpu:g}",
                 f"storage.bandwidth_gb_per_s={knobs.bandwidth_gb_per_s:g}"]
    sets += [f"{MIX_PREFIX}{cause}={w * knobs.multipliers.get(category[cause], 1.0):g}"
             for cause, w in weights.items() if knobs.multipliers.get(category[cause], 1.0) != 1.0]
    return sets


def scenario(knobs: Knobs, *, telemetry: bool = False) -> Scenario:
    """The validated scenario of the knobs (GoodputError naming the key when they do not fit together)."""
    return build(knobs.preset, sets=[*scenario_sets(knobs), f"simulation.telemetry={str(telemetry).lower()}"])


# ----- the closed form ----------------------------------------------------------------------------------------


def closed_form_of(s: Scenario) -> ClosedForm:
    """Kokolis et al.'s estimate for a scenario, as engine.summary computes it."""
    return closed_form_ettr(gpus=s["training.gpus"], gpus_per_host=s["cluster.gpus_per_host"],
                            rate_per_1000_node_days=s["failures.rate_per_1000_node_days"] * s["failures.scale"],
                            checkpoint_interval_s=s["training.checkpoint_interval"],
                            checkpoint_write_s=s.checkpoint_write_s,
                            restart_overhead_s=s["training.restart_overhead"])


def closed_form(knobs: Knobs) -> ClosedForm:
    return closed_form_ettr(gpus=knobs.job_gpus, gpus_per_host=knobs.gpus_per_host,
                            rate_per_1000_node_days=effective_rate(knobs), checkpoint_interval_s=knobs.interval_s,
                            checkpoint_write_s=write_seconds(knobs), restart_overhead_s=knobs.restart_s)


@functools.lru_cache(maxsize=64)
def _placement_slowdown(shape: tuple) -> float:
    import numpy as np

    from engine.topology import build_topology
    from engine.traffic import placement_slowdown

    s = build(shape[0], sets=list(shape[1:]))
    return placement_slowdown(s, build_topology(s, np.random.default_rng(0)))  # the rng only names GPUs


def network_slowdown(s: Scenario) -> float:
    """The flagship's slowdown from its placement alone (engine.traffic.placement_slowdown): a topology build
    (~0.1 s on llama3-405b), cached on the keys it depends on so the knobs' other moves cost nothing."""
    keys = ("cluster.gpus", "cluster.gpus_per_host", "cluster.hosts_per_rack", "cluster.racks_per_pod",
            "cluster.fabric", "training.gpus", "spares.hosts", "training.placement", "network.gbps_per_gpu")
    return _placement_slowdown((s.preset or "llama3-405b", *(f"{k}={s[k]}" for k in keys)))


def loss_table(summary: dict, s: Scenario) -> pl.DataFrame:
    """Simulated losses beside the closed form's: category, sim_gpu_hours, sim_usd, cf_gpu_hours, cf_usd."""
    job = summary.get("job", {})
    hours = dict(job.get("losses_gpu_hours") or {})
    slowdown = job_slowdown(job)
    hours["network_slowdown"] = job.get("productive_hours", 0.0) * job.get("gpus", 0) * slowed_share(slowdown)
    price = s["cost.gpu_hour_usd"]
    cf = closed_form_losses(closed_form_of(s), gpus=s["training.gpus"], interval_s=s["training.checkpoint_interval"],
                            write_s=s.checkpoint_write_s, restart_s=s["training.restart_overhead"],
                            duration_s=s.duration_s, gpu_hour_usd=price, slowdown=slowdown)
    sim_hours = [float(hours.get(c, 0.0)) for c in PLANNER_LOSSES]
    return pl.DataFrame({
        "category": list(PLANNER_LOSSES), "sim_gpu_hours": sim_hours, "sim_usd": [h * price for h in sim_hours],
        "cf_gpu_hours": cf["gpu_hours"], "cf_usd": cf["usd"]})


def job_slowdown(job: dict) -> float:
    """The summary's placement_slowdown: 1 where absent (a run from before it), inf where null (no path)."""
    value = job.get("placement_slowdown", 1.0)
    return math.inf if value is None else float(value)


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


def seconds_per_run(s: Scenario) -> float:
    """One summary-only run of `s`, timed: what decides whether a pool of processes pays off."""
    from engine.simulate import simulate  # the engine's heavy part, only when something is to run

    started = time.perf_counter()
    simulate(s, summary_only=True)
    return time.perf_counter() - started


@dataclass(frozen=True)
class SweepParam:
    key: str
    label: str
    duration: bool  # values are durations (shown in minutes), else plain numbers


SWEEP_PARAMS: tuple[SweepParam, ...] = (
    SweepParam("training.checkpoint_interval", "Checkpoint interval", True),
    SweepParam("training.restart_overhead", "Restart overhead", True),
    SweepParam("training.checkpoint_write", "Checkpoint write", True),
    SweepParam("failures.rate_per_1000_node_days", "Failure rate (per 1,000 host-days)", False),
    SweepParam("spares.hosts", "Hot spares (hosts)", False),
    SweepParam("repair.technicians", "Technicians", False),
    SweepParam("repair.fix", "Repair turnaround", True),
    SweepParam("training.gpus", "Job GPUs", False),
)
SWEEP_BY_KEY = {p.key: p for p in SWEEP_PARAMS}


def default_values(s: Scenario, key: str, n: int = 4) -> str:
    """A small grid of round values around the scenario's value, as text for the page's input ("5m,15m,30m,1h").

    The checkpoint interval is spread around its Young-Daly optimum (halves and doubles), so the heat map
    shows the ridge; every other key around its current value, halving and doubling. Each value is then
    rounded to what a person would type (engine.planner.nice_duration / nice_number): 15m, not 1,437.7 s.
    """
    if key == "training.checkpoint_interval":
        optimum = young_daly_interval(s.checkpoint_write_s, closed_form_of(s).mttf_s)
        centre = optimum if math.isfinite(optimum) and optimum > 0 else s[key]
    elif key == "training.checkpoint_write":
        centre = s.checkpoint_write_s
    else:
        centre = s[key]
    factors = [2.0 ** (i - (n - 1) / 2.0) for i in range(n)]  # 4: 0.35, 0.71, 1.41, 2.83
    param = SWEEP_BY_KEY[key]
    if param.duration:
        centre = centre if centre > 0 else 60.0  # nothing to spread around (no write time): from a minute
        return ",".join(format_duration(v) for v in sorted({nice_duration(centre * f) for f in factors}))
    if key in ("spares.hosts", "repair.technicians", "training.gpus"):
        step = s["cluster.gpus_per_host"] if key == "training.gpus" else 1
        low = 0 if key == "spares.hosts" else step
        centre = centre if centre > 0 else 2 * step
        high = {"spares.hosts": s.hosts - s.job_hosts,  # what still fits beside the job (or its spares)
                "training.gpus": s["cluster.gpus"] - s["spares.hosts"] * step}.get(key, math.inf)
        values = sorted({min(max(low, round(nice_number(centre * f) / step) * step), high) for f in factors})
        return ",".join(str(int(v)) for v in values)
    centre = centre if centre > 0 else 1.0
    return ",".join(f"{v:g}" for v in sorted({nice_number(centre * f) for f in factors}))


def parse_values(s: Scenario, key: str, text: str) -> tuple[Axis, list[float]]:
    """The axis of `KEY=text` and each value as the engine reads it (seconds for durations), validated."""
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    if not values:
        raise GoodputError(f"{SWEEP_BY_KEY[key].label}: give at least one value")
    if len(set(values)) != len(values):
        raise GoodputError(f"{SWEEP_BY_KEY[key].label}: a value is given twice in {text!r}")
    numbers = []
    for v in values:  # each value validated on its own, so an error names it
        point = s.with_overrides([f"{key}={_quoted(key, v)}"])
        numbers.append(point.checkpoint_write_s if key == "training.checkpoint_write" else float(point[key]))
    return Axis(key, tuple(_quoted(key, v) for v in values)), numbers


def _quoted(key: str, value: str) -> str:
    """checkpoint_write is optional text in TOML: `--set` needs it quoted to keep "30s" a string."""
    return f'"{value}"' if key == "training.checkpoint_write" and not value.startswith('"') else value


def young_daly_curve(s: Scenario, key: str, texts: tuple[str, ...]) -> list[float]:
    """The Young-Daly interval (s) of the scenario with `key` set to each value (inf where nothing fails)."""
    out = []
    for text in texts:
        point = s.with_overrides([f"{key}={text}"])
        out.append(young_daly_interval(point.checkpoint_write_s, closed_form_of(point).mttf_s))
    return out
