"""GPUs page queries: the health grid at time t, incidents per GPU and host, repeat offenders and lemons (and the
ground truth they are scored against), XIDs over time, ECC trends, one GPU's telemetry (a watched run's comes
from Prometheus: dashboard.queries.prometheus). Everything aggregates in SQL: a llama3-405b run holds ~31 M
samples.
"""

import re
from collections.abc import Callable

import polars as pl

from dashboard import state

# named here too for bench/bench_watch.py, which times it through this module
from dashboard.queries.prometheus import prometheus_telemetry as prometheus_telemetry
from engine.analysis import lemons as lemon_rule
from engine.errors import GoodputError
from engine.scenario.durations import parse_duration
from engine.telemetry.xid import xid_counts as count_per_window

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


# Every GPU at t: its place, its state (as in HEALTH_AT), its XID events and incident causes up to t. Small
# tables only; the last temperature and power come from `last_samples` (the one scan of the samples).
GRID_AT = """
WITH host_state AS (
    SELECT host_id, arg_max(state, start_s) AS state FROM host_states
    WHERE start_s <= $t AND end_s > $t GROUP BY host_id
), failed AS (
    SELECT DISTINCT gpu_id FROM incidents
    WHERE gpu_id IS NOT NULL AND t_s <= $t AND coalesce(repaired_s, 'infinity'::DOUBLE) > $t
), xids AS (
    SELECT gpu_id, count(*) AS xid_events, arg_max(xid, t_s) AS last_xid,
           list(DISTINCT xid ORDER BY xid) AS xid_codes
    FROM xid_events WHERE t_s <= $t AND gpu_id IS NOT NULL GROUP BY gpu_id
), unplanned AS (
    SELECT gpu_id, host_id, cause FROM incidents
    WHERE t_s <= $t AND NOT coalesce(planned, false) AND host_id IS NOT NULL
), incident_gpus AS (  -- an incident without a GPU (a host's part) counts for every GPU of its host
    SELECT gpu_id, cause FROM unplanned WHERE gpu_id IS NOT NULL
    UNION ALL
    SELECT g.gpu_id, u.cause FROM unplanned u JOIN gpus g USING (host_id) WHERE u.gpu_id IS NULL
), causes AS (
    SELECT gpu_id, count(*) AS incidents, list(DISTINCT cause ORDER BY cause) AS causes
    FROM incident_gpus WHERE gpu_id IS NOT NULL GROUP BY gpu_id
)
SELECT g.gpu_id, g.host_id, h.hostname, h.rack_id, coalesce(h."row", 0) AS "row",
       coalesce(h.position, h.rack_id, 0) AS position, coalesce(h.slot, 0) AS slot, g."index" AS gpu_index,
       CASE WHEN f.gpu_id IS NOT NULL THEN 'failed' ELSE coalesce(s.state, 'unknown') END AS state,
       coalesce(s.state, 'unknown') AS host_state, coalesce(x.xid_events, 0) AS xid_events, x.last_xid,
       coalesce(x.xid_codes, []::INTEGER[]) AS xid_codes, coalesce(c.incidents, 0) AS incidents,
       coalesce(c.causes, []::VARCHAR[]) AS causes
FROM gpus g JOIN hosts h USING (host_id) LEFT JOIN host_state s USING (host_id) LEFT JOIN failed f USING (gpu_id)
LEFT JOIN xids x USING (gpu_id) LEFT JOIN causes c USING (gpu_id)
ORDER BY g.gpu_id
"""

DEFAULT_LOOKBACK_S = 3600.0  # an ingested run's last value counts if it is at most an hour old
LEMON_FAILURES, LEMON_WINDOW = (
    3,
    "14d",
)  # the defaults of repair.lemon_failures / repair.lemon_window (engine.scenario)


def grid_at(run_id: str, t_s: float) -> pl.DataFrame:
    """One row per GPU at `t_s`: place, state, XIDs and incident causes so far (no samples: `last_samples`)."""
    return state.query(run_id, *_positional(GRID_AT, t=t_s))


def state_counts(grid: pl.DataFrame) -> pl.DataFrame:
    """GPUs by state (columns state, gpus) from `grid_at`'s rows, most first: HEALTH_AT without a second query."""
    return (
        grid.group_by("state")
        .agg(pl.len().cast(pl.Int64).alias("gpus"))
        .sort(["gpus", "state"], descending=[True, False])
    )


