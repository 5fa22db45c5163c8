"""The lemon rule, defined once: a host with `repair.lemon_failures` repair-sending incidents within
`repair.lemon_window` is a lemon (a repeat offender that a repair did not fix).

Which incidents count: unplanned ones on a host whose cause sends the host to repair in the simulator (every
scope but "job", engine.sim.failures.SCOPE; engine.sim.simulate calls Repairs.start for those, and
engine.sim.repair.Repairs._is_lemon counts them). A window is closed at both ends, as the simulator counts it
(`now - t <= window`).

Two readings of the same rule share that definition:

    lemons_query(failures, window_s)          every host the rule flags at some point of the run (the GPUs page,
                                              dashboard.queries.gpus.lemons; `lemons` runs it on a connection)
    lemons_at(con, failures, window_s, now_s) the hosts it flags at `now_s`: `failures` or more such incidents in
                                              the window ending then (engine.act.recommend's LEMON rule), with
                                              those incidents

The simulator also restarts its count once a host is flagged; these readings do not, so they can only name more
flags, never fewer hosts. The engine never imports the dashboard; the dashboard takes its SQL from here.
"""

import duckdb
import polars as pl

from engine.errors import GoodputError
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME
from engine.sim.failures import SCOPE

# The defaults of repair.lemon_failures and repair.lemon_window (engine.scenario.keys).
LEMON_FAILURES: int = KEY_BY_NAME["repair.lemon_failures"].default
LEMON_WINDOW: str = KEY_BY_NAME["repair.lemon_window"].default

# Causes that send a host to repair in the simulator: only those count towards a lemon.
REPAIR_CAUSES = sorted(cause for cause, scope in SCOPE.items() if scope != "job")

# An incident that counts towards the rule (parameter: REPAIR_CAUSES).
COUNTS = "NOT coalesce(planned, false) AND host_id IS NOT NULL AND list_contains(?, cause)"

# Each counted incident with the count of its host's counted incidents in the window that ends at it
# (parameters: the window in seconds, REPAIR_CAUSES).
IN_WINDOW = f"""
SELECT host_id, t_s, cause, count(*) OVER (PARTITION BY host_id ORDER BY t_s
           RANGE BETWEEN ? PRECEDING AND CURRENT ROW) AS in_window
FROM incidents
WHERE {COUNTS}
"""  # noqa: S608 (only constant SQL formatted in)

# Hosts flagged at some point of the run (parameters: window, REPAIR_CAUSES, failures, failures).
LEMONS = f"""
WITH hw AS ({IN_WINDOW})
SELECT hw.host_id, h.hostname, h.rack_id, count(*) AS failures, max(in_window) AS most_in_window,
       min(t_s) FILTER (WHERE in_window >= ?) AS flagged_s,
       list(DISTINCT cause ORDER BY cause) AS causes
FROM hw JOIN hosts h USING (host_id)
GROUP BY ALL HAVING max(in_window) >= ?
ORDER BY flagged_s, hw.host_id"""  # noqa: S608 (only constant SQL formatted in)

# The counted incidents of the hosts flagged at a moment: those in the window ending then (parameters:
# REPAIR_CAUSES, now_s - window, now_s, failures).
LEMONS_AT = f"""
WITH counted AS (
    SELECT incident_id, t_s, cause, xid, host_id, gpu_id FROM incidents
    WHERE {COUNTS} AND t_s >= ? AND t_s <= ?
), flagged AS (SELECT host_id FROM counted GROUP BY host_id HAVING count(*) >= ?)
SELECT c.host_id, h.hostname, c.incident_id, c.t_s, c.cause, c.xid, c.gpu_id, g."index" AS gpu_index
FROM counted c JOIN flagged USING (host_id) JOIN hosts h USING (host_id) LEFT JOIN gpus g ON g.gpu_id = c.gpu_id
ORDER BY h.hostname, c.t_s, c.incident_id"""  # noqa: S608 (only constant SQL formatted in)


def lemons_query(failures: int, window_s: float) -> tuple[str, tuple]:
    """The SQL and parameters of every host the rule flags over the whole run: `flagged_s` is the first incident
    that completed `failures` within `window_s`, `most_in_window` the largest count in one window. A handful of
    hosts even at 24,576 GPUs (the figure lemon_rule_hosts)."""
    return LEMONS, (window_s, REPAIR_CAUSES, failures, failures)


def lemons(con: duckdb.DuckDBPyConnection, failures: int, window_s: float) -> pl.DataFrame:
    """`lemons_query` on a run's connection."""
    sql, params = lemons_query(failures, window_s)
    return con.sql(sql, params=list(params)).pl()


def lemons_at(con: duckdb.DuckDBPyConnection, failures: int, window_s: float, now_s: float) -> pl.DataFrame:
    """The hosts the rule flags at `now_s` (at least `failures` counted incidents in [now_s - window_s, now_s]),
    one row per such incident: host_id, hostname, incident_id, t_s, cause, xid, gpu_id, gpu_index."""
    params = [REPAIR_CAUSES, now_s - window_s, now_s, failures]
    return con.sql(LEMONS_AT, params=params).pl()


def lemon_rule(scenario: dict) -> tuple[int, float]:
    """A stored scenario's rule (repair.lemon_failures, repair.lemon_window in seconds), the defaults where the
    scenario lacks them or holds something unreadable (an observed run's scenario has no repair section)."""
    repair = scenario.get("repair", {}) if isinstance(scenario, dict) else {}
    repair = repair if isinstance(repair, dict) else {}
    failures = repair.get("lemon_failures", LEMON_FAILURES)
    if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
        failures = LEMON_FAILURES
    try:  # an earlier Goodput stored bare seconds (engine.scenario.durations)
        window = parse_duration(
            repair.get("lemon_window", LEMON_WINDOW), "repair.lemon_window", bare_seconds=True
        )
    except (GoodputError, TypeError, AttributeError):
        window = parse_duration(LEMON_WINDOW)
    return int(failures), window
