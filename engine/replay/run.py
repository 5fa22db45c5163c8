"""A replayed trace as a Run(kind="replay"): the trace's cluster, its jobs as recorded or re-scheduled, the
attempts with their hosts, host states from those allocations, and why each job waited.

Settings: engine.replay.settings (`--set replay.*`, `scheduler.*` and the cluster layout keys).
"""

from pathlib import Path

import numpy as np
import polars as pl

from engine.analysis.run_summary import ClusterUse, RunSummary
from engine.bounded_read import read_bounded
from engine.errors import GoodputError
from engine.replay.cluster import cluster_frame, layout, read_failures
from engine.replay.formats import Trace, parse_trace
from engine.replay.settings import SCENARIO_KEYS, ReplaySettings, settings_from
from engine.scheduling.scheduler import (
    Cluster,
    Failures,
    Workload,
    allocate_recorded,
    dominant_reason,
    schedule,
)
from engine.store.run import Run
from engine.units import SECONDS_PER_DAY

__all__ = ["ReplaySettings", "host_states", "read_failures", "replay", "replay_file", "settings_from"]


# ----- the run ----------------------------------------------------------------------------------------------


def replay_file(
    path_or_bytes: str | Path | bytes,
    fmt: str = "auto",
    sets: list[str] | tuple = (),
    mode: str | None = None,
    placement: str | None = None,
    name: str | None = None,
    preset: str | None = None,
    node_list: tuple[str, bytes] | None = None,
) -> Run:
    """Parse a trace (a path, or an upload's bytes named by `name`) and replay it: what `goodput replay`
    and the Data page's upload both do before writing the Run. Raises GoodputError on bad input.

    `node_list` (name, bytes): an uploaded openb pod list's node list, which `goodput replay` finds beside the
    pod list itself (engine.replay.openb).

    An incidents file (the CSV or JSON `goodput export incidents` writes) is replayed instead as a failure
    sequence through the simulator (engine.replay.incidents), `sets` then being scenario keys and `preset`
    the scenario a CSV export needs (a JSON export carries its own)."""
    incidents_format = _incidents_format(path_or_bytes, fmt, name)
    if incidents_format and node_list is not None:
        raise GoodputError(
            f"{node_list[0]}: a node list goes with an Alibaba openb pod list, not an incidents file"
        )
    if incidents_format:
        from engine.replay.incidents import replay_incidents_data

        where, data = _read_bytes(path_or_bytes, name)
        return replay_incidents_data(
            data, incidents_format, where=where, preset=preset, sets=list(sets), name=name
        )
    if preset:
        raise GoodputError(
            "--preset: only an incidents file is replayed under a preset; a job trace takes "
            "replay.* and scheduler.* settings with --set"
        )
    settings = settings_from(list(sets), mode=mode, placement=placement)
    upload = isinstance(path_or_bytes, bytes | bytearray)
    trace = parse_trace(
        path_or_bytes,
        fmt=fmt,
        name=name if upload else None,  # errors name the real file
        node_list=node_list,
    )
    return replay(trace, settings, name=name)


def _read_bytes(path_or_bytes: str | Path | bytes, name: str | None) -> tuple[str, bytes]:
    if isinstance(path_or_bytes, bytes | bytearray):
        return name or "<upload>", bytes(path_or_bytes)
    return name or str(path_or_bytes), read_bounded(path_or_bytes, "the file", source=name)


