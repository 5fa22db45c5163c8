"""GPUs page queries: GPU health at time t, incidents per GPU and host, repeat offenders, XIDs, one GPU's telemetry."""

import polars as pl

from dashboard import state

# A GPU is `failed` from its incident until the incident's repair; otherwise it takes its host's state.
HEALTH_AT = """
WITH host_state AS (
    SELECT host_id, arg_max(state, start_s) AS state FROM host_states
    WHERE start_s <= ? AND end_s > ? GROUP BY host_id
), failed AS (
    SELECT DISTINCT gpu_id FROM incidents
    WHERE gpu_id IS NOT NULL AND t_s <= ? AND coalesce(repaired_s, 'infinity'::DOUBLE) > ?
)
SELECT CASE WHEN f.gpu_id IS NOT NULL THEN 'failed' ELSE coalesce(h.state, 'unknown') END AS state,
       count(*) AS gpus
FROM gpus g LEFT JOIN host_state h USING (host_id) LEFT JOIN failed f USING (gpu_id)
GROUP BY 1 ORDER BY gpus DESC, state
"""


def health_at(run_id: str, t_s: float) -> pl.DataFrame:
    return state.query(run_id, HEALTH_AT, (t_s, t_s, t_s, t_s))


def offenders(run_id: str, by: str, minimum: int = 1, limit: int = 50) -> pl.DataFrame:
    """Hosts (`by="host"`) or GPUs (`by="gpu"`) with at least `minimum` unplanned incidents, most first."""
    if by == "host":
        sql = """
            SELECT i.host_id, h.hostname, h.rack_id, count(*) AS incidents,
                   string_agg(DISTINCT i.cause, ', ' ORDER BY i.cause) AS causes,
                   min(i.t_s) AS first_s, max(i.t_s) AS last_s, sum(i.gpu_hours_lost) AS gpu_hours_lost
            FROM incidents i JOIN hosts h USING (host_id)
            WHERE NOT coalesce(i.planned, false)
            GROUP BY ALL HAVING count(*) >= ? ORDER BY incidents DESC, gpu_hours_lost DESC NULLS LAST, host_id
            LIMIT ?"""
    elif by == "gpu":
        sql = """
            SELECT i.gpu_id, h.hostname, g."index" AS gpu_index, count(*) AS incidents,
                   string_agg(DISTINCT i.cause, ', ' ORDER BY i.cause) AS causes,
                   min(i.t_s) AS first_s, max(i.t_s) AS last_s, sum(i.gpu_hours_lost) AS gpu_hours_lost
            FROM incidents i JOIN gpus g USING (gpu_id) JOIN hosts h ON h.host_id = g.host_id
            WHERE NOT coalesce(i.planned, false)
            GROUP BY ALL HAVING count(*) >= ? ORDER BY incidents DESC, gpu_hours_lost DESC NULLS LAST, gpu_id
            LIMIT ?"""
    else:
        raise ValueError(f"offenders by 'host' or 'gpu', not {by!r}")
    return state.query(run_id, sql, (minimum, limit))


def offender_incidents(run_id: str, minimum: int = 2, hosts: int = 25) -> pl.DataFrame:
    """Every unplanned incident of the (at most `hosts`) hosts with at least `minimum` of them, the worst first
    (label = hostname)."""
    return state.query(run_id, """
        WITH unplanned AS (SELECT * FROM incidents WHERE NOT coalesce(planned, false) AND host_id IS NOT NULL),
        lemons AS (SELECT host_id, count(*) AS n FROM unplanned GROUP BY host_id HAVING count(*) >= ?
                   ORDER BY n DESC, host_id LIMIT ?)
        SELECT h.hostname AS label, u.t_s, u.cause, u.gpu_id, u.xid
        FROM unplanned u JOIN lemons USING (host_id) JOIN hosts h USING (host_id)
        ORDER BY lemons.n DESC, u.host_id, u.t_s""", (minimum, hosts))


def xid_counts(run_id: str) -> pl.DataFrame:
    return state.query(run_id, "SELECT xid, count(*) AS events, count(DISTINCT gpu_id) AS gpus FROM xid_events"
                               " GROUP BY xid ORDER BY events DESC, xid")


def gpu_ids(run_id: str) -> pl.DataFrame:
    return state.query(run_id, "SELECT min(gpu_id) AS first, max(gpu_id) AS last, count(*) AS gpus FROM gpus")


def gpu_info(run_id: str, gpu_id: int) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT g.gpu_id, g.uuid, g.model, g."index" AS gpu_index, h.hostname, h.rack_id, h.host_id
        FROM gpus g LEFT JOIN hosts h USING (host_id) WHERE g.gpu_id = ?""", (gpu_id,))


def gpu_events(run_id: str, gpu_id: int) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT t_s, 'incident' AS kind, cause AS what, xid, incident_id, gpu_hours_lost FROM incidents WHERE gpu_id = ?
        UNION ALL
        SELECT t_s, 'xid' AS kind, message AS what, xid, incident_id, NULL FROM xid_events WHERE gpu_id = ?
        ORDER BY t_s""", (gpu_id, gpu_id))


def gpu_telemetry(run_id: str, gpu_id: int, points: int) -> pl.DataFrame:
    """One GPU's samples averaged in SQL into about `points` buckets of its sampled span (at least 1 s each),
    so a plot stays light whatever the run's length; `bucket_s` says how wide they came out."""
    return state.query(run_id, """
        WITH span AS (
            SELECT greatest((max(t_s) - min(t_s)) / ?, 1.0) AS bucket_s FROM gpu_samples WHERE gpu_id = ?
        )
        SELECT floor(t_s / bucket_s) * bucket_s AS t_s, avg(temp_c) AS temp_c, avg(power_w) AS power_w,
               avg(util_pct) AS util_pct, max(ecc_sbe) AS ecc_sbe, max(ecc_dbe) AS ecc_dbe, count(*) AS samples,
               any_value(bucket_s) AS bucket_s
        FROM gpu_samples, span WHERE gpu_id = ? GROUP BY 1 ORDER BY 1""", (points, gpu_id, gpu_id))
