"""Invisible characters in data shown visibly: a job name holding U+202E RIGHT-TO-LEFT OVERRIDE displayed
reversed on the Gantt (issue 27), and a zero-width space or a Unicode tag character can make two hostnames look
the same or smuggle text no reader sees. Wherever data is shown (pages, charts, the HTML export), each such
character becomes a visible mark naming it:

    visible("job\u202eabc")   -> "job⟨U+202E⟩abc"

Shown this way: the format characters (Unicode category Cf: bidirectional embeddings, overrides and isolates,
LRM, RLM and ALM, zero-width spaces and joiners, the byte-order mark, soft hyphens, tag characters), the line
and paragraph separators (Zl, Zp) and the control characters (Cc) but tab, line feed and carriage return, which
the text's own renderer handles (Markdown turns them into spaces, tables and charts show them as breaks or
spaces). Ordinary text, every script and emoji included, is unchanged.
"""

import re

import polars as pl

# The code points shown as marks: Unicode's Cc (but tab, line feed, carriage return), Cf, Zl and Zp, as ranges
# (Unicode 14, Python 3.11's; tests/test_visible_text.py checks them against the running Python's unicodedata).
# Written out, not derived at import: walking all 1.1 million code points cost 0.5 s of every start.
RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008), (0x000B, 0x000C), (0x000E, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD),
    (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064),
    (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
INVISIBLE: tuple[str, ...] = tuple(chr(c) for first, last in RANGES for c in range(first, last + 1))
MARKS: tuple[str, ...] = tuple(f"⟨U+{ord(c):04X}⟩" for c in INVISIBLE)
_PATTERN = re.compile("[" + "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in RANGES) + "]")


def mark(char: str) -> str:
    """The visible mark of one invisible character."""
    return f"⟨U+{ord(char):04X}⟩"


def visible(value: object) -> str:
    """`value` as text with each invisible character replaced by its mark."""
    text = str(value)
    return _PATTERN.sub(lambda m: mark(m.group(0)), text) if _PATTERN.search(text) else text


def visible_expr(expr: pl.Expr | str) -> pl.Expr:
    """`visible` for a Polars column, vectorised (one pass of Aho-Corasick, no Python in the plan)."""
    column = pl.col(expr) if isinstance(expr, str) else expr
    return column.cast(pl.String).str.replace_many(list(INVISIBLE), list(MARKS))


def visible_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with every text column (and list of text) made visible; other columns untouched."""
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    lists = [name for name, dtype in frame.schema.items() if dtype == pl.List(pl.String)]
    if not text and not lists:
        return frame
    return frame.with_columns(
        *(visible_expr(name).alias(name) for name in text),
        *(pl.col(name).list.eval(visible_expr(pl.element())).alias(name) for name in lists),
    )
