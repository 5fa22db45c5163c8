"""Network page queries: links by tier, link utilisation by tier over time, network incidents and the jobs hit."""

import polars as pl

from dashboard import state
from engine.fabric.network_incidents import NETWORK_CAUSE

TIER_FIGURES = {
    "tier": pl.String,
    "links": pl.Int64,
    "links_sampled": pl.Int64,
    "complete": pl.Boolean,
    "mean_util": pl.Float64,
    "hottest_link_mean": pl.Float64,
    "max_util": pl.Float64,
    "down_share": pl.Float64,
}


def tiers(run_id: str) -> pl.DataFrame:
    return state.query(
        run_id,
        """
        SELECT tier, count(*) AS links, sum(capacity_gbps) AS capacity_gbps,
               min(capacity_gbps) AS min_link_gbps, max(capacity_gbps) AS max_link_gbps
        FROM links GROUP BY tier ORDER BY tier""",
    )


def sample_count(run_id: str) -> int:
    return int(state.query(run_id, "SELECT count(*) AS n FROM link_samples")["n"][0])


def utilisation_by_tier(run_id: str, points: int) -> pl.DataFrame:
    """Mean and hottest link utilisation per tier in about `points` buckets of the sampled span (at least 1 s
    each; `bucket_s` says how wide), aggregated in SQL. Where every tier is a contiguous range of link ids (the
    engine numbers them so), the tier comes from the id's range rather than a join of every sample."""
    ranges = state.query(
        run_id,
        """
        SELECT tier, min(link_id) AS lo, max(link_id) AS hi, count(*) AS n FROM links GROUP BY tier ORDER BY lo""",
    )
    contiguous = not ranges.is_empty() and (ranges["hi"] - ranges["lo"] + 1 == ranges["n"]).all()
    if contiguous:
        cases = " ".join("WHEN s.link_id BETWEEN ? AND ? THEN ?" for _ in range(ranges.height))
        tier_of = f"CASE {cases} END"
        params = tuple(v for row in ranges.iter_rows() for v in (row[1], row[2], row[0]))
        source = "link_samples s"
    else:
        tier_of, params, source = "l.tier", (), "link_samples s JOIN links l USING (link_id)"
    return state.query(
        run_id,
        f"""
        WITH span AS (SELECT greatest((max(t_s) - min(t_s)) / ?, 1.0) AS bucket_s FROM link_samples)
        SELECT floor(s.t_s / span.bucket_s) * span.bucket_s AS t_s, {tier_of} AS tier, avg(s.util_pct) AS mean_util,
               max(s.util_pct) AS max_util, any_value(span.bucket_s) AS bucket_s
        FROM {source}, span
        GROUP BY 1, 2 ORDER BY 1, 2""",  # noqa: S608 (only ? marks and fixed SQL go in)
        (points, *params),
    )


def hottest_links(run_id: str, tiers: tuple[str, ...], limit: int = 20) -> pl.DataFrame:
    """The `limit` links of `tiers` with the highest mean utilisation (pass only tiers whose every link is
    sampled at every step: a link kept only while down or erroring has a mean of its worst moments)."""
    if not tiers:
        return pl.DataFrame(
            schema={
                "link_id": pl.Int32,
                "tier": pl.String,
                "a": pl.String,
                "b": pl.String,
                "capacity_gbps": pl.Float64,
                "mean_util": pl.Float64,
                "max_util": pl.Float64,
                "errors": pl.Int64,
            }
        )
    marks = ", ".join("?" for _ in tiers)
    # per link first (a few ten thousand groups), then the links table: cheaper than joining every sample
    return state.query(
        run_id,
        f"""
        WITH per_link AS (SELECT link_id, avg(util_pct) AS mean_util, max(util_pct) AS max_util,
                                 sum(errors) AS errors
                          FROM link_samples GROUP BY link_id)
        SELECT p.link_id, l.tier, l.a, l.b, l.capacity_gbps, p.mean_util, p.max_util, p.errors
        FROM per_link p JOIN links l USING (link_id) WHERE l.tier IN ({marks})
        ORDER BY p.mean_util DESC NULLS LAST, p.link_id LIMIT ?""",  # noqa: S608 (? marks only)
        (*tiers, limit),
    )


