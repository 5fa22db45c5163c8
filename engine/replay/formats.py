"""The trace formats, one registry: each format is a TraceFormat (its name, what it reads, its parser), and
`--format auto` tells them apart by their first meaningful line.

A new format is one module with a `parse(source, text, beside=...) -> Trace` plus one `register(...)` line
below; the CLI's `replay --format` choices and the dashboard's import picker read `names()`.
The shared pieces (Trace, Lines, read_text, ...) live in engine.replay.trace, so parsers never import this module.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.errors import GoodputError
from engine.replay import goodput_csv, openb, sacct, swf
from engine.replay.trace import (  # re-exported: the names this module has always offered
    CLUSTER_COLUMNS,
    JOB_COLUMNS,
    Lines,
    Trace,
    TraceError,
    check,
    finish,
    first_bad,
    read_text,
    rebase,
    split_lines,
)

__all__ = [
    "CLUSTER_COLUMNS",
    "FORMATS",
    "JOB_COLUMNS",
    "Lines",
    "Trace",
    "TraceError",
    "TraceFormat",
    "check",
    "detect_format",
    "finish",
    "first_bad",
    "lookup",
    "names",
    "parse_trace",
    "read_text",
    "rebase",
    "register",
    "split_lines",
]

Parser = Callable[..., Trace]  # parse(source, text, beside=Path | None, **extra) -> Trace


@dataclass(frozen=True)
class TraceFormat:
    """One trace source: its `--format` name, what it reads, and its parser (None: not parsed as a job trace,
    e.g. incidents, which engine.replay.run.replay_file replays whole)."""

    name: str
    description: str
    parse: Parser | None
    takes_node_list: bool = False  # an openb pod list may come with its node list


_REGISTRY: dict[str, TraceFormat] = {}


def register(fmt: TraceFormat) -> TraceFormat:
    """Add (or replace) a trace format; it becomes a `--format` choice and a dashboard import choice."""
    _REGISTRY[fmt.name] = fmt
    return fmt


def names() -> tuple[str, ...]:
    """The registered format names, in registration order (without `auto`)."""
    return tuple(_REGISTRY)


def lookup(name: str) -> TraceFormat:
    """The format called `name`; the usual one-line error listing the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise GoodputError(
            f"--format: unknown trace format {name!r}; one of auto, {', '.join(_REGISTRY)}"
        ) from None


register(TraceFormat("goodput", "goodput CSV (job_id,submit,gpus,duration,...)", goodput_csv.parse))
register(TraceFormat("sacct", "Slurm sacct --parsable2 output", sacct.parse))
register(TraceFormat("swf", "Standard Workload Format 2.2", swf.parse))
register(
    TraceFormat("openb", "Alibaba openb pod list (and its node list)", openb.parse, takes_node_list=True)
)
register(TraceFormat("incidents", "a Goodput incidents export, replayed whole", None))

FORMATS = names()  # the built-in formats, as a constant for old callers; names() sees later registrations


# ----- detection --------------------------------------------------------------------------------------------

_SWF_DATA = re.compile(r"^\s*-?\d+(\s+-?\d+(\.\d+)?){17}\s*$")


def detect_format(source: str, text: str) -> str:
    """goodput, sacct, swf or openb, from the first meaningful line; a clear error when none fits."""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip().lstrip("\ufeff")
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith(";"):
            return "swf"  # SWF header comments
        if _SWF_DATA.match(stripped):
            return "swf"
        fields = {f.strip().strip('"').lower() for f in re.split(r"[|,]", stripped)}
        if "|" in stripped and "jobid" in fields:
            return "sacct"
        if {"gpu_milli", "num_gpu", "creation_time"} <= fields:
            return "openb"
        if {"job_id", "submit", "gpus"} <= fields:
            return "goodput"
        if {"incident_id", "t_s", "cause"} <= fields:
            return "incidents"
        if {"sn", "gpu", "model"} <= fields:  # given where the pod list belongs: say where it goes instead
            raise TraceError(
                f"{source}: an Alibaba openb node list, not a job trace: give it with its pod list"
                " (beside the pod list for `goodput replay`, in the node list box on the Data page)"
            )
        raise TraceError(
            f"{source}, line {number}: cannot tell the trace format from {stripped[:80]!r};"
            " expected a goodput CSV"
            " header (job_id,submit,gpus,duration,...), sacct --parsable2 output (JobID|...), SWF 2.2 or an"
            " Alibaba openb pod list; or pass --format"
        )
    raise TraceError(f"{source}: the trace is empty")


def parse_trace(
    path_or_bytes: str | Path | bytes,
    fmt: str = "auto",
    name: str | None = None,
    node_list: tuple[str, bytes] | None = None,
) -> Trace:
    """Any supported trace, by `fmt` or detected (`auto`). Raises TraceError naming the file and line.

    `node_list` (name, bytes): an openb pod list's node list, uploaded beside it (a file path finds its own)."""
    source, text = read_text(path_or_bytes, name)
    if fmt == "auto":
        fmt = detect_format(source, text)
    if fmt == "incidents":
        raise GoodputError(
            f"{source}: an incidents file is replayed by engine.replay.run.replay_file, "
            "not parsed as a job trace"
        )
    entry = lookup(fmt)
    if entry.parse is None:
        raise GoodputError(f"{source}: a {fmt} file is not parsed as a job trace")
    beside = Path(path_or_bytes).parent if isinstance(path_or_bytes, str | Path) else None
    if node_list is not None and not entry.takes_node_list:
        raise GoodputError(
            f"{node_list[0]}: a node list goes with an Alibaba openb pod list; {source} is a {fmt}"
            " trace (leave the node list out)"
        )
    extra = {"node_list": node_list} if entry.takes_node_list else {}
    trace = entry.parse(source, text, beside=beside, **extra)
    trace.name = name or Path(source).name
    return trace
