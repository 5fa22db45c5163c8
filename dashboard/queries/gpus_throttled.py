"""GPUs page queries: the throttled and slow GPUs of a run, from the SM clocks, clocks-event (throttle) reasons and
throttle-violation counters of its samples (engine.telemetry.clocks: DCGM fields 100, 112, 240 and 241) and, for a
simulated run, its fail-slow episodes on GPUs (slow_episodes, the gpu_thermal and gpu_power causes).

Everything aggregates in SQL, cached per run by state.query: the per-GPU figures read only the throttled samples
(a few thousand of a llama3-405b run's 30-60 M), the counts of samples only the GPUs shown. Files written before
these columns or that table existed read as a run without them (the columns as NULL, no episodes).
"""

import math
from typing import NamedTuple

import polars as pl

from dashboard import state
from engine.telemetry.clocks import OTHER_WORDS, REASON_BITS, THROTTLE_WORDS

THROTTLE_MASK = sum(REASON_BITS[name] for name in THROTTLE_WORDS)
# A throttled sample's bitmask is at least its lowest throttle bit: a range DuckDB checks against each row group's
# min/max and so skips the groups of only idle or unthrottled samples, before the bitwise test reads a row.
LOWEST_THROTTLE_BIT = min(REASON_BITS[name] for name in THROTTLE_WORDS)
# the nullable columns of gpu_samples this module reads, with their types (engine.store.schema)
CLOCK_COLUMNS = {
    "clocks_event_reasons": "BIGINT",
    "sm_clock_mhz": "REAL",
    "power_violation_ns": "BIGINT",
    "thermal_violation_ns": "BIGINT",
}

PRESENT = """
SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns
WHERE table_catalog = current_database() AND table_name IN ('gpu_samples', 'slow_episodes')
"""


class Sources(NamedTuple):
    """What a run's file holds: each clock column of gpu_samples as SQL (NULL where the file lacks it), and
    whether it has the slow_episodes table with its gpu_id."""

    reasons: str
    clock: str
    power: str
    thermal: str
    episodes: bool


def sources(run_id: str) -> Sources:
    present = state.query(run_id, PRESENT)
    samples = set(present.filter(pl.col("table") == "gpu_samples")["column"].to_list())
    episodes = set(present.filter(pl.col("table") == "slow_episodes")["column"].to_list())
    cols = [f'"{c}"' if c in samples else f"CAST(NULL AS {sql})" for c, sql in CLOCK_COLUMNS.items()]
    return Sources(*cols, episodes={"gpu_id", "start_s", "end_s", "factor"} <= episodes)


def _reason_words(bits: str) -> str:
    """SQL: the throttle reasons set in `bits` as a list of words, in bit order (an empty list for none)."""
    cases = ", ".join(
        f"CASE WHEN {bits} & {REASON_BITS[name]} <> 0 THEN '{word}' END"
        for name, word in THROTTLE_WORDS.items()
    )
    return f"list_filter([{cases}], lambda x: x IS NOT NULL)"


# A GPU's fail-slow episodes: how many, the time covered by at least one of them (overlapping episodes, a thermal
# and a power one, counted once; clipped to the run) and the largest slowdown factor among them.
EPISODES = """
    clipped AS (
        SELECT gpu_id, greatest(start_s, 0) AS start_s, least(coalesce(end_s, $end), $end) AS end_s, factor
        FROM slow_episodes WHERE gpu_id IS NOT NULL
    ), marked AS (
        SELECT *, coalesce(start_s > max(end_s) OVER (PARTITION BY gpu_id ORDER BY start_s, end_s
                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true)::INTEGER AS opens
        FROM clipped
    ), islands AS (
        SELECT *, sum(opens) OVER (PARTITION BY gpu_id ORDER BY start_s, end_s ROWS UNBOUNDED PRECEDING) AS island
        FROM marked
    ), spans AS (
        SELECT gpu_id, count(*) AS n, greatest(max(end_s) - min(start_s), 0) AS span_s, max(factor) AS factor
        FROM islands GROUP BY gpu_id, island
    ), episodes AS (
        SELECT gpu_id, sum(n)::BIGINT AS slow_episodes, sum(span_s) AS slow_s, max(factor) AS worst_factor
        FROM spans GROUP BY gpu_id
    )"""
