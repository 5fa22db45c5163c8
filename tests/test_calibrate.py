"""The twin learns a run (engine.twin.calibrate): rates with exact intervals that cover the truth, a scenario file
that runs, honest limits, clear errors (issue 23, first part: the fit)."""

import math
import tomllib

import numpy as np
import pytest

from engine.analysis.analytics import gamma_quantile
from engine.errors import GoodputError
from engine.scenario import build, load
from engine.scenario.keys import MIX_PREFIX
from engine.store import Store
from engine.twin.calibrate import RUN_KEY, calibrate
from engine.twin.fit_repair import kaplan_meier_quantiles
from engine.twin.simulate import simulate

# a known truth unlike the defaults: a high rate and a changed cause mix
TRUTH = [
    "simulation.days=30",
    "simulation.telemetry=false",
    "failures.rate_per_1000_node_days=60",
    "failures.mix.faulty_gpu=10",
    "failures.mix.software_bug=6",
    "failures.mix.gpu_hbm3=2",
]


@pytest.fixture(scope="module")
def fits(tmp_path_factory):
    """20 fixed seeds of the known truth, each simulated, stored and calibrated."""
    store = Store(tmp_path_factory.mktemp("calibrate") / "store")
    out = []
    for seed in range(20):
        scenario = build("demo", sets=[*TRUTH, f"simulation.seed={seed}"])
        run_id = store.write_run(simulate(scenario))
        out.append((scenario, calibrate(store, run_id), store, run_id))
    return out


def test_the_rate_interval_covers_the_truth_in_85_percent_of_seeds(fits):
    covered = [
        fit.keys[RUN_KEY].low <= s.failures.rate_per_1000_node_days <= fit.keys[RUN_KEY].high
        for s, fit, *_ in fits
    ]
    assert sum(covered) >= 17, covered  # 85 % of 20; nominal 90 %
    assert all(fit.keys[RUN_KEY].n >= 30 for _, fit, *_ in fits)


def test_the_mix_intervals_cover_the_truth_for_causes_with_ten_events(fits):
    pairs = [
        (fit.keys[MIX_PREFIX + c], w / sum(s.mix.values()))
        for s, fit, *_ in fits
        for c, w in s.mix.items()
        if fit.keys[MIX_PREFIX + c].n >= 10
    ]
    assert len(pairs) >= 40
    covered = sum(e.low <= truth <= e.high for e, truth in pairs)
    assert covered >= 0.8 * len(pairs), (covered, len(pairs))


def test_rare_causes_are_fitted_and_unseen_ones_are_zeros_with_an_upper_bound(fits):
    """Issue 44: a cause seen a few times is fitted from its own events, and one never seen is a fitted zero with
    its upper bound, said, not the default's rate."""
    _, fit, *_ = fits[0]
    mix = {k: e for k, e in fit.keys.items() if k.startswith(MIX_PREFIX)}
    rare = [e for e in mix.values() if 0 < e.n < 5]
    never = {k: e for k, e in mix.items() if e.n == 0}
    assert rare and all(e.source.startswith("run ") and e.low < e.value < e.high for e in rare)
    assert never and all(e.value == 0.0 and e.low == 0.0 and e.high > 0 for e in never.values())
    words = next(w for w in fit.warnings if "never seen" in w)
    assert all(k.removeprefix(MIX_PREFIX) in words for k in never)
    common = fit.keys[MIX_PREFIX + "faulty_gpu"]
    assert common.n >= 5 and common.source.startswith("run ")


def test_too_few_failures_in_all_shrink_the_rate_toward_the_default(tmp_path):
    store = Store(tmp_path / "store")
    quiet = build("demo", sets=["simulation.days=7", "simulation.telemetry=false", "failures.scale=0.15"])
    fit = calibrate(store, store.write_run(simulate(quiet)))
    rate = fit.keys[RUN_KEY]
    assert 0 < rate.n < 5 and rate.source == "prior"
    assert any("shrunk toward the default" in w for w in fit.warnings)
    assert not any(k.startswith(MIX_PREFIX) for k in fit.keys)  # the default's mix


