"""The calibrated scenario as a file a person reads, edits and runs (`goodput calibrate --output FILE.toml`).

Every key says where its value came from: a fitted key its estimate, 90 % interval, evidence n and source; a key
the run could not show but the scenario must hold, "assumed" (the warnings at the top say why); every other key,
that it is the default of engine/scenario/keys.py, not fitted. A planner can then tell at a glance which
figures rest on the cluster and which on Goodput's defaults.
"""

import tomllib
from typing import Any

import tomli_w

from engine.scenario import Scenario
from engine.twin.estimate import Estimate

DEFAULT_SOURCE = "default"  # a key the fit leaves at engine/scenario/keys.py's default
DEFAULT_NOTE = "default (engine/scenario/keys.py), not fitted"


def scenario_toml(
    run_id: str,
    days: float,
    host_days: float,
    scenario: Scenario,
    keys: dict[str, Estimate],
    warnings: list[str],
) -> str:
    raw = scenario.to_dict()
    lines = [
        f"# Goodput scenario fitted to run {run_id} ({days:.2f} days, {host_days:,.0f} host-days in service) by"
        " `goodput calibrate`.",
        "# Each key says where its value came from: the estimate, 90 % interval, the events or samples behind it",
        "# (n) and the source of a fitted key; 'assumed' where the run could not show it (see the warnings);",
        f"# else '{DEFAULT_NOTE}'.",
    ]
    lines += [f"# warning: {w}" for w in warnings]
    base = tomli_w.dumps({"preset": raw.pop("preset")}).strip()
    lines += ["", f"{base}  # the preset whose defaults the keys below overlay"]
    lines += _tables(raw, "", keys)
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # what it writes is TOML
    return text


def _tables(node: dict[str, Any], prefix: str, keys: dict[str, Estimate]) -> list[str]:
    lines: list[str] = []
    leaves = {k: v for k, v in node.items() if not isinstance(v, dict)}
    if leaves and prefix:
        lines += ["", f"[{prefix}]"]
    for name, value in leaves.items():
        dotted = f"{prefix}.{name}" if prefix else name
        text = tomli_w.dumps({name: value}).strip()
        estimate = keys.get(dotted)
        fitted = estimate is not None and estimate.source != DEFAULT_SOURCE
        lines.append(f"{text}  # {comment(estimate) if fitted else DEFAULT_NOTE}")
    for name, child in node.items():
        if isinstance(child, dict):
            lines += _tables(child, f"{prefix}.{name}" if prefix else name, keys)
    return lines


def comment(e: Estimate) -> str:
    interval = ""
    if e.low is not None and e.high is not None:
        interval = f", 90 % interval {_fmt(e.low)} to {_fmt(e.high)}"
    elif e.high is not None:
        interval = f", at most {_fmt(e.high)} (90 %)"
    elif e.low is not None:
        interval = f", at least {_fmt(e.low)} (90 %)"
    return f"estimate {_fmt(e.value)}{interval}, n={e.n}, {e.source}"


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
