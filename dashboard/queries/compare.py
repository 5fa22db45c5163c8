"""Compare page: headline figures of runs side by side, what differs in their scenarios, incidents by cause."""

import math
from collections.abc import Mapping
from typing import Any

import polars as pl

from dashboard import fault_history, state
from dashboard.format import DASH, fmt_gpu_hours, fmt_hours, fmt_int, fmt_pct
from dashboard.queries.overview import HISTORY_COUNTS
from engine.analysis.analytics import ettr_timeline
from engine.analysis.definitions import definition
from engine.analysis.incidents import FLAGSHIP_JOB_SQL
from engine.analysis.ledger import LOSSES
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.report.palette import LOSS_LABELS
from engine.scenario import from_dict
from engine.store import RunInfo
from engine.twin.scale import STRATEGY_LABELS
from engine.units import SECONDS_PER_DAY


def strategy_text(strategy: str) -> str:
    return STRATEGY_LABELS.get(strategy, strategy)


def _figure(key: str, fmt: Any) -> tuple[str, str, Any]:
    """A defined figure: its label and where its definition says the run summary holds it."""
    d = definition(key)
    assert d.summary is not None, f"{key!r} has no place in the run summary"
    return d.label, d.summary, fmt


# (label, summary path, formatter): the figures `goodput simulate --json` prints, each figure under its
# definition's label and read where its definition says (engine/analysis/definitions), as on the Overview. The
# flagship's recovery strategy comes with its size, what the strategy costs besides its ledger after Goodput
# lost, so runs of two strategies compare at a glance (a run from before the strategies shows a dash).
HEADLINES: tuple[tuple[str, str, Any], ...] = (
    ("GPUs", "gpus", fmt_int),
    ("hosts", "hosts", fmt_int),
    ("days", "days", lambda d: DASH if d is None else f"{d:g}"),
    ("flagship job", "job.name", lambda s: s or DASH),
    ("flagship GPUs", "job.gpus", fmt_int),
    _figure("recovery_strategy", strategy_text),
    _figure("ettr", fmt_pct),
    _figure("job_mttf", fmt_hours),
    _figure("interruptions", fmt_int),
    _figure("unexpected_interruptions", fmt_int),
    _figure("planned_interruptions", fmt_int),
    _figure("checkpoints_written", fmt_int),
    _figure("goodput_lost", fmt_gpu_hours),
    _figure("standby_hosts_idle", fmt_gpu_hours),
    _figure("degraded_replicas_out", fmt_gpu_hours),
    _figure("memory_checkpoint_per_host", lambda gb: f"{gb:,.1f} GB"),
    _figure("utilisation_by_allocation", fmt_pct),
    _figure("utilisation_by_progress", fmt_pct),
    _figure("gpu_hours_down", fmt_gpu_hours),
)


def run_label(info: RunInfo) -> str:
    return f"{info.name} ({info.run_id})"


def headlines(infos: list[RunInfo]) -> pl.DataFrame:
    """A row per figure, a column per run, every value formatted with its unit (a dash where a run lacks it)."""
    columns: dict[str, list[str]] = {"figure": ["kind", "seed"] + [label for label, _, _ in HEADLINES]}
    for info in infos:
        values = [info.kind, DASH if info.seed is None else str(info.seed)]
        summary = RunSummary.from_json(info.summary)
        for _, path, fmt in HEADLINES:
            value = summary.at(path)
            values.append(DASH if value is None else fmt(value))
        columns[run_label(info)] = values
    frame = pl.DataFrame(columns)
    histories = [fault_history.is_fault_history(info) for info in infos]
    if not any(histories):
        return frame
    frame = pl.concat([frame, history_rows(infos)])
    if all(histories):  # no job ran in any: the training figures would be a table of dashes
        runs = pl.exclude("figure")
        frame = frame.filter(~pl.all_horizontal(runs == DASH) | pl.col("figure").is_in(["kind", "seed"]))
    return frame