def tier_coverage(run_id: str) -> pl.DataFrame:
    """Per tier of the links table, what link_samples holds of it: links, links with a row (links_sampled),
    and whether every link has a row at every sample time (complete), with the statistics over the stored rows
    (mean_util, hottest_link_mean, max_util, down_share), meaningful only where complete."""
    return state.query(
        run_id,
        """
        WITH per_link AS (
            SELECT link_id, sum(util_pct) AS util_sum, count(util_pct) AS readings, count(*) AS n,
                   max(util_pct) AS max_util
            FROM link_samples GROUP BY link_id),
        times AS (SELECT count(DISTINCT t_s) AS n FROM link_samples)
        SELECT l.tier, count(*) AS links, count(p.link_id) AS links_sampled,
               coalesce(sum(p.n), 0) = count(*) * any_value(times.n) AND any_value(times.n) > 0 AS complete,
               sum(p.util_sum) / sum(p.readings) AS mean_util,
               max(p.util_sum / nullif(p.readings, 0)) AS hottest_link_mean, max(p.max_util) AS max_util,
               1.0 - sum(p.readings) / sum(p.n) AS down_share
        FROM links l LEFT JOIN per_link p USING (link_id), times
        GROUP BY l.tier ORDER BY min(l.link_id)""",
    )


def tier_figures(coverage: pl.DataFrame, summary_tiers: list[dict] | None) -> pl.DataFrame:
    """The per-tier figures a page shows (TIER_FIGURES), each right for every link of its tier.

    From the engine's count over every link at every sample (summary network.tiers, engine.fabric.link_stats) where
    the run has it; otherwise from link_samples, and only for tiers it holds completely: a tier it holds in part
    (NIC cables kept only while down or logging errors) gets no figures rather than wrong ones."""
    base = coverage.select("tier", "links", "links_sampled", "complete")
    if summary_tiers:
        engine = pl.DataFrame(summary_tiers).select(
            "tier",
            pl.col("mean_util_pct").cast(pl.Float64).alias("mean_util"),
            pl.col("hottest_link_mean_pct").cast(pl.Float64).alias("hottest_link_mean"),
            pl.col("peak_util_pct").cast(pl.Float64).alias("max_util"),
            pl.col("down_share").cast(pl.Float64),
        )
        return base.join(engine, on="tier", how="left", maintain_order="left").cast(TIER_FIGURES)
    stats = ("mean_util", "hottest_link_mean", "max_util", "down_share")
    return coverage.select(
        *base.columns, *[pl.when(pl.col("complete")).then(pl.col(c)).alias(c) for c in stats]
    ).cast(TIER_FIGURES)


def network_incidents(run_id: str) -> pl.DataFrame:
    return state.query(
        run_id,
        """
        SELECT i.incident_id, i.cause, i.t_s, i.repaired_s - i.t_s AS out_s, i.link_id, l.tier, l.a, l.b,
               h.hostname, i.jobs_hit, i.gpu_hours_lost, i.job_ids
        FROM incidents i LEFT JOIN links l USING (link_id) LEFT JOIN hosts h USING (host_id)
        WHERE i.cause = ? ORDER BY i.t_s""",
        (NETWORK_CAUSE,),
    )


def jobs_hit(run_id: str) -> pl.DataFrame:
    """Each job hit by a network incident: how often, and the GPU-hours those incidents cost in all."""
    return state.query(
        run_id,
        """
        WITH hits AS (
            SELECT unnest(job_ids) AS job_id, incident_id, gpu_hours_lost FROM incidents WHERE cause = ?
        )
        SELECT hits.job_id, j.name, j.kind, j.gpus, count(*) AS network_incidents,
               sum(hits.gpu_hours_lost) AS incident_gpu_hours_lost
        FROM hits LEFT JOIN jobs j USING (job_id)
        GROUP BY ALL ORDER BY network_incidents DESC, hits.job_id""",
        (NETWORK_CAUSE,),
    )


