"""Scenarios: every knob of a simulation, its default and its source, validated up front.

A scenario is built in layers, each checked key by key with an error that names the key and where it came from:

    the defaults of KEYS  <  a preset (`--preset NAME`, or `preset = "NAME"` at the top of a TOML file)
                          <  the cluster shape of `cluster.preset`
                          <  the TOML file  <  `--set KEY=VALUE` (in order)

Values are stored in their raw, human spelling (`"30m"`) in `Scenario.raw` (what TOML export and
`runs.scenario` keep) and parsed (seconds, ints, floats) in `Scenario.values` (what the engine reads:
`scenario["training.checkpoint_interval"]` or `scenario.training.checkpoint_interval`).
"""

import difflib
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tomli_w

from engine.durations import parse_duration
from engine.errors import GoodputError
from engine.reference import CAUSES, LLAMA3_DAYS, LLAMA3_PLANNED, LLAMA3_RATE_PER_1000_NODE_DAYS


class ScenarioError(GoodputError):
    """A scenario key is unknown, or its value is malformed or impossible."""


# ----- the keys ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    """One scenario key: its type (`kind`), default, bounds and meaning."""

    name: str
    kind: str  # int, float, duration, bool, str, choice, datetime, optional_duration
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    exclusive_minimum: bool = False


def _k(name, kind, default, doc, **bounds) -> Key:
    return Key(name, kind, default, doc, **bounds)


