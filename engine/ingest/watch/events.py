"""What a watch derives from Prometheus' events: XID rows, their incidents (joined to the jobs that held the
GPU's host then, as Meta's gcm does), the ECC counters where they rose and the clock events
(engine.ingest.prometheus.throttle)."""

from typing import NamedTuple

import polars as pl

from engine.ingest.observed import FATAL_XIDS, INCIDENT_MERGE_S, xid_incidents
from engine.ingest.watch.tables import SAMPLE_TYPES, TYPES


class XidRows(NamedTuple):
    """What one cycle's XID events give: their rows, the incidents they open, each GPU's latest fatal XID (the
    whole table, to keep) and the first fatal XID of each host among them (host_id -> t_s)."""

    xids: pl.DataFrame
    incidents: pl.DataFrame
    last_fatal: pl.DataFrame
    down_since: dict[int, float]


def xid_rows(
    events: pl.DataFrame,
    *,
    gpus: pl.DataFrame,
    hosts: pl.DataFrame,
    origin: float,
    last_fatal: pl.DataFrame,
    incidents: pl.DataFrame,
) -> XidRows:
    """XID events with their GPUs' ids; one incident per burst of fatal XIDs on a GPU (engine.ingest.observed's
    rule: a burst within INCIDENT_MERGE_S is one failure, and continues an incident of an earlier cycle).
    `last_fatal` and `incidents` are what the run holds so far; neither is changed."""
    gpus = gpus.join(hosts, on="host_id").select("gpu_id", "host_id", "hostname", "index")
    rows = (
        events.select(
            pl.col("host").alias("hostname"), pl.col("gpu").cast(pl.Int16).alias("index"), "t", "xid"
        )
        .join(gpus, on=["hostname", "index"], how="left")
        .with_columns(t_s=pl.col("t").cast(pl.Float64) - origin)
        .sort("t_s", "gpu_id")
        .with_row_index("row")
    )
    fatal = rows.filter(pl.col("xid").is_in(FATAL_XIDS)).join(
        last_fatal.select("gpu_id", pl.col("t_s").alias("prior_t"), pl.col("incident_id").alias("prior")),
        on="gpu_id",
        how="left",
    )
    fatal = fatal.sort("gpu_id", "t_s").with_columns(prev=pl.col("t_s").shift(1).over("gpu_id"))
    fatal = fatal.with_columns(prev=pl.coalesce("prev", "prior_t"))
    fatal = fatal.with_columns(
        opens=pl.col("prev").is_null() | (pl.col("t_s") - pl.col("prev") > INCIDENT_MERGE_S)
    )
    fatal = fatal.with_columns(burst=pl.col("opens").cum_sum().over("gpu_id"))
    next_id = int(incidents["incident_id"].max() or -1) + 1 if incidents.height else 0
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
    down_since: dict[int, float] = {}
    if fatal.height:
        latest = fatal.group_by("gpu_id").agg(pl.col("t_s").max(), pl.col("incident_id").last())
        last_fatal = pl.concat(
            [last_fatal.join(latest, on="gpu_id", how="anti"), latest.cast(last_fatal.schema)]
        )
        down_since = dict(starts.group_by("host_id").agg(pl.col("t_s").min()).iter_rows())
    opened = (
        xid_incidents(starts)
        .with_columns(pl.lit(None, pl.List(pl.String)).alias("job_ids"))
        .cast(TYPES["incidents"])
    )
    return XidRows(xids.cast(TYPES["xid_events"]), opened, last_fatal, down_since)


def join_incidents(
    known: pl.DataFrame, new: pl.DataFrame, attempts: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every incident's jobs: the attempts that held its host at its time (gcm's join of GPUs to jobs).
    Rejoined each cycle, since Slurm may tell of a job after Prometheus told of the XID. Returns (every
    incident, joined: what the run now holds; the incidents whose jobs changed, to replace their rows)."""
    every = pl.concat([known, new])
    held = attempts.select("job_id", "start_s", "end_s", pl.col("hosts").alias("host_id")).explode("host_id")
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
    return joined, changed.with_columns(job_ids="found").drop("found").cast(TYPES["incidents"]).sort(
        "incident_id"
    )


def ecc_samples(
    events: pl.DataFrame, *, gpus: pl.DataFrame, hosts: pl.DataFrame, origin: float
) -> pl.DataFrame:
    """The ECC counters at the moments they rose, as gpu_samples rows (every other column null): the one
    table the GPUs page reads ECC from."""
    return _as_samples(
        _on_gpus(events, gpus, hosts).select(
            (pl.col("t").cast(pl.Float64) - origin).alias("t_s"),
            "gpu_id",
            pl.when(pl.col("kind") == "sbe").then(pl.col("total")).alias("ecc_sbe"),
            pl.when(pl.col("kind") == "dbe").then(pl.col("total")).alias("ecc_dbe"),
        )
    )


def clock_samples(
    events: pl.DataFrame, *, gpus: pl.DataFrame, hosts: pl.DataFrame, origin: float
) -> pl.DataFrame:
    """Clock events (engine.ingest.prometheus.throttle.clock_events) as gpu_samples rows: the SM clock, the
    clocks-event reasons and the violation counters at each, every other column null."""
    return _as_samples(
        _on_gpus(events, gpus, hosts).select(
            (pl.col("t").cast(pl.Float64) - origin).alias("t_s"),
            "gpu_id",
            "sm_clock_mhz",
            "clocks_event_reasons",
            "power_violation_ns",
            "thermal_violation_ns",
        )
    )


def _on_gpus(events: pl.DataFrame, gpus: pl.DataFrame, hosts: pl.DataFrame) -> pl.DataFrame:
    """Events of (host, gpu index) with the run's gpu_id of each (null for a GPU the run does not know)."""
    gpus = gpus.join(hosts, on="host_id").select("gpu_id", "hostname", "index")
    return events.with_columns(
        pl.col("gpu").cast(pl.Int16).alias("index"), pl.col("host").alias("hostname")
    ).join(gpus, on=["hostname", "index"], how="left")


def _as_samples(wide: pl.DataFrame) -> pl.DataFrame:
    """Some gpu_samples columns as the whole table's rows: every other column null, the table's types."""
    missing = [pl.lit(None, SAMPLE_TYPES[c]).alias(c) for c in SAMPLE_TYPES if c not in wide.columns]
    return wide.with_columns(*missing).select(*SAMPLE_TYPES).cast(SAMPLE_TYPES).sort("t_s", "gpu_id")
