"""Keep an observed run current from Prometheus and Slurm (`goodput watch`), one atomic commit a cycle.

    goodput watch --prometheus http://prom:9090 --slurm --every 1m

Each cycle reads what changed since the last: Slurm's jobs and attempts that changed since its last read and
the state of every node (engine.ingest.slurm), and Prometheus' XID and ECC events in (last read, now] plus the
GPUs it knows (engine.ingest.prometheus). Only events and what is derived from them go to the store (hosts,
gpus, jobs, job_attempts, incidents, host_states, xid_events, and the ECC counters at the moments they rose as
gpu_samples rows); the raw per-GPU series stay in Prometheus, whose base URL (never a password or token) the
run records in its scenario so pages query it for their window.

Jobs are joined to GPUs as Meta's gcm does: an XID's host and time -> the job attempt that held that host then
-> the incident's job_ids. A job's interruptions are its attempts that ended failed, requeued or on a node
failure, and the incidents that hit it. Its goodput (definition `observed_job_goodput`) is the time of its
attempts over its wall clock from first start to end (or now): Slurm records no checkpoints, so an attempt's
time counts as kept, and the gaps between attempts (requeue, restart, waiting for nodes) are lost.

The first cycle creates the run (Store.write_run); later ones add to it (jobs and attempts that changed
replace their earlier rows). The first cycle failing is an error and nothing is written. Later, each source
keeps its own watermark: a source that fails is reported (on stderr and in the run's summary: "Prometheus
unreachable since 10:42 UTC") and read again from its last success the next cycle, so nothing it holds is
lost, while the other source's data still lands. A cycle in which every source failed commits only the
sources' states. SIGINT or SIGTERM end the loop within a fraction of a second; a cycle cut short is dropped.
"""

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import polars as pl

from engine.errors import GoodputError
from engine.ingest import slurm
from engine.ingest.live import STOP_POLL_S, _schedule, _stopped_by_signals
from engine.ingest.observed import FATAL_XIDS, INCIDENT_MERGE_S, RACKS_PER_ROW, xid_incidents
from engine.store import Store
from engine.store.run import Run
from engine.store.schema import HOST_STATES, OUT_OF_SERVICE_STATES, polars_schema
from engine.units import SECONDS_PER_DAY

if TYPE_CHECKING:
    from engine.ingest.prometheus import PrometheusSource

PROMETHEUS, SLURM = "prometheus", "slurm"
LABELS = {PROMETHEUS: "Prometheus", SLURM: "Slurm"}
# Each Slurm read reaches this far before the last one: slurmdbd learns of a job's start and end some seconds
# after slurmctld (a job that ran 2 s was missing from sacct for a second here), and `sacct -S` selects by when a
# job ran, not by when accounting heard of it. Rows read twice are compared and only changes are written.
SLURM_OVERLAP_S = 300.0
DEFAULT_LOOKBACK_S = 3600.0  # how far back the first cycle reads: jobs and events of the last hour
INVENTORY_METRIC = "DCGM_FI_DEV_GPU_TEMP"  # every dcgm-exporter serves it: the GPUs Prometheus knows
# Attempts that ended in one of these (Slurm's states, lower case) interrupted their job.
INTERRUPTED = ("failed", "requeued", "node_fail", "preempted", "timeout", "out_of_memory", "boot_fail")
RUNNING = "end_of_run"  # end_reason of an attempt still running at the run's end (as replay writes it)
# Rows that a later cycle replaces rather than adds to (a running job ends, an incident learns its jobs).
REPLACE_KEYS = {"jobs": ("job_id",), "job_attempts": ("job_id", "attempt"), "incidents": ("incident_id",)}

TYPES = {t: polars_schema(t) for t in ("jobs", "job_attempts", "incidents", "host_states", "xid_events")}
SAMPLE_TYPES = polars_schema("gpu_samples")


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
    inventory: pl.DataFrame | None = None  # host, gpu
    prom_from: float = 0.0  # the Prometheus window read: (prom_from, now]


