"""The run summary as typed records: what every kind of run (simulate, replay, ingest, watch) leaves in
`runs.summary` and what `goodput <command> --json` prints (DESIGN "Command line"), less run_id.

Every run has its size (`gpus`, `hosts`, `days`). A simulated run adds the flagship job's `interruptions`, the
`job` itself (ETTR, losses, recovery) and the `cluster` (utilisation, repairs, bad hosts), and, with telemetry,
the `network`; replays, ingests and watches add the keys of their own command (jobs, queue waits, samples read,
sources), kept as `details`. A figure is read one way: `RunSummary.figure(key)` looks up the definition `key`
(engine/analysis/definitions) and follows its `summary` path ("job.ettr"), so pages, exports, the CLI and
tests/test_one_truth.py never walk the JSON themselves.

`from_json` reads any stored summary, older ones included: a key a run does not have, or a value that is not a
number where a number belongs, reads as None (shown as a dash), never as an error.
"""

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, get_args, get_origin, get_type_hints

from engine.analysis.definitions import definition


@dataclass(frozen=True)
class Interruptions:
    """The flagship job's interruptions (engine/analysis/definitions/incidents.py): every failure or planned stop
    that hit it while it trained or restarted, as the Llama 3 paper counts them."""

    total: int | None = None
    planned: int | None = None
    unexpected: int | None = None
    by_cause: Mapping[str, int] = field(default_factory=dict)  # planned ones under planned_maintenance


@dataclass(frozen=True)
class RecoveryCost:
    """What the flagship's recovery strategy costs besides its ledger buckets (engine.sim.recovery)."""

    standby_gpu_hours: float | None = None
    standby_usd: float | None = None
    degraded_gpu_hours: float | None = None
    degraded_usd: float | None = None
    memory_gb_per_host: float | None = None


@dataclass(frozen=True)
class FlagshipJob:
    """The flagship (largest) job of a simulated run: its goodput ledger in figures."""

    name: str | None = None
    gpus: int | None = None
    ettr: float | None = None
    mttf_hours: float | None = None  # None when nothing unexpected hit it
    checkpoints: int | None = None
    lost_gpu_hours: float | None = None
    losses_gpu_hours: Mapping[str, float] = field(default_factory=dict)  # by engine.analysis.ledger.LOSSES
    losses_usd: Mapping[str, float] = field(default_factory=dict)
    closed_form_ettr: float | None = None
    young_daly_interval_s: float | None = None
    checkpoint_write_s: float | None = None
    productive_hours: float | None = None
    attempts: int | None = None
    placement: str | None = None
    placement_slowdown: float | None = None
    ettr_with_network: float | None = None
    ledger_s: Mapping[str, float] | None = None  # the ledger in seconds; absent when the run had no job
    recovery: str | None = None
    recovery_cost: RecoveryCost = field(default_factory=RecoveryCost)
    time_to_train_days: float | None = None  # training.work done after this wall clock (the run ended then)


@dataclass(frozen=True)
class ClusterUse:
    """The whole cluster over a simulated run: use, repairs, and the bad hosts the simulator drew (its ground
    truth) with what diagnosis and repair made of them (engine.sim.bad_hosts)."""

    gpu_hours: float | None = None
    gpu_hours_down: float | None = None
    utilization: float | None = None  # by allocation
    utilization_progress: float | None = None  # by progress
    lemons: int | None = None
    hosts_in_repair_at_end: int | None = None
    research_preemptions: int | None = None
    research_lost_gpu_hours: float | None = None  # research work thrown away: failures and preemptions
    bad_hosts: int | None = None
    bad_hosts_in_service_at_end: int | None = None
    bad_hosts_cured: int | None = None
    systematic_failures: int | None = None
    retired_hosts: int | None = None
    retired_bad_hosts: int | None = None
    misdiagnoses: int | None = None
    missed_diagnoses: int | None = None
    wrong_host_diagnoses: int | None = None
    over_evicted_hosts: int | None = None
    automatic_repairs: int | None = None
    escalated_repairs: int | None = None
    silent_repair_failures: int | None = None
    # fail-slow episodes (engine.sim.slow): absent from runs without them
    slow_episodes: int | None = None
    slow_hosts_swapped: int | None = None
    # bursts: failures of several hosts at one instant (failures.burst_per_day): absent from runs without them
    bursts: int | None = None
    burst_hosts: int | None = None


