"""Node events as files hold them: Slurm's `sacctmgr --parsable2 show event` text, or fault tickets as CSV, JSON
lines or Parquet. Each reader gives the same raw columns (RAW: text as read, or a Parquet column's own type for
the times), one row a record with the line (or, in Parquet, the row) it came from; engine/ingest/node_events/
events.py turns them into typed events.

Sizes are bounded before anything is built for them (engine/limits.py): a file is read at most MAX_INPUT_BYTES
(compressed input inflated under that limit, engine/ingest/sources.py), a line at most MAX_LINE_BYTES, records at
most MAX_NODE_EVENTS. sacctmgr's text and JSON lines are read in blocks of whole lines as they stream
(engine/ingest/inflate.py text_blocks), each block's records kept as columns before the next is read; a CSV (whose
quoted cells may hold newlines) and a Parquet file are read whole, within the same bounds.
"""

import io
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from engine import limits
from engine.bounded_read import load_json
from engine.errors import GoodputError
from engine.ingest.bounds import check_parquet_text
from engine.ingest.inflate import compression_of, text_blocks
from engine.ingest.sources import Source
from engine.replay import bounds

# The columns every reader gives (reason: Slurm's Reason, or a ticket's cause).
RAW = ("line", "node", "start", "end", "state", "reason", "description", "user")
TICKET_COLUMNS = ("node", "start", "end", "cause", "description", "user")
TICKET_REQUIRED = ("node", "start", "end")
# sacctmgr's header names (any case) for the columns read; `Start` and `End` are how format= spells them.
SLURM_NAMES = {
    "nodename": "node",
    "timestart": "start",
    "start": "start",
    "timeend": "end",
    "end": "end",
    "state": "state",
    "reason": "reason",
    "user": "user",
}
SLURM_REQUIRED = ("node", "start", "end", "state")
FORMATS = ("slurm", "csv", "jsonl", "parquet")
# A node event of a node out of service: DOWN, DRAIN (DRAINED, DRAINING) or FAIL (FAILING), alone or in a
# compound state (IDLE+DRAIN, MIXED+DRAIN, DOWN*, DRAIN+FAIL); not POWERED_DOWN, a node asleep to save power.
OUT_STATE = r"(?i)(?:^|\+)(?:DOWN|DRAIN|DRAINED|DRAINING|FAIL|FAILING)[^A-Za-z_+]*(?:\+|$)"
SKIP_CLUSTER = "cluster-level events (no NodeName)"
SKIP_STATE = "node events in other states than DOWN, DRAIN or FAIL"
SKIP_FIELDS = "lines whose fields do not match sacctmgr's header"
_HEAD_BYTES = 64 * 1024


@dataclass
class Read:
    """One input's records: `raw` (RAW columns), how it was read, and what was skipped (reason: count)."""

    name: str
    fmt: str
    raw: pl.DataFrame
    where: str = "line"  # what `line` counts: lines, or a Parquet file's rows
    skipped: Counter = field(default_factory=Counter)
    joined_reasons: int = 0  # sacctmgr lines whose Reason held the `|` that separates its fields
    # nodes named by records skipped for their state (POWERED_DOWN, ...): line, node; in the fleet all the same
    quiet: list[pl.DataFrame] = field(default_factory=list)


def read_source(source: Source, fmt: str = "auto") -> Read:
    """The records of one file; `fmt` auto, slurm or tickets (CSV, JSON lines or Parquet, told by content)."""
    kind = detect(source, fmt)
    if kind == "parquet":
        return _parquet(source)
    if kind == "csv":
        return _csv(source)
    blocks = text_blocks(source)
    try:
        return read_sacctmgr(blocks, source.name) if kind == "slurm" else _jsonl(blocks, source.name)
    finally:
        blocks.close()


def detect(source: Source, fmt: str) -> str:
    """The reader a file needs: Parquet by its magic, JSON lines by a first line that opens an object, Slurm's
    text by its header (NodeName, TimeStart, ... separated by `|`), CSV otherwise."""
    head = _head(source)
    if head.startswith(b"PAR1"):
        if fmt == "slurm":
            raise GoodputError(f"{source.name}: a Parquet file, not sacctmgr's text (--format slurm)")
        return "parquet"
    first = next((line.strip() for line in head.splitlines() if line.strip()), b"").lstrip(b"\xef\xbb\xbf")
    if fmt == "slurm":
        return "slurm"
    if first.startswith(b"{"):
        return "jsonl"
    fields = [f.strip().lower() for f in first.split(b"|")]
    if fmt == "auto" and b"nodename" in fields and (b"timestart" in fields or b"start" in fields):
        return "slurm"
    return "csv"


