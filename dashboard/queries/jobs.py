"""Jobs page queries, all in SQL on one run: jobs with their attempts, failures, checkpoints and lost work;
the queue, utilisation and fragmentation per time bucket; waits; one job's attempts, hosts and waits. Why jobs
waited is counted over the table's rows (dashboard.queries.jobs_table.why_waited).

Time series take a window [t0, t0 + n * width) cut into n buckets of `width` seconds, built by `range(n)`
in SQL, so the page asks for a fixed number of points whatever the length of the run or the number of jobs.
"""

from dataclasses import dataclass, field

import polars as pl

from dashboard import state
from engine.report.palette import CLEAN_END_REASONS
from engine.store.schema import OUT_OF_SERVICE_STATES


@dataclass(frozen=True)
class JobFilter:
    name: str = ""  # substring of the name or id, case-insensitive
    states: tuple[str, ...] = field(default_factory=tuple)  # empty: every state
    kinds: tuple[str, ...] = field(default_factory=tuple)  # empty: every kind
    window: tuple[float, float] | None = (
        None  # jobs in the system (submitted, not yet ended) during [from, to)
    )


# Flagship first, then the largest jobs by GPU-time (GPUs x time on the cluster so far), so a capped Gantt
# shows what matters most. A job is in a window if it was submitted before the window ends and had not
# ended when it began (a job without an end is in the system to the end of the run).
JOBS = """
WITH a AS (
    SELECT job_id, count(*) AS attempts, count(*) FILTER (WHERE NOT list_contains(?, end_reason)) AS failures,
           sum(lost_work_s) AS lost_work_s
    FROM job_attempts GROUP BY job_id
), c AS (SELECT job_id, count(*) AS checkpoints FROM checkpoints GROUP BY job_id)
SELECT j.job_id,
       CASE WHEN j.name IS NULL OR j.name = j.job_id THEN j.job_id ELSE j.name || ' · ' || j.job_id END AS label,
       j.name, j.kind, j.state, j.gpus, j.priority, j."user", j.submit_s, j.start_s, j.end_s,
       j.start_s - j.submit_s AS wait_s, j.wait_reason, coalesce(a.attempts, 0) AS attempts,
       coalesce(a.failures, 0) AS failures, coalesce(c.checkpoints, 0) AS checkpoints,
       coalesce(a.lost_work_s, 0) * j.gpus / 3600 AS lost_gpu_hours
FROM jobs j LEFT JOIN a USING (job_id) LEFT JOIN c USING (job_id)
WHERE (? = '' OR j.name ILIKE '%' || ? || '%' OR j.job_id ILIKE '%' || ? || '%')
  AND (len(?) = 0 OR list_contains(?, j.state))
  AND (len(?) = 0 OR list_contains(?, j.kind))
  AND (?::DOUBLE IS NULL OR (coalesce(j.submit_s, j.start_s, 0) < ? AND coalesce(j.end_s, ?) >= ?))
ORDER BY coalesce(j.kind = 'flagship', false) DESC,
         j.gpus * (coalesce(j.end_s, ?) - j.start_s) DESC NULLS LAST, j.job_id
"""


def jobs(run_id: str, duration_s: float, where: JobFilter = JobFilter()) -> pl.DataFrame:
    states, kinds = list(where.states), list(where.kinds)
    t0, t1 = where.window or (None, None)
    return state.query(
        run_id,
        JOBS,
        (
            list(CLEAN_END_REASONS),
            where.name,
            where.name,
            where.name,
            states,
            states,
            kinds,
            kinds,
            t0,
            t1,
            duration_s,
            t0,
            duration_s,
        ),
    )


# Gantt orders (?order=): the query's own (flagship, then GPU-time) or a column and whether descending.
ORDERS: dict[str, tuple[str, bool] | None] = {
    "GPU-time": None,
    "started": ("start_s", False),
    "waited": ("wait_s", True),
    "failures": ("failures", True),
}


def gantt_order(jobs_frame: pl.DataFrame, order: str) -> pl.DataFrame:
    """`jobs_frame` (from `jobs`) in the Gantt order named `order`: the flagship first, then by ORDERS[order]
    (missing values last, the job id breaking ties); "GPU-time" keeps the query's order."""
    if ORDERS[order] is None:
        return jobs_frame
    column, descending = ORDERS[order]
    return jobs_frame.sort(
        pl.col("kind") == "flagship", column, "job_id", descending=[True, descending, False], nulls_last=True
    )


def choices(run_id: str) -> pl.DataFrame:
    """The states and kinds present, for the filters."""
    return state.query(
        run_id,
        "SELECT list(DISTINCT state ORDER BY state) AS states,"
        " list(DISTINCT kind ORDER BY kind) AS kinds FROM jobs",
    )


def attempts(run_id: str, job_ids: list[str]) -> pl.DataFrame:
    return state.query(
        run_id,
        """
        SELECT job_id, attempt, start_s, end_s, end_reason, lost_work_s, len(hosts) AS hosts
        FROM job_attempts WHERE list_contains(?, job_id) ORDER BY job_id, attempt""",
        (job_ids,),
    )


