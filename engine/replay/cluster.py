"""The cluster a trace ran on (its node list, the nodes it names, or inferred from its peak use), laid out in
racks and pods for the store, and the optional list of host failures to replay on it."""

import math
from pathlib import Path

import numpy as np
import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.replay import columns as col
from engine.replay.delimited import column, require, split_table
from engine.replay.settings import ReplaySettings
from engine.replay.trace import Trace, check, read_text, split_lines
from engine.scheduling.scheduler import Failures


def cluster_frame(trace: Trace, settings: ReplaySettings) -> pl.DataFrame:
    """(hostname, gpus, model) of the trace's cluster: its node list, its recorded nodes, or inferred."""
    model = settings.scenario.cluster.gpu_model
    size = settings.gpus_per_host or settings.scenario.cluster.gpus_per_host
    if trace.cluster is not None and settings.hosts is None:
        check_cluster(
            trace.name,
            "its node list",
            trace.cluster.height,
            int(trace.cluster["gpus"].max() or 0),
            int(trace.cluster["gpus"].sum()),
        )
        return trace.cluster
    jobs = trace.jobs
    named = jobs.filter(pl.col("nodes").is_not_null() & (pl.col("nodes").list.len() > 0))
    if named.height and settings.hosts is None:
        per_node = named.select(pl.col("nodes"), per=(pl.col("gpus") / pl.col("nodes").list.len()).ceil())
        sizes = per_node.explode("nodes").group_by("nodes").agg(pl.col("per").max())
        # a node that ran GPU jobs has the largest per-node GPU count of the trace (one GPU partition of
        # like nodes, as Slurm clusters have them); a node that only ran CPU jobs has none
        gpus = settings.gpus_per_host or max(int(sizes["per"].max() or 0), 1)
        check_cluster(
            trace.name, "the nodes its jobs name", sizes.height, gpus, int((sizes["per"] > 0).sum()) * gpus
        )
        sizes = sizes.sort("nodes")
        return pl.DataFrame(
            {
                "hostname": sizes["nodes"],
                "gpus": (sizes["per"] > 0).cast(pl.Int32) * gpus,
                "model": [model] * sizes.height,
            },
            schema={"hostname": pl.String, "gpus": pl.Int32, "model": pl.String},
        )
    hosts = settings.hosts or _inferred_hosts(trace, size)
    how = "replay.hosts" if settings.hosts else "its peak use of GPUs (or replay.hosts)"
    check_cluster(trace.name, how, hosts, size, hosts * size)
    digits = max(len(str(hosts - 1)), 4)
    return pl.DataFrame(
        {
            "hostname": [f"node-{i:0{digits}d}" for i in range(hosts)],
            "gpus": [size] * hosts,
            "model": [model] * hosts,
        },
        schema={"hostname": pl.String, "gpus": pl.Int32, "model": pl.String},
    )


def check_cluster(source: str, how: str, hosts: int, per_host: int, gpus: int) -> None:
    """The cluster a trace implies (`how`: from what) within MAX_HOSTS, MAX_GPUS_PER_HOST and MAX_CLUSTER_GPUS,
    checked before its hosts and GPUs are made."""
    for value, limit, what in (
        (hosts, limits.MAX_HOSTS, "hosts"),
        (per_host, limits.MAX_GPUS_PER_HOST, "GPUs on one host"),
        (gpus, limits.MAX_CLUSTER_GPUS, "GPUs"),
    ):
        if value > limit:
            raise GoodputError(
                f"{source}: the cluster from {how} has {value:,} {what}, over Goodput's limit of "
                f"{limit:,} (engine/limits.py)"
            )


