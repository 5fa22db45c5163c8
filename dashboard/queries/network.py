"""Network page queries: links by tier, link utilisation by tier over time, network incidents and the jobs hit."""

import polars as pl

from dashboard import state

NETWORK_CAUSE = "network_switch_cable"  # engine.reference: the Llama 3 table's "Network switch/cable"


def tiers(run_id: str) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT tier, count(*) AS links, sum(capacity_gbps) AS capacity_gbps,
               min(capacity_gbps) AS min_link_gbps, max(capacity_gbps) AS max_link_gbps
        FROM links GROUP BY tier ORDER BY tier""")


def sample_count(run_id: str) -> int:
    return int(state.query(run_id, "SELECT count(*) AS n FROM link_samples")["n"][0])


def utilisation_by_tier(run_id: str, points: int) -> pl.DataFrame:
    """Mean and hottest link utilisation per tier in about `points` buckets of the sampled span (at least 1 s
    each; `bucket_s` says how wide), aggregated in SQL."""
    return state.query(run_id, """
        WITH span AS (SELECT greatest((max(t_s) - min(t_s)) / ?, 1.0) AS bucket_s FROM link_samples)
        SELECT floor(s.t_s / span.bucket_s) * span.bucket_s AS t_s, l.tier, avg(s.util_pct) AS mean_util,
               max(s.util_pct) AS max_util, any_value(span.bucket_s) AS bucket_s
        FROM link_samples s JOIN links l USING (link_id), span
        GROUP BY 1, 2 ORDER BY 1, 2""", (points,))


def hottest_links(run_id: str, limit: int = 20) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT s.link_id, l.tier, l.a, l.b, l.capacity_gbps, avg(s.util_pct) AS mean_util,
               max(s.util_pct) AS max_util, sum(s.errors) AS errors
        FROM link_samples s JOIN links l USING (link_id)
        GROUP BY ALL ORDER BY mean_util DESC, s.link_id LIMIT ?""", (limit,))


def network_incidents(run_id: str) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT i.incident_id, i.t_s, i.repaired_s - i.t_s AS out_s, i.link_id, l.tier, l.a, l.b,
               h.hostname, i.jobs_hit, i.gpu_hours_lost, i.job_ids
        FROM incidents i LEFT JOIN links l USING (link_id) LEFT JOIN hosts h USING (host_id)
        WHERE i.cause = ? ORDER BY i.t_s""", (NETWORK_CAUSE,))


def jobs_hit(run_id: str) -> pl.DataFrame:
    """Each job hit by a network incident: how often, and the GPU-hours those incidents cost in all."""
    return state.query(run_id, """
        WITH hits AS (
            SELECT unnest(job_ids) AS job_id, incident_id, gpu_hours_lost FROM incidents WHERE cause = ?
        )
        SELECT hits.job_id, j.name, j.kind, j.gpus, count(*) AS network_incidents,
               sum(hits.gpu_hours_lost) AS incident_gpu_hours_lost
        FROM hits LEFT JOIN jobs j USING (job_id)
        GROUP BY ALL ORDER BY network_incidents DESC, hits.job_id""", (NETWORK_CAUSE,))