def _positional(sql: str, **values) -> tuple[str, tuple]:
    """`sql` written with $name placeholders as `?` ones and their values in order (state.query's cache key
    takes a tuple of values)."""
    return re.sub(r"\$\w+", "?", sql), tuple(values[name] for name in re.findall(r"\$(\w+)", sql))


def last_samples(run_id: str, t_s: float, resolution_s: float | None) -> pl.DataFrame:
    """Each GPU's temperature and power at `t_s` (columns gpu_id, temp_c, power_w): the scan of ~31 M samples
    on a llama3-405b run, so it reads as little as it can (`last_samples_sql`)."""
    return state.query(run_id, *last_samples_sql(t_s, resolution_s))


def last_samples_later(run_id: str, t_s: float, resolution_s: float | None) -> Callable[[], pl.DataFrame]:
    """`last_samples` on a thread of its own (state.query_in_background): returns what waits for its frame."""
    return state.query_in_background(run_id, *last_samples_sql(t_s, resolution_s))


def last_samples_sql(t_s: float, resolution_s: float | None) -> tuple[str, tuple]:
    """The query of `last_samples` and its parameters.

    A simulated run samples on a grid (engine.telemetry.sample_times: 0, r, 2r, ...): the grid time at or
    before t is one equality filter, and a GPU without a sample then (failed, in repair) reports nothing, as
    it would. Other runs (scrapes at their own times): the newest value within DEFAULT_LOOKBACK_S before t.
    """
    if resolution_s:
        grid_t = (t_s // resolution_s) * resolution_s
        return "SELECT gpu_id, temp_c, power_w FROM gpu_samples WHERE t_s = ?", (grid_t,)
    return (
        """
        SELECT gpu_id, arg_max(temp_c, t_s) FILTER (WHERE temp_c IS NOT NULL) AS temp_c,
               arg_max(power_w, t_s) FILTER (WHERE power_w IS NOT NULL) AS power_w
        FROM gpu_samples WHERE t_s <= ? AND t_s > ? GROUP BY gpu_id""",
        (t_s, t_s - DEFAULT_LOOKBACK_S),
    )


def sample_resolution(kind: str, scenario: dict) -> float | None:
    """A simulated run's telemetry step (its sample grid), else None (samples at the times they were read)."""
    simulation = scenario.get("simulation", {}) if isinstance(scenario, dict) else {}
    if kind != "simulate" or not isinstance(simulation, dict):
        return None
    try:
        # a stored scenario: an earlier Goodput wrote bare seconds (engine.scenario.durations, bare_seconds)
        resolution = parse_duration(
            simulation.get("telemetry_resolution"), "simulation.telemetry_resolution", bare_seconds=True
        )
    except (GoodputError, TypeError, AttributeError):
        return None
    return resolution if resolution > 0 else None


def repair_rule(scenario: dict) -> tuple[int, float]:
    """The run's lemon rule (repair.lemon_failures within repair.lemon_window), the scenario defaults otherwise."""
    repair = scenario.get("repair", {}) if isinstance(scenario, dict) else {}
    failures = repair.get("lemon_failures", LEMON_FAILURES) if isinstance(repair, dict) else LEMON_FAILURES
    try:
        window = parse_duration(
            repair.get("lemon_window", LEMON_WINDOW), "repair.lemon_window", bare_seconds=True
        )
    except (GoodputError, TypeError, AttributeError):
        window = parse_duration(LEMON_WINDOW)
    return int(failures), window


def matching(grid: pl.DataFrame, states: list[str], causes: list[str], xids: list[int]) -> pl.Series:
    """Which GPUs of `grid` pass the page's filters (an empty filter passes everything; filters combine
    with AND, the values inside one filter with OR)."""
    keep = pl.lit(True)
    if states:
        keep &= pl.col("state").is_in(states)
    if causes:
        keep &= pl.col("causes").list.eval(pl.element().is_in(causes)).list.any()
    if xids:
        keep &= pl.col("xid_codes").list.eval(pl.element().is_in(xids)).list.any()
    return grid.select(keep.alias("match"))["match"]


def causes_in_run(run_id: str) -> list[str]:
    frame = state.query(
        run_id,
        "SELECT DISTINCT cause FROM incidents WHERE NOT coalesce(planned, false)"
        " AND host_id IS NOT NULL ORDER BY cause",
    )
    return frame["cause"].to_list()


def xids_in_run(run_id: str) -> list[int]:
    return state.query(run_id, "SELECT DISTINCT xid FROM xid_events ORDER BY xid")["xid"].to_list()


def offenders(run_id: str, by: str, minimum: int = 1, limit: int = 50) -> pl.DataFrame:
    """Hosts (`by="host"`) or GPUs (`by="gpu"`) with at least `minimum` unplanned incidents, most first (at
    most `limit`; `offender_count` counts them all). `causes` is the list of their distinct cause keys."""
    if by == "host":
        sql = """
            SELECT i.host_id, h.hostname, h.rack_id, count(*) AS incidents,
                   list(DISTINCT i.cause ORDER BY i.cause) AS causes,
                   min(i.t_s) AS first_s, max(i.t_s) AS last_s, sum(i.gpu_hours_lost) AS gpu_hours_lost
            FROM incidents i JOIN hosts h USING (host_id)
            WHERE NOT coalesce(i.planned, false)
            GROUP BY ALL HAVING count(*) >= ? ORDER BY incidents DESC, gpu_hours_lost DESC NULLS LAST, host_id
            LIMIT ?"""
    elif by == "gpu":
        sql = """
            SELECT i.gpu_id, h.hostname, g."index" AS gpu_index, count(*) AS incidents,
                   list(DISTINCT i.cause ORDER BY i.cause) AS causes,
                   min(i.t_s) AS first_s, max(i.t_s) AS last_s, sum(i.gpu_hours_lost) AS gpu_hours_lost
            FROM incidents i JOIN gpus g USING (gpu_id) JOIN hosts h ON h.host_id = g.host_id
            WHERE NOT coalesce(i.planned, false)
            GROUP BY ALL HAVING count(*) >= ? ORDER BY incidents DESC, gpu_hours_lost DESC NULLS LAST, gpu_id
            LIMIT ?"""
    else:
        raise ValueError(f"offenders by 'host' or 'gpu', not {by!r}")
    return state.query(run_id, sql, (minimum, limit))


OFFENDER_COUNT = {  # the same incidents and joins as `offenders`, counted
    "host": """SELECT count(*) AS n FROM (SELECT i.host_id FROM incidents i JOIN hosts h USING (host_id)
               WHERE NOT coalesce(i.planned, false) GROUP BY i.host_id HAVING count(*) >= ?)""",
    "gpu": """SELECT count(*) AS n FROM (SELECT i.gpu_id FROM incidents i JOIN gpus g USING (gpu_id)
              WHERE NOT coalesce(i.planned, false) GROUP BY i.gpu_id HAVING count(*) >= ?)""",
}


def offender_count(run_id: str, by: str, minimum: int) -> int:
    """How many hosts (`by="host"`) or GPUs (`by="gpu"`) have at least `minimum` unplanned incidents (the
    definitions repeat_offender_hosts and repeat_offender_gpus), however many `offenders` lists."""
    if by not in OFFENDER_COUNT:
        raise ValueError(f"offenders by 'host' or 'gpu', not {by!r}")
    return int(state.query(run_id, OFFENDER_COUNT[by], (minimum,))["n"][0])


# Causes that send a host to repair in the simulator; only those count towards a lemon. The lemon rule is defined
# once, in engine.analysis.lemons: these names are its.
REPAIR_CAUSES = lemon_rule.REPAIR_CAUSES


# Each repair-sending unplanned incident with the count of its host's such incidents in the window that ends at
# it (parameters: the window in seconds, REPAIR_CAUSES): the lemon rule's count, for `lemons` and
# `lemon_truth_counts` alike.
IN_WINDOW = lemon_rule.IN_WINDOW


def lemons(run_id: str, failures: int, window_s: float) -> pl.DataFrame:
    """Hosts that had `failures` repair-sending incidents within `window_s`: the simulator's lemon rule
    (repair.lemon_failures within repair.lemon_window; engine.analysis.lemons). `flagged_s` is the first incident
    that completed such a run of failures; `most_in_window` the largest count seen in one window. The simulator
    also restarts its count once a host is flagged; this reading does not, so it can only name more flags, never
    fewer hosts. Every such host (the figure lemon_rule_hosts): a handful even at 24,576 GPUs."""
    return state.query(run_id, *lemon_rule.lemons_query(failures, window_s))


# ----- the lemon rule against the simulator's ground truth (hosts.bad) ------------------------------------

HAS_TRUTH_COLUMN = """
SELECT count(*) AS n FROM information_schema.columns
WHERE table_catalog = current_database() AND table_name = 'hosts' AND column_name = 'bad'
"""


def ground_truth(run_id: str) -> pl.DataFrame | None:
    """Which of the run's hosts are systematically bad (columns host_id, bad), or None where the run does not
    know: a file written before hosts.bad existed lacks the column, and an observed run (replay, ingest)
    leaves it NULL. A truth with holes (some hosts NULL) is no truth either: it cannot score the rule."""
    if int(state.query(run_id, HAS_TRUTH_COLUMN)["n"][0]) == 0:
        return None
    truth = state.query(run_id, "SELECT host_id, bad FROM hosts ORDER BY host_id")
    if truth.is_empty() or truth["bad"].null_count():
        return None
    return truth


def lemon_truth_counts(run_id: str, window_s: float) -> pl.DataFrame:
    """Hosts counted by their most repair-sending incidents in one `window_s` (the count the lemon rule
    compares with repair.lemon_failures; 0 for a host without any) and by their ground truth: columns
    most_in_window, bad, hosts. Call only where `ground_truth` found the column."""
    return state.query(
        run_id,
        f"""
        WITH hw AS ({IN_WINDOW}),
        per_host AS (SELECT host_id, max(in_window) AS most FROM hw GROUP BY host_id)
        SELECT coalesce(p.most, 0) AS most_in_window, h.bad, count(*) AS hosts
        FROM hosts h LEFT JOIN per_host p USING (host_id)
        GROUP BY ALL ORDER BY most_in_window, h.bad""",  # noqa: S608 (only constant SQL formatted in)
        (window_s, REPAIR_CAUSES),
    )


def with_truth(frame: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """`frame` (a column host_id) with each host's ground truth as a column `bad`, in `frame`'s order."""
    return frame.join(truth.select("host_id", "bad"), on="host_id", how="left", maintain_order="left")


def offender_incidents(run_id: str, minimum: int = 2, hosts: int = 25) -> pl.DataFrame:
    """Every unplanned incident of the (at most `hosts`) hosts with at least `minimum` of them, the worst first
    (label = hostname)."""
    return state.query(
        run_id,
        """
        WITH unplanned AS (SELECT * FROM incidents WHERE NOT coalesce(planned, false) AND host_id IS NOT NULL),
        lemons AS (SELECT host_id, count(*) AS n FROM unplanned GROUP BY host_id HAVING count(*) >= ?
                   ORDER BY n DESC, host_id LIMIT ?)
        SELECT h.hostname AS label, u.t_s, u.cause, u.gpu_id, u.xid
        FROM unplanned u JOIN lemons USING (host_id) JOIN hosts h USING (host_id)
        ORDER BY lemons.n DESC, u.host_id, u.t_s""",
        (minimum, hosts),
    )


def xid_counts(run_id: str) -> pl.DataFrame:
    return state.query(
        run_id,
        "SELECT xid, count(*) AS events, count(DISTINCT gpu_id) AS gpus FROM xid_events"
        " GROUP BY xid ORDER BY events DESC, xid",
    )


def xid_timeline(run_id: str, window_s: float, xids: list[int] | None = None) -> pl.DataFrame:
    """XID events counted per window and code (engine.telemetry.xid.xid_counts: every event, not the last value
    of the exporter's gauge); `xids` keeps only those codes. The events table is small (one row an XID line)."""
    events = state.query(run_id, "SELECT t_s, xid FROM xid_events WHERE xid IS NOT NULL")
    if xids:
        events = events.filter(pl.col("xid").is_in(xids))
    return count_per_window(events, window_s)


def xid_events(run_id: str, xids: list[int] | None = None) -> pl.DataFrame:
    """Every XID event (t_s, xid, gpu_id) in time order, only `xids` when given: for a run too short for
    counts per window."""
    events = state.query(
        run_id, "SELECT t_s, xid, gpu_id FROM xid_events WHERE xid IS NOT NULL ORDER BY t_s, xid"
    )
    return events.filter(pl.col("xid").is_in(xids)) if xids else events


def xid_window(duration_s: float) -> float:
    """A window that gives about 60 bars over the run: an hour, 6 hours or a day on the usual lengths."""
    for window in (60.0, 300.0, 900.0, 3600.0, 6 * 3600.0, 86400.0):
        if duration_s / window <= 80:
            return window
    return 7 * 86400.0


def ecc_top(run_id: str, n: int = 10) -> pl.DataFrame:
    """The `n` GPUs with the most ECC errors (double-bit first: uncorrectable), among those that have any;
    `gpus_with_ecc` counts all of those. Aggregated before the joins: only GPUs with errors reach them."""
    return state.query(run_id, ECC_TOP_SQL, (n,))


ECC_TOP_SQL = """
        WITH ecc AS (
            SELECT gpu_id, max(ecc_dbe) AS ecc_dbe, max(ecc_sbe) AS ecc_sbe, min(t_s) AS first_s,
                   count(*) OVER () AS gpus_with_ecc
            FROM gpu_samples WHERE ecc_sbe > 0 OR ecc_dbe > 0 GROUP BY gpu_id
            ORDER BY ecc_dbe DESC, ecc_sbe DESC, gpu_id LIMIT ?
        )
        SELECT e.gpu_id, h.hostname, g."index" AS gpu_index, e.ecc_dbe, e.ecc_sbe, e.first_s, e.gpus_with_ecc
        FROM ecc e JOIN gpus g USING (gpu_id) JOIN hosts h ON h.host_id = g.host_id
        ORDER BY e.ecc_dbe DESC, e.ecc_sbe DESC, e.gpu_id"""


def ecc_trend(run_id: str, gpu_ids: list[int], bucket_s: float) -> pl.DataFrame:
    """Single- and double-bit counts of `gpu_ids` over time, the largest value in each `bucket_s` (samples
    are stored GPU by GPU, so a few GPUs read a few row groups)."""
    return state.query(
        run_id,
        """
        SELECT gpu_id, floor(t_s / ?) * ? AS t_s, max(ecc_sbe) AS ecc_sbe, max(ecc_dbe) AS ecc_dbe
        FROM gpu_samples WHERE list_contains(?, gpu_id) GROUP BY ALL ORDER BY gpu_id, t_s""",
        (bucket_s, bucket_s, [int(g) for g in gpu_ids]),
    )


def gpu_ids(run_id: str) -> pl.DataFrame:
    return state.query(run_id, "SELECT min(gpu_id) AS first, max(gpu_id) AS last, count(*) AS gpus FROM gpus")


def gpu_info(run_id: str, gpu_id: int) -> pl.DataFrame:
    return state.query(
        run_id,
        """
        SELECT g.gpu_id, g.uuid, g.model, g."index" AS gpu_index, h.hostname, h.rack_id, h.host_id
        FROM gpus g LEFT JOIN hosts h USING (host_id) WHERE g.gpu_id = ?""",
        (gpu_id,),
    )


def gpu_events(run_id: str, gpu_id: int) -> pl.DataFrame:
    return state.query(
        run_id,
        """
        SELECT t_s, 'incident' AS kind, cause AS what, xid, incident_id, gpu_hours_lost FROM incidents WHERE gpu_id = ?
        UNION ALL
        SELECT t_s, 'xid' AS kind, message AS what, xid, incident_id, NULL FROM xid_events WHERE gpu_id = ?
        ORDER BY t_s, kind, incident_id, xid""",  # at one moment, an incident before the XID lines it raised
        (gpu_id, gpu_id),
    )


def gpu_telemetry(run_id: str, gpu_id: int, points: int) -> pl.DataFrame:
    """One GPU's samples averaged in SQL into about `points` buckets of its sampled span (at least 1 s each),
    so a plot stays light whatever the run's length; `bucket_s` says how wide they came out."""
    return state.query(
        run_id,
        """
        WITH span AS (
            SELECT greatest((max(t_s) - min(t_s)) / ?, 1.0) AS bucket_s FROM gpu_samples WHERE gpu_id = ?
        )
        SELECT floor(t_s / bucket_s) * bucket_s AS t_s, avg(temp_c) AS temp_c, avg(power_w) AS power_w,
               avg(util_pct) AS util_pct, max(ecc_sbe) AS ecc_sbe, max(ecc_dbe) AS ecc_dbe, count(*) AS samples,
               any_value(bucket_s) AS bucket_s
        FROM gpu_samples, span WHERE gpu_id = ? GROUP BY 1 ORDER BY 1""",
        (points, gpu_id, gpu_id),
    )