def _incidents_format(path_or_bytes: str | Path | bytes, fmt: str, name: str | None) -> str | None:
    """ "csv" or "json" when the input is an incidents export (by --format or by its first bytes), else None."""
    if fmt not in ("auto", "incidents"):
        return None
    if isinstance(path_or_bytes, bytes | bytearray):
        head = bytes(path_or_bytes[:65536])
    else:
        try:
            with open(path_or_bytes, "rb") as f:
                head = f.read(65536)
        except OSError:
            return None  # parse_trace reports the unreadable file
    text = head.decode("utf-8-sig", errors="replace").lstrip()
    if text[:1] in ("{", "["):
        return "json"  # no job trace format is JSON; the incidents export is
    if fmt == "incidents":
        return "csv"
    first = next((line for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
    # the export quotes its header (engine.report.export neutralises formulas in every text cell)
    fields = {f.strip().strip('"').lower() for f in first.split(",")}
    return "csv" if {"incident_id", "t_s", "cause"} <= fields else None


def replay(
    trace: Trace,
    settings: ReplaySettings | None = None,
    failures: Failures | None = None,
    name: str | None = None,
) -> Run:
    """The Run of `trace`: as recorded (start/end from the trace) or re-scheduled (submit times only)."""
    settings = settings or ReplaySettings()
    cluster_nodes = cluster_frame(trace, settings)
    hosts, gpus = layout(cluster_nodes, settings)
    if failures is None and settings.failures_file:
        failures = read_failures(settings.failures_file, cluster_nodes["hostname"])
    if failures is not None and len(failures.t) and settings.mode == "recorded":
        raise GoodputError(
            "replay.failures: host failures need --mode rescheduled (a recorded replay keeps the"
            " trace's own start and end times)"
        )
    cluster = Cluster(
        cluster_nodes["gpus"].to_numpy().astype(np.int64),
        hosts["rack_id"].to_numpy(),
        hosts["pod_id"].to_numpy(),
    )
    jobs = trace.jobs
    workload = Workload(
        submit=jobs["submit_s"].to_numpy(),
        work=jobs["duration_s"].fill_null(np.nan).to_numpy(),
        gpus=jobs["gpus"].to_numpy(),
        priority=jobs["priority"].to_numpy(),
        hosts=jobs["hosts"].fill_null(0).to_numpy(),
        share=jobs["gpu_share"].to_numpy(),
        restart=(jobs["on_failure"] == "restart").to_numpy(),
    )
    if settings.mode == "recorded":
        job_frame, attempts, waits = _recorded(trace, cluster, workload, settings, hosts)
        outages = pl.DataFrame(schema={"host": pl.Int64, "start_s": pl.Float64, "end_s": pl.Float64})
    else:
        job_frame, attempts, waits, outages = _rescheduled(trace, cluster, workload, settings, failures)
    horizon = float(
        max(
            attempts["end_s"].max() or 0.0,
            jobs["submit_s"].max() or 0.0,
            outages["end_s"].max() or 0.0 if outages.height else 0.0,
        )
    )
    states = host_states(attempts, outages, cluster.n_hosts, horizon)
    gpu_total = int(cluster.host_gpus.sum())
    summary = _summary(trace, job_frame, attempts, gpu_total, cluster.n_hosts, horizon, settings)
    started = trace.started_at or settings.scenario.simulation.start
    return Run(
        kind="replay",
        name=name or trace.name,
        started_at=started,
        duration_s=horizon,
        scenario=_scenario_record(trace, settings),
        seed=settings.scenario.simulation.seed,
        summary=summary,
        tables={
            "hosts": hosts,
            "gpus": gpus,
            "jobs": job_frame,
            "job_attempts": attempts,
            "job_waits": waits,
            "host_states": states,
        },
    )


def _scenario_record(trace: Trace, settings: ReplaySettings) -> dict:
    """The run's settings, nested like a scenario file: what was replayed, how, and the layout keys given."""
    policy = settings.policy
    flat = {
        **settings.raw,
        "replay.format": trace.fmt,
        "replay.file": trace.name,
        "replay.mode": settings.mode,
        "scheduler.placement": policy.placement,
        "scheduler.backfill": policy.backfill,
        "scheduler.preemption": policy.preemption,
        "scheduler.backfill_depth": policy.backfill_depth,
        "scheduler.checkpoint_interval": settings.raw.get("scheduler.checkpoint_interval", "30m"),
    }
    if settings.hosts is not None:
        flat["replay.hosts"] = settings.hosts
    if settings.gpus_per_host is not None:
        flat["replay.gpus_per_host"] = settings.gpus_per_host
    flat.update({k: settings.scenario.raw[k] for k in SCENARIO_KEYS if k in settings.passed})
    nested: dict = {}
    for key, value in flat.items():
        section, _, leaf = key.partition(".")
        nested.setdefault(section, {})[leaf] = value
    return nested


def _recorded(trace, cluster, workload, settings, hosts):
    jobs = trace.jobs
    horizon = float(pl.concat([jobs["submit_s"], jobs["start_s"], jobs["end_s"]]).max() or 0.0)
    start = jobs["start_s"].fill_null(np.nan).to_numpy()
    end = jobs["end_s"].fill_null(np.nan).to_numpy()
    index = dict(zip(hosts["hostname"].to_list(), range(hosts.height), strict=True))
    nodes = None
    if jobs["nodes"].null_count() < jobs.height:
        nodes = [[index[h] for h in row if h in index] if row else None for row in jobs["nodes"].to_list()]
    hosts_of = allocate_recorded(cluster, workload, start, end, settings.policy, nodes)
    ran = jobs.with_row_index("j").filter(pl.col("start_s").is_not_null())
    attempts = ran.select(
        job_id=pl.col("job_id"),
        attempt=pl.lit(1, dtype=pl.Int32),
        start_s=pl.col("start_s"),
        end_s=pl.col("end_s").fill_null(horizon),
        end_reason=pl.when(pl.col("end_s").is_null())
        .then(pl.lit("end_of_run"))
        .when(pl.col("state") == "running")
        .then(pl.lit("end_of_run"))
        .otherwise(pl.col("state")),
        lost_work_s=pl.lit(0.0),
        hosts=pl.Series([hosts_of[j] for j in ran["j"].to_list()], dtype=pl.List(pl.Int32)),
    )
    frame = _jobs_table(jobs, wait_reason=pl.lit(None, dtype=pl.String))
    waits = pl.DataFrame(
        schema={"job_id": pl.String, "start_s": pl.Float64, "end_s": pl.Float64, "reason": pl.String}
    )
    return frame, attempts, waits


def _jobs_table(jobs: pl.DataFrame, wait_reason: pl.Expr) -> pl.DataFrame:
    """The store's jobs columns of a trace's jobs (priorities clipped to the column's 32 bits)."""
    return jobs.select(
        "job_id",
        "name",
        "gpus",
        pl.col("priority").clip(-(2**31), 2**31 - 1).cast(pl.Int32),
        "submit_s",
        "start_s",
        "end_s",
        "state",
        "user",
        kind=pl.lit("trace"),
        wait_reason=wait_reason,
    )


def _rescheduled(trace, cluster, workload, settings, failures):
    jobs = trace.jobs
    result = schedule(cluster, workload, settings.policy, failures)
    ids = jobs["job_id"]
    attempts = result.attempts.with_columns(job_id=ids.gather(result.attempts["job"])).select(
        "job_id", "attempt", "start_s", "end_s", "end_reason", "lost_work_s", "hosts"
    )
    waits = result.waits.with_columns(job_id=ids.gather(result.waits["job"])).select(
        "job_id", "start_s", "end_s", "reason"
    )
    reasons = dominant_reason(result.waits)
    frame = (
        jobs.with_row_index("job")
        .with_columns(
            pl.col("job").cast(pl.Int64),
            start_s=pl.Series(result.first_start).fill_nan(None),
            end_s=pl.Series(result.last_end).fill_nan(None),
            state=pl.Series(result.state, dtype=pl.String),
        )
        .join(reasons, on="job", how="left", maintain_order="left")
    )
    frame = _jobs_table(frame, wait_reason=pl.col("wait_reason"))
    outages = result.outages
    return frame, attempts, waits, outages


def host_states(attempts: pl.DataFrame, outages: pl.DataFrame, n_hosts: int, horizon: float) -> pl.DataFrame:
    """Per host: `running` while any job holds it (overlapping attempts merged; job_id when it is one job),
    `down` during outages, `healthy` in between, from 0 to the horizon."""
    busy = (
        attempts.select("job_id", "start_s", "end_s", host=pl.col("hosts")).explode("host").drop_nulls("host")
    )
    busy = busy.filter(pl.col("end_s") > pl.col("start_s")).sort("host", "start_s")
    # merge overlapping intervals per host: a new block starts where start > the running max of earlier ends
    busy = busy.with_columns(prev=pl.col("end_s").cum_max().shift().over("host"))
    busy = busy.with_columns(
        block=((pl.col("prev").is_null()) | (pl.col("start_s") > pl.col("prev"))).cum_sum()
    )
    running = (
        busy.group_by("host", "block")
        .agg(
            pl.col("start_s").min(),
            pl.col("end_s").max(),
            pl.col("job_id").n_unique().alias("jobs"),
            pl.col("job_id").first(),
        )
        .select(
            host_id=pl.col("host").cast(pl.Int32),
            state=pl.lit("running"),
            start_s="start_s",
            end_s="end_s",
            job_id=pl.when(pl.col("jobs") == 1).then(pl.col("job_id")),
        )
    )
    down = outages.select(
        host_id=pl.col("host").cast(pl.Int32),
        state=pl.lit("down"),
        start_s="start_s",
        end_s="end_s",
        job_id=pl.lit(None, dtype=pl.String),
    )
    taken = pl.concat([running, down]).sort("host_id", "start_s")
    # healthy: the gaps between taken intervals, and whole hosts never taken
    edges = taken.with_columns(next_start=pl.col("start_s").shift(-1).over("host_id"))
    gaps = edges.filter(pl.col("next_start").fill_null(horizon) > pl.col("end_s")).select(
        "host_id",
        state=pl.lit("healthy"),
        start_s="end_s",
        end_s=pl.col("next_start").fill_null(horizon),
        job_id=pl.lit(None, dtype=pl.String),
    )
    first = taken.group_by("host_id").agg(pl.col("start_s").min().alias("first"))
    all_hosts = pl.DataFrame({"host_id": np.arange(n_hosts, dtype=np.int32)}).join(
        first, on="host_id", how="left"
    )
    leading = all_hosts.filter(pl.col("first").fill_null(horizon) > 0).select(
        "host_id",
        state=pl.lit("healthy"),
        start_s=pl.lit(0.0),
        end_s=pl.col("first").fill_null(horizon),
        job_id=pl.lit(None, dtype=pl.String),
    )
    out = pl.concat([taken, gaps, leading]).filter(pl.col("end_s") > pl.col("start_s"))
    return out.sort("host_id", "start_s")


def _summary(trace, jobs, attempts, gpu_total, n_hosts, horizon, settings) -> dict:
    waited = jobs.filter(pl.col("start_s").is_not_null()).select(w=pl.col("start_s") - pl.col("submit_s"))[
        "w"
    ]
    gpu_of = jobs.select("job_id", "gpus")
    busy = (
        attempts.join(gpu_of, on="job_id", how="left")
        .select(((pl.col("end_s") - pl.col("start_s")) * pl.col("gpus")).sum())
        .item()
        or 0.0
    )
    reasons = jobs["wait_reason"].drop_nulls().value_counts().rows()
    utilization = busy / (gpu_total * horizon) if gpu_total and horizon else 0.0
    return RunSummary(
        gpus=gpu_total,
        hosts=n_hosts,
        days=horizon / SECONDS_PER_DAY,
        # allocated GPU-time over the cluster's (definition utilisation_by_allocation), where every page reads it
        cluster=ClusterUse(utilization=utilization),
        details={
            "jobs": jobs.height,
            "format": trace.fmt,
            "mode": settings.mode,
            "policy": settings.policy.placement,
            "backfill": settings.policy.backfill,
            "preemption": settings.policy.preemption,
            "gpus_demanded": float(jobs["gpus"].sum()),
            "utilization": utilization,  # `goodput replay --json`'s key (DESIGN); pages read cluster.utilization
            "started": int(jobs["start_s"].is_not_null().sum()),
            "pending": int(jobs["start_s"].is_null().sum()),
            "wait_mean_s": float(waited.mean()) if len(waited) else 0.0,
            "wait_p95_s": float(waited.quantile(0.95, "linear")) if len(waited) else 0.0,
            "wait_reasons": dict(sorted(reasons)),
            "preempted": int((attempts["end_reason"] == "preempted").sum()),
            **cluster_notes(trace, settings, n_hosts, gpu_total),
        },
    ).to_json()


def cluster_notes(trace: Trace, settings: ReplaySettings, n_hosts: int, gpu_total: int) -> dict:
    """Where the cluster came from (`cluster_from`) and, where that is a guess the user can fix, a note saying
    what to add: an openb pod list without its node list is replayed on hosts inferred from its peak use."""
    if settings.hosts is not None:
        return {"cluster_from": "replay.hosts", "notes": []}
    if trace.cluster is not None:
        return {"cluster_from": "node list", "notes": []}
    if trace.jobs["nodes"].list.len().fill_null(0).gt(0).any():
        return {"cluster_from": "the nodes its jobs name", "notes": []}
    notes = []
    if trace.fmt == "openb":
        from engine.replay.openb import NODE_LIST

        notes.append(
            f"{trace.name} came without its node list ({NODE_LIST}): the cluster was inferred from the "
            f"pods' peak GPU use ({n_hosts:,} hosts, {gpu_total:,} GPUs). To replay on the recorded nodes,"
            " put the node list beside the pod list (goodput replay) or add it on the Data page."
        )
    return {"cluster_from": "inferred from peak use", "notes": notes}