def history_rows(infos: list[RunInfo]) -> pl.DataFrame:
    """Where a fault history is among the runs: each run's incidents, those still open and the share of unknown
    cause, counted in its incidents table (as the Overview counts them), so every run has them."""
    keys = ("incidents", "open_incidents", "unknown_cause_incidents")
    columns: dict[str, list[str]] = {"figure": [definition(k).label for k in keys]}
    for info in infos:
        counts = state.query(info.run_id, HISTORY_COUNTS).row(0, named=True)
        share = counts["unknown"] / counts["incidents"] if counts["incidents"] else None
        columns[run_label(info)] = [
            fmt_int(counts["incidents"]),
            fmt_int(counts["open"]),
            DASH if share is None else fmt_pct(share),
        ]
    return pl.DataFrame(columns)


def flat_scenario(nested: Mapping[str, Any]) -> dict[str, Any]:
    """Every key of a run's scenario: the full validated scenario where it builds, else the stored keys as given.

    A run without a scenario (an ingest) has no keys at all, not the defaults a build of nothing would give."""
    if not nested:
        return {}
    try:
        return dict(from_dict(nested).raw) | {"preset": nested.get("preset")}
    except GoodputError:
        flat: dict[str, Any] = {}

        def walk(node: Mapping[str, Any], prefix: str) -> None:
            for key, value in node.items():
                if isinstance(value, Mapping):
                    walk(value, f"{prefix}{key}.")
                else:
                    flat[f"{prefix}{key}"] = value

        walk(nested, "")
        return flat


def scenario_diff(infos: list[RunInfo]) -> pl.DataFrame:
    """The scenario keys whose values are not the same in every run, a column per run (as written: "30m")."""
    flats = [flat_scenario(info.scenario) for info in infos]
    keys = sorted(set().union(*flats))
    differing = [k for k in keys if len({repr(f.get(k)) for f in flats}) > 1]
    return pl.DataFrame(
        {"key": differing}
        | {
            run_label(info): [DASH if f.get(k) is None else str(f.get(k)) for k in differing]
            for info, f in zip(infos, flats, strict=True)
        },
        schema={"key": pl.String} | {run_label(info): pl.String for info in infos},
    )


# The flagship job's interruptions, as `interruptions` in the summary counts them (the Llama 3 way); a run
# without a flagship job (a replayed trace, an ingest) counts every incident.
INTERRUPTIONS_BY_CAUSE = f"""
WITH flagship AS ({FLAGSHIP_JOB_SQL})
SELECT cause, count(*) AS interruptions FROM incidents
WHERE NOT EXISTS (SELECT 1 FROM flagship) OR list_contains(job_ids, (SELECT job_id FROM flagship))
GROUP BY cause ORDER BY cause
"""  # noqa: S608 (only constant SQL formatted in)


def exposure_hosts(info: RunInfo) -> float:
    """The hosts whose failures the counts cover: the flagship job's, else the cluster's."""
    shape = state.query(
        info.run_id,
        f"""
        SELECT (SELECT count(*) FROM hosts) AS hosts, (SELECT count(*) FROM gpus) AS gpus,
               (SELECT gpus FROM jobs WHERE job_id = ({FLAGSHIP_JOB_SQL})) AS job_gpus""",  # noqa: S608 (constant SQL)
    ).row(0)
    hosts, gpus, job_gpus = shape
    if job_gpus and hosts and gpus:
        return math.ceil(job_gpus / (gpus / hosts))
    return float(hosts)


