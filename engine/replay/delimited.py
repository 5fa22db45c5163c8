"""Delimited text (goodput CSV, sacct --parsable2): a header line, then one job a line, split vectorised.

Fields are split on the delimiter with no quoting (sacct --parsable2 never quotes; goodput CSV forbids the
delimiter inside a field), so a line with the wrong number of fields is found with one vectorised count.
"""

import polars as pl

from engine.replay.trace import Lines, TraceError, check, split_lines


def split_table(
    lines: Lines, sep: str, what: str, trailing_sep: bool = False
) -> tuple[pl.DataFrame, list[str]]:
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
        raise lines.fail(0, f"the {what} has a header but no lines after it")
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


def read_table(
    source: str, text: str, sep: str, what: str, comment: str | None = None, trailing_sep: bool = False
) -> tuple[pl.DataFrame, list[str], Lines]:
    """`split_table` of the file's lines, by Polars' multi-threaded CSV reader when the file is plain (no
    blank or comment lines, no CR, every line the header's width), else line by line with checks."""
    fast = None if trailing_sep else _read_plain(source, text, sep, comment)
    if fast is not None:
        return fast
    lines = split_lines(source, text, comment)
    parts, names = split_table(lines, sep, what, trailing_sep)
    return parts, names, lines


def _read_plain(source: str, text: str, sep: str, comment: str | None) -> tuple | None:
    # blank lines and stray whitespace-only lines show up below as a row count or field count that is off;
    # NUL bytes were refused when the file was read
    if not text.strip() or text.startswith("\n") or "\r" in text:
        return None
    cut = text.find("\n")
    header = text if cut < 0 else text[:cut]
    names = [h.strip() for h in header.split(sep)]
    if "" in names or len({n.lower() for n in names}) != len(names) or header.strip() != header:
        return None
    if comment is not None and (text.startswith(comment) or f"\n{comment}" in text):
        return None
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)  # header included
    rows = lines - 1
    if rows == 0:
        return None
    # the reader rejects a line with too many fields; with the total count right, none has too few either
    if text.count(sep) != lines * (len(names) - 1):
        return None
    try:
        parts = pl.read_csv(
            text.encode(),
            separator=sep,
            quote_char=None,
            infer_schema=False,
            has_header=True,
            empty_string_is_null=False,
            new_columns=names,
            comment_prefix=None,
        )
    except Exception:  # noqa: BLE001 - any complaint of the fast reader: the careful path names the line
        return None
    if parts.height != rows or parts.width != len(names):
        return None
    numbers = pl.Series("number", range(1, rows + 2), dtype=pl.UInt32)
    return parts, [n.lower() for n in names], Lines(source, None, numbers, full=text)
