"""Twin: what Goodput learned of the selected run's cluster (`goodput calibrate`) and the history it learned it
from (the weekly failure rate and repair time, and whether one level explains them), how well the learned twin
reproduces the window it learned from (the backtest: the twin's published error; a time split where the window
ends before the run does: the twin fitted before D forecasts the days after), and what it forecasts.

Every fitted key carries its 90 % interval, its evidence (n) and where it came from: this run, or the default
it was shrunk toward when the run showed too few events. The backtest and forecast simulate (seconds at 24,576
GPUs), so they run on request and are kept for later visits.

URL: ?since= and ?until= (days from the run's start) reproduce the window.
"""

import streamlit as st

from dashboard import chart_view, lazy, state, table_view
from dashboard.charts import twin as charts
from dashboard.format import fmt_duration, fmt_gpu_hours, fmt_int, fmt_pct
from dashboard.planner_model import twin_base
from dashboard.queries import twin as queries
from dashboard.text import code, md
from dashboard.twin_forecast import band_words, forecast_section
from engine.analysis.definitions import definition
from engine.errors import GoodputError
from engine.store import RunInfo
from engine.twin.backtest import FIGURES, MIN_FORECAST_DAYS, REPAIR_FIGURES, SEEDS, Backtest, Split
from engine.twin.calibrate import RUN_KEY, Calibration
from engine.twin.prediction import band_level
from engine.units import SECONDS_PER_DAY

# each backtest figure: its definition (engine.analysis.definitions.twin) and unit on the page
BACKTEST_DEFINITIONS = {
    "interruptions": ("window_interruptions", "interruptions"),
    "incidents": ("window_incidents", "incidents"),
    "gpu_hours_lost": ("window_gpu_hours_lost", "GPU-h"),
    "ettr": ("window_ettr", ""),
    "hosts_in_repair_mean": ("window_hosts_in_repair", "hosts"),
    "repair_median_s": ("window_repair_median", "duration"),
    "repair_p90_s": ("window_repair_p90", "duration"),
    "unknown_share": ("window_unknown_share", "share"),
    "faults_by_week": ("window_faults_by_week", "faults"),
}
MIN_WINDOW_DAYS = 1 / 24  # an hour: less is no window to fit


def page(run_id: str) -> None:
    """The window, then what the twin learned, its backtest and its forecast."""
    info = state.store().info(run_id)
    since, until = window_slider(info)
    try:
        fitted = queries.fit(info.run_id, since, until)
    except GoodputError as err:
        st.info(f"Nothing to learn from this run: {md(err)}", icon=":material/info:")
        return
    learned_section(fitted)
    backtest_section(info, fitted, since, until)
    forecast_section(info, fitted, since, until)


def window_slider(info: RunInfo) -> tuple[float | None, float | None]:
    """The window fitted, in days from the run's start (None: the run's own start or end)."""
    days = info.duration_s / SECONDS_PER_DAY
    if days <= MIN_WINDOW_DAYS:
        return None, None
    step = 1.0 if days >= 7 else 1 / 24
    since = _param_days("since", 0.0, days)
    until = _param_days("until", days, days)
    if until - since < step:
        since, until = 0.0, days
    chosen = st.slider(
        "Window (days from the run's start)",
        min_value=0.0,
        max_value=float(days),
        step=step,
        help="The part of the run the twin learns from and is tested against. A window under a week rests on "
        "few events and says so.",
        key=state.seed("twin_window", (since, until)),
    )
    start, end = chosen
    state.set_url("since", f"{start:g}" if start > 0 else "")
    state.set_url("until", f"{end:g}" if end < days else "")
    return (start if start > 0 else None), (end if end < days else None)


def _param_days(name: str, fallback: float, days: float) -> float:
    try:
        value = float(st.query_params.get(name, ""))
    except ValueError:
        return fallback
    return min(max(value, 0.0), days)


# ----- what the twin learned ----------------------------------------------------------------------------


