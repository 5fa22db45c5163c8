"""NIC ports from node_exporter's infiniband collector: `goodput ingest node-exporter FILE...`.

node_exporter (collector/infiniband_linux.go) serves one series a port, labels `device` (mlx5_0) and `port` (1):

    node_infiniband_rate_bytes_per_second{device="mlx5_0",port="1"} 5e+10        the port's rate (bytes/s)
    node_infiniband_link_downed_total{device="mlx5_0",port="1"} 0                  counters, totals since boot
    node_infiniband_symbol_error_total, node_infiniband_link_error_recovery_total,
    node_infiniband_port_errors_received_total

A file holds one scrape or many (lines with timestamps in ms, as Prometheus' text format allows; lines without one
take the file's modification time). The host is the `instance` label without its port where the file has one (a
scrape saved from Prometheus), else the file's name (`node017.prom` -> node017), as for DCGM scrapes. Every other
metric of the scrape (node_exporter serves hundreds) is skipped. Rows become nic_samples (engine/store/schema.py):
one a port and time, rate in Gbps (x 8 / 1e9), counters as read.

Bad input, one clear error naming the file and line (engine/ingest/dcgm.py's rule: what Prometheus would refuse is
an error, what it tolerates a counted skip): a sample line that is not one, a line over MAX_LINE_BYTES, a timestamp
outside 2000 .. a day ahead or a run longer than MAX_RUN_DAYS, the same series twice at one time, a port label that
is no port number, more hosts than MAX_HOSTS or ports a host than MAX_PORTS_PER_HOST, more samples than
MAX_INGEST_SAMPLES. A value no column can hold (negative, not whole for a counter, beyond 2^53) is skipped and
counted. Lines are matched with Polars string expressions, not a Python loop.

A file is read a block of whole lines at a time (engine/ingest/inflate.py text_blocks, inflating gzip or zstd as
it goes), and only the samples kept of each block are held: split whole, 256 MiB of newlines gzipped to 1.17 MB
were 256M rows of Polars strings and 9 GiB, now 0.28 GB for 1,000 MiB; MAX_INGEST_SAMPLES samples of one metric
a port peak at 2.9 GB (bench/bench_memory.py). A series repeated at one time is found per file once its blocks are
read, among the samples kept (a skipped value is no sample, as for DCGM).
"""

import time
from collections.abc import Iterable
from datetime import UTC, datetime

import polars as pl

from engine import limits
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.ingest import bounds
from engine.ingest.inflate import text_blocks
from engine.ingest.observed import hosts_table
from engine.ingest.sources import Source, SourceLike, as_sources
from engine.store.run import Run
from engine.store.schema import polars_schema
from engine.units import SECONDS_PER_DAY

# node_exporter's metric -> the nic_samples column it fills
COLUMNS = {
    "node_infiniband_rate_bytes_per_second": "rate_gbps",
    "node_infiniband_link_downed_total": "link_downed",
    "node_infiniband_symbol_error_total": "symbol_errors",
    "node_infiniband_link_error_recovery_total": "link_recoveries",
    "node_infiniband_port_errors_received_total": "rcv_errors",
}
RATE_METRIC = "node_infiniband_rate_bytes_per_second"
# How samples are held (read_samples): a string a row was a view into its block's text, and 12M samples kept
# their blocks' text with them (4.1 GB for 720 MB of samples); the metric is one of five, the host and the device
# a few distinct names.
_METRIC = pl.Enum(list(COLUMNS))
GBPS_PER_BYTE_PER_S = 8 / 1e9
MAX_PORTS_PER_HOST = 64  # HCA ports a host may report (8 GPUs x 1 NIC x 2 ports is 16 on today's servers)
MAX_PORT_NUMBER = 255  # an InfiniBand port number is 8 bits
SKIP_VALUE = "values out of range for their column (a negative rate, a counter not a whole 0-2^53)"
SKIP_OTHER = "samples of other metrics"
# The text split into lines at once. Each line costs ~50 bytes while split (16-byte views of it and of its
# matches, its number), however short: a block of nothing but newlines is 2M lines and ~0.1 GB (8 MiB blocks
# took 0.4 GB), where 32 MiB of DCGM's 240-byte lines are 140k.
BLOCK_BYTES = 2 << 20

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = rf"^({_NAME})[ \t]*(\{{.*\}})?[ \t]+([^ \t]+)(?:[ \t]+(-?[0-9]+))?[ \t]*$"
_SAMPLE_COLUMNS = {
    "source": pl.UInt32,
    "line": pl.UInt32,
    "host": pl.Categorical,
    "device": pl.Categorical,
    "port": pl.Int32,
    "metric": _METRIC,
    "value": pl.Float64,
    "t_ms": pl.Int64,
}


