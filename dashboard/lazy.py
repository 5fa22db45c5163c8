"""Sections drawn only once opened: a hidden tab's or a collapsed expander's content still costs the browser its
charts and tables (0.1-0.3 s a Plotly chart, over a second a 24k-cell grid, in headless Chromium on 2 cores:
bench/bench_pages.py), so what sits in one is drawn only when the user opens it (Streamlit reruns the page on the
click).

    lazy.tabs({"XIDs": draw_xids, "ECC": draw_ecc})   # ?tab=ECC opens the second from a link
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
