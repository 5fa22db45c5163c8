"""Durations as people write them: `90s`, `30m`, `2h`, `1d` (also `1.5h`, `2w`, or a plain number of seconds)."""

import re

from engine.errors import GoodputError

UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|min|m|h|d|w)?\s*$")


def parse_duration(text: str | int | float, what: str = "duration") -> float:
    """Seconds in `text`; `what` names the key or flag in the error."""
    if isinstance(text, bool):
        raise GoodputError(f"{what}: expected a duration such as 90s, 30m, 2h or 1d, got {text!r}")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        match = _PATTERN.match(str(text))
        if not match:
            raise GoodputError(f"{what}: expected a duration such as 90s, 30m, 2h or 1d, got {text!r}")
        seconds = float(match.group(1)) * UNIT_SECONDS[match.group(2) or "s"]
    if seconds < 0:
        raise GoodputError(f"{what}: a duration cannot be negative, got {text!r}")
    return seconds


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
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} d"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
