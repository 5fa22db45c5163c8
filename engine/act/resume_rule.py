"""The resume rule (records.Rule.REPAIRED): a host drained or down (Slurm's DRAINED is `down`, DRAINING
`draining`) that is back from repair and clean, which the lemon rule does not flag. Two signs say "back from
repair":

    repaired incident   its incidents are all repaired by now_s (incidents.repaired_s, which simulate and replay
                        write), it has been out of service since before that repair, and since the repair it had
                        no fatal XID and no new double-bit ECC error
    clean window        observed runs only (kind "ingest": `goodput watch`, `goodput ingest`, which never know a
                        repair's time): what an operator reads as "back from repair, health checks clean";
                        engine.act.clean_window

A host gets at most one resume (the repaired incident's first). Acting risks the host failing again before the
next maintenance window; not acting keeps its GPUs idle (engine.act.pricing.resume_price).
"""

import polars as pl

from engine.act.clean_window import clean_window
from engine.act.context import Context, query
from engine.act.drain_rules import FATAL_XIDS
from engine.act.records import Evidence, Recommendation
from engine.act.words import incident_words
from engine.analysis.lemons import lemon_rule, lemons_at
from engine.store.schema import IN_SERVICE_STATES

RESUMABLE_STATES = ["down", "draining"]  # drained or down: what `scontrol update State=RESUME` brings back

REPAIRED_HOSTS = """
WITH per_host AS (
    SELECT host_id, count(*) AS incidents,
           count(*) FILTER (WHERE repaired_s IS NULL OR repaired_s > $now) AS still_open,
           max(repaired_s) AS repaired_s, arg_max(incident_id, repaired_s) AS incident_id,
           arg_max(cause, repaired_s) AS cause, arg_max(xid, repaired_s) AS xid, arg_max(gpu_id, repaired_s) AS gpu_id
    FROM incidents WHERE host_id IS NOT NULL AND t_s <= $now GROUP BY host_id
), last_served AS (  -- the end of each host's last stretch in service before $now
    SELECT host_id, max(end_s) AS out_since_s FROM host_states
    WHERE list_contains($serving, state) AND end_s <= $now GROUP BY host_id
)
SELECT p.host_id, p.incident_id, p.cause, p.xid, g."index" AS gpu_index, p.repaired_s, l.out_since_s
FROM per_host p LEFT JOIN last_served l USING (host_id) LEFT JOIN gpus g ON g.gpu_id = p.gpu_id
WHERE p.still_open = 0 AND list_contains($hosts, p.host_id)
  AND coalesce(l.out_since_s, 0.0) <= p.repaired_s
ORDER BY p.host_id
"""
# Fatal XIDs logged on each candidate host since its repair.
XIDS_SINCE = """
WITH c AS (SELECT unnest($hosts) AS host_id, unnest($since) AS since_s)
SELECT DISTINCT x.host_id FROM xid_events x JOIN c USING (host_id)
WHERE list_contains($fatal, x.xid) AND x.t_s > c.since_s AND x.t_s <= $now
"""
# Double-bit ECC counts of the candidate hosts' GPUs: the last before the repair, the first and the largest
# after it, up to $now. Aggregated in DuckDB, reading only these GPUs' samples.
DBE_SINCE = """
WITH c AS (SELECT unnest($hosts) AS host_id, unnest($since) AS since_s),
cg AS (SELECT g.gpu_id, g.host_id, c.since_s FROM gpus g JOIN c USING (host_id))
SELECT cg.host_id, s.gpu_id, count(*) AS samples,
       arg_max(s.ecc_dbe, s.t_s) FILTER (WHERE s.t_s <= cg.since_s) AS before,
       arg_min(s.ecc_dbe, s.t_s) FILTER (WHERE s.t_s > cg.since_s) AS first_after,
       max(s.ecc_dbe) FILTER (WHERE s.t_s > cg.since_s) AS most_after
FROM gpu_samples s JOIN cg USING (gpu_id)
WHERE list_contains($gpus, s.gpu_id) AND s.t_s <= $now AND s.ecc_dbe IS NOT NULL
GROUP BY ALL
"""


def repaired(ctx: Context) -> list[Recommendation]:
    """RESUME a drained or down host back from repair with nothing wrong seen since, unless it is a lemon."""
    down = ctx.hosts.filter(pl.col("state").is_in(RESUMABLE_STATES))["host_id"].to_list()
    if not down:
        return []
    failures, window_s = lemon_rule(ctx.info.scenario)
    lemons = set(lemons_at(ctx.con, failures, window_s, ctx.now_s)["host_id"].to_list())
    candidates = [h for h in down if h not in lemons]
    found = repaired_incident(ctx, candidates)
    if ctx.observed:
        resumed = {node for rec in found for node in rec.nodes}
        left = ctx.hosts.filter(
            pl.col("host_id").is_in(candidates) & ~pl.col("hostname").is_in(list(resumed))
        )
        found += clean_window(ctx, left["host_id"].to_list())
    return found


def repaired_incident(ctx: Context, candidates: list[int]) -> list[Recommendation]:
    """Of `candidates`, the hosts whose incidents are all repaired, out of service since before the repair and
    clean since it."""
    if not candidates:
        return []
    rows = query(ctx.con, REPAIRED_HOSTS, now=ctx.now_s, serving=list(IN_SERVICE_STATES), hosts=candidates)
    if rows.is_empty():
        return []
    hosts, since = rows["host_id"].to_list(), rows["repaired_s"].to_list()
    xids = set(
        query(ctx.con, XIDS_SINCE, hosts=hosts, since=since, fatal=FATAL_XIDS, now=ctx.now_s)["host_id"]
    )
    gpu_ids = query(ctx.con, "SELECT gpu_id FROM gpus WHERE list_contains($hosts, host_id)", hosts=hosts)
    dbe = query(ctx.con, DBE_SINCE, hosts=hosts, since=since, gpus=gpu_ids["gpu_id"].to_list(), now=ctx.now_s)
    new_dbe = dbe.filter(pl.col("most_after") > pl.coalesce("before", "first_after"))
    bad = xids | set(new_dbe["host_id"].to_list())
    samples = dict(dbe.group_by("host_id").agg(pl.col("samples").sum()).iter_rows())
    found = []
    for host, row in ctx.hosts_of(rows.filter(~pl.col("host_id").is_in(list(bad)))):
        r = row.row(0, named=True)
        checked = samples.get(r["host_id"], 0)
        evidence = [
            Evidence(
                "incident",
                f"{incident_words(r)}, repaired at {ctx.when(r['repaired_s'])}; since then no"
                " incident, no fatal XID and no new double-bit ECC error"
                + (f" ({checked:,} GPU samples read)" if checked else " (no GPU samples to read)"),
                r["repaired_s"],
                ctx.incident_link(r["incident_id"]),
            ),
            Evidence(
                "host_state", f"{host['hostname']} is {host['state']} at {ctx.when(ctx.now_s)}", ctx.now_s
            ),
        ]
        found.append(
            ctx.resume(
                host,
                f"incident {r['incident_id']} repaired {r['repaired_s']!r}",
                f"repaired at {ctx.when(r['repaired_s'])} (incident {r['incident_id']}), clean since",
                evidence,
                {"repaired_s": r["repaired_s"], "gpu_samples_read": checked},
            )
        )
    return found
