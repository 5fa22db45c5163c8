"""Overview page queries: the flagship job's attempts and checkpoints, interruptions, what is down at time t.

Every function takes the run id and goes through `state.query` (bound parameters, cached per run), so the
page stays a description of the page and the SQL can be tested on a store made by tests/runs.py.
"""

from datetime import datetime

import polars as pl

from dashboard import state
from dashboard.format import fmt_int, fmt_pct
from dashboard.queries.summary import Headline
from dashboard.text_exprs import cause_label_text, duration_text, time_text
from engine.analysis.definitions import definition
from engine.analysis.incidents import FLAGSHIP_JOB_SQL
from engine.reference import XIDS
from engine.report.palette import HOST_STATE_LABELS
from engine.store.schema import IN_SERVICE_STATES, OUT_OF_SERVICE_STATES

# How far a host's first unavailable state may lag its incident (detection, then drain), and how far an
# incident that names no host, or another host of the same rack (a rack switch or its cable takes the whole
# rack down), may precede the hosts it took down. A host's own incident is matched however long ago it was.
DETECTION_SLACK_S = 60.0
HOSTLESS_WINDOW_S = 3600.0

_AVAILABLE = ", ".join(f"'{s}'" for s in IN_SERVICE_STATES)  # constants, not user input
_UNAVAILABLE = ", ".join(f"'{s}'" for s in OUT_OF_SERVICE_STATES)

# Only a job marked flagship (engine.analysis.incidents.FLAGSHIP_JOB_SQL, the one every page and export finds): the
# largest job of a replayed trace is no training run whose ETTR means much.
FLAGSHIP_JOB = f"SELECT job_id, name, gpus, start_s FROM jobs WHERE job_id = ({FLAGSHIP_JOB_SQL})"  # noqa: S608

# $1: the instant read; $2, $3: the slacks above; $4: t as asked (for "down for"). The state lists are
# constants of this module, not user input, hence the f-string.
DOWN_AT = f"""
WITH now AS (
    SELECT host_id, state, start_s FROM host_states
    WHERE start_s <= $1 AND (end_s > $1 OR end_s IS NULL) AND state IN ({_UNAVAILABLE})
), streak AS (
    SELECT n.host_id, n.state, n.start_s AS state_since_s,
           coalesce((SELECT max(a.end_s) FROM host_states a
                     WHERE a.host_id = n.host_id AND a.end_s <= n.start_s AND a.state IN ({_AVAILABLE})),
                    (SELECT min(f.start_s) FROM host_states f WHERE f.host_id = n.host_id)) AS down_since_s
    FROM now n
), matched AS (
    SELECT s.*,
           (SELECT i.incident_id FROM incidents i LEFT JOIN hosts ih ON ih.host_id = i.host_id
            WHERE i.t_s <= s.down_since_s + $2
              AND (i.repaired_s IS NULL OR i.repaired_s >= s.down_since_s)
              AND (i.host_id = s.host_id
                   OR ((i.host_id IS NULL OR ih.rack_id = sh.rack_id) AND i.t_s >= s.down_since_s - $3))
            ORDER BY i.t_s DESC, (i.host_id = s.host_id) DESC NULLS LAST, i.incident_id
            LIMIT 1) AS incident_id
    FROM streak s LEFT JOIN hosts sh ON sh.host_id = s.host_id
)
SELECT m.host_id, h.hostname, h.rack_id, m.state, m.state_since_s, m.down_since_s,
       $4 - m.down_since_s AS down_for_s,
       m.incident_id, i.cause, i.category, i.gpu_id, i.xid
FROM matched m
LEFT JOIN hosts h USING (host_id)
LEFT JOIN incidents i ON i.incident_id = m.incident_id
ORDER BY m.down_since_s, m.host_id
"""  # noqa: S608

STATE_COUNTS_AT = """
SELECT state, count(DISTINCT host_id) AS hosts FROM host_states
WHERE start_s <= $1 AND (end_s > $1 OR end_s IS NULL)
GROUP BY state ORDER BY hosts DESC, state
"""

HOST_COUNT = "SELECT count(*) AS hosts, (SELECT count(*) FROM gpus) AS gpus FROM hosts"

ATTEMPTS = (
    "SELECT job_id, attempt, start_s, end_s, end_reason, lost_work_s FROM job_attempts WHERE job_id = ?"
)
CHECKPOINTS = "SELECT job_id, start_s, end_s FROM checkpoints WHERE job_id = ?"