# Defaults are the `llama3-405b` scenario; each figure from ../shared/reference names its source.
KEYS: tuple[Key, ...] = (
    # cluster shape: Llama 3 paper §3.3 (24,576 H100 in 8 pods of 192 racks of 2 Grand Teton hosts of 8 GPUs)
    _k("cluster.preset", "str", "", "take the cluster shape (cluster.*) of this preset"),
    _k("cluster.gpus", "int", 24576, "GPUs in the cluster (a multiple of cluster.gpus_per_host)", minimum=1),
    _k("cluster.gpus_per_host", "int", 8, "GPUs per host (Grand Teton: 8)", minimum=1, maximum=64),
    _k("cluster.hosts_per_rack", "int", 2, "hosts per rack, behind one rack switch (RTSW)", minimum=1),
    _k("cluster.racks_per_pod", "int", 192, "racks per pod (AI zone; 192 racks = 3,072 GPUs)", minimum=1),
    _k("cluster.racks_per_row", "int", 16, "racks in one row of the floor plan", minimum=1),
    _k("cluster.fabric", "choice", "roce", "network fabric", choices=("roce", "infiniband")),
    _k("cluster.gpu_model", "str", "H100-SXM5-80GB", "GPU model name"),
    _k("cluster.gpu_tdp_w", "float", 700.0, "GPU power limit in watts (H100 raised to 700 W)", minimum=1),
    _k("cluster.rack_power_budget_kw", "float", 24.0,
       "power budget of one rack in kW (2 Grand Teton hosts at ~10.2 kW each, plus the switch)", minimum=0.1),
    # simulation
    _k("simulation.days", "float", float(LLAMA3_DAYS), "simulated days (Llama 3 snapshot: 54)",
       minimum=0, exclusive_minimum=True, maximum=3650),
    _k("simulation.seed", "int", 7, "seed of the one random generator everything draws from", minimum=0),
    _k("simulation.start", "datetime", "2024-03-01T00:00:00Z", "wall-clock time of t = 0"),
    _k("simulation.telemetry", "bool", True, "generate per-GPU telemetry (off: summary tables only)"),
    _k("simulation.telemetry_resolution", "duration", "1h", "interval between GPU telemetry samples",
       minimum=1),
    # failures: Llama 3 paper Table 5 and §3.3.4 (reference README §2)
    _k("failures.rate_per_1000_node_days", "float", round(LLAMA3_RATE_PER_1000_NODE_DAYS, 4),
       "unexpected interruptions per 1,000 host-days, all causes (Llama 3: 419 / 54 d / 2,048 hosts)",
       minimum=0),
    _k("failures.scale", "float", 1.0, "multiplier on every unexpected rate", minimum=0),
    _k("failures.planned_per_day", "float", round(LLAMA3_PLANNED / LLAMA3_DAYS, 4),
       "planned interruptions of the flagship job a day (Llama 3: 47 in 54 days)", minimum=0),
    _k("failures.distribution", "choice", "exponential", "inter-arrival law of failures per host",
       choices=("exponential", "weibull")),
    _k("failures.weibull_shape", "float", 0.7,
       "Weibull shape (< 1: infant mortality, as Meta sees for GPUs off the bus and cables)",
       minimum=0, exclusive_minimum=True, maximum=10),
    _k("failures.sdc_detection_delay", "duration", "1h",
       "how late silent data corruption is noticed (training continues on bad data meanwhile)"),
    _k("failures.nccl_timeout_detection", "duration", "10m",
       "how late a hung collective is noticed (PyTorch's NCCL watchdog default: 10 min)"),
    _k("failures.network_rack_share", "float", 0.2,
       "share of network faults that take a rack switch (every host of the rack) rather than one cable "
       "(Goodput's choice: Meta reports cables as the common case)", minimum=0, maximum=1),
    # network: the fabric's traffic and its own faults (engine.network, engine.traffic)
    _k("network.gbps_per_gpu", "float", 25.0,
       "mean network demand of a GPU in a multi-host job, Gbps (Goodput's estimate for Llama 3 405B, whose "
       "parallelism is in the paper's Table 4, not in ../shared/reference: TP 8 inside the host, PP 16, DP 128 "
       "with FSDP; ~6.3 GB of bf16 gradients per GPU reduce-scattered in fp32 and all-gathered each ~6 s step "
       "gives ~25 Gbps of the 400 Gbps NIC)", minimum=0),
    _k("network.fabric_faults_per_day", "float", 0.5,
       "faults a day of the fabric above the racks (rack-to-spine cables; 1 in 10 a whole spine switch) that "
       "ECMP routes around without interrupting jobs (Goodput's assumption)", minimum=0),
    _k("network.link_samples", "choice", "switches",
       "which links get a utilisation sample at every telemetry step: all (every NIC cable too: 1.9x the rows "
       "on llama3-405b), switches (the links between switches; a NIC cable only while it is down or logs "
       "errors: its load is its GPU's job's demand), or off", choices=("switches", "all", "off")),
    _k("network.flap_window", "duration", "2h",
       "how long a cable flaps (raising its error counters) before it fails (Goodput's assumption)"),
    # training: the flagship job
    _k("training.name", "str", "llama3-405b-pretrain", "name of the flagship job"),
    _k("training.gpus", "int", 16384, "GPUs of the flagship job (Llama 3 405B: 16,384)", minimum=0),
    _k("training.checkpoint_interval", "duration", "5m",
       "time between checkpoints (Young-Daly sqrt(2 w MTTF) with w ~ 3.3 s and MTTF ~ 3.1 h gives ~4.5 min)",
       minimum=1),
    _k("training.checkpoint_write", "optional_duration", "",
       "time a checkpoint blocks training; empty: derived from storage.* (size per GPU / shared bandwidth)"),
    _k("training.restart_overhead", "duration", "10m",
       "detection, rescheduling, initialisation and restore after an interruption "
       "(ByteDance MegaScale: detection + diagnosis under 10 min)"),
    # storage: Tectonic (Llama 3 paper §3.3)
    _k("storage.checkpoint_gb_per_gpu", "float", 0.4,
       "checkpoint size per GPU in GB (405B params x 16 B / 16,384 GPUs ~ 0.4 GB; reference: 1 MB to 4 GB)",
       minimum=0),
    _k("storage.bandwidth_gb_per_s", "float", 2000.0,
       "storage write bandwidth shared by all writers, GB/s (Tectonic: 2 TB/s sustained)",
       minimum=0, exclusive_minimum=True),
    _k("storage.peak_bandwidth_gb_per_s", "float", 7000.0, "burst bandwidth, GB/s (Tectonic: 7 TB/s peak)",
       minimum=0, exclusive_minimum=True),
    # spares
    _k("spares.hosts", "int", 48, "hot spare hosts held back for the flagship job", minimum=0),
    # repair: DCGM diagnostic levels (reference README §4)
    _k("repair.technicians", "int", 8, "technicians working on failed hosts at once", minimum=1),
    _k("repair.drain", "duration", "2m", "time to drain a failed host"),
    _k("repair.diagnose", "duration", "15m", "diagnosis of a failed host (dcgmi diag -r 3: ~15 min)"),
    _k("repair.fix", "duration", "4h", "mean hands-on repair time (reseat, swap a part, reflash)"),
    _k("repair.rma_fraction", "float", 0.1, "share of hardware repairs that return the part to the vendor",
       minimum=0, maximum=1),
    _k("repair.rma_time", "duration", "5d", "mean turnaround of a return to the vendor"),
    _k("repair.burn_in", "duration", "2h", "burn-in before a repaired host returns (dcgmi diag -r 4 + stress)"),
    _k("repair.lemon_failures", "int", 3, "failures within repair.lemon_window that mark a host a lemon",
       minimum=2),
    _k("repair.lemon_window", "duration", "14d", "window over which repeated failures are counted"),
    # research jobs on the GPUs outside the flagship job
    _k("research.utilization", "float", 0.85, "share of the remaining GPUs research jobs keep busy",
       minimum=0, maximum=1),
    _k("research.median_duration", "duration", "6h", "median research job length (log-normal)", minimum=1),
    _k("research.max_hosts", "int", 64, "largest research job in hosts", minimum=1),
    # money
    _k("cost.gpu_hour_usd", "float", 2.5, "price of one GPU-hour in USD", minimum=0),
)
KEY_BY_NAME = {k.name: k for k in KEYS}
MIX_PREFIX = "failures.mix."
for _cause in CAUSES:  # failures.mix.<cause>: relative weights, default = the Llama 3 counts
    KEY_BY_NAME[MIX_PREFIX + _cause.cause] = Key(
        MIX_PREFIX + _cause.cause, "float", float(_cause.count),
        f"relative weight of {_cause.label} (Llama 3: {_cause.count} of 419)", minimum=0)
