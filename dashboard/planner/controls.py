"""The preset and the knobs' first values (from the URL), kept in the URL as they move."""

import streamlit as st

from dashboard import planner_knobs as knobs_ui
from dashboard import planner_model as model
from dashboard import state
from dashboard.planner.common import knob_key
from engine.scenario import PRESETS


def settings_section() -> tuple[str, model.Knobs]:
    """The preset (the selected run's, else the URL's, else llama3-405b) and the knobs, kept in the URL."""
    presets = list(PRESETS)
    # start from the selected run's own preset (plan from what you are looking at), else the Llama 3 cluster
    selected = state.selected_run()
    run_preset = selected.scenario.get("preset") if selected else None
    start = run_preset if run_preset in presets else "llama3-405b"
    wanted = st.query_params.get("preset", start)
    preset = st.selectbox(
        "Start from preset", presets, key=state.seed("planner_preset", wanted if wanted in presets else start)
    )
    if preset != st.query_params.get("preset"):  # a new preset: its own defaults, not the old knobs
        for name in model.URL_NAMES:
            st.query_params.pop(name, None)
        st.query_params["preset"] = preset
    first = model.from_params(st.query_params.to_dict())
    st.subheader("Settings")
    knobs = knobs_ui.settings(first, preset, lambda name, value: knob_key(preset, name, value))
    params = model.to_params(knobs)
    for name in model.URL_NAMES:
        if name in params:
            st.query_params[name] = params[name]
        else:
            st.query_params.pop(name, None)
    return preset, knobs
