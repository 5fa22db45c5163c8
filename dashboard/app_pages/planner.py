"""Planner: start from a preset or from the twin of a stored run (the scenario fitted to what it observed: its
Twin page), move the knobs, read the closed-form ETTR and Young-Daly interval at once; run
the simulator (one seed, many seeds, or a grid of settings) on the same knobs; keep a run, download its TOML.
Choose how the job recovers from a failure, see which strategy wins at which job size, and whether warm
standby hosts pay for themselves.

URL: ?tab= (a tab's label: only the open tab is drawn), ?preset= and every knob
(dashboard.planner_model.URL_NAMES; seconds for durations, ?ckpt=time|storage,
?m_gpu= ... for the category multipliers, ?recovery= and the strategy's own knobs) reproduce the view.
"""

import streamlit as st

from dashboard import auth, lazy
from dashboard import planner_model as model
from dashboard.planner import closed_form, controls, fail_slow, monte_carlo, simulation, strategies, sweeps
from dashboard.planner.common import Plan

# The tabs under the closed form, in order: label -> what draws it
TABS = {
    "Simulate": lambda plan, knobs: simulation.simulate_tab(plan, knobs),
    "Monte-Carlo": lambda plan, knobs: monte_carlo.monte_carlo_tab(plan),
    "Sweep": lambda plan, knobs: sweeps.sweeps_tab(plan),
    "Strategies at scale": lambda plan, knobs: strategies.scale_tab(plan),
    "Standby break-even": lambda plan, knobs: strategies.standby_tab(plan),
    "Fail-slow hosts": lambda plan, knobs: fail_slow.fail_slow_tab(plan),
}


def page() -> None:
    """The page, top to bottom: the preset and the knobs, the closed form they give at once, then a run, many
    seeds or a sweep of the same settings."""
    st.caption(
        "The closed form is Kokolis et al.'s first-order estimate (HPCA 2025); the optimum interval is "
        "Young-Daly's sqrt(2 w MTTF). Neither needs a run: they follow the knobs at once."
    )
    preset, knobs = controls.settings_section()
    scenario = closed_form.closed_form_section(preset, knobs)
    if scenario is None:
        return
    # the file keeps the base's telemetry (the page's own runs skip it for speed): `goodput simulate --scenario`
    # of it reproduces the run the knobs describe, every table included
    telemetry = model.base_scenario(preset).simulation.telemetry
    st.download_button(
        "Download scenario",
        model.scenario(knobs, telemetry=telemetry).to_toml(),
        file_name=f"planner-{preset.replace(':', '-')}.toml",  # a twin base is "twin:RUN_ID"
        mime="application/toml",
        on_click="ignore",
        help="`goodput simulate --scenario FILE` runs it from the command line",
    )
    may_plan = auth.can(auth.Role.PLANNER)  # simulations run on this server: planners only, where login is on
    if not may_plan:
        auth.missing(auth.Role.PLANNER, "Running simulations, Monte-Carlo and sweeps")
    # the settings are kept beside each result: did the knobs move since it ran?
    plan = Plan(preset, scenario, model.settings_of(knobs), may_plan)
    # only the open tab is drawn (dashboard/lazy.py): six tabs of charts at once cost the browser over a second
    lazy.tabs({label: (lambda draw=draw: draw(plan, knobs)) for label, draw in TABS.items()})


st.title("Planner")
page()