# Interruptions of a job: attempts that ended for a reason other than finishing or the run's end.
# The flagship job's interruptions (engine/analysis/definitions: "interruptions"): incidents whose jobs hit include it,
# at the time each occurred; the same rows the Incidents page and the summary count.
INTERRUPTIONS = """
SELECT t_s, cause FROM incidents WHERE list_contains(job_ids, ?) ORDER BY t_s, incident_id
"""

INCIDENTS_BY_CAUSE = """
SELECT cause, any_value(category) AS category, bool_or(planned) AS planned, count(*) AS count
FROM incidents GROUP BY cause ORDER BY count DESC, cause
"""


TIMELINE_BUCKETS_S = (300, 900, 1800, 3600, 2 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400)
MAX_BUCKETS = 120  # enough bars to see a trend, few enough to tell each apart


def timeline_bucket(duration_s: float) -> float:
    """The finest bucket of ETTR over time that keeps the chart under MAX_BUCKETS bars."""
    return float(
        next((b for b in TIMELINE_BUCKETS_S if duration_s / b <= MAX_BUCKETS), TIMELINE_BUCKETS_S[-1])
    )


def instant(t_s: float, duration_s: float) -> float:
    """The instant whose states a query reads: at the very end of the run, the last instant inside it.

    States are half-open intervals [start_s, end_s), so the run's last second is read just before it ends.
    """
    return min(max(t_s, 0.0), duration_s - 1e-3) if duration_s > 0 else 0.0


def flagship_job(run_id: str) -> dict | None:
    """The flagship job (kind 'flagship'), or None when the run has none (replayed traces, telemetry)."""
    frame = state.query(run_id, FLAGSHIP_JOB)
    return frame.row(0, named=True) if frame.height else None


def down_at(run_id: str, t_s: float, duration_s: float) -> pl.DataFrame:
    """Hosts unavailable at `t_s`: their state, since when, and the incident that took them down."""
    asked = min(max(t_s, 0.0), duration_s)
    return state.query(
        run_id, DOWN_AT, (instant(t_s, duration_s), DETECTION_SLACK_S, HOSTLESS_WINDOW_S, asked)
    )


def state_counts_at(run_id: str, t_s: float, duration_s: float) -> pl.DataFrame:
    return state.query(run_id, STATE_COUNTS_AT, (instant(t_s, duration_s),))


def has_host_states(run_id: str) -> bool:
    return state.query(run_id, "SELECT EXISTS (SELECT 1 FROM host_states) AS present")["present"][0]


def host_count(run_id: str) -> dict:
    return state.query(run_id, HOST_COUNT).row(0, named=True)


