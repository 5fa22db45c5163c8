"""The base (a preset or a stored run's twin) and the knobs' first values (from the URL), kept in the URL as they
move."""

import streamlit as st

from dashboard import planner_knobs as knobs_ui
from dashboard import planner_model as model
from dashboard import state
from dashboard.planner.common import knob_key
from engine.report.visible_text import visible
from engine.scenario import PRESETS


def settings_section() -> tuple[str, model.Knobs]:
    """The base (a preset, or the twin fitted to a stored run) and the knobs, kept in the URL. The base starts
    as the selected run's own preset (plan from what you are looking at), else the URL's, else llama3-405b."""
    runs = {model.twin_base(info.run_id): info for info in state.list_runs()}
    bases = [*PRESETS, *runs]
    selected = state.selected_run()
    run_preset = selected.scenario.get("preset") if selected else None
    start = run_preset if run_preset in PRESETS else "llama3-405b"
    wanted = st.query_params.get("preset", start)
    if wanted not in bases or not model.known_base(wanted):
        wanted = start
    preset = st.selectbox(
        "Start from",
        bases,
        key=state.seed("planner_preset", wanted),
        format_func=lambda base: _base_label(base, runs),
        help="A preset, or the twin of a run in the store: the scenario Goodput fitted to what that run "
        "observed (the Twin page shows the fit, its intervals and how well it reproduces the run).",
    )
    if not model.known_base(preset):
        st.error(
            "Nothing to learn from this run (see its Twin page); pick another base.", icon=":material/error:"
        )
        st.stop()
    if preset != st.query_params.get("preset"):  # a new base: its own defaults, not the old knobs
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


def _base_label(base: str, runs: dict) -> str:
    """A preset by its name; a twin as "twin of <run label>" (the run's name shown as text, its id beside)."""
    info = runs.get(base)
    if info is None:
        return base
    return f"twin of {visible(info.name)} ({info.kind}, {info.run_id})"