SECTIONS = sorted({name.split(".")[0] for name in KEY_BY_NAME})


# ----- presets -------------------------------------------------------------------------------------------

PRESETS: dict[str, dict[str, Any]] = {
    # Small and fast, for tests and the first look: 64 hosts, a 48-host job, failure-heavy so a week shows
    # every kind of event.
    "demo": {
        "cluster.gpus": 512, "cluster.racks_per_pod": 8, "cluster.racks_per_row": 8,
        "simulation.days": 7, "training.name": "demo-pretrain", "training.gpus": 384,
        "failures.rate_per_1000_node_days": 40.0, "failures.planned_per_day": 0.5,
        "training.checkpoint_interval": "20m", "spares.hosts": 4, "repair.technicians": 2,
        "research.max_hosts": 4, "simulation.telemetry_resolution": "15m",
    },
    # Meta's RoCE cluster the Llama 3 405B model was trained on (the defaults above).
    "llama3-405b": {},
    # The twin cluster on InfiniBand (NVIDIA Quantum-2), same shape (Meta blog, 2024-03-12).
    "meta-24k-ib": {"cluster.fabric": "infiniband"},
    # RSC-1 (Kokolis et al., HPCA 2025): 2,000 hosts of 8 A100s at 6.5 failures per 1,000 node-days.
    "rsc1": {
        "cluster.gpus": 16000, "cluster.gpu_model": "A100-SXM4-80GB", "cluster.gpu_tdp_w": 400.0,
        "cluster.fabric": "infiniband", "cluster.rack_power_budget_kw": 14.0,
        "failures.rate_per_1000_node_days": 6.5, "failures.planned_per_day": 0.0,
        "training.name": "rsc1-large-job", "training.gpus": 8192, "storage.checkpoint_gb_per_gpu": 0.8,
        "simulation.telemetry_resolution": "2h",
    },
    # The next cluster: 131,072 GPUs (Kokolis et al. project a ~14 min MTTF for a job this size at RSC-1's rate).
    "future-131k": {
        "cluster.gpus": 131072, "training.name": "future-pretrain", "training.gpus": 98304,
        "spares.hosts": 256, "repair.technicians": 32, "simulation.telemetry_resolution": "6h",
    },
}


