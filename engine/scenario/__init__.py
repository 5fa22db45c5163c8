"""Scenarios: every knob of a simulation, its default and its source, validated up front.

A scenario is built in layers, each checked key by key with an error that names the key and where it came from:

    the defaults of KEYS  <  a preset (`--preset NAME`, or `preset = "NAME"` at the top of a TOML file)
                          <  the cluster shape of `cluster.preset`
                          <  the TOML file  <  `--set KEY=VALUE` (in order)

Values are stored in their raw, human spelling (`"30m"`) in `Scenario.raw` (what TOML export and
`runs.scenario` keep) and parsed (seconds, ints, floats) in `Scenario.values`. The engine reads them through
the typed sections (engine.scenario.sections): `scenario.training.checkpoint_interval` is a float of seconds;
`scenario["training.checkpoint_interval"]` (the dotted key) is for code that takes a key as data (sweeps, the
planner's sliders, TOML).

A duration key takes a number and its unit (`90s`, `30m`, `2h`, `1d`); a bare number (`--set
training.checkpoint_interval=5`, a TOML `checkpoint_interval = 5`) is refused with the units expected, except in
a scenario stored by an earlier version (STORED below), where it meant seconds.
"""

import difflib
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import tomli_w

from engine import limits
from engine.bounded_read import read_bounded
from engine.errors import GoodputError
from engine.reference import CAUSES
from engine.scenario import bounds as scenario_limits
from engine.scenario.durations import format_duration, parse_duration
from engine.scenario.keys import KEY_BY_NAME, MIX_PREFIX, Key
from engine.scenario.presets import PRESETS
from engine.scenario.sections import (
    SECTION_TYPES,
    ClusterSettings,
    CostSettings,
    DiagnosisSettings,
    FailuresSettings,
    NetworkSettings,
    RecoverySettings,
    RepairSettings,
    ResearchSettings,
    RetirementSettings,
    SimulationSettings,
    SlowSettings,
    SparesSettings,
    StorageSettings,
    TrainingSettings,
)
from engine.units import SECONDS_PER_DAY


class ScenarioError(GoodputError):
    """A scenario key is unknown, or its value is malformed or impossible."""


# The layer of a scenario already built and stored (runs.scenario, an incidents export, `with_overrides`): its
# values were checked when it was made. Up to issue 13 a bare number was a duration in seconds; such a stored
# number still reads as seconds, where a file or `--set` must now give the unit (engine.scenario.durations).
STORED = "scenario"
VALUES = "with_values"  # the layer of Scenario.with_values, named so in its errors


# ----- the scenario --------------------------------------------------------------------------------------


@dataclass
class Scenario:
    preset: str
    raw: dict[str, Any] = field(default_factory=dict)  # dotted key -> value as written
    values: dict[str, Any] = field(default_factory=dict)  # dotted key -> parsed value

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    # ----- the sections, typed (engine.scenario.sections): `scenario.training.gpus` ----------------------------
    def _section(self, name: str) -> Any:
        record = SECTION_TYPES[name]
        return record(**{f.name: self.values[f"{name}.{f.name}"] for f in fields(record)})

    @cached_property
    def cluster(self) -> ClusterSettings:
        return self._section("cluster")

    @cached_property
    def simulation(self) -> SimulationSettings:
        return self._section("simulation")

    @cached_property
    def failures(self) -> FailuresSettings:
        return self._section("failures")

    @cached_property
    def network(self) -> NetworkSettings:
        return self._section("network")

    @cached_property
    def training(self) -> TrainingSettings:
        return self._section("training")

    @cached_property
    def recovery(self) -> RecoverySettings:
        return self._section("recovery")

    @cached_property
    def slow(self) -> SlowSettings:
        return self._section("slow")

    @cached_property
    def storage(self) -> StorageSettings:
        return self._section("storage")

    @cached_property
    def spares(self) -> SparesSettings:
        return self._section("spares")

    @cached_property
    def repair(self) -> RepairSettings:
        return self._section("repair")

    @cached_property
    def diagnosis(self) -> DiagnosisSettings:
        return self._section("diagnosis")

    @cached_property
    def retirement(self) -> RetirementSettings:
        return self._section("retirement")

    @cached_property
    def research(self) -> ResearchSettings:
        return self._section("research")

    @cached_property
    def cost(self) -> CostSettings:
        return self._section("cost")

    # derived figures the engine and pages share
    @property
    def hosts(self) -> int:
        return self["cluster.gpus"] // self["cluster.gpus_per_host"]

    @property
    def job_hosts(self) -> int:
        return math.ceil(self["training.gpus"] / self["cluster.gpus_per_host"])

    @property
    def duration_s(self) -> float:
        return self["simulation.days"] * SECONDS_PER_DAY

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

    def with_values(self, values: Mapping[str, Any]) -> "Scenario":
        """This scenario with `values` set, given as the engine reads them (seconds as numbers for durations,
        None for "derive it" on an optional duration): what a page passes, where `--set` strings would make it
        spell numbers only to have them parsed back. Validated like `--set`: an unknown key or a bad value is a
        ScenarioError naming the key. Each duration is stored spelled with its unit ("30m"), so the TOML of
        the result reads as a person would write it and gives back exactly these seconds."""
        spelled = {}
        for key, value in values.items():
            _known_key(key, VALUES)
            spelled[key] = _spelled(KEY_BY_NAME[key], value)
        return build(self.preset, base=self.raw, values=spelled)

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
        return {
            k: (self.raw.get(k), other.raw.get(k))
            for k in sorted(keys)
            if self.values.get(k) != other.values.get(k)
        }


