import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.durations import format_duration, human_duration, parse_duration
from engine.errors import GoodputError


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("30m", 1800), ("2h", 7200), ("1d", 86400), ("1.5h", 5400), ("2w", 1209600),
    ("250ms", 0.25), ("45", 45), (" 10 min ", 600), (12, 12.0), (0.5, 0.5),
])
def test_parse(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "5x", "-3m", "1h30m", True, "m"])
def test_bad_durations_name_the_key(text):
    with pytest.raises(GoodputError, match="training.restart_overhead"):
        parse_duration(text, "training.restart_overhead")


def test_format_picks_the_largest_exact_unit():
    assert [format_duration(s) for s in (1800, 7200, 86400, 90, 0.5)] == ["30m", "2h", "1d", "90s", "0.5s"]


@given(st.integers(min_value=1, max_value=10**7))
def test_format_then_parse_round_trips(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


def test_human_duration():
    assert human_duration(3.1 * 3600) == "3.1 h"
    assert human_duration(720) == "12 min"
    assert human_duration(45) == "45 s"
    assert human_duration(3 * 86400) == "3.0 d"
