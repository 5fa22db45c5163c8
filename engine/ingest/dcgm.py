"""Read the Prometheus text that NVIDIA's DCGM exporter serves into long-form sample frames.

The text exposition format: `# HELP name text`, `# TYPE name type`, then one sample a line,
`name{label="value",...} value [timestamp_ms]`. A file may hold many scrapes of many hosts when its lines carry
timestamps; lines without a timestamp take the file's modification time (or the scrape's time when live).

Speed is the point (issue 5: >= 1,000,000 samples a second), so nothing here loops over lines in Python: the
text is split and matched with Polars string expressions, and label blocks, which repeat on every scrape, are
parsed once per distinct block.

Where Prometheus itself tolerates something (an unknown comment, a metric it does not know, a NaN value) it is
a counted skip; where it would refuse the scrape (a garbled or truncated line, a duplicate sample) it is a
GoodputError naming the file and line, and nothing is written. Sizes and ranges (line length, hosts, GPUs,
clocks, values a column can hold) are checked in engine/ingest/bounds.py, which says which are errors and which
skips; a live scrape passes `live_window`, and then every bad sample is a counted skip.
"""

import time
from collections import Counter
from dataclasses import dataclass, field

import polars as pl

from engine.errors import GoodputError
from engine.ingest import bounds
from engine.ingest.bounds import Window
from engine.ingest.inflate import text_blocks
from engine.ingest.sources import Source

# The DCGM fields that have a column in gpu_samples (engine/store/schema.py), and the column each one fills.
# Field names: ../shared/data/dcgm/default-counters.csv (the exporter's default metric list). Field 112 has two
# names (DCGM 3.3 renamed throttle reasons to clocks-event reasons; exporters built on older DCGM serve the old
# one): both fill clocks_event_reasons, a bitmask engine.telemetry.clocks.decode_reasons reads.
COLUMNS = {
    "DCGM_FI_DEV_GPU_TEMP": "temp_c",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_GPU_UTIL": "util_pct",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "mem_util_pct",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "ecc_sbe",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "ecc_dbe",
    "DCGM_FI_DEV_MEMORY_TEMP": "memory_temp_c",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "clocks_event_reasons",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "clocks_event_reasons",
    "DCGM_FI_DEV_POWER_VIOLATION": "power_violation_ns",
    "DCGM_FI_DEV_THERMAL_VIOLATION": "thermal_violation_ns",
}
# The last XID a GPU reported; it never resets, so only a change between scrapes is an event.
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
# Metrics stored as Int32 (the ECC counts of gpu_samples, the XID of xid_events); the rest of COLUMNS is Float32.
COUNT_METRICS = ["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", XID_METRIC]
# Metrics stored as Int64: the clocks-event bitmask and the violation counters (whole numbers, 0 and up).
BIG_COUNT_METRICS = [
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_POWER_VIOLATION",
    "DCGM_FI_DEV_THERMAL_VIOLATION",
]
# Series the exporter publishes per GPU start with this; other metrics (the exporter's own, go_*) are skipped.
DCGM_PREFIX = "DCGM_FI_"

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
# name, optional {labels}, value, optional integer timestamp in milliseconds. Label values may hold spaces and
# braces, so the label block runs to the last `}` before the value.
_SAMPLE = rf"^({_NAME})[ \t]*(\{{.*\}})?[ \t]+([^ \t]+)(?:[ \t]+(-?[0-9]+))?[ \t]*$"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"(?:[^"\\\n]|\\.)*"'
_LABEL_BLOCK = rf"^\{{[ \t]*(?:{_LABEL}(?:[ \t]*,[ \t]*{_LABEL})*[ \t]*,?[ \t]*)?\}}$"
_TYPE = rf"^#[ \t]+TYPE[ \t]+{_NAME}[ \t]+(counter|gauge|histogram|summary|untyped|unknown)[ \t]*$"
_HELP = rf"^#[ \t]+HELP[ \t]+{_NAME}(?:[ \t].*)?$"
# The labels Goodput reads (dcgm-exporter's names); others are kept only inside the label block.
LABELS = {
    "gpu": "gpu",
    "UUID": "uuid",
    "modelName": "model",
    "Hostname": "hostname",
    "pci_bus_id": "pci_bus_id",
    "device": "device",
}


