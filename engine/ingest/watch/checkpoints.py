"""Checkpoints where the job logs them: a gauge holding the epoch seconds of a job's latest saved checkpoint.

    training_checkpoint_timestamp_seconds{slurm_job_id="1234"} 1733140812.5

A training job (or its launcher) exports it with node_exporter's textfile collector, a pushgateway or any
exporter; `goodput watch --checkpoint-metric training_checkpoint_timestamp_seconds` reads it each cycle over
(last read, now] at Prometheus' scrape step, and each distinct value of a job's series is one checkpoint at that
time. The value is the checkpoint's own time, so it is exact even between scrapes; only a checkpoint overwritten
by the next one within a single scrape interval is missed (the gauge holds the latest).
"""

import math
import re

import polars as pl

from engine.errors import GoodputError

DEFAULT_JOB_LABEL = "slurm_job_id"
# Steps one read may ask a series for: under Prometheus' 11,000 points a series (its API's maxResolution). A longer
# window (a first cycle looking days back) is read at a coarser step; a checkpoint overwritten within one such step
# is then missed, the others are not (the gauge keeps the latest).
MAX_STEPS = 10_000
_METRIC = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")  # Prometheus' metric and label name syntax
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
CHECKPOINT_COLUMNS = {"job_id": pl.String, "t": pl.Float64}


def check_names(metric: str, job_label: str) -> None:
    """A clear error for a metric or label name Prometheus would refuse (or that would change the query)."""
    if not _METRIC.match(metric):
        raise GoodputError(f"--checkpoint-metric: {metric!r} is not a Prometheus metric name")
    if not _LABEL.match(job_label) or job_label.startswith("__"):
        raise GoodputError(f"--checkpoint-job-label: {job_label!r} is not a Prometheus label name")


def read_checkpoints(source, metric: str, job_label: str, start: float, end: float) -> pl.DataFrame:
    """job_id (String), t (Float64, epoch s): each distinct positive value of the jobs' checkpoint series over
    [start, end], one row each. Series without the job label are not asked for."""
    from engine.ingest.prometheus import query_range, scrape_interval

    check_names(metric, job_label)
    if end <= start:
        return pl.DataFrame(schema=CHECKPOINT_COLUMNS)
    step = max(scrape_interval(source), math.ceil((end - start) / MAX_STEPS))
    frame = query_range(source, f'{metric}{{{job_label}!=""}}', start, end, step)
    # query_range names a label called t or value label_t, label_value (its own columns keep those names)
    column = f"label_{job_label}" if job_label in ("t", "value") else job_label
    if column not in frame.columns:
        return pl.DataFrame(schema=CHECKPOINT_COLUMNS)
    return (
        frame.filter(pl.col("value").is_finite() & (pl.col("value") > 0) & pl.col(column).is_not_null())
        .select(pl.col(column).cast(pl.String).alias("job_id"), pl.col("value").alias("t"))
        .unique()
        .sort("job_id", "t")
    )
