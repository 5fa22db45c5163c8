"""The Twin page's data: the fit of a run (engine.twin.calibrate), its backtest and forecast, cached per store,
run, file version and window, the tables the page shows of them, and the history the twin learned from (the
weekly series and its tests of one level, engine.twin.drift) in frames and words.

The fit takes a fraction of a second even at 24,576 GPUs and is cached like a query; a backtest or forecast
simulates (seconds), so the page runs one when asked and keeps it here for every later visit.
"""

from collections import OrderedDict
from datetime import datetime, timedelta

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.format import fmt_duration, fmt_int, fmt_pct
from engine.scenario.keys import KEY_BY_NAME, MIX_PREFIX
from engine.store import Store
from engine.store.run import start_known
from engine.twin import drift as drift_test
from engine.twin.backtest import Backtest, Split, backtest, split_of
from engine.twin.calibrate import RUN_KEY, Calibration, calibrate
from engine.twin.estimate import Estimate
from engine.twin.fit_bursts import RATE_KEY as BURST_RATE_KEY
from engine.twin.fit_bursts import SIZE_KEY as BURST_SIZE_KEY
from engine.twin.forecast import Forecast, forecast
from engine.twin.sweep import LocalExecutor
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

CACHE = {"max_entries": 32, "ttl": timedelta(hours=6), "show_spinner": False}
# what each source reads as on the page: the run's own evidence, or the default it was shrunk toward
FROM_PRIOR = "prior (too few events)"


def _window_flags(since_days: float | None, until_days: float | None) -> tuple[str | None, str | None]:
    return (
        None if since_days is None else f"{since_days:g}d",
        None if until_days is None else f"{until_days:g}d",
    )


def fit(run_id: str, since_days: float | None = None, until_days: float | None = None) -> Calibration:
    s = state.store()
    return _fit(str(s.root), run_id, state.file_version(s, run_id), since_days, until_days)


@st.cache_data(**CACHE)
def _fit(
    root: str, run_id: str, version: int, since_days: float | None, until_days: float | None
) -> Calibration:
    since, until = _window_flags(since_days, until_days)
    return calibrate(Store(root), run_id, since=since, until=until)


def backtest_of(run_id: str, since_days: float | None, until_days: float | None, seeds: int) -> Backtest:
    s = state.store()
    return _backtest(str(s.root), run_id, state.file_version(s, run_id), since_days, until_days, seeds)


@st.cache_data(**CACHE)
def _backtest(
    root: str, run_id: str, version: int, since_days: float | None, until_days: float | None, seeds: int
) -> Backtest:
    fitted = _fit(root, run_id, version, since_days, until_days)
    return backtest(Store(root), fitted, seeds, executor=LocalExecutor())


def forecast_of(
    run_id: str,
    since_days: float | None,
    until_days: float | None,
    seeds: int,
    days: float,
    work_days: float | None = None,
) -> Forecast:
    s = state.store()
    version = state.file_version(s, run_id)
    return _forecast(str(s.root), run_id, version, since_days, until_days, days, seeds, work_days)


@st.cache_data(**CACHE)
def _forecast(
    root: str,
    run_id: str,
    version: int,
    since_days: float | None,
    until_days: float | None,
    days: float,
    seeds: int,
    work_days: float | None,
) -> Forecast:
    fitted = _fit(root, run_id, version, since_days, until_days)
    return forecast(
        fitted.scenario(),
        days,
        seeds,
        work_days=work_days,
        uncertainty=fitted.uncertainty(),
        executor=LocalExecutor(),
    )


def time_split(fitted: Calibration) -> Split | None:
    """The time split a backtest of this fit would be (its window ends before the run does), or None; a
    GoodputError where too little of the run follows the window to forecast."""
    return split_of(state.store(), fitted)


def is_cached(run_id: str, since_days, until_days, *settings) -> bool:
    """Whether the backtest (settings: seeds) or the forecast (seeds, days, work) of these settings was run in
    this process: the page then shows it without a click."""
    s = state.store()
    return (str(s.root), run_id, state.file_version(s, run_id), since_days, until_days, *settings) in _DONE


