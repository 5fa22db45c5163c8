"""`goodput ingest step-times FILE`: the op-level timeline of a training job into an observed run.

The file is CSV (a header line, comma-separated) or Parquet (told apart by Parquet's `PAR1` magic), one row per
operation per worker per step with the columns `dp_rank, stage, rank, step, optype, start_ts, duration`
(seconds), as in the op-level traces ByteDance published with its OSDI'25 straggler study; `mb_id`
(microbatch) and `seq_id` are kept where present, other columns (`mc`, `gmc`, ...) are ignored. The run holds
the rows in its `step_ops` table; `goodput stragglers --run RUN_ID` analyses them.

Bad input is refused whole, before anything is written: a missing column, a value that is not a number (named
by its line), a worker missing from a step, a microbatch run twice (engine.analysis.step_timeline.layout
checks the timeline the analysis will read), a time no clock gives (NaN, infinite, negative, more than a day
ahead of this machine's clock, a timeline longer than MAX_RUN_DAYS).

Sizes are bounded before anything is allocated for them (engine/limits.py): the file is read at most
MAX_INPUT_BYTES; its rows are counted against MAX_STEP_OPS, and a CSV's lines measured against MAX_LINE_BYTES,
before they are parsed; only the columns above are read (an ignored column may hold anything); a text value is at
most MAX_STEP_NAME_BYTES. A Parquet file is compressed data like any other: its text columns' pages may not
inflate past MAX_INPUT_BYTES (read from its metadata), and a dictionary-encoded one is held as read (each value
once) until the length of each is checked (4,000,000 rows sharing one 2 KB optype, 2.2 MB on disk, took 9 GiB).
A CSV's columns are parsed as numbers at once (text costs 16 bytes a value more); only a file with a value that
is not one is read again, a column of text at a time, to name it.
"""

import io
import math
import time
from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from engine import limits
from engine.analysis.run_summary import RunSummary
from engine.analysis.step_timeline import REQUIRED, layout
from engine.errors import GoodputError
from engine.ingest.bounds import check_parquet_text
from engine.ingest.sources import Source, SourceLike, as_sources
from engine.store.run import UNKNOWN_START, Run
from engine.store.schema import polars_schema
from engine.units import SECONDS_PER_DAY

OPTIONAL = ("rank", "mb_id", "seq_id")
# The columns read, in the order their values are checked (the step_ops table's); no other is ever materialised.
KEPT = ("dp_rank", "stage", "rank", "step", "optype", "start_ts", "duration", "mb_id", "seq_id", "mc")
_INTEGER = ("dp_rank", "stage", "rank", "step", "mb_id", "seq_id", "mc")
_FLOAT = ("start_ts", "duration")
# Bytes of a CSV scanned at once for its line lengths: the positions of its newlines take 8 bytes each.
_SCAN_BYTES = 4 << 20


def ingest_step_times(files: Iterable[SourceLike], *, name: str | None = None) -> Run:
    """An observed run whose `step_ops` table is the timeline of one file."""
    sources = as_sources(files)
    if len(sources) != 1:
        raise GoodputError(
            f"ingest step-times: give exactly one FILE (got {len(sources)}): one job's timeline"
        )
    source = sources[0]
    ops = read_step_times(source)
    timeline = layout(ops, source.name)
    start, end = float(ops["start_ts"].min()), float((ops["start_ts"] + ops["duration"]).max())
    known = limits.EARLIEST_TIMESTAMP_S <= start  # read_step_times: then at most a day ahead of the clock
    summary = RunSummary(
        gpus=timeline.dp * timeline.stages,
        hosts=0,
        days=round((end - start) / SECONDS_PER_DAY, 9),
        details={
            "samples": ops.height,
            "xid_events": 0,
            "ops": ops.height,
            "steps": len(timeline.steps),
            "dp": timeline.dp,
            "stages": timeline.stages,
            "workers": timeline.dp * timeline.stages,
            "microbatches": timeline.microbatches,
            "ignored_ops": timeline.ignored_ops,
            "source": "step-times",
        },
    ).to_json()
    return Run(
        kind="ingest",
        name=name or f"step-times: {source.name.rsplit('/', 1)[-1]}",
        started_at=datetime.fromtimestamp(start, UTC) if known else UNKNOWN_START,
        duration_s=max(end - start, 0.0),
        scenario={"source": "step-times", "inputs": [source.name], **({} if known else {"start": "unknown"})},
        summary=summary,
        tables={"step_ops": ops},
    )


