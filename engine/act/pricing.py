"""What acting and not acting cost, in GPU-hours of the cluster: the formulas every rule prices with.

H = settings.horizon_hours, the time to the next maintenance window:

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
               (capacity kept idle); the same for either sign of a host back from repair
    stuck_job  acting = restart_cost(job); not acting = job GPUs x H (its allocation wasted while it hangs)

Every figure inferred from the run (rates, the share of repeats) carries its evidence in the recommendation's
`extra` (n, window). Restart and resume_price are here; each drain rule's not-acting formula sits beside its rule
(engine.act.drain_rules), as a function of the acting cost and the jobs.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.act.words import n
from engine.errors import GoodputError
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME
from engine.units import SECONDS_PER_HOUR

if TYPE_CHECKING:
    from engine.act.context import Context

# Unplanned incidents on hosts up to $now: the run's failure rate per host-hour, for a resume's chance of failing
# again.
HOST_RATE = """
SELECT count(*) AS incidents FROM incidents
WHERE NOT coalesce(planned, false) AND host_id IS NOT NULL AND t_s <= $now
"""


@dataclass(frozen=True)
class Restart:
    """What restarting a job costs: the run's training.restart_overhead and half its checkpoint interval."""

    overhead_s: float
    checkpoint_interval_s: float

    @classmethod
    def of(cls, scenario: dict) -> "Restart":
        return cls(
            scenario_seconds(scenario, "training.restart_overhead"),
            scenario_seconds(scenario, "training.checkpoint_interval"),
        )

    @property
    def seconds(self) -> float:
        return self.overhead_s + self.checkpoint_interval_s / 2

    def cost(self, gpus: float) -> float:
        """GPU-hours lost restarting a job of `gpus` GPUs."""
        return gpus * self.seconds / SECONDS_PER_HOUR

    def words(self) -> str:
        return (
            f"{n(self.overhead_s)} s restart + {n(self.checkpoint_interval_s / 2)} s"
            f" (half a {n(self.checkpoint_interval_s)} s checkpoint interval) of work lost"
        )


def scenario_seconds(scenario: dict, key: str) -> float:
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


@dataclass(frozen=True)
class ResumePrice:
    """A resume's two costs, how they were worked out in words, and the figures behind them."""

    acting: float
    not_acting: float
    words: str
    extra: dict


def resume_price(ctx: "Context", host: dict) -> ResumePrice:
    """Resuming `host` (a row of ctx.hosts): acting risks p = min(the run's incidents per host-hour x H, 1) of a
    restart of the largest job running now (else a job on the host's GPUs); not acting keeps its GPUs idle for H."""
    n_incidents = int(ctx.query(HOST_RATE)["incidents"][0])
    n_hosts = ctx.hosts.height
    exposure_h = n_hosts * ctx.now_s / SECONDS_PER_HOUR
    rate = n_incidents / exposure_h if exposure_h > 0 else 0.0
    p = min(rate * ctx.horizon_h, 1.0)
    largest = ctx.jobs_now.unique("job_id").sort(["gpus", "job_id"], descending=[True, False])
    if largest.height:
        job, gpus = largest["job_id"][0], float(largest["gpus"][0])
        job_words = f"the largest job running now, {job} ({n(gpus)} GPUs)"
    else:
        job, gpus = None, float(host["host_gpus"])
        job_words = f"a job on the host's {n(gpus)} GPUs (no job runs now)"
    restart = ctx.restart.cost(gpus)
    acting = p * restart
    not_acting = float(host["host_gpus"]) * ctx.horizon_h
    words = (
        f"acting: p = min({rate:.5f} incidents per host-hour (the run's {n_incidents} over"
        f" {n_hosts} hosts x {n(ctx.now_s / SECONDS_PER_HOUR)} h) x {n(ctx.horizon_h)} h, 1) ="
        f" {p:.4f} that it fails again, restarting {job_words}: {p:.4f} x {restart:,.2f} GPU-h"
        f" ({ctx.restart.words()}) = {acting:,.2f} GPU-h; not acting: its {n(host['host_gpus'])}"
        f" GPUs idle for {n(ctx.horizon_h)} h = {not_acting:,.2f} GPU-h"
    )
    extra = {
        "p_recur": p,
        "rate_per_host_hour": rate,
        "incidents_n": n_incidents,
        "hosts_n": n_hosts,
        "window_s": ctx.now_s,
        "job_assumed": job,
        "job_gpus_assumed": gpus,
    }
    return ResumePrice(acting, not_acting, words, extra)
