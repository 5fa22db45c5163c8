"""Alibaba's openb GPU pod lists (cluster-trace-gpu-v2023; Weng et al., "Beware of Fragmentation", ATC 2023).

    name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,
    scheduled_time  (one header line)

One pod a line; times are seconds from the trace's start, scheduled_time empty for a pod never scheduled.
A pod holds num_gpu GPUs, each to gpu_milli thousandths (1000 = a whole GPU; < 1000 = a shared GPU), so
its GPU demand is num_gpu x gpu_milli / 1000; pods are single-node. The node list (openb_node_list_gpu_node.csv:
sn,cpu_milli,memory_mib,gpu,model) is the cluster when given: as bytes (`node_list`, the Data page's upload) or
beside the pod list (`goodput replay`); without it the cluster is inferred and the run's summary says so
(engine.replay.run).

QoS to priority (larger runs first): Guaranteed 3, LS (latency-sensitive) 2, Burstable 1, BE (best effort)
0: Kubernetes' QoS order, with Alibaba's LS above its BE. A pod never scheduled is re-scheduled with its
lifetime (deletion - creation) as its work; a scheduled one with deletion - scheduled.
"""

from pathlib import Path

import polars as pl

from engine import limits
from engine.replay import bounds
from engine.replay import columns as col
from engine.replay.delimited import column, read_table, require, split_table
from engine.replay.trace import Trace, check, finish, read_text, split_lines

NODE_LIST = "openb_node_list_gpu_node.csv"
REQUIRED = [
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
]
QOS_PRIORITY = {"Guaranteed": 3, "LS": 2, "Burstable": 1, "BE": 0}
PHASE_STATE = {"Succeeded": "completed", "Failed": "failed", "Running": "running", "Pending": "pending"}


def parse(
    source: str, text: str, beside: Path | None = None, node_list: tuple[str, bytes] | None = None
) -> Trace:
    """The pods of `text`; the cluster from `node_list` (name, bytes), else from NODE_LIST in folder `beside`."""
    parts, names, lines = read_table(source, text, ",", "openb pod list")
    require(lines, parts, names, REQUIRED, "openb pod list")

    def number(name: str, optional: bool = False) -> pl.Series:
        raw = column(parts, names, name)
        value = col.integers(raw)
        bad = value.is_null() | (value < 0)
        check(lines, bad & (raw != "") if optional else bad, f"{name} must be an integer >= 0", 1)
        return value.cast(pl.Float64)

    pod = column(parts, names, "name")
    check(lines, pod == "", "name is empty", 1)
    check(lines, pod.is_duplicated(), "name appears more than once", 1)
    num_gpu, milli = number("num_gpu"), number("gpu_milli")
    bounds.check_column(lines, num_gpu, limits.MAX_CLUSTER_GPUS, "num_gpu", "GPUs for one pod", offset=1)
    check(lines, milli > 1000, "gpu_milli must be at most 1000 (one whole GPU)", 1)
    created, deleted = number("creation_time"), number("deletion_time")
    scheduled = number("scheduled_time", optional=True)
    check(lines, deleted < created, "deletion_time is before creation_time", 1)
    check(lines, scheduled < created, "scheduled_time is before creation_time", 1)
    check(lines, scheduled > deleted, "scheduled_time is after deletion_time", 1)
    qos = column(parts, names, "qos")
    check(lines, ~qos.is_in(list(QOS_PRIORITY)), f"qos must be one of {', '.join(QOS_PRIORITY)}", 1)
    phase = column(parts, names, "pod_phase")
    check(lines, ~phase.is_in(list(PHASE_STATE)), f"pod_phase must be one of {', '.join(PHASE_STATE)}", 1)
    frame = pl.DataFrame(
        {
            "job_id": pod,
            "gpus": num_gpu * milli / 1000.0,
            "gpu_share": milli.set(num_gpu == 0, 1000.0).set(milli == 0, 1000.0).cast(pl.Int32),
            "hosts": pl.Series([1] * len(pod), dtype=pl.Int32),
            "priority": qos.replace_strict(QOS_PRIORITY, return_dtype=pl.Int64),
            "submit_s": created,
            "start_s": scheduled,
            "end_s": deleted.set(scheduled.is_null(), None),
            "duration_s": (deleted - scheduled).fill_null(deleted - created),
            "state": phase.replace_strict(PHASE_STATE, return_dtype=pl.String),
            "cpu": number("cpu_milli") / 1000.0,
            "memory_mb": number("memory_mib"),
        }
    )
    bounds.check_jobs(
        lines,
        frame,
        offset=1,
        names={
            "submit_s": "creation_time",
            "start_s": "scheduled_time",
            "end_s": "deletion_time",
            "duration_s": "deletion_time",
        },
    )
    if node_list is not None:
        given, cluster = node_list[0], read_node_list(node_list[1], name=node_list[0])
    elif beside is not None and (beside / NODE_LIST).is_file():
        given, cluster = str(beside / NODE_LIST), read_node_list(beside / NODE_LIST)
    else:
        given, cluster = None, None
    return Trace(finish(frame), "openb", source, cluster=cluster, notes={"node_list": given})


def read_node_list(path: Path | bytes, name: str | None = None) -> pl.DataFrame:
    """The openb node list (a path, or an upload's bytes named by `name`) as the cluster frame (hostname, gpus,
    model)."""
    source, text = read_text(path, name)  # bounded like the trace itself (engine.replay.bounds)
    lines = split_lines(source, text)
    parts, names = split_table(lines, ",", "openb node list")
    require(lines, parts, names, ["sn", "gpu", "model"], "openb node list")
    gpus = col.integers(column(parts, names, "gpu"))
    check(lines, gpus.is_null() | (gpus < 0) | (gpus > 64), "gpu must be an integer from 0 to 64", 1)
    sn = column(parts, names, "sn")
    check(lines, sn == "", "sn (the node name) is empty", 1)
    check(lines, sn.is_duplicated(), "sn appears more than once", 1)
    return pl.DataFrame({"hostname": sn, "gpus": gpus.cast(pl.Int32), "model": column(parts, names, "model")})
