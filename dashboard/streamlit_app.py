"""Goodput's dashboard: the router. Every page reads the run chosen in the sidebar (kept in the URL as ?run=)."""

import streamlit as st

from dashboard import state

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
state.sidebar_run_selector()
page.run()
