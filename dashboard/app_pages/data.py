"""Data page (being built; see the page's issue)."""

import streamlit as st

from dashboard import state

st.title("Data")
run = state.selected_run()
if run is None:
    state.empty_state()
    st.stop()
st.write(f"Run {run.run_id}")
