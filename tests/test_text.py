"""dashboard.text: data escaped for Streamlit's Markdown and for Plotly's HTML subset.

The rules below are those of the renderers: CommonMark backslash escapes (any ASCII punctuation), GFM
(autolinks `www.`, `http://`, emails; tables; strikethrough), remark-math (`$..$`), remark-directive
(`:name[..]`, Streamlit's colours and `:help[..]`), and Streamlit's own text-node plugins (emoji `:name:`,
`:material_name:` after its raw-source rewrite of `:material/`, `:streamlit:`, arrows from `->` and friends).
The browser test renders the escaped strings with Streamlit itself in Chromium and reads them back.
"""

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.text import JOINER, code, md, plot, plot_all, plot_expr
from engine.report.visible_text import visible

# Text as it comes in data: any character, the Markdown-significant ones made frequent.
SYNTAX = "\\`*_~[]()<>!|$@:#+-=.&;/{}\"' \t\n1aAw"
texts = st.text(alphabet=st.one_of(st.sampled_from(SYNTAX), st.characters(codec="utf-8")), max_size=40)
HOSTILE = [
    "![x](http://evil.example/i.png)",
    "<img src=x onerror=alert(1)>",
    "**bold** :red[x] $x$",
    "[a](javascript:alert(1))",
    "<https://evil.example>",
    "www.evil.example",
    "x@evil.example",
    ":material/home: :smile: :+1: :streamlit:",
    "a -> b <- c <-> d -- e >= f <= g ~= h",
    "# heading",
    "- item",
    "1. item",
    "> quote",
    "| a | b |",
    "~~gone~~",
    "_em_ __strong__",
    "&lt;b&gt; &#60;",
    "`code`",
    "\\*",
    "::leaf[x]",
    ":help[tip]",
    "line\nbreak",
    "$$x$$",
    ":blue-background[x]",
]

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def unescaped(source: str) -> str:
    """The text Markdown makes of `source` when every syntax character in it is backslash-escaped."""
    return _ESCAPE.sub(r"\1", source)


def syntax_left(source: str) -> str:
    """`source` with every backslash escape blanked out: whatever Markdown could still read as syntax."""
    return _ESCAPE.sub("\x00\x00", source)


def normal(text: str) -> str:
    return " ".join(re.sub(r"[\x00-\x1f\x7f]", " ", text.replace(JOINER, "")).split())


@given(texts)
def test_md_keeps_the_text(text):
    # the text as shown: invisible characters as their marks (engine.report.visible_text), nothing else changed
    assert normal(unescaped(md(text))) == normal(visible(text))


@given(texts)
def test_md_leaves_no_syntax(text):
    source = md(text)
    left = syntax_left(source)
    assert "\n" not in source and "\r" not in source
    # links, images, HTML, autolinks, code, emphasis, strikethrough, tables, LaTeX, directives
    assert not set(left) & set("[]<>`*~|$@\\")
    assert not re.search(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])", left)  # `_` only inside a word
    assert not re.search(r"&[#A-Za-z]", left)  # no character reference
    assert not re.search(r"www\.", left, re.IGNORECASE)
    assert not re.search(r":[A-Za-z/+_-]", left)  # no directive, URL scheme or icon
    assert not re.match(r"[ \t]*([#+=-]|[0-9]+[.)])", left)  # no heading, list or quote
    # Streamlit's own rewrites: of the raw source (icons), then of text nodes after escapes are resolved
    assert ":material/" not in source
    text_node = unescaped(source)
    assert not re.search(r":[0-9A-Za-z_+-]+:", text_node)  # emoji, icons, the Streamlit logo
    assert not re.search(r"(^|\s)(<->|->|<-|--|>=|<=|~=)(\s|$)", text_node)
    # GFM's literal autolinks, found in text nodes (mdast-util-gfm-autolink-literal's patterns)
    assert not re.search(r"(https?://|www(?=\.))", text_node, re.IGNORECASE)
    assert not re.search(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", text_node)


@pytest.mark.parametrize("text", HOSTILE)
def test_md_of_hostile_examples(text):
    test_md_keeps_the_text.hypothesis.inner_test(text)
    test_md_leaves_no_syntax.hypothesis.inner_test(text)


def test_md_leaves_ordinary_names_alone():
    for name in (
        "host-001",
        "Faulty GPU (HBM3)",
        "burn_in",
        "12:30",
        "node17.example.com",
        "planner · demo",
        "job 1/3, 50% done",
    ):
        assert md(name) == name


@given(texts)
def test_code_is_one_literal_code_span(text):
    span = code(text)
    if not text:
        assert span == ""
        return
    fence = re.match(r"`+", span).group(0)
    inner = span[len(fence) : -len(fence)]
    assert span.endswith(fence) and all(len(run) < len(fence) for run in re.findall(r"`+", inner))
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
        inner = inner[1:-1]  # CommonMark strips one space each side
    assert inner.replace(JOINER, "") == re.sub(r"[\x00-\x1f\x7f]+", " ", visible(text)).replace(JOINER, "")
    assert ":material/" not in span


@given(texts)
def test_plot_escapes_the_html_subset(text):
    escaped = plot(text)
    assert "<" not in escaped and ">" not in escaped
    assert not re.search(r"&(?!amp;|lt;|gt;)", escaped)
    assert html.unescape(escaped) == visible(text)


@settings(deadline=None)  # the first call builds Polars' string kernels
@given(st.lists(st.one_of(st.none(), texts), max_size=20))
def test_plot_expr_is_plot_for_a_column(values):
    frame = pl.DataFrame({"x": values}, schema={"x": pl.String})
    assert frame.select(plot_expr("x"))["x"].to_list() == plot_all(values)


# ----- rendered by Streamlit in Chromium ------------------------------------------------------------------

APP = """
import json, os
import streamlit as st
from dashboard.text import md, code
for i, text in enumerate(json.loads(open(os.environ["TEXTS"], encoding="utf-8").read())):
    with st.container(key=f"md{i}"):
        st.markdown(md(text))
    with st.container(key=f"bold{i}"):
        st.caption(f"**{md(text)}** and {code(text)}")
    with st.container(key=f"metric{i}"):
        st.metric(md(text), md(text))
st.text("done")
"""


@pytest.fixture(scope="module")
def renderer(tmp_path_factory):
    """A Streamlit server on 127.0.0.1 rendering the strings of a JSON file, and a Chromium page on it."""
    from test_browser import CHROMIUM, CHROMIUM_ARGS, free_port, stop_server, wait_healthy

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    folder = tmp_path_factory.mktemp("render")
    (folder / "app.py").write_text(APP)
    texts_file = folder / "texts.json"
    texts_file.write_text("[]")
    port, log = free_port(), folder / "server.log"
    root = Path(__file__).resolve().parent.parent
    env = {**__import__("os").environ, "TEXTS": str(texts_file), "PYTHONPATH": str(root)}
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(folder / "app.py"),
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--server.headless",
                "true",
                "--browser.gatherUsageStats",
                "false",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=root,
            env=env,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server, log)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                requests: list[str] = []
                page.on("request", lambda r: requests.append(r.url))
                yield url, texts_file, page, requests
            finally:
                browser.close()
    finally:
        stop_server(server)


