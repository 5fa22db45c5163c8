"""The Twin page's data: the fit of a run (engine.twin.calibrate), its backtest and forecast, cached per store,
run, file version and window, and the tables the page shows of them.

The fit takes a fraction of a second even at 24,576 GPUs and is cached like a query; a backtest or forecast
simulates (seconds), so the page runs one when asked and keeps it here for every later visit.
"""

from collections import OrderedDict
from datetime import timedelta

import polars as pl
import streamlit as st

from dashboard import state
from dashboard.format import fmt_duration, fmt_int, fmt_pct
from engine.scenario.keys import KEY_BY_NAME, MIX_PREFIX
from engine.store import Store
from engine.twin.backtest import Backtest, backtest
from engine.twin.calibrate import RUN_KEY, Calibration, calibrate
from engine.twin.estimate import Estimate
from engine.twin.forecast import Forecast, forecast
from engine.twin.sweep import LocalExecutor

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
    if key.startswith(MIX_PREFIX) or key in ("failures.bad_host_fraction", "repair.rma_fraction"):
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