def learned_section(fitted: Calibration) -> None:
    st.subheader("What the twin learned")
    rate = fitted.keys[RUN_KEY]
    first, second, third, fourth = st.columns(4)
    interval = (
        f"90 % interval {rate.low:.3g} to {rate.high:.3g}"
        if rate.low is not None and rate.high is not None
        else ""
    )
    first.metric(
        definition("fitted_failure_rate").label,
        f"{rate.value:.3g}",
        help=definition("fitted_failure_rate").help,
    )
    first.caption(f"per 1,000 host-days · {interval} · n={fmt_int(rate.n)} · {queries.source_text(rate)}")
    second.metric(
        definition("exposure_host_days").label,
        fmt_int(fitted.exposure_host_days),
        help=definition("exposure_host_days").help,
    )
    second.caption(f"over {fitted.window.days:.2f} days")
    repair = fitted.repair
    third.metric("Time to repair (median)", fmt_duration(repair.median_s if repair else None))
    third.caption(
        f"90th percentile {fmt_duration(repair.p90_s)} · {fmt_int(repair.repairs)} repairs,"
        f" {fmt_int(repair.censored)} still out"
        if repair
        else "no repair in the window"
    )
    fitted_keys = sum(1 for e in fitted.keys.values() if e.source not in ("default", "prior", "assumed"))
    prior_keys = sum(1 for e in fitted.keys.values() if e.source == "prior")
    fourth.metric("Keys from this run", fmt_int(fitted_keys))
    fourth.caption(
        f"{fmt_int(prior_keys)} shrunk toward the default (too few events) · "
        f"{fmt_int(len(fitted.assumed()))} defaults, not fitted"
    )
    history_section(fitted)
    cannot_tell_section(fitted)
    rates = queries.cause_rates(fitted)
    if rates.height:
        st.markdown(
            "**Failure rate by cause**, fitted with its 90 % interval (a cause never seen is a zero whose interval "
            "reaches its upper bound; grey: fewer than five failures in all, shrunk toward the default) and the "
            "default"
        )
        chart_view.plotly(charts.cause_rates(rates), key="twin_causes")
    lazy.expander(
        "Every fitted key, with its interval, evidence and source",
        "twin_every_key",
        lambda: table_view.dataframe(queries.keys_table(fitted), hide_index=True, width="stretch"),
    )
    st.download_button(
        "Download the fitted scenario (TOML)",
        fitted.to_toml(),
        file_name=f"twin-{fitted.run_id}.toml",
        mime="application/toml",
        icon=":material/download:",
        help="Each fitted key carries its estimate, interval, n and source as a comment; run it with "
        "`goodput simulate --scenario FILE`, or vary it with `goodput sweep --scenario FILE`.",
    )
    st.page_link(
        "app_pages/planner.py",
        label="Plan from this twin: spares, checkpoints, recovery, a bigger job, for this cluster",
        icon=":material/tune:",
        query_params={"preset": twin_base(fitted.run_id)},
    )
    st.caption(
        f"The same from a terminal: {code(f'goodput calibrate --run {fitted.run_id} --output twin.toml')}"
    )


def history_section(fitted: Calibration) -> None:
    """The weeks the twin learned from: the failure rate and repair time of each, the levels fitted to them and
    whether one level explains them; the bursts and the faults of unknown cause."""
    st.markdown("**History: is the cluster's failure rate one level?**", help=definition("drift_test").help)
    weeks = queries.history(fitted)
    if weeks.height:
        st.markdown(f"{queries.rate_words(fitted)}  \n{queries.repair_words(fitted)}")
        chart_view.plotly(
            charts.failure_history(
                weeks, queries.rate_levels(fitted), queries.repair_levels(fitted), fitted.started_at
            ),
            key="twin_history",
        )
    else:
        st.caption("The window has no week to show.")
    bursts = queries.bursts(fitted)
    unknown, faults = fitted.unknown_faults
    if bursts is None and not unknown:
        return
    left, right, _ = st.columns([2, 1, 1])
    if bursts is not None:
        value, words = bursts
        left.metric(definition("burst_rate").label, value, help=definition("burst_rate").help)
        left.caption(words)
    if unknown:
        right.metric(
            definition("unknown_cause_share").label,
            fmt_pct(unknown / faults, 1),
            help=definition("unknown_cause_share").help,
        )
        right.caption(f"{fmt_int(unknown)} of {fmt_int(faults)} unexpected faults · counted in the rate")


