"""What every trace parser shares: the Trace record, reading a file into lines, line-numbered errors.

Every parser turns its file into the same Polars frame (JOB_COLUMNS), whole columns at a time: a file is
split into lines once, each line's fields come from one vectorised split, and a bad field is found with a
vectorised mask whose first hit names the file and line in a GoodputError.
"""

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from engine import limits
from engine.bounded_read import read_bounded
from engine.errors import GoodputError
from engine.replay import bounds

JOB_COLUMNS: dict[str, pl.DataType] = {
    "job_id": pl.String,
    "name": pl.String,
    "user": pl.String,
    "gpus": pl.Float64,  # fractional where a trace shares GPUs (openb gpu_milli < 1000)
    "hosts": pl.Int32,  # hosts the job needs (null: derived from gpus and the host size)
    "gpu_share": pl.Int32,  # thousandths of each GPU the job holds (1000: whole GPUs)
    "priority": pl.Int64,  # larger runs first
    "submit_s": pl.Float64,
    "start_s": pl.Float64,  # recorded; null when it never started
    "end_s": pl.Float64,  # recorded; null when it had not ended
    "duration_s": pl.Float64,  # the work to do when re-scheduled
    "state": pl.String,  # completed, failed, cancelled, running, pending, timeout, preempted, node_fail
    "cpu": pl.Float64,  # cores
    "memory_mb": pl.Float64,
    "nodes": pl.List(pl.String),  # recorded host names (sacct NodeList), else null
    "on_failure": pl.String,  # requeue or restart
}

CLUSTER_COLUMNS: dict[str, pl.DataType] = {"hostname": pl.String, "gpus": pl.Int32, "model": pl.String}


@dataclass
class Trace:
    """A parsed job trace: its jobs and the cluster it ran on (None: infer it from the jobs)."""

    jobs: pl.DataFrame
    fmt: str
    name: str
    cluster: pl.DataFrame | None = None
    started_at: datetime | None = None
    notes: dict = field(default_factory=dict)  # format facts worth keeping (SWF header, skipped steps)


class TraceError(GoodputError):
    """A malformed trace: the message names the file and the line."""


@dataclass
class Lines:
    """A trace file as text lines, with the 1-based number each had in the file."""

    source: str
    text: pl.Series | None  # String; None when read by the fast path (then `full` holds the file's text)
    number: pl.Series  # UInt32, 1-based line numbers
    full: str | None = None

    def fail(self, index: int, what: str) -> TraceError:
        if self.text is not None:
            line = self.text[index]
        else:  # only on error: find the line in the whole text
            line = self.full.split("\n")[self.number[index] - 1]
        shown = line if len(line) <= 80 else line[:77] + "..."
        return TraceError(f"{self.source}, line {self.number[index]}: {what}: {shown!r}")


def read_text(path_or_bytes: str | Path | bytes, name: str | None = None) -> tuple[str, str]:
    """(source name for errors, text). Bytes come from an upload; `name` then names them."""
    if isinstance(path_or_bytes, bytes | bytearray):
        source, data = name or "<upload>", bytes(path_or_bytes)
        if len(data) > limits.MAX_INPUT_BYTES:
            raise TraceError(
                f"{source}: the trace is larger than Goodput's limit of {limits.MAX_INPUT_BYTES:,}"
                " bytes (engine/limits.py)"
            )
    else:
        source = name or str(path_or_bytes)
        try:
            data = read_bounded(path_or_bytes, "the trace", source=source)
        except GoodputError as err:
            raise TraceError(str(err)) from None
    bounds.check_text(source, data)  # line count and length, before the text is decoded or split
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise TraceError(f"{source}, line {line}: not UTF-8 text (byte {err.start})") from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise TraceError(f"{source}, line {line}: a NUL byte: this is not a text trace")
    return source, text


def split_lines(source: str, text: str, comment: str | None = None) -> Lines:
    """Non-blank lines (and, with `comment`, not comment lines), numbered as in the file."""
    raw = pl.Series("text", text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), dtype=pl.String)
    keep = raw.str.strip_chars() != ""
    if comment is not None:
        keep = keep & ~raw.str.strip_chars_start().str.starts_with(comment)
    numbers = pl.Series("number", range(1, len(raw) + 1), dtype=pl.UInt32)
    return Lines(source, raw.filter(keep), numbers.filter(keep))


def first_bad(mask: pl.Series) -> int | None:
    """Index of the first True in `mask` (nulls count as False), or None."""
    hits = mask.fill_null(False).arg_true()
    return int(hits[0]) if len(hits) else None


def check(lines: Lines, mask: pl.Series, what: str, offset: int = 0) -> None:
    """Raise for the first line where `mask` holds; `offset` skips a header line in `lines`."""
    bad = first_bad(mask)
    if bad is not None:
        raise lines.fail(bad + offset, what)


def finish(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with exactly JOB_COLUMNS, in order and typed; missing columns are null."""
    columns = [
        (pl.col(c).cast(t) if c in frame.columns else pl.lit(None, dtype=t)).alias(c)
        for c, t in JOB_COLUMNS.items()
    ]
    out = frame.select(columns).with_columns(
        pl.col("gpu_share").fill_null(1000),
        pl.col("priority").fill_null(0),
        pl.col("on_failure").fill_null("requeue"),
        pl.col("name").fill_null(pl.col("job_id")),
        pl.col("user").fill_null(""),
    )
    return out


def rebase(frame: pl.DataFrame, origin: float | None = None) -> tuple[pl.DataFrame, float]:
    """Times shifted so the first submit is t = 0 (or `origin`); returns the frame and the shift."""
    shift = float(frame["submit_s"].min()) if origin is None and frame.height else (origin or 0.0)
    return frame.with_columns(pl.col(c) - shift for c in ("submit_s", "start_s", "end_s")), shift