NO_EPISODES = """
    episodes AS (
        SELECT NULL::INTEGER AS gpu_id, NULL::BIGINT AS slow_episodes, NULL::DOUBLE AS slow_s,
               NULL::DOUBLE AS worst_factor WHERE false
    )"""

PER_GPU = """
WITH hit AS MATERIALIZED (
    SELECT gpu_id, count(*) AS throttled_samples, bit_or({reasons} & {mask}) AS bits,
           min({clock}) AS lowest_clock_mhz, median({clock}) AS median_clock_mhz
    FROM gpu_samples WHERE {reasons} >= {lowest} AND {reasons} & {mask} <> 0 GROUP BY gpu_id
), counters AS (
    SELECT gpu_id, (max({power}) - min({power})) / 1e9 AS power_violation_s,
           (max({thermal}) - min({thermal})) / 1e9 AS thermal_violation_s
    FROM gpu_samples WHERE {power} IS NOT NULL OR {thermal} IS NOT NULL GROUP BY gpu_id
), {episodes}, listed AS (
    SELECT gpu_id FROM hit
    UNION SELECT gpu_id FROM counters WHERE power_violation_s > 0 OR thermal_violation_s > 0
    UNION SELECT gpu_id FROM episodes
)
SELECT l.gpu_id, h.hostname, g."index"::INTEGER AS gpu_index, {words} AS reasons,
       coalesce(hit.throttled_samples, 0) AS throttled_samples,
       hit.lowest_clock_mhz::DOUBLE AS lowest_clock_mhz, hit.median_clock_mhz::DOUBLE AS median_clock_mhz,
       c.power_violation_s, c.thermal_violation_s, coalesce(e.slow_episodes, 0) AS slow_episodes,
       e.slow_s, e.worst_factor
FROM listed l LEFT JOIN gpus g USING (gpu_id) LEFT JOIN hosts h USING (host_id) LEFT JOIN hit USING (gpu_id)
LEFT JOIN counters c USING (gpu_id) LEFT JOIN episodes e USING (gpu_id)
ORDER BY throttled_samples DESC, e.slow_s DESC NULLS LAST,
         coalesce(c.power_violation_s, 0) + coalesce(c.thermal_violation_s, 0) DESC, l.gpu_id
"""


def throttled_gpus(run_id: str, duration_s: float) -> pl.DataFrame:
    """Every GPU that was throttled (a throttle reason in one of its samples, or a violation counter that rose)
    or slow (a fail-slow episode of its own), worst first: the most throttled samples, then the most time slow,
    then the most violation time. Columns gpu_id, hostname, gpu_index, reasons (words), throttled_samples,
    lowest_clock_mhz and median_clock_mhz (over the throttled samples), power_violation_s and thermal_violation_s
    (the counters' rise over the run; null without counters), slow_episodes, slow_s (the time they cover),
    worst_factor. Reads only the throttled samples (and the counters' readings, which a simulated run lacks)."""
    src = sources(run_id)
    sql = PER_GPU.format(
        reasons=src.reasons,
        clock=src.clock,
        power=src.power,
        thermal=src.thermal,
        mask=THROTTLE_MASK,
        lowest=LOWEST_THROTTLE_BIT,
        words=_reason_words("hit.bits"),
        episodes=(EPISODES if src.episodes else NO_EPISODES).replace("$end", "?"),
    )
    params = (float(duration_s),) * EPISODES.count("$end") if src.episodes else ()
    return state.query(run_id, sql, params)


SAMPLES_OF = """
SELECT gpu_id, count({reasons}) AS samples FROM gpu_samples WHERE gpu_id IN (SELECT unnest(?)) GROUP BY gpu_id
"""


