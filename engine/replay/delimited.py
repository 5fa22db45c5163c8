"""Delimited text (goodput CSV, sacct --parsable2): a header line, then one job a line, split vectorised.

Fields are split on the delimiter with no quoting (sacct --parsable2 never quotes; goodput CSV forbids the
delimiter inside a field), so a line with the wrong number of fields is found with one vectorised count.
"""

import polars as pl

from engine.replay.formats import Lines, TraceError, check


def split_table(lines: Lines, sep: str, what: str, trailing_sep: bool = False) -> tuple[pl.DataFrame, list[str]]:
    """(frame of String columns named by the header, lower-cased header names). The header is lines[0]."""
    if not len(lines.text):
        raise TraceError(f"{lines.source}: the trace is empty")
    header = lines.text[0]
    if trailing_sep and header.endswith(sep):  # `sacct --parsable` (not 2) ends every line with |
        header = header[:-1]
    names = [h.strip().lstrip("\ufeff") for h in header.split(sep)]
    if len({n.lower() for n in names}) != len(names) or "" in names:
        raise lines.fail(0, f"the {what} header has an empty or repeated column name")
    body = lines.text.slice(1)
    if not len(body):
        raise lines.fail(0, f"the {what} has a header but no jobs")
    if trailing_sep:
        body = pl.Series(body.name, body).str.strip_suffix(sep)
    counts = body.str.count_matches(sep, literal=True)
    check(lines, counts != len(names) - 1, f"expected {len(names)} {sep!r}-separated fields", offset=1)
    parts = body.str.split_exact(sep, len(names) - 1).struct.rename_fields(names).struct.unnest()
    return parts, [n.lower() for n in names]


def column(parts: pl.DataFrame, names: list[str], wanted: str) -> pl.Series | None:
    """The column whose header is `wanted` (any case), stripped; None when absent."""
    if wanted.lower() not in names:
        return None
    return parts.to_series(names.index(wanted.lower())).str.strip_chars().alias(wanted)


def require(lines: Lines, parts: pl.DataFrame, names: list[str], wanted: list[str], what: str) -> None:
    missing = [w for w in wanted if w.lower() not in names]
    if missing:
        raise lines.fail(0, f"the {what} header lacks column(s) {', '.join(missing)}")
