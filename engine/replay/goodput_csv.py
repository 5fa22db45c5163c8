"""Goodput's own job CSV: the simplest way to hand a workload to `goodput replay`.

    job_id,submit,gpus,duration,priority,start,end,name,user,hosts,on_failure
    train-1,0,16,2h,10,,,,,,
    eval-7,30m,0.5,900,0,35m,50m,,,,

Required: job_id, submit, gpus, duration. Optional: priority (default 0, larger first), start and end (as
recorded; both or neither), name, user, hosts (hosts the job spans), on_failure (requeue or restart).
Times and durations are seconds or duration strings (`90s`, `30m`, `2h`, `1d`); submit/start/end are
offsets from the trace's start. Fields may not contain commas (no quoting).
"""

from pathlib import Path

import polars as pl

from engine.replay import bounds
from engine.replay import columns as col
from engine.replay.delimited import column, read_table, require
from engine.replay.trace import Trace, check, finish

REQUIRED = ["job_id", "submit", "gpus", "duration"]


def parse(source: str, text: str, beside: Path | None = None) -> Trace:
    parts, names, lines = read_table(source, text, ",", "goodput CSV", comment="#")
    require(lines, parts, names, REQUIRED, "goodput CSV")

    def get(name: str) -> pl.Series | None:
        return column(parts, names, name)

    job_id = get("job_id")
    check(lines, job_id == "", "job_id is empty", 1)
    check(lines, job_id.is_duplicated(), "job_id appears more than once", 1)
    out: dict[str, pl.Series] = {"job_id": job_id}
    for name, target in (("submit", "submit_s"), ("duration", "duration_s")):
        out[target] = _timed(lines, get(name), name)
    gpus = col.numbers(get("gpus"))
    check(lines, gpus.is_null() | (gpus < 0), "gpus must be a number >= 0", 1)
    out["gpus"] = gpus
    for name in ("start", "end"):
        raw = get(name)
        if raw is not None:
            out[f"{name}_s"] = _timed(lines, raw, name, optional=True)
    if ("start_s" in out) != ("end_s" in out):
        raise lines.fail(0, "give both start and end columns, or neither")
    if "start_s" in out:
        start, end = out["start_s"], out["end_s"]
        check(lines, start.is_null() & end.is_not_null(), "end given without start", 1)
        check(lines, start < out["submit_s"], "start is before submit", 1)
        check(lines, end < start, "end is before start", 1)
    for name, kind in (("priority", col.integers), ("hosts", col.integers)):
        raw = get(name)
        if raw is not None:
            value = kind(raw)
            check(lines, (raw != "") & value.is_null(), f"{name} must be an integer", 1)
            if name == "hosts":
                check(lines, value < 1, "hosts must be at least 1", 1)
            out[name] = value
    for name in ("name", "user"):
        raw = get(name)
        if raw is not None:
            out[name] = raw.set(raw == "", None)
    policy = get("on_failure")
    if policy is not None:
        policy = policy.set(policy == "", None)
        check(
            lines,
            policy.is_not_null() & ~policy.is_in(["requeue", "restart"]),
            "on_failure must be requeue or restart",
            1,
        )
        out["on_failure"] = policy
    frame = pl.DataFrame(out)
    bounds.check_jobs(lines, frame, offset=1)
    state = (
        pl.when(pl.col("end_s").is_not_null())
        .then(pl.lit("completed"))
        .when(pl.col("start_s").is_not_null())
        .then(pl.lit("running"))
        .otherwise(pl.lit("pending"))
        if "start_s" in out
        else pl.lit("pending")
    )
    frame = frame.with_columns(state=state)
    return Trace(finish(frame), "goodput", source)


def _timed(lines, raw: pl.Series, name: str, optional: bool = False) -> pl.Series:
    value = col.durations(raw)
    bad = value.is_null() & (raw != "") if optional else value.is_null()
    check(lines, bad, f"{name} must be seconds or a duration such as 90s, 30m, 2h", 1)
    return value