# ----- the fabric model's samples (engine.fabric.traffic): heat map, diagram, outages, flapping links, comparison


def hot_link_heatmap(run_id: str, fabric_tiers: tuple[str, ...], limit: int, points: int) -> pl.DataFrame:
    """Mean utilisation of the `limit` hottest links above the NICs (tiers `fabric_tiers`) in about `points`
    time buckets: link_id, label, t_s, util."""
    marks = ", ".join("?" for _ in fabric_tiers)
    return state.query(
        run_id,
        f"""
        WITH per_link AS (SELECT link_id, avg(util_pct) AS mean_util FROM link_samples GROUP BY link_id),
        hot AS (
            SELECT p.link_id, l.tier, l.a, l.b, p.mean_util
            FROM per_link p JOIN links l USING (link_id)
            WHERE l.tier IN ({marks}) ORDER BY p.mean_util DESC NULLS LAST, p.link_id LIMIT ?),
        span AS (SELECT greatest((max(t_s) - min(t_s)) / ?, 1.0) AS bucket_s FROM link_samples)
        SELECT hot.link_id, hot.a || ' → ' || hot.b AS label, hot.tier, hot.mean_util,
               floor(s.t_s / span.bucket_s) * span.bucket_s AS t_s, avg(s.util_pct) AS util
        FROM link_samples s JOIN hot USING (link_id), span
        WHERE s.link_id IN (SELECT link_id FROM hot)
        GROUP BY ALL ORDER BY hot.mean_util DESC, hot.link_id, t_s""",  # noqa: S608 (only ? marks are formatted in)
        (*fabric_tiers, limit, points),
    )


def switch_loads(run_id: str) -> pl.DataFrame:
    """Mean and peak utilisation of each switch's links, for the diagram: node (`kind-number` or
    `kind-pod-number` as in the links table), tier of the links, pod (racks: from hosts; spines: from the name),
    the link-samples down, and `out`: at some sample every one of these links was down at once (the switch
    itself out, not one cable of it; at 24,576 GPUs a spine fault takes one uplink of each of 192 racks)."""
    return state.query(
        run_id,
        """
        WITH per_link AS (
            SELECT link_id, avg(util_pct) AS mean_util, max(util_pct) AS peak_util,
                   count(*) FILTER (WHERE util_pct IS NULL) AS down_samples
            FROM link_samples GROUP BY link_id),
        link_ends AS (  -- links between switches only: NIC cables are not drawn (nor all stored)
            SELECT link_id, tier, a AS node, 'up' AS side FROM links WHERE a NOT LIKE '%:gpu%'
            UNION ALL
            SELECT link_id, tier, b AS node, 'down' AS side FROM links WHERE a NOT LIKE '%:gpu%'),
        down_at AS (  -- links down per switch side and sample: only the rows without a reading
            SELECT e.tier, e.side, e.node, s.t_s, count(*) AS down_links
            FROM link_samples s JOIN link_ends e USING (link_id) WHERE s.util_pct IS NULL GROUP BY ALL),
        most_down AS (SELECT tier, side, node, max(down_links) AS down_links FROM down_at GROUP BY ALL)
        SELECT e.tier, e.side, e.node, avg(p.mean_util) AS mean_util, max(p.peak_util) AS peak_util,
               sum(p.down_samples) AS down_samples, count(*) AS links,
               coalesce(any_value(m.down_links), 0) = count(*) AS out
        FROM link_ends e JOIN per_link p USING (link_id)
             LEFT JOIN most_down m ON m.tier = e.tier AND m.side = e.side AND m.node = e.node
        GROUP BY e.tier, e.side, e.node ORDER BY e.tier, e.side, e.node""",
    )