def cannot_tell_section(fitted: Calibration) -> None:
    """What this run could not show the twin, each said plainly: fitted zeros and their bounds, a repair queue,
    keys assumed, and the defaults every other key keeps."""
    st.markdown("**What this run cannot tell the twin**")
    for warning in fitted.warnings:
        st.warning(md(warning), icon=":material/warning:")
    if not fitted.warnings:
        st.caption("Nothing the fitted keys need was missing from this window.")
    lazy.expander(
        f"The {len(fitted.assumed())} keys the run does not set: the defaults the twin keeps",
        "twin_assumed",
        lambda: table_view.dataframe(queries.assumed_table(fitted), hide_index=True, width="stretch"),
    )
    st.caption(definition("fit_assumed").help)


# ----- backtest -------------------------------------------------------------------------------------------


def backtest_section(info: RunInfo, fitted: Calibration, since, until) -> None:
    try:
        split = queries.time_split(fitted)
    except GoodputError:  # too little of the run follows the window to forecast
        st.subheader("Backtest")
        left = (info.duration_s - fitted.window.end_s) / 3600
        st.info(
            f"No backtest of this window: the run goes on only {left:.1f} hours after its end, and a time split "
            f"needs at least {MIN_FORECAST_DAYS:g} day to forecast. End the window a day earlier, or at the run's "
            "end to backtest the window itself.",
            icon=":material/info:",
        )
        return
    if split is None:
        st.subheader("Backtest: does the twin reproduce this window?")
    else:
        after = queries.when(fitted.started_at, split.until_s)
        st.subheader(
            f"Backtest, a time split: does the twin fitted before {after} forecast what came after?",
            help=definition("backtest_time_split").help,
        )
        st.markdown(
            f"Fitted on the days before {after}, forecasting the {split.forecast_days:.3g} days after, compared with"
            " what happened: the twin never saw those days."
        )
    st.caption(definition("backtest_band").help)
    left, right = st.columns([1, 3])
    seeds = left.number_input("Runs", min_value=2, max_value=100, value=SEEDS, step=1, key="twin_seeds")
    asked = right.button("Run the backtest", icon=":material/play_arrow:", key="twin_run_backtest")
    if not (asked or queries.is_cached(info.run_id, since, until, int(seeds))):
        st.caption(f"{_backtest_plan(fitted, split, int(seeds))} {band_words(int(seeds))}")
        return
    with st.spinner(f"Simulating {int(seeds)} runs of the fitted twin…"):
        test = queries.backtest_of(info.run_id, since, until, int(seeds))
    queries.remember(info.run_id, since, until, int(seeds))
    backtest_verdict(test, fitted)
    rows = _backtest_rows(test)
    shown = [r for r in rows if r["observed"] is not None]
    if shown:
        chart_view.plotly(charts.backtest_bands([_chart_row(r) for r in shown]), key="twin_bands")
    table_view.dataframe(_backtest_table(rows), hide_index=True, width="stretch")
    st.caption(
        "Median error: the twin's median over the observed value, less one (+10 %: the twin says 10 % more than "
        "happened); – where nothing was observed, or the observed value is 0."
    )
    if test.observed.largest_job is None:
        st.caption(
            "No job ran in the days compared: the largest job's figures (interruptions, GPU-hours lost, ETTR) "
            "have nothing observed to set beside the twin's band, and show –."
        )
    elif any(r["observed_is"] != "measured" for r in rows if r["observed"] is not None):
        st.caption(
            "The largest job's checkpoints were not read (Slurm records none): its ETTR shown is an upper bound "
            "and its lost GPU-hours a lower one, and the verdict reads them as such."
        )
    start_s = queries.measured_start_s(test, fitted)
    end_s = test.split.end_s if test.split is not None else fitted.window.end_s
    if test.faults_by_week.get("observed"):
        st.markdown(
            "**Faults by week, observed against the twin's band**",
            help=definition("window_faults_by_week").help,
        )
        chart_view.plotly(
            charts.faults_by_week(test.faults_by_week, fitted.started_at, start_s, end_s), key="twin_weeks"
        )
        weeks_out = sum(1 for inside in test.faults_by_week["inside"] if not inside)
        level = band_level(test.seeds)
        st.caption(
            f"{weeks_out} of {len(test.faults_by_week['inside'])} weeks outside the twin's band. Each week's band "
            f"holds a new week {level:.0%} of the time with {test.seeds} runs, so about one week in "
            f"{1 / (1 - level):.0f} outside is luck; a run of them on one side is not."
        )
    if test.repair_by_day["observed"]:
        st.markdown("**Hosts in repair, day by day**", help=definition("window_hosts_in_repair").help)
        chart_view.plotly(
            charts.repair_over_days(test.repair_by_day, fitted.started_at, start_s), key="twin_repair_days"
        )