def checkpoints(run_id: str, job_ids: list[str], t0: float, t1: float) -> pl.DataFrame:
    """Checkpoints of `job_ids` that start inside [t0, t1), for the Gantt's marks."""
    return state.query(
        run_id,
        """
        SELECT job_id, start_s, end_s FROM checkpoints
        WHERE list_contains(?, job_id) AND start_s >= ? AND start_s < ? ORDER BY job_id, start_s""",
        (job_ids, t0, t1),
    )


def checkpoint_counts(run_id: str, job_ids: list[str], t0: float, t1: float) -> pl.DataFrame:
    """(job_id, checkpoints) in [t0, t1): the page fetches the marks only of rows that can show them apart."""
    return state.query(
        run_id,
        """
        SELECT job_id, count(*) AS checkpoints FROM checkpoints
        WHERE list_contains(?, job_id) AND start_s >= ? AND start_s < ? GROUP BY job_id ORDER BY job_id""",
        (job_ids, t0, t1),
    )


def incidents_of(run_id: str, job_id: str) -> pl.DataFrame:
    """The incidents that hit one job, in time order, with the hostname of the host each was on."""
    return state.query(
        run_id,
        """
        SELECT i.incident_id, i.t_s, i.cause, i.category, i.planned, h.hostname, i.gpu_id, i.gpu_hours_lost
        FROM incidents i LEFT JOIN hosts h USING (host_id) WHERE list_contains(i.job_ids, ?)
        ORDER BY i.t_s, i.incident_id""",
        (job_id,),
    )


# ----- one job --------------------------------------------------------------------------------------------


def attempt_hosts(run_id: str, job_id: str) -> pl.DataFrame:
    """Each attempt of one job with the names of its hosts (hosts missing from `hosts` keep their id)."""
    return state.query(
        run_id,
        """
        WITH h AS (SELECT a.attempt, unnest(a.hosts) AS host_id, generate_subscripts(a.hosts, 1) AS k
                   FROM job_attempts a WHERE a.job_id = ?)
        SELECT h.attempt, list(coalesce(n.hostname, h.host_id::VARCHAR) ORDER BY h.k) AS hostnames
        FROM h LEFT JOIN hosts n USING (host_id) GROUP BY h.attempt ORDER BY h.attempt""",
        (job_id,),
    )


def waits_of(run_id: str, job_id: str) -> pl.DataFrame:
    """Why one job waited: its job_waits pieces in order."""
    return state.query(
        run_id,
        """
        SELECT start_s, end_s, end_s - start_s AS waited_s, reason FROM job_waits
        WHERE job_id = ? ORDER BY start_s""",
        (job_id,),
    )


# ----- the queue, waits and why -----------------------------------------------------------------------------

# (DuckDB's least/greatest skip NULLs: a bucket no interval meets must not count its own width.)
# Waiting = from submission to the first start (to the end of the run for jobs never started), plus the
# recorded waits (job_waits) after a first start: a requeued job back in the queue. The gap between two
# attempts of a simulated job (restart overhead, spares) is not a queue and is not counted.
QUEUE = """
WITH b AS (SELECT i, ? + i * ? AS b0, ? + (i + 1) * ? AS b1 FROM range(?) r(i)),
q AS (
    SELECT gpus, submit_s AS w0, coalesce(start_s, end_s, ?) AS w1 FROM jobs WHERE submit_s IS NOT NULL
    UNION ALL
    SELECT j.gpus, w.start_s, w.end_s FROM job_waits w JOIN jobs j USING (job_id) WHERE w.start_s >= j.start_s
)
SELECT b.i, b.b0 AS t_s,
       coalesce(sum(least(q.w1, b.b1) - greatest(q.w0, b.b0)) FILTER (WHERE q.w0 IS NOT NULL), 0) / ? AS queued_jobs,
       coalesce(sum(q.gpus * (least(q.w1, b.b1) - greatest(q.w0, b.b0))), 0) / ? AS queued_gpus
FROM b LEFT JOIN q ON q.w0 < b.b1 AND q.w1 > b.b0
GROUP BY b.i, b.b0 ORDER BY b.i
"""


def _buckets(t0: float, width: float, n: int) -> tuple:
    return (t0, width, t0, width, n)


def queue(run_id: str, t0: float, width: float, n: int, duration_s: float) -> pl.DataFrame:
    """Per bucket (i, t_s = its start): queued jobs and GPUs they demand, each a time-weighted mean."""
    return state.query(run_id, QUEUE, (*_buckets(t0, width, n), duration_s, width, width))


def wait_times(run_id: str, t0: float, t1: float) -> pl.DataFrame:
    """The wait (start - submit) of every job that started in [t0, t1), for the distribution."""
    return state.query(
        run_id,
        """
        SELECT start_s - submit_s AS wait_s FROM jobs
        WHERE start_s >= ? AND start_s < ? AND submit_s IS NOT NULL ORDER BY wait_s""",
        (t0, t1),
    )


# ----- utilisation and fragmentation ------------------------------------------------------------------------