@dataclass
class DcgmSamples:
    """Parsed scrapes, long form.

    `samples`: one row a value read for a GPU: t_ms (Int64, ms since the epoch), series (UInt64, the label
    block's hash), metric (Categorical), value (Float64), ident (UInt64: metric, labels, host), source (UInt32),
    line (UInt32).
    `series`: one row a distinct label block: series, hostname, gpu, uuid, model, pci_bus_id, device.
    `skipped`: counted skips by reason (what Prometheus would tolerate).
    """

    samples: pl.DataFrame
    series: pl.DataFrame
    skipped: Counter = field(default_factory=Counter)
    sources: list[str] = field(default_factory=list)


def parse_dcgm(
    sources: list[Source],
    *,
    now: float | None = None,
    default_host: str | None = None,
    live_window: Window | None = None,
) -> DcgmSamples:
    """Parse every source; scrapes without timestamps take the source's mtime, else `now` (else the clock).

    Files: a timestamp outside engine/ingest/bounds.file_window, or a span over MAX_RUN_DAYS, is an error.
    Live scrapes (`live_window` given): samples stamped outside it are skipped and counted instead.
    """
    window = live_window or bounds.file_window()
    parsed: list[DcgmSamples] = []
    for i, source in enumerate(sources):
        before = sum(p.samples.height for p in parsed)
        parsed.append(
            _parse_one(
                source,
                i,
                now=now,
                default_host=default_host,
                window=window,
                skip_bad_times=live_window is not None,
                before=before,
            )
        )
    skipped: Counter = Counter()
    for one in parsed:
        skipped.update(one.skipped)
    names = [s.name for s in sources]
    samples = pl.concat([p.samples for p in parsed], how="vertical")
    if live_window is None:
        bounds.check_span(names, samples)
    series = pl.concat([p.series for p in parsed], how="vertical")
    bounds.check_hosts_and_gpus(
        names,
        series.sort("source", "line").select(
            "hostname",
            pl.coalesce(pl.col("uuid"), pl.lit("#") + pl.col("gpu").cast(pl.String)).alias("key"),
            "source",
            "line",
        ),
    )
    series = series.unique("series", keep="first", maintain_order=True).drop("source", "line")
    result = DcgmSamples(samples, series, skipped, names)
    _refuse_duplicates(result)
    return result


def _parse_one(
    source: Source,
    index: int,
    *,
    now: float | None,
    default_host: str | None,
    window: Window,
    skip_bad_times: bool,
    before: int = 0,
) -> DcgmSamples:
    """One source read block by block (engine/ingest/inflate.py text_blocks): each block's text becomes compact
    typed rows before the next is read, so memory follows the samples kept, not the text."""
    host = default_host or source.stem
    fallback_ms = _fallback_ms(source, now, window)
    skipped: Counter = Counter()
    samples, series = [], []
    known = _no_keys()  # the keys parsed so far: a scrape repeats its series, each block needs only the new
    kept = before  # samples kept so far, earlier sources included: the limit is on the run
    for first_line, data in text_blocks(source):
        block = Block(source.name, data, first_line)
        one, known = _parse_block(block, index, host, fallback_ms, window, skip_bad_times, skipped, known)
        del data, block
        kept += one.samples.height
        bounds.check_samples(source.name, kept, one.samples)
        samples.append(one.samples)
        series.append(one.series)
    return DcgmSamples(
        pl.concat(samples, how="vertical"),
        pl.concat(series, how="vertical").unique("series", keep="first", maintain_order=True),
        skipped,
    )


@dataclass(frozen=True)
class Block:
    """Whole lines of one source: its name (for errors), the bytes, and the number of their first line."""

    name: str
    data: bytes
    first: int