DONE_KEPT = 256  # settings remembered as run, per process (the results themselves live in st.cache_data)
_DONE: OrderedDict[tuple, None] = OrderedDict()


def remember(run_id: str, since_days, until_days, *settings) -> None:
    s = state.store()
    _DONE[(str(s.root), run_id, state.file_version(s, run_id), since_days, until_days, *settings)] = None
    while len(_DONE) > DONE_KEPT:
        _DONE.popitem(last=False)


# ----- tables -----------------------------------------------------------------------------------------------


def value_text(key: str, value) -> str:
    """A key's value in the unit a person reads: durations as durations, the mix's shares as percentages."""
    if value is None:
        return "–"
    kind = KEY_BY_NAME[key].kind if key in KEY_BY_NAME else ""
    if kind in ("duration", "optional_duration"):
        return fmt_duration(float(value))
    if key.startswith((MIX_PREFIX, "repair.rma_fraction")) or key == "failures.bad_host_fraction":
        return fmt_pct(float(value), 2)
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return fmt_int(value)
    return f"{float(value):.3g}"


def source_text(e: Estimate) -> str:
    if e.source == "prior":
        return FROM_PRIOR
    if e.source in ("default", "assumed"):
        return e.source
    return "this run"


def interval_text(key: str, e: Estimate) -> str:
    """The 90 % interval, or the one bound there is ("at most 0.1": a fitted zero)."""
    if e.low is not None and e.high is not None:
        return f"{value_text(key, e.low)} to {value_text(key, e.high)}"
    if e.high is not None:
        return f"at most {value_text(key, e.high)}"
    if e.low is not None:
        return f"at least {value_text(key, e.low)}"
    return ""


def assumed_table(fitted: Calibration) -> pl.DataFrame:
    """Every key the fit leaves at its default: the key, what it is and the value the twin keeps."""
    rows = [
        {"key": key, "what it is": KEY_BY_NAME[key].doc if key in KEY_BY_NAME else "", "value": str(value)}
        for key, value in fitted.assumed().items()
    ]
    return pl.DataFrame(
        rows, schema={"key": pl.String, "what it is": pl.String, "value": pl.String}, orient="row"
    )


