"""The three drain rules: a host in service that should be taken out, with what draining it and leaving it cost
(engine.act.pricing).

    fatal_xid   a host in service (healthy, running, spare) with an incident carrying a fatal XID
                (engine.reference.XIDS) that is not repaired at now_s and came after the host's last return to
                service (a drain and return since has dealt with it)
    lemon       a host in service that the lemon rule (engine.analysis.lemons) flags at now_s:
                repair.lemon_failures repair-sending incidents in the repair.lemon_window ending at now_s
    slow_host   a host in service with a fail-slow episode open at now_s (slow_episodes)

engine.act.recommend keeps one drain a host: a fatal XID's before a lemon's, a lemon's before a slow host's.
"""

import polars as pl

from engine.act.context import Context, query
from engine.act.records import Evidence, Recommendation, Rule
from engine.act.words import incident_words, n, xid_words
from engine.analysis.lemons import lemon_rule, lemons_at
from engine.ingest.observed import FATAL_XIDS  # one list of fatal XIDs: the ingest's
from engine.store import file_columns
from engine.store.schema import OUT_OF_SERVICE_STATES
from engine.units import SECONDS_PER_HOUR

MIN_REPEAT_HOSTS = 5  # hosts with a fatal XID needed to measure how often one recurs; fewer: p = 1
FAIL_SLOW_TAB = "Fail-slow episodes"  # the Incidents page's tab label (dashboard.incidents.tabs.FAIL_SLOW)

FATAL_OPEN = """
WITH returned AS (  -- each host's last return to service at or before $now
    SELECT host_id, max(end_s) AS back_s FROM host_states
    WHERE list_contains($out, state) AND end_s <= $now GROUP BY host_id
)
SELECT i.incident_id, i.t_s, i.xid, i.host_id, i.gpu_id, g."index" AS gpu_index
FROM incidents i LEFT JOIN gpus g ON g.gpu_id = i.gpu_id LEFT JOIN returned r ON r.host_id = i.host_id
WHERE list_contains($fatal, i.xid) AND i.host_id IS NOT NULL AND i.t_s <= $now
  AND (i.repaired_s IS NULL OR i.repaired_s > $now) AND i.t_s >= coalesce(r.back_s, '-infinity'::DOUBLE)
ORDER BY i.host_id, i.t_s, i.incident_id
"""
# Of the hosts with a fatal XID at least $h before $now (a whole horizon seen after it), those with another
# unplanned incident within $h of their first.
FATAL_REPEATS = """
WITH first_fatal AS (
    SELECT host_id, min(t_s) AS t_f FROM incidents
    WHERE list_contains($fatal, xid) AND host_id IS NOT NULL AND t_s <= $now - $h GROUP BY host_id
), repeated AS (
    SELECT DISTINCT f.host_id FROM first_fatal f JOIN incidents i
    ON i.host_id = f.host_id AND NOT coalesce(i.planned, false) AND i.t_s > f.t_f AND i.t_s <= f.t_f + $h
)
SELECT (SELECT count(*) FROM first_fatal) AS hosts, (SELECT count(*) FROM repeated) AS repeated
"""


def fatal_repeat_chance(ctx: Context) -> tuple[float, dict]:
    """The chance a host with a fatal XID fails again within the horizon, and its evidence: the run's share of
    repeats where at least MIN_REPEAT_HOSTS hosts can be counted, else 1."""
    row = query(ctx.con, FATAL_REPEATS, fatal=FATAL_XIDS, now=ctx.now_s, h=ctx.horizon_s).row(0, named=True)
    hosts, repeated = int(row["hosts"]), int(row["repeated"])
    measured = hosts >= MIN_REPEAT_HOSTS
    p = repeated / hosts if measured else 1.0
    extra = {
        "p_recur": p,
        "p_source": "measured" if measured else "assumed",
        "repeat_hosts_n": hosts,
        "repeated_n": repeated,
        "repeat_window_s": ctx.horizon_s,
    }
    return p, extra


def fatal_xid(ctx: Context) -> list[Recommendation]:
    """DRAIN a host in service with a fatal XID not yet repaired nor followed by a return to service."""
    serving = ctx.in_service()["host_id"].to_list()
    if not serving:
        return []
    rows = query(ctx.con, FATAL_OPEN, out=list(OUT_OF_SERVICE_STATES), fatal=FATAL_XIDS, now=ctx.now_s)
    rows = rows.filter(pl.col("host_id").is_in(serving))
    if rows.is_empty():
        return []
    p, stats = fatal_repeat_chance(ctx)
    if stats["p_source"] == "measured":
        p_words = (
            f"p = {p:.3f}, the share of the run's {stats['repeat_hosts_n']} hosts with a fatal XID that failed"
            f" again within {n(ctx.horizon_h)} h ({stats['repeated_n']})"
        )
    else:
        p_words = (
            f"p = 1: fewer than {MIN_REPEAT_HOSTS} hosts with a fatal XID to measure how often one recurs"
            f" ({stats['repeat_hosts_n']}), so it is taken to recur"
        )
    found = []
    for host, incidents in ctx.hosts_of(rows):
        evidence = [
            Evidence(
                "incident",
                f"{xid_words(r['xid'], r['gpu_index'])}, incident {r['incident_id']}",
                r["t_s"],
                ctx.incident_link(r["incident_id"]),
            )
            for r in incidents.iter_rows(named=True)
        ]
        latest = incidents.row(-1, named=True)
        reason = (
            f"fatal {xid_words(latest['xid'], latest['gpu_index'])} at {ctx.when(latest['t_s'])},"
            f" host still {host['state']}"
        )

        def not_acting(acting: float, jobs: list, p: float = p) -> tuple[float, str]:
            if not jobs:
                return 0.0, f"no job on the host now: 0 GPU-h ({p_words})"
            return p * acting, f"{p_words}; {p:.3f} x {acting:,.2f} GPU-h = {p * acting:,.2f} GPU-h"

        found.append(
            ctx.drain(
                Rule.FATAL_XID,
                host,
                f"incident {latest['incident_id']}",
                reason,
                evidence,
                not_acting,
                {**stats, "incidents": incidents["incident_id"].to_list()},
            )
        )
    return found


