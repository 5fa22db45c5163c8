"""dashboard/lazy.below_fold: what sits below the fold waits for a scroll (a caption says so), is drawn at once
where a link or a click opens it, and stays drawn once seen. The scroll itself is the browser's:
tests/test_browser_pages.py scrolls the llama3-405b run's pages."""

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import lazy


def below(opened: bool) -> None:
    import streamlit as st

    from dashboard import lazy

    lazy.below_fold(
        "below", "The table below", lambda: st.markdown("**the table**"), opened=opened, url_keys=("job",)
    )


def texts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption]


@pytest.fixture
def deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    """As served: below the fold waits (tests/conftest.py turns it off for the pages' in-process tests)."""
    monkeypatch.setattr(lazy, "DEFER_BELOW_FOLD", True)


def test_waits_for_a_scroll_and_says_so(deferred):
    at = AppTest.from_function(below, args=(False,)).run()
    assert not at.exception
    assert texts(at) == ["The table below: loaded as you scroll down."]


def test_a_link_or_a_click_draws_it_at_once(deferred):
    at = AppTest.from_function(below, args=(True,)).run()
    assert texts(at) == ["**the table**"]


def test_a_link_naming_what_it_shows_draws_it_at_once(deferred):
    at = AppTest.from_function(below, args=(False,))
    at.query_params["job"] = "flagship"
    at.run()
    assert texts(at) == ["**the table**"]
    at = AppTest.from_function(below, args=(False,))
    at.query_params["t"] = "3600"  # a parameter for what is above the fold
    at.run()
    assert texts(at) == ["The table below: loaded as you scroll down."]


def test_once_seen_it_stays_drawn(deferred):
    at = AppTest.from_function(below, args=(False,))
    at.session_state["below"] = {"seen": True}  # what the sentinel reports once scrolled to
    at.run()
    assert texts(at) == ["**the table**"]
    at.run()  # any later rerun (a filter moved, a tab opened)
    assert texts(at) == ["**the table**"]


def test_drawn_at_once_where_nothing_can_scroll():
    # tests/conftest.py: pages run in process draw everything
    at = AppTest.from_function(below, args=(False,)).run()
    assert texts(at) == ["**the table**"]
