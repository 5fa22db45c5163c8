"""The sources of a watch behind one protocol (WatchSource: SlurmWatch, PrometheusWatch), where each stands
(SourceState) and what one cycle read from them (Reading, read_sources)."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar, Protocol

import polars as pl

from engine.errors import GoodputError
from engine.ingest import slurm
from engine.ingest.watch.checkpoints import DEFAULT_JOB_LABEL, read_checkpoints

if TYPE_CHECKING:
    from engine.ingest.prometheus import PrometheusSource

PROMETHEUS, SLURM = "prometheus", "slurm"
LABELS = {PROMETHEUS: "Prometheus", SLURM: "Slurm"}
# Each Slurm read reaches this far before the last one: slurmdbd learns of a job's start and end some seconds
# after slurmctld (a job that ran 2 s was missing from sacct for a second here), and `sacct -S` selects by when a
# job ran, not by when accounting heard of it. Rows read twice are compared and only changes are written.
SLURM_OVERLAP_S = 300.0
INVENTORY_METRIC = "DCGM_FI_DEV_GPU_TEMP"  # every dcgm-exporter serves it: the GPUs Prometheus knows
INVENTORY_WINDOW_S = (
    300.0  # the GPUs that reported in the last 5 minutes (Prometheus' own staleness lookback)
)


@dataclass
class SourceState:
    """Where one source stands: what the run's summary keeps and the Overview and Data pages show."""

    source: str  # PROMETHEUS or SLURM
    target: str  # the base URL without its password, or the slurm.conf read ("default" for Slurm's own)
    reachable: bool = False
    last_success: float | None = None  # epoch seconds of the last read that worked
    failing_since: float | None = None  # epoch seconds of the first failure since then
    error: str | None = None
    failed_cycles: int = 0

    def succeeded(self, now: float) -> None:
        self.reachable, self.last_success, self.failing_since, self.error = True, now, None, None

    def failed(self, now: float, error: str) -> None:
        self.reachable, self.error, self.failed_cycles = False, error, self.failed_cycles + 1
        self.failing_since = self.failing_since or now

    def line(self) -> str:
        """`Prometheus (http://prom:9090): unreachable since 10:42 UTC (connection refused)`."""
        head = f"{LABELS.get(self.source, self.source)} ({self.target})"
        if self.reachable:
            return f"{head}: reachable, last read {_clock(self.last_success)}"
        since = f" since {_clock(self.failing_since)}" if self.failing_since else ""
        return f"{head}: unreachable{since} ({self.error})"


def source_states(summary: dict) -> list[SourceState]:
    """The source states a watched run's summary holds (empty for any other run)."""
    return [SourceState(**s) for s in summary.get("sources", [])]


def _clock(t: float | None) -> str:
    return "never" if t is None else f"{datetime.fromtimestamp(t, UTC):%Y-%m-%d %H:%M} UTC"


@dataclass
class Reading:
    """What one cycle read from the sources, before anything is derived (None: not read, or failed)."""

    now: float
    jobs: pl.DataFrame | None = None
    attempts: pl.DataFrame | None = None
    nodes: pl.DataFrame | None = None
    xids: pl.DataFrame | None = None  # host, gpu, t, xid
    ecc: pl.DataFrame | None = None
    clocks: pl.DataFrame | None = None  # engine.ingest.prometheus.throttle.CLOCK_COLUMNS
    nics: pl.DataFrame | None = None  # NIC ports where they changed (prometheus.nic.NIC_COLUMNS)
    nic_ports: pl.DataFrame | None = None  # every NIC port's values now (the same columns)
    inventory: pl.DataFrame | None = None  # host, gpu
    checkpoints: pl.DataFrame | None = (
        None  # job_id, t (epoch s): the checkpoint metric's values, when watched
    )
    prom_from: float = 0.0  # the Prometheus window read: (prom_from, now]


class WatchSource(Protocol):
    """One source a watch reads each cycle: Slurm (SlurmWatch), Prometheus (PrometheusWatch). A new source is one
    such class, its fields on Reading, and what Watcher derives from them."""

    key: str  # PROMETHEUS or SLURM: its SourceState and its failure count are kept under this

    def read(self, reading: Reading, mark: float) -> str | None:
        """Its news since `mark` (its watermark, epoch s) into `reading`; the error, or None when it was read."""
        ...


