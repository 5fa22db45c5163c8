"""What the Planner's sections share: the plan the tabs run, figures under their definitions, and the
progress bar and executor of a run."""

from dataclasses import dataclass

import streamlit as st

from dashboard import planner_model as model
from dashboard import state
from dashboard.format import fmt_duration
from dashboard.text import md
from engine.analysis.definitions import definition
from engine.errors import GoodputError
from engine.scenario import Scenario

BESIDE = {"delta_color": "off", "delta_arrow": "off"}  # a metric's delta here is a comparison, not a change


@dataclass(frozen=True)
class Plan:
    """What the three tabs run: the knobs' valid scenario, its settings key, and whether this user may run."""

    preset: str
    scenario: Scenario
    settings: (
        tuple  # planner_model.settings_of: kept beside each result, to tell whether the knobs moved since
    )
    may_plan: bool


def knob_key(preset: str, name: str, value) -> str:
    """A knob's widget key, per preset so a new preset starts from its own values."""
    return state.seed(f"planner_{name}:{preset}", value)


def metric(where, key: str, value: str, delta: str | None = None, **kwargs) -> None:
    """A figure under its registered label, with its definition's help (engine.analysis.definitions)."""
    d = definition(key)
    where.metric(d.label, value, delta, help=d.help, **kwargs)


def column(key: str, fmt: str):
    """A table column of a registered figure: its label and help."""
    return st.column_config.NumberColumn(definition(key).label, format=fmt, help=definition(key).help)


def short_duration(seconds: float) -> str:
    """Checkpoint writes and optimum intervals are often seconds: keep three digits there ("0.0768 s")."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        return f"{seconds / 60:.3g} min"
    return fmt_duration(seconds)


def executor(plan: Plan, runs: int):
    """Processes only where the runs are worth them: one run of these settings, timed once, tells."""
    timed = st.session_state.get("planner_seconds_per_run")
    if runs > model.IN_PROCESS_RUNS and (timed is None or timed[0] != plan.settings):
        timed = (plan.settings, model.seconds_per_run(plan.scenario))
        st.session_state["planner_seconds_per_run"] = timed
    return model.executor_for(runs, timed[1] if timed else None)


def with_progress(text: str, work):
    """`work(progress)` under a progress bar; None, having shown the engine's message, where it refuses the
    settings (a check only a run makes, e.g. a strategy's own)."""
    bar = st.progress(0.0, text=text)
    try:
        return work(lambda done: bar.progress(done, text=f"{text} {done:.0%}"))
    except GoodputError as err:
        st.error(md(err))
        return None
    finally:
        bar.empty()