def _inferred_hosts(trace: Trace, size: int) -> int:
    """Enough hosts for the trace's peak concurrent GPUs (recorded times, else submit + duration) and for
    its largest job; SWF's MaxProcs header when it says more."""
    jobs = trace.jobs.filter(pl.col("gpus") > 0)
    if not jobs.height:
        return 1
    recorded = jobs.filter(pl.col("start_s").is_not_null())
    if recorded.height:
        span = recorded.select(
            a=pl.col("start_s"), b=pl.col("end_s").fill_null(pl.col("start_s").max() + 1), g=pl.col("gpus")
        )
    else:
        span = jobs.filter(pl.col("duration_s").is_not_null()).select(
            a=pl.col("submit_s"), b=pl.col("submit_s") + pl.col("duration_s"), g=pl.col("gpus")
        )
    deltas = pl.concat(
        [span.select(t=pl.col("a"), d=pl.col("g")), span.select(t=pl.col("b"), d=-pl.col("g"))]
    )
    peak = float(deltas.sort("t", "d").select(pl.col("d").cum_sum().max()).item() or 0.0)
    hosts = max(math.ceil(peak / size - 1e-9), math.ceil(float(jobs["gpus"].max()) / size - 1e-9), 1)
    header = trace.notes.get("header", {})
    procs = header.get("MaxProcs") or header.get("MaxNodes")
    if procs and procs.strip().isdigit():  # engine.replay.swf bounded it
        hosts = max(hosts, math.ceil(int(procs) / size))
    return hosts


def layout(cluster: pl.DataFrame, settings: ReplaySettings) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The store's hosts and gpus frames: hosts in order, racks of cluster.hosts_per_rack, pods of
    cluster.racks_per_pod, rows of cluster.racks_per_row; GPU UUIDs drawn from simulation.seed."""
    sc = settings.scenario
    per_rack, per_pod, per_row = (
        sc.cluster.hosts_per_rack,
        sc.cluster.racks_per_pod,
        sc.cluster.racks_per_row,
    )
    n = cluster.height
    host = np.arange(n, dtype=np.int32)
    rack = host // per_rack
    hosts = pl.DataFrame(
        {
            "host_id": host,
            "hostname": cluster["hostname"],
            "rack_id": rack.astype(np.int32),
            "pod_id": (rack // per_pod).astype(np.int32),
            "row": (rack // per_row).astype(np.int32),
            "position": (rack % per_row).astype(np.int32),
            "slot": (host % per_rack).astype(np.int32),
        }
    )
    counts = cluster["gpus"].to_numpy().astype(np.int64)
    total = int(counts.sum())
    rng = np.random.default_rng(sc.simulation.seed)
    hexes = np.frombuffer(rng.bytes(16 * total).hex().encode(), dtype="S32").astype(str) if total else []
    owner = np.repeat(host, counts)
    index = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    gpus = pl.DataFrame(
        {
            "gpu_id": np.arange(total, dtype=np.int32),
            "host_id": owner.astype(np.int32),
            "index": index.astype(np.int16),
            "hex": pl.Series(hexes, dtype=pl.String),
            "model": np.repeat(cluster["model"].to_numpy(), counts).astype(str),
        }
    )
    gpus = gpus.with_columns(
        uuid=pl.format(
            "GPU-{}-{}-{}-{}-{}",
            *(pl.col("hex").str.slice(a, b - a) for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32))),
        )
    )
    return hosts, gpus.select("gpu_id", "host_id", "index", "uuid", "model")


def read_failures(path: str, hostnames: pl.Series) -> Failures:
    """t,host,down_for[,cause]: t and down_for seconds or durations, host an id or a hostname."""
    source, text = read_text(Path(path))
    lines = split_lines(source, text, comment="#")
    parts, names = split_table(lines, ",", "failure list")
    require(lines, parts, names, ["t", "host", "down_for"], "failure list")
    t = col.durations(column(parts, names, "t"))
    check(lines, t.is_null(), "t must be seconds or a duration", 1)
    down = col.durations(column(parts, names, "down_for"))
    check(lines, down.is_null(), "down_for must be seconds or a duration", 1)
    host_text = column(parts, names, "host")
    by_name = pl.DataFrame({"host": host_text}).join(
        pl.DataFrame({"host": hostnames, "id": np.arange(len(hostnames))}),
        on="host",
        how="left",
        maintain_order="left",
    )["id"]
    host = by_name.fill_null(col.integers(host_text))
    check(
        lines, host.is_null() | (host < 0) | (host >= len(hostnames)), "host is not a host of the cluster", 1
    )
    cause = column(parts, names, "cause")
    causes = (
        cause.set(cause == "", "host_failure").to_list() if cause is not None else ["host_failure"] * len(t)
    )
    return Failures(t.to_numpy(), host.to_numpy().astype(np.int64), down.to_numpy(), causes)