def _backtest_plan(fitted: Calibration, split: Split | None, seeds: int) -> str:
    """What the button will do, in words."""
    if split is None:
        return (
            f"Simulates the fitted scenario over the window {seeds} times ({fitted.window.days:.1f} days each), "
            "each run drawing the fitted keys from their laws first, and puts what the run shows beside the "
            "twin's band."
        )
    return (
        f"Simulates the twin fitted before {queries.when(fitted.started_at, split.until_s)} {seeds} times over "
        f"the {split.forecast_days:.3g} days after it (each run after a warm-up of "
        f"{split.warm_up_s / SECONDS_PER_DAY:.3g} days, drawing the fitted keys from their laws first), and puts "
        "what the cluster did in those days beside the twin's band."
    )


def backtest_verdict(test: Backtest, fitted: Calibration) -> None:
    """Whether every observed figure lies inside its band, or which do not, as the banner above the bands."""
    outside = test.outside()
    if test.unknown_share is not None and test.unknown_share.inside is False:
        outside.append("unknown_share")
    seen = (
        "this window"
        if test.split is None
        else f"the days after {queries.when(fitted.started_at, test.split.until_s)}"
    )
    if outside:
        names = ", ".join(definition(BACKTEST_DEFINITIONS[n][0]).label for n in outside)
        st.error(
            f"The twin does not reproduce {seen}: {md(names)} fell outside its band. The fit misses "
            "something this cluster does (a cause it does not model, a rate that changed within the window, a "
            "repair queue): read its forecasts with that error.",
            icon=":material/error:",
        )
    else:
        st.success(
            f"Every observed figure of {seen} lies inside the twin's band (it holds a new run "
            f"{band_level(test.seeds):.1%} of the time).",
            icon=":material/check_circle:",
        )


def _backtest_rows(test: Backtest) -> list[dict]:
    """One row a banded figure: its label and unit on the page and its Band's fields."""
    names = [n for n in (*FIGURES, *REPAIR_FIGURES) if n in test.figures]
    bands = [(n, test.figures[n]) for n in names]
    if test.unknown_share is not None:
        bands.append(("unknown_share", test.unknown_share))
    rows = []
    for name, band in bands:
        key, unit = BACKTEST_DEFINITIONS[name]
        rows.append({"name": name, "label": definition(key).label, "unit": unit, **band.__dict__})
    return rows


# a figure's unit on the chart of bands: durations in hours, shares in percent
CHART_SCALE = {"duration": (1 / 3600, "h"), "share": (100.0, "%")}


def _chart_row(row: dict) -> dict:
    scale, unit = CHART_SCALE.get(row["unit"], (1.0, row["unit"]))
    values = {k: None if row[k] is None else row[k] * scale for k in ("observed", "low", "median", "high")}
    return {**row, **values, "unit": unit, "scaled": row["unit"] in CHART_SCALE}


def _backtest_table(rows: list[dict]):
    import polars as pl

    def text(row: dict, value) -> str:
        if value is None:
            return "–"
        if row["name"] == "ettr":
            return fmt_pct(value, 2)
        if row["unit"] == "GPU-h":
            return fmt_gpu_hours(value)
        if row["unit"] == "duration":
            return fmt_duration(value)
        if row["unit"] == "share":
            return fmt_pct(value, 1)
        return f"{value:,.3g}" if abs(value) < 1000 else fmt_int(value)

    def error(value) -> str:
        return "–" if value is None else f"{value * 100:+.1f}%"

    return pl.DataFrame(
        {
            "figure": [r["label"] for r in rows],
            "observed": [text(r, r["observed"]) + _bound_note(r) for r in rows],
            "band low": [text(r, r["low"]) for r in rows],
            "twin median": [text(r, r["median"]) for r in rows],
            "band high": [text(r, r["high"]) for r in rows],
            "median error": [error(r["median_error"]) for r in rows],
            "verdict": [{True: "inside", False: "OUTSIDE", None: "–"}[r["inside"]] for r in rows],
        }
    )


def _bound_note(row: dict) -> str:
    return "" if row["observed_is"] == "measured" or row["observed"] is None else f" ({row['observed_is']})"


st.title("Twin")
state.render_run_page(page, state.run_or_stop())