def interruptions_by_cause(infos: list[RunInfo], per_1000_host_days: bool = False) -> pl.DataFrame:
    """Each run's interruptions by cause (columns run, cause, interruptions), or as a rate per 1,000 host-days
    of the hosts they cover (the unit of failures.rate_per_1000_node_days) so runs of other sizes compare."""
    frames = []
    for info in infos:
        counts = state.query(info.run_id, INTERRUPTIONS_BY_CAUSE)
        value = pl.col("interruptions").cast(pl.Float64)
        if per_1000_host_days:
            host_days = exposure_hosts(info) * info.duration_s / SECONDS_PER_DAY
            value = (value * 1000.0 / host_days).round(3) if host_days > 0 else pl.lit(None, pl.Float64)
        frames.append(
            counts.select(pl.lit(run_label(info)).alias("run"), "cause", value.alias("interruptions"))
        )
    return (
        pl.concat(frames)
        if frames
        else pl.DataFrame(schema={"run": pl.String, "cause": pl.String, "interruptions": pl.Float64})
    )


JOB_ATTEMPTS = (
    "SELECT job_id, start_s, end_s, lost_work_s FROM job_attempts WHERE job_id = ? ORDER BY start_s"
)
JOB_CHECKPOINTS = "SELECT job_id, start_s, end_s FROM checkpoints WHERE job_id = ? ORDER BY start_s"
BUCKETS_S = (3600.0, 2 * 3600.0, 6 * 3600.0, 12 * 3600.0, 86400.0, 7 * 86400.0)


def timeline_bucket(duration_s: float, most: int = 200) -> float:
    """The shortest of 1 h, 2 h, 6 h, 12 h, 1 d, 1 week that cuts the longest run into at most `most` points."""
    return next((b for b in BUCKETS_S if duration_s / b <= most), BUCKETS_S[-1])


def ettr_over_time(infos: list[RunInfo]) -> pl.DataFrame:
    """Each run's flagship ETTR from the job's start to the end of every bucket
    (engine.analysis.analytics.ettr_timeline): columns run, day (bucket end, days since the run's start),
    ettr_cumulative. Runs without a flagship job (a replayed trace, an ingest) have no rows."""
    bucket = timeline_bucket(max((info.duration_s for info in infos), default=0.0))
    frames = []
    for info in infos:
        flagship = state.query(info.run_id, FLAGSHIP_JOB_SQL)
        if flagship.is_empty():
            continue
        job_id = flagship["job_id"][0]
        timeline = ettr_timeline(
            state.query(info.run_id, JOB_ATTEMPTS, (job_id,)),
            state.query(info.run_id, JOB_CHECKPOINTS, (job_id,)),
            job_id,
            bucket,
            info.duration_s,
        )
        frames.append(
            timeline.select(
                pl.lit(run_label(info)).alias("run"),
                (pl.min_horizontal(pl.col("t_s") + bucket, pl.lit(info.duration_s)) / SECONDS_PER_DAY).alias(
                    "day"
                ),
                "ettr_cumulative",
            )
        )
    return (
        pl.concat(frames)
        if frames
        else pl.DataFrame(schema={"run": pl.String, "day": pl.Float64, "ettr_cumulative": pl.Float64})
    )


# What failures cost a run's flagship job, in dollars: each loss of Goodput lost, then the warm standbys idle.
STANDBY_ITEM = "standby_hosts_idle"


def failure_costs(infos: list[RunInfo]) -> pl.DataFrame:
    """Each run's flagship losses in USD by ledger bucket (summary job.losses_usd) and its standby hosts' cost
    (job.recovery_cost.standby_usd): columns run, item (a ledger bucket or STANDBY_ITEM), label, usd. Runs
    without a flagship job, and items a summary lacks, have no rows."""
    rows = []
    for info in infos:
        job = RunSummary.from_json(info.summary).job
        if job is None or not job.gpus:
            continue
        for bucket in LOSSES:
            if isinstance(job.losses_usd.get(bucket), int | float):
                rows.append((run_label(info), bucket, LOSS_LABELS[bucket], float(job.losses_usd[bucket])))
        standby = job.recovery_cost.standby_usd
        if standby is not None:
            rows.append((run_label(info), STANDBY_ITEM, definition(STANDBY_ITEM).label, float(standby)))
    return pl.DataFrame(
        rows,
        schema={"run": pl.String, "item": pl.String, "label": pl.String, "usd": pl.Float64},
        orient="row",
    )
