"""The settings a sweep can vary (SWEEP_PARAMS), their default values around a scenario's own, the values typed
for them read as an axis (a precise error for each mistake), and Young-Daly's interval along another setting."""

import math
from dataclasses import dataclass

from engine.analysis.analytics import young_daly_interval
from engine.analysis.planner import (
    closed_form_of,
    nice_duration,
    nice_number,
)
from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.scenario.durations import format_duration
from engine.twin.sweep import Axis


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
    rounded to what a person would type (engine.analysis.planner.nice_duration / nice_number): 15m, not 1,437.7 s.
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
        high = {
            "spares.hosts": s.hosts - s.job_hosts,  # what still fits beside the job (or its spares)
            "training.gpus": s["cluster.gpus"] - s["spares.hosts"] * step,
        }.get(key, math.inf)
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
