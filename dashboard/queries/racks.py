"""Racks page queries: every host's state at time t, a rack's hosts, their state history and incidents."""

import polars as pl

from dashboard import state

HOSTS_AT = """
SELECT h.host_id, h.hostname, h.rack_id, h.pod_id, h."row", h.position, coalesce(h.slot, 0) AS slot,
       s.state, s.job_id
FROM hosts h
LEFT JOIN (
    SELECT host_id, arg_max(state, start_s) AS state, arg_max(job_id, start_s) AS job_id
    FROM host_states WHERE start_s <= ? AND end_s > ? GROUP BY host_id
) s USING (host_id)
ORDER BY h.host_id
"""


def hosts_at(run_id: str, t_s: float) -> pl.DataFrame:
    """One row per host with its state (None where no interval covers t) and job at `t_s`."""
    return state.query(run_id, HOSTS_AT, (t_s, t_s))


# A GPU takes its host's state, except `failed` from its own incident until that incident's repair.
GPUS_AT = """
WITH host_state AS (
    SELECT host_id, arg_max(state, start_s) AS state, arg_max(job_id, start_s) AS job_id
    FROM host_states WHERE start_s <= ? AND end_s > ? GROUP BY host_id
), failed AS (
    SELECT DISTINCT gpu_id FROM incidents
    WHERE gpu_id IS NOT NULL AND t_s <= ? AND coalesce(repaired_s, 'infinity'::DOUBLE) > ?
)
SELECT h.host_id, h.hostname, h.rack_id, h.pod_id, h."row", h.position, coalesce(h.slot, 0) AS slot,
       g.gpu_id, g."index" AS gpu_index,
       CASE WHEN f.gpu_id IS NOT NULL THEN 'failed' ELSE s.state END AS state, s.job_id
FROM gpus g JOIN hosts h USING (host_id) LEFT JOIN host_state s USING (host_id) LEFT JOIN failed f USING (gpu_id)
ORDER BY g.gpu_id
"""


def gpus_at(run_id: str, t_s: float) -> pl.DataFrame:
    """One row per GPU with its place (its host's), its state and its host's job at `t_s`."""
    return state.query(run_id, GPUS_AT, (t_s, t_s, t_s, t_s))


def gpu_count(run_id: str) -> int:
    return int(state.query(run_id, "SELECT count(*) AS n FROM gpus")["n"][0])


def racks(run_id: str) -> pl.DataFrame:
    return state.query(run_id, 'SELECT rack_id, min(pod_id) AS pod_id, min("row") AS "row", min(position) AS position,'
                               " count(*) AS hosts FROM hosts GROUP BY rack_id ORDER BY rack_id")


def rack_history(run_id: str, rack_id: int) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT h.hostname, s.state, s.start_s, s.end_s, s.job_id
        FROM host_states s JOIN hosts h USING (host_id)
        WHERE h.rack_id = ? ORDER BY h.hostname, s.start_s""", (rack_id,))


def rack_incidents(run_id: str, rack_id: int) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT i.incident_id, i.t_s, h.hostname, i.gpu_id, i.cause, i.category, i.planned, i.xid, i.jobs_hit,
               i.gpu_hours_lost, i.repaired_s - i.t_s AS out_of_service_s
        FROM incidents i JOIN hosts h USING (host_id)
        WHERE h.rack_id = ? ORDER BY i.t_s""", (rack_id,))


def parse_t(value: str | None, duration_s: float) -> float:
    """?t= (seconds since the run's start) clamped to the run; missing or malformed: the run's end."""
    try:
        t_s = float(value) if value is not None else duration_s
    except ValueError:
        t_s = duration_s
    return min(max(t_s, 0.0), duration_s) if t_s == t_s else duration_s  # t_s != t_s: NaN


def state_time(t_s: float, duration_s: float) -> float:
    """The moment whose states to show: intervals are half-open [start, end) and the last ends at the run's end,
    so the run's end itself shows the states of its last second."""
    return min(t_s, max(duration_s - 1.0, 0.0))