def render(renderer, texts: list[str]) -> list[dict]:
    """What the browser shows for each text: the markdown's, the caption's and the metric's inner text, and
    the elements Markdown made inside them."""
    url, texts_file, page, _ = renderer
    texts_file.write_text(json.dumps(texts))
    page.goto(url)
    page.get_by_text("done", exact=True).wait_for(timeout=60_000)
    # metrics and KaTeX come in chunks loaded on demand: wait until the last metric is drawn
    page.get_by_test_id("stMetricValue").nth(len(texts) - 1).wait_for(timeout=60_000)
    return page.evaluate(
        """(n) => [...Array(n).keys()].map(i => {
        const box = (k) => document.querySelector(`.st-key-${k}${i}`);
        const made = (k) => [...box(k).querySelectorAll(
            '[data-testid=stMarkdownContainer] *')].map(e => e.tagName + (e.getAttribute('style') ? '[style]' : ''))
            .filter(t => !['P', 'STRONG', 'CODE', 'DIV', 'SPAN'].includes(t));
        const styled = (k) => box(k).querySelectorAll(
            '.stMarkdownColoredText, .stMarkdownColoredBackground, .stMarkdownBadge, .katex, '
            + '[role=img], img, a').length;
        return {md: box('md').innerText, bold: box('bold').innerText,
                metric: [...box('metric').querySelectorAll('[data-testid=stMetricLabel], [data-testid=stMetricValue]')]
                    .map(e => e.innerText),
                made: [...made('md'), ...made('bold'), ...made('metric')],
                styled: styled('md') + styled('bold') + styled('metric')};
    })""",
        len(texts),
    )


def check_rendered(renderer, texts: list[str]) -> None:
    for text, seen in zip(texts, render(renderer, texts), strict=True):
        assert seen["styled"] == 0 and seen["made"] == [], (text, seen)
        shown = visible(text)  # invisible characters as their marks (engine.report.visible_text)
        assert normal(seen["md"]) == normal(shown), (text, seen)
        span = normal(re.sub(r"[\x00-\x1f\x7f]+", " ", shown))
        assert normal(seen["bold"]) == normal(f"{normal(shown)} and {span}"), (text, seen)
        assert [normal(m) for m in seen["metric"]] == [normal(shown)] * 2, (text, seen)
    assert not [u for u in renderer[3] if not u.startswith(renderer[0])]  # nothing fetched from elsewhere


@pytest.mark.browser
def test_streamlit_renders_hostile_examples_as_their_text(renderer):
    check_rendered(renderer, HOSTILE)


@pytest.mark.browser
@settings(max_examples=8, deadline=None)
@given(st.lists(texts.filter(normal), min_size=1, max_size=12))
def test_streamlit_renders_any_text_as_itself(renderer, batch):
    check_rendered(renderer, batch)
