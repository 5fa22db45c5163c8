"""One run at one moment, as every rule reads it: its DuckDB connection, its hosts with their state then, the jobs
running then, the horizon and the price of a restart; and how a rule turns a host's finding into a drain.

Nodes are the run's hostnames (Slurm's node names in an observed run). `now_s` is in seconds since the run's start.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, timedelta
from urllib.parse import quote

import duckdb
import polars as pl

from engine.act.pricing import Restart, resume_price
from engine.act.records import Action, Evidence, Recommendation, Rule, recommendation_id
from engine.act.settings import ActionSettings
from engine.act.words import n
from engine.store import RunInfo
from engine.store.run import start_known
from engine.store.schema import IN_SERVICE_STATES
from engine.units import SECONDS_PER_HOUR

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


def query(con: duckdb.DuckDBPyConnection, sql: str, **params: object) -> pl.DataFrame:
    """`sql` with `$name` parameters bound from `params` (only those it names)."""
    used = set(re.findall(r"\$(\w+)", sql))
    return con.sql(sql, params={k: v for k, v in params.items() if k in used} or None).pl()


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

    def query(self, sql: str, **params: object) -> pl.DataFrame:
        """`sql` on this run, `$now` bound to now_s unless `params` give it."""
        return query(self.con, sql, **{"now": self.now_s, **params})

    @property
    def horizon_s(self) -> float:
        return self.horizon_h * SECONDS_PER_HOUR

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def observed(self) -> bool:
        """A run observed on a real cluster (`goodput watch`, `goodput ingest`), not simulated nor replayed."""
        return self.info.kind == "ingest"

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

    def hosts_of(self, frame: pl.DataFrame) -> list[tuple[dict, pl.DataFrame]]:
        """(the host's row of self.hosts, its rows of `frame`) for each host of `frame`, by hostname."""
        if frame.is_empty():
            return []
        hosts = {row["host_id"]: row for row in self.hosts.iter_rows(named=True)}
        groups = frame.partition_by("host_id", as_dict=True, maintain_order=True)
        pairs = [(hosts[key[0]], rows) for key, rows in groups.items()]
        return sorted(pairs, key=lambda pair: pair[0]["hostname"])

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
                + ", ".join(f"{job} ({n(gpus)} GPUs)" for job, gpus in jobs)
                + f" at {n(sum(g for _, g in jobs))} GPUs x ({self.restart.words()}) = {acting:,.2f} GPU-h"
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

    def resume(
        self, host: dict, since: str, reason: str, evidence: list[Evidence], extra: dict
    ) -> Recommendation:
        """A resume of one host, priced by pricing.resume_price; `since` names the finding (the repair, the
        moment it went out of service), `extra` the sign's own figures."""
        price = resume_price(self, host)
        nodes = (host["hostname"],)
        return Recommendation(
            id=recommendation_id(Action.RESUME, nodes, None, Rule.REPAIRED, since),
            action=Action.RESUME,
            nodes=nodes,
            reason=reason,
            rule=Rule.REPAIRED,
            run_id=self.run_id,
            evidence=tuple(evidence),
            cost_if_acting_gpu_hours=price.acting,
            cost_if_not_gpu_hours=price.not_acting,
            pricing=price.words,
            extra={**self.common_extra(), **price.extra, **extra},
        )

    def common_extra(self) -> dict:
        return {
            "now_s": self.now_s,
            "horizon_hours": self.horizon_h,
            "restart_overhead_s": self.restart.overhead_s,
            "checkpoint_interval_s": self.restart.checkpoint_interval_s,
        }
