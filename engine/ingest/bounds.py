"""What telemetry may say and still be stored: line lengths, clocks, value ranges, hosts and GPUs.

The limits themselves live in engine/limits.py; this module applies them to parsed frames (vectorised, no loop
over lines) and words the errors: each names the file and line, the value read and the limit.

Which bad input is an error and which a counted skip (engine/ingest/dcgm.py's rule: what Prometheus would
refuse is an error, what it tolerates is a skipped sample):
- a line longer than MAX_LINE_BYTES, a file whose hosts or GPUs pass MAX_HOSTS, MAX_GPUS_PER_HOST or
  MAX_CLUSTER_GPUS, and (in files) a timestamp before 2000, more than MAX_CLOCK_AHEAD_S ahead of this machine,
  or more than MAX_RUN_DAYS after the earliest one: errors. The clock sets the run's time axis; a file whose
  clock is broken is a wrong file, not a bad sample.
- a value a column cannot hold (1e308 is inf as Float32; an XID or ECC count of 3e9 overflows Int32) and a
  `gpu` label that is not a GPU index (0 to MAX_GPUS_PER_HOST - 1): Prometheus stores both happily, so they
  are skipped and counted.
- in a live scrape every bad sample, a bad timestamp included, is skipped and counted: one exporter's broken
  clock must not end the loop (engine/ingest/live.py).
"""

import time
from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.units import MILLISECONDS_PER_DAY

FLOAT32_MAX = 3.4028234663852886e38
INT32_MAX = 2**31 - 1
FLOAT64_EXACT_MAX = 2**53  # the largest whole number a Float64 (how values are read) holds exactly
DAY_MS = MILLISECONDS_PER_DAY

SKIP_GPU_LABEL = f"series whose gpu label is not a GPU index (0-{limits.MAX_GPUS_PER_HOST - 1})"
SKIP_VALUE = (
    "values out of range for their column (beyond Float32, or an XID or ECC count not a whole 0-2^31-1)"
)
SKIP_TIME = "samples stamped outside the run's time window"


@dataclass(frozen=True)
class Window:
    """The wall-clock times (ms since the epoch) a sample may carry."""

    lo_ms: int
    hi_ms: int


def file_window(now: float | None = None) -> Window:
    """From 2000-01-01 to a day ahead of this machine's clock (engine/limits.py)."""
    now = time.time() if now is None else now
    return Window(limits.EARLIEST_TIMESTAMP_S * 1000, round((now + limits.MAX_CLOCK_AHEAD_S) * 1000))


def in_window(t_ms: pl.Expr, window: Window) -> pl.Expr:
    return t_ms.is_between(window.lo_ms, window.hi_ms)


def describe_ms(t_ms: int) -> str:
    """`1733133600000 ms (2024-12-02)`; the year alone where a date cannot be written."""
    try:
        return f"{t_ms} ms ({datetime.fromtimestamp(t_ms / 1000, UTC):%Y-%m-%d})"
    except (OverflowError, ValueError, OSError):
        return f"{t_ms} ms (year {1970 + t_ms / (365.2425 * DAY_MS):,.0f})"


def time_error(name: str, line: int, t_ms: int, window: Window) -> GoodputError:
    if t_ms < window.lo_ms:
        limit = "before 2000-01-01 (engine/limits.py EARLIEST_TIMESTAMP_S)"
    else:
        limit = (
            f"more than {limits.MAX_CLOCK_AHEAD_S:,} s ahead of this machine's clock"
            " (engine/limits.py MAX_CLOCK_AHEAD_S)"
        )
    return GoodputError(f"{name}, line {line}: timestamp {describe_ms(t_ms)} is {limit}")


def storable(
    metric: pl.Expr, value: pl.Expr, *, counts: list[str], floats: list[str], big_counts: list[str] = ()
) -> pl.Expr:
    """True where the value fits its column: counts (XID, ECC) are whole numbers in Int32, big counts (a
    bitmask, a violation counter) whole numbers a Float64 holds exactly (below 2**53), floats fit Float32.

    Metrics with no column pass: they only date a host's first and last answer.
    """
    whole = value.is_between(0, INT32_MAX) & (value == value.floor())
    big = value.is_between(0, FLOAT64_EXACT_MAX) & (value == value.floor())
    return (
        pl.when(metric.is_in(counts))
        .then(whole)
        .when(metric.is_in(list(big_counts)))
        .then(big)
        .when(metric.is_in(floats))
        .then(value.abs() <= FLOAT32_MAX)
        .otherwise(pl.lit(True))
    )


def gpu_index_ok(label: pl.Expr) -> pl.Expr:
    """A `gpu` label that is a GPU index a host can have; a missing label is fine (UUID-only series)."""
    index = label.cast(pl.Int64, strict=False)
    return label.is_null() | (
        label.str.contains(r"^[0-9]{1,9}$") & index.is_between(0, limits.MAX_GPUS_PER_HOST - 1)
    ).fill_null(False)