def _head(source: Source) -> bytes:
    """The first plain bytes of a source (a compressed one inflated, within the bounds, to see them)."""
    path = source.path
    if source.raw is None and path is not None and path.is_file():
        try:
            with path.open("rb") as file:
                head = file.read(_HEAD_BYTES)
        except OSError as err:
            raise GoodputError(f"{source.name}: cannot read ({err.strerror or err})") from err
        if compression_of(head[:4]) is None:
            return head
    return source.data[:_HEAD_BYTES]


def _lines(first_line: int, block: bytes) -> pl.DataFrame:
    """The non-blank lines of a block of whole lines: number, text (a final `\\r` dropped)."""
    lines = (
        pl.DataFrame({"text": [block.decode("utf-8", errors="replace")]})
        .select(pl.col("text").str.split("\n"))
        .explode("text")
        .with_row_index("number", offset=first_line)
        .with_columns(pl.col("text").str.strip_suffix("\r"), pl.col("number").cast(pl.Int64))
    )
    return lines.filter(pl.col("text").str.strip_chars() != "")


def _count(name: str, total: int) -> None:
    if total > limits.MAX_NODE_EVENTS:
        raise GoodputError(
            f"{name}: more than {limits.MAX_NODE_EVENTS:,} events, over Goodput's limit (engine/limits.py"
            " MAX_NODE_EVENTS); split the history into several runs"
        )


# ----- sacctmgr's text --------------------------------------------------------------------------------------------


def read_sacctmgr(blocks: Iterable[tuple[int, bytes]], name: str) -> Read:
    """`sacctmgr --parsable2 show event` (or --parsable) text with its header. `|` separates fields, and
    sacctmgr does not quote one inside a reason: a line with more fields than the header has them joined back
    into Reason. Cluster-level events (no NodeName) and events of nodes still in service are skipped, counted."""
    header: dict[str, int] | None = None
    width = 0
    trailing = False
    parts: list[pl.DataFrame] = []
    read = Read(name, "slurm", pl.DataFrame())
    total = 0
    for first_line, block in blocks:
        lines = _lines(first_line, block)
        del block
        if header is None and lines.height:
            header, width, trailing = _slurm_header(lines.row(0, named=True), name)
            lines = lines.slice(1)
        if trailing:  # --parsable ends every line with the separator
            lines = lines.with_columns(pl.col("text").str.strip_suffix("|"))
        total += lines.height
        _count(name, total)
        parts.append(_slurm_records(lines, header, width, read))
    if header is None:
        raise GoodputError(
            f"{name}: empty (expected sacctmgr's header NodeName|TimeStart|TimeEnd|State|Reason|User)"
        )
    read.raw = pl.concat(parts, how="vertical") if parts else _empty_raw()
    return read


def _slurm_header(row: dict, name: str) -> tuple[dict[str, int], int, bool]:
    text = row["text"].lstrip("\ufeff")
    fields = text.split("|")
    trailing = len(fields) > 1 and fields[-1] == ""
    if trailing:
        fields = fields[:-1]
    header = {}
    for i, field_name in enumerate(fields):
        column = SLURM_NAMES.get(field_name.strip().lower())
        if column is not None and column not in header:
            header[column] = i
    missing = [c for c in SLURM_REQUIRED if c not in header]
    if missing:
        raise GoodputError(
            f"{name}, line {row['number']}: not sacctmgr's event header (need NodeName, TimeStart, TimeEnd and"
            f" State; got {text[:200]!r})"
        )
    return header, len(fields), trailing


