"""Records as read (engine/ingest/node_events/read.py) into typed events: times parsed and checked, hostlists
expanded, texts bounded, and the records that cannot be outages skipped and counted.

What is an error and what a counted skip: a record Goodput cannot read (a time that is not one, a time before 2000
or more than a day ahead of this machine's clock, a zone-less time in a file whose other times name their zone, a
node list that is not Slurm's hostlist syntax, a node name past MAX_NAME_CHARS) is an error naming the file, line
and column: the file is not what it claims to be. A record that reads fine but says nothing usable (no node, an
end before its start, the same node, start and end as an earlier one) is skipped, counted, and the first of each
kind named in a note.
"""

from collections import Counter
from dataclasses import dataclass, field

import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.ingest.node_events import times
from engine.ingest.node_events.read import Read
from engine.replay.sacct import TooManyHosts, expand_hostlist

EVENT_TYPES = {
    "source": pl.String,
    "line": pl.Int64,
    "node": pl.String,
    "start_us": pl.Int64,
    "end_us": pl.Int64,  # null: still open
    "state": pl.String,
    "reason": pl.String,
    "description": pl.String,
    "user": pl.String,
}
SKIP_NO_NODE = "tickets without a node"
SKIP_BACKWARDS = "events ending before they start"
SKIP_DUPLICATE = "duplicate events (the same node, start and end as an earlier one)"
TIME_HELP = "ISO 8601 such as 2025-03-01T12:00:00Z, or Unix seconds"


@dataclass
class Typed:
    """The typed events of one input, what was skipped, and whether its times named no zone (read as UTC)."""

    events: pl.DataFrame
    skipped: Counter = field(default_factory=Counter)
    naive: bool = False


def typed(read: Read, *, now: float | None = None) -> Typed:
    """`read`'s records as EVENT_TYPES rows; a GoodputError naming the file, line and column of the first bad one."""
    raw, name, where = read.raw, read.name, read.where
    skipped = Counter(read.skipped)
    has_node = raw["node"].fill_null("") != ""
    skipped[SKIP_NO_NODE] += raw.height - int(has_node.sum())
    raw = raw.filter(has_node)
    long = raw.filter(pl.col("node").str.len_chars() > limits.MAX_NAME_CHARS)
    if long.height:
        _fail(
            name,
            where,
            long["line"][0],
            "node",
            f"a name of {long['node'].str.len_chars()[0]:,} characters,"
            f" over Goodput's limit of {limits.MAX_NAME_CHARS} (engine/limits.py MAX_NAME_CHARS)",
        )
    start = _parse(raw, "start", name)
    end = _parse(raw, "end", name)
    _check(raw, start, "start", name, where, required=True, now=now)
    _check(raw, end, "end", name, where, required=False, now=now)
    naive = _check_zones(raw, start, end, name, where)
    events = raw.select(
        pl.lit(name, pl.String).alias("source"),
        "line",
        "node",
        start["us"].alias("start_us"),
        end["us"].alias("end_us"),
        "state",
        _clip(pl.col("reason"), limits.MAX_EVENT_TEXT_CHARS).alias("reason"),
        _clip(pl.col("description"), limits.MAX_EVENT_TEXT_CHARS).alias("description"),
        _clip(pl.col("user"), limits.MAX_NAME_CHARS).alias("user"),
    ).cast(EVENT_TYPES)
    return Typed(events, skipped, naive)


def _parse(raw: pl.DataFrame, column: str, name: str) -> pl.DataFrame:
    try:
        return times.parse_typed(raw[column], open_words=column == "end")
    except GoodputError as err:
        raise GoodputError(f"{name}, column {column!r}: {err}") from None


def _check(
    raw: pl.DataFrame, parsed: pl.DataFrame, column: str, name: str, where: str, *, required: bool, now
):
    """The first value of `column` that is missing (where required), not a time, or outside the clock's range."""
    lo, hi = times.window_us(now)
    given, ok, us = parsed["given"], parsed["ok"], parsed["us"]
    if required and not given.all():
        row = int((~given).arg_max())
        _fail(name, where, raw["line"][row], column, "empty (every event needs its start)")
    bad = given & ~ok
    if bad.any():
        row = int(bad.arg_max())
        _fail(
            name, where, raw["line"][row], column, f"{_shown(raw[column][row])} is not a time ({TIME_HELP})"
        )
    early, late = ok & (us < lo), ok & (us > hi)
    if early.any():
        row = int(early.arg_max())
        _fail(
            name,
            where,
            raw["line"][row],
            column,
            f"{_shown(raw[column][row])} is before 2000-01-01"
            " (engine/limits.py EARLIEST_TIMESTAMP_S; Unix seconds, not milliseconds)",
        )
    if late.any():
        row = int(late.arg_max())
        _fail(
            name,
            where,
            raw["line"][row],
            column,
            f"{_shown(raw[column][row])} is more than"
            f" {limits.MAX_CLOCK_AHEAD_S:,} s ahead of this machine's clock (engine/limits.py MAX_CLOCK_AHEAD_S;"
            " Unix seconds, not milliseconds)",
        )