def ingest_node_exporter(
    sources: Iterable[SourceLike], *, name: str | None = None, now: float | None = None
) -> Run:
    """An observed run of NIC ports from node_exporter scrapes (module docstring); GoodputError on bad input."""
    inputs = as_sources(sources)
    if not inputs:
        raise GoodputError("node-exporter: give at least one file")
    samples, skipped = read_samples(inputs, now)
    names = [s.name for s in inputs]
    if samples.height == 0:
        raise GoodputError(f"{', '.join(names)}: nothing to ingest (no node_infiniband_* sample of a port)")
    bounds.check_span(names, samples.select("t_ms", "source", "line"))
    _check_ports(names, samples)
    origin_ms = int(samples["t_ms"].min())
    hosts = (
        samples.select(pl.col("host").alias("hostname"))
        .unique(maintain_order=True)
        .with_row_index("host_id")
        .with_columns(pl.col("host_id").cast(pl.Int32))
    )  # hostname stays Categorical, as samples' host, for the join in nic_rows
    nic = nic_rows(samples, hosts, origin_ms)
    end_s = float(nic["t_s"].max())
    first = names[0].rsplit("/", 1)[-1]
    summary = RunSummary(
        gpus=0,
        hosts=hosts.height,
        days=round(end_s / SECONDS_PER_DAY, 6),
        details={
            "samples": samples.height,
            "xid_events": 0,
            "incidents": 0,
            "nic_ports": nic.select("host_id", "device", "port").unique().height,
            "skipped": {why: n for why, n in skipped.items() if n},
        },
    ).to_json()
    return Run(
        kind="ingest",
        name=name or f"node-exporter: {first}" + (f" and {len(names) - 1} more" if len(names) > 1 else ""),
        started_at=datetime.fromtimestamp(origin_ms / 1000, UTC),
        duration_s=end_s,
        scenario={"source": "node-exporter", "inputs": names},
        summary=summary,
        tables={
            "hosts": hosts_table(hosts.select("host_id", pl.col("hostname").cast(pl.String))),
            "nic_samples": nic,
        },
    )


def nic_rows(samples: pl.DataFrame, hosts: pl.DataFrame, origin_ms: int) -> pl.DataFrame:
    """Samples (host, device, port, metric, value, t_ms) as nic_samples rows, one a port and time."""
    value = pl.col("value")
    wide = (
        samples.join(hosts, left_on="host", right_on="hostname")
        .with_columns(
            column=pl.col("metric").replace_strict(COLUMNS, return_dtype=pl.String),
            value=pl.when(pl.col("metric") == RATE_METRIC).then(value * GBPS_PER_BYTE_PER_S).otherwise(value),
        )
        .pivot(
            on="column",
            index=["host_id", "device", "port", "t_ms"],
            values="value",
            aggregate_function="first",
        )
    )
    schema = polars_schema("nic_samples")
    missing = [pl.lit(None, schema[c]).alias(c) for c in COLUMNS.values() if c not in wide.columns]
    return (
        wide.with_columns(*missing, t_s=(pl.col("t_ms") - origin_ms) / 1000)
        .select(*schema)
        .cast(schema)
        .sort("t_s", "host_id", "device", "port")
    )


def read_samples(sources: list[Source], now: float | None = None) -> tuple[pl.DataFrame, dict[str, int]]:
    """Every node_infiniband_* sample of the sources (_SAMPLE_COLUMNS) and the counts skipped, by reason."""
    frames, skipped, total = [], {SKIP_VALUE: 0, SKIP_OTHER: 0}, 0
    window = bounds.file_window(now)
    for index, source in enumerate(sources):
        fallback = _fallback_ms(source, now, window)
        kept = []
        for first_line, text in _blocks(source):
            frame, other = _parse_block(index, source, first_line, text, window, fallback)
            del text
            skipped[SKIP_OTHER] += other
            fits = _storable(frame)
            skipped[SKIP_VALUE] += frame.height - int(fits.sum())
            frame = frame.filter(fits)
            total += frame.height
            bounds.check_samples(source.name, total, frame)  # as soon as the block past the limit is read
            kept.append(frame)
        frame = pl.concat(kept)
        _check_repeats(source, frame)
        frames.append(frame)
    return pl.concat(frames), skipped


