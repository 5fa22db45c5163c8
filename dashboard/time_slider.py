"""One time slider for every page: a moment or a window of a run.

Pages keep times as seconds from the run's start (the URL's ?t=, ?from=&to=, ?since=&until=). Operators read
wall-clock time, so a run whose start is known slides over UTC datetimes; a run whose date is unknown (a kernel
log stamped since boot: engine.store.run.start_known) slides over hours, minutes or seconds from its start, never
an invented 1970 date. TimeAxis holds the arithmetic (seconds <-> slider values, clamping, steps) as plain
functions; moment_slider and window_slider draw the widget and hand back seconds.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import streamlit as st

from engine.store.run import start_known
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE

SliderValue = datetime | float
DATED_UNIT = "utc"


class Unit(NamedTuple):
    """What an undated run's slider counts, for runs at least `from_s` long."""

    from_s: float
    seconds: float
    symbol: str
    words: str


# An undated run's unit follows its length, so a log of 40 seconds does not slide over hundredths of an hour.
UNDATED_UNITS = (
    Unit(2 * SECONDS_PER_HOUR, SECONDS_PER_HOUR, "h", "hours"),
    Unit(120.0, SECONDS_PER_MINUTE, "min", "minutes"),
    Unit(0.0, 1.0, "s", "seconds"),
)


@dataclass(frozen=True)
class TimeAxis:
    """How seconds from a run's start show on a slider: UTC datetimes (`start` set) or a unit from the start."""

    start: datetime | None  # naive UTC (the slider's datetimes carry no zone); None: the date is unknown
    duration_s: float
    step_s: float  # the page's step, in seconds
    unit_s: float = 1.0  # seconds a slider value counts (undated runs)
    unit: str = DATED_UNIT  # "utc", or "h", "min", "s" from the start

    @property
    def dated(self) -> bool:
        return self.start is not None

    def clamp(self, t_s: float) -> float:
        """Seconds kept within the run; NaN (a malformed URL read as a float) is the run's end."""
        return min(max(t_s, 0.0), self.duration_s) if t_s == t_s else self.duration_s

    def value(self, t_s: float) -> SliderValue:
        """The slider's value for `t_s` seconds from the start (clamped to the run)."""
        t_s = self.clamp(t_s)
        return self.start + timedelta(seconds=t_s) if self.start is not None else t_s / self.unit_s

    def seconds(self, value: SliderValue) -> float:
        """Seconds from the start for a slider value (clamped to the run)."""
        if isinstance(value, datetime):
            if self.start is None:
                raise TypeError("an undated run's slider takes numbers from its start, not datetimes")
            return self.clamp((value - self.start).total_seconds())
        return self.clamp(float(value) * self.unit_s)

    def to_end(self, t_s: float) -> float:
        """The last step reaches the run's end even where the end is off the step grid (a slider snaps to
        min + k * step, so an end between two steps could never be picked)."""
        return self.duration_s if t_s > self.duration_s - self.step_s else t_s

    @property
    def min_value(self) -> SliderValue:
        return self.value(0.0)

    @property
    def max_value(self) -> SliderValue:
        return self.value(self.duration_s)

    @property
    def step(self) -> timedelta | float:
        return timedelta(seconds=self.step_s) if self.dated else self.step_s / self.unit_s

    @property
    def shows_date(self) -> bool:
        """Whether a dated slider's values carry the date: when the run spans more than a day, or crosses a
        midnight (UTC), the time alone would be ambiguous."""
        return self.dated and (
            self.duration_s > SECONDS_PER_DAY or self.start.date() != self.max_value.date()
        )

    @property
    def format(self) -> str:
        """The values' format: moment.js for datetimes, printf for numbers; seconds for runs of an hour or less."""
        if not self.dated:
            return "%.2f h" if self.unit == "h" else f"%.1f {self.unit}"
        clock = "HH:mm:ss" if self.duration_s <= SECONDS_PER_HOUR else "HH:mm"
        return f"YYYY-MM-DD {clock}" if self.shows_date else clock

    def label(self, what: str) -> str:
        """`what` ("Time", "Window") with the values' meaning: "(UTC)", or the unit from the run's start."""
        if not self.dated:
            return f"{what} ({_unit_words(self.unit)} from the run's start)"
        return f"{what} (UTC)" if self.shows_date else f"{what} on {self.start:%Y-%m-%d} (UTC)"

    def key(self, base: str) -> str:
        """The widget's key: the unit is part of it, so an undated live run that grows from minutes to hours
        gets a new slider (seeded again from the URL) instead of reading minutes as hours."""
        return f"{base}:{self.unit}"