def keys_table(fitted: Calibration) -> pl.DataFrame:
    """One row a fitted key: what it is, the value, its 90 % interval, the evidence n, where it came from and
    the default it replaces (engine/scenario/keys.py, the llama3-405b scenario)."""
    rows = []
    for key, e in fitted.keys.items():
        if e.source == "default":
            continue
        interval = interval_text(key, e)
        default = KEY_BY_NAME[key].default if key in KEY_BY_NAME else None
        if isinstance(default, str) and KEY_BY_NAME[key].kind in ("duration", "optional_duration"):
            from engine.scenario.durations import parse_duration

            default = parse_duration(default, key) if default else None
        rows.append(
            {
                "key": key,
                "what it is": KEY_BY_NAME[key].doc if key in KEY_BY_NAME else "",
                "fitted": value_text(key, e.value),
                "90 % interval": interval,
                "n": e.n,
                "from": source_text(e),
                "default": value_text(key, default),
            }
        )
    schema = {
        "key": pl.String,
        "what it is": pl.String,
        "fitted": pl.String,
        "90 % interval": pl.String,
        "n": pl.Int64,
        "from": pl.String,
        "default": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def cause_rates(fitted: Calibration) -> pl.DataFrame:
    """Each cause's fitted rate per 1,000 host-days (the overall rate shared by the fitted mix), its interval,
    n, whether it rests on the prior, and the default's rate of that cause."""
    total = fitted.keys[RUN_KEY].value if RUN_KEY in fitted.keys else None
    default_total = KEY_BY_NAME[RUN_KEY].default
    mix_keys = [k for k in fitted.keys if k.startswith(MIX_PREFIX)]
    default_sum = sum(float(KEY_BY_NAME[k].default) for k in mix_keys) or 1.0
    rows = []
    for key in mix_keys:
        e = fitted.keys[key]
        rows.append(
            {
                "cause": key[len(MIX_PREFIX) :],
                "rate": None if total is None else total * e.value,
                "low": None if total is None or e.low is None else total * e.low,
                "high": None if total is None or e.high is None else total * e.high,
                "n": e.n,
                "prior": e.source == "prior",
                "default": default_total * float(KEY_BY_NAME[key].default) / default_sum,
            }
        )
    schema = {
        "cause": pl.String,
        "rate": pl.Float64,
        "low": pl.Float64,
        "high": pl.Float64,
        "n": pl.Int64,
        "prior": pl.Boolean,
        "default": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort("rate", descending=True, nulls_last=True)


# ----- the history the twin learned from (engine.twin.drift) ------------------------------------------------


def when(started_at: datetime, offset_s: float) -> str:
    """A time of the run as a reader places it: its date, or "day 12" where the run's date is unknown."""
    if start_known(started_at):
        return (started_at + timedelta(seconds=offset_s)).date().isoformat()
    return f"day {int(offset_s // SECONDS_PER_DAY) + 1}"


def history(fitted: Calibration) -> pl.DataFrame:
    """The window's weeks: start_s, end_s, week (its first day, in words), faults (events: a burst once),
    host_days (in service), rate (per 1,000 host-days; null without host-days) and repair_h (the week's median
    time to repair, hours; null without a repair)."""
    weeks = fitted.drift.weeks if fitted.drift is not None else []
    ends = [w.start_s for w in weeks[1:]] + [fitted.window.end_s]
    rows = [
        {
            "start_s": w.start_s,
            "end_s": end,
            "week": when(fitted.started_at, w.start_s),
            "faults": w.faults,
            "host_days": w.host_days,
            "rate": 1000.0 * w.faults / w.host_days if w.host_days > 0 else None,
            "repair_h": None if w.repair_median_s is None else w.repair_median_s / SECONDS_PER_HOUR,
        }
        for w, end in zip(weeks, ends, strict=True)
    ]
    schema = {
        "start_s": pl.Float64,
        "end_s": pl.Float64,
        "week": pl.String,
        "faults": pl.Int64,
        "host_days": pl.Float64,
        "rate": pl.Float64,
        "repair_h": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def rate_levels(fitted: Calibration) -> list[dict]:
    """The fitted levels of the weekly rate, oldest first: start_s, end_s, level (per 1,000 host-days) and name.
    One level over the window where the rate did not change, else one before each change and the recent one."""
    drift, window = fitted.drift, fitted.window
    if drift is None or not drift.weeks:
        return []
    if not drift.rate_changes:
        faults = sum(w.faults for w in drift.weeks)
        host_days = sum(w.host_days for w in drift.weeks)
        if not host_days:
            return []
        level = 1000.0 * faults / host_days
        return [
            {
                "start_s": window.start_s,
                "end_s": window.end_s,
                "level": level,
                "name": "one level (the twin's)",
            }
        ]
    starts = [window.start_s] + [c.at_s for c in drift.rate_changes]
    ends = [c.at_s for c in drift.rate_changes] + [window.end_s]
    levels = [c.before for c in drift.rate_changes] + [drift.rate_changes[-1].after]
    last = len(levels) - 1
    return [
        {
            "start_s": a,
            "end_s": b,
            "level": level,
            "name": f"level since {when(fitted.started_at, a)} (the twin's)"
            if i == last
            else f"level {when(fitted.started_at, a)} to {when(fitted.started_at, b)}",
        }
        for i, (a, b, level) in enumerate(zip(starts, ends, levels, strict=True))
    ]


def repair_levels(fitted: Calibration) -> list[dict]:
    """The repair time's levels in hours: before and since a change, or the twin's fitted median over the
    window (Kaplan-Meier) where it did not change."""
    drift, window = fitted.drift, fitted.window
    change = drift.repair_change if drift is not None else None
    if change is not None:
        at = when(fitted.started_at, change.at_s)
        return [
            {
                "start_s": window.start_s,
                "end_s": change.at_s,
                "level": change.before / SECONDS_PER_HOUR,
                "name": f"repair level before {at}",
            },
            {
                "start_s": change.at_s,
                "end_s": window.end_s,
                "level": change.after / SECONDS_PER_HOUR,
                "name": f"repair level since {at} (the twin's)",
            },
        ]
    if fitted.repair is not None and fitted.repair.median_s is not None:
        return [
            {
                "start_s": window.start_s,
                "end_s": window.end_s,
                "level": fitted.repair.median_s / SECONDS_PER_HOUR,
                "name": "the twin's median (Kaplan-Meier)",
            }
        ]
    return []


def p_text(p: float, draws: int) -> str:
    """A simulated p-value as it can be read: at the test's resolution, "p ≤ 0.001"."""
    return f"p ≤ {p:.3f}" if p <= 1.0 / (draws + 1) + 1e-12 else f"p = {p:.3f}"


def rate_words(fitted: Calibration) -> str:
    """The rate's test in words: too short to test, one level, or when and how it changed."""
    drift = fitted.drift
    if drift is None or drift.rate_p_value is None:
        tested = sum(1 for w in drift.weeks if w.host_days > 0) if drift is not None else 0
        if tested < 2 * drift_test.MIN_WEEKS:
            return (
                f"Too short to test drift (fewer than {2 * drift_test.MIN_WEEKS} weeks): the twin takes the "
                "window's one level."
            )
        return "Too few faults to test drift (fewer than two fault events): the twin takes the window's one level."
    p = p_text(drift.rate_p_value, drift_test.P_DRAWS)
    if not drift.rate_changes:
        return (
            f"One level explains the weeks ({p}: a change of rate at any week fits them no better than chance "
            f"would; a change is taken at p < {drift_test.ALPHA:g}). The twin takes the window's rate."
        )
    steps = "; then ".join(
        f"about {when(fitted.started_at, c.at_s)} from {c.before:.3g} to {c.after:.3g} per 1,000 host-days"
        f" ({p_text(c.p_value, drift_test.P_DRAWS)})"
        for c in drift.rate_changes
    )
    last = drift.rate_changes[-1]
    return (
        f"The rate changed {steps}: the twin takes the recent level, fitted to the weeks since "
        f"{when(fitted.started_at, last.at_s)}."
    )


def repair_words(fitted: Calibration) -> str:
    """The repair time's test in words."""
    drift = fitted.drift
    if drift is None or drift.repair_p_value is None:
        return (
            f"The repair time is not tested (fewer than {2 * drift_test.MIN_REPAIRS} repairs in the window)."
        )
    change = drift.repair_change
    if change is None:
        return f"The repair time stayed one level ({p_text(drift.repair_p_value, drift_test.REPAIR_DRAWS)})."
    return (
        f"The median repair time changed about {when(fitted.started_at, change.at_s)} from "
        f"{fmt_duration(change.before)} to {fmt_duration(change.after)}"
        f" ({p_text(change.p_value, drift_test.REPAIR_DRAWS)}): the twin's repair law is fitted to the repairs since."
    )


def bursts(fitted: Calibration) -> tuple[str, str] | None:
    """The fitted burst rate as a metric's value and its caption (the mean size, the interval between bursts),
    or None where the window had too few faults to look for bursts."""
    rate = fitted.keys.get(BURST_RATE_KEY)
    if rate is None:
        return None
    if rate.n == 0:
        bound = f"at most {rate.high:.3g} a day (90 % upper bound)" if rate.high is not None else ""
        return "none", f"no burst beyond chance · {bound}".rstrip(" ·")
    interval = (
        f"90 % interval {rate.low:.3g} to {rate.high:.3g} a day · "
        if rate.low is not None and rate.high is not None
        else ""
    )
    parts = [
        f"{fmt_int(rate.n)} bursts beyond chance",
        f"{interval}about one every {1.0 / rate.value:.3g} days",
    ]
    size = fitted.keys.get(BURST_SIZE_KEY)
    if size is not None:
        spread = (
            f" (90 % interval {size.low:.3g} to {size.high:.3g})"
            if size.low is not None and size.high is not None
            else ""
        )
        parts.append(f"{size.value:.2f} hosts each on average{spread}")
    return f"{rate.value:.3g} a day", " · ".join(parts)


def measured_start_s(test: Backtest, fitted: Calibration) -> float:
    """Where the backtest's observed days begin, seconds from the run's start: D of a time split, else the
    window's start."""
    return test.split.until_s if test.split is not None else fitted.window.start_s