def read_step_times(source: Source, *, now: float | None = None) -> pl.DataFrame:
    """The rows of `source` with the `step_ops` table's columns and types; a GoodputError naming the file and
    the column (and line, for CSV; row, for Parquet) of the first bad value. `now`: the clock (tests)."""
    data = _bytes(source)
    if data[:4] == b"PAR1":
        raw = _parquet(source.name, data)
        first_line = None
    else:
        raw = _csv(source.name, data)
        first_line = 2  # the header is line 1
    del data
    for column in REQUIRED:
        if column not in raw.columns:
            raise GoodputError(f"{source.name}: no column {column!r} (need {', '.join(REQUIRED)})")
    if raw.height == 0:
        raise GoodputError(f"{source.name}: no rows")
    _check_one_chunk(raw, source.name)
    columns = []
    for column, dtype in polars_schema("step_ops").items():
        if column not in raw.columns:
            columns.append(pl.repeat(None, raw.height, dtype=dtype, eager=True).alias(column))
            continue
        columns.append(_typed(raw[column], column, dtype, source.name, first_line))
        raw = raw.drop(column)  # a column as read is let go of once it is typed
    del raw
    ops = pl.DataFrame(columns)
    _check_times(ops, source.name, first_line, now)
    return ops


def _bytes(source: Source) -> bytes:
    """The source's bytes, bounded (engine/ingest/sources.py), but not kept by it where it is a file that can be
    read again: up to MAX_INPUT_BYTES of CSV text are let go of once parsed, before the timeline is laid out."""
    if source.raw is None and source.path is not None:
        return Source(source.name, path=source.path).data
    return source.data


# ----- Parquet ------------------------------------------------------------------------------------------------


def _parquet(name: str, data: bytes) -> pl.DataFrame:
    """The KEPT columns of a Parquet file. Its metadata is read first: the rows, the kept columns' types and the
    bytes their text pages inflate to are checked before a page is read. Polars then reads the kept columns
    only; a dictionary-encoded text column stays one (a Categorical, or views of the dictionary's strings)
    until its values' lengths are checked (_check_text)."""
    try:
        meta, schema = _metadata(data)
    except Exception as err:  # noqa: BLE001 (Polars and Arrow raise many kinds for a broken file)
        raise GoodputError(f"{name}: not a readable Parquet file ({_first_line(err)})") from None
    limits.check_at_most(meta.num_rows, limits.MAX_STEP_OPS, f"{name}: rows")
    kept = [c for c in KEPT if c in schema.names]
    for column in kept:
        kind = schema.field(column).type
        if not (_is_number(kind) or _is_text(kind)):
            raise GoodputError(f"{name}: column {column!r}: Parquet type {kind} is not a number or a name")
    text = [c for c in kept if _is_text(schema.field(c).type)]
    check_parquet_text(name, meta, text)
    if not kept:
        return pl.DataFrame()  # read_step_times names the first column missing
    try:
        frame = pl.read_parquet(io.BytesIO(data), columns=kept)
    except Exception as err:  # noqa: BLE001
        raise GoodputError(f"{name}: not a readable Parquet file ({_first_line(err)})") from None
    limits.check_at_most(frame.height, limits.MAX_STEP_OPS, f"{name}: rows")
    return frame


def _metadata(data: bytes) -> tuple[pq.FileMetaData, pa.Schema]:
    file = pq.ParquetFile(pa.BufferReader(data))
    return file.metadata, file.schema_arrow


def _is_number(kind: pa.DataType) -> bool:
    return (
        pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_null(kind)
    )


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def _check_text(values: pl.Series, column: str, name: str, first_line: int | None) -> pl.Series:
    """`values` as String once each is known to be at most MAX_STEP_NAME_BYTES: the lengths are read from the
    views (or a Categorical's dictionary) before any string is copied, so a value repeated a million times in a
    Parquet dictionary is measured once, not expanded (trimming the 2 KB optype of 4M rows took 9 GiB)."""
    lengths = values.cat.len_bytes() if values.dtype == pl.Categorical else values.str.len_bytes()
    if (lengths.max() or 0) > limits.MAX_STEP_NAME_BYTES:
        row = int((lengths > limits.MAX_STEP_NAME_BYTES).arg_max())
        _too_long(name, _where(row, first_line), column, int(lengths[row]))
    return values.cast(pl.String)


def _too_long(name: str, where: str, column: str, nbytes: int) -> None:
    raise GoodputError(
        f"{name}: {where}: column {column!r}: a value of {nbytes:,} bytes, over Goodput's limit of"
        f" {limits.MAX_STEP_NAME_BYTES:,} (engine/limits.py MAX_STEP_NAME_BYTES)"
    )


# ----- CSV ----------------------------------------------------------------------------------------------------


