"""The requeue rule: a job still running at now_s on a host that is out of service (down, diagnosing, in repair,
burn-in or retired, or draining with an incident still open: a drain for a fault; a draining host otherwise
finishes its jobs, which is what a drain is). Acting restarts the job; not acting holds its GPUs while it hangs
(engine.act.pricing).
"""

from engine.act.context import JOBS_NOW, STATE_AT, Context, query
from engine.act.records import Action, Evidence, Recommendation, Rule, recommendation_id
from engine.act.words import n
from engine.store.schema import OUT_OF_SERVICE_STATES

HELD_STATES = [s for s in OUT_OF_SERVICE_STATES if s != "draining"]  # a job on one of these hangs

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
                f"job {job_id} ({n(gpus)} GPUs), attempt {attempt}, running since {ctx.when(first['start_s'])}",
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
                    f"acting: requeueing restarts {job_id} at {n(gpus)} GPUs x ({ctx.restart.words()})"
                    f" = {restart:,.2f} GPU-h; not acting: its {n(gpus)} GPUs held while it hangs for"
                    f" {n(ctx.horizon_h)} h = {wasted:,.2f} GPU-h"
                ),
                extra={**ctx.common_extra(), "attempt": attempt},
            )
        )
    return found
