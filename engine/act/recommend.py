"""The rules: what a run's data says should be drained, resumed or requeued at a moment, and what acting and not
acting cost, in GPU-hours of the cluster.

    recommend(store, run_id, settings, now_s=None) -> [Recommendation, ...]   most worth doing first

`now_s` is the moment looked at, in seconds since the run's start (default: the run's end, which for a run kept
current by `goodput watch` is its latest data). Nodes are the run's hostnames (Slurm's node names in an observed
run). Each rule is one function named after its records.Rule; each reads the run through DuckDB (the big
telemetry table only aggregated, for a few GPUs):

    fatal_xid   DRAIN   a host in service (healthy, running, spare) with an incident carrying a fatal XID
                        (engine.reference.XIDS) that is not repaired at now_s and came after the host's last
                        return to service (a drain and return since has dealt with it)
    lemon       DRAIN   a host in service that the lemon rule (engine.analysis.lemons) flags at now_s:
                        repair.lemon_failures repair-sending incidents in the repair.lemon_window ending at now_s
    slow_host   DRAIN   a host in service with a fail-slow episode open at now_s (slow_episodes)
    repaired    RESUME  a host drained or down (Slurm's DRAINED is `down`, DRAINING `draining`) whose incidents are
                        all repaired by now_s, out of service since before that repair, with no fatal XID and no new
                        double-bit ECC error since, and which the lemon rule does not flag
    stuck_job   REQUEUE a job running at now_s on a host that is out of service: down, diagnosing, in repair,
                        burn-in or retired, or draining with an incident still open (a drain for a fault; a
                        draining host otherwise finishes its jobs, which is what a drain is)

One host gets at most one drain: a fatal XID's before a lemon's, a lemon's before a slow host's.

Pricing (H = settings.horizon_hours, the time to the next maintenance window; GPU-hours of the cluster):

    restart_cost(job) = job GPUs x (training.restart_overhead + training.checkpoint_interval / 2) / 3600
        a restart, and on average half a checkpoint interval of work lost (the run's scenario, else the
        defaults of engine.scenario.keys)
    acting on a node (drain) = sum of restart_cost(job) of the jobs running on it at now_s (0 on an idle node)

    fatal_xid  not acting = p x restart cost of the node's jobs; p = the share of the run's hosts with a fatal
               XID at least H before now_s that had another unplanned incident within H of it, where at least
               MIN_REPEAT_HOSTS such hosts exist; otherwise p = 1 (a fatal XID is taken to recur)
    lemon      not acting = min(k / lemon_window x H, 1) x restart cost of the node's jobs (k: its incidents in
               the window; capped at one: the first failure takes the host out of the job)
    slow_host  not acting = sum over the node's jobs of job GPUs x (1 - 1/factor) x H (a synchronous job runs at
               its slowest host's pace; factor: the largest of its open episodes)
    repaired   acting = p x restart_cost(the largest job running at now_s, else one job on the host's GPUs),
               p = min(the run's incidents per host-hour up to now_s x H, 1); not acting = host GPUs x H
               (capacity kept idle)
    stuck_job  acting = restart_cost(job); not acting = job GPUs x H (its allocation wasted while it hangs)

Every figure inferred from the run (rates, the share of repeats) carries its evidence in `extra` (n, window).
A recommendation's id (records.recommendation_id) is fixed by its action, nodes, job, rule and the finding
(the latest incident, the episode's start, the repaired incident, the job's attempt), so the rules can run again
and again without repeating what was decided, and a new finding gets a new id.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, timedelta
from urllib.parse import quote

import duckdb
import polars as pl

from engine.act.records import Action, Evidence, Recommendation, Rule, recommendation_id
from engine.act.settings import ActionSettings
from engine.analysis.lemons import lemon_rule, lemons_at
from engine.errors import GoodputError
from engine.reference import XID_BY_CODE, XIDS
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME
from engine.store import RunInfo, Store, file_columns
from engine.store.run import start_known
from engine.store.schema import IN_SERVICE_STATES, OUT_OF_SERVICE_STATES

FATAL_XIDS = [x.xid for x in XIDS if x.fatal]  # as engine.ingest.observed.FATAL_XIDS
RESUMABLE_STATES = ["down", "draining"]  # drained or down: what `scontrol update State=RESUME` brings back
HELD_STATES = [s for s in OUT_OF_SERVICE_STATES if s != "draining"]  # a job on one of these hangs
MIN_REPEAT_HOSTS = 5  # hosts with a fatal XID needed to measure how often one recurs; fewer: p = 1
FAIL_SLOW_TAB = "Fail-slow episodes"  # the Incidents page's tab label (dashboard.incidents.tabs.FAIL_SLOW)
RULE_ORDER = {Rule.FATAL_XID: 0, Rule.LEMON: 1, Rule.SLOW_HOST: 2, Rule.REPAIRED: 3, Rule.STUCK_JOB: 4}
SECONDS_PER_HOUR = 3600.0

# Each host's state at $now: the interval covering it, the one starting last where two meet at $now (a run's
# last intervals end at its end, which is the default $now).
STATE_AT = """
SELECT host_id, arg_max(state, start_s) AS state FROM host_states
WHERE start_s <= $now AND coalesce(end_s, 'infinity'::DOUBLE) >= $now GROUP BY host_id
"""
# Jobs running at $now, one row per job and host (an attempt still running at a run's end ends there with
# end_reason end_of_run, as simulate, replay and watch write it).
JOBS_NOW = """
SELECT a.job_id, coalesce(j.gpus, 0.0) AS gpus, a.attempt, a.start_s, unnest(a.hosts) AS host_id
FROM job_attempts a JOIN jobs j USING (job_id)
WHERE a.start_s <= $now
  AND (a.end_s IS NULL OR a.end_s > $now OR (a.end_reason = 'end_of_run' AND a.end_s >= $now))