def _csv(name: str, data: bytes) -> pl.DataFrame:
    """The KEPT columns of a CSV file: lines counted and measured first, then parsed as numbers at once; a file
    Polars cannot parse so (a value that is not a number, spaces around one) is read a column at a time."""
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    limits.check_at_most(lines - 1, limits.MAX_STEP_OPS, f"{name}: lines after the header")
    _check_line_lengths(name, data)
    try:
        header = pl.read_csv(io.BytesIO(data), n_rows=0, infer_schema=False).columns
    except Exception as err:  # noqa: BLE001
        raise GoodputError(f"{name}: not a readable CSV file ({_first_line(err)})") from None
    kept = [c for c in KEPT if c in header]
    if not set(REQUIRED) <= set(kept):
        return pl.DataFrame({c: [] for c in kept})  # read_step_times names the first column missing
    types = {c: pl.Float64 if c in _FLOAT else pl.Int64 if c in _INTEGER else pl.String for c in kept}
    try:
        frame = pl.read_csv(io.BytesIO(data), columns=kept, schema_overrides=types, infer_schema=False)
        if not frame.select(pl.any_horizontal(pl.col(REQUIRED).is_null().any())).item():
            return frame
    except Exception:  # noqa: BLE001, S110 (read again below, as text, to name the value)
        pass
    columns, schema = [], polars_schema("step_ops")
    for column in kept:  # as text, a column at a time: each typed (or refused) before the next is read
        try:
            values = pl.read_csv(io.BytesIO(data), columns=[column], infer_schema=False)[column]
        except Exception as err:  # noqa: BLE001
            raise GoodputError(f"{name}: not a readable CSV file ({_first_line(err)})") from None
        if column == "mc":  # only looked at for values above 0 (_check_one_chunk)
            columns.append(values.str.strip_chars().cast(pl.Int64, strict=False))
        else:
            columns.append(_typed(values, column, schema[column], name, 2))
        del values
    return pl.DataFrame(columns)


def _check_line_lengths(name: str, data: bytes) -> None:
    """A GoodputError at the first line over MAX_LINE_BYTES, found a window of the bytes at a time before Polars
    parses any: a line of a gigabyte would be a header of millions of columns, or one field of a gigabyte."""
    view = np.frombuffer(data, np.uint8)
    start, line = 0, 1  # where the current line starts, and its number
    for offset in range(0, view.size, _SCAN_BYTES):
        ends = np.flatnonzero(view[offset : offset + _SCAN_BYTES] == 0x0A) + offset
        if ends.size:
            lengths = np.diff(ends, prepend=start - 1) - 1
            long = np.flatnonzero(lengths > limits.MAX_LINE_BYTES)
            if long.size:
                _long_line(name, line + int(long[0]), int(lengths[long[0]]))
            line, start = line + ends.size, int(ends[-1]) + 1
    if view.size - start > limits.MAX_LINE_BYTES:
        _long_line(name, line, view.size - start)


def _long_line(name: str, line: int, nbytes: int) -> None:
    raise GoodputError(
        f"{name}, line {line}: {nbytes:,} bytes in one line, over Goodput's limit of"
        f" {limits.MAX_LINE_BYTES:,} (engine/limits.py MAX_LINE_BYTES)"
    )


# ----- values -------------------------------------------------------------------------------------------------


def _typed(
    values: pl.Series, column: str, dtype: pl.DataType, name: str, first_line: int | None
) -> pl.Series:
    """`values` as a `dtype` (a number of the right kind, or a name), spaces around a number ignored; a
    GoodputError naming the first value that is not one (or is missing, in a required column)."""
    text = values.dtype in (pl.String, pl.Categorical)
    if text:
        values = _check_text(values, column, name, first_line)
    if dtype == pl.String:  # a name is kept as written (and not copied trimmed: blank is all that is asked)
        cast = values.cast(pl.String)
        present = (values.is_not_null() & values.str.contains(r"\S")) if text else values.is_not_null()
    else:
        trimmed = values.str.strip_chars() if text else values
        if column in _INTEGER and text:  # "3.0" is not a rank
            cast = trimmed.cast(pl.Int64, strict=False).cast(dtype, strict=False)
        else:
            cast = trimmed.cast(dtype, strict=False)
        present = (trimmed.is_not_null() & (trimmed != "")) if text else values.is_not_null()
        del trimmed
    bad = cast.is_null() & present
    if column in REQUIRED:
        bad = bad | ~present
    if bad.any():
        row = int(bad.arg_max())
        shown = values[row : row + 1].str.strip_chars()[0] if text else values[row]
        if not text and first_line is not None:  # a CSV's values are text, as it was read
            shown = str(shown)
        raise GoodputError(
            f"{name}: {_where(row, first_line)}: column {column!r}: {shown!r} is not a valid {_kind(dtype)}"
        )
    return cast.alias(column)


