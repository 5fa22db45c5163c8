"""Data shown as text: hostnames, job names, users, run and file names, causes, error messages that quote input.

Streamlit renders Markdown (GitHub's, plus its own `:red[..]` colours, `:material/..:` icons, `:smile:` emoji,
`$..$` LaTeX and `->` arrows) in st.markdown, captions, alerts, metric labels, values and deltas, help
tooltips, expander and tab labels, radio options and page links; Plotly renders an HTML subset (`<a href>`,
`<b>`, `<br>`) in trace text, hover text, names, tick labels and titles. A DCGM `Hostname` label of
`![x](http://evil.example/i.png)` would make every viewer's browser fetch an outside image, so data reaches
those places only through `md` or `plot` (or `plot_expr` for a Polars column), or through elements that show
plain text (st.text, st.code, dataframe cells, selectbox options).

Each of these also shows invisible characters visibly (engine.report.visible_text: a U+202E RIGHT-TO-LEFT
OVERRIDE in a job name becomes `⟨U+202E⟩` instead of reversing the Gantt's label); tables go through
`table_frame`, which does the same for every text column.
"""

import re

import polars as pl

from engine.report.visible_text import visible, visible_expr, visible_frame

# U+2060 WORD JOINER: invisible, and neither a word character nor a space in JavaScript's regexes.
JOINER = "\u2060"

# What Markdown could read as syntax anywhere in a line: escapes, code, emphasis, strikethrough, links and
# images, HTML and autolinks, tables, LaTeX. A backslash before an ASCII punctuation character makes it literal
# text (CommonMark); everything else (hyphens, dots, parentheses, intraword `_`) is left as it is, so that
# "host-001" or "Faulty GPU (HBM3)" read the same in the page source as in the data.
_ALWAYS = re.compile(r"([\\`*~\[\]<>|$@])")
# `_` opens or closes emphasis only at a word edge: "burn_in" stays as it is
_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_ENTITY = re.compile(r"&(?=[#A-Za-z])")  # `&amp;`, `&#60;`: character references
# GFM links `www.x`, `http://x` and `a@b.c` in text nodes, after escapes are resolved: a joiner inside `www.`
# and after `@` (and the one after `http:`, below) breaks their patterns
_WWW = re.compile(r"(?<=[wW]{3})\.")
# A colon before a letter, `/`, `+`, `-`, `_` (or an escaped one) starts a directive (`:red[x]`, `:help[x]`,
# `::name`), a URL (`http://`) or an icon (`:material/x:`, which Streamlit rewrites in the raw source); one that opens a
# `:code:` pair is an emoji. Escaped, and followed by an invisible joiner (Streamlit's emoji, icon and logo
# plugins match text after escapes are resolved).
_COLON = re.compile(r":(?=[A-Za-z/+_\\-]|[0-9A-Za-z_+-]+:)")
# Block syntax at the start of the text: a heading, list item, quote or thematic break (`#`, `-`, `+`, `=`,
# `1.`, `1)`).
_LEADING = re.compile(r"^([#+=-])|^([0-9]+)([.)])")
# Streamlit turns `->`, `<-`, `<->`, `--`, `>=`, `<=`, `~=` between spaces into arrows and signs after
# escapes are resolved: a joiner inside the pair keeps the characters.
_SYMBOLS = re.compile(r"(?:(?<=\s)|^)(<->|->|<-|--|>=|<=|~=)(?=\s|$)")
# Line breaks and other control characters would start new blocks (headings, code, lists) or vanish.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def md(value: object) -> str:
    """`value` as Markdown source that Streamlit renders as exactly its text (invisible joiners aside), for
    data that sits inside prose; ordinary names ("host-001", "Faulty GPU (HBM3)") come out unchanged."""
    text = _CONTROL.sub(" ", visible(value)).strip()
    text = _SYMBOLS.sub(lambda m: m.group(1)[0] + JOINER + m.group(1)[1:], text)
    text = _ALWAYS.sub(r"\\\1", text)
    text = _UNDERSCORE.sub(r"\\_", text)
    text = _ENTITY.sub(r"\\&", text)
    text = _WWW.sub(JOINER + r"\\.", text).replace("\\@", "\\@" + JOINER)
    text = _COLON.sub("\\\\:" + JOINER, text)
    return _LEADING.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), text)


_URL = re.compile(r"https?://[^\s()<>\[\]`]+")


def md_urls(value: object) -> str:
    """`md`, with each http(s) URL in the text as a code span: shown whole and copied as it is, without the
    invisible joiners `md` puts into what Markdown would read as a link (a copied URL must work)."""
    text = _CONTROL.sub(" ", visible(value))
    parts, last = [], 0
    for found in _URL.finditer(text):
        parts += [_md_keeping_spaces(text[last : found.start()]), code(found.group())]
        last = found.end()
    parts.append(_md_keeping_spaces(text[last:]))
    return "".join(parts)


def _md_keeping_spaces(text: str) -> str:
    """`md` of a piece of a line, its edge spaces kept (md strips them: a whole line has none to keep)."""
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :] if text.strip() else ""
    return (lead and " ") + md(text) + (trail and " ")


def code(value: object) -> str:
    """`value` as a Markdown code span (ids, paths): nothing inside one is Markdown. The fence is a backtick run
    longer than any in the value, and a value that starts or ends with a backtick is padded with a space."""
    text = _CONTROL.sub(" ", visible(value))
    # Streamlit turns `:material/` into `:material_` in the whole source, code spans included, before parsing
    text = text.replace(":material/", ":" + JOINER + "material/")
    if not text:
        return ""  # "``" would be a lone backtick run, not an empty span
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    # CommonMark strips one space from each side of a span that has other characters: a pad keeps the value's
    # own edge spaces and keeps an edge backtick from joining the fence
    pad = " " if text.strip(" ") and (text.startswith(("`", " ")) or text.endswith(("`", " "))) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def plot(value: object) -> str:
    """`value` as Plotly text: its HTML subset's `<`, `>` and `&` as entities, which Plotly shows literally."""
    return visible(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plot_expr(expr: pl.Expr | str) -> pl.Expr:
    """`plot` for a Polars column (vectorised: no Python callback in the plan)."""
    expr = visible_expr(expr)  # cast to text: an all-null column may be Null
    return (
        expr.str.replace_all("&", "&amp;", literal=True)
        .str.replace_all("<", "&lt;", literal=True)
        .str.replace_all(">", "&gt;", literal=True)
    )


def plot_all(values) -> list[str | None]:
    """`plot` for each of `values` (None stays None: a missing label, not the text "None")."""
    return [None if v is None else plot(v) for v in values]


def table_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """A frame as a table shows it: every text column with its invisible characters made visible."""
    return visible_frame(frame)
