"""Jobs page queries: jobs with their attempts, failures, checkpoints and lost work, filtered in SQL."""

from dataclasses import dataclass, field

import polars as pl

from dashboard import state
from dashboard.charts.jobs import CLEAN_ENDS


@dataclass(frozen=True)
class JobFilter:
    name: str = ""  # substring of the name or id, case-insensitive
    states: tuple[str, ...] = field(default_factory=tuple)  # empty: every state
    kinds: tuple[str, ...] = field(default_factory=tuple)  # empty: every kind


# Flagship first, then the largest jobs by GPU-time (GPUs x time on the cluster so far), so a capped Gantt
# shows what matters most.
JOBS = """
WITH a AS (
    SELECT job_id, count(*) AS attempts, count(*) FILTER (WHERE NOT list_contains(?, end_reason)) AS failures,
           sum(lost_work_s) AS lost_work_s
    FROM job_attempts GROUP BY job_id
), c AS (SELECT job_id, count(*) AS checkpoints FROM checkpoints GROUP BY job_id)
SELECT j.job_id,
       CASE WHEN j.name IS NULL OR j.name = j.job_id THEN j.job_id ELSE j.name || ' · ' || j.job_id END AS label,
       j.name, j.kind, j.state, j.gpus, j.priority, j."user", j.submit_s, j.start_s, j.end_s,
       j.start_s - j.submit_s AS wait_s, coalesce(a.attempts, 0) AS attempts, coalesce(a.failures, 0) AS failures,
       coalesce(c.checkpoints, 0) AS checkpoints, coalesce(a.lost_work_s, 0) * j.gpus / 3600 AS lost_gpu_hours
FROM jobs j LEFT JOIN a USING (job_id) LEFT JOIN c USING (job_id)
WHERE (? = '' OR j.name ILIKE '%' || ? || '%' OR j.job_id ILIKE '%' || ? || '%')
  AND (len(?) = 0 OR list_contains(?, j.state))
  AND (len(?) = 0 OR list_contains(?, j.kind))
ORDER BY coalesce(j.kind = 'flagship', false) DESC,
         j.gpus * (coalesce(j.end_s, ?) - j.start_s) DESC NULLS LAST, j.job_id
"""


def jobs(run_id: str, duration_s: float, where: JobFilter = JobFilter()) -> pl.DataFrame:
    states, kinds = list(where.states), list(where.kinds)
    return state.query(run_id, JOBS, (list(CLEAN_ENDS), where.name, where.name, where.name, states, states,
                                      kinds, kinds, duration_s))


def choices(run_id: str) -> pl.DataFrame:
    """The states and kinds present, for the filters."""
    return state.query(run_id, "SELECT list(DISTINCT state ORDER BY state) AS states,"
                               " list(DISTINCT kind ORDER BY kind) AS kinds FROM jobs")


def attempts(run_id: str, job_ids: list[str]) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT job_id, attempt, start_s, end_s, end_reason, lost_work_s, len(hosts) AS hosts
        FROM job_attempts WHERE list_contains(?, job_id) ORDER BY job_id, attempt""", (job_ids,))


def incidents_of(run_id: str, job_id: str) -> pl.DataFrame:
    return state.query(run_id, """
        SELECT incident_id, t_s, cause, category, planned, host_id, gpu_id, gpu_hours_lost
        FROM incidents WHERE list_contains(job_ids, ?) ORDER BY t_s""", (job_id,))
