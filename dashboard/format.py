"""Number and time formats for every page, query and chart: the unit always in the text ("3.1 h", "1,234 GPU-h",
"$2.5k"), because a number without its unit says nothing; a missing value as a dash, never "nan" or "None".

Queries and charts both import from here (and never from each other: tests/test_architecture.py);
dashboard.text_exprs writes the same text as Polars expressions, for whole columns at once.
"""

import math
from datetime import datetime, timedelta

from engine.limits import MAX_RUN_DAYS
from engine.store.run import start_known
from engine.units import SECONDS_PER_DAY

# ----- numbers with units -----------------------------------------------------------------------------------

DASH = "–"  # what a missing value shows: never "nan" or "None"


def _missing(x: float | None) -> bool:
    return x is None or (isinstance(x, float) and (math.isnan(x)))


def fmt_int(x: float | None) -> str:
    """1234 -> "1,234"."""
    return DASH if _missing(x) else f"{round(x):,}"


def fmt_pct(x: float | None, digits: int = 1) -> str:
    """A ratio as a percentage: 0.9123 -> "91.2%"."""
    return DASH if _missing(x) else f"{x * 100:.{digits}f}%"


def fmt_hours(hours: float | None) -> str:
    """Hours, switching to days past two days and to minutes under one hour: "3.1 h", "47 min", "5.2 d"."""
    if _missing(hours):
        return DASH
    if math.isinf(hours):
        return "∞"
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours >= 48:
        return f"{hours / 24:.1f} d"
    return f"{hours:.1f} h"


# Past 2^53 s (285 million years) a float no longer holds whole seconds: such a duration is shown as infinite.
FOREVER_S = 2.0**53


def fmt_duration(seconds: float | None) -> str:
    """Seconds as the largest sensible units: 42 -> "42 s", 3720 -> "1 h 2 min", 200000 -> "2 d 7 h".

    dashboard.text_exprs.duration_text is the same as a Polars expression."""
    if _missing(seconds):
        return DASH
    if abs(seconds) >= FOREVER_S:
        return "∞" if seconds > 0 else "-∞"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    minutes, _ = divmod(s, 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def _compact(x: float) -> str:
    """1234 -> "1.2k", 2_500_000 -> "2.5M"; below 1,000 a plain number."""
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= limit:
            return f"{x / limit:.1f}{suffix}"
    return f"{x:,.1f}" if abs(x) < 100 and x != round(x) else f"{x:,.0f}"


def fmt_gpu_hours(x: float | None) -> str:
    """GPU-hours with their unit: "38.7 GPU-h", "12.3k GPU-h"."""
    return DASH if _missing(x) else f"{_compact(x)} GPU-h"


def fmt_usd(x: float | None) -> str:
    """Dollars: "$96.7", "$1.2M"."""
    return DASH if _missing(x) else f"${_compact(x)}"


# A time further than this from its run's start is not a date worth showing (ten times the longest run):
# it is shown as a dash, where it would overflow a datetime or print a five-digit year.
FARTHEST_TIME_S = 10 * MAX_RUN_DAYS * SECONDS_PER_DAY


def fmt_time(started_at: datetime, t_s: float | None) -> str:
    """A run time (seconds since its start) as a wall-clock date, "2024-03-02 17:40 UTC"; for a run whose date is
    unknown (a kernel log stamped since boot: engine.store.run.start_known) as "+3 h 25 min from start".

    dashboard.text_exprs.time_text is the same as a Polars expression."""
    if _missing(t_s) or not abs(t_s) <= FARTHEST_TIME_S:
        return DASH
    if not start_known(started_at):  # no date is invented: the time from the run's start, with its sign
        return f"{'-' if round(t_s) < 0 else '+'}{fmt_duration(abs(float(t_s)))} from start"
    return f"{started_at + timedelta(seconds=float(t_s)):%Y-%m-%d %H:%M} UTC"


def fmt_run_time(t_s: float | None) -> str:
    """Seconds since the run's start as "day 2 17:40" (day 1 is the first day)."""
    if _missing(t_s):
        return DASH
    days, rest = divmod(int(t_s), 86400)
    return f"day {days + 1} {rest // 3600:02d}:{rest % 3600 // 60:02d}"