def test_shape_and_exposure_are_the_clusters(fits):
    scenario, fit, *_ = fits[0]
    assert fit.keys["cluster.gpus"].value == scenario.cluster.gpus
    assert fit.keys["cluster.gpus_per_host"].value == scenario.cluster.gpus_per_host
    assert fit.keys["training.gpus"].value == scenario.training.gpus
    # hosts in repair are not exposure: less than every host over every day, but most of it
    whole = scenario.hosts * scenario.simulation.days
    assert 0.8 * whole < fit.exposure_host_days < whole


def test_the_scenario_file_reads_back_and_runs(fits, tmp_path):
    _, fit, store, run_id = fits[0]
    text = fit.to_toml()
    assert f"fitted to run {run_id}" in text
    assert "n=" in text and "90 % interval" in text
    # every key says where its value came from: fitted, or the default and not fitted
    keyed = [line for line in text.splitlines() if line and not line.startswith(("#", "["))]
    assert keyed and all("  # " in line for line in keyed)
    assert "default (engine/scenario/keys.py), not fitted" in text
    assert set(fit.assumed()) >= {"repair.lemon_failures", "simulation.seed"}
    path = tmp_path / "fitted.toml"
    path.write_text(text)
    scenario = load(path, sets=["simulation.days=2"])
    assert scenario.failures.rate_per_1000_node_days == pytest.approx(fit.keys[RUN_KEY].value)
    assert simulate(scenario, summary_only=True).summary["gpus"] == fit.keys["cluster.gpus"].value
    document = fit.to_json()
    assert set(document) >= {"run_id", "window", "exposure_host_days", "keys", "assumed", "warnings"}
    assert document["assumed"]["repair.lemon_window"] == {"value": "14d", "source": "default"}
    assert document["window"]["days"] == 30
    assert {RUN_KEY, *(MIX_PREFIX + c for c in build("demo").mix)} <= set(document["keys"])
    assert set(document["keys"][RUN_KEY]) == {"value", "low", "high", "n", "source"}
    tomllib.loads(text)


def test_a_short_window_warns_and_a_window_outside_the_run_is_refused(fits):
    _, _, store, run_id = fits[0]
    short = calibrate(store, run_id, since="2d", until="5d")
    assert short.window.days == pytest.approx(3) and any("under a week" in w for w in short.warnings)
    with pytest.raises(GoodputError, match="not inside the run"):
        calibrate(store, run_id, since="20d", until="40d")
    with pytest.raises(GoodputError, match="--since"):
        calibrate(store, run_id, since="yesterday")
    with pytest.raises(GoodputError):
        calibrate(store, "sim-nope")


def test_no_failure_gives_an_upper_bound_not_zero(tmp_path):
    store = Store(tmp_path / "store")
    quiet = build("demo", sets=["simulation.days=10", "simulation.telemetry=false", "failures.scale=0"])
    fit = calibrate(store, store.write_run(simulate(quiet)))
    e = fit.keys[RUN_KEY]
    assert e.n == 0 and e.low == 0.0 and e.source == "prior"
    # one-sided 90 %: -ln(0.1) events over the exposure
    assert e.high == pytest.approx(1000 * math.log(10) / fit.exposure_host_days, rel=1e-6)
    assert any("at most" in w for w in fit.warnings)


def test_kaplan_meier_quantiles_of_a_censored_sample():
    # events at 1, 2, 4; censored at 3 and 5: S(1)=4/5, S(2)=3/5, S(4)=3/5*1/2=0.3
    durations = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    observed = np.array([True, True, False, True, False])
    assert kaplan_meier_quantiles(durations, observed, (0.2, 0.5, 0.9)) == [1.0, 4.0, None]


@pytest.mark.parametrize(
    ("shape", "p", "expected"),
    [(1.0, 0.9, math.log(10)), (10.0, 0.05, 5.4254), (11.0, 0.95, 16.9622), (0.5, 0.5, 0.454936 / 2)],
)
def test_gamma_quantile(shape, p, expected):
    assert gamma_quantile(shape, p) == pytest.approx(expected, rel=1e-4)