# ----- the scenario --------------------------------------------------------------------------------------


class _Section:
    """`scenario.training.checkpoint_interval` reads `scenario["training.checkpoint_interval"]`."""

    def __init__(self, scenario: "Scenario", section: str) -> None:
        self._scenario, self._section = scenario, section

    def __getattr__(self, name: str) -> Any:
        return self._scenario[f"{self._section}.{name}"]


@dataclass
class Scenario:
    preset: str
    raw: dict[str, Any] = field(default_factory=dict)  # dotted key -> value as written
    values: dict[str, Any] = field(default_factory=dict)  # dotted key -> parsed value

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __getattr__(self, name: str) -> _Section:
        if name in SECTIONS:
            return _Section(self, name)
        raise AttributeError(name)

    # derived figures the engine and pages share
    @property
    def hosts(self) -> int:
        return self["cluster.gpus"] // self["cluster.gpus_per_host"]

    @property
    def job_hosts(self) -> int:
        return math.ceil(self["training.gpus"] / self["cluster.gpus_per_host"])

    @property
    def duration_s(self) -> float:
        return self["simulation.days"] * 86400.0

    @property
    def mix(self) -> dict[str, float]:
        """Relative weight of each cause (zero weights included)."""
        return {c.cause: self[MIX_PREFIX + c.cause] for c in CAUSES}

    @property
    def checkpoint_write_s(self) -> float:
        """Blocking time of one checkpoint: given outright, or size x writers / shared bandwidth."""
        given = self["training.checkpoint_write"]
        if given is not None:
            return given
        total_gb = self["storage.checkpoint_gb_per_gpu"] * self["training.gpus"]
        return total_gb / self["storage.bandwidth_gb_per_s"]

    def with_overrides(self, sets: Iterable[str]) -> "Scenario":
        return build(self.preset, base=self.raw, sets=sets)

    def to_dict(self) -> dict[str, Any]:
        """Nested raw values, as stored in `runs.scenario` and written to TOML."""
        nested: dict[str, Any] = {"preset": self.preset}
        for key, value in sorted(self.raw.items()):
            node = nested
            *parents, leaf = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        return nested

    def to_toml(self) -> str:
        header = "# Goodput scenario: `goodput simulate --scenario FILE` reproduces this run.\n"
        return header + tomli_w.dumps(self.to_dict())

    def diff(self, other: "Scenario") -> dict[str, tuple[Any, Any]]:
        """Keys whose values differ: {key: (mine, theirs)}."""
        keys = set(self.values) | set(other.values)
        return {k: (self.raw.get(k), other.raw.get(k)) for k in sorted(keys)
                if self.values.get(k) != other.values.get(k)}


# ----- building and validating ---------------------------------------------------------------------------


