"""engine.analysis.planner: round values for the Planner's knobs and sweeps, and the spare cover that makes the cluster,
spare and repair knobs move a figure (exact on small cases, Hypothesis for the Poisson tail)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.analysis.planner import (
    DURATION_LADDER_S,
    nice_duration,
    nice_number,
    poisson_tail,
    repair_share,
    spare_cover,
)
from engine.reference import CAUSES
from engine.scenario import build
from engine.sim.failures import SCOPE


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (1437.7, 1200),
        (409.0, 300),
        (817.0, 900),
        (3267.0, 3600),
        (0.0, 0.0),
        (0.0768, 0.08),
        (1e9, 30 * 86400),
    ],
)
def test_nice_duration(seconds, expected):
    assert nice_duration(seconds) == expected


@pytest.mark.parametrize(
    ("x", "expected"),
    [(3.79 * 0.354, 1.5), (5.36, 5.0), (10.7, 10.0), (0.3, 0.3), (16.97, 15.0), (135.8, 150.0), (0.0, 0.0)],
)
def test_nice_number(x, expected):
    assert nice_number(x) == expected


@settings(max_examples=60, deadline=None)
@given(st.floats(0.001, 1e9))
def test_nice_values_are_on_their_ladders_and_within_a_factor(x):
    d = nice_duration(x)
    assert (d in DURATION_LADDER_S or x < 1) and (d / x < 2.5 and x / d < 2.5 or x > 30 * 86400)
    n = nice_number(x)
    assert 0.75 <= n / x <= 1.25 and f"{n:g}" == f"{float(f'{n:g}'):g}"


def test_poisson_tail_exact():
    assert poisson_tail(1.0, 0) == pytest.approx(1 - math.exp(-1))
    assert poisson_tail(5.0, 3) == pytest.approx(1 - math.exp(-5) * (1 + 5 + 12.5 + 125 / 6))
    assert poisson_tail(0.0, 0) == 0.0 and poisson_tail(2.0, -1) == 1.0
    assert poisson_tail(1000.0, 100_000) == 0.0 and poisson_tail(1000.0, 10) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 500.0), st.integers(0, 2000))
def test_poisson_tail_is_a_probability_that_falls_with_more_spares(mean, k):
    tail = poisson_tail(mean, k)
    assert 0.0 <= tail <= 1.0 and poisson_tail(mean, k + 1) <= tail + 1e-12


def test_spare_cover_of_llama3_by_hand():
    s = build("llama3-405b")
    weights = {c.cause: c.count for c in CAUSES}  # the preset's mix is the Llama 3 table's counts
    share = sum(w for c, w in weights.items() if SCOPE[c] != "job") / 419
    rack = 0.2 * 2 + 0.8  # a fifth of network faults take the rack's two hosts
    per = (
        sum(w for c, w in weights.items() if SCOPE[c] not in ("job", "network"))
        + weights["network_switch_cable"] * rack
    ) / sum(w for c, w in weights.items() if SCOPE[c] != "job")
    away = 120 + 900 + 4 * 3600 + 0.1 * 5 * 86400 + 2 * 3600  # drain, diagnose, fix, RMA share, burn-in
    per_host_s = s["failures.rate_per_1000_node_days"] / 1000 / 86400
    cover = spare_cover(s)
    assert cover.repair_share == pytest.approx(share) == repair_share(s)
    assert cover.hosts_per_incident == pytest.approx(per) and cover.time_away_s == away
    assert cover.hosts_away == pytest.approx(2048 * per_host_s * share * per * away)  # ~5.1 of 48 spares
    assert cover.technician_load == pytest.approx(3072 * per_host_s * share * 4 * 3600 / 8)  # ~21 %
    assert cover.spares == 48 and cover.run_out < 1e-12


def test_each_cover_knob_moves_its_figure():
    base = spare_cover(build("demo"))
    assert spare_cover(build("demo", sets=["spares.hosts=1"])).run_out > base.run_out  # fewer spares
    bigger = spare_cover(build("demo", sets=["cluster.gpus=1024"]))
    assert (
        bigger.technician_load == pytest.approx(2 * base.technician_load)
        and bigger.hosts_away == base.hosts_away
    )
    slower = spare_cover(build("demo", sets=["repair.fix=8h"]))
    assert slower.hosts_away > base.hosts_away and slower.technician_load == pytest.approx(
        2 * base.technician_load
    )
    assert spare_cover(build("demo", sets=["repair.technicians=4"])).technician_load == pytest.approx(
        base.technician_load / 2
    )


def test_an_overloaded_repair_shop_runs_out_of_spares():
    cover = spare_cover(build("demo", sets=["repair.technicians=1", "repair.fix=2d"]))
    assert cover.technician_load >= 1.0 and cover.run_out == 1.0


def test_nothing_failing_needs_no_spares():
    cover = spare_cover(build("demo", sets=["failures.scale=0"]))
    assert (cover.hosts_away, cover.run_out, cover.technician_load) == (0.0, 0.0, 0.0)
