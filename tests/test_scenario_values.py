"""Scenario.with_values: what a page passes to the engine (values in engine units, not `--set` strings), validated
like `--set`, naming the key of every mistake."""

import math

import pytest

from engine.scenario import ScenarioError, build, from_dict


def test_values_give_the_scenario_the_same_sets_give():
    demo = build("demo")
    by_values = demo.with_values(
        {
            "training.checkpoint_interval": 1800.0,
            "training.restart_overhead": 90,
            "spares.hosts": 8,
            "failures.scale": 1.5,
            "training.checkpoint_write": None,
            "training.placement": "spread",
            "simulation.telemetry": False,
        }
    )
    by_sets = demo.with_overrides(
        [
            "training.checkpoint_interval=30m",
            "training.restart_overhead=90s",
            "spares.hosts=8",
            "failures.scale=1.5",
            'training.checkpoint_write=""',
            "training.placement=spread",
            "simulation.telemetry=false",
        ]
    )
    assert by_values.values == by_sets.values
    assert by_values.raw["training.checkpoint_interval"] == "30m"  # spelled as a person would write it


def test_a_duration_keeps_every_digit_through_toml():
    s = build("demo").with_values(
        {"training.checkpoint_interval": 1437.7123456789, "training.checkpoint_write": 0.077}
    )
    assert s["training.checkpoint_interval"] == 1437.7123456789 and s.checkpoint_write_s == 0.077
    again = from_dict(s.to_dict())  # what runs.scenario stores and a downloaded TOML holds
    assert again.values == s.values


def test_values_layer_over_the_scenario_not_the_preset():
    base = build("demo").with_values({"spares.hosts": 2})
    assert base.with_values({"repair.technicians": 5})["spares.hosts"] == 2


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (
            {"training.checkpoint_intervall": 60.0},
            "unknown scenario key 'training.checkpoint_intervall' (did you mean",
        ),
        ({"failures.mix.gpu_melted": 1.0}, "unknown cause 'gpu_melted'"),
        (
            {"training.checkpoint_interval": "30m"},
            "training.checkpoint_interval: expected seconds as a number, got '30m'",
        ),
        ({"training.restart_overhead": -5.0}, "training.restart_overhead: a duration cannot be negative"),
        ({"training.restart_overhead": math.inf}, "training.restart_overhead: expected a finite duration"),
        (
            {"training.restart_overhead": 10**400},
            "training.restart_overhead: expected a finite duration, got 1000",
        ),
        (
            {"training.checkpoint_interval": True},
            "training.checkpoint_interval: expected seconds as a number",
        ),
        ({"training.checkpoint_interval": 0.0}, "training.checkpoint_interval: must be at least 1"),
        ({"spares.hosts": "many"}, "spares.hosts: expected a whole number, got 'many'"),
        ({"failures.scale": -1.0}, "failures.scale: must be at least 0"),
        ({"training.placement": "scatter"}, "training.placement: must be one of"),
        ({"training.gpus": 1_000_000}, "training.gpus"),  # checked together with the cluster it must fit
    ],
)
def test_a_bad_key_or_value_is_named(values, words):
    with pytest.raises(ScenarioError, match="with_values|training.gpus") as err:
        build("demo").with_values(values)
    assert words in str(err.value)