@dataclass(frozen=True)
class SlurmWatch:
    """Slurm's jobs and attempts that changed since the watermark (less SLURM_OVERLAP_S), and its nodes."""

    source: "slurm.SlurmSource"
    origin: float  # the run's start (epoch s): nothing before it is read
    key: ClassVar[str] = SLURM

    def read(self, reading: Reading, mark: float) -> str | None:
        return _read_slurm(reading, self.source, max(self.origin, mark - SLURM_OVERLAP_S))


@dataclass(frozen=True)
class PrometheusWatch:
    """Prometheus' XID, ECC, clock and NIC events in (watermark, now], the GPUs and NIC ports it knows and the
    checkpoint gauge. `make_source` makes this cycle's Prometheus source (credentials read again), so a failure
    to make it counts as Prometheus failing."""

    make_source: "Callable[[], PrometheusSource]"
    checkpoint_metric: str | None = None
    checkpoint_job_label: str = DEFAULT_JOB_LABEL
    key: ClassVar[str] = PROMETHEUS

    def read(self, reading: Reading, mark: float) -> str | None:
        reading.prom_from = mark
        return _read_prometheus(
            reading, self.make_source, mark, self.checkpoint_metric, self.checkpoint_job_label
        )


def read_sources(
    now: float, sources: "Iterable[tuple[WatchSource, float]]"
) -> tuple[Reading, dict[str, str | None]]:
    """Every source's news since its watermark (each given with its own), and each source's outcome keyed by
    its `key` (None: read, else the error): a failing source is reported, not raised."""
    reading = Reading(now=now)
    outcomes: dict[str, str | None] = {}
    for source, mark in sources:
        outcomes[source.key] = source.read(reading, mark)
    return reading, outcomes


def _read_slurm(reading: Reading, source: "slurm.SlurmSource", since_epoch: float) -> str | None:
    """Slurm's jobs and attempts since `since_epoch` and its nodes, into `reading`; the error, if any."""
    try:
        since = datetime.fromtimestamp(since_epoch, UTC)
        jobs = slurm.read_jobs(source, since)
        reading.nodes = slurm.read_nodes(source)
        reading.jobs, reading.attempts = jobs.jobs, jobs.attempts
    except GoodputError as err:
        reading.jobs = reading.attempts = reading.nodes = None
        return str(err)
    return None


def _read_prometheus(
    reading: Reading,
    make_source: "Callable[[], PrometheusSource]",
    mark: float,
    checkpoint_metric: str | None,
    checkpoint_job_label: str,
) -> str | None:
    """Prometheus' events in (mark, now], the GPUs it knows and the checkpoint gauge, into `reading`; the error."""
    from engine.ingest import prometheus as prom  # a watch of Slurm alone needs no HTTP client

    now = reading.now
    try:
        source = make_source()  # credentials read from their files again: a rotated token works
        # Prometheus' windows include their start, which the last cycle read as its end
        after = pl.col("t") > mark
        reading.xids = prom.xid_events(source, mark, now).filter(after)
        reading.ecc = prom.ecc_events(source, mark, now).filter(after)
        reading.clocks = prom.clock_events(source, mark, now).filter(after)
        reading.nics = prom.nic_events(source, mark, now)  # with the step before each: nics.py keeps the new
        reading.nic_ports = prom.nic_ports(source, now)
        series = prom.gpu_series(source, INVENTORY_METRIC, max(mark, now - INVENTORY_WINDOW_S), now, points=2)
        reading.inventory = series.select("host", "gpu").unique()
        if checkpoint_metric is not None:
            reading.checkpoints = read_checkpoints(source, checkpoint_metric, checkpoint_job_label, mark, now)
    except GoodputError as err:
        reading.xids = reading.ecc = reading.clocks = reading.inventory = reading.checkpoints = None
        reading.nics = reading.nic_ports = None
        return str(err)
    return None