def _slurm_records(lines: pl.DataFrame, header: dict[str, int], width: int, read: Read) -> pl.DataFrame:
    """One block's lines as RAW columns; the skipped ones counted in `read`."""
    frame = lines.select(
        pl.col("number").alias("line"), pl.col("text").str.split("|").alias("f")
    ).with_columns(extra=(pl.col("f").list.len() - width).cast(pl.Int64))
    reason_at = header.get("reason")
    # fewer fields: unreadable; more: a `|` inside Reason, where there is one to hold it
    fits = (pl.col("extra") == 0) if reason_at is None else (pl.col("extra") >= 0)
    read.skipped[SKIP_FIELDS] += frame.height - frame.filter(fits).height
    frame = frame.filter(fits)
    read.joined_reasons += frame.filter(pl.col("extra") > 0).height

    def column(name: str) -> pl.Expr:
        at = header.get(name)
        if at is None:
            return pl.lit(None, pl.String).alias(name)
        if name == "reason":
            return pl.col("f").list.slice(at, pl.col("extra") + 1).list.join("|").alias(name)
        shift = pl.col("extra") if reason_at is not None and at > reason_at else pl.lit(0)
        return pl.col("f").list.get(shift + at, null_on_oob=True).alias(name)

    records = frame.select("line", *(column(c) for c in ("node", "start", "end", "state", "reason", "user")))
    records = records.with_columns(pl.col("node").str.strip_chars(), pl.col("state").str.strip_chars())
    cluster = records["node"].fill_null("") == ""
    read.skipped[SKIP_CLUSTER] += int(cluster.sum())
    records = records.filter(~cluster)
    out = records["state"].fill_null("").str.contains(OUT_STATE)
    read.skipped[SKIP_STATE] += records.height - int(out.sum())
    read.quiet.append(records.filter(~out).select("line", "node"))
    return (
        records.filter(out)
        .with_columns(
            description=pl.lit(None, pl.String),
            user=pl.col("user").str.replace(r"\(\d+\)$", "").str.strip_chars(),  # sacctmgr's `root(0)`
            reason=pl.col("reason").str.strip_chars(),
        )
        .select(RAW)
    )


def _empty_raw() -> pl.DataFrame:
    return pl.DataFrame(schema={c: pl.Int64 if c == "line" else pl.String for c in RAW})


# ----- JSON lines -------------------------------------------------------------------------------------------------


def _jsonl(blocks: Iterator[tuple[int, bytes]], name: str) -> Read:
    """One JSON object a line with the keys TICKET_COLUMNS (others ignored); a number where a time belongs is Unix
    seconds. A line that is not a JSON object is an error naming it."""
    wanted = pl.Struct(dict.fromkeys(TICKET_COLUMNS, pl.String))
    parts, total = [], 0
    for first_line, block in blocks:
        lines = _lines(first_line, block)
        del block
        total += lines.height
        _count(name, total)
        try:
            decoded = lines.select(
                pl.col("number").alias("line"), pl.col("text").str.json_decode(wanted).alias("record")
            ).unnest("record")
        except pl.exceptions.PolarsError as err:
            raise _bad_json_line(lines, name, err) from None
        parts.append(decoded)
    raw = (
        pl.concat(parts, how="vertical")
        if parts
        else pl.DataFrame(schema={"line": pl.Int64, **wanted.to_schema()})
    )
    for column in ("node", "start"):
        if raw.height and raw[column].null_count() == raw.height:
            raise GoodputError(f"{name}: no line has the key {column!r} (need {', '.join(TICKET_REQUIRED)})")
    return Read(name, "jsonl", _tickets(raw))


def _bad_json_line(lines: pl.DataFrame, name: str, err: Exception) -> GoodputError:
    """The first line of a block Polars could not decode, named, with Python's reason (found only on failure)."""
    for number, text in lines.iter_rows():
        where = f"{name}, line {number}"
        value = load_json(text, where, invalid="not JSON")
        if not isinstance(value, dict):
            return GoodputError(f"{where}: not a JSON object (a ticket is one object a line)")
        for key in TICKET_COLUMNS:
            if isinstance(value.get(key), dict | list):
                return GoodputError(f"{where}: key {key!r}: an object or a list, not a value")
    said = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
    return GoodputError(f"{name}: not JSON lines ({said})")


def _tickets(raw: pl.DataFrame) -> pl.DataFrame:
    """Ticket columns as RAW ones: the cause is the reason; no Slurm state."""
    return raw.select(
        pl.col("line").cast(pl.Int64),
        pl.col("node").cast(pl.String).str.strip_chars(),
        "start",
        "end",
        pl.lit(None, pl.String).alias("state"),
        pl.col("cause").cast(pl.String).str.strip_chars().alias("reason"),
        pl.col("description").cast(pl.String).str.strip_chars(),
        pl.col("user").cast(pl.String).str.strip_chars(),
    )


