"""Each host's state over a watch cycle: Slurm's word for its nodes, running where an attempt holds it, and for
hosts Slurm does not know, healthy until their first fatal XID (engine.ingest.observed's rule)."""

from collections.abc import Mapping
from datetime import datetime

import polars as pl

from engine.ingest.watch.goodput import RUNNING
from engine.ingest.watch.tables import TYPES, empty
from engine.store.schema import HOST_STATES, OUT_OF_SERVICE_STATES


def host_states(
    nodes: pl.DataFrame | None,
    now_s: float,
    *,
    start_s: float,
    origin: float,
    hosts: pl.DataFrame,
    attempts: pl.DataFrame,
    node_states: Mapping[str, str],
    down_since: Mapping[int, float],
) -> tuple[pl.DataFrame, dict[str, str]]:
    """Each host's state over [start_s, now_s): Slurm's word for its nodes (out of service from its reason
    time when that falls in the interval), running where an attempt holds it; hosts Slurm does not know are
    healthy until their first fatal XID, then down (engine.ingest.observed's rule).

    Returns the rows and what Slurm said last per node (`node_states` with this cycle's words); neither
    argument is changed."""
    start = start_s
    node_states = dict(node_states)
    if now_s <= start:
        return empty("host_states"), node_states
    said = {}
    if nodes is not None:
        for node, state, reason_t in nodes.select("node", "state", "reason_time").iter_rows():
            said[node] = (
                _goodput_state(state),
                None if reason_t is None else _epoch_s(reason_t) - origin,
            )
    holder = holders(attempts)
    rows: list[tuple] = []
    for host_id, hostname in hosts.iter_rows():
        if hostname in said:
            state, changed_s = said[hostname]
            node_states[hostname] = state
        elif hostname in node_states:  # Slurm unread this cycle: its last word stands
            state, changed_s = node_states[hostname], None
        else:
            changed_s = down_since.get(host_id)
            state = "healthy" if changed_s is None else "down"
        since = start
        if state in OUT_OF_SERVICE_STATES and changed_s is not None and start < changed_s < now_s:
            rows.append((host_id, "healthy", start, changed_s, None))
            since = changed_s
        job = holder.get(host_id) if state in ("healthy", "running") else None
        rows.append((host_id, "running" if job else state, since, now_s, job))
    frame = pl.DataFrame(rows, schema=TYPES["host_states"], orient="row").sort("host_id", "start_s")
    return frame, node_states


def holders(attempts: pl.DataFrame) -> dict[int, str]:
    """The job running on each host now (an attempt still open)."""
    running = attempts.filter(pl.col("end_reason") == RUNNING).select(
        "job_id", pl.col("hosts").alias("host_id")
    )
    pairs = running.explode("host_id").drop_nulls().unique("host_id", keep="last")
    return dict(zip(pairs["host_id"].to_list(), pairs["job_id"].to_list(), strict=True))


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
