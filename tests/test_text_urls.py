"""URLs in messages shown on the pages (watch errors) copy as they are: a code span each, with no invisible joiner,
while the text around them is still Markdown-safe (dashboard.text.md_urls; issue 28, 5)."""

from hypothesis import given
from hypothesis import strategies as st

from dashboard.text import JOINER, md, md_urls

URL = "http://prometheus.example:9090/api/v1"


def test_a_url_in_an_error_is_one_code_span_without_joiners():
    shown = md_urls(f"Prometheus ({URL}): unreachable since 2025-03-02 10:42 UTC")
    assert f"`{URL}`" in shown and JOINER not in shown.split("`")[1]
    assert shown.startswith("Prometheus (") and shown.endswith("10:42 UTC")
    assert JOINER in md(URL)  # what md alone did: a copied URL was broken


def test_text_around_urls_stays_escaped():
    shown = md_urls(f"**bold** [x](http://evil.example) {URL} ![i](y)")
    assert "\\*\\*bold\\*\\*" in shown and "\\!\\[i\\]" in shown or "!\\[i\\]" in shown
    assert f"`{URL}`" in shown


@given(
    st.text(max_size=60), st.sampled_from(["http://a:1", "https://b.example/p?q=1", "http://10.0.0.1:9090/x"])
)
def test_every_url_appears_whole_in_a_code_span(before, url):
    shown = md_urls(f"{before} {url} tail")
    assert f"`{url}`" in shown