def lemon(ctx: Context) -> list[Recommendation]:
    """DRAIN a host in service that the lemon rule flags at now_s."""
    failures, window_s = lemon_rule(ctx.info.scenario)
    rows = lemons_at(ctx.con, failures, window_s, ctx.now_s)
    rows = rows.filter(pl.col("host_id").is_in(ctx.in_service()["host_id"].to_list()))
    found = []
    for host, incidents in ctx.hosts_of(rows):
        k = incidents.height
        rate_per_h = k / window_s * SECONDS_PER_HOUR
        expected = min(rate_per_h * ctx.horizon_h, 1.0)
        evidence = [
            Evidence("incident", incident_words(r), r["t_s"], ctx.incident_link(r["incident_id"]))
            for r in incidents.iter_rows(named=True)
        ]
        latest = incidents.row(-1, named=True)
        reason = (
            f"lemon: {k} repair-sending incidents within {n(window_s / SECONDS_PER_HOUR)} h"
            f" (the rule: {failures}), the last at {ctx.when(latest['t_s'])}"
        )
        rate_words = (
            f"its {k} incidents in {n(window_s / SECONDS_PER_HOUR)} h"
            f" x {n(ctx.horizon_h)} h = {k / window_s * ctx.horizon_s:.3f} expected failures"
            + (" (capped at 1: the first takes the host out of the job)" if expected >= 1.0 else "")
        )

        def not_acting(acting: float, jobs: list, expected: float = expected, rate_words: str = rate_words):
            if not jobs:
                return 0.0, f"no job on the host now: 0 GPU-h ({rate_words})"
            return (
                expected * acting,
                f"{rate_words}; {expected:.3f} x {acting:,.2f} GPU-h = {expected * acting:,.2f} GPU-h",
            )

        extra = {
            "lemon_failures": failures,
            "lemon_window_s": window_s,
            "incidents_n": k,
            "rate_per_hour": rate_per_h,
            "expected_failures": expected,
            "incidents": incidents["incident_id"].to_list(),
        }
        found.append(
            ctx.drain(
                Rule.LEMON, host, f"incident {latest['incident_id']}", reason, evidence, not_acting, extra
            )
        )
    return found


SLOW_OPEN = """
SELECT e.host_id, e.gpu_id, g."index" AS gpu_index, e.cause, e.factor, e.start_s, e.end_s, e.detected_s
FROM slow_episodes e LEFT JOIN gpus g ON g.gpu_id = e.gpu_id
WHERE e.host_id IS NOT NULL AND e.start_s <= $now AND (e.end_s IS NULL OR e.end_s > $now)
ORDER BY e.host_id, e.start_s, e.cause
"""


def slow_host(ctx: Context) -> list[Recommendation]:
    """DRAIN a host in service with a fail-slow episode open at now_s."""
    if not file_columns(ctx.con, "slow_episodes"):  # a file written before the table existed
        return []
    rows = query(ctx.con, SLOW_OPEN, now=ctx.now_s)
    rows = rows.filter(pl.col("host_id").is_in(ctx.in_service()["host_id"].to_list()))
    found = []
    link = ctx.link("incidents", tab=FAIL_SLOW_TAB)
    for host, episodes in ctx.hosts_of(rows):
        factor = float(episodes["factor"].max())
        first = episodes.row(0, named=True)
        evidence = []
        for r in episodes.iter_rows(named=True):
            where = f" on GPU {r['gpu_index']}" if r["gpu_index"] is not None else ""
            seen = f", detected at {ctx.when(r['detected_s'])}" if r["detected_s"] is not None else ""
            evidence.append(
                Evidence(
                    "slow_episode",
                    f"{r['cause']} fail-slow{where}: running at 1/{r['factor']:g} of its speed since"
                    f" {ctx.when(r['start_s'])}{seen}",
                    r["start_s"],
                    link,
                )
            )
        since = ctx.when(first["start_s"])
        causes = ", ".join(sorted(set(episodes["cause"].to_list())))
        reason = f"fail-slow ({causes}): running at 1/{factor:g} of its speed since {since}"
        waste = 1.0 - 1.0 / factor

        def not_acting(acting: float, jobs: list, waste: float = waste, factor: float = factor):
            if not jobs:
                return 0.0, "no job on the host now: 0 GPU-h"
            gpus = sum(g for _, g in jobs)
            cost = gpus * waste * ctx.horizon_h
            return cost, (
                f"its jobs' {n(gpus)} GPUs x (1 - 1/{factor:g}) x {n(ctx.horizon_h)} h = {cost:,.2f} GPU-h"
                " (a synchronous job runs at its slowest host's pace)"
            )

        extra = {"factor": factor, "waste": waste, "episodes_n": episodes.height, "since_s": first["start_s"]}
        found.append(
            ctx.drain(
                Rule.SLOW_HOST, host, f"slow since {first['start_s']!r}", reason, evidence, not_acting, extra
            )
        )
    return found