"""
HOSTS = """
SELECT h.host_id, h.hostname, s.state, (SELECT count(*) FROM gpus g WHERE g.host_id = h.host_id) AS host_gpus
FROM hosts h LEFT JOIN state_at s USING (host_id)
"""


def recommend(
    store: Store, run_id: str, settings: ActionSettings, now_s: float | None = None
) -> list[Recommendation]:
    """What to drain, resume and requeue at `now_s` (default: the run's end), most worth doing first: sorted by
    cost_if_not_gpu_hours - cost_if_acting_gpu_hours, largest first."""
    info = store.info(run_id)
    now = float(info.duration_s if now_s is None else now_s)
    with store.connect(run_id) as con:
        ctx = Context.read(con, info, settings, now)
        drains = _one_drain_a_host([*fatal_xid(ctx), *lemon(ctx), *slow_host(ctx)])
        found = [*drains, *repaired(ctx), *stuck_job(ctx)]
    return sorted(found, key=_worth)


def _worth(rec: Recommendation) -> tuple:
    return (
        -(rec.cost_if_not_gpu_hours - rec.cost_if_acting_gpu_hours),
        RULE_ORDER[rec.rule],
        rec.nodes,
        rec.id,
    )


def _one_drain_a_host(drains: list[Recommendation]) -> list[Recommendation]:
    """The first drain of each host, in rule order (the lists come in RULE_ORDER)."""
    seen: set[str] = set()
    kept = []
    for rec in drains:
        if seen.isdisjoint(rec.nodes):
            kept.append(rec)
        seen.update(rec.nodes)
    return kept


# ----- what every rule reads ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Restart:
    """What restarting a job costs: the run's training.restart_overhead and half its checkpoint interval."""

    overhead_s: float
    checkpoint_interval_s: float

    @classmethod
    def of(cls, scenario: dict) -> "Restart":
        return cls(
            _scenario_seconds(scenario, "training.restart_overhead"),
            _scenario_seconds(scenario, "training.checkpoint_interval"),
        )

    @property
    def seconds(self) -> float:
        return self.overhead_s + self.checkpoint_interval_s / 2

    def cost(self, gpus: float) -> float:
        """GPU-hours lost restarting a job of `gpus` GPUs."""
        return gpus * self.seconds / SECONDS_PER_HOUR

    def words(self) -> str:
        return (
            f"{_n(self.overhead_s)} s restart + {_n(self.checkpoint_interval_s / 2)} s"
            f" (half a {_n(self.checkpoint_interval_s)} s checkpoint interval) of work lost"
        )


def _scenario_seconds(scenario: dict, key: str) -> float:
    """A duration key of a stored scenario (nested, as runs.scenario holds it), its default where absent or
    unreadable (an observed run's scenario has no training section)."""
    section, name = key.split(".")
    node = scenario.get(section, {}) if isinstance(scenario, dict) else {}
    value = node.get(name) if isinstance(node, dict) else None
    if value is not None:
        try:
            return parse_duration(value, key, bare_seconds=True)  # an earlier Goodput stored bare seconds
        except (GoodputError, TypeError):
            pass
    return parse_duration(KEY_BY_NAME[key].default, key)


@dataclass
class Context:
    """One run at one moment: its connection, hosts with their state and the jobs running then."""

    con: duckdb.DuckDBPyConnection
    info: RunInfo
    now_s: float
    horizon_h: float
    restart: Restart
    hosts: pl.DataFrame  # host_id, hostname, state (null: none known at now_s), host_gpus
    jobs_now: pl.DataFrame  # job_id, gpus, attempt, start_s, host_id

    @classmethod
    def read(
        cls, con: duckdb.DuckDBPyConnection, info: RunInfo, settings: ActionSettings, now_s: float
    ) -> "Context":
        hosts = query(con, f"WITH state_at AS ({STATE_AT}) {HOSTS} ORDER BY host_id", now=now_s)
        jobs = query(con, f"{JOBS_NOW} ORDER BY job_id, host_id", now=now_s)
        return cls(con, info, now_s, settings.horizon_hours, Restart.of(info.scenario), hosts, jobs)

    @property
    def horizon_s(self) -> float:
        return self.horizon_h * SECONDS_PER_HOUR

    @property
    def run_id(self) -> str:
        return self.info.run_id

    def in_service(self) -> pl.DataFrame:
        return self.hosts.filter(pl.col("state").is_in(list(IN_SERVICE_STATES)))

    def jobs_on(self, host_id: int) -> list[tuple[str, float]]:
        """(job_id, GPUs) of the jobs running on `host_id` at now_s, by job id."""
        rows = self.jobs_now.filter(pl.col("host_id") == host_id).unique("job_id").sort("job_id")
        return list(zip(rows["job_id"].to_list(), rows["gpus"].to_list(), strict=True))

    def when(self, t_s: float) -> str:
        """`t_s` in words: the wall-clock time where the run's start is known, else hours into the run."""
        started = self.info.started_at
        if start_known(started):
            at = (started if started.tzinfo else started.replace(tzinfo=UTC)).astimezone(UTC)
            return f"{at + timedelta(seconds=t_s):%Y-%m-%d %H:%M} UTC"
        return f"{t_s / SECONDS_PER_HOUR:.1f} h into the run"

    def link(self, page: str, **params: object) -> str:
        """A dashboard link to `page` showing this run (`?run=`, dashboard.state.RUN_PARAM) and `params`."""
        pairs = [("run", self.run_id), *params.items()]
        return page + "?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in pairs)

    def incident_link(self, incident_id: int) -> str:
        return self.link("incidents", incident=int(incident_id))

    def drain(
        self,
        rule: Rule,
        host: dict,
        since: str,
        reason: str,
        evidence: list[Evidence],
        not_acting: Callable[[float, list[tuple[str, float]]], tuple[float, str]],
        extra: dict,
    ) -> Recommendation:
        """A drain of one host: acting costs the restarts of the jobs on it; `not_acting(acting cost, jobs)`
        gives the cost of leaving it and its words."""
        jobs = self.jobs_on(host["host_id"])
        acting = sum(self.restart.cost(gpus) for _, gpus in jobs)
        cost_not, not_words = not_acting(acting, jobs)
        if jobs:
            acting_words = (
                "acting: draining restarts "
                + ", ".join(f"{job} ({_n(gpus)} GPUs)" for job, gpus in jobs)
                + f" at {_n(sum(g for _, g in jobs))} GPUs x ({self.restart.words()}) = {acting:,.2f} GPU-h"
            )
        else:
            acting_words = "acting: no job runs on the host now, so draining it costs 0 GPU-h"
        nodes = (host["hostname"],)
        return Recommendation(
            id=recommendation_id(Action.DRAIN, nodes, None, rule, since),
            action=Action.DRAIN,
            nodes=nodes,
            reason=reason,
            rule=rule,
            run_id=self.run_id,
            evidence=tuple(evidence),
            cost_if_acting_gpu_hours=acting,
            cost_if_not_gpu_hours=cost_not,
            jobs_hit=tuple(job for job, _ in jobs),
            gpus_hit=round(sum(gpus for _, gpus in jobs)),
            pricing=f"{acting_words}; not acting: {not_words}",
            extra={**self.common_extra(), **extra},
        )

    def common_extra(self) -> dict:
        return {
            "now_s": self.now_s,
            "horizon_hours": self.horizon_h,
            "restart_overhead_s": self.restart.overhead_s,
            "checkpoint_interval_s": self.restart.checkpoint_interval_s,
        }


def query(con: duckdb.DuckDBPyConnection, sql: str, **params: object) -> pl.DataFrame:
    """`sql` with `$name` parameters bound from `params` (only those it names)."""
    used = set(re.findall(r"\$(\w+)", sql))
    return con.sql(sql, params={k: v for k, v in params.items() if k in used} or None).pl()


def _n(x: float) -> str:
    """A number for a sentence: whole numbers without decimals, others to two."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"


def _xid_words(xid: int | None, gpu_index: int | None) -> str:
    """`XID 79 (GPU not reachable on PCIe) on GPU 3`: the catalogue's meaning of the code (engine.reference)."""
    if xid is None:
        return ""
    known = XID_BY_CODE.get(int(xid))
    words = f"XID {int(xid)}" + (f" ({known.meaning})" if known else "")
    return words + (f" on GPU {int(gpu_index)}" if gpu_index is not None else "")


def _incident_words(r: dict) -> str:
    """`faulty_gpu (XID 79 (GPU not reachable on PCIe) on GPU 3), incident 12`: an incident row in words."""
    xid = f" ({_xid_words(r['xid'], r['gpu_index'])})" if r["xid"] is not None else ""
    return f"{r['cause']}{xid}, incident {r['incident_id']}"


def _hosts_of(frame: pl.DataFrame, ctx: Context) -> list[tuple[dict, pl.DataFrame]]:
    """(the host's row of ctx.hosts, its rows of `frame`) for each host of `frame`, by hostname."""
    if frame.is_empty():
        return []
    hosts = {row["host_id"]: row for row in ctx.hosts.iter_rows(named=True)}
    groups = frame.partition_by("host_id", as_dict=True, maintain_order=True)
    pairs = [(hosts[key[0]], rows) for key, rows in groups.items()]
    return sorted(pairs, key=lambda pair: pair[0]["hostname"])


# ----- the rules -------------------------------------------------------------------------------------------

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
            f" again within {_n(ctx.horizon_h)} h ({stats['repeated_n']})"
        )
    else:
        p_words = (
            f"p = 1: fewer than {MIN_REPEAT_HOSTS} hosts with a fatal XID to measure how often one recurs"
            f" ({stats['repeat_hosts_n']}), so it is taken to recur"
        )
    found = []
    for host, incidents in _hosts_of(rows, ctx):
        evidence = [
            Evidence(
                "incident",
                f"{_xid_words(r['xid'], r['gpu_index'])}, incident {r['incident_id']}",
                r["t_s"],
                ctx.incident_link(r["incident_id"]),
            )
            for r in incidents.iter_rows(named=True)
        ]
        latest = incidents.row(-1, named=True)
        reason = (
            f"fatal {_xid_words(latest['xid'], latest['gpu_index'])} at {ctx.when(latest['t_s'])},"
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
    for host, incidents in _hosts_of(rows, ctx):
        k = incidents.height
        rate_per_h = k / window_s * SECONDS_PER_HOUR
        expected = min(rate_per_h * ctx.horizon_h, 1.0)
        evidence = [
            Evidence("incident", _incident_words(r), r["t_s"], ctx.incident_link(r["incident_id"]))
            for r in incidents.iter_rows(named=True)
        ]
        latest = incidents.row(-1, named=True)
        reason = (
            f"lemon: {k} repair-sending incidents within {_n(window_s / SECONDS_PER_HOUR)} h"
            f" (the rule: {failures}), the last at {ctx.when(latest['t_s'])}"
        )
        rate_words = (
            f"its {k} incidents in {_n(window_s / SECONDS_PER_HOUR)} h"
            f" x {_n(ctx.horizon_h)} h = {k / window_s * ctx.horizon_s:.3f} expected failures"
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
    for host, episodes in _hosts_of(rows, ctx):
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
                f"its jobs' {_n(gpus)} GPUs x (1 - 1/{factor:g}) x {_n(ctx.horizon_h)} h = {cost:,.2f} GPU-h"
                " (a synchronous job runs at its slowest host's pace)"
            )

        extra = {"factor": factor, "waste": waste, "episodes_n": episodes.height, "since_s": first["start_s"]}
        found.append(
            ctx.drain(
                Rule.SLOW_HOST, host, f"slow since {first['start_s']!r}", reason, evidence, not_acting, extra
            )
        )
    return found


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
HOST_RATE = """
SELECT count(*) AS incidents FROM incidents
WHERE NOT coalesce(planned, false) AND host_id IS NOT NULL AND t_s <= $now
"""


def repaired(ctx: Context) -> list[Recommendation]:
    """RESUME a drained or down host whose incidents are all repaired, with nothing wrong seen since."""
    down = ctx.hosts.filter(pl.col("state").is_in(RESUMABLE_STATES))["host_id"].to_list()
    if not down:
        return []
    rows = query(ctx.con, REPAIRED_HOSTS, now=ctx.now_s, serving=list(IN_SERVICE_STATES), hosts=down)
    failures, window_s = lemon_rule(ctx.info.scenario)
    lemons = set(lemons_at(ctx.con, failures, window_s, ctx.now_s)["host_id"].to_list())
    rows = rows.filter(~pl.col("host_id").is_in(list(lemons)))
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

    n_incidents = int(query(ctx.con, HOST_RATE, now=ctx.now_s)["incidents"][0])
    n_hosts = ctx.hosts.height
    exposure_h = n_hosts * ctx.now_s / SECONDS_PER_HOUR
    rate = n_incidents / exposure_h if exposure_h > 0 else 0.0
    p = min(rate * ctx.horizon_h, 1.0)
    largest = ctx.jobs_now.unique("job_id").sort(["gpus", "job_id"], descending=[True, False])
    found = []
    for host, row in _hosts_of(rows.filter(~pl.col("host_id").is_in(list(bad))), ctx):
        r = row.row(0, named=True)
        if largest.height:
            job, gpus = largest["job_id"][0], float(largest["gpus"][0])
            job_words = f"the largest job running now, {job} ({_n(gpus)} GPUs)"
        else:
            job, gpus = None, float(host["host_gpus"])
            job_words = f"a job on the host's {_n(gpus)} GPUs (no job runs now)"
        restart = ctx.restart.cost(gpus)
        acting = p * restart
        not_acting = float(host["host_gpus"]) * ctx.horizon_h
        checked = samples.get(r["host_id"], 0)
        evidence = (
            Evidence(
                "incident",
                f"{_incident_words(r)}, repaired at {ctx.when(r['repaired_s'])}; since then no"
                " incident, no fatal XID and no new double-bit ECC error"
                + (f" ({checked:,} GPU samples read)" if checked else " (no GPU samples to read)"),
                r["repaired_s"],
                ctx.incident_link(r["incident_id"]),
            ),
            Evidence(
                "host_state", f"{host['hostname']} is {host['state']} at {ctx.when(ctx.now_s)}", ctx.now_s
            ),
        )
        nodes = (host["hostname"],)
        since_key = f"incident {r['incident_id']} repaired {r['repaired_s']!r}"
        found.append(
            Recommendation(
                id=recommendation_id(Action.RESUME, nodes, None, Rule.REPAIRED, since_key),
                action=Action.RESUME,
                nodes=nodes,
                reason=f"repaired at {ctx.when(r['repaired_s'])} (incident {r['incident_id']}), clean since",
                rule=Rule.REPAIRED,
                run_id=ctx.run_id,
                evidence=evidence,
                cost_if_acting_gpu_hours=acting,
                cost_if_not_gpu_hours=not_acting,
                pricing=(
                    f"acting: p = min({rate:.5f} incidents per host-hour (the run's {n_incidents} over"
                    f" {n_hosts} hosts x {_n(ctx.now_s / SECONDS_PER_HOUR)} h) x {_n(ctx.horizon_h)} h, 1) ="
                    f" {p:.4f} that it fails again, restarting {job_words}: {p:.4f} x {restart:,.2f} GPU-h"
                    f" ({ctx.restart.words()}) = {acting:,.2f} GPU-h; not acting: its {_n(host['host_gpus'])}"
                    f" GPUs idle for {_n(ctx.horizon_h)} h = {not_acting:,.2f} GPU-h"
                ),
                extra={
                    **ctx.common_extra(),
                    "p_recur": p,
                    "rate_per_host_hour": rate,
                    "incidents_n": n_incidents,
                    "hosts_n": n_hosts,
                    "window_s": ctx.now_s,
                    "job_assumed": job,
                    "job_gpus_assumed": gpus,
                    "repaired_s": r["repaired_s"],
                    "gpu_samples_read": checked,
                },
            )
        )
    return found


STUCK = f"""
WITH state_at AS ({STATE_AT}), jobs_now AS ({JOBS_NOW}),
open_incidents AS (
    SELECT host_id, min(incident_id) AS incident_id FROM incidents
    WHERE host_id IS NOT NULL AND t_s <= $now AND (repaired_s IS NULL OR repaired_s > $now) GROUP BY host_id
)
SELECT j.job_id, j.gpus, j.attempt, j.start_s, j.host_id, h.hostname, s.state, o.incident_id
FROM jobs_now j JOIN state_at s USING (host_id) JOIN hosts h USING (host_id)
LEFT JOIN open_incidents o USING (host_id)
WHERE list_contains($held, s.state) OR (s.state = 'draining' AND o.incident_id IS NOT NULL)
ORDER BY j.job_id, h.hostname
"""  # noqa: S608 (only constant SQL formatted in)


def stuck_job(ctx: Context) -> list[Recommendation]:
    """REQUEUE a job running at now_s on a host that is out of service (a draining one only for a fault)."""
    rows = query(ctx.con, STUCK, now=ctx.now_s, held=HELD_STATES)
    if rows.is_empty():
        return []
    found = []
    for (job_id,), hosts in rows.partition_by("job_id", as_dict=True, maintain_order=True).items():
        first = hosts.row(0, named=True)
        gpus, attempt = float(first["gpus"]), int(first["attempt"])
        nodes = tuple(hosts["hostname"].to_list())
        restart = ctx.restart.cost(gpus)
        wasted = gpus * ctx.horizon_h
        evidence = [
            Evidence(
                "job",
                f"job {job_id} ({_n(gpus)} GPUs), attempt {attempt}, running since {ctx.when(first['start_s'])}",
                first["start_s"],
                ctx.link("jobs", job=job_id),
            )
        ]
        for r in hosts.iter_rows(named=True):
            fault = f" with incident {r['incident_id']} open" if r["incident_id"] is not None else ""
            evidence.append(
                Evidence(
                    "host_state",
                    f"{r['hostname']} is {r['state']}{fault} at {ctx.when(ctx.now_s)}",
                    ctx.now_s,
                    ctx.incident_link(r["incident_id"]) if r["incident_id"] is not None else "",
                )
            )
        found.append(
            Recommendation(
                id=recommendation_id(Action.REQUEUE, nodes, job_id, Rule.STUCK_JOB, f"attempt {attempt}"),
                action=Action.REQUEUE,
                nodes=nodes,
                reason=f"job {job_id} still holds {', '.join(nodes)}, out of service",
                rule=Rule.STUCK_JOB,
                run_id=ctx.run_id,
                evidence=tuple(evidence),
                cost_if_acting_gpu_hours=restart,
                cost_if_not_gpu_hours=wasted,
                job_id=job_id,
                jobs_hit=(job_id,),
                gpus_hit=round(gpus),
                pricing=(
                    f"acting: requeueing restarts {job_id} at {_n(gpus)} GPUs x ({ctx.restart.words()})"
                    f" = {restart:,.2f} GPU-h; not acting: its {_n(gpus)} GPUs held while it hangs for"
                    f" {_n(ctx.horizon_h)} h = {wasted:,.2f} GPU-h"
                ),
                extra={**ctx.common_extra(), "attempt": attempt},
            )
        )
    return found