def _parse_block(
    block: Block,
    index: int,
    host: str,
    fallback_ms: int,
    window: Window,
    skip_bad_times: bool,
    skipped: Counter,
    known: pl.DataFrame,
) -> tuple[DcgmSamples, pl.DataFrame]:
    """The block's samples and series (those first seen in it), and the keys known after it."""
    split = _split_fast(block, host, known)
    if (
        split is None
    ):  # some line needs the exact reading (no labels, a `}` inside a value, odd spacing, garbage)
        split = _split_exact(block, host)
    rows, new, comments = split
    del split
    new = new.join(known.select("key_hash"), on="key_hash", how="anti")
    keys = pl.concat([known, new], how="vertical")
    _check_comments(block, comments, skipped)
    rows = rows.with_columns(pl.col("t_ms").fill_null(fallback_ms)).join(
        keys.select(
            "key_hash", pl.col("metric").cast(pl.Categorical), "series", "ident", "dcgm", "per_gpu", "gpu_ok"
        ),
        on="key_hash",
        how="left",
    )
    dcgm, per_gpu, gpu_ok = pl.col("dcgm"), pl.col("per_gpu"), pl.col("gpu_ok")
    finite = pl.col("value").is_finite()
    fits = bounds.storable(
        pl.col("metric"),
        pl.col("value"),
        counts=COUNT_METRICS,
        floats=[m for m in COLUMNS if m not in COUNT_METRICS + BIG_COUNT_METRICS],
        big_counts=BIG_COUNT_METRICS,
    )
    # Each skipped line is counted once, under the first reason that applies.
    counts = rows.select(
        (~dcgm).sum().alias("other"),
        (dcgm & ~gpu_ok).sum().alias("gpu"),
        (dcgm & gpu_ok & ~finite).sum().alias("nan"),
        (dcgm & gpu_ok & finite & ~per_gpu).sum().alias("no_gpu"),
        (dcgm & gpu_ok & finite & per_gpu & ~fits).sum().alias("range"),
    ).row(0, named=True)
    skipped["metrics other than DCGM_FI_*"] += counts["other"]
    skipped[bounds.SKIP_GPU_LABEL] += counts["gpu"]
    skipped["NaN or infinite values"] += counts["nan"]
    skipped["series without a gpu or UUID label"] += counts["no_gpu"]
    skipped[bounds.SKIP_VALUE] += counts["range"]
    kept = rows.filter(dcgm & gpu_ok & finite & per_gpu & fits)
    timely = bounds.in_window(pl.col("t_ms"), window)
    if skip_bad_times:
        skipped[bounds.SKIP_TIME] += kept.filter(~timely).height
        kept = kept.filter(timely)
    else:
        late = kept.filter(~timely).sort("line")
        if late.height:
            raise bounds.time_error(block.name, late["line"][0], late["t_ms"][0], window)
    samples = kept.select(
        "t_ms", "series", "metric", "value", "ident", pl.lit(index, pl.UInt32).alias("source"), "line"
    )
    series = new.filter(per_gpu & gpu_ok).select(
        "series", *LABELS.values(), pl.lit(index, pl.UInt32).alias("source"), "line"
    )
    return DcgmSamples(samples, series.unique("series", keep="first", maintain_order=True)), keys


def _fallback_ms(source: Source, now: float | None, window: Window) -> int:
    """The time of lines without a timestamp: the file's mtime, else `now`, else the clock. An mtime outside
    the window (0 after some archive tools, a clock reset) says nothing about the scrape: the clock is used."""
    clock = round(1000 * (now or time.time()))
    if source.mtime is None:
        return clock
    mtime_ms = round(1000 * source.mtime)
    return mtime_ms if window.lo_ms <= mtime_ms <= window.hi_ms else clock


# What both readers give: one row a sample line, its key (`name{labels`) hashed, its value and timestamp read.
_ROWS = {"line": pl.UInt32, "key_hash": pl.UInt64, "value": pl.Float64, "t_ms": pl.Int64}


def _split_fast(
    block: Block, host: str, known: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame] | None:
    """Split each line at its one `}` with Polars' CSV reader (the fast path); None if a line needs more care.

    A well-formed DCGM line has exactly one `}`: `name{labels` before it, ` value [timestamp]` after it. The
    long label text is only hashed here; it is read once per distinct series, in `_parse_keys`, and only for
    keys not `known` from earlier blocks.
    """
    try:
        raw = pl.read_csv(
            block.data,
            has_header=False,
            separator="}",
            quote_char=None,
            infer_schema=False,
            schema={"key": pl.String, "tail": pl.String, "extra": pl.String},
            truncate_ragged_lines=True,
            raise_if_empty=False,
            missing_columns="insert",
            extra_columns="ignore",
            glob=False,
        )
    except pl.exceptions.ComputeError as err:
        _decode(block)  # names the line of a bad byte
        first_line = (str(err).strip().splitlines() or ["unreadable"])[0]  # Polars adds hints on more lines
        raise GoodputError(f"{block.name}: cannot read as text ({first_line})") from err
    raw = raw.with_row_index("line", offset=block.first)
    # An empty line and a line of only `}` both read as nulls here; the exact reader tells them apart. A line
    # with two `}` or more is read exactly too (past the third, this reader drops text, so lengths would lie).
    if raw["key"].null_count() or raw["extra"].null_count() < raw.height:
        return None
    bounds.check_line_lengths(
        block.name,
        raw.select(
            "line", nbytes=pl.col("key").str.len_bytes() + (pl.col("tail").str.len_bytes() + 1).fill_null(0)
        ),
    )
    comment = raw["key"].str.starts_with("#")
    parts = pl.col("tail").str.split_exact(" ", 3)
    samples = (
        raw.filter(~comment)
        .select(
            "line",
            "key",
            pl.col("key").hash().alias("key_hash"),
            parts.struct.field("field_1").cast(pl.Float64, strict=False).alias("value"),
            parts.struct.field("field_2").alias("ts_text"),
            (
                pl.col("extra").is_null()
                & parts.struct.field("field_0").eq("")
                & parts.struct.field("field_3").is_null()
            ).alias("shape_ok"),
        )
        .with_columns(t_ms=pl.col("ts_text").cast(pl.Int64, strict=False))
    )
    # Anything unusual (tabs, double spaces, a `}` in a label value, no value) fails here and goes the exact way.
    fine = (
        pl.col("shape_ok")
        & pl.col("value").is_not_null()
        & (pl.col("ts_text").is_null() | pl.col("t_ms").is_not_null())
    )
    if not samples.select(fine.fill_null(False).all()).item():
        return None
    comments = raw.filter(comment).select("line", pl.col("key").alias("text"))
    fresh = samples.filter(~pl.col("key_hash").is_in(known["key_hash"].implode()))
    keys = fresh.group_by("key_hash").agg(pl.col("key").first(), pl.col("line").min())
    rows = samples.select(*_ROWS)
    keys = _parse_keys(block, keys.sort("line"), host, braced=True)
    return (rows.cast(_ROWS), keys, comments) if keys is not None else None