def build(preset: str | None = None, *, file: str | Path | None = None, base: Mapping[str, Any] | None = None,
          sets: Iterable[str] = ()) -> Scenario:
    """The scenario of `preset`, overlaid by a TOML `file`, a flat `base` and `--set` strings, validated."""
    file_values: dict[str, Any] = {}
    if file is not None:
        file_values = _read_toml(Path(file))
        file_preset = file_values.pop("preset", None)
        if file_preset is not None and preset is None:
            preset = _check_preset(file_preset, f"{file}: preset")
    preset = _check_preset(preset or "llama3-405b", "--preset")
    raw: dict[str, Any] = {k.name: k.default for k in KEY_BY_NAME.values()}
    raw.update(PRESETS[preset])
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if base:
        layers.append(("scenario", base))
    if file_values:
        layers.append((str(file), file_values))
    for text in sets:
        key, value = _parse_set(text)
        layers.append(("--set", {key: value}))
    for source, layer in layers:
        shape = layer.get("cluster.preset")
        if shape:  # cluster.preset brings a preset's cluster shape; later keys of the layer still win
            _check_preset(shape, f"{source}: cluster.preset")
            raw.update({k: v for k, v in PRESETS[shape].items() if k.startswith("cluster.")})
        for key, value in layer.items():
            _known_key(key, source)
            raw[key] = value
    values = {key: _parse_value(KEY_BY_NAME[key], value, _source_of(key, layers, preset))
              for key, value in raw.items()}
    scenario = Scenario(preset=preset, raw=raw, values=values)
    _check_together(scenario)
    return scenario


def load(path: str | Path, sets: Iterable[str] = ()) -> Scenario:
    return build(file=path, sets=sets)


def from_dict(nested: Mapping[str, Any]) -> Scenario:
    """The inverse of `Scenario.to_dict` (runs.scenario, a downloaded TOML)."""
    flat = _flatten(dict(nested), "")
    preset = flat.pop("preset", None)
    return build(preset, base=flat)


def _check_preset(name: Any, where: str) -> str:
    if not isinstance(name, str) or name not in PRESETS:
        hint = _did_you_mean(str(name), PRESETS)
        raise ScenarioError(f"{where}: unknown preset {name!r}{hint}; presets: {', '.join(PRESETS)}")
    return name


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read scenario file ({err.strerror})") from err
    try:
        nested = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{path}: not valid TOML: {err}") from err
    return _flatten(nested, "")


