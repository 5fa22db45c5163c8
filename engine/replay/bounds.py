"""Every size a trace file states, checked against engine/limits.py before anything is built from it.

Two steps, both vectorised:
- `check_text` on the raw bytes, before the file is split into lines: the number of lines (a gigabyte of
  newlines would otherwise become a billion Python strings) and the longest line, found by scanning the
  bytes in slices with NumPy.
- `check_jobs` on a parser's frame (one row per job, in line order), before the cluster is built: the
  number of jobs, each job's GPUs and hosts, and its times. A 56-byte CSV asking for 100,000,000 GPUs stops
  here with an error naming the file, line, column, value and limit, instead of building 100,000,000 GPUs.
"""

import numpy as np
import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.units import SECONDS_PER_DAY

_SLICE = 64 * 1024 * 1024  # bytes scanned at once for newlines: bounds the scan's own memory


def check_text(
    source: str,
    data: bytes,
    max_lines: int | None = None,
    what: str = "lines in one trace",
    error: type[GoodputError] = GoodputError,
) -> None:
    """Refuse a file with more lines than `max_lines` (default MAX_TRACE_LINES; `what` names them) or a line
    longer than MAX_LINE_BYTES."""
    max_lines = limits.MAX_TRACE_LINES if max_lines is None else max_lines
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if lines > max_lines:
        raise too_many_lines(source, lines, max_lines, what, error)
    longest, line = longest_line(data)
    if longest > limits.MAX_LINE_BYTES:
        raise line_too_long(source, line, longest, error)


def too_many_lines(
    source: str,
    lines: int,
    max_lines: int | None = None,
    what: str = "lines in one trace",
    error=GoodputError,
) -> GoodputError:
    """The error for a trace of more than `max_lines` (default MAX_TRACE_LINES) lines; `lines` may be a lower
    bound (a stream refused as soon as it passes the limit)."""
    max_lines = limits.MAX_TRACE_LINES if max_lines is None else max_lines
    return error(
        f"{source}: {lines:,} lines, over Goodput's limit of {max_lines:,} {what} (engine/limits.py)"
    )


def line_too_long(source: str, line: int, nbytes: int, error=GoodputError) -> GoodputError:
    """The error for line `line` (1-based) of `nbytes` bytes, over MAX_LINE_BYTES: replay's sacct reader and the
    watch's read of sacct (engine/ingest/slurm.py) say the same."""
    return error(
        f"{source}, line {line:,}: {nbytes:,} bytes long, over Goodput's limit of "
        f"{limits.MAX_LINE_BYTES:,} bytes a line (engine/limits.py)"
    )


def clip_text(text: pl.Expr) -> pl.Expr:
    """A name (a job's, a user's, a partition's) cut visibly to MAX_NAME_CHARS: its first characters and `…`.
    Slurm keeps names of any length; a page that draws a megabyte-long job name does not come back."""
    most = limits.MAX_NAME_CHARS
    return (
        pl.when(text.str.len_chars() > most)
        .then(pl.concat_str(text.str.slice(0, most - 1), pl.lit("…")))
        .otherwise(text)
    )


def longest_line(data: bytes) -> tuple[int, int]:
    """(length in bytes, 1-based number) of the longest line of `data`, newlines not counted."""
    view = np.frombuffer(data, dtype=np.uint8)
    best, best_line = 0, 1
    line_start, lines_before = 0, 0  # where the current line began; newlines seen before this slice
    for offset in range(0, max(len(view), 1), _SLICE):
        newlines = np.flatnonzero(view[offset : offset + _SLICE] == 10) + offset
        if newlines.size:
            starts = np.concatenate(([line_start], newlines[:-1] + 1))
            lengths = newlines - starts
            i = int(lengths.argmax())
            if lengths[i] > best:
                best, best_line = int(lengths[i]), lines_before + i + 1
            line_start, lines_before = int(newlines[-1]) + 1, lines_before + newlines.size
    if len(view) - line_start > best:  # the last line, without a newline after it
        best, best_line = len(view) - line_start, lines_before + 1
    return best, best_line


def check_jobs(lines, frame: pl.DataFrame, offset: int = 0, names: dict[str, str] | None = None) -> None:
    """The jobs of `frame` (rows in the order of `lines`, after `offset` header lines) within the limits:
    their count, GPUs (`gpus`), hosts (`hosts`, where given) and times (`submit_s`, `start_s`, `end_s`,
    `duration_s`: within MAX_RUN_DAYS of the first submit). `names` spells a column as the file does
    (SWF's `gpus` is "allocated processors (field 5)"); by default the frame's name, `_s` dropped."""
    names = names or {}
    if frame.height > limits.MAX_TRACE_JOBS:
        raise GoodputError(
            f"{lines.source}: {frame.height:,} jobs, over Goodput's limit of "
            f"{limits.MAX_TRACE_JOBS:,} jobs in one trace (engine/limits.py)"
        )
    check_column(
        lines, frame["gpus"], limits.MAX_CLUSTER_GPUS, names.get("gpus", "gpus"), "GPUs for one job", offset
    )
    if "hosts" in frame.columns:
        check_column(
            lines, frame["hosts"], limits.MAX_HOSTS, names.get("hosts", "hosts"), "hosts for one job", offset
        )
    span = limits.MAX_RUN_DAYS * SECONDS_PER_DAY
    times = [c for c in ("submit_s", "start_s", "end_s") if c in frame.columns]
    if frame.height and times:
        first = frame.select(pl.min_horizontal(pl.col(times).min())).item()
        for name in times:
            check_column(
                lines,
                frame[name] - first,
                span,
                names.get(name, name.removesuffix("_s")),
                "seconds after the trace's first submit",
                offset,
            )
    if "duration_s" in frame.columns:
        check_column(
            lines,
            frame["duration_s"],
            span,
            names.get("duration_s", "duration"),
            "seconds of work for one job",
            offset,
        )


def check_column(lines, values: pl.Series, limit: float, column: str, unit: str, offset: int = 0) -> None:
    """The first value of `values` over `limit` (inf included) is an error naming file, line and column."""
    over = (values.cast(pl.Float64) > limit).fill_null(False)
    hits = over.arg_true()
    if len(hits):
        i = int(hits[0])
        value = float(values[i])
        shown = f"{value:,.0f}" if abs(value) < 1e18 else f"{value:g}"
        raise lines.fail(
            i + offset, f"{column} {shown} is over Goodput's limit of {limit:,.0f} {unit} (engine/limits.py)"
        )
