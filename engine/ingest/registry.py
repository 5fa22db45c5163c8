"""The ingest sources, one registry: each is an IngestSource (its name, what it reads, how it makes a run), the
way engine.replay.formats keeps the trace formats.

A new source is one module with an `ingest(files, *, dcgm, kernel_logs, name, year) -> Run` plus one
`register(...)` line below; `goodput ingest SOURCE` offers `names()` as its choices. A source that takes more
(node-events: --format, --causes, --nodes, ...) names those keywords in `options`; the CLI hands them to it
and refuses their flags for every other source.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from engine.errors import GoodputError
from engine.ingest import ingest_dcgm, ingest_kernel_logs
from engine.ingest.sources import SourceLike
from engine.store.run import Run

__all__ = ["Ingest", "IngestSource", "lookup", "names", "register", "scrapers"]


class Ingest(Protocol):
    """Make an observed run from `files`; `dcgm` and `kernel_logs` are companion files of the same hosts (the
    `--dcgm` and `--kernel-log` flags), each source reading those it can use."""

    def __call__(
        self,
        files: Iterable[SourceLike],
        *,
        dcgm: Iterable[SourceLike],
        kernel_logs: Iterable[SourceLike],
        name: str | None,
        year: int | None,
    ) -> Run: ...


@dataclass(frozen=True)
class IngestSource:
    """One telemetry source: its `goodput ingest` name, what it reads, how it ingests files, and whether it
    also scrapes live endpoints (`--scrape`, engine.ingest.live)."""

    name: str
    description: str
    ingest: Ingest
    scrapes: bool = False
    options: tuple[str, ...] = ()  # further keywords its ingest takes (engine.cli hands them from its flags)


_REGISTRY: dict[str, IngestSource] = {}


def register(source: IngestSource) -> IngestSource:
    """Add (or replace) an ingest source; it becomes a `goodput ingest` choice."""
    _REGISTRY[source.name] = source
    return source


def names() -> tuple[str, ...]:
    """The registered source names, in registration order."""
    return tuple(_REGISTRY)


def scrapers() -> tuple[str, ...]:
    """The names of the sources that scrape live endpoints."""
    return tuple(name for name, source in _REGISTRY.items() if source.scrapes)


def lookup(name: str) -> IngestSource:
    """The source called `name`; a one-line error listing the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise GoodputError(f"ingest: unknown source {name!r}; one of {', '.join(_REGISTRY)}") from None


def _dcgm(files, *, dcgm=(), kernel_logs=(), name=None, year=None) -> Run:
    """DCGM exporter scrapes; kernel logs of the same hosts go into the same run."""
    return ingest_dcgm(files, kernel_logs=kernel_logs, name=name, year=year)


def _kernel_log(files, *, dcgm=(), kernel_logs=(), name=None, year=None) -> Run:
    """Kernel logs with XIDs; a DCGM scrape of the same hosts maps bus ids and UUIDs to its GPUs."""
    return ingest_kernel_logs(files, dcgm=dcgm, name=name, year=year)


def _step_times(files, *, dcgm=(), kernel_logs=(), name=None, year=None) -> Run:
    """An op-level timeline of a training job (engine.ingest.step_times), for `goodput stragglers`."""
    from engine.ingest.step_times import ingest_step_times

    return ingest_step_times(files, name=name)


def _node_exporter(files, *, dcgm=(), kernel_logs=(), name=None, year=None) -> Run:
    """NIC ports (rate, error counters) from node_exporter's infiniband collector (engine.ingest.node_exporter)."""
    from engine.ingest.node_exporter import ingest_node_exporter

    return ingest_node_exporter(files, name=name)


def _node_events(files, *, dcgm=(), kernel_logs=(), name=None, year=None, **options) -> Run:
    """A fault history: Slurm's node events or fault tickets (engine.ingest.node_events)."""
    from engine.ingest.node_events import ingest_node_events

    return ingest_node_events(files, name=name, **options)


NODE_EVENT_OPTIONS = ("fmt", "causes", "nodes", "gpus_per_node", "slurm", "since_s")

register(IngestSource("dcgm", "DCGM exporter scrapes (Prometheus text)", _dcgm, scrapes=True))
register(IngestSource("kernel-log", "kernel logs (dmesg, journalctl -k) with XID lines", _kernel_log))
register(
    IngestSource(
        "step-times",
        "op-level timelines of a training job (CSV or Parquet), for `goodput stragglers`",
        _step_times,
    )
)
register(
    IngestSource(
        "node-exporter",
        "node_exporter scrapes (Prometheus text): NIC port rates and error counters (infiniband collector)",
        _node_exporter,
    )
)
register(
    IngestSource(
        "node-events",
        "a fault history: Slurm's node events (sacctmgr show event) or fault tickets (CSV, JSON lines, Parquet)",
        _node_events,
        options=NODE_EVENT_OPTIONS,
    )
)