def _where(row: int, first_line: int | None) -> str:
    return f"line {row + first_line}" if first_line is not None else f"row {row + 1}"


def _check_times(ops: pl.DataFrame, name: str, first_line: int | None, now: float | None) -> None:
    """Times a clock gives: start_ts and duration finite and not negative, start_ts and each op's end at most
    MAX_CLOCK_AHEAD_S ahead of this machine's clock, a duration and the whole timeline at most MAX_RUN_DAYS.
    Times before 2000 are seconds since the job's start, later ones since the epoch: the bounds hold for both."""
    ahead = (time.time() if now is None else now) + limits.MAX_CLOCK_AHEAD_S
    late = (
        f"more than {limits.MAX_CLOCK_AHEAD_S:,} s ahead of this machine's clock (engine/limits.py"
        " MAX_CLOCK_AHEAD_S)"
    )
    longest = limits.MAX_RUN_DAYS * SECONDS_PER_DAY
    span = f"{limits.MAX_RUN_DAYS:,} days (engine/limits.py MAX_RUN_DAYS)"
    start, duration = pl.col("start_ts"), pl.col("duration")
    checks = [
        ("start_ts", ~start.is_finite(), lambda v: f"{v!r} is not a finite number"),
        ("start_ts", start < 0, lambda v: f"{v!r} is negative (seconds since the epoch or the job's start)"),
        ("start_ts", start > ahead, lambda v: f"{_describe_s(v)} is {late}"),
        ("duration", ~duration.is_finite(), lambda v: f"{v!r} is not a finite number"),
        ("duration", duration < 0, lambda v: f"{v!r} is negative"),
        ("duration", duration > longest, lambda v: f"{v!r} s is longer than a run may span ({span})"),
    ]
    found = ops.select(*(bad.any().alias(str(i)) for i, (_, bad, _) in enumerate(checks))).row(0)
    for (column, bad, what), hit in zip(checks, found, strict=True):
        if hit:  # only now find which row: the common case reads each column once a check
            row = int(ops.select(bad.arg_max()).item())
            raise GoodputError(
                f"{name}: {_where(row, first_line)}: column {column!r}: {what(ops[column][row])}"
            )
    end = ops["start_ts"] + ops["duration"]
    last, first = int(end.arg_max()), int(ops["start_ts"].arg_min())
    if end[last] > ahead:
        raise GoodputError(
            f"{name}: {_where(last, first_line)}: its op ends at {_describe_s(end[last])}, {late}"
        )
    days = (end[last] - ops["start_ts"][first]) / SECONDS_PER_DAY
    if days > limits.MAX_RUN_DAYS:
        raise GoodputError(
            f"{name}: {_where(last, first_line)}: its op ends {days:,.0f} days after the earliest start"
            f" ({_where(first, first_line)}); a run may span at most {span}"
        )


def _describe_s(t: float) -> str:
    """`1733133600.0 s (2024-12-02)`; the year alone where a date cannot be written."""
    try:
        return f"{t!r} s ({datetime.fromtimestamp(t, UTC):%Y-%m-%d})"
    except (OverflowError, ValueError, OSError):
        year = 1970 + t / (365.2425 * SECONDS_PER_DAY)
        return f"{t!r} s (year {math.floor(year):,})" if year < 1e9 else f"{t!r} s (year {year:.3g})"


def _check_one_chunk(raw: pl.DataFrame, name: str) -> None:
    """Interleaved (virtual) pipeline stages, a model chunk `mc` above 0, run another schedule than 1F1B: the
    analysis does not model it, so it is refused rather than misread."""
    if "mc" not in raw.columns:
        return
    chunks = raw["mc"]
    if chunks.dtype in (pl.String, pl.Categorical):  # text in a Parquet file
        chunks = _check_text(chunks, "mc", name, None).str.strip_chars()
    chunks = chunks.cast(pl.Int64, strict=False)
    if chunks.is_not_null().any() and int(chunks.max()) > 0:
        raise GoodputError(
            f"{name}: column 'mc' names model chunk {int(chunks.max())}: interleaved (virtual) pipeline stages"
            " are not modelled yet (only the 1F1B schedule with one model chunk a stage)"
        )


def _kind(dtype: pl.DataType) -> str:
    if dtype == pl.String:
        return "name"
    return "whole number" if dtype.is_integer() else "number"


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