def attempts_and_checkpoints(run_id: str, job_id: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    return state.query(run_id, ATTEMPTS, (job_id,)), state.query(run_id, CHECKPOINTS, (job_id,))


def interruptions(run_id: str, job_id: str) -> pl.DataFrame:
    return state.query(run_id, INTERRUPTIONS, (job_id,))


def incidents_by_cause(run_id: str) -> pl.DataFrame:
    """Every incident of the run counted by cause (for runs whose summary has no flagship counts)."""
    return state.query(run_id, INCIDENTS_BY_CAUSE)


# ----- runs without a simulator summary (ingested telemetry, replayed traces): what their tables hold -------

TABLE_COUNTS = """
SELECT (SELECT count(*) FROM jobs) AS jobs, (SELECT count(*) FROM incidents) AS incidents,
       (SELECT count(*) FROM gpu_samples) AS samples, (SELECT count(*) FROM xid_events) AS xid_events,
       (SELECT count(DISTINCT gpu_id) FROM xid_events) AS gpus_with_xids
"""

XID_COUNTS = """
SELECT xid, count(*) AS events, count(DISTINCT gpu_id) AS gpus, min(t_s) AS first_s, max(t_s) AS last_s
FROM xid_events GROUP BY xid ORDER BY events DESC, xid
"""


def table_headline(run_id: str) -> list[Headline]:
    """Headline figures counted in the run's tables, for runs whose summary has none (zeros left out)."""
    counts = state.query(run_id, TABLE_COUNTS).row(0, named=True)
    figures = [
        ("jobs", "Jobs", "Jobs in the run (a replayed trace's jobs)."),
        ("incidents", "Incidents", "Failures and planned interruptions recorded in the run."),
        ("samples", "Telemetry samples", "GPU telemetry samples (one a GPU and time)."),
        ("xid_events", "XID events", "NVIDIA driver errors (XIDs) read from kernel logs or DCGM."),
        ("gpus_with_xids", "GPUs with XIDs", "GPUs that reported at least one XID."),
    ]
    return [Headline(label, fmt_int(counts[key]), help=text) for key, label, text in figures if counts[key]]


HISTORY_COUNTS = """
SELECT count(*) AS incidents, count(*) FILTER (WHERE repaired_s IS NULL) AS open,
       count(*) FILTER (WHERE cause = 'unknown') AS unknown
FROM incidents
"""


def history_headline(run_id: str) -> list[Headline]:
    """A fault history's headline, counted in its incidents table: its outages, those still open, and the share
    of them no rule of the causes map named (each under its definition)."""
    counts = state.query(run_id, HISTORY_COUNTS).row(0, named=True)
    share = counts["unknown"] / counts["incidents"] if counts["incidents"] else None
    figures = (
        ("incidents", fmt_int(counts["incidents"])),
        ("open_incidents", fmt_int(counts["open"])),
        ("unknown_cause_incidents", "–" if share is None else fmt_pct(share)),
    )
    return [Headline(definition(k).label, v, help=definition(k).help) for k, v in figures]


def xid_counts(run_id: str) -> pl.DataFrame:
    return state.query(run_id, XID_COUNTS)


def with_xid_names(xids: pl.DataFrame) -> pl.DataFrame:
    """XID counts with each code's name, meaning and whether it is fatal (engine.reference.XIDS)."""
    catalogue = pl.DataFrame(
        {
            "xid": [x.xid for x in XIDS],
            "name": [x.mnemonic for x in XIDS],
            "meaning": [x.meaning for x in XIDS],
            "fatal": [x.fatal for x in XIDS],
        },
        schema_overrides={"xid": xids.schema["xid"]},
    )
    named = xids.join(catalogue, on="xid", how="left", maintain_order="left")
    return named.select("xid", pl.col("name").fill_null("(unknown)"), "meaning", "fatal", "events", "gpus")


def down_table(down: pl.DataFrame, started_at: datetime) -> pl.DataFrame:
    """`down_at`'s frame as the page shows it: names, dates and durations in words (one row per host down)."""
    return down.select(
        host=pl.col("hostname"),
        rack=pl.col("rack_id"),
        state=pl.col("state").replace(HOST_STATE_LABELS),  # in words, as every page names states
        down_since=time_text("down_since_s", started_at),
        down_for=duration_text("down_for_s"),
        cause=cause_label_text("cause"),
        category=pl.col("category"),
        incident=pl.col("incident_id"),
        gpu=pl.col("gpu_id"),
        xid=pl.col("xid"),
    )


# ----- a watched cluster's jobs (engine.ingest.watch.goodput) ----------------------------------------------------
OBSERVED_JOBS = "SELECT job_id, name, gpus, start_s, end_s FROM jobs"
OBSERVED_ATTEMPTS = "SELECT job_id, start_s, end_s, end_reason FROM job_attempts"
OBSERVED_CHECKPOINTS = "SELECT job_id, end_s FROM checkpoints"


def observed_jobs(run_id: str, now_s: float) -> pl.DataFrame:
    """Each started job of a watched run with its goodput (engine.ingest.watch.job_goodput, definition
    observed_job_goodput: the one the run's summary totals), its name, and lost_gpu_h (wall-clock GPU-hours not
    kept: work after the last checkpoint of an interrupted attempt, and the gaps between attempts)."""
    from engine.ingest.watch import job_goodput

    jobs = state.query(run_id, OBSERVED_JOBS)
    per_job = job_goodput(
        jobs,
        state.query(run_id, OBSERVED_ATTEMPTS),
        now_s,
        state.query(run_id, OBSERVED_CHECKPOINTS),
    )
    return per_job.join(jobs.select("job_id", "name"), on="job_id", how="left").with_columns(
        lost_gpu_h=((pl.col("wall_s") - pl.col("kept_s")).clip(0) * pl.col("gpus").fill_null(0)) / 3600.0
    )