def _blocks(source: Source):
    """(number of its first line, text) for each block of whole lines of the source: UTF-8, as Prometheus' text
    format must be; a bad byte is an error naming its line and its place in the file."""
    offset = 0
    for first_line, data in text_blocks(source, BLOCK_BYTES):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            line = first_line + data.count(b"\n", 0, err.start)
            raise GoodputError(
                f"{source.name}, line {line}: not UTF-8 text (byte {offset + err.start})"
            ) from err
        offset += len(data)
        del data
        yield first_line, text


def _storable(frame: pl.DataFrame) -> pl.Series:
    value = pl.col("value")
    rate = value.is_finite() & (value >= 0) & (value * GBPS_PER_BYTE_PER_S <= bounds.FLOAT32_MAX)
    count = value.is_between(0, bounds.FLOAT64_EXACT_MAX) & (value == value.floor())
    return frame.select(pl.when(pl.col("metric") == RATE_METRIC).then(rate).otherwise(count))[:, 0]


def _parse_block(
    index: int, source: Source, first_line: int, text: str, window: bounds.Window, fallback: int
) -> tuple[pl.DataFrame, int]:
    """One block's samples of COLUMNS' metrics and the count of other metrics' samples; errors name the line."""
    lines = (
        pl.DataFrame({"text": pl.Series([text]).str.split("\n").explode()})
        .with_row_index("line", offset=first_line)
        .with_columns(pl.col("text").str.strip_suffix("\r"))
    )
    bounds.check_line_lengths(source.name, lines.select("line", nbytes=pl.col("text").str.len_bytes()))
    body = lines.filter(~pl.col("text").str.contains(r"^[ \t]*(#.*)?$"))
    del lines
    parts = body.with_columns(pl.col("text").str.extract_groups(_SAMPLE).alias("m")).unnest("m")
    parts = parts.rename({"1": "metric", "2": "labels", "3": "raw_value", "4": "raw_t"})
    bad = parts.filter(pl.col("metric").is_null())
    if bad.height:
        row = bad.row(0, named=True)
        raise _line_error(source, row["line"], f"not a sample line: {row['text'][:80]!r}")
    other = int((~parts["metric"].is_in(list(COLUMNS))).sum())
    mine = parts.filter(pl.col("metric").is_in(list(COLUMNS))).drop("text")
    del parts
    labels = pl.col("labels").fill_null("")
    mine = mine.with_columns(
        value=_number(pl.col("raw_value")),
        t_ms=pl.col("raw_t").cast(pl.Int64, strict=False).fill_null(fallback),
        device=labels.str.extract(r'[{,][ \t]*device[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"'),
        port_label=labels.str.extract(r'[{,][ \t]*port[ \t]*=[ \t]*"([^"]*)"'),
        instance=labels.str.extract(r'[{,][ \t]*instance[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"'),
    )
    _check_fields(source, mine, window)
    host = pl.col("instance").str.replace(r":[0-9]+$", "")
    return (
        mine.select(
            source=pl.lit(index, pl.UInt32),
            line=pl.col("line").cast(pl.UInt32),
            host=pl.when(host.fill_null("") != "").then(host).otherwise(pl.lit(source.stem)),
            device="device",
            port=pl.col("port_label").cast(pl.Int32),
            metric="metric",
            value="value",
            t_ms="t_ms",
        ).cast(_SAMPLE_COLUMNS),  # nothing of the block's text is kept (_METRIC)
        other,
    )


def _fallback_ms(source: Source, now: float | None, window: bounds.Window) -> int:
    """The time of lines without a timestamp: the file's mtime where it is a plausible one, else `now` or the
    clock (engine/ingest/dcgm.py's rule)."""
    clock = round(1000 * (now or time.time()))
    mtime_ms = None if source.mtime is None else round(1000 * source.mtime)
    return mtime_ms if mtime_ms is not None and window.lo_ms <= mtime_ms <= window.hi_ms else clock


