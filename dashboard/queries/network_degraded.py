"""Network page queries for its "Degraded links" section: NIC ports of an observed run running below the fleet's
nominal rate or whose error counters rose (nic_samples, from node_exporter's infiniband collector), and a
simulated run's fail-slow episodes of cause "network" (slow_episodes: a degraded NIC or cable).

Everything aggregates in SQL, cached per run by state.query. Files written before either table existed read as
a run without it (no rows)."""

import polars as pl

from dashboard import state

NETWORK_CAUSE = "network"  # engine.sim.slow.SLOW_CAUSES: a degraded NIC or cable
# nic_samples' counters (totals, as node_exporter reads them from sysfs) and what the page calls each
COUNTERS: dict[str, str] = {
    "link_downed": "link downed",
    "symbol_errors": "symbol errors",
    "link_recoveries": "link error recoveries",
    "rcv_errors": "receive errors",
}
EPISODE_COLUMNS = {
    "hostname": pl.String,
    "start_s": pl.Float64,
    "duration_s": pl.Float64,
    "factor": pl.Float64,
    "detected_s": pl.Float64,
    "action": pl.String,
}
DEGRADED_COLUMNS = {
    "hostname": pl.String,
    "device": pl.String,
    "port": pl.Int32,
    "problem": pl.String,
    "rate_gbps": pl.Float64,
    "rise": pl.Int64,
    "first_s": pl.Float64,
    "last_s": pl.Float64,
}

_PRESENT = """
SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns
WHERE table_catalog = current_database() AND table_name IN ('nic_samples', 'slow_episodes')
"""


def _columns(run_id: str, table: str) -> set[str]:
    present = state.query(run_id, _PRESENT)
    return set(present.filter(pl.col("table") == table)["column"].to_list())


def has_nic_samples(run_id: str) -> bool:
    """Whether the run holds NIC port samples (a file without the table holds none)."""
    if not _columns(run_id, "nic_samples"):
        return False
    return int(state.query(run_id, "SELECT count(*) AS n FROM nic_samples")["n"][0]) > 0


def network_episodes(run_id: str) -> pl.DataFrame:
    """The fail-slow episodes of cause "network", first first: the host's name, start, duration (to the run's
    end where the episode outlasted it: end_s is then the run's end), factor, when detected and what was done."""
    if not {"host_id", "cause", "start_s", "end_s", "factor"} <= _columns(run_id, "slow_episodes"):
        return pl.DataFrame(schema=EPISODE_COLUMNS)
    columns = _columns(run_id, "slow_episodes")
    detected = "e.detected_s" if "detected_s" in columns else "CAST(NULL AS DOUBLE)"
    action = "e.action" if "action" in columns else "CAST(NULL AS VARCHAR)"
    frame = state.query(
        run_id,
        f"""
        SELECT coalesce(h.hostname, 'host ' || e.host_id) AS hostname, e.start_s,
               e.end_s - e.start_s AS duration_s, e.factor, {detected} AS detected_s, {action} AS action
        FROM slow_episodes e LEFT JOIN hosts h USING (host_id)
        WHERE e.cause = ? ORDER BY e.start_s, hostname""",  # noqa: S608 (fixed SQL only)
        (NETWORK_CAUSE,),
    )
    return frame.cast(EPISODE_COLUMNS)


def nominal_rate(run_id: str) -> float | None:
    """The fleet's nominal port rate (Gbps): the most common latest rate among its ports (the larger on a tie);
    None without NIC samples."""
    frame = state.query(
        run_id,
        """
        WITH latest AS (
            SELECT arg_max(rate_gbps, t_s) AS rate FROM nic_samples WHERE rate_gbps IS NOT NULL
            GROUP BY host_id, device, port)
        SELECT rate, count(*) AS ports FROM latest GROUP BY rate ORDER BY ports DESC, rate DESC LIMIT 1""",
    )
    return None if frame.is_empty() else float(frame["rate"][0])


def degraded_ports(run_id: str, nominal: float | None) -> pl.DataFrame:
    """One row per trouble of a port: its latest rate below `nominal` (problem "rate below nominal", from the
    first sample at that rate), or a counter that rose between samples (problem: the counter's words, `rise` the
    sum of its increases, a reset not counted, first_s and last_s the samples that showed the first and last
    increase). Worst first: rate, then the largest rise."""
    rises = " UNION ALL ".join(
        f"""SELECT host_id, device, port, '{words}' AS problem, NULL::DOUBLE AS rate_gbps,
                   sum(d_{c})::BIGINT AS rise, min(t_s) AS first_s, max(t_s) AS last_s
            FROM steps WHERE d_{c} > 0 GROUP BY ALL"""  # noqa: S608 (names from COUNTERS)
        for c, words in COUNTERS.items()
    )
    deltas = ", ".join(
        f"{c} - lag({c}) OVER (PARTITION BY host_id, device, port ORDER BY t_s) AS d_{c}" for c in COUNTERS
    )
    frame = state.query(
        run_id,
        f"""
        WITH steps AS (SELECT host_id, device, port, t_s, rate_gbps, {deltas} FROM nic_samples),
        latest AS (
            SELECT host_id, device, port, arg_max(rate_gbps, t_s) AS rate FROM nic_samples
            WHERE rate_gbps IS NOT NULL GROUP BY ALL),
        slow AS (
            SELECT l.host_id, l.device, l.port, 'rate below nominal' AS problem, l.rate AS rate_gbps,
                   NULL::BIGINT AS rise, min(s.t_s) AS first_s, max(s.t_s) AS last_s
            FROM latest l JOIN nic_samples s USING (host_id, device, port)
            WHERE l.rate < ? AND s.rate_gbps = l.rate GROUP BY ALL),
        trouble AS (SELECT * FROM slow UNION ALL {rises})
        SELECT coalesce(h.hostname, 'host ' || t.host_id) AS hostname, t.device, t.port, t.problem,
               t.rate_gbps, t.rise, t.first_s, t.last_s
        FROM trouble t LEFT JOIN hosts h USING (host_id)
        ORDER BY t.problem <> 'rate below nominal', t.rise DESC NULLS FIRST, hostname, t.device, t.port,
                 t.problem""",  # noqa: S608 (fixed SQL only: counter names from COUNTERS)
        (float("-inf") if nominal is None else nominal,),
    )
    return frame.cast(DEGRADED_COLUMNS)