def _flatten(node: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in node.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


_SET = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*=(.*)$")


def _parse_set(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` of --set; VALUE read as TOML where it parses (numbers, booleans), else as a string."""
    match = _SET.match(text)
    if not match:
        raise ScenarioError(f"--set {text!r}: expected KEY=VALUE, for example training.checkpoint_interval=30m")
    key, value_text = match.group(1), match.group(2).strip()
    try:
        value = tomllib.loads(f"v = {value_text}")["v"]
    except tomllib.TOMLDecodeError:
        value = value_text
    return key, value


def _known_key(key: str, source: str) -> None:
    if key in KEY_BY_NAME:
        return
    if key.startswith(MIX_PREFIX):
        causes = [c.cause for c in CAUSES]
        cause = key[len(MIX_PREFIX):]
        raise ScenarioError(f"{source}: unknown cause {cause!r} in {key}{_did_you_mean(cause, causes)}")
    raise ScenarioError(f"{source}: unknown scenario key {key!r}{_did_you_mean(key, KEY_BY_NAME)}")


def _did_you_mean(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _source_of(key: str, layers: list[tuple[str, Mapping[str, Any]]], preset: str) -> str:
    for source, layer in reversed(layers):
        if key in layer:
            return source
    return f"preset {preset}" if key in PRESETS[preset] else "default"


def _parse_value(key: Key, value: Any, source: str) -> Any:
    where = f"{source}: {key.name}"
    parsed = _PARSERS[key.kind](value, where, key)
    if isinstance(parsed, int | float) and not isinstance(parsed, bool):
        if key.minimum is not None and (parsed < key.minimum or (key.exclusive_minimum and parsed == key.minimum)):
            relation = "greater than" if key.exclusive_minimum else "at least"
            raise ScenarioError(f"{where}: must be {relation} {key.minimum:g}, got {value!r}")
        if key.maximum is not None and parsed > key.maximum:
            raise ScenarioError(f"{where}: must be at most {key.maximum:g}, got {value!r}")
    return parsed


def _parse_int(value: Any, where: str, key: Key) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ScenarioError(f"{where}: expected a whole number, got {value!r}")
    try:
        number = float(str(value).replace("_", ""))
    except ValueError:
        raise ScenarioError(f"{where}: expected a whole number, got {value!r}") from None
    if not number.is_integer():
        raise ScenarioError(f"{where}: expected a whole number, got {value!r}")
    return int(number)


def _parse_float(value: Any, where: str, key: Key) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ScenarioError(f"{where}: expected a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ScenarioError(f"{where}: expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ScenarioError(f"{where}: expected a finite number, got {value!r}")
    return number


def _parse_duration(value: Any, where: str, key: Key) -> float:
    try:
        return parse_duration(value, where)
    except GoodputError as err:
        raise ScenarioError(str(err)) from None


def _parse_optional_duration(value: Any, where: str, key: Key) -> float | None:
    return None if value in ("", None) else _parse_duration(value, where, key)


def _parse_bool(value: Any, where: str, key: Key) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "yes", "on", "1"):
        return True
    if str(value).lower() in ("false", "no", "off", "0"):
        return False
    raise ScenarioError(f"{where}: expected true or false, got {value!r}")


def _parse_str(value: Any, where: str, key: Key) -> str:
    if not isinstance(value, str):
        raise ScenarioError(f"{where}: expected text, got {value!r}")
    return value


def _parse_choice(value: Any, where: str, key: Key) -> str:
    if value not in key.choices:
        raise ScenarioError(f"{where}: must be one of {', '.join(key.choices)}, got {value!r}")
    return value


def _parse_datetime(value: Any, where: str, key: Key) -> datetime:
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise ScenarioError(f"{where}: expected a date and time such as 2024-03-01T00:00:00Z, "
                                f"got {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_PARSERS: dict[str, Callable[[Any, str, Key], Any]] = {
    "int": _parse_int, "float": _parse_float, "duration": _parse_duration,
    "optional_duration": _parse_optional_duration, "bool": _parse_bool, "str": _parse_str,
    "choice": _parse_choice, "datetime": _parse_datetime,
}


def _check_together(s: Scenario) -> None:
    """Checks that span keys: shapes that divide, a job that fits, spares that fit."""
    per_host = s["cluster.gpus_per_host"]
    if s["cluster.gpus"] % per_host:
        raise ScenarioError(f"cluster.gpus: {s['cluster.gpus']} is not a multiple of "
                            f"cluster.gpus_per_host ({per_host})")
    if s["training.gpus"] > s["cluster.gpus"]:
        raise ScenarioError(f"training.gpus: a job of {s['training.gpus']} GPUs does not fit a cluster of "
                            f"{s['cluster.gpus']} (cluster.gpus)")
    if s["training.gpus"] % per_host and s["training.gpus"] > per_host:
        raise ScenarioError(f"training.gpus: a multi-host job takes whole hosts; {s['training.gpus']} is not a "
                            f"multiple of cluster.gpus_per_host ({per_host})")
    if s.job_hosts + s["spares.hosts"] > s.hosts:
        raise ScenarioError(f"spares.hosts: {s['spares.hosts']} spares do not fit beside the job's {s.job_hosts} "
                            f"hosts in a cluster of {s.hosts} hosts")
    if s["failures.rate_per_1000_node_days"] > 0 and s["failures.scale"] > 0 and sum(s.mix.values()) == 0:
        raise ScenarioError("failures.mix: every cause has weight 0 but failures.rate_per_1000_node_days > 0")