def check_line_lengths(name: str, lines: pl.DataFrame) -> None:
    """`lines`: line (number) and nbytes; a GoodputError at the first line over MAX_LINE_BYTES."""
    long = lines.filter(pl.col("nbytes") > limits.MAX_LINE_BYTES)
    if long.height:
        row = long.sort("line").row(0, named=True)
        raise GoodputError(
            f"{name}, line {row['line']}: {row['nbytes']:,} bytes in one line, over Goodput's"
            f" limit of {limits.MAX_LINE_BYTES:,} (engine/limits.py MAX_LINE_BYTES)"
        )


def check_samples(name: str, total: int, latest: pl.DataFrame) -> None:
    """Refuse an ingest once the samples kept so far (`total`, `latest` the last block's, with its lines) pass
    MAX_INGEST_SAMPLES: the error names the line of the first sample past the limit, and comes as soon as the
    block holding it is read, before the rest of the input is."""
    if total <= limits.MAX_INGEST_SAMPLES:
        return
    line = latest["line"][latest.height - (total - limits.MAX_INGEST_SAMPLES)]
    raise GoodputError(
        f"{name}, line {line}: more than {limits.MAX_INGEST_SAMPLES:,} samples in one ingest, over Goodput's"
        " limit (engine/limits.py MAX_INGEST_SAMPLES); split the input into several runs"
    )


def check_span(names: list[str], samples: pl.DataFrame) -> None:
    """`samples`: t_ms, source, line. Refuse a run longer than MAX_RUN_DAYS, naming its latest sample."""
    if samples.height == 0:
        return
    # arg_min/arg_max, not sorts: this runs on every sample of a file (rows are in file and line order)
    first = samples.row(samples["t_ms"].arg_min(), named=True)
    last = samples.row(samples["t_ms"].arg_max(), named=True)
    days = (last["t_ms"] - first["t_ms"]) / DAY_MS
    if days > limits.MAX_RUN_DAYS:
        raise GoodputError(
            f"{names[last['source']]}, line {last['line']}: timestamp {describe_ms(last['t_ms'])} is {days:,.0f}"
            f" days after the earliest ({names[first['source']]}, line {first['line']}); a run may span at most"
            f" {limits.MAX_RUN_DAYS:,} days (engine/limits.py MAX_RUN_DAYS)"
        )


def check_hosts_and_gpus(names: list[str], gpus: pl.DataFrame) -> None:
    """`gpus`: one row a (hostname, gpu key) in the order read, with source and line. The first host or GPU
    past a limit is an error naming its line: nothing is allocated for a cluster the input only claims."""
    hosts = gpus.filter(pl.col("hostname").is_first_distinct())
    if hosts.height > limits.MAX_HOSTS:
        row = hosts.row(limits.MAX_HOSTS, named=True)
        raise GoodputError(
            f"{names[row['source']]}, line {row['line']}: more than {limits.MAX_HOSTS:,} hosts,"
            " over Goodput's limit (engine/limits.py MAX_HOSTS)"
        )
    distinct = gpus.filter(pl.struct("hostname", "key").is_first_distinct())
    if distinct.height > limits.MAX_CLUSTER_GPUS:
        row = distinct.row(limits.MAX_CLUSTER_GPUS, named=True)
        raise GoodputError(
            f"{names[row['source']]}, line {row['line']}: more than {limits.MAX_CLUSTER_GPUS:,}"
            " GPUs, over Goodput's limit (engine/limits.py MAX_CLUSTER_GPUS)"
        )
    crowded = distinct.with_columns(rank=pl.col("hostname").cum_count().over("hostname")).filter(
        pl.col("rank") > limits.MAX_GPUS_PER_HOST
    )
    if crowded.height:
        row = crowded.row(0, named=True)
        raise GoodputError(
            f"{names[row['source']]}, line {row['line']}: host {row['hostname']!r} has more than"
            f" {limits.MAX_GPUS_PER_HOST} GPUs, over Goodput's limit"
            " (engine/limits.py MAX_GPUS_PER_HOST)"
        )


def check_parquet_text(name: str, meta, text: list[str]) -> None:
    """Refuse a Parquet file whose `text` columns inflate past MAX_INPUT_BYTES, from its metadata (`meta`, a
    pyarrow FileMetaData) before a page is read: numbers take at most 8 bytes a row whatever their pages hold;
    text is what compression can multiply."""
    inflated = sum(
        group.column(i).total_uncompressed_size
        for group in (meta.row_group(g) for g in range(meta.num_row_groups))
        for i in range(group.num_columns)
        if group.column(i).path_in_schema in text
    )
    if inflated > limits.MAX_INPUT_BYTES:
        raise GoodputError(
            f"{name}: its text columns ({', '.join(text)}) inflate to {inflated:,} bytes, over Goodput's limit"
            f" of {limits.MAX_INPUT_BYTES:,} (engine/limits.py MAX_INPUT_BYTES)"
        )
