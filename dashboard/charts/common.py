"""What every chart and page shares: colours for host states, failure categories and causes; number formats.

One palette for the whole dashboard, so a colour means the same thing on every page: red is down, blue is
training, and each failure category keeps its colour from the Overview's bars to the Incidents timeline.
Formatting helpers always put the unit in the text ("3.1 h", "1,234 GPU-h", "$2.5k"), because a number
without its unit says nothing.
"""

import math
from datetime import datetime, timedelta

from engine.limits import MAX_RUN_DAYS
from engine.reference import CAUSE_BY_KEY, CAUSES, PLANNED_CAUSE
from engine.schema import HOST_STATES

# ----- colours ----------------------------------------------------------------------------------------------

# Host states (engine.schema.HOST_STATES): available hosts in calm colours, unavailable ones in warm ones,
# from "just failed" (red) through repair (purple) to "almost back" (amber).
HOST_STATE_COLORS: dict[str, str] = {
    "running": "#1f77b4",  # training: blue
    "healthy": "#2ca02c",  # up and idle: green
    "spare": "#17becf",  # held back for the flagship job: teal
    "draining": "#ff7f0e",  # leaving service: orange
    "down": "#d62728",  # failed: red
    "diagnosing": "#e377c2",  # DCGM diagnostics: pink
    "repair": "#9467bd",  # hands-on repair or RMA: purple
    "burn_in": "#bcbd22",  # stress test before return: olive
}
assert set(HOST_STATE_COLORS) == set(HOST_STATES), "every host state needs a colour"

# States in which a host does no work and is not available to jobs ("what is down").
UNAVAILABLE_STATES: tuple[str, ...] = ("draining", "down", "diagnosing", "repair", "burn_in")
AVAILABLE_STATES: tuple[str, ...] = ("healthy", "running", "spare")

# Failure categories of the Llama 3 table (engine.reference.CAUSES) plus planned interruptions.
CATEGORY_COLORS: dict[str, str] = {
    "GPU": "#d62728",
    "Host": "#ff7f0e",
    "Network": "#9467bd",
    "Dependency": "#8c564b",
    "Unplanned maintenance": "#e377c2",
    "Unknown": "#7f7f7f",
    "Planned": "#17becf",
}
OTHER_COLOR = "#bbbbbb"  # anything a scenario or trace adds that the palette does not know
assert {c.category for c in CAUSES} <= set(CATEGORY_COLORS), "every reference category needs a colour"

# Goodput losses (engine.analytics.LOSS_CATEGORIES) and productive time.
LOSS_COLORS: dict[str, str] = {
    "productive": "#2ca02c",
    "lost_work": "#d62728",
    "restart": "#ff7f0e",
    "checkpoint": "#1f77b4",
    "waiting_for_spares": "#9467bd",
}
LOSS_LABELS: dict[str, str] = {
    "productive": "Productive training",
    "lost_work": "Lost work (since last checkpoint)",
    "restart": "Restart overhead",
    "checkpoint": "Checkpoint writes",
    "waiting_for_spares": "Waiting for spare hosts",
    "network_slowdown": "Network slowdown (placement)",  # the planner's: training time the fabric slowed
}


def category_of(cause: str) -> str:
    """The category of a cause key ("Planned" for planned maintenance, "Unknown" for unknown causes)."""
    if cause == PLANNED_CAUSE.cause:
        return PLANNED_CAUSE.category
    known = CAUSE_BY_KEY.get(cause)
    return known.category if known else "Unknown"


def cause_label(cause: str) -> str:
    """The reference table's label for a cause key ("Faulty GPU"), else the key made readable."""
    if cause == PLANNED_CAUSE.cause:
        return PLANNED_CAUSE.label
    known = CAUSE_BY_KEY.get(cause)
    if known:
        return known.label
    # upper first letter, lower rest (not str.capitalize, whose title case Polars lacks): cause_label_text
    readable = cause.replace("_", " ")
    return readable[:1].upper() + readable[1:].lower()


def cause_color(cause: str) -> str:
    """A cause takes its category's colour, so the bars of one category read as one group."""
    return CATEGORY_COLORS.get(category_of(cause), OTHER_COLOR)


def state_color(state: str) -> str:
    return HOST_STATE_COLORS.get(state, OTHER_COLOR)


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

    dashboard.charts.text_exprs.duration_text is the same as a Polars expression."""
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
FARTHEST_TIME_S = 10 * MAX_RUN_DAYS * 86400.0


def fmt_time(started_at: datetime, t_s: float | None) -> str:
    """A run time (seconds since its start) as a wall-clock date, "2024-03-02 17:40 UTC".

    dashboard.charts.text_exprs.time_text is the same as a Polars expression."""
    if _missing(t_s) or not abs(t_s) <= FARTHEST_TIME_S:
        return DASH
    return f"{started_at + timedelta(seconds=float(t_s)):%Y-%m-%d %H:%M} UTC"


def fmt_run_time(t_s: float | None) -> str:
    """Seconds since the run's start as "day 2 17:40" (day 1 is the first day)."""
    if _missing(t_s):
        return DASH
    days, rest = divmod(int(t_s), 86400)
    return f"day {days + 1} {rest // 3600:02d}:{rest % 3600 // 60:02d}"