def rack_pods(run_id: str) -> pl.DataFrame:
    return state.query(run_id, "SELECT DISTINCT rack_id, pod_id FROM hosts ORDER BY rack_id")


def outages(run_id: str) -> pl.DataFrame:
    """Links out of service (no utilisation reading), one row per outage: the links that went down and came
    back together (a cable: one; a rack switch: its NIC cables and uplinks; a spine: its uplinks and core
    links), with the network incidents that started then and the jobs they stopped."""
    return state.query(
        run_id,
        """
        WITH grid AS (SELECT min(t_s) AS t0, greatest(min(d), 1.0) AS res FROM (
                          SELECT t_s, t_s - lag(t_s) OVER (ORDER BY t_s) AS d
                          FROM (SELECT DISTINCT t_s FROM link_samples))),
        down AS (
            SELECT s.link_id, round((s.t_s - grid.t0) / grid.res) AS k, grid.res
            FROM link_samples s, grid WHERE s.util_pct IS NULL),
        runs AS (
            SELECT link_id, min(k) AS k0, max(k) AS k1, any_value(res) AS res
            FROM (SELECT *, k - row_number() OVER (PARTITION BY link_id ORDER BY k) AS island FROM down)
            GROUP BY link_id, island),
        outage AS (
            SELECT r.k0 * r.res + grid.t0 AS from_s, (r.k1 + 1) * r.res + grid.t0 AS until_s,
                   count(*) AS links, list(DISTINCT l.tier ORDER BY l.tier) AS tiers,
                   min(r.link_id) AS first_link, list(r.link_id) AS link_ids, any_value(r.res) AS res
            FROM runs r JOIN links l USING (link_id), grid GROUP BY 1, 2)
        SELECT o.from_s, o.until_s, o.links, o.tiers, l.a, l.b,
               (SELECT list(DISTINCT j ORDER BY j) FROM (
                    SELECT unnest(i.job_ids) AS j FROM incidents i
                    WHERE i.cause = ? AND list_contains(o.link_ids, i.link_id)
                      AND i.t_s > o.from_s - o.res AND i.t_s <= o.from_s)) AS jobs_stopped,
               o.first_link
        FROM outage o JOIN links l ON l.link_id = o.first_link
        ORDER BY o.from_s, o.first_link""",
        (NETWORK_CAUSE,),
    )


def flapping_links(run_id: str, limit: int = 50) -> pl.DataFrame:
    """Links that logged errors, with when they started and whether the link went down afterwards."""
    return state.query(
        run_id,
        """
        WITH err AS (SELECT link_id, min(t_s) AS first_error_s, sum(errors) AS errors
                     FROM link_samples WHERE errors > 0 GROUP BY link_id)
        SELECT e.link_id, l.tier, l.a, l.b, e.first_error_s, e.errors,
               (SELECT min(s.t_s) FROM link_samples s
                WHERE s.link_id = e.link_id AND s.util_pct IS NULL AND s.t_s > e.first_error_s) AS failed_s
        FROM err e JOIN links l USING (link_id) ORDER BY e.errors DESC, e.link_id LIMIT ?""",
        (limit,),
    )


def utilisation_by_level(run_id: str, tier_level: dict[str, int], points: int) -> pl.DataFrame:
    """Mean utilisation per fabric level (0: NIC cables, 1: rack uplinks, 2: core) in about `points` buckets,
    so runs with different tier names (RoCE, InfiniBand) line up: level, t_s, mean_util, max_util."""
    levels = pl.DataFrame(
        {"tier": list(tier_level), "level": list(tier_level.values())},
        schema={"tier": pl.String, "level": pl.Int64},
    )
    frame = utilisation_by_tier(run_id, points)
    return frame.join(levels, on="tier").select("level", "t_s", "mean_util", "max_util").sort("level", "t_s")
