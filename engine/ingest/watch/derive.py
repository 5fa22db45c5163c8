"""The Watcher: a watch's sources, their states and watermarks, and what the run holds so far; it turns each
cycle's Reading into the rows that cycle adds (or replaces, REPLACE_KEYS), with ids that stay stable across
cycles (hosts and GPUs numbered as they first appear)."""

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.ingest import slurm
from engine.ingest.observed import hosts_table
from engine.ingest.watch.access import PrometheusAccess
from engine.ingest.watch.checkpoints import DEFAULT_JOB_LABEL, check_names
from engine.ingest.watch.events import clock_samples, ecc_samples, join_incidents, xid_rows
from engine.ingest.watch.goodput import INTERRUPTED, RUNNING, jobs_goodput, kept_per_attempt
from engine.ingest.watch.hosts import host_states
from engine.ingest.watch.nics import known_ports, nic_rows
from engine.ingest.watch.sources import (
    PROMETHEUS,
    SLURM,
    PrometheusWatch,
    Reading,
    SlurmWatch,
    SourceState,
    WatchSource,
    read_sources,
)
from engine.ingest.watch.tables import REPLACE_KEYS, SAMPLE_TYPES, TYPES, empty, since, upsert
from engine.units import SECONDS_PER_DAY

if TYPE_CHECKING:
    from engine.ingest.prometheus import PrometheusSource


