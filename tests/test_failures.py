"""Failure arrivals: rates, the cause mix, XIDs, scopes, late detection, Weibull ageing, planned stops."""

import numpy as np
import pytest

from engine.analysis.analytics import chi_square_pvalue
from engine.reference import CAUSES, XID_BY_CODE
from engine.scenario import build
from engine.sim.failures import CAUSE_KEYS, COMPONENT, NO_XID, SCOPE, XIDS_OF, draw_arrivals, draw_planned


def _arrivals(*sets, seed=1, hosts=3072):
    scenario = build("llama3-405b", sets=list(sets))
    return scenario, draw_arrivals(scenario, hosts, np.random.default_rng(seed))


def test_every_cause_has_a_scope_and_gpu_causes_log_catalogued_xids():
    assert set(SCOPE) == set(CAUSE_KEYS) == {c.cause for c in CAUSES} == set(COMPONENT)
    for cause, options in XIDS_OF.items():
        assert SCOPE[cause] == "gpu"
        # each one stops the job: none of them is one the driver merely notes (action "ignore")
        assert all(code in XID_BY_CODE and XID_BY_CODE[code].action != "ignore" for code, _ in options)
        assert sum(weight for _, weight in options) == pytest.approx(1.0)
    assert XIDS_OF["faulty_gpu"][0][0] == 79  # falls off the bus: Meta's most frequent mode


def test_total_rate_matches_per_1000_host_days():
    # 3.79 per 1,000 host-days x 3,072 hosts x 54 days = 629 expected; 8 seeds pooled: sd ~ 1.3%
    scenario, _ = _arrivals()
    expected = scenario["failures.rate_per_1000_node_days"] / 1000 * 3072 * 54
    counts = [len(_arrivals(seed=s)[1]) for s in range(8)]
    assert np.mean(counts) == pytest.approx(expected, rel=0.04)
    assert len(_arrivals("failures.scale=2")[1]) == pytest.approx(2 * expected, rel=0.1)
    assert len(_arrivals("failures.scale=0")[1]) == 0


def test_cause_mix_follows_the_llama3_counts():
    _, a = _arrivals("failures.scale=20")  # ~12,600 arrivals
    observed = np.bincount(a.cause, minlength=len(CAUSE_KEYS))
    weights = np.array([c.count for c in CAUSES], dtype=float)
    expected = weights / weights.sum() * observed.sum()
    assert chi_square_pvalue(observed, expected) > 0.01


def test_a_zero_weight_hands_its_share_to_the_others():
    _, a = _arrivals("failures.mix.faulty_gpu=0", "failures.scale=5")
    assert not (a.cause == CAUSE_KEYS.index("faulty_gpu")).any()
    scenario, _ = _arrivals()
    expected = scenario["failures.rate_per_1000_node_days"] * 5 / 1000 * 3072 * 54
    assert len(a) == pytest.approx(expected, rel=0.06)


def test_xids_scope_and_late_detection():
    scenario, a = _arrivals("failures.scale=10")
    for i, cause in enumerate(CAUSE_KEYS):
        mine = a.cause == i
        codes = set(a.xid[mine].tolist())
        if cause in XIDS_OF:
            assert codes <= {c for c, _ in XIDS_OF[cause]} and len(codes) == len(XIDS_OF[cause])
        else:
            assert codes <= {NO_XID}
        delay = a.detected_s[mine] - a.fault_s[mine]
        want = {"silent_data_corruption": 3600.0, "nccl_watchdog_timeout": 600.0}.get(cause, 0.0)
        assert np.allclose(delay, want)
    faulty = a.xid[a.cause == CAUSE_KEYS.index("faulty_gpu")]
    assert (faulty == 79).mean() == pytest.approx(0.6, abs=0.05)
    net = a.cause == CAUSE_KEYS.index("network_switch_cable")
    assert a.rack_wide[net].mean() == pytest.approx(scenario["failures.network_rack_share"], abs=0.06)
    assert not a.rack_wide[~net].any()
    assert (np.diff(a.detected_s) >= 0).all() and (a.detected_s < scenario.duration_s).all()
    assert ((a.gpu_index >= 0) & (a.gpu_index < 8)).all()


def test_same_seed_same_arrivals():
    _, a = _arrivals(seed=5)
    _, b = _arrivals(seed=5)
    _, c = _arrivals(seed=6)
    assert np.array_equal(a.fault_s, b.fault_s) and np.array_equal(a.cause, b.cause)
    assert not np.array_equal(a.fault_s[:10], c.fault_s[:10])


def test_weibull_keeps_the_mean_rate_and_front_loads_failures_below_shape_one():
    # a renewal process with mean gap 1/r: over a long run the count approaches hosts x r x T
    scenario, a = _arrivals(
        "failures.distribution=weibull",
        "failures.weibull_shape=0.7",
        "simulation.days=2000",
        "simulation.telemetry=false",
        hosts=200,
    )  # 2,000 days of hourly samples: over the limit
    expected = scenario["failures.rate_per_1000_node_days"] / 1000 * 200 * 2000
    assert len(a) == pytest.approx(expected, rel=0.08)
    # infant mortality: in a 54-day run, more failures in the first half than in the second
    _, short = _arrivals("failures.distribution=weibull", "failures.weibull_shape=0.5", "failures.scale=10")
    half = 27 * 86400
    assert (short.fault_s < half).sum() > 1.2 * (short.fault_s >= half).sum()
    _, flat = _arrivals("failures.scale=10")
    assert (flat.fault_s < half).sum() == pytest.approx((flat.fault_s >= half).sum(), rel=0.1)


def test_planned_interruptions_average_47_in_54_days():
    scenario = build("llama3-405b")
    counts = [draw_planned(scenario, np.random.default_rng(s)).size for s in range(40)]
    assert np.mean(counts) == pytest.approx(47, rel=0.05)  # sd of the mean: 6.9 / sqrt(40) = 1.1
    times = draw_planned(scenario, np.random.default_rng(0))
    assert (np.diff(times) >= 0).all() and times.max() < scenario.duration_s
