"""The formatters of dashboard.format as Polars expressions, for whole columns at once.

Pages once formatted columns by handing `fmt_time` to Polars per element: a Python callback that Polars'
thread pool must call back into the interpreter for. Under concurrent sessions that deadlocked the server (pool threads
waiting for the GIL while the thread holding it waited for the pool), so no page may put Python inside a
Polars plan. These expressions give the same text as the Python formatters, value for value
(tests/test_text_exprs.py proves it with Hypothesis); a null stays null, as it did through that callback,
so a page can still `fill_null("not repaired")`.
"""

from datetime import datetime

import polars as pl

from dashboard.format import DASH, FARTHEST_TIME_S, FOREVER_S
from engine.reference import CAUSE_BY_KEY, PLANNED_CAUSE
from engine.report.palette import TIER_ORDER
from engine.store.run import start_known

_US = 1_000_000


def _column(column: str | pl.Expr) -> pl.Expr:
    return pl.col(column) if isinstance(column, str) else column


def _keep_null(x: pl.Expr, text: pl.Expr) -> pl.Expr:
    """`text` where `x` has a value, null where it has none; named after x's column, as the callback's was."""
    return pl.when(x.is_not_null()).then(text).name.keep()


def time_text(column: str | pl.Expr, started_at: datetime) -> pl.Expr:
    """common.fmt_time: seconds since the run's start as "2024-03-02 17:40 UTC" ("+3 h 25 min from start" for a
    run whose date is unknown)."""
    x = _column(column).cast(pl.Float64)
    shown = x.is_finite() & (x.abs() <= FARTHEST_TIME_S)
    if not start_known(started_at):  # decided once, as the plan is built: no Python inside it
        sign = pl.when(x.round(0, mode="half_to_even") < 0).then(pl.lit("-")).otherwise(pl.lit("+"))
        relative = sign + duration_text(pl.when(shown).then(x.abs()).otherwise(0.0)) + pl.lit(" from start")
        return _keep_null(x, pl.when(shown).then(relative).otherwise(pl.lit(DASH)))
    t = pl.when(shown).then(x).otherwise(0.0)
    # timedelta(seconds=t) to the microsecond, the way CPython rounds it: the whole seconds exactly, then the
    # fraction's microseconds rounded half to even (the whole part is a multiple of 10^6, so even)
    whole = t.truncate()
    micros = whole.cast(pl.Int64) * _US + ((t - whole) * _US).round(0, mode="half_to_even").cast(pl.Int64)
    at = pl.lit(started_at) + pl.duration(microseconds=micros)
    text = pl.when(shown).then(at.dt.strftime("%Y-%m-%d %H:%M") + pl.lit(" UTC")).otherwise(pl.lit(DASH))
    return _keep_null(x, text)


def duration_text(column: str | pl.Expr) -> pl.Expr:
    """common.fmt_duration: seconds as "42 s", "47 min", "1 h 2 min", "2 d 7 h"."""
    x = _column(column).cast(pl.Float64)
    finite = x.is_not_nan() & (x.abs() < FOREVER_S)
    s = pl.when(finite).then(x).otherwise(0.0).round(0, mode="half_to_even").cast(pl.Int64)
    minutes, hours, days = s // 60, s // 3600, s // 86400
    minute_part, hour_part = (minutes % 60).cast(pl.String), (hours % 24).cast(pl.String)
    text = (
        pl.when(x.is_nan())
        .then(pl.lit(DASH))
        .when(x >= FOREVER_S)
        .then(pl.lit("∞"))
        .when(x <= -FOREVER_S)
        .then(pl.lit("-∞"))
        .when(s < 60)
        .then(s.cast(pl.String) + " s")
        .when(s < 3600)
        .then(minutes.cast(pl.String) + " min")
        .when(s < 86400)
        .then(
            hours.cast(pl.String)
            + " h"
            + pl.when(minutes % 60 == 0).then(pl.lit("")).otherwise(" " + minute_part + " min")
        )
        .otherwise(
            days.cast(pl.String)
            + " d"
            + pl.when(hours % 24 == 0).then(pl.lit("")).otherwise(" " + hour_part + " h")
        )
    )
    return _keep_null(x, text)


_CATEGORIES = {key: cause.category for key, cause in CAUSE_BY_KEY.items()} | {
    PLANNED_CAUSE.cause: PLANNED_CAUSE.category
}
_LABELS = {key: cause.label for key, cause in CAUSE_BY_KEY.items()} | {
    PLANNED_CAUSE.cause: PLANNED_CAUSE.label
}


def category_text(column: str | pl.Expr) -> pl.Expr:
    """common.category_of: a cause key's category ("Unknown" for a cause the reference table lacks)."""
    x = _column(column).cast(pl.String)
    return _keep_null(x, x.replace_strict(_CATEGORIES, default=pl.lit("Unknown"), return_dtype=pl.String))


def cause_label_text(column: str | pl.Expr) -> pl.Expr:
    """common.cause_label: the reference table's label of a cause key, else the key made readable."""
    x = _column(column).cast(pl.String)
    readable = x.str.replace_all("_", " ", literal=True)
    made = readable.str.head(1).str.to_uppercase() + readable.str.slice(1).str.to_lowercase()
    return _keep_null(x, x.replace_strict(_LABELS, default=made, return_dtype=pl.String))


def tier_rank(column: str | pl.Expr) -> pl.Expr:
    """network.tier_sort_key's first part: a tier's place from the bottom of the fabric up (unknown ones last).
    Sort by [tier_rank(tier), tier] for the whole key."""
    x = _column(column).cast(pl.String)
    return x.replace_strict(
        {t: i for i, t in enumerate(TIER_ORDER)}, default=len(TIER_ORDER), return_dtype=pl.Int64
    )