@dataclass(frozen=True)
class RunSummary:
    """One run's summary; see the module's docstring for which parts which kind of run has."""

    gpus: int | None = None
    hosts: int | None = None
    days: float | None = None
    seed: int | None = None
    interruptions: Interruptions | None = None
    job: FlagshipJob | None = None
    cluster: ClusterUse | None = None
    network: Mapping[str, Any] | None = None  # engine.fabric.traffic.network_run's summary
    details: Mapping[str, Any] = field(default_factory=dict)  # the other keys of its command's JSON

    # ----- reading ----------------------------------------------------------------------------------------------
    @classmethod
    def from_json(cls, summary: Mapping[str, Any] | None) -> "RunSummary":
        """The typed summary of a stored or printed one (any kind, any age)."""
        summary = summary if isinstance(summary, Mapping) else {}
        own = {f.name for f in fields(cls)} - {"details"}
        return cls(
            gpus=_number(summary.get("gpus"), int),
            hosts=_number(summary.get("hosts"), int),
            days=_number(summary.get("days"), float),
            seed=_number(summary.get("seed"), int),
            interruptions=_record(Interruptions, summary.get("interruptions")),
            job=_record(FlagshipJob, summary.get("job")),
            cluster=_record(ClusterUse, summary.get("cluster")),
            network=summary.get("network") if isinstance(summary.get("network"), Mapping) else None,
            details={k: v for k, v in summary.items() if k not in own},
        )

    def at(self, path: str) -> Any:
        """The value at a dotted summary path ("job.recovery_cost.standby_usd", "samples"), or None."""
        node: Any = self
        for part in path.split("."):
            if node is self and part not in _OWN_FIELDS:
                node = self.details.get(part)
            elif isinstance(node, Mapping):
                node = node.get(part)
            else:
                node = getattr(node, part, None)
            if node is None:
                return None
        return node

    def figure(self, key: str) -> float | None:
        """The value of definition `key` in this run (engine/analysis/definitions: its `summary` path), as a
        number; None where the run does not have it. A KeyError names a definition with no place here."""
        path = definition(key).summary
        if path is None:
            raise KeyError(f"definition {key!r} has no place in the run summary")
        value = self.at(path)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    # ----- writing ----------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The summary as stored and printed: the parts this run has, then its details."""
        out: dict[str, Any] = {
            k: v
            for k, v in (("gpus", self.gpus), ("hosts", self.hosts), ("days", self.days), ("seed", self.seed))
            if v is not None
        }
        for part in ("interruptions", "job", "cluster"):
            record = getattr(self, part)
            if record is not None:
                out[part] = asdict(record)
        if self.job is not None and self.job.ledger_s is None:
            del out["job"]["ledger_s"]
        if self.job is not None and self.job.time_to_train_days is None:  # a run without training.work
            del out["job"]["time_to_train_days"]
        if self.cluster is not None:  # a run without fail-slow episodes or bursts has none of their figures
            for name in _OPTIONAL_CLUSTER:
                if getattr(self.cluster, name) is None:
                    del out["cluster"][name]
        if self.network is not None:
            out["network"] = dict(self.network)
        return out | dict(self.details)


_OWN_FIELDS = frozenset(f.name for f in fields(RunSummary)) - {"details"}
# left out of the JSON when None
_OPTIONAL_CLUSTER = ("slow_episodes", "slow_hosts_swapped", "bursts", "burst_hosts")


def _number(value: Any, kind: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if kind is int and float(value).is_integer() else value


def _kind(hint: Any) -> str:
    """How a field is read from JSON: "part" (a nested record), "map", "optional_map", "text", "int", "float"."""
    if hint is RecoveryCost:
        return "part"
    args = get_args(hint)
    if get_origin(hint) is Mapping:
        return "map"
    if any(get_origin(a) is Mapping for a in args):
        return "optional_map"
    if str in args:
        return "text"
    return "int" if int in args else "float"


# each part's fields and how to read them, worked out once (a sweep reads a summary a task)
_FIELD_KINDS = {
    cls: tuple((f.name, _kind(get_type_hints(cls)[f.name])) for f in fields(cls))
    for cls in (Interruptions, RecoveryCost, FlagshipJob, ClusterUse)
}


def _record(cls: type, value: Any) -> Any:
    """A part of the summary from its JSON object: numbers where numbers belong, nested parts typed, maps as
    maps; None when the run has no such part."""
    if not isinstance(value, Mapping):
        return None
    kwargs: dict[str, Any] = {}
    for name, kind in _FIELD_KINDS[cls]:
        raw = value.get(name)
        if kind == "part":
            kwargs[name] = _record(RecoveryCost, raw) or RecoveryCost()
        elif kind in ("map", "optional_map"):
            if isinstance(raw, Mapping):
                kwargs[name] = dict(raw)
            elif kind == "map":
                kwargs[name] = {}
        elif kind == "text":
            kwargs[name] = raw if isinstance(raw, str) else None
        else:
            kwargs[name] = _number(raw, int if kind == "int" else float)
    return cls(**kwargs)