def _unit_words(symbol: str) -> str:
    return next(unit.words for unit in UNDATED_UNITS if unit.symbol == symbol)


def time_axis(started_at: datetime | None, duration_s: float, step_s: float) -> TimeAxis:
    """The axis of a run of `duration_s` seconds that started at `started_at`, moving `step_s` seconds a step."""
    if not duration_s > 0:
        raise ValueError(f"a time slider needs a run that spans time; this one spans {duration_s} s")
    if not step_s > 0:
        raise ValueError(f"a time slider's step must be positive, not {step_s} s")
    if start_known(started_at):
        start = started_at.astimezone(UTC).replace(tzinfo=None) if started_at.tzinfo else started_at
        return TimeAxis(start, float(duration_s), float(step_s))
    unit = next(unit for unit in UNDATED_UNITS if duration_s >= unit.from_s)
    return TimeAxis(None, float(duration_s), float(step_s), unit.seconds, unit.symbol)


def moment_slider(
    axis: TimeAxis,
    key: str,
    t_s: float,
    *,
    what: str = "Time",
    help: str | None = None,
    where=st,
    follow_end: bool = False,
) -> float:
    """One moment of the run, in seconds from its start. `t_s` seeds the slider (from the URL) the first time
    `key` is drawn; after that the slider's own state rules (dashboard.state.seed). `follow_end`: a view of the
    end of a live run follows the end as the run grows."""
    slider_key = axis.key(key)
    _keep(axis, slider_key, axis.value(t_s))
    if follow_end:
        _follow_end(axis, slider_key)
    picked = _draw(where, axis, slider_key, what, help)
    return axis.to_end(axis.seconds(picked))


def _keep(axis: TimeAxis, slider_key: str, first: SliderValue | tuple[SliderValue, ...]) -> None:
    """Seed the slider's state with `first` the first time; after that write its own value back, kept within the
    run. Streamlit identifies a slider by its key and its bounds, so a live run that grows gives a new widget
    that would start from its minimum (the run's start) unless its key's value is set before it is drawn."""
    if slider_key not in st.session_state:
        st.session_state[slider_key] = first
        return
    value = st.session_state[slider_key]
    st.session_state[slider_key] = (
        tuple(_within(axis, v) for v in value) if isinstance(value, tuple | list) else _within(axis, value)
    )


def _within(axis: TimeAxis, value: SliderValue) -> SliderValue:
    return min(max(value, axis.min_value), axis.max_value)


def _follow_end(axis: TimeAxis, slider_key: str) -> None:
    """A slider left at the end of a run that has since grown moves to the new end (the newest scrape)."""
    end_key = f"{slider_key}:end"
    previous_end = st.session_state.get(end_key, axis.duration_s)
    shown = axis.seconds(st.session_state[slider_key])
    if previous_end < axis.duration_s and shown > previous_end - axis.step_s:
        st.session_state[slider_key] = axis.max_value
    st.session_state[end_key] = axis.duration_s


def window_slider(
    axis: TimeAxis, key: str, window_s: tuple[float, float], *, what: str = "Window", help: str | None = None
) -> tuple[float, float]:
    """A window of the run, (from, to) in seconds from its start; `window_s` seeds it the first time."""
    slider_key = axis.key(key)
    _keep(axis, slider_key, tuple(axis.value(t) for t in window_s))
    low, high = _draw(st, axis, slider_key, what, help)
    return axis.seconds(low), axis.to_end(axis.seconds(high))


def _draw(where, axis: TimeAxis, slider_key: str, what: str, help: str | None):
    """The slider itself (in `where`: st or a column), its value already in the session under `slider_key`."""
    return where.slider(
        axis.label(what),
        min_value=axis.min_value,
        max_value=axis.max_value,
        step=axis.step,
        format=axis.format,
        key=slider_key,
        help=help,
    )