def _check_zones(raw: pl.DataFrame, start: pl.DataFrame, end: pl.DataFrame, name: str, where: str) -> bool:
    """Whether the file's times name no zone (then read as UTC); a file mixing zoned and zone-less times is an
    error at its first zone-less one: which zone that one meant cannot be told."""
    zones = pl.DataFrame({"line": raw["line"], "start": start["zoned"], "end": end["zoned"]})
    cells = zones.unpivot(index="line", variable_name="column", value_name="zoned").drop_nulls("zoned")
    cells = cells.sort("line", maintain_order=True)  # a line's start before its end
    zoned, naive = cells.filter(pl.col("zoned")), cells.filter(~pl.col("zoned"))
    if zoned.height and naive.height:
        first, other = naive.row(0, named=True), zoned.row(0, named=True)
        row = int((raw["line"] == first["line"]).arg_max())
        _fail(
            name,
            where,
            first["line"],
            first["column"],
            f"{_shown(raw[first['column']][row])} names no time"
            f" zone, but the file's other times do ({where} {other['line']:,}, column {other['column']!r}):"
            " give each time its zone (Z, +02:00)",
        )
    return naive.height > 0


def _fail(name: str, where: str, line: int, column: str, what: str):
    raise GoodputError(f"{name}, {where} {line:,}, column {column!r}: {what}")


def _shown(value) -> str:
    text = str(value) if not isinstance(value, str) else value
    return repr(text) if len(text) <= 60 else repr(text[:40] + "…") + f" ({len(text):,} characters)"


def _clip(text: pl.Expr, most: int) -> pl.Expr:
    """Text cut visibly to `most` characters (its first ones and `…`); empty text is null."""
    text = pl.when(text.str.strip_chars() != "").then(text)
    return (
        pl.when(text.str.len_chars() > most)
        .then(pl.concat_str(text.str.slice(0, most - 1), pl.lit("…")))
        .otherwise(text)
    )


# ----- all inputs together ----------------------------------------------------------------------------------------


def expand_nodes(events: pl.DataFrame, where: dict[str, str]) -> pl.DataFrame:
    """A record naming several nodes in Slurm's hostlist syntax (`gpu[01-04,07]`) becomes one event a node; the
    total stays within MAX_NODE_EVENTS, counted before the names are made."""
    lists = (
        events.filter(pl.col("node").str.contains(r"[\[,]"))
        .group_by("node")
        .agg(pl.col("source").first(), pl.col("line").first(), pl.len().alias("uses"))
    )
    if lists.height == 0:
        return events
    expanded: dict[str, list[str]] = {}
    total = events.height - int(lists["uses"].sum())
    for text, source, line, uses in lists.sort("source", "line").iter_rows():
        room = max(1, (limits.MAX_NODE_EVENTS - total) // uses)
        try:
            names = expand_hostlist(text, most=min(limits.MAX_EVENT_NODES, room))
        except TooManyHosts:
            raise GoodputError(
                f"{source}, {where[source]} {line:,}, column 'node': {_shown(text)} names so many nodes that the"
                f" events pass Goodput's limit of {limits.MAX_NODE_EVENTS:,} (engine/limits.py MAX_NODE_EVENTS)"
            ) from None
        except ValueError as err:
            raise GoodputError(
                f"{source}, {where[source]} {line:,}, column 'node': {_shown(text)} is not Slurm hostlist"
                f" syntax ({err})"
            ) from None
        expanded[text] = [n.strip() for n in names]
        total += len(names) * uses
    table = pl.DataFrame(
        {"node": list(expanded), "_names": list(expanded.values())},
        schema={"node": pl.String, "_names": pl.List(pl.String)},
    )
    return (
        events.join(table, on="node", how="left", maintain_order="left")
        .with_columns(node=pl.coalesce(pl.col("_names"), pl.concat_list(pl.col("node"))))
        .drop("_names")
        .explode("node")
        .filter(pl.col("node") != "")
    )


def drop_unusable(events: pl.DataFrame, where: dict[str, str]) -> tuple[pl.DataFrame, Counter, list[str]]:
    """Events that end before they start, and repeats of an earlier event (the same node, start and end), left
    out: counted, the first of each named in a note."""
    skipped: Counter = Counter()
    notes: list[str] = []
    backwards = pl.col("end_us").is_not_null() & (pl.col("end_us") < pl.col("start_us"))
    repeat = ~pl.struct("node", "start_us", "end_us").is_first_distinct()
    for reason, bad in ((SKIP_BACKWARDS, backwards), (SKIP_DUPLICATE, repeat)):
        found = events.filter(bad)
        if found.height:
            first = found.row(0, named=True)
            skipped[reason] += found.height
            at = f"{first['source']}, {where[first['source']]} {first['line']:,}"
            notes.append(f"skipped {found.height:,} {reason}: the first is {at}")
            events = events.filter(~bad)
    return events, skipped, notes