# ----- building and validating ---------------------------------------------------------------------------


def build(
    preset: str | None = None,
    *,
    file: str | Path | None = None,
    base: Mapping[str, Any] | None = None,
    values: Mapping[str, Any] | None = None,
    sets: Iterable[str] = (),
) -> Scenario:
    """The scenario of `preset`, overlaid by a TOML `file`, a flat `base`, the spelled `values` of
    `Scenario.with_values` and `--set` strings, validated."""
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
        layers.append((STORED, base))
    if file_values:
        layers.append((str(file), file_values))
    if values:
        layers.append((VALUES, values))
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
    values = {
        key: _parse_value(KEY_BY_NAME[key], value, _source_of(key, layers, preset))
        for key, value in raw.items()
    }
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


def _spelled(key: Key, value: Any) -> Any:
    """A value of `with_values` in the spelling a scenario file uses: durations (seconds) with their unit, in
    the largest unit that is exact ("30m"), else in seconds to the last digit ("1437.71234s"); None for an
    optional duration or number is its "derive it" or "the overall key's" (""). Every other kind is checked by
    its parser in `build`."""
    if value is None and key.kind in ("optional_duration", "optional_float"):
        return ""
    if key.kind not in ("duration", "optional_duration"):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{VALUES}: {key.name}: expected seconds as a number, got {_given(value)}")
    try:
        seconds = float(value)
    except OverflowError:  # an int of 400 digits: no float holds it
        seconds = math.inf
    if not math.isfinite(seconds):
        raise ScenarioError(f"{VALUES}: {key.name}: expected a finite duration, got {_given(value)}")
    if seconds < 0:
        raise ScenarioError(f"{VALUES}: {key.name}: a duration cannot be negative, got {_given(value)}")
    exact = format_duration(seconds)
    return exact if parse_duration(exact) == seconds else f"{seconds!r}s"


def _check_preset(name: Any, where: str) -> str:
    if not isinstance(name, str) or name not in PRESETS:
        hint = _did_you_mean(str(name), PRESETS)
        raise ScenarioError(f"{where}: unknown preset {name!r}{hint}; presets: {', '.join(PRESETS)}")
    return name


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = read_bounded(path, "the scenario file", limits.MAX_SCENARIO_BYTES).decode("utf-8")
    except GoodputError as err:
        raise ScenarioError(str(err)) from None
    except UnicodeDecodeError as err:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {err.start})") from None
    try:
        nested = tomllib.loads(text)
    except (
        tomllib.TOMLDecodeError,
        ValueError,
        RecursionError,
    ) as err:  # ValueError: an int of 4,300+ digits
        first = str(err).splitlines()[0] if str(err) else "nested too deep"
        raise ScenarioError(f"{path}: not valid TOML: {first}") from None
    return _flatten(nested, "", where=str(path))


def _flatten(node: Mapping[str, Any], prefix: str, where: str = "scenario") -> dict[str, Any]:
    """Dotted keys of nested tables, in file order; tables nested deeper than MAX_JSON_DEPTH are refused before
    the recursion could reach Python's own limit (no scenario key is more than 3 deep)."""
    if prefix.count(".") >= limits.MAX_JSON_DEPTH:
        raise ScenarioError(
            f"{where}: {prefix.rstrip('.')[:200]}: nested deeper than Goodput's limit of "
            f"{limits.MAX_JSON_DEPTH} (engine/limits.py)"
        )
    flat: dict[str, Any] = {}
    for key, value in node.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + ".", where))
        else:
            flat[name] = value
    return flat


_SET = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*=(.*)$")


