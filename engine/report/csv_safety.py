"""CSV cells that a spreadsheet cannot take for formulas (OWASP's "CSV Injection" advice).

Excel, LibreOffice and Google Sheets evaluate a cell whose text starts with `=`, `+`, `-`, `@`, a tab or a
carriage return: a hostname `=HYPERLINK("http://evil","x")` in an export becomes a live link, `+cmd|...` a
command. Every text cell that starts with one of those gets a leading single quote, which spreadsheets read as
"this is text" and do not show. Any cell holding a separator, a double quote or a line break is double-quoted
(RFC 4180), so a payload cannot split its cell; the header stays unquoted, as every trace reader expects
(`goodput replay` tells formats apart by it). Numbers stay numbers (a negative number is not text).

A cell that already starts with a quote gets one more, so the rule is reversible: `restore` drops exactly one
leading quote and gives back the original text, whatever it was (and a spreadsheet shows the original too).
Vectorised Polars expressions only: no Python callback runs per cell.
"""

import io

import polars as pl

FORMULA_PREFIXES = "=+-@\t\r"
QUOTE = "'"
_NEEDS_QUOTE = r"^[=+\-@\t\r']"  # FORMULA_PREFIXES and QUOTE, as a regex
TEXT_TYPES = (pl.String, pl.Categorical, pl.Enum)


def neutralise(text: str) -> str:
    """One cell's text as written (the rule `neutralise_expr` applies to columns)."""
    return QUOTE + text if text[:1] and text[0] in FORMULA_PREFIXES + QUOTE else text


def restore(text: str) -> str:
    """The original text of a cell written by `neutralise`."""
    return text[1:] if text.startswith(QUOTE) else text


def neutralise_expr(column: str) -> pl.Expr:
    text = pl.col(column).cast(pl.String)
    return pl.when(text.str.contains(_NEEDS_QUOTE)).then(pl.lit(QUOTE) + text).otherwise(text).alias(column)


def restore_expr(column: str) -> pl.Expr:
    text = pl.col(column)
    return pl.when(text.str.starts_with(QUOTE)).then(text.str.slice(1)).otherwise(text).alias(column)


def text_columns(frame: pl.DataFrame) -> list[str]:
    return [name for name, dtype in frame.schema.items() if isinstance(dtype, TEXT_TYPES)]


def neutralise_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every text column neutralised (other columns as they were)."""
    return frame.with_columns(neutralise_expr(c) for c in text_columns(frame))


def restore_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Undo `neutralise_frame` on a frame read back from CSV (its String columns)."""
    return frame.with_columns(restore_expr(c) for c, t in frame.schema.items() if t == pl.String)


def safe_csv(frame: pl.DataFrame) -> bytes:
    """UTF-8 CSV with a header row: text cells neutralised, numbers as numbers."""
    buffer = io.BytesIO()
    neutralise_frame(frame).write_csv(buffer, quote_style="necessary")
    return buffer.getvalue()
