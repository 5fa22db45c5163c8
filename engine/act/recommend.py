"""The rules: what a run's data says should be drained, resumed or requeued at a moment, and what acting and not
acting cost, in GPU-hours of the cluster.

    recommend(store, run_id, settings, now_s=None) -> [Recommendation, ...]   most worth doing first

`now_s` is the moment looked at, in seconds since the run's start (default: the run's end, which for a run kept
current by `goodput watch` is its latest data). Nodes are the run's hostnames (Slurm's node names in an observed
run). Each rule is one function named after its records.Rule; each reads the run through DuckDB (the big
telemetry table only aggregated, for a few GPUs):

    fatal_xid   DRAIN   a host in service with an unrepaired fatal XID since its last return   drain_rules.py
    lemon       DRAIN   a host in service the lemon rule flags at now_s                        drain_rules.py
    slow_host   DRAIN   a host in service with a fail-slow episode open at now_s               drain_rules.py
    repaired    RESUME  a host drained or down, back from repair and clean since, no lemon:    resume_rule.py
                        its incidents all repaired and nothing wrong since; or, in an observed
                        run, out of service and clean for CLEAN_WINDOW_S                       clean_window.py
    stuck_job   REQUEUE a job running at now_s on a host out of service                        requeue_rule.py

Each module's docstring gives its rules' exact conditions; context.py is the run at now_s that they read,
pricing.py the formulas of both costs, words.py the wording. One host gets at most one drain: a fatal XID's before
a lemon's, a lemon's before a slow host's.

A recommendation's id (records.recommendation_id) is fixed by its action, nodes, job, rule and the finding
(the latest incident, the episode's start, the repaired incident or the time out of service, the job's attempt),
so the rules can run again and again without repeating what was decided, and a new finding gets a new id.
"""

from engine.act.context import Context
from engine.act.drain_rules import FAIL_SLOW_TAB, fatal_xid, lemon, slow_host
from engine.act.records import Recommendation, Rule
from engine.act.requeue_rule import stuck_job
from engine.act.resume_rule import repaired
from engine.act.settings import ActionSettings
from engine.errors import GoodputError
from engine.store import Store

HISTORY_SOURCE = "node-events"  # the scenario source of a fault history's run (engine.ingest.node_events)

__all__ = ["FAIL_SLOW_TAB", "RULE_ORDER", "recommend"]

RULE_ORDER = {Rule.FATAL_XID: 0, Rule.LEMON: 1, Rule.SLOW_HOST: 2, Rule.REPAIRED: 3, Rule.STUCK_JOB: 4}


def recommend(
    store: Store, run_id: str, settings: ActionSettings, now_s: float | None = None
) -> list[Recommendation]:
    """What to drain, resume and requeue at `now_s` (default: the run's end), most worth doing first: sorted by
    cost_if_not_gpu_hours - cost_if_acting_gpu_hours, largest first."""
    info = store.info(run_id)
    if info.scenario.get("source") == HISTORY_SOURCE:
        raise GoodputError(
            f"run {run_id} is a fault history (goodput ingest node-events): it records how the cluster was, not"
            " how it is now, so its last states recommend nothing; the rules look at a cluster Goodput watches"
            " (goodput watch --prometheus URL --slurm)"
        )
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
