"""Slurm accounting: `sacct --parsable2` output (`|`-separated, a header line, no trailing `|`).

    sacct --allusers --parsable2 --starttime 2024-03-01 \
      --format JobID,JobName,User,Submit,Start,End,State,AllocTRES,ReqTRES,NNodes,NodeList,Priority,\
               Elapsed,Timelimit

Fields read (header names, any order, any case): JobID, Submit, Start, End, State, AllocTRES (required);
JobName, User, NNodes, NodeList, Priority, Elapsed, ReqTRES, Timelimit (optional). Job steps (`123.batch`,
`123.extern`, `123.0`) are skipped: their job is the line without a dot. Array tasks (`123_4`) and
heterogeneous components (`123+0`) are jobs of their own. GPUs are `gres/gpu=N` of AllocTRES (ReqTRES for a
job that never started; a typed `gres/gpu:h100=N` when no untyped count is given); CPUs `cpu=N`, memory
`mem=N[KMGT]`. `Unknown`/`None` times are null. Timestamps are Slurm's ISO `YYYY-MM-DDTHH:MM:SS`, read as UTC.
The work a job does when re-scheduled is Elapsed (End - Start without it); a job that never started has
its Timelimit, else no duration (it stays pending).
"""

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from engine import limits
from engine.replay import bounds
from engine.replay import columns as col
from engine.replay.delimited import column, read_table, require
from engine.replay.trace import Lines, Trace, TraceError, check, finish, rebase

REQUIRED = ["JobID", "Submit", "Start", "End", "State", "AllocTRES"]
_GPU_UNTYPED = r"(?:^|,)gres/gpu=(\d+)"
_GPU_TYPED = r"(?:^|,)gres/gpu:[^=,]+=(\d+)"
_MEM_SCALE = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024, "": 1.0}
_UNKNOWN_TIME = ["Unknown", "None", ""]


def parse(source: str, text: str, beside: Path | None = None) -> Trace:
    first = text.lstrip().split("\n", 1)[0].rstrip()
    parts, names, lines = read_table(source, text, "|", "sacct --parsable2", trailing_sep=first.endswith("|"))
    require(lines, parts, names, REQUIRED, "sacct --parsable2")
    job_id = column(parts, names, "JobID")
    is_job = ~job_id.str.contains(".", literal=True)
    check(lines, job_id == "", "JobID is empty", 1)
    keep = is_job.arg_true()
    if not len(keep):
        raise TraceError(f"{source}: no jobs, only job steps (lines like 123.batch)")
    steps = len(job_id) - len(keep)
    parts = parts[keep]
    numbers = lines.number.slice(1).gather(keep)
    sub = Lines(
        lines.source,
        None if lines.text is None else lines.text.slice(1).gather(keep),
        numbers,
        full=lines.full,
    )

    def get(name: str) -> pl.Series | None:
        return column(parts, names, name)

    job_id = get("JobID")
    check(sub, job_id.is_duplicated(), "JobID appears more than once")
    out: dict[str, pl.Series] = {"job_id": job_id, **_times(sub, get)}
    state = get("State").str.extract(r"^([A-Za-z_]+)", 1).str.to_lowercase()
    check(sub, state.is_null(), "State is not a Slurm job state")
    out["state"] = state
    out.update(_resources(get("AllocTRES"), get("ReqTRES")))
    out.update(_named_and_counted(sub, get))
    out["duration_s"] = _duration(sub, get, out["start_s"], out["end_s"])
    node_list = get("NodeList")
    if node_list is not None:
        out["nodes"] = _expand_nodelists(sub, node_list)
    return _trace(source, sub, out, steps)


Getter = Callable[[str], pl.Series | None]


def _times(sub: Lines, get: Getter) -> dict[str, pl.Series]:
    """submit_s, start_s and end_s (epoch seconds), each checked, and in order."""
    out: dict[str, pl.Series] = {}
    for name in ("Submit", "Start", "End"):
        raw = get(name)
        value = col.timestamps(raw)
        check(sub, value.is_null() & ~raw.is_in(_UNKNOWN_TIME), f"{name} is not a YYYY-MM-DDTHH:MM:SS time")
        if name == "Submit":
            check(sub, value.is_null(), "Submit is unknown")
        out[f"{name.lower()}_s"] = value
    check(sub, out["start_s"] < out["submit_s"], "Start is before Submit")
    check(sub, out["end_s"] < out["start_s"], "End is before Start")
    return out


def _resources(tres: pl.Series, req: pl.Series | None) -> dict[str, pl.Series]:
    """gpus, cpu and memory_mb from AllocTRES (ReqTRES where nothing was allocated)."""
    if req is not None:
        tres = pl.Series("tres", tres).set(tres == "", None).fill_null(req)
    mem = pl.DataFrame(
        {
            "n": tres.str.extract(r"(?:^|,)mem=(\d+(?:\.\d+)?)", 1).cast(pl.Float64),
            "u": tres.str.extract(r"(?:^|,)mem=\d+(?:\.\d+)?([KMGT]?)", 1),
        }
    )
    return {
        "gpus": gpus_from_tres(tres),
        "cpu": tres.str.extract(r"(?:^|,)cpu=(\d+)", 1).cast(pl.Float64),
        "memory_mb": mem["n"] * mem["u"].replace_strict(_MEM_SCALE, default=1.0, return_dtype=pl.Float64),
    }


