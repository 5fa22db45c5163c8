"""Sections drawn only once opened, or once scrolled to. A hidden tab's or a collapsed expander's content still
costs the browser its charts and tables (0.1-0.3 s a Plotly chart, over a second a 24k-cell grid, in headless
Chromium on 2 cores: bench/bench_pages.py), so what sits in one is drawn only when the user opens it (Streamlit
reruns the page on the click); what sits under a tall chart is drawn once the user scrolls near it.

    lazy.tabs({"XIDs": draw_xids, "ECC": draw_ecc})   # ?tab=ECC opens the second from a link
    lazy.below_fold("gpus_below", "The tabs below", draw_tabs, opened=grid_px <= lazy.CHART_PX_IN_VIEW,
                    url_keys=("tab",))           # ?tab= draws them at once
"""

from collections.abc import Callable, Mapping

import streamlit as st


def expander(label: str, key: str, draw: Callable[[], None], opened: bool = False) -> bool:
    """An expander titled `label` whose content `draw` fills only while it is open; returns whether it is. `key`
    names it in the session (a label with counts in it changes; the key must not); it opens collapsed unless
    `opened` (a link asked for its content), then stays as the user leaves it."""
    if key not in st.session_state:
        st.session_state[key] = opened
    box = st.expander(label, key=key, on_change="rerun")
    if box.open:
        with box:
            draw()
    return bool(box.open)


TAB_PARAMETER = "tab"  # a page's one row of lazy tabs, in the URL: ?tab=LABEL


def tabs(sections: Mapping[str, Callable[[], None]], key: str = TAB_PARAMETER) -> str:
    """A row of tabs, one a section (label -> what draws it), of which only the open one is drawn; returns its
    label. The open tab is in the URL as ?`key`=LABEL (a link opens it; tests set it the same way), the first
    by default. One row a page: two would share the parameter."""
    shown = st.tabs(list(sections), key=key, on_change="rerun", bind="query-params")
    opened = next(
        (label for tab, label in zip(shown, sections, strict=True) if tab.open), next(iter(sections))
    )
    with shown[list(sections).index(opened)]:
        sections[opened]()
    return opened


# ----- below the fold --------------------------------------------------------------------------------------
# Sections under a tall chart are drawn once the user scrolls near them (or a link or a click asks for them): an
# st.dataframe costs a visit about 0.4 s whatever its size, a chart 0.1-0.3 s, and nobody sees them before they
# scroll (issue 28: every page done within a second of a bare Streamlit page). Off in tests that run pages in
# process (AppTest has no browser to scroll: tests/conftest.py), on wherever the app is served.
DEFER_BELOW_FOLD = True
REVEAL_AHEAD_PX = 800  # start drawing while the section is still this far below the viewport's bottom edge
SETTLE_MS = 2500  # after this, a section already in view (a tall screen) is drawn without a scroll
# A chart up to this tall leaves what is under it in view on a 1000 px screen (the page's controls above it): that
# is drawn at once; under a taller chart it is below the fold
CHART_PX_IN_VIEW = 400

# A sentinel of no height: it reports "seen" once, when the user scrolls within REVEAL_AHEAD_PX of it, or when it
# stands in the viewport after the page has settled. Not an IntersectionObserver at mount: the charts above are
# not yet laid out then, so every sentinel would be "in view" at first. Scroll events are caught on the window in
# the capture phase, because Streamlit's main pane, not the window, is what scrolls.
_REVEAL_JS = f"""
export default function ({{ parentElement, data, setStateValue }}) {{
  if (data && data.seen) return;
  const sentinel = parentElement.host || parentElement;
  let done = false;
  const top = () => sentinel.getBoundingClientRect().top;
  const reveal = () => {{
    if (done) return;
    done = true;
    stop();
    setStateValue("seen", true);
  }};
  const onScroll = () => {{ if (top() < window.innerHeight + {REVEAL_AHEAD_PX}) reveal(); }};
  const timer = setTimeout(() => {{ if (sentinel.isConnected && top() < window.innerHeight) reveal(); }}, {SETTLE_MS});
  function stop() {{
    window.removeEventListener("scroll", onScroll, {{ capture: true }});
    clearTimeout(timer);
  }}
  window.addEventListener("scroll", onScroll, {{ capture: true, passive: true }});
  return stop;
}}
"""
_reveal = st.components.v2.component("goodput.reveal_on_scroll", js=_REVEAL_JS)


def below_fold(
    key: str, what: str, draw: Callable[[], None], opened: bool = False, url_keys: tuple[str, ...] = ()
) -> bool:
    """Draw `draw` once the user scrolls near this place, at once if `opened` (a click asked for what it shows) or
    the URL carries one of `url_keys` (a link to a tab, a GPU, a job); returns whether it was drawn. Until then
    one caption says so ("`what`: loaded as you scroll down."). `key` names the place in the session: once seen
    it stays drawn on every rerun."""
    opened = opened or any(name in st.query_params for name in url_keys)
    # data tells the sentinel not to listen where the section is drawn anyway
    shown = _reveal(key=key, data={"seen": opened}, default={"seen": False}, on_seen_change=_rerun)
    seen = bool(shown.seen)
    if seen or opened or not DEFER_BELOW_FOLD:
        draw()
        return True
    st.caption(f"{what}: loaded as you scroll down.")
    return False


def _rerun() -> None:
    """A reported scroll reruns the page (a component's state change does, given a callback)."""