def _number(raw: pl.Expr) -> pl.Expr:
    """A sample value as Prometheus reads it: a float, or NaN / +Inf / -Inf in any case."""
    word = raw.str.to_lowercase()
    special = (
        pl.when(word == "nan")
        .then(float("nan"))
        .when(word.is_in(["+inf", "inf"]))
        .then(float("inf"))
        .when(word == "-inf")
        .then(float("-inf"))
    )
    return pl.coalesce(raw.cast(pl.Float64, strict=False), special)


def _check_fields(source: Source, mine: pl.DataFrame, window: bounds.Window) -> None:
    """The first line whose value, timestamp, device or port is not one: an error naming it."""
    checks = [
        (pl.col("value").is_null(), "its value {raw_value!r} is not a number"),
        (
            pl.col("raw_t").is_not_null() & pl.col("raw_t").cast(pl.Int64, strict=False).is_null(),
            "bad timestamp",
        ),
        (
            pl.col("device").fill_null("") == "",
            'no device label (node_exporter names the HCA: device="mlx5_0")',
        ),
        (
            ~pl.col("port_label").fill_null("").str.contains(r"^[0-9]{1,3}$")
            | (pl.col("port_label").cast(pl.Int32, strict=False) > MAX_PORT_NUMBER),
            f"port label {{port_label!r}} is not a port number (0-{MAX_PORT_NUMBER})",
        ),
    ]
    for bad, what in checks:
        rows = mine.filter(bad)
        if rows.height:
            row = rows.row(0, named=True)
            raise _line_error(source, row["line"], what.format(**row))
    late = mine.filter(~bounds.in_window(pl.col("t_ms"), window))
    if late.height:
        row = late.row(0, named=True)
        raise bounds.time_error(source.name, row["line"], row["t_ms"], window)


def _check_repeats(source: Source, samples: pl.DataFrame) -> None:
    """The first sample (in file order) of a series already read at its time: an error naming its line.

    Rows are told apart by a hash of their key first (8 bytes a row), and only rows whose hash repeats are
    compared whole: is_first_distinct on the struct itself took 2 GB for 12M samples."""
    key = pl.struct("host", "device", "port", "metric", "t_ms")
    hashes = samples.select(key.hash(seed=0)).to_series()
    repeated = hashes.filter(~hashes.is_first_distinct())
    if repeated.len() == 0:
        return
    # the rows whose hash repeats, in file order; compared whole, as a hash shared by chance is no error
    maybe = samples.filter(hashes.is_in(repeated.unique().implode()))
    del hashes
    again = maybe.filter(~key.is_first_distinct())
    if again.height:
        row = again.row(0, named=True)
        raise _line_error(
            source, row["line"], f"{row['metric']} of {row['device']} port {row['port']} again at one time"
        )


def _check_ports(names: list[str], samples: pl.DataFrame) -> None:
    """Hosts within MAX_HOSTS and ports a host within MAX_PORTS_PER_HOST; the error names the first line past."""
    hosts = samples.filter(pl.col("host").is_first_distinct())
    if hosts.height > limits.MAX_HOSTS:
        row = hosts.row(limits.MAX_HOSTS, named=True)
        raise GoodputError(
            f"{names[row['source']]}, line {row['line']}: more than {limits.MAX_HOSTS:,} hosts, over Goodput's"
            " limit (engine/limits.py MAX_HOSTS)"
        )
    ports = samples.filter(pl.struct("host", "device", "port").is_first_distinct())
    crowded = ports.with_columns(rank=pl.col("host").cum_count().over("host")).filter(
        pl.col("rank") > MAX_PORTS_PER_HOST
    )
    if crowded.height:
        row = crowded.row(0, named=True)
        raise GoodputError(
            f"{names[row['source']]}, line {row['line']}: host {row['host']!r} has more than {MAX_PORTS_PER_HOST}"
            " NIC ports, over Goodput's limit (engine/ingest/node_exporter.py MAX_PORTS_PER_HOST)"
        )


def _line_error(source: Source, line: int, what: str) -> GoodputError:
    return GoodputError(f"{source.name}, line {line}: {what}")