# ----- CSV --------------------------------------------------------------------------------------------------------


def _columns(names: list[str], name: str) -> dict[str, str]:
    """The file's name of each ticket column (matched without case or surrounding spaces)."""
    found: dict[str, str] = {}
    for written in names:
        key = written.strip().lstrip("\ufeff").lower()
        if key in TICKET_COLUMNS and key not in found:
            found[key] = written
    for column in TICKET_REQUIRED:
        if column not in found:
            have = ", ".join(repr(n) for n in names[:12]) or "none"
            raise GoodputError(
                f"{name}: no column {column!r} (a tickets file has node, start, end and, where known, cause and"
                f" description; this one has {have})"
            )
    return found


def _csv(source: Source) -> Read:
    """A CSV with a header line: every cell read as text, so line numbers count quoted newlines too."""
    # a file read afresh, not kept by `source` (its text let go of once parsed); one inflated to be told apart is
    # already held
    fresh = source.path is not None and source.raw is None
    data = Source(source.name, path=source.path).data if fresh else source.data
    bounds.check_text(source.name, data, limits.MAX_NODE_EVENTS + 1, "lines in one node-events file")
    try:
        frame = pl.read_csv(
            io.BytesIO(data), infer_schema=False, encoding="utf8-lossy", truncate_ragged_lines=True
        )
    except pl.exceptions.PolarsError as err:
        raise GoodputError(f"{source.name}: not a readable CSV file ({_first_line(err)})") from None
    del data
    found = _columns(frame.columns, source.name)
    # a record's line: the header's 1, then each record's lines (1 + the newlines inside its quoted cells)
    newlines = pl.sum_horizontal(pl.all().str.count_matches("\n").fill_null(0)) if frame.width else pl.lit(0)
    frame = frame.with_columns(_newlines=newlines.cast(pl.Int64))
    lines = 2 + pl.int_range(pl.len(), dtype=pl.Int64) + pl.col("_newlines").cum_sum() - pl.col("_newlines")
    raw = frame.select(
        lines.alias("line"),
        *((pl.col(found[c]) if c in found else pl.lit(None, pl.String)).alias(c) for c in TICKET_COLUMNS),
        pl.any_horizontal(pl.exclude("_newlines").is_not_null()).alias("_any"),
    )
    del frame
    return Read(source.name, "csv", _tickets(raw.filter(pl.col("_any")).drop("_any")))


# ----- Parquet ----------------------------------------------------------------------------------------------------


def _parquet(source: Source) -> Read:
    """The ticket columns of a Parquet file: its rows counted and its text columns' inflated size checked from its
    metadata before a page is read; times may be timestamps, dates, numbers (Unix seconds) or text."""
    name, data = source.name, source.data
    try:
        file = pq.ParquetFile(pa.BufferReader(data))
        meta, schema = file.metadata, file.schema_arrow
    except Exception as err:  # noqa: BLE001 (Arrow raises many kinds for a broken file)
        raise GoodputError(f"{name}: not a readable Parquet file ({_first_line(err)})") from None
    _count(name, meta.num_rows)
    found = _columns(list(schema.names), name)
    text = sorted({found[c] for c in found if _is_text(schema.field(found[c]).type)})
    check_parquet_text(name, meta, text)
    try:
        frame = pl.read_parquet(io.BytesIO(data), columns=list(found.values()))
    except Exception as err:  # noqa: BLE001
        raise GoodputError(f"{name}: not a readable Parquet file ({_first_line(err)})") from None
    raw = frame.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line"),
        *((pl.col(found[c]) if c in found else pl.lit(None, pl.String)).alias(c) for c in TICKET_COLUMNS),
    )
    for column in ("node", "cause", "description", "user"):
        if (
            raw[column].dtype not in (pl.String, pl.Null, pl.Categorical)
            and not raw[column].dtype.is_integer()
        ):
            raise GoodputError(f"{name}: column {column!r}: Parquet type {raw[column].dtype} is not text")
    return Read(name, "parquet", _tickets(raw), where="row")


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
