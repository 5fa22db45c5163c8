"""The Incidents page's row of tabs (dashboard/lazy.py: only the open one is drawn, in the URL as ?tab=LABEL), and
what opens the One incident tab without a click on it: a link with ?incident= and no ?tab=, or a click on a
timeline marker."""

import streamlit as st

from dashboard import lazy
from dashboard.charts import incidents as charts

BY_COST, TIMELINE, BY_CAUSE, ONE_INCIDENT = "By cost", "Timeline", "By cause and day", "One incident"
NEWEST = (
    "Newest first"  # the table's tab in a run with no job (a fault history): nothing has a cost to sort by
)
FAIL_SLOW, EXPORT, REPLAY = "Fail-slow episodes", "Export", "Replay with other settings"


def timeline_key(run_id: str) -> str:
    """The timeline chart's key: its selection (the marker clicked) is in the session under it."""
    return f"incidents_timeline:{run_id}"


def incident_key(run_id: str) -> str:
    """The incident chooser's key: the incident opened."""
    return f"incidents_incident:{run_id}"


def open_linked() -> None:
    """A link to an incident (?incident= without ?tab=) opens the One incident tab on the page's first run.
    Call before lazy.tabs."""
    first = lazy.TAB_PARAMETER not in st.session_state and lazy.TAB_PARAMETER not in st.query_params
    if first and st.query_params.get("incident"):
        st.session_state[lazy.TAB_PARAMETER] = ONE_INCIDENT


def open_clicked(run_id: str) -> None:
    """The timeline's on_select callback (it runs before the rerun, so before lazy.tabs): the marker clicked
    becomes the incident opened, in the One incident tab."""
    chart = st.session_state.get(timeline_key(run_id))
    clicked = charts.clicked_incident(chart.get("selection") if chart else None)
    if clicked is not None:
        st.session_state[incident_key(run_id)] = clicked
        st.session_state[lazy.TAB_PARAMETER] = ONE_INCIDENT