def _no_keys() -> pl.DataFrame:
    """An empty frame of parsed keys (what `_parse_keys` gives)."""
    keys = pl.DataFrame(schema={"key_hash": pl.UInt64, "key": pl.String, "line": pl.UInt32})
    return _parse_keys(Block("", b"", 1), keys, "", braced=False)


def _split_exact(block: Block, host: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Every line matched against the full sample syntax (slower; used when the fast split cannot decide)."""
    text = _decode(block)
    lines = (
        pl.DataFrame({"text": [text]})
        .select(pl.col("text").str.split("\n"))
        .explode("text")
        .with_row_index("line", offset=block.first)
        .with_columns(pl.col("text").str.strip_suffix("\r").str.strip_chars_start(" \t"))
    )
    if text.endswith("\n"):
        lines = lines.slice(0, lines.height - 1)
    bounds.check_line_lengths(block.name, lines.select("line", nbytes=pl.col("text").str.len_bytes()))
    comments = lines.filter(pl.col("text").str.starts_with("#"))
    data = lines.filter((pl.col("text").str.strip_chars(" \t") != "") & ~pl.col("text").str.starts_with("#"))
    data = data.select("line", pl.col("text").str.extract_groups(_SAMPLE).alias("m"), "text").unnest("m")
    data.columns = ["line", "metric", "labels", "value_text", "ts_text", "text"]
    bad = data.filter(pl.col("metric").is_null())
    if bad.height:
        raise GoodputError(
            f"{block.name}, line {bad['line'][0]}: not a Prometheus sample"
            f" (`name{{labels}} value [timestamp]`): {_excerpt(bad['text'][0])}"
        )
    key = pl.concat_str(pl.col("metric"), pl.col("labels").str.strip_suffix("}").fill_null(""))
    data = data.with_columns(
        key=key,
        value=pl.col("value_text").cast(pl.Float64, strict=False),
        t_ms=pl.col("ts_text").cast(pl.Int64, strict=False),
    ).with_columns(key_hash=pl.col("key").hash())
    bad = data.filter(pl.col("value").is_null())
    if bad.height:
        raise _line_error(block, bad["line"][0], f"value {bad['value_text'][0]!r} is not a number")
    bad = data.filter(pl.col("t_ms").is_null() & pl.col("ts_text").is_not_null())
    if bad.height:
        raise _line_error(
            block, bad["line"][0], f"timestamp {bad['ts_text'][0]!r} is not an integer in range"
        )
    keys = data.group_by("key_hash", maintain_order=True).agg(pl.col("key").first(), pl.col("line").first())
    keys = _parse_keys(block, keys, host, braced=False)
    return data.select(*_ROWS).cast(_ROWS), keys, comments.select("line", "text")


def _check_comments(block: Block, comments: pl.DataFrame, skipped: Counter) -> None:
    """HELP and TYPE lines must be well formed (Prometheus refuses the scrape otherwise); others are skipped."""
    body = pl.col("text").str.strip_chars_start(" \t")
    word = body.str.extract(r"^#[ \t]*([A-Z]+)", 1)
    checked = comments.with_columns(word=word).with_columns(
        ok=pl.when(pl.col("word") == "TYPE")
        .then(body.str.contains(_TYPE))
        .when(pl.col("word") == "HELP")
        .then(body.str.contains(_HELP))
        .otherwise(pl.lit(None, pl.Boolean))
    )
    bad = checked.filter(pl.col("ok") == False)  # noqa: E712 (a Polars expression, not a Python comparison)
    if bad.height:
        raise GoodputError(
            f"{block.name}, line {bad['line'][0]}: malformed # {bad['word'][0]} line:"
            f" {_excerpt(bad['text'][0])}"
        )
    skipped["comment lines other than HELP and TYPE"] += checked.filter(pl.col("ok").is_null()).height


def _parse_keys(block: Block, keys: pl.DataFrame, default_host: str, *, braced: bool) -> pl.DataFrame | None:
    """Each distinct `name{labels` once: check its syntax, split name from labels, pull out the labels we read.

    `braced`: the fast reader's keys, which all had a closing `}`; one that does not parse sends the file to
    the exact reader (None) rather than failing, so the exact reader words the error.
    """
    keys = keys.with_columns(pl.col("key").str.extract_groups(rf"^({_NAME})(\{{.*)?$").alias("m")).unnest("m")
    keys.columns = ["key_hash", "key", "line", "metric", "labels"]
    if braced and keys.select((pl.col("metric").is_null() | pl.col("labels").is_null()).any()).item():
        return None
    keys = keys.with_columns(pl.col("labels").fill_null("{").add(pl.lit("}")))
    bad = keys.filter(pl.col("metric").is_null() | ~pl.col("labels").str.contains(_LABEL_BLOCK))
    if bad.height and braced:
        return None
    if bad.height:
        line = bad["line"].min()
        raise GoodputError(
            f"{block.name}, line {line}: garbled metric name or label block"
            ' (expected name{label="value",...})'
        )
    values = [
        pl.col("labels")
        .str.extract(rf'[{{,][ \t]*{label}[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"', 1)
        .str.replace_all(r'\\(["\\])', "$1")
        .str.replace_all(r"\\n", "\n")
        .alias(column)
        for label, column in LABELS.items()
    ]
    # A gpu label that is no GPU index is skipped, not refused (engine/ingest/bounds.py): Prometheus keeps it.
    keys = keys.with_columns(*values).with_columns(gpu_ok=bounds.gpu_index_ok(pl.col("gpu")))
    keys = keys.with_columns(gpu=pl.when("gpu_ok").then(pl.col("gpu")))
    # A series without a Hostname label belongs to the fallback host, so the host is part of its identity: the
    # same labels from two hosts are two series, and the same series in two files is one.
    keys = keys.with_columns(pl.col("hostname").fill_null(default_host))
    return keys.with_columns(
        pl.col("gpu").cast(pl.Int16),  # in range: the others were set null above
        pl.col("pci_bus_id").str.to_lowercase(),
        series=pl.struct("labels", "hostname").hash(),
        ident=pl.struct("metric", "labels", "hostname").hash(),
        dcgm=pl.col("metric").str.starts_with(DCGM_PREFIX),
        per_gpu=pl.col("gpu").is_not_null() | pl.col("uuid").is_not_null(),
    )


def _refuse_duplicates(parsed: DcgmSamples) -> None:
    """Two values of one series at one time: Prometheus refuses that scrape, and so do we (say where)."""
    # Series are few and values many: counting distinct times per series is one cheap pass, and only when a
    # series has fewer distinct times than values are the offending rows looked for.
    per_series = parsed.samples.group_by("ident").agg(pl.col("t_ms").n_unique().alias("times"), pl.len())
    if per_series.filter(pl.col("times") < pl.col("len")).height:
        dup = parsed.samples.filter(~pl.struct("t_ms", "ident").is_first_distinct())
        first = dup.sort("source", "line").row(0, named=True)
        raise GoodputError(
            f"{parsed.sources[first['source']]}, line {first['line']}: a second value of {first['metric']} for the"
            " same GPU at the same time (a scrape given twice, or scrapes without timestamps in one file)"
        )


def _line_error(block: Block, line: int, what: str) -> GoodputError:
    return GoodputError(f"{block.name}, line {line}: {what}")


def _decode(block: Block) -> str:
    """The block's text; Prometheus text must be UTF-8, so a bad byte is an error naming its line."""
    try:
        return block.data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = block.first + block.data.count(b"\n", 0, err.start)
        raise GoodputError(f"{block.name}, line {line}: not UTF-8 text (byte {err.start})") from err


def _excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