@dataclass
class Watcher:
    """The sources, their states and watermarks, and what the run holds so far (ids, jobs, incidents).

    `access` (how to reach Prometheus, credentials read from files) makes a new `prometheus` source every cycle,
    so a rotated token works; a `prometheus` source given alone is used as it is. `checkpoint_metric` names the
    gauge of the jobs' latest checkpoint times (engine.ingest.watch.checkpoints), read with Prometheus."""

    origin: float  # epoch seconds of the run's start: times in the run count from here
    prometheus: "PrometheusSource | None" = None
    slurm: "slurm.SlurmSource | None" = None
    access: PrometheusAccess | None = None
    checkpoint_metric: str | None = None
    checkpoint_job_label: str = DEFAULT_JOB_LABEL
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
    jobs: pl.DataFrame = field(default_factory=lambda: empty("jobs"))
    attempts: pl.DataFrame = field(default_factory=lambda: empty("job_attempts"))
    incidents: pl.DataFrame = field(default_factory=lambda: empty("incidents"))
    checkpoints: pl.DataFrame = field(default_factory=lambda: empty("checkpoints"))
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
    clock_events: int = 0  # gpu_samples rows where clocks-event reasons changed or a violation counter rose
    nic_ports: pl.DataFrame = field(default_factory=known_ports)  # NIC ports seen (host, device, port)

    def __post_init__(self) -> None:
        self.prom_mark = self.slurm_mark = self.origin
        if self.access is not None and self.prometheus is None:
            self.prometheus = self.access.source()  # reads the credential files: a missing one fails at once
        if self.checkpoint_metric is not None:
            if self.prometheus is None:
                raise GoodputError(
                    "--checkpoint-metric: the checkpoints are read from Prometheus; give --prometheus"
                )
            check_names(self.checkpoint_metric, self.checkpoint_job_label)
        if self.prometheus is not None:
            self.states[PROMETHEUS] = SourceState(PROMETHEUS, self.prometheus_url)
        if self.slurm is not None:
            self.states[SLURM] = SourceState(SLURM, self.slurm.conf or "default")

    @property
    def prometheus_url(self) -> str:
        """The base URL (before /api/v1) without user or password: what the run stores and pages query."""
        return self.prometheus.base if self.prometheus is not None else ""

    def renew_prometheus(self) -> "PrometheusSource":
        """The source for this cycle: made anew from `access` (its credential files read again), if given."""
        if self.access is not None:
            self.prometheus = self.access.source(self.prometheus.timeout_s)
        return self.prometheus

    # ----- reading (I/O only) ---------------------------------------------------------------------------------
    def read(self, now: float) -> Reading:
        """Every source's news since its watermark; a failing source is recorded in its state, not raised."""
        sources: list[tuple[WatchSource, float]] = []
        if self.slurm is not None:
            sources.append((SlurmWatch(self.slurm, self.origin), self.slurm_mark))
        if self.prometheus is not None:
            watch = PrometheusWatch(self.renew_prometheus, self.checkpoint_metric, self.checkpoint_job_label)
            sources.append((watch, self.prom_mark))
        reading, outcomes = read_sources(now, sources)
        for source, error in outcomes.items():
            if error is None:
                self.states[source].succeeded(now)
            else:
                self.states[source].failed(now, error)
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
        for frame in (r.inventory, r.xids, r.ecc, r.clocks, r.nics, r.nic_ports):
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
        for frame in (r.inventory, r.xids, r.ecc, r.clocks):
            if frame is not None:
                self._add_gpus(frame)

        jobs, attempts = self._jobs(r, now_s)
        xids, new_incidents = self._xids(r.xids)
        self.incidents, incidents = join_incidents(self.incidents, new_incidents, self.attempts)
        samples = (
            ecc_samples(r.ecc, gpus=self.gpus, hosts=self.hosts, origin=self.origin)
            if r.ecc is not None
            else pl.DataFrame(schema=SAMPLE_TYPES)
        )
        clocks = (
            clock_samples(r.clocks, gpus=self.gpus, hosts=self.hosts, origin=self.origin)
            if r.clocks is not None
            else pl.DataFrame(schema=SAMPLE_TYPES)
        )
        states, self.node_states = host_states(
            r.nodes,
            now_s,
            start_s=self.states_end_s,
            origin=self.origin,
            hosts=self.hosts,
            attempts=self.attempts,
            node_states=self.node_states,
            down_since=self.down_since,
        )
        self.states_end_s = max(self.states_end_s, now_s)
        checkpoints = self._checkpoints(r.checkpoints)
        attempts = self._lost_work(attempts, checkpoints)
        if r.xids is not None:
            self.prom_mark = r.now
        if r.jobs is not None:
            self.slurm_mark = r.now
        self.xid_events += xids.height
        self.ecc_events += samples.height
        self.clock_events += clocks.height
        nics, self.nic_ports = nic_rows(
            r.nics, r.nic_ports, known=self.nic_ports, hosts=self.hosts, origin=self.origin
        )
        return {
            "hosts": hosts_table(self.hosts.slice(known_hosts)),
            "gpus": self.gpus.slice(known_gpus).select(
                "gpu_id", "host_id", "index", uuid=pl.lit(None, pl.String), model=pl.lit(None, pl.String)
            ),
            "jobs": jobs,
            "job_attempts": attempts,
            "xid_events": xids,
            "incidents": incidents,
            "host_states": states,
            "gpu_samples": pl.concat([samples, clocks]),
            "checkpoints": checkpoints,
            "nic_samples": nics,
        }

    def _xids(self, events: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
        """This cycle's XID rows and the incidents they open; keeps each GPU's latest fatal XID and when each
        host first went down."""
        if events is None:
            return empty("xid_events"), empty("incidents")
        got = xid_rows(
            events,
            gpus=self.gpus,
            hosts=self.hosts,
            origin=self.origin,
            last_fatal=self.last_fatal,
            incidents=self.incidents,
        )
        self.last_fatal = got.last_fatal
        self.down_since = {**got.down_since, **self.down_since}  # a host's first fatal XID stands
        return got.xids, got.incidents

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
            return empty("jobs"), self._open_attempts(now_s)
        jobs = r.jobs.select(
            pl.col("job_id").cast(pl.String),
            "name",
            pl.col("gpus").cast(pl.Float64),
            pl.lit(None, pl.Int32).alias("priority"),
            since(pl.col("submit"), self.origin).alias("submit_s"),
            since(pl.col("start"), self.origin).alias("start_s"),
            since(pl.col("end"), self.origin).alias("end_s"),
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
                since(pl.col("start"), self.origin).alias("start_s"),
                since(pl.col("end"), self.origin).fill_null(now_s).alias("end_s"),
                pl.when(pl.col("end").is_null())
                .then(pl.lit(RUNNING))
                .otherwise(pl.col("state").str.to_lowercase())
                .alias("end_reason"),
                # nothing known lost until checkpoints are read (_lost_work): Slurm records none
                pl.lit(0.0).alias("lost_work_s"),
                self._host_ids(pl.col("nodes")).alias("hosts"),
            )
            .cast(TYPES["job_attempts"])
        )
        jobs = jobs.join(self.jobs, on=jobs.columns, how="anti", nulls_equal=True)  # read again, unchanged
        attempts = attempts.join(self.attempts, on=attempts.columns, how="anti", nulls_equal=True)
        self.jobs = upsert(self.jobs, jobs, REPLACE_KEYS["jobs"])
        self.attempts = upsert(self.attempts, attempts, REPLACE_KEYS["job_attempts"])
        return jobs, pl.concat([attempts, self._open_attempts(now_s, attempts)])

    def _open_attempts(self, now_s: float, fresh: pl.DataFrame | None = None) -> pl.DataFrame:
        """Attempts still running that this cycle did not reread, stretched to now (the run's end moves)."""
        still = self.attempts.filter(pl.col("end_reason") == RUNNING)
        if fresh is not None:
            still = still.join(fresh, on=list(REPLACE_KEYS["job_attempts"]), how="anti")
        still = still.with_columns(end_s=pl.lit(now_s))
        self.attempts = upsert(self.attempts, still, REPLACE_KEYS["job_attempts"])
        return still

    def _checkpoints(self, read: pl.DataFrame | None) -> pl.DataFrame:
        """The checkpoints read that the run does not hold yet (a job's gauge is read again every cycle while it
        holds the same value). Their duration is unknown: start_s = end_s = the time saved."""
        if read is None or read.height == 0:
            return empty("checkpoints")
        rows = read.select(
            "job_id", (pl.col("t") - self.origin).alias("start_s"), (pl.col("t") - self.origin).alias("end_s")
        ).cast(TYPES["checkpoints"])
        new = rows.unique().join(self.checkpoints, on=["job_id", "end_s"], how="anti").sort("job_id", "end_s")
        self.checkpoints = pl.concat([self.checkpoints, new])
        return new

    def _lost_work(self, attempts: pl.DataFrame, checkpoints: pl.DataFrame) -> pl.DataFrame:
        """The attempts to write, with lost_work_s set where checkpoints tell it: an interrupted attempt of a job
        whose checkpoints are read lost the time after its last checkpoint (the whole attempt without one).
        A checkpoint read after its attempt ended (Prometheus behind Slurm) rewrites that attempt's row."""
        if self.checkpoints.height == 0:
            return attempts
        jobs = pl.concat([attempts["job_id"], checkpoints["job_id"]]).unique().implode()
        mine = self.attempts.filter(pl.col("job_id").is_in(jobs) & pl.col("end_reason").is_in(INTERRUPTED))
        lost = ((pl.col("end_s") - pl.col("start_s")).clip(0) - pl.col("kept_s")).clip(0)
        changed = (
            mine.with_columns(kept_s=kept_per_attempt(mine, self.checkpoints))
            .with_columns(new_lost=lost)
            .filter(pl.col("new_lost") != pl.col("lost_work_s"))
            .with_columns(lost_work_s="new_lost")
            .select(attempts.columns)
        )
        if changed.height == 0:
            return attempts
        keys = list(REPLACE_KEYS["job_attempts"])
        self.attempts = upsert(self.attempts, changed, REPLACE_KEYS["job_attempts"])
        return pl.concat([attempts.join(changed, on=keys, how="anti"), changed])

    # ----- the run's summary ----------------------------------------------------------------------------------
    def summary(self, cycles: int, failed: Counter, now: float) -> dict:
        goodput = jobs_goodput(self.jobs, self.attempts, now - self.origin, self.checkpoints)
        return RunSummary(
            gpus=self.gpus.height,
            hosts=self.hosts.height,
            days=round((now - self.origin) / SECONDS_PER_DAY, 6),
            details={
                "jobs": self.jobs.height,
                "running_jobs": int(
                    (self.jobs["end_s"].is_null() & self.jobs["start_s"].is_not_null()).sum()
                ),
                "attempts": self.attempts.height,
                "interrupted_attempts": int(self.attempts["end_reason"].is_in(INTERRUPTED).sum()),
                "xid_events": self.xid_events,
                "ecc_events": self.ecc_events,
                "clock_events": self.clock_events,
                "nic_ports": self.nic_ports.height,
                "incidents": self.incidents.height,
                "incidents_with_jobs": int((self.incidents["jobs_hit"] > 0).sum()),
                "checkpoints": self.checkpoints.height,
                "jobs_goodput": goodput.goodput,
                "jobs_goodput_measured": goodput.measured,
                "jobs_goodput_upper_bounds": goodput.upper_bounds,
                "jobs_ledger_gpu_hours": goodput.ledger.as_summary(),
                "cycles": cycles,
                "failed_cycles": dict(failed),
                "sources": [asdict(s) for s in self.states.values()],
                "prometheus_url": self.prometheus_url or None,
            },
        ).to_json()
