"""The resume rule's sign for an observed run (kind "ingest"): a host back from repair with clean health checks,
read from telemetry since such a run never knows when a repair ended (incidents.repaired_s stays null).

A host drained or down at now_s is clean when, in the clean window (now_s - CLEAN_WINDOW_S, now_s]:

    - it has been out of service the whole window: its last stretch in service (healthy, running, spare) ended at
      or before the window's start (a host never seen in service counts as out since its first known state);
    - every one of its GPUs (at least one) reported telemetry: a gpu_samples row each;
    - no fatal XID (engine.reference.XIDS) was logged on it (xid_events, on the host or one of its GPUs);
    - no GPU's double-bit ECC count rose above its previous sample (the volatile DCGM counter resets when the
      driver reloads in repair, so a fall is a reset and each rise is measured from the sample before it, looking
      back at most one more window for the first);
    - no incident of the run started on it.

Every count is aggregated in DuckDB, over the candidate hosts' GPUs and two windows of samples at most.
"""

from engine.act.context import Context
from engine.act.drain_rules import FATAL_XIDS
from engine.act.records import Evidence, Recommendation
from engine.act.words import n
from engine.store.schema import IN_SERVICE_STATES

# How long a host must have been out of service, reporting clean, before its return is recommended: long enough
# for a DCGM diagnostic at level 3 (dcgmi diag -r 3, ~15 min: engine.scenario.keys repair.diagnose) and a
# burn-in (dcgmi diag -r 4 + stress: repair.burn_in, 2 h by default) with room to spare for the hours of
# telemetry after them that show the fix held; a host back sooner is left to the operator who drained it.
CLEAN_WINDOW_S = 6 * 3600.0

CLEAN_HOSTS = """
WITH c AS (SELECT unnest($hosts) AS host_id),
cg AS (SELECT g.gpu_id, g.host_id FROM gpus g JOIN c USING (host_id)),
out_since AS (  -- the end of each host's last stretch in service before $now, else when it was first seen
    SELECT s.host_id,
           coalesce(max(s.end_s) FILTER (WHERE list_contains($serving, s.state) AND s.end_s <= $now),
                    min(s.start_s)) AS out_since_s
    FROM host_states s JOIN c USING (host_id) WHERE s.start_s <= $now GROUP BY s.host_id
), seen AS (  -- telemetry of each GPU in the window
    SELECT gpu_id, count(*) AS samples FROM gpu_samples
    WHERE list_contains($gpus, gpu_id) AND t_s > $start AND t_s <= $now GROUP BY gpu_id
), dbe AS (  -- double-bit ECC counts from one window before it, each with the sample before
    SELECT gpu_id, t_s, ecc_dbe, lag(ecc_dbe) OVER (PARTITION BY gpu_id ORDER BY t_s) AS previous
    FROM gpu_samples
    WHERE list_contains($gpus, gpu_id) AND ecc_dbe IS NOT NULL AND t_s > $start - $window AND t_s <= $now
), rises AS (
    SELECT gpu_id, count(*) AS rises FROM dbe WHERE t_s > $start AND ecc_dbe > previous GROUP BY gpu_id
), per_host AS (
    SELECT cg.host_id, count(*) AS gpus, min(cg.gpu_id) AS first_gpu_id, count(seen.gpu_id) AS gpus_reporting,
           coalesce(sum(seen.samples), 0) AS samples, coalesce(sum(rises.rises), 0) AS dbe_rises
    FROM cg LEFT JOIN seen USING (gpu_id) LEFT JOIN rises USING (gpu_id) GROUP BY cg.host_id
), fatal AS (
    SELECT DISTINCT coalesce(x.host_id, g.host_id) AS host_id FROM xid_events x LEFT JOIN gpus g USING (gpu_id)
    WHERE list_contains($fatal, x.xid) AND x.t_s > $start AND x.t_s <= $now
), incident AS (
    SELECT DISTINCT coalesce(i.host_id, g.host_id) AS host_id FROM incidents i LEFT JOIN gpus g USING (gpu_id)
    WHERE i.t_s > $start AND i.t_s <= $now
)
SELECT p.host_id, o.out_since_s, p.gpus, p.first_gpu_id, p.gpus_reporting, p.samples
FROM per_host p JOIN out_since o USING (host_id)
WHERE o.out_since_s <= $start AND p.gpus_reporting = p.gpus AND p.dbe_rises = 0
  AND p.host_id NOT IN (SELECT host_id FROM fatal WHERE host_id IS NOT NULL)
  AND p.host_id NOT IN (SELECT host_id FROM incident WHERE host_id IS NOT NULL)
ORDER BY p.host_id
"""


def clean_window(ctx: Context, candidates: list[int]) -> list[Recommendation]:
    """Of `candidates` (hosts drained or down at now_s, no lemon), those out of service and clean for the whole
    CLEAN_WINDOW_S ending at now_s, each with a resume."""
    if not candidates:
        return []
    start = ctx.now_s - CLEAN_WINDOW_S
    gpu_ids = ctx.query("SELECT gpu_id FROM gpus WHERE list_contains($hosts, host_id)", hosts=candidates)
    if gpu_ids.is_empty():
        return []
    rows = ctx.query(
        CLEAN_HOSTS,
        hosts=candidates,
        gpus=gpu_ids["gpu_id"].to_list(),
        serving=list(IN_SERVICE_STATES),
        fatal=FATAL_XIDS,
        start=start,
        window=CLEAN_WINDOW_S,
    )
    window_h = n(CLEAN_WINDOW_S / 3600.0)
    found = []
    for host, row in ctx.hosts_of(rows):
        r = row.row(0, named=True)
        out_since, samples = r["out_since_s"], int(r["samples"])
        evidence = [
            Evidence(
                "telemetry",
                f"all {r['gpus_reporting']} of its GPUs reported, {samples:,} GPU samples in the {window_h} h from"
                f" {ctx.when(start)} to {ctx.when(ctx.now_s)}, with no fatal XID, no double-bit ECC error and no"
                " incident",
                start,
                ctx.link("gpus", gpu=int(r["first_gpu_id"]), t=round(ctx.now_s)),
            ),
            Evidence(
                "host_state",
                f"{host['hostname']} is {host['state']} at {ctx.when(ctx.now_s)}, out of service since"
                f" {ctx.when(out_since)}",
                out_since,
            ),
        ]
        extra = {
            "out_since_s": out_since,
            "clean_window_s": CLEAN_WINDOW_S,
            "clean_from_s": start,
            "gpu_samples_read": samples,
            "gpus_reporting": int(r["gpus_reporting"]),
            "host_gpus": int(r["gpus"]),
        }
        found.append(
            ctx.resume(
                host,
                f"out of service since {out_since!r}",
                f"out of service since {ctx.when(out_since)}, clean for the last {window_h} h: all"
                f" {r['gpus_reporting']} GPUs reporting, no fatal XID, no double-bit ECC error, no incident",
                evidence,
                extra,
            )
        )
    return found
