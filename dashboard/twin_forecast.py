"""The Twin page's forecast (dashboard/app_pages/twin.py): the next days of the cluster as its fitted twin sees
them, run on request and kept for later visits, and the words every twin band is read with."""

import streamlit as st

from dashboard.format import fmt_gpu_hours, fmt_pct
from dashboard.queries import twin as queries
from dashboard.text import code
from engine.analysis.definitions import definition
from engine.store import RunInfo
from engine.twin.backtest import SEEDS
from engine.twin.calibrate import Calibration
from engine.twin.forecast import DAYS
from engine.twin.prediction import band_level

FORECAST_LABELS = {
    "ettr": "ETTR of the flagship job",
    "interruptions": "Interruptions",
    "mttf_hours": "Job MTTF (hours)",
    "lost_gpu_hours": "GPU-hours lost",
    "time_to_train_days": "Time to train (days)",
}


def forecast_section(info: RunInfo, fitted: Calibration, since, until) -> None:
    st.subheader("Forecast: the next days of this cluster")
    days_box, work_box, seeds_box, button_box = st.columns([1, 1, 1, 1])
    days = days_box.number_input(
        "Days ahead", min_value=1, max_value=365, value=int(DAYS), step=1, key="twin_days"
    )
    work = work_box.number_input(
        "Work left (days)",
        min_value=0.0,
        max_value=365.0,
        value=0.0,
        step=1.0,
        key="twin_work",
        help=definition("time_to_train").help + " 0: no work, the forecast runs the whole horizon.",
    )
    seeds = seeds_box.number_input(
        "Runs", min_value=2, max_value=100, value=SEEDS, step=1, key="twin_forecast_seeds"
    )
    settings = (int(seeds), float(days), float(work) or None)
    asked = button_box.button("Forecast", icon=":material/trending_up:", key="twin_run_forecast")
    if settings[2] is not None and settings[2] > settings[1]:
        st.warning(
            "The work left must fit within the days ahead: raise the days ahead.", icon=":material/warning:"
        )
        return
    if not (asked or queries.is_cached(info.run_id, since, until, *settings)):
        st.caption(
            "Runs the fitted scenario forward: ETTR, interruptions, MTTF and lost GPU-hours of its flagship job, "
            "each with the twin's band (each run draws the fitted keys first, so the band holds what the fit does "
            f"not know as well as luck; the backtest's error comes on top). {band_words(int(seeds))} With the "
            "work left, it says when training finishes."
        )
        return
    with st.spinner(f"Simulating {int(seeds)} runs of up to {int(days)} days…"):
        ahead = queries.forecast_of(info.run_id, since, until, *settings)
    queries.remember(info.run_id, since, until, *settings)
    forecast_figures(ahead)
    st.caption(
        "What-ifs start from here: download the fitted scenario above and run "
        f"{code('goodput sweep --scenario twin.toml --vary spares.hosts=0,48,96 --seeds 10')}."
    )


def band_words(seeds: int) -> str:
    level = band_level(seeds)
    if level >= 0.9:
        return f"With {seeds} runs the band holds a new run {level:.1%} of the time."
    return (
        f"With {seeds} runs the band holds a new run only {level:.0%} of the time: 19 runs or more give 90 %."
    )


def forecast_figures(ahead) -> None:
    shown_figures = {
        name: label
        for name, label in FORECAST_LABELS.items()
        if name != "time_to_train_days" or ahead.work_days is not None
    }
    columns = st.columns(len(shown_figures))
    for column, (name, label) in zip(columns, shown_figures.items(), strict=True):
        spread = ahead.figures[name]
        shown = {"ettr": lambda v: fmt_pct(v, 2), "lost_gpu_hours": fmt_gpu_hours}.get(
            name, lambda v: "–" if v is None else f"{v:,.3g}"
        )
        column.metric(label, shown(spread.mean))
        runs = ahead.finished if name == "time_to_train_days" else ahead.seeds
        column.caption(
            f"band {shown(spread.low)} to {shown(spread.high)} ({runs} runs, holds {band_level(ahead.seeds):.0%})"
        )
    if ahead.work_days is not None and ahead.finished < ahead.seeds:
        st.warning(
            f"{ahead.seeds - ahead.finished} of {ahead.seeds} runs had not done {ahead.work_days:g} days of work "
            f"within {ahead.days:g} days: the time to train shown counts only those that had.",
            icon=":material/warning:",
        )
