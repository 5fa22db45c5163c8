"""`goodput ingest step-times FILE`: the op-level timeline of a training job into an observed run.

The file is CSV (a header line, comma-separated) or Parquet (told apart by Parquet's `PAR1` magic), one row per
operation per worker per step with the columns `dp_rank, stage, rank, step, optype, start_ts, duration`
(seconds), as in the op-level traces ByteDance published with its OSDI'25 straggler study; `mb_id`
(microbatch) and `seq_id` are kept where present, other columns (`mc`, `gmc`, ...) are ignored. The run holds
the rows in its `step_ops` table; `goodput stragglers --run RUN_ID` analyses them.

Bad input is refused whole, before anything is written: a missing column, a value that is not a number (named
by its line), a worker missing from a step, a microbatch run twice (engine.analysis.step_timeline.layout
checks the timeline the analysis will read). The file is read at most MAX_INPUT_BYTES, and its rows are
counted against MAX_STEP_OPS before they are parsed.
"""

import io
from collections.abc import Iterable
from datetime import UTC, datetime

import polars as pl

from engine import limits
from engine.analysis.run_summary import RunSummary
from engine.analysis.step_timeline import REQUIRED, layout
from engine.errors import GoodputError
from engine.ingest.sources import Source, SourceLike, as_sources
from engine.store.run import UNKNOWN_START, Run
from engine.store.schema import polars_schema
from engine.units import SECONDS_PER_DAY

OPTIONAL = ("rank", "mb_id", "seq_id")
_INTEGER = ("dp_rank", "stage", "rank", "step", "mb_id", "seq_id")


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
    known = limits.EARLIEST_TIMESTAMP_S <= start
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


def read_step_times(source: Source) -> pl.DataFrame:
    """The rows of `source` with the `step_ops` table's columns and types; a GoodputError naming the file and
    the column (and line, for CSV) of the first bad value."""
    data = source.data
    if data[:4] == b"PAR1":
        raw = _parquet(source.name, data)
        first_line = None
    else:
        raw = _csv(source.name, data)
        first_line = 2  # the header is line 1
    for column in REQUIRED:
        if column not in raw.columns:
            raise GoodputError(f"{source.name}: no column {column!r} (need {', '.join(REQUIRED)})")
    if raw.height == 0:
        raise GoodputError(f"{source.name}: no rows")
    _check_one_chunk(raw, source.name)
    schema = polars_schema("step_ops")
    columns = []
    for column, dtype in schema.items():
        if column not in raw.columns:
            columns.append(pl.lit(None, dtype).alias(column))
            continue
        _check_cast(raw, column, dtype, source.name, first_line)
        columns.append(raw[column].cast(dtype, strict=False).alias(column))
    return raw.select(columns)


def _parquet(name: str, data: bytes) -> pl.DataFrame:
    try:
        rows = pl.scan_parquet(io.BytesIO(data)).select(pl.len()).collect().item()
        limits.check_at_most(rows, limits.MAX_STEP_OPS, f"{name}: rows")
        return pl.read_parquet(io.BytesIO(data))
    except GoodputError:
        raise
    except Exception as err:  # noqa: BLE001 (Polars and Arrow raise many kinds for a broken file)
        raise GoodputError(f"{name}: not a readable Parquet file ({_first_line(err)})") from None


def _csv(name: str, data: bytes) -> pl.DataFrame:
    limits.check_at_most(data.count(b"\n"), limits.MAX_STEP_OPS, f"{name}: lines")
    try:
        return pl.read_csv(io.BytesIO(data), infer_schema=False)
    except Exception as err:  # noqa: BLE001
        raise GoodputError(f"{name}: not a readable CSV file ({_first_line(err)})") from None


def _check_cast(
    raw: pl.DataFrame, column: str, dtype: pl.DataType, name: str, first_line: int | None
) -> None:
    """A GoodputError naming the first value of `column` that is not a `dtype` (a number of the right kind)."""
    values = raw[column]
    if values.dtype == pl.String:
        values = values.str.strip_chars()
    cast = values.cast(dtype, strict=False)
    if column in _INTEGER and values.dtype == pl.String:  # "3.0" is not a rank
        cast = values.cast(pl.Int64, strict=False).cast(dtype, strict=False)
    bad = cast.is_null() & values.is_not_null() & (values.cast(pl.String) != "")
    if column in REQUIRED:
        bad = bad | values.is_null() | (values.cast(pl.String) == "")
    if bad.any():
        row = int(bad.arg_max())
        where = f"line {row + first_line}" if first_line is not None else f"row {row + 1}"
        shown = values[row]
        raise GoodputError(f"{name}: {where}: column {column!r}: {shown!r} is not a valid {_kind(dtype)}")


def _check_one_chunk(raw: pl.DataFrame, name: str) -> None:
    """Interleaved (virtual) pipeline stages, a model chunk `mc` above 0, run another schedule than 1F1B: the
    analysis does not model it, so it is refused rather than misread."""
    if "mc" not in raw.columns:
        return
    chunks = raw["mc"].cast(pl.Int64, strict=False)
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