def _named_and_counted(sub: Lines, get: Getter) -> dict[str, pl.Series]:
    """name and user (cut to MAX_NAME_CHARS), priority and hosts (NNodes; 0 is unknown), where given."""
    out: dict[str, pl.Series] = {}
    for name, target in (("JobName", "name"), ("User", "user")):
        raw = get(name)
        if raw is not None:  # cut to MAX_NAME_CHARS, as the watch's read of sacct does
            out[target] = raw.to_frame().select(bounds.clip_text(pl.col(name))).to_series()
    for name, target in (("Priority", "priority"), ("NNodes", "hosts")):
        raw = get(name)
        if raw is not None:
            value = col.integers(raw)
            check(sub, (raw != "") & value.is_null(), f"{name} must be an integer")
            out[target] = value.set(value == 0, None) if target == "hosts" else value
    return out


def _duration(sub: Lines, get: Getter, start_s: pl.Series, end_s: pl.Series) -> pl.Series:
    """The work to do: Elapsed (else End - Start) for jobs that started, the Timelimit for the others."""
    duration = end_s - start_s
    elapsed = get("Elapsed")
    if elapsed is not None:
        value = col.slurm_elapsed(elapsed)
        check(sub, (elapsed != "") & value.is_null(), "Elapsed is not [D-]HH:MM:SS")
        duration = value.set(start_s.is_null(), None).fill_null(duration)
    limit = get("Timelimit")
    if limit is not None:
        duration = duration.set(start_s.is_null(), None).fill_null(col.slurm_elapsed(limit))
    return duration


def _trace(source: str, sub: Lines, out: dict[str, pl.Series], steps: int) -> Trace:
    """The jobs rebased to their first submit, bounds checked, as a Trace."""
    frame = pl.DataFrame(out)
    origin = float(frame["submit_s"].min()) if frame.height else 0.0
    frame, _ = rebase(frame, origin)
    bounds.check_jobs(
        sub,
        frame,
        names={
            "gpus": "AllocTRES gres/gpu",
            "hosts": "NNodes",
            "submit_s": "Submit",
            "start_s": "Start",
            "end_s": "End",
            "duration_s": "Elapsed",
        },
    )
    started = datetime.fromtimestamp(origin, UTC) if frame.height else None
    return Trace(finish(frame), "sacct", source, started_at=started, notes={"steps_skipped": steps})


def gpus_from_tres(tres: pl.Series) -> pl.Series:
    untyped = tres.str.extract(_GPU_UNTYPED, 1).cast(pl.Float64)
    typed = tres.str.extract(_GPU_TYPED, 1).cast(pl.Float64)
    return untyped.fill_null(typed).fill_null(0.0).alias("gpus")


class TooManyHosts(ValueError):
    """A hostlist that names more hosts than Goodput's limit (raised before they are made)."""


_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_ITEM = r"(?:[^,\[\]]*(?:\[[0-9,\-]+\][^,\[\]]*)+|[^,\[\]]+)"
_HOSTLIST = re.compile(rf"^{_ITEM}(?:,{_ITEM})*$")


def expand_hostlist(text: str, most: int | None = None) -> list[str]:
    """Slurm hostlist syntax: `gpu[001-003,007],login1` -> gpu001 gpu002 gpu003 gpu007 login1; a ValueError
    for a list of more than `most` (default MAX_HOSTS) names, raised before they are made."""
    most = limits.MAX_HOSTS if most is None else most
    if not _HOSTLIST.match(text):
        raise ValueError("unbalanced brackets or an empty name")
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text):
        match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not match:
            if len(names) + 1 > most:
                raise TooManyHosts(f"names more than Goodput's limit of {most:,} hosts (engine/limits.py)")
            names.append(part)
            continue
        prefix, ranges, suffix = match.groups()
        if "[" in suffix:
            raise ValueError("nested brackets")
        for item in ranges.split(","):
            found = _RANGE.match(item)
            if not found:
                raise ValueError(f"bad range {item!r}")
            low, high = found.group(1), found.group(2) or found.group(1)
            if int(high) < int(low) or int(high) - int(low) > 100_000:
                raise ValueError(f"bad range {item!r}")
            if len(names) + int(high) - int(low) + 1 > most:
                raise TooManyHosts(f"names more than Goodput's limit of {most:,} hosts (engine/limits.py)")
            names.extend(f"{prefix}{n:0{len(low)}d}{suffix}" for n in range(int(low), int(high) + 1))
    return names


def _expand_nodelists(lines, node_list: pl.Series) -> pl.Series:
    """Each distinct NodeList expanded once (a trace has far fewer distinct lists than lines)."""
    absent = node_list.is_in(["", "None assigned", "(null)"])
    expanded: dict[str, list[str] | None] = {}
    # each distinct list in the order of the lines, and how many jobs name it
    uses = pl.DataFrame({"key": node_list.filter(~absent)}).group_by("key", maintain_order=True).len()
    slots = 0  # job-host pairs: what the jobs' node-list column will hold
    for text, count in uses.iter_rows():
        try:
            expanded[text] = expand_hostlist(text)
        except TooManyHosts as err:
            raise lines.fail(int((node_list == text).arg_true()[0]), f"NodeList {err}") from None
        except ValueError as err:
            index = int((node_list == text).arg_true()[0])
            raise lines.fail(index, f"NodeList is not Slurm hostlist syntax ({err})") from None
        slots += len(expanded[text]) * count
        if slots > limits.MAX_TRACE_HOST_SLOTS:
            index = int((node_list == text).arg_true()[0])
            raise lines.fail(
                index,
                f"the NodeLists up to this one name over Goodput's limit of "
                f"{limits.MAX_TRACE_HOST_SLOTS:,} job-host pairs (engine/limits.py)",
            )
    if not expanded:
        return pl.Series("nodes", [None] * len(node_list), dtype=pl.List(pl.String))
    table = pl.DataFrame(
        {"key": list(expanded), "nodes": list(expanded.values())},
        schema={"key": pl.String, "nodes": pl.List(pl.String)},
    )
    return pl.DataFrame({"key": node_list}).join(table, on="key", how="left", maintain_order="left")["nodes"]
