"""The Standard Workload Format 2.2 of the Parallel Workloads Archive (Feitelson et al.).

Header comments start with `;` (`; MaxProcs: 128`, `; UnixStartTime: 749458803`); each job is one line of
18 whitespace-separated numbers, -1 meaning unknown:

     1 job number   2 submit time (s)   3 wait time (s)    4 run time (s)      5 allocated processors
     6 average CPU   7 used memory       8 requested procs  9 requested time   10 requested memory
    11 status (1 completed, 0 failed, 5 cancelled)          12 user  13 group  14 executable
    15 queue  16 partition  17 preceding job  18 think time

SWF counts processors, not GPUs: Goodput reads one allocated processor as one GPU slot (requested
processors where the allocation is unknown). Start = submit + wait (submit when the wait is unknown but the
job ran), end = start + run time.
"""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from engine import limits
from engine.replay import bounds
from engine.replay.trace import Trace, TraceError, check, finish, split_lines

FIELDS = [
    "job",
    "submit",
    "wait",
    "run",
    "procs",
    "cpu",
    "mem",
    "req_procs",
    "req_time",
    "req_mem",
    "status",
    "user",
    "group",
    "exe",
    "queue",
    "partition",
    "preceding",
    "think",
]
# the fields behind each job column, for errors (GPUs are requested processors where none were allocated)
SWF_NAMES = {
    "gpus": "processors (field 5, or 8)",
    "submit_s": "submit time (field 2)",
    "start_s": "submit + wait time (fields 2 + 3)",
    "end_s": "start + run time (fields 2 + 3 + 4)",
    "duration_s": "run time (field 4, or 9)",
}
STATUS = {1: "completed", 0: "failed", 5: "cancelled", 2: "partial", 3: "partial", 4: "partial"}


def parse(source: str, text: str, beside: Path | None = None) -> Trace:
    header = _header(text)
    for key, limit in (("MaxProcs", limits.MAX_CLUSTER_GPUS), ("MaxNodes", limits.MAX_HOSTS)):
        value = header.get(key, "")
        if value.isdigit() and (len(value) > 18 or int(value) > limit):  # read by engine.replay.cluster
            raise TraceError(
                f"{source}: header `; {key}: {value[:40]}` is over Goodput's limit of {limit:,}"
                " (engine/limits.py)"
            )
    lines = split_lines(source, text, comment=";")
    if not len(lines.text):
        raise TraceError(f"{source}: the SWF trace has no job lines")
    tokens = lines.text.str.strip_chars().str.replace_all(r"\s+", " ").str.split(" ")
    check(lines, tokens.list.len() != 18, "an SWF job line has 18 whitespace-separated fields")
    values = {}
    for i, name in enumerate(FIELDS):
        raw = tokens.list.get(i)
        value = raw.cast(pl.Float64, strict=False)
        check(lines, value.is_null() | ~value.is_finite(), f"field {i + 1} ({name}) is not a number")
        values[name] = value
    frame = pl.DataFrame(values)
    check(lines, frame["submit"] < 0, "submit time (field 2) is unknown or negative")
    check(lines, frame["job"].is_duplicated(), "job number (field 1) appears more than once")
    known = pl.col
    frame = frame.with_columns(
        gpus=pl.when(known("procs") >= 0)
        .then(known("procs"))
        .otherwise(known("req_procs"))
        .clip(lower_bound=0),
        # an unknown wait with a known run time: the job ran, and such logs give start times as submit
        # times (the NASA iPSC header says so), so it started on submission
        start_s=pl.when(known("wait") >= 0)
        .then(known("submit") + known("wait"))
        .when(known("run") >= 0)
        .then(known("submit")),
        run=pl.when(known("run") >= 0).then(known("run")),
    ).with_columns(
        end_s=known("start_s") + known("run"),
        duration_s=known("run").fill_null(pl.when(known("req_time") >= 0).then(known("req_time"))),
    )
    out = frame.select(
        job_id=known("job").cast(pl.Int64).cast(pl.String),
        name=pl.format("job-{}", known("job").cast(pl.Int64)),
        user=pl.when(known("user") >= 0).then(pl.format("user{}", known("user").cast(pl.Int64))),
        gpus=known("gpus"),
        priority=pl.lit(0),
        submit_s=known("submit"),
        start_s=known("start_s"),
        end_s=known("end_s"),
        duration_s=known("duration_s"),
        state=known("status")
        .cast(pl.Int64)
        .replace_strict(STATUS, default="unknown", return_dtype=pl.String),
        memory_mb=pl.when(known("mem") >= 0).then(known("mem") * known("gpus") / 1024.0),  # SWF: KB per proc
    )
    bounds.check_jobs(lines, out, names=SWF_NAMES)
    start = header.get("UnixStartTime")
    started = datetime.fromtimestamp(float(start), UTC) if _is_number(start) else None
    return Trace(finish(out), "swf", source, started_at=started, notes={"header": header})


def _header(text: str) -> dict[str, str]:
    """`; Key: value` header lines (the first value of each key)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(";"):
            break
        if ":" in stripped:
            key, _, value = stripped.lstrip("; ").partition(":")
            found.setdefault(key.strip(), value.strip())
    return found


def _is_number(text: str | None) -> bool:
    try:
        return text is not None and abs(float(text)) < 1e12
    except ValueError:
        return False
