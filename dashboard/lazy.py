"""Sections drawn only once opened: a collapsed expander's content still costs the browser its charts and tables
(about 0.1-0.3 s a Plotly chart in headless Chromium on 2 cores, bench/bench_pages.py), so what sits in one is
drawn only when the user opens it (Streamlit reruns the page on the click)."""

from collections.abc import Callable

import streamlit as st


def expander(label: str, key: str, draw: Callable[[], None]) -> None:
    """A collapsed expander titled `label` whose content `draw` fills only while it is open. `key` names it in
    the session (a label with counts in it changes; the key must not)."""
    box = st.expander(label, key=key, on_change="rerun")
    if box.open:
        with box:
            draw()