def _parse_set(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` of --set; VALUE read as TOML where it parses (numbers, booleans), else as a string."""
    match = _SET.match(text)
    if not match:
        raise ScenarioError(
            f"--set {text!r}: expected KEY=VALUE, for example training.checkpoint_interval=30m"
        )
    key, value_text = match.group(1), match.group(2).strip()
    try:
        value = tomllib.loads(f"v = {value_text}")["v"]
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):  # a 4,300-digit int; arrays nested too deep
        value = value_text
    return key, value


def _known_key(key: str, source: str) -> None:
    if key in KEY_BY_NAME:
        return
    if key.startswith(MIX_PREFIX):
        causes = [c.cause for c in CAUSES]
        cause = key[len(MIX_PREFIX) :]
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
    if source == STORED and key.kind == "duration":
        parsed = _parse_duration(value, where, key, bare_seconds=True)  # an earlier version's bare seconds
    elif source == STORED and key.kind == "optional_duration":
        parsed = _parse_optional_duration(value, where, key, bare_seconds=True)
    else:
        parsed = _PARSERS[key.kind](value, where, key)
    if isinstance(parsed, int | float) and not isinstance(parsed, bool):
        if key.minimum is not None and (
            parsed < key.minimum or (key.exclusive_minimum and parsed == key.minimum)
        ):
            relation = "greater than" if key.exclusive_minimum else "at least"
            raise ScenarioError(f"{where}: must be {relation} {key.minimum:g}, got {_given(value)}")
        if key.maximum is not None and not parsed <= key.maximum:
            raise ScenarioError(f"{where}: must be at most {_shown(key.maximum)}, got {_given(value)}")
    return parsed


def _shown(bound: float) -> str:
    return f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"


def _given(value: Any) -> str:
    """The value as written, cut short: a 4,000-digit number is not echoed whole."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text):,} characters)"


def _parse_int(value: Any, where: str, key: Key) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ScenarioError(f"{where}: expected a whole number, got {value!r}")
    if isinstance(value, int):  # exact, however large: the key's bounds refuse what is too large
        return value
    text = str(value).replace("_", "")
    if len(text) > 40:  # no count Goodput takes has 40 digits; a longer text is refused before int() reads it
        raise ScenarioError(f"{where}: expected a whole number, got a text of {len(text):,} characters")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        raise ScenarioError(f"{where}: expected a whole number, got {value!r}") from None
    if not number.is_integer():  # also inf and nan
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


def _parse_duration(value: Any, where: str, key: Key, *, bare_seconds: bool = False) -> float:
    """A duration with its unit (a bare number is refused: engine.scenario.durations), in seconds."""
    try:
        seconds = parse_duration(value, where, bare_seconds=bare_seconds)
    except GoodputError as err:
        raise ScenarioError(str(err)) from None
    if not math.isfinite(seconds):  # `inf`, `nan`, or 400 digits of days
        raise ScenarioError(f"{where}: expected a finite duration, got {value!r}")
    return seconds


def _parse_optional_duration(value: Any, where: str, key: Key, *, bare_seconds: bool = False) -> float | None:
    return None if value in ("", None) else _parse_duration(value, where, key, bare_seconds=bare_seconds)


def _parse_optional_float(value: Any, where: str, key: Key) -> float | None:
    return None if value in ("", None) else _parse_float(value, where, key)


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
            raise ScenarioError(
                f"{where}: expected a date and time such as 2024-03-01T00:00:00Z, got {value!r}"
            ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_PARSERS: dict[str, Callable[[Any, str, Key], Any]] = {
    "int": _parse_int,
    "float": _parse_float,
    "duration": _parse_duration,
    "optional_duration": _parse_optional_duration,
    "optional_float": _parse_optional_float,
    "bool": _parse_bool,
    "str": _parse_str,
    "choice": _parse_choice,
    "datetime": _parse_datetime,
}


def _check_together(s: Scenario) -> None:
    """Checks that span keys: shapes that divide, a job that fits, spares that fit."""
    per_host = s["cluster.gpus_per_host"]
    if s["cluster.gpus"] % per_host:
        raise ScenarioError(
            f"cluster.gpus: {s['cluster.gpus']} is not a multiple of cluster.gpus_per_host ({per_host})"
        )
    if s["training.gpus"] > s["cluster.gpus"]:
        raise ScenarioError(
            f"training.gpus: a job of {s['training.gpus']} GPUs does not fit a cluster of "
            f"{s['cluster.gpus']} (cluster.gpus)"
        )
    if s["training.gpus"] % per_host and s["training.gpus"] > per_host:
        raise ScenarioError(
            f"training.gpus: a multi-host job takes whole hosts; {s['training.gpus']} is not a "
            f"multiple of cluster.gpus_per_host ({per_host})"
        )
    if s.job_hosts + s["spares.hosts"] > s.hosts:
        raise ScenarioError(
            f"spares.hosts: {s['spares.hosts']} spares do not fit beside the job's {s.job_hosts} "
            f"hosts in a cluster of {s.hosts} hosts"
        )
    strategy = s["training.recovery"]  # each strategy's knobs must fit the job (engine.sim.recovery)
    if strategy == "hot_spare" and s["recovery.hot_spares"] > s["spares.hosts"]:
        raise ScenarioError(
            f"recovery.hot_spares: {s['recovery.hot_spares']} warm standbys are taken from the spare pool, "
            f"which holds {s['spares.hosts']} hosts (spares.hosts); raise spares.hosts or lower recovery.hot_spares"
        )
    if strategy == "replica_drop" and s.job_hosts and s["recovery.replicas"] > s.job_hosts:
        raise ScenarioError(
            f"recovery.replicas: {s['recovery.replicas']} data-parallel replicas need at least as many hosts; "
            f"the flagship job has {s.job_hosts} (training.gpus)"
        )
    if s["failures.rate_per_1000_node_days"] > 0 and s["failures.scale"] > 0 and sum(s.mix.values()) == 0:
        raise ScenarioError("failures.mix: every cause has weight 0 but failures.rate_per_1000_node_days > 0")
    over = scenario_limits.first_over(s)  # what the keys ask for together: GPU-days, samples, events, ...
    if over is not None:
        raise ScenarioError(over.message())
