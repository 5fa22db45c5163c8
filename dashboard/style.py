"""The few layout rules Streamlit's theme lacks, for every page (the router applies them once a run).

A metric's label and value are cut with an ellipsis where wider than their column ("Racks over their power bu…",
"21,065.1 T…", "162.4k GP…" at 1280 px): a figure whose name or unit is cut says nothing, so both wrap onto a
second line instead. Checked on every page at 1280 and 1920 px by tests/test_browser_layout.py (the demo run), and
at 1280 px on the llama3-405b run by tests/test_browser_pages.py.
"""

import streamlit as st

WRAPPED_METRICS = """<style>
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *,
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * {
  white-space: normal !important;
  overflow: visible !important;
  text-overflow: clip !important;
  overflow-wrap: anywhere;
}
</style>"""


def apply() -> None:
    """Adds the rules to the page (a style element only: it takes no room on the page)."""
    st.html(WRAPPED_METRICS)