def top_gpus(run_id: str, duration_s: float, n: int) -> pl.DataFrame:
    """The worst `n` of `throttled_gpus`, each with its samples with a clocks-event reading (samples) and the
    share of them throttled (throttled_share; null for a GPU without readings). Only these GPUs' samples are
    counted: on a llama3-405b run, a count for every listed GPU would read every sample."""
    top = throttled_gpus(run_id, duration_s).head(n)
    ids = top["gpu_id"].to_list()
    sql = SAMPLES_OF.format(reasons=sources(run_id).reasons)
    counts = (
        state.query(run_id, sql, (ids,))
        if ids
        else pl.DataFrame(schema={"gpu_id": pl.Int32, "samples": pl.Int64})
    )
    top = top.join(counts, on="gpu_id", how="left", maintain_order="left")
    samples = pl.col("samples").fill_null(0)
    share = pl.when(samples > 0).then(pl.col("throttled_samples") / samples)
    return top.with_columns(samples.alias("samples"), share.alias("throttled_share")).select(
        "gpu_id",
        "hostname",
        "gpu_index",
        "reasons",
        "throttled_samples",
        "samples",
        "throttled_share",
        pl.exclude(
            "gpu_id", "hostname", "gpu_index", "reasons", "throttled_samples", "samples", "throttled_share"
        ),
    )


COVERAGE = """
SELECT count({reasons}) AS clock_samples, count({power}) + count({thermal}) AS counter_samples FROM gpu_samples
"""


def coverage(run_id: str) -> dict[str, int]:
    """The run's samples with a clocks-event reading (clock_samples) and readings of the violation counters
    (counter_samples): counts of non-null values, which DuckDB takes from its statistics where a column has no
    nulls (a simulated run's), without reading the samples."""
    src = sources(run_id)
    row = state.query(run_id, COVERAGE.format(reasons=src.reasons, power=src.power, thermal=src.thermal)).row(
        0
    )
    return {"clock_samples": int(row[0] or 0), "counter_samples": int(row[1] or 0)}


REASONS_SEEN = "SELECT coalesce(bit_or({reasons}), 0) AS bits FROM gpu_samples WHERE {reasons} <> 0"


def reasons_seen(run_id: str) -> int:
    """Every clocks-event reason bit set in any of the run's samples (reads the samples with a reason set)."""
    return int(state.query(run_id, REASONS_SEEN.format(reasons=sources(run_id).reasons))["bits"][0])


def other_reasons(bits: int) -> list[str]:
    """The reasons in `bits` that are not throttling, in words ("idle", "clocks setting", ...)."""
    return [word for name, word in OTHER_WORDS.items() if bits & REASON_BITS[name]]


TIMELINE = """
WITH hit AS MATERIALIZED (
    SELECT least(floor(t_s / ?), ? - 1)::BIGINT AS w, gpu_id, {reasons} AS bits
    FROM gpu_samples WHERE {reasons} >= {lowest} AND {reasons} & {mask} <> 0
), reasons(reason, bit, rank) AS (VALUES {values}),
counted AS (
    SELECT w, reason, count(DISTINCT gpu_id) AS gpus FROM hit JOIN reasons ON hit.bits & reasons.bit <> 0
    GROUP BY ALL
    UNION ALL
    SELECT w, 'any reason' AS reason, count(DISTINCT gpu_id) AS gpus FROM hit GROUP BY ALL
), seen AS (SELECT DISTINCT reason FROM counted)
SELECT w.range * ? AS t_s, s.reason, coalesce(c.gpus, 0) AS gpus
FROM range(0, ?) w CROSS JOIN seen s LEFT JOIN counted c ON c.w = w.range AND c.reason = s.reason
LEFT JOIN reasons r ON r.reason = s.reason
ORDER BY coalesce(r.rank, -1), t_s
"""


def throttle_timeline(run_id: str, duration_s: float, window_s: float) -> pl.DataFrame:
    """GPUs throttled in each window (a throttle reason in at least one of their samples in it), by reason and
    for any reason: columns t_s (the window's start), reason (words; 'any reason' first), gpus. Every window of
    the run has a row for each reason seen, 0 where no GPU had it."""
    src = sources(run_id)
    values = ", ".join(
        f"('{word}', {REASON_BITS[name]}, {rank})" for rank, (name, word) in enumerate(THROTTLE_WORDS.items())
    )
    sql = TIMELINE.format(reasons=src.reasons, mask=THROTTLE_MASK, lowest=LOWEST_THROTTLE_BIT, values=values)
    windows = max(math.ceil(duration_s / window_s), 1)  # a sample at the run's very end falls in the last one
    return state.query(run_id, sql, (float(window_s), windows, float(window_s), windows))
