"""Goodput's dashboard: the router. Every page reads the run chosen in the sidebar (in the URL as ?run=)."""

import duckdb
import pandas  # noqa: F401  loaded whole before any page's rerun: Plotly probes a half-imported pandas otherwise
import streamlit as st

from dashboard import state
from engine.errors import GoodputError

st.set_page_config(page_title="Goodput", page_icon=":material/monitoring:", layout="wide")

PAGES = {
    "Operate": [
        st.Page("app_pages/overview.py", title="Overview", icon=":material/monitoring:", default=True),
        st.Page("app_pages/racks.py", title="Racks", icon=":material/grid_view:"),
        st.Page("app_pages/gpus.py", title="GPUs", icon=":material/memory:"),
        st.Page("app_pages/jobs.py", title="Jobs", icon=":material/view_timeline:"),
        st.Page("app_pages/network.py", title="Network", icon=":material/hub:"),
        st.Page("app_pages/incidents.py", title="Incidents", icon=":material/report:"),
    ],
    "Plan": [
        st.Page("app_pages/planner.py", title="Planner", icon=":material/tune:"),
        st.Page("app_pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    ],
    "Manage": [
        st.Page("app_pages/data.py", title="Data", icon=":material/database:"),
    ],
}

page = st.navigation(PAGES)
st.sidebar.markdown("**Goodput** · the share of a training job's time that becomes progress")
state.sidebar_run_selector()
try:
    page.run()
except (GoodputError, duckdb.Error, OSError) as err:
    # A run file that vanished or cannot be read mid-session (deleted from a terminal, a disk error, a run
    # from an older Goodput): say so plainly instead of a traceback, and keep the other pages usable.
    st.error(f"This page could not read the selected run: {err}", icon=":material/error:")
    st.caption("Pick another run in the sidebar, or open the Data page to list and delete runs.")