@dataclass
class Watcher:
    """The sources, their states and watermarks, and what the run holds so far (ids, jobs, incidents)."""

    origin: float  # epoch seconds of the run's start: times in the run count from here
    prometheus: "PrometheusSource | None" = None
    slurm: "slurm.SlurmSource | None" = None
    states: dict[str, SourceState] = field(default_factory=dict)
    prom_mark: float = 0.0  # Prometheus read up to here (epoch s)
    slurm_mark: float = 0.0  # Slurm read since here
    hosts: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema={"host_id": pl.Int32, "hostname": pl.String})
    )
    gpus: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={"gpu_id": pl.Int32, "host_id": pl.Int32, "index": pl.Int16}
        )
    )
    jobs: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TYPES["jobs"]))
    attempts: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TYPES["job_attempts"]))
    incidents: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TYPES["incidents"]))
    last_fatal: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={"gpu_id": pl.Int32, "t_s": pl.Float64, "incident_id": pl.Int32}
        )
    )
    down_since: dict[int, float] = field(default_factory=dict)  # host_id -> first fatal XID (no Slurm state)
    node_states: dict[str, str] = field(default_factory=dict)  # what Slurm said last, per node
    states_end_s: float = 0.0  # host_states cover [0, states_end_s)
    xid_events: int = 0
    ecc_events: int = 0

    def __post_init__(self) -> None:
        self.prom_mark = self.slurm_mark = self.origin
        if self.prometheus is not None:
            self.states[PROMETHEUS] = SourceState(PROMETHEUS, self.prometheus_url)
        if self.slurm is not None:
            self.states[SLURM] = SourceState(SLURM, self.slurm.conf or "default")

    @property
    def prometheus_url(self) -> str:
        """The base URL (before /api/v1) without user or password: what the run stores and pages query."""
        return self.prometheus.base if self.prometheus is not None else ""

    # ----- reading (I/O only) ---------------------------------------------------------------------------------
    def read(self, now: float) -> Reading:
        """Every source's news since its watermark; a failing source is recorded in its state, not raised."""
        reading = Reading(now=now, prom_from=self.prom_mark)
        if self.slurm is not None:
            try:
                since = datetime.fromtimestamp(max(self.origin, self.slurm_mark - SLURM_OVERLAP_S), UTC)
                jobs = slurm.read_jobs(self.slurm, since)
                reading.nodes = slurm.read_nodes(self.slurm)
                reading.jobs, reading.attempts = jobs.jobs, jobs.attempts
            except GoodputError as err:
                reading.jobs = reading.attempts = reading.nodes = None
                self.states[SLURM].failed(now, str(err))
            else:
                self.states[SLURM].succeeded(now)
        if self.prometheus is not None:
            from engine.ingest import prometheus as prom  # a watch of Slurm alone needs no HTTP client

            try:
                # Prometheus' windows include their start, which the last cycle read as its end
                after = pl.col("t") > self.prom_mark
                reading.xids = prom.xid_events(self.prometheus, self.prom_mark, now).filter(after)
                reading.ecc = prom.ecc_events(self.prometheus, self.prom_mark, now).filter(after)
                series = prom.gpu_series(
                    self.prometheus, INVENTORY_METRIC, max(self.prom_mark, now - 300), now, points=2
                )
                reading.inventory = series.select("host", "gpu").unique()
            except GoodputError as err:
                reading.xids = reading.ecc = reading.inventory = None
                self.states[PROMETHEUS].failed(now, str(err))
            else:
                self.states[PROMETHEUS].succeeded(now)
        return reading

    # ----- deriving (no I/O) ----------------------------------------------------------------------------------
    def derive(self, reading: Reading) -> dict[str, pl.DataFrame]:
        """The rows this reading adds (or replaces, REPLACE_KEYS). All or nothing: a reading that fails to
        derive leaves the watcher as it was, so the loop carries on with consistent ids and watermarks."""
        saved = dict(vars(self))  # frames are immutable: the references are the whole snapshot
        try:
            return self._derive(reading)
        except BaseException:
            vars(self).update(saved)
            raise

    def _derive(self, r: Reading) -> dict[str, pl.DataFrame]:
        now_s = r.now - self.origin
        known_hosts, known_gpus = self.hosts.height, self.gpus.height
        names = [r.nodes["node"]] if r.nodes is not None else []
        for frame in (r.inventory, r.xids, r.ecc):
            if frame is not None:
                names.append(frame["host"])
        if r.jobs is not None:
            names.append(r.jobs["nodes"].explode())
        if r.attempts is not None:
            names.append(r.attempts["nodes"].explode())
        self._add_hosts(
            pl.concat([n.cast(pl.String) for n in names]) if names else pl.Series([], dtype=pl.String)
        )
        if r.nodes is not None:  # Slurm's gres count: GPUs 0..n-1 of each node, known without Prometheus
            self._add_gpus(
                r.nodes.select(
                    pl.col("node").alias("host"), pl.int_ranges(0, pl.col("gpus").fill_null(0)).alias("gpu")
                ).explode("gpu")
            )
        for frame in (r.inventory, r.xids, r.ecc):
            if frame is not None:
                self._add_gpus(frame)

        jobs, attempts = self._jobs(r, now_s)
        xids, new_incidents = (
            self._xids(r.xids) if r.xids is not None else (_empty("xid_events"), _empty("incidents"))
        )
        incidents = self._join_incidents(new_incidents)
        samples = self._ecc(r.ecc) if r.ecc is not None else pl.DataFrame(schema=SAMPLE_TYPES)
        states = self._host_states(r.nodes, now_s)
        if r.xids is not None:
            self.prom_mark = r.now
        if r.jobs is not None:
            self.slurm_mark = r.now
        self.xid_events += xids.height
        self.ecc_events += samples.height
        return {
            "hosts": _hosts_table(self.hosts.slice(known_hosts)),
            "gpus": self.gpus.slice(known_gpus).select(
                "gpu_id", "host_id", "index", uuid=pl.lit(None, pl.String), model=pl.lit(None, pl.String)
            ),
            "jobs": jobs,
            "job_attempts": attempts,
            "xid_events": xids,
            "incidents": incidents,
            "host_states": states,
            "gpu_samples": samples,
        }

    def _add_hosts(self, names: pl.Series) -> None:
        new = names.drop_nulls().unique().sort()
        new = new.filter(~new.is_in(self.hosts["hostname"].implode()))
        if new.len():
            ids = pl.int_range(self.hosts.height, self.hosts.height + new.len(), dtype=pl.Int32, eager=True)
            self.hosts = pl.concat([self.hosts, pl.DataFrame({"host_id": ids, "hostname": new})])

    def _add_gpus(self, frame: pl.DataFrame) -> None:
        seen = (
            frame.select(pl.col("host").alias("hostname"), pl.col("gpu").cast(pl.Int16).alias("index"))
            .drop_nulls()
            .unique()
            .join(self.hosts, on="hostname")
            .join(self.gpus, on=["host_id", "index"], how="anti")
            .sort("host_id", "index")
        )
        if seen.height:
            ids = pl.int_range(self.gpus.height, self.gpus.height + seen.height, dtype=pl.Int32, eager=True)
            self.gpus = pl.concat([self.gpus, seen.select(gpu_id=ids, host_id="host_id", index="index")])

    def _host_ids(self, nodes: pl.Expr) -> pl.Expr:
        """A list of hostnames as a list of host ids (every name is known: _add_hosts saw them first)."""
        ids = dict(zip(self.hosts["hostname"].to_list(), self.hosts["host_id"].to_list(), strict=True))
        return nodes.list.eval(pl.element().replace_strict(ids, return_dtype=pl.Int32))

    def _jobs(self, r: Reading, now_s: float) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The jobs and attempts that changed, in the store's columns; they replace their earlier rows."""
        if r.jobs is None or r.attempts is None:
            return _empty("jobs"), self._open_attempts(now_s)
        jobs = r.jobs.select(
            pl.col("job_id").cast(pl.String),
            "name",
            pl.col("gpus").cast(pl.Float64),
            pl.lit(None, pl.Int32).alias("priority"),
            _since(pl.col("submit"), self.origin).alias("submit_s"),
            _since(pl.col("start"), self.origin).alias("start_s"),
            _since(pl.col("end"), self.origin).alias("end_s"),
            pl.col("state").str.to_lowercase(),
            "user",
            pl.lit("trace").alias("kind"),
            pl.lit(None, pl.String).alias("wait_reason"),
        ).cast(TYPES["jobs"])
        attempts = (
            r.attempts.filter(pl.col("start").is_not_null())
            .select(
                pl.col("job_id").cast(pl.String),
                (pl.col("attempt") + 1).cast(pl.Int32),  # engine.ingest.slurm counts from 0, the store from 1
                _since(pl.col("start"), self.origin).alias("start_s"),
                _since(pl.col("end"), self.origin).fill_null(now_s).alias("end_s"),
                pl.when(pl.col("end").is_null())
                .then(pl.lit(RUNNING))
                .otherwise(pl.col("state").str.to_lowercase())
                .alias("end_reason"),
                pl.lit(0.0).alias(
                    "lost_work_s"
                ),  # no checkpoints known: an attempt's time is kept (module doc)
                self._host_ids(pl.col("nodes")).alias("hosts"),
            )
            .cast(TYPES["job_attempts"])
        )
        jobs = jobs.join(self.jobs, on=jobs.columns, how="anti", nulls_equal=True)  # read again, unchanged
        attempts = attempts.join(self.attempts, on=attempts.columns, how="anti", nulls_equal=True)
        self.jobs = _upsert(self.jobs, jobs, REPLACE_KEYS["jobs"])
        self.attempts = _upsert(self.attempts, attempts, REPLACE_KEYS["job_attempts"])
        return jobs, pl.concat([attempts, self._open_attempts(now_s, attempts)])

    def _open_attempts(self, now_s: float, fresh: pl.DataFrame | None = None) -> pl.DataFrame:
        """Attempts still running that this cycle did not reread, stretched to now (the run's end moves)."""
        still = self.attempts.filter(pl.col("end_reason") == RUNNING)
        if fresh is not None:
            still = still.join(fresh, on=list(REPLACE_KEYS["job_attempts"]), how="anti")
        still = still.with_columns(end_s=pl.lit(now_s))
        self.attempts = _upsert(self.attempts, still, REPLACE_KEYS["job_attempts"])
        return still

    def _xids(self, events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """XID events with their GPUs' ids; one incident per burst of fatal XIDs on a GPU (engine.ingest.observed's
        rule: a burst within INCIDENT_MERGE_S is one failure, and continues an incident of an earlier cycle)."""
        gpus = self.gpus.join(self.hosts, on="host_id").select("gpu_id", "host_id", "hostname", "index")
        rows = (
            events.select(
                pl.col("host").alias("hostname"), pl.col("gpu").cast(pl.Int16).alias("index"), "t", "xid"
            )
            .join(gpus, on=["hostname", "index"], how="left")
            .with_columns(t_s=pl.col("t").cast(pl.Float64) - self.origin)
            .sort("t_s", "gpu_id")
            .with_row_index("row")
        )
        fatal = rows.filter(pl.col("xid").is_in(FATAL_XIDS)).join(
            self.last_fatal.select(
                "gpu_id", pl.col("t_s").alias("prior_t"), pl.col("incident_id").alias("prior")
            ),
            on="gpu_id",
            how="left",
        )
        fatal = fatal.sort("gpu_id", "t_s").with_columns(prev=pl.col("t_s").shift(1).over("gpu_id"))
        fatal = fatal.with_columns(prev=pl.coalesce("prev", "prior_t"))
        fatal = fatal.with_columns(
            opens=pl.col("prev").is_null() | (pl.col("t_s") - pl.col("prev") > INCIDENT_MERGE_S)
        )
        fatal = fatal.with_columns(burst=pl.col("opens").cum_sum().over("gpu_id"))
        next_id = int(self.incidents["incident_id"].max() or -1) + 1 if self.incidents.height else 0
        starts = fatal.filter("opens").sort("t_s", "gpu_id")
        starts = starts.with_columns(incident_id=pl.int_range(next_id, next_id + pl.len(), dtype=pl.Int32))
        fatal = fatal.join(
            starts.select("gpu_id", "burst", pl.col("incident_id").alias("new")),
            on=["gpu_id", "burst"],
            how="left",
        ).with_columns(incident_id=pl.coalesce("new", "prior").cast(pl.Int32))
        xids = rows.join(fatal.select("row", "incident_id"), on="row", how="left").select(
            "t_s",
            "gpu_id",
            "host_id",
            pl.col("xid").cast(pl.Int32),
            "incident_id",
            pl.format("XID {} from Prometheus ({} GPU {})", "xid", "hostname", "index").alias("message"),
        )
        if fatal.height:
            latest = fatal.group_by("gpu_id").agg(pl.col("t_s").max(), pl.col("incident_id").last())
            self.last_fatal = pl.concat(
                [self.last_fatal.join(latest, on="gpu_id", how="anti"), latest.cast(self.last_fatal.schema)]
            )
            for host_id, t_s in starts.group_by("host_id").agg(pl.col("t_s").min()).iter_rows():
                self.down_since.setdefault(host_id, t_s)
        incidents = (
            xid_incidents(starts)
            .with_columns(pl.lit(None, pl.List(pl.String)).alias("job_ids"))
            .cast(TYPES["incidents"])
        )
        return xids.cast(TYPES["xid_events"]), incidents

    def _join_incidents(self, new: pl.DataFrame) -> pl.DataFrame:
        """Every incident's jobs: the attempts that held its host at its time (gcm's join of GPUs to jobs).
        Rejoined each cycle, since Slurm may tell of a job after Prometheus told of the XID; the incidents whose
        jobs changed are returned, to replace their rows."""
        every = pl.concat([self.incidents, new])
        held = self.attempts.select("job_id", "start_s", "end_s", pl.col("hosts").alias("host_id")).explode(
            "host_id"
        )
        hits = (
            every.select("incident_id", "host_id", "t_s")
            .join(held, on="host_id")
            .filter((pl.col("start_s") <= pl.col("t_s")) & (pl.col("t_s") < pl.col("end_s")))
            .group_by("incident_id")
            .agg(pl.col("job_id").unique().sort().alias("found"))
        )
        joined = (
            every.join(hits, on="incident_id", how="left")
            .with_columns(found=pl.col("found").fill_null(pl.lit([], pl.List(pl.String))))
            .with_columns(jobs_hit=pl.col("found").list.len().cast(pl.Int32))
        )
        changed = joined.filter(
            pl.col("incident_id").is_in(new["incident_id"].implode())
            | (pl.col("job_ids").fill_null(pl.lit([], pl.List(pl.String))) != pl.col("found"))
        )
        joined = joined.with_columns(job_ids="found").drop("found").cast(TYPES["incidents"])
        self.incidents = joined
        return (
            changed.with_columns(job_ids="found").drop("found").cast(TYPES["incidents"]).sort("incident_id")
        )

    def _ecc(self, events: pl.DataFrame) -> pl.DataFrame:
        """The ECC counters at the moments they rose, as gpu_samples rows (every other column null): the one
        table the GPUs page reads ECC from."""
        gpus = self.gpus.join(self.hosts, on="host_id").select("gpu_id", "hostname", "index")
        rows = events.with_columns(
            pl.col("gpu").cast(pl.Int16).alias("index"), pl.col("host").alias("hostname")
        ).join(gpus, on=["hostname", "index"], how="left")
        wide = rows.select(
            (pl.col("t").cast(pl.Float64) - self.origin).alias("t_s"),
            "gpu_id",
            pl.when(pl.col("kind") == "sbe").then(pl.col("total")).alias("ecc_sbe"),
            pl.when(pl.col("kind") == "dbe").then(pl.col("total")).alias("ecc_dbe"),
        )
        missing = [pl.lit(None, SAMPLE_TYPES[c]).alias(c) for c in SAMPLE_TYPES if c not in wide.columns]
        return wide.with_columns(*missing).select(*SAMPLE_TYPES).cast(SAMPLE_TYPES).sort("t_s", "gpu_id")

    def _host_states(self, nodes: pl.DataFrame | None, now_s: float) -> pl.DataFrame:
        """Each host's state over [last cycle, now): Slurm's word for its nodes (out of service from its reason
        time when that falls in the interval), running where an attempt holds it; hosts Slurm does not know are
        healthy until their first fatal XID, then down (engine.ingest.observed's rule)."""
        start = self.states_end_s
        if now_s <= start:
            return _empty("host_states")
        said = {}
        if nodes is not None:
            for node, state, reason_t in nodes.select("node", "state", "reason_time").iter_rows():
                said[node] = (
                    _goodput_state(state),
                    None if reason_t is None else _epoch_s(reason_t) - self.origin,
                )
        holder = self._holders()
        rows: list[tuple] = []
        for host_id, hostname in self.hosts.iter_rows():
            if hostname in said:
                state, changed_s = said[hostname]
                self.node_states[hostname] = state
            elif hostname in self.node_states:  # Slurm unread this cycle: its last word stands
                state, changed_s = self.node_states[hostname], None
            else:
                changed_s = self.down_since.get(host_id)
                state = "healthy" if changed_s is None else "down"
            since = start
            if state in OUT_OF_SERVICE_STATES and changed_s is not None and start < changed_s < now_s:
                rows.append((host_id, "healthy", start, changed_s, None))
                since = changed_s
            job = holder.get(host_id) if state in ("healthy", "running") else None
            rows.append((host_id, "running" if job else state, since, now_s, job))
        self.states_end_s = now_s
        return pl.DataFrame(rows, schema=TYPES["host_states"], orient="row").sort("host_id", "start_s")

    def _holders(self) -> dict[int, str]:
        """The job running on each host now (an attempt still open)."""
        running = self.attempts.filter(pl.col("end_reason") == RUNNING).select(
            "job_id", pl.col("hosts").alias("host_id")
        )
        pairs = running.explode("host_id").drop_nulls().unique("host_id", keep="last")
        return dict(zip(pairs["host_id"].to_list(), pairs["job_id"].to_list(), strict=True))

    # ----- the run's summary ----------------------------------------------------------------------------------
    def summary(self, cycles: int, failed: Counter, now: float) -> dict:
        return {
            "hosts": self.hosts.height,
            "gpus": self.gpus.height,
            "jobs": self.jobs.height,
            "running_jobs": int((self.jobs["end_s"].is_null() & self.jobs["start_s"].is_not_null()).sum()),
            "attempts": self.attempts.height,
            "interrupted_attempts": int(self.attempts["end_reason"].is_in(INTERRUPTED).sum()),
            "xid_events": self.xid_events,
            "ecc_events": self.ecc_events,
            "incidents": self.incidents.height,
            "incidents_with_jobs": int((self.incidents["jobs_hit"] > 0).sum()),
            "jobs_goodput": jobs_goodput_total(self.jobs, self.attempts, now - self.origin),
            "cycles": cycles,
            "failed_cycles": dict(failed),
            "sources": [asdict(s) for s in self.states.values()],
            "prometheus_url": self.prometheus_url or None,
            "days": round((now - self.origin) / SECONDS_PER_DAY, 6),
        }


# ----- per-job goodput -----------------------------------------------------------------------------------------


def job_goodput(jobs: pl.DataFrame, attempts: pl.DataFrame, now_s: float) -> pl.DataFrame:
    """Each started job's observed goodput (definition `observed_job_goodput`): job_id, gpus, wall_s (first
    start to end, or now), kept_s (its attempts' time), interruptions (attempts ended in INTERRUPTED), goodput."""
    per_job = attempts.group_by("job_id").agg(
        kept_s=(pl.col("end_s") - pl.col("start_s")).clip(0).sum(),
        first_s=pl.col("start_s").min(),
        interruptions=pl.col("end_reason").is_in(INTERRUPTED).sum().cast(pl.Int32),
    )
    frame = (
        jobs.filter(pl.col("start_s").is_not_null())
        .select("job_id", "gpus", "end_s")
        .join(per_job, on="job_id")
    )
    frame = frame.with_columns(wall_s=pl.col("end_s").fill_null(now_s) - pl.col("first_s"))
    return frame.select(
        "job_id",
        "gpus",
        "wall_s",
        "kept_s",
        "interruptions",
        goodput=pl.when(pl.col("wall_s") > 0).then((pl.col("kept_s") / pl.col("wall_s")).clip(0, 1)),
    ).sort("job_id")


def jobs_goodput_total(jobs: pl.DataFrame, attempts: pl.DataFrame, now_s: float) -> float | None:
    """Kept GPU-time over wall-clock GPU-time of every started job (each job weighted by its GPUs)."""
    frame = job_goodput(jobs, attempts, now_s).filter(pl.col("wall_s") > 0)
    wall = float((frame["wall_s"] * frame["gpus"].fill_null(0)).sum())
    kept = float((frame["kept_s"].clip(upper_bound=frame["wall_s"]) * frame["gpus"].fill_null(0)).sum())
    return round(kept / wall, 6) if wall > 0 else None


# ----- the loop ------------------------------------------------------------------------------------------------


def watch_loop(
    store: Store,
    *,
    prometheus_url: str | None = None,
    slurm_source: "slurm.SlurmSource | None" = None,
    every_s: float = 60.0,
    cycles: int | None = None,
    name: str | None = None,
    lookback_s: float = DEFAULT_LOOKBACK_S,
    log: Callable[[str], None] | None = None,
    quiet: bool = False,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.time,
) -> dict:
    """Watch until stopped (or `cycles` times); return the run's summary with its run_id.

    `log` (default stderr) gets a line per committed cycle and per problem; `quiet` keeps only problems."""
    if prometheus_url is None and slurm_source is None:
        raise GoodputError("watch: give --prometheus URL, --slurm, or both")
    if every_s <= 0:
        raise GoodputError("--every: the interval between cycles must be greater than 0")
    if lookback_s < 0:
        raise GoodputError("--since: must not be negative")
    source = None
    if prometheus_url is not None:
        from engine.ingest.prometheus import PrometheusSource

        source = PrometheusSource(prometheus_url)
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    progress = (lambda _line: None) if quiet else log
    stop = stop or threading.Event()
    first = clock()
    watcher = Watcher(origin=first - lookback_s, prometheus=source, slurm=slurm_source)
    failed: Counter = Counter()
    run_id, committed = "", 0
    with _stopped_by_signals(stop):
        for number, _due in enumerate(_schedule(every_s, cycles, stop), start=1):
            now = first if number == 1 else clock()
            reading = _read_or_stop(watcher, now, stop)
            if reading is None:
                log(f"cycle {number}: stopped while reading; not committed")
                break
            down = [s for s in watcher.states.values() if not s.reachable]
            if number == 1 and down:  # a watch that cannot read a source it was given must not start
                raise GoodputError("; ".join(s.line() for s in down) + "; nothing was written")
            for state in watcher.states.values():
                if not state.reachable:
                    failed[state.source] += 1
                    log(f"cycle {number}: {state.line()}")
            tables = watcher.derive(reading)
            committed += 1
            summary = watcher.summary(committed, failed, now)
            duration_s = now - watcher.origin
            if not run_id:
                run = Run(
                    kind="ingest",
                    name=name or f"watch: {', '.join(s.target for s in watcher.states.values())}",
                    started_at=datetime.fromtimestamp(watcher.origin, UTC),
                    duration_s=duration_s,
                    scenario={
                        "source": "watch",
                        "prometheus": watcher.prometheus_url or None,
                        "slurm": slurm_source.conf or "default" if slurm_source is not None else None,
                        "every_s": every_s,
                    },
                    summary=summary,
                    tables=tables,
                )
                run_id = store.write_run(run)
            else:
                store.append_to_run(
                    run_id, tables, duration_s=duration_s, summary=summary, replace=REPLACE_KEYS
                )
            progress(
                f"cycle {number} at {datetime.now(UTC):%H:%M:%S}: +{tables['jobs'].height} jobs changed,"
                f" +{tables['xid_events'].height} XID events; run {run_id}: {summary['jobs']} jobs,"
                f" {summary['hosts']} hosts, {summary['incidents']} incidents"
            )
    if not run_id:
        raise GoodputError("stopped before the first cycle completed; nothing was written")
    return {"run_id": run_id, **watcher.summary(committed, failed, watcher.states_end_s + watcher.origin)}


def _read_or_stop(watcher: Watcher, now: float, stop: threading.Event) -> Reading | None:
    """watcher.read(now) in a worker thread, so a stop ends the cycle within STOP_POLL_S even while a source
    hangs: Prometheus' requests in flight are cut, a Slurm command is left to its own timeout in the daemon
    thread. None when stopped."""
    done: list = []

    def work() -> None:
        try:
            done.append(watcher.read(now))
        except BaseException as err:  # noqa: BLE001 (handed to the loop's thread, which raises it)
            done.append(err)

    thread = threading.Thread(target=work, name="goodput-watch", daemon=True)
    thread.start()
    while True:
        thread.join(STOP_POLL_S)
        if stop.is_set():
            if watcher.prometheus is not None:
                watcher.prometheus.abort()
            return None
        if not thread.is_alive():
            break
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def watch_text(r: dict) -> str:
    """`goodput watch` without --json: what the run holds and where each source stands."""
    goodput = "n/a" if r.get("jobs_goodput") is None else f"{r['jobs_goodput']:.1%}"
    lines = [
        f"run {r['run_id']}: {r['cycles']:,} cycles, {r['jobs']:,} jobs ({r['running_jobs']:,} running,"
        f" {r['interrupted_attempts']:,} interrupted attempts), {r['hosts']:,} hosts, {r['gpus']:,} GPUs,"
        f" {r['xid_events']:,} XID events, {r['incidents']:,} incidents ({r['incidents_with_jobs']:,} hit jobs),"
        f" jobs' goodput {goodput}"
    ]
    lines += [f"  {SourceState(**s).line()}" for s in r.get("sources", [])]
    return "\n".join(lines)


# ----- helpers -------------------------------------------------------------------------------------------------


def _goodput_state(state: str) -> str:
    """Slurm's node state as one of HOST_STATES (engine.ingest.slurm maps them; a raw Slurm word is mapped
    the same way: drained or down is out of service)."""
    word = (state or "").lower()
    if word in HOST_STATES:
        return word
    if "drain" in word:
        return "draining" if "ing" in word else "down"
    if any(w in word for w in ("down", "fail", "maint", "reboot")):
        return "down"
    return "running" if any(w in word for w in ("alloc", "mix")) else "healthy"


def _epoch_s(value) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def _since(col: pl.Expr, origin: float) -> pl.Expr:
    """A Slurm time (a UTC datetime) as seconds since the run's start."""
    return col.dt.epoch("us").cast(pl.Float64) / 1e6 - origin


def _upsert(old: pl.DataFrame, new: pl.DataFrame, keys: tuple[str, ...]) -> pl.DataFrame:
    if new.height == 0:
        return old
    return pl.concat([old.join(new, on=list(keys), how="anti"), new])


def _hosts_table(hosts: pl.DataFrame) -> pl.DataFrame:
    """Hosts of unknown position laid out as engine.ingest.observed does: one a rack, RACKS_PER_ROW a row."""
    host_id = pl.col("host_id")
    return hosts.select(
        host_id,
        "hostname",
        host_id.alias("rack_id"),
        pl.lit(0).alias("pod_id"),
        (host_id // RACKS_PER_ROW).alias("row"),
        (host_id % RACKS_PER_ROW).alias("position"),
        pl.lit(0).alias("slot"),
    ).cast(dict.fromkeys(("host_id", "rack_id", "pod_id", "row", "position", "slot"), pl.Int32))


def _empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=TYPES[table])