# Busy GPUs: every attempt holds its job's GPUs while it runs (fractional GPUs count as their share).
# Unavailable GPUs: those of hosts in a state where they take no work (down, repair, ...).
UTILISATION = """
WITH b AS (SELECT i, ? + i * ? AS b0, ? + (i + 1) * ? AS b1 FROM range(?) r(i)),
busy AS (
    SELECT b.i, sum(j.gpus * (least(a.end_s, b.b1) - greatest(a.start_s, b.b0))) / ? AS busy_gpus
    FROM b JOIN job_attempts a ON a.start_s < b.b1 AND a.end_s > b.b0 JOIN jobs j USING (job_id)
    GROUP BY b.i
),
cap AS (SELECT host_id, count(*) AS gpus FROM gpus GROUP BY host_id),
out AS (
    SELECT b.i, sum(c.gpus * (least(s.end_s, b.b1) - greatest(s.start_s, b.b0))) / ? AS unavailable_gpus
    FROM b JOIN host_states s ON s.start_s < b.b1 AND s.end_s > b.b0 JOIN cap c USING (host_id)
    WHERE list_contains(?, s.state) GROUP BY b.i
)
SELECT b.i, b.b0 AS t_s, coalesce(busy.busy_gpus, 0) AS busy_gpus,
       coalesce(out.unavailable_gpus, 0) AS unavailable_gpus, (SELECT count(*) FROM gpus) AS total_gpus,
       coalesce(busy.busy_gpus, 0) / nullif((SELECT count(*) FROM gpus), 0) AS utilisation
FROM b LEFT JOIN busy USING (i) LEFT JOIN out USING (i) ORDER BY b.i
"""


def utilisation(run_id: str, t0: float, width: float, n: int) -> pl.DataFrame:
    """Per bucket: busy and unavailable GPUs (time-weighted means), all GPUs, and busy / all."""
    return state.query(
        run_id, UTILISATION, (*_buckets(t0, width, n), width, width, list(OUT_OF_SERVICE_STATES))
    )


# A snapshot at each bucket's middle: which attempts run, on which hosts. Free GPUs are those of available
# hosts that no attempt holds; free GPUs on partly used hosts are scattered: a gang that needs whole hosts
# cannot use them. Fragmentation = scattered free / all free. A host's share of a job is the job's GPUs over
# its hosts; only attempts holding less than the largest host per host are split host by host (a flagship
# on 2,048 whole hosts fills them and needs no such split, which keeps the query quick at scale).
FRAGMENTATION = """
WITH b AS (SELECT i, b0 + (b1 - b0) / 2 AS t
           FROM (SELECT i, ? + i * ? AS b0, ? + (i + 1) * ? AS b1 FROM range(?) r(i))),
cap AS (SELECT host_id, count(*) AS gpus FROM gpus GROUP BY host_id),
running AS (
    SELECT b.i, a.hosts, j.gpus, j.gpus / nullif(len(a.hosts), 0) AS per_host
    FROM b JOIN job_attempts a ON a.start_s <= b.t AND a.end_s > b.t JOIN jobs j USING (job_id)
),
down AS (
    SELECT DISTINCT b.i, s.host_id
    FROM b JOIN (SELECT * FROM host_states WHERE list_contains(?, state)) s ON s.start_s <= b.t AND s.end_s > b.t
),
split AS (
    SELECT i, unnest(hosts) AS host_id, per_host FROM running
    WHERE per_host < (SELECT max(gpus) FROM cap)
),
partly AS (
    SELECT p.i, sum(greatest(c.gpus - p.busy, 0)) AS gpus
    FROM (SELECT i, host_id, sum(per_host) AS busy FROM split GROUP BY i, host_id HAVING sum(per_host) > 0) p
    JOIN cap c USING (host_id) ANTI JOIN down d ON d.i = p.i AND d.host_id = p.host_id
    GROUP BY p.i
),
held AS (SELECT i, sum(gpus) AS gpus FROM running GROUP BY i),
unavailable AS (SELECT d.i, sum(c.gpus) AS gpus FROM down d JOIN cap c USING (host_id) GROUP BY d.i),
per AS (
    SELECT b.i, b.t, coalesce(p.gpus, 0) AS scattered,
           greatest((SELECT coalesce(sum(gpus), 0) FROM cap) - coalesce(n.gpus, 0) - coalesce(h.gpus, 0), 0) AS free
    FROM b LEFT JOIN unavailable n USING (i) LEFT JOIN held h USING (i) LEFT JOIN partly p USING (i)
)
SELECT i, t AS t_s, free AS free_gpus, scattered AS scattered_gpus, scattered / nullif(free, 0) AS fragmentation
FROM per ORDER BY i
"""


def fragmentation(run_id: str, t0: float, width: float, n: int) -> pl.DataFrame:
    """Per bucket, at its middle (t_s): free GPUs, those scattered on partly used hosts, and their share."""
    return state.query(run_id, FRAGMENTATION, (*_buckets(t0, width, n), list(OUT_OF_SERVICE_STATES)))
