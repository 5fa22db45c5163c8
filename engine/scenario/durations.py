"""Durations as people write them: a number and its unit, `90s`, `30m`, `2h`, `1d` (also `250ms`, `10 min`,
`1.5h`, `2w`, `1h30m`, `3d12h`).

A bare number (`5`, `"300"`, a TOML `checkpoint_interval = 5`) is refused: five what? Minutes, as a planner
thinks of a checkpoint interval, or seconds, as the engine counts? The error names the key or flag, the value
and the units expected. The one exception is `bare_seconds=True`, for scenarios an earlier Goodput stored
(runs.scenario, an incidents export's scenario): it took a bare number as seconds, so such a run still opens.
"""

import math
import re

from engine.errors import GoodputError
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE, SECONDS_PER_WEEK

UNIT_SECONDS = {
    "ms": 0.001,
    "s": 1.0,
    "m": SECONDS_PER_MINUTE,
    "min": SECONDS_PER_MINUTE,
    "h": SECONDS_PER_HOUR,
    "d": SECONDS_PER_DAY,
    "w": SECONDS_PER_WEEK,
}
UNITS_EXPECTED = "give a unit: 90s, 30m, 2h, 1d (also ms, min, w; or parts such as 1h30m)"
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"  # `1.5e+07s` too: what Python's `{:g}` writes
_PART = re.compile(rf"({_NUMBER})\s*(ms|min|s|m|h|d|w)")  # ms and min before s and m: longest unit first
_WHOLE = re.compile(rf"^\s*([+-]?)\s*(?:{_NUMBER}\s*(?:ms|min|s|m|h|d|w)\s*)+$")
_BARE = re.compile(rf"^\s*[+-]?{_NUMBER}\s*$")


def parse_duration(text: str | int | float, what: str = "duration", *, bare_seconds: bool = False) -> float:
    """Seconds in `text`; `what` names the key or flag in the error. A number without a unit is refused
    unless `bare_seconds` (a value an earlier version stored, when a bare number meant seconds)."""
    if isinstance(text, bool):
        raise GoodputError(f"{what}: expected a duration such as 90s, 30m, 2h or 1d, got {text!r}")
    if isinstance(text, float) and not math.isfinite(text):  # TOML's inf and nan: no unit would help
        raise GoodputError(f"{what}: expected a finite duration, got {text!r}")
    if isinstance(text, int | float) or _BARE.match(str(text)):
        if not bare_seconds:
            raise GoodputError(f"{what}: {_shown(text)} has no unit; {UNITS_EXPECTED}")
        try:
            seconds = float(text)
        except OverflowError:  # an int of 400 digits: no float holds it
            seconds = math.inf
    elif whole := _WHOLE.match(str(text)):
        sign = -1.0 if whole.group(1) == "-" else 1.0  # read, so that `-3m` is called negative, not malformed
        seconds = sign * math.fsum(float(n) * UNIT_SECONDS[unit] for n, unit in _PART.findall(str(text)))
    else:
        raise GoodputError(f"{what}: expected a duration such as 90s, 30m, 2h or 1d, got {_shown(text)}")
    if not math.isfinite(seconds):
        raise GoodputError(f"{what}: expected a finite duration, got {_shown(text)}")
    if seconds < 0:
        raise GoodputError(f"{what}: a duration cannot be negative, got {_shown(text)}")
    return seconds


def _shown(value: object) -> str:
    """The value as written, cut short: a 4,000-digit number is not echoed whole."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text):,} characters)"


def format_duration(seconds: float) -> str:
    """The shortest exact spelling of `seconds` in the largest unit that divides it (`1800` -> `30m`)."""
    for unit in ("w", "d", "h", "m", "s"):
        size = UNIT_SECONDS[unit]
        count = seconds / size
        if count >= 1 and abs(count - round(count)) < 1e-9:
            return f"{round(count)}{unit}"
    return f"{seconds:g}s"


def human_duration(seconds: float) -> str:
    """A rounded reading for people (`3.1 h`, `12 min`, `45 s`)."""
    if seconds >= 2 * SECONDS_PER_DAY:
        return f"{seconds / SECONDS_PER_DAY:.1f} d"
    if seconds >= 2 * SECONDS_PER_HOUR:
        return f"{seconds / SECONDS_PER_HOUR:.1f} h"
    if seconds >= 120:
        return f"{seconds / SECONDS_PER_MINUTE:.0f} min"
    return f"{seconds:.0f} s"
