"""Definitions: every figure the pages show and what it counts (engine/analysis/definitions, the same as
docs/definitions.md and `goodput definitions`). Every figure's help links here, to its own heading."""

import streamlit as st

from dashboard.text import md
from engine.analysis.definitions import DEFINITIONS, SECTIONS, entry_markdown


def page() -> None:
    """The figures, section by section, narrowed to those that mention every word searched for."""
    st.caption(
        "Every figure Goodput shows, with what it counts. Two figures that count different things have "
        "different names; a figure marked *depends on the view* changes with the time, window, filters or "
        "selection of its page. Also in docs/definitions.md and `goodput definitions`."
    )
    wanted = st.text_input(
        "Find a figure", placeholder="e.g. interruptions, utilisation, lost", key="definitions_find"
    )
    words = wanted.lower().split()

    shown = 0
    for section in SECTIONS:
        entries = [
            d
            for d in DEFINITIONS.values()
            if d.section == section and all(w in f"{d.label} {d.key} {d.means}".lower() for w in words)
        ]
        if not entries:
            continue
        shown += len(entries)
        st.header(section, divider="gray")
        # one Markdown block a section, not three elements a figure: 500 elements cost the browser over a
        # second to draw (issue 28). The text is Goodput's own (engine.analysis.definitions), never data.
        st.markdown("\n\n".join(entry_markdown(d) for d in entries), unsafe_allow_html=True)
    if not shown:
        st.info(f"No figure mentions “{md(wanted)}”.")


st.title("Definitions")
page()
