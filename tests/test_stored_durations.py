"""Scenarios stored by an earlier Goodput hold bare seconds ("telemetry_resolution": 60): pages that read a
stored run's scenario still read them, while anything typed now must give a unit (engine.scenario.durations)."""

import pytest

from dashboard.queries.gpus import repair_rule, sample_resolution
from dashboard.queries.racks import sample_interval_s
from engine.errors import GoodputError
from engine.scenario.durations import parse_duration


def test_pages_read_bare_seconds_of_a_stored_scenario():
    old = {
        "simulation": {"telemetry_resolution": 60},
        "repair": {"lemon_failures": 3, "lemon_window": 604800},
    }
    assert sample_interval_s(old) == 60.0
    assert sample_resolution("simulate", old) == 60.0
    assert repair_rule(old) == (3, 604800.0)
    new = {
        "simulation": {"telemetry_resolution": "5m"},
        "repair": {"lemon_failures": 2, "lemon_window": "1d"},
    }
    assert (sample_interval_s(new), sample_resolution("simulate", new), repair_rule(new)) == (
        300.0,
        300.0,
        (2, 86400.0),
    )


def test_typed_durations_still_need_a_unit():
    with pytest.raises(GoodputError, match="unit"):
        parse_duration("60", "simulation.telemetry_resolution")
