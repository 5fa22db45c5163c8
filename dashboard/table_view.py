"""Tables of data on the pages: `st.dataframe` with every text column's invisible characters shown visibly
(dashboard.text.table_frame), so a hostname or job name holding a right-to-left override or a zero-width space
reads as what it is in a table too; a short table as static cells (`short`), each as exactly its text.

    table_view.dataframe(frame, hide_index=True, width="stretch")
    table_view.short(frame)   # up to SHORT_ROWS rows: plain cells, else the interactive grid
    table_view.static(frame)  # plain cells whatever its rows: a table whose rows the code bounds (a list of figures)
"""

import polars as pl
import streamlit as st

from dashboard.format import DASH
from dashboard.text import md, table_frame

# A table up to this many rows is drawn as static cells: the interactive grid costs a visit about 0.4 s and a first
# visit another second to load its code (bench/bench_pages.py), more than a few rows are worth.
SHORT_ROWS = 20


def dataframe(data, where=None, **kwargs):
    """`where.dataframe` (st by default; a column or container) of `data`: a Polars frame's text columns made
    visible, anything else as it is; a missing value a dash, as in static cells (the grid writes "None"), and
    a fraction with thousands separators."""
    kwargs.setdefault("placeholder", DASH)
    if isinstance(data, pl.DataFrame):
        # a fraction with separators, as static cells write it (126,475.6, not 126475.6); whole numbers as they
        # are (ids are whole numbers too); a column the caller configured stays as configured
        config = dict(kwargs.get("column_config") or {})
        for name, dtype in data.schema.items():
            if dtype.is_float() and name not in config:
                config[name] = st.column_config.NumberColumn(format="localized")
        kwargs["column_config"] = config or None
        data = table_frame(data)
    return (where or st).dataframe(data, **kwargs)


def short(frame: pl.DataFrame, where=None, **kwargs) -> None:
    """`frame` as static cells (st.table) when it has at most SHORT_ROWS rows, else as `dataframe` (with
    `kwargs`). st.table reads Markdown in its cells and headers, so each goes through `md` (a hostname shows as
    exactly its text); a missing value shows as a dash, a whole number as it is (ids are numbers too), a
    fraction to two decimals, a list as its items on one line."""
    headers = [md(name) for name in frame.columns]  # a header can be data too: Compare's run names
    if frame.height > SHORT_ROWS or len(set(headers)) < len(headers):
        dataframe(frame, where, hide_index=True, width="stretch", **kwargs)
        return
    static(frame, where)


def static(frame: pl.DataFrame, where=None) -> None:
    """`frame` as static cells, each as `short` writes it, however many rows it has: for tables whose rows the code
    bounds, not the data. Headers that read alike in Markdown get a number, as a table cannot hold two."""
    headers = _unique([md(name) for name in frame.columns])
    cells = {
        header: [_cell(v) for v in frame[name].to_list()]
        for header, name in zip(headers, frame.columns, strict=True)
    }
    (where or st).table(pl.DataFrame(cells, schema=dict.fromkeys(headers, pl.String)), hide_index=True)


def _unique(headers: list[str]) -> list[str]:
    """`headers`, a repeated one followed by its number (" (2)", " (3)", ...)."""
    used: set[str] = set()
    unique = []
    for header in headers:
        candidate, n = header, 1
        while candidate in used:
            n += 1
            candidate = f"{header} ({n})"
        used.add(candidate)
        unique.append(candidate)
    return unique


def _cell(value) -> str:
    """One static cell's Markdown source."""
    if value is None or (isinstance(value, float) and value != value):
        return DASH
    # a number's text (digits, separators, a sign) is no Markdown: shown as it is
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() else f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list):  # a list column (states, causes) as one line of its items
        return ", ".join(_cell(v) for v in value)
    return md(value)
