"""dashboard.time_slider: seconds from a run's start <-> slider values, both ways, for dated runs (UTC datetimes)
and undated ones (a unit from the start); clamping, the step to the run's end, labels and formats; and the
widgets in a headless app (seeded once, then their own state; a view of a live run's end follows the end)."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from dashboard.time_slider import TimeAxis, time_axis
from engine.store.run import UNKNOWN_START

START = datetime(2024, 3, 1, 6, 30, tzinfo=UTC)
NAIVE_START = datetime(2024, 3, 1, 6, 30)  # the slider's datetimes are naive UTC
DAY = 86_400.0


def test_a_dated_run_slides_over_naive_utc_datetimes():
    axis = time_axis(START, 2 * DAY, 60.0)
    assert axis.dated and axis.start == NAIVE_START
    assert axis.value(0.0) == NAIVE_START and axis.value(3_600.5) == datetime(2024, 3, 1, 7, 30, 0, 500_000)
    assert axis.seconds(datetime(2024, 3, 2, 6, 30)) == DAY
    assert (axis.min_value, axis.max_value) == (NAIVE_START, datetime(2024, 3, 3, 6, 30))
    assert axis.step == timedelta(minutes=1)


def test_a_start_in_another_zone_is_turned_to_utc():
    paris = timezone(timedelta(hours=1))
    axis = time_axis(datetime(2024, 3, 1, 7, 30, tzinfo=paris), DAY, 60.0)
    assert axis.start == NAIVE_START and axis.value(60.0) == datetime(2024, 3, 1, 6, 31)


@pytest.mark.parametrize(
    ("duration_s", "fmt", "label"),
    [
        (
            40.5,
            "HH:mm:ss",
            "Time on 2024-03-01 (UTC)",
        ),  # a log of seconds: to the second, the date in the label
        (3_600.0, "HH:mm:ss", "Time on 2024-03-01 (UTC)"),
        (3_601.0, "HH:mm", "Time on 2024-03-01 (UTC)"),
        (17 * 3_600.0, "HH:mm", "Time on 2024-03-01 (UTC)"),  # ends 23:30 the same day
        (18 * 3_600.0, "YYYY-MM-DD HH:mm", "Time (UTC)"),  # past midnight: the time alone would be ambiguous
        (54 * DAY, "YYYY-MM-DD HH:mm", "Time (UTC)"),
    ],
)
def test_a_dated_run_shows_the_date_when_it_spans_more_than_a_day_and_seconds_under_an_hour(
    duration_s, fmt, label
):
    axis = time_axis(START, duration_s, 1.0)
    assert axis.format == fmt and axis.label("Time") == label


def test_a_run_starting_at_midnight_and_lasting_a_day_shows_dates():
    axis = time_axis(datetime(2024, 3, 1, tzinfo=UTC), DAY, 60.0)  # 00:00 to 00:00: the two ends need dates
    assert axis.format == "YYYY-MM-DD HH:mm" and axis.label("Window") == "Window (UTC)"


@pytest.mark.parametrize(
    ("duration_s", "unit", "unit_s", "label", "fmt"),
    [
        (3 * 3_600.0 + 25 * 60, "h", 3_600.0, "Time (hours from the run's start)", "%.2f h"),
        (2 * 3_600.0, "h", 3_600.0, "Time (hours from the run's start)", "%.2f h"),
        (2 * 3_600.0 - 1, "min", 60.0, "Time (minutes from the run's start)", "%.1f min"),
        (120.0, "min", 60.0, "Time (minutes from the run's start)", "%.1f min"),
        (119.0, "s", 1.0, "Time (seconds from the run's start)", "%.1f s"),
    ],
)
def test_an_undated_run_slides_over_a_unit_from_its_start_that_follows_its_length(
    duration_s, unit, unit_s, label, fmt
):
    for started_at in (UNKNOWN_START, UNKNOWN_START.replace(tzinfo=None), None):
        axis = time_axis(started_at, duration_s, 30.0)
        assert not axis.dated and (axis.unit, axis.unit_s) == (unit, unit_s)
        assert axis.label("Time") == label and axis.format == fmt and "UTC" not in axis.label("Time")
        assert axis.value(90.0) == 90.0 / unit_s and axis.seconds(90.0 / unit_s) == pytest.approx(90.0)
        assert axis.min_value == 0.0 and axis.max_value == pytest.approx(duration_s / unit_s)
        assert axis.step == pytest.approx(30.0 / unit_s)
        assert axis.key("page_t:run") == f"page_t:run:{unit}"
    assert time_axis(START, duration_s, 30.0).key("page_t:run") == "page_t:run:utc"


def test_values_are_clamped_to_the_run():
    for axis in (time_axis(START, DAY, 60.0), time_axis(UNKNOWN_START, DAY, 60.0)):
        assert axis.seconds(axis.value(-5.0)) == 0.0
        assert axis.seconds(axis.value(DAY + 5.0)) == DAY
        assert axis.value(float("nan")) == axis.max_value  # a malformed URL read as NaN: the run's end
    dated = time_axis(START, DAY, 60.0)
    assert dated.seconds(NAIVE_START - timedelta(hours=1)) == 0.0
    assert dated.seconds(NAIVE_START + timedelta(days=2)) == DAY
    assert time_axis(UNKNOWN_START, DAY, 60.0).seconds(-1.0) == 0.0


def test_the_last_step_reaches_an_end_off_the_step_grid():
    axis = time_axis(START, 1_000.0, 60.0)  # steps at 0, 60, ..., 960: the end (1,000 s) is between two
    assert axis.to_end(960.0) == 1_000.0 and axis.to_end(940.1) == 1_000.0
    assert axis.to_end(940.0) == 940.0 and axis.to_end(0.0) == 0.0 and axis.to_end(1_000.0) == 1_000.0


def test_bad_axes_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="spans time; this one spans 0"):
        time_axis(START, 0.0, 60.0)
    with pytest.raises(ValueError, match="step must be positive"):
        time_axis(START, DAY, 0.0)
    with pytest.raises(TypeError, match="undated run"):
        time_axis(UNKNOWN_START, DAY, 60.0).seconds(NAIVE_START)


durations = st.floats(min_value=1.0, max_value=60 * DAY, allow_nan=False)


@given(durations, st.floats(min_value=0.0, max_value=1.0), st.booleans())
def test_seconds_survive_the_round_trip_through_the_slider(duration_s, share, dated):
    axis = time_axis(START if dated else UNKNOWN_START, duration_s, 60.0)
    t_s = share * duration_s
    # a datetime keeps microseconds: half of one is the most a round trip can lose
    assert axis.seconds(axis.value(t_s)) == pytest.approx(t_s, abs=5e-7 if dated else 1e-9 * duration_s)


@given(durations, st.integers(min_value=0, max_value=10**15))
def test_dated_slider_values_survive_the_round_trip_through_seconds(duration_s, microseconds):
    axis = time_axis(START, duration_s, 60.0)
    value = NAIVE_START + timedelta(microseconds=microseconds % (int(duration_s * 1e6) + 1))
    assert axis.value(axis.seconds(value)) == value


@given(durations, st.floats(min_value=0.0, max_value=1.0))
def test_undated_slider_values_survive_the_round_trip_through_seconds(duration_s, share):
    axis = time_axis(UNKNOWN_START, duration_s, 60.0)
    value = share * axis.max_value
    assert axis.value(axis.seconds(value)) == pytest.approx(value, rel=1e-12, abs=1e-12)


# ----- the widgets, headless --------------------------------------------------------------------------------


def moment_app(started_at, follow_end: bool) -> None:
    """A page with one moment slider over a run whose length the test sets in session state."""
    import streamlit as st

    from dashboard.time_slider import moment_slider, time_axis

    axis = time_axis(started_at, st.session_state["duration_s"], 60.0)
    st.session_state["shown_s"] = moment_slider(axis, "t", st.session_state["asked_s"], follow_end=follow_end)


def window_app(started_at) -> None:
    import streamlit as st

    from dashboard.time_slider import time_axis, window_slider

    axis = time_axis(started_at, st.session_state["duration_s"], 60.0)
    st.session_state["shown_s"] = window_slider(axis, "w", st.session_state["asked_s"], what="Time window")


def run_app(script, duration_s: float, asked, *args) -> AppTest:
    at = AppTest.from_function(script, args=args)
    at.session_state["duration_s"] = duration_s
    at.session_state["asked_s"] = asked
    return at.run()


@pytest.mark.parametrize("started_at", [START, UNKNOWN_START])
def test_the_moment_is_seeded_once_then_the_slider_rules(started_at):
    at = run_app(moment_app, DAY, 7_200.0, started_at, False)
    assert not at.exception and at.session_state["shown_s"] == pytest.approx(7_200.0)
    axis = time_axis(started_at, DAY, 60.0)
    at.slider[0].set_value(axis.value(3_600.0)).run()
    assert at.session_state["shown_s"] == pytest.approx(3_600.0)
    at.session_state["asked_s"] = 600.0  # a later URL value does not move a slider the user has moved
    at.run()
    assert at.session_state["shown_s"] == pytest.approx(3_600.0)


def test_a_view_of_a_live_runs_end_follows_the_end_as_the_run_grows():
    at = run_app(moment_app, 3_600.0, 3_600.0, START, True)
    assert at.session_state["shown_s"] == 3_600.0
    at.session_state["duration_s"] = 4_000.0
    at.run()
    assert at.session_state["shown_s"] == 4_000.0 and at.slider[0].value == NAIVE_START + timedelta(
        seconds=4_000
    )
    at.slider[0].set_value(NAIVE_START + timedelta(seconds=1_200)).run()  # an earlier moment stays put
    at.session_state["duration_s"] = 5_000.0
    at.run()
    assert at.session_state["shown_s"] == 1_200.0


def test_without_following_the_end_a_growing_run_keeps_the_moment():
    at = run_app(moment_app, 3_600.0, 3_600.0, START, False)
    at.session_state["duration_s"] = 4_000.0
    at.run()
    assert at.session_state["shown_s"] == 3_600.0


def test_the_window_slider_gives_seconds_and_its_upper_handle_reaches_the_end():
    at = run_app(window_app, 1_000.0, (120.0, 600.0), START)
    assert not at.exception and at.session_state["shown_s"] == (120.0, 600.0)
    assert at.slider[0].label == "Time window on 2024-03-01 (UTC)" and at.slider[0].proto.format == "HH:mm:ss"
    at.slider[0].set_value((NAIVE_START, NAIVE_START + timedelta(seconds=960))).run()  # the last step
    assert at.session_state["shown_s"] == (0.0, 1_000.0)


def test_an_undated_window_slides_over_hours_never_a_1970_date():
    at = run_app(window_app, 5 * 3_600.0, (3_600.0, 7_200.0), UNKNOWN_START)
    assert at.slider[0].label == "Time window (hours from the run's start)"
    assert at.slider[0].value == (1.0, 2.0) and at.session_state["shown_s"] == (3_600.0, 7_200.0)


def test_the_axis_is_a_plain_record():
    axis = TimeAxis(NAIVE_START, DAY, 60.0)
    assert axis == time_axis(START, DAY, 60.0) and axis.unit == "utc"
