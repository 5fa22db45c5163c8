"""The planner's model: URL <-> knobs, knobs -> scenario (multipliers, write time or size/bandwidth), the closed
form's loss split, sweep axes, and a 131,072-GPU cluster with a 100,000-GPU job that finishes."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import planner_model as model
from dashboard.planner import sweep_params
from engine.analysis.analytics import closed_form_ettr, young_daly_interval
from engine.analysis.planner import (
    category_scale,
    closed_form_losses,
    closed_form_of,
    loss_table,
    placement_slowdown_of,
)
from engine.errors import GoodputError
from engine.reference import CAUSES
from engine.scenario import MIX_PREFIX, build, load

GPU_CAUSES = [c.cause for c in CAUSES if c.category == "GPU"]
GPU_WEIGHT = sum(c.count for c in CAUSES if c.category == "GPU")  # 268 of the Llama 3 table's 419


def test_defaults_are_the_preset():
    demo, knobs = build("demo"), model.defaults("demo")
    assert (knobs.cluster_gpus, knobs.job_gpus, knobs.rate, knobs.interval_s) == (512, 384, 40.0, 1200.0)
    assert knobs.write_mode == "storage" and knobs.write_s == pytest.approx(demo.checkpoint_write_s)
    assert (knobs.spares, knobs.technicians, knobs.repair_fix_s, knobs.gpu_hour_usd) == (4, 2, 14400.0, 2.5)
    assert knobs.multipliers == dict.fromkeys(model.CATEGORIES, 1.0)
    assert model.scenario(knobs).values == build("demo", sets=["simulation.telemetry=false"]).values


def test_url_round_trip_and_multipliers_only_when_not_one():
    knobs = model.from_params(
        {
            "preset": "rsc1",
            "gpus": "4096",
            "rate": "9.5",
            "ckpt": "time",
            "write": "30",
            "m_gpu": "2",
            "m_network": "0.5",
            "fix": "7200",
        }
    )
    assert (knobs.preset, knobs.job_gpus, knobs.rate, knobs.write_mode, knobs.write_s) == (
        "rsc1",
        4096,
        9.5,
        "time",
        30.0,
    )
    assert (
        knobs.multipliers["GPU"] == 2.0 and knobs.multipliers["Network"] == 0.5 and knobs.repair_fix_s == 7200
    )
    params = model.to_params(knobs)
    assert "m_host" not in params and params["m_gpu"] == "2"
    assert model.from_params(params) == knobs


@pytest.mark.parametrize(("text", "expected"), [("lots", 40.0), ("-5", 0.0), ("1e9", 1000.0), ("nan", 40.0)])
def test_a_bad_number_falls_back_or_clamps(text, expected):
    assert model.from_params({"preset": "demo", "rate": text}).rate == expected


def test_an_unknown_preset_falls_back_to_demo():
    assert model.from_params({"preset": "nope"}).preset == "demo"


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(model.URL_NAMES), st.text(max_size=12), max_size=6))
def test_any_url_gives_knobs_that_round_trip(params):
    knobs = model.from_params(params)
    again = model.from_params(model.to_params(knobs))
    assert model.to_params(again) == model.to_params(knobs)
    for name, _, _, _ in model.NUMERIC:
        assert getattr(again, name) == pytest.approx(getattr(knobs, name), rel=1e-9)


def test_large_whole_numbers_keep_every_digit():
    assert (
        model.to_params(model.from_params({"preset": "demo", "cluster": "1048576"}))["cluster"] == "1048576"
    )


def test_a_category_multiplier_scales_its_causes_and_the_rate():
    knobs = model.from_params({"preset": "llama3-405b", "m_gpu": "2"})
    scale = (419 + GPU_WEIGHT) / 419
    assert category_scale(model.base_weights("llama3-405b"), knobs.multipliers) == pytest.approx(scale)
    s = model.scenario(knobs)
    base = build("llama3-405b")
    for cause in CAUSES:
        factor = 2.0 if cause.category == "GPU" else 1.0
        assert s[MIX_PREFIX + cause.cause] == pytest.approx(base[MIX_PREFIX + cause.cause] * factor)
    assert s["failures.scale"] == pytest.approx(scale)
    assert model.effective_rate(knobs) == pytest.approx(base["failures.rate_per_1000_node_days"] * scale)
    assert model.closed_form(knobs).ettr == pytest.approx(closed_form_of(s).ettr)
    # every category at 0: nothing fails, and the scenario is still valid
    none = model.from_params({"preset": "demo", **dict.fromkeys(model.CATEGORIES.values(), "0")})
    assert model.scenario(none)["failures.scale"] == 0.0 and math.isinf(model.closed_form(none).mttf_s)


def test_write_time_or_size_and_bandwidth():
    storage = model.from_params({"preset": "demo", "ckpt": "storage", "gb": "2", "bw": "100"})
    assert model.write_seconds(storage) == pytest.approx(2 * 384 / 100)
    assert model.scenario(storage).checkpoint_write_s == pytest.approx(7.68)
    timed = model.from_params({"preset": "demo", "ckpt": "time", "write": "45"})
    assert model.write_seconds(timed) == 45.0 and model.scenario(timed).checkpoint_write_s == 45.0


def test_settings_that_do_not_fit_name_the_key():
    with pytest.raises(GoodputError, match="training.gpus"):
        model.scenario(model.from_params({"preset": "demo", "gpus": "1024"}))
    with pytest.raises(GoodputError, match="spares.hosts"):
        model.scenario(model.from_params({"preset": "demo", "spares": "30"}))


def test_the_toml_reloads_to_the_same_scenario(tmp_path):
    knobs = model.from_params(
        {
            "preset": "rsc1",
            "m_host": "3",
            "ckpt": "time",
            "write": "12",
            "price": "4.2",
            "cluster": "32000",
            "techs": "5",
        }
    )
    s = model.scenario(knobs)
    path = tmp_path / "planner.toml"
    path.write_text(s.to_toml())
    again = load(path)
    assert again.preset == "rsc1" and again.values == s.values


def test_closed_form_losses_exact():
    # one host failing once a day: lambda = 1/86400 s; T = 1 h, w = 36 s, R = 30 min, one day, 8 GPUs
    estimate = closed_form_ettr(
        gpus=8,
        rate_per_1000_node_days=1000.0,
        checkpoint_interval_s=3600.0,
        checkpoint_write_s=36.0,
        restart_overhead_s=1800.0,
    )
    frame = closed_form_losses(
        estimate,
        gpus=8,
        interval_s=3600.0,
        write_s=36.0,
        restart_s=1800.0,
        duration_s=86400.0,
        gpu_hour_usd=2.0,
    )
    hours = dict(zip(frame["category"], frame["gpu_hours"], strict=True))
    assert hours["lost_work"] == pytest.approx(4.0) and hours["restart"] == pytest.approx(4.0)
    assert hours["checkpoint"] == pytest.approx(184 * 0.01 / 1.01) and hours["waiting_for_spares"] == 0.0
    productive = 192.0 - sum(hours.values())
    assert productive == pytest.approx(192.0 * estimate.ettr)  # the split adds up to the closed form's ETTR
    assert frame["usd"].to_list() == pytest.approx([2.0 * h for h in frame["gpu_hours"]])


def test_closed_form_losses_when_failures_outrun_progress():
    estimate = closed_form_ettr(
        gpus=8,
        rate_per_1000_node_days=100_000.0,
        checkpoint_interval_s=3600.0,
        checkpoint_write_s=36.0,
        restart_overhead_s=1800.0,
    )
    assert estimate.ettr == 0.0
    frame = closed_form_losses(
        estimate,
        gpus=8,
        interval_s=3600.0,
        write_s=36.0,
        restart_s=1800.0,
        duration_s=86400.0,
        gpu_hour_usd=1.0,
    )
    assert frame["gpu_hours"].to_list() == pytest.approx(
        [96.0, 96.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    )  # T/2 = R: half each


def test_closed_form_losses_take_the_placements_slowdown_from_training_time():
    estimate = closed_form_ettr(
        gpus=8,
        rate_per_1000_node_days=1000.0,
        checkpoint_interval_s=3600.0,
        checkpoint_write_s=36.0,
        restart_overhead_s=1800.0,
    )
    frame = closed_form_losses(
        estimate,
        gpus=8,
        interval_s=3600.0,
        write_s=36.0,
        restart_s=1800.0,
        duration_s=86400.0,
        gpu_hour_usd=2.0,
        slowdown=1.25,
    )
    hours = dict(zip(frame["category"], frame["gpu_hours"], strict=True))
    # training time 192 x ETTR, of which 1 - 1/1.25 = 20 % makes no progress
    assert hours["network_slowdown"] == pytest.approx(192.0 * estimate.ettr * 0.2)
    assert 192.0 - sum(hours.values()) == pytest.approx(192.0 * estimate.ettr / 1.25)


def test_loss_table_puts_the_simulation_beside_the_closed_form():
    s = build("demo")
    summary = {
        "job": {
            "losses_gpu_hours": {
                "lost_work": 10.0,
                "restart": 20.0,
                "checkpoint": 1.0,
                "waiting_for_spares": 5.0,
            },
            "losses_usd": {"lost_work": 25.0, "restart": 50.0, "checkpoint": 2.5, "waiting_for_spares": 12.5},
        }
    }
    table = loss_table(summary, s)
    assert table["category"].to_list()[-1] == "network_slowdown"
    assert table["sim_gpu_hours"].to_list() == [
        10.0,
        20.0,
        1.0,
        5.0,
        0.0,
        0.0,
        0.0,
    ]  # no degraded, no fail-slow slowdown, no placement_slowdown
    assert table["sim_usd"].to_list() == [25.0, 50.0, 2.5, 12.5, 0.0, 0.0, 0.0]
    slowed = {"job": {**summary["job"], "gpus": 384, "productive_hours": 10.0, "placement_slowdown": 1.25}}
    table = loss_table(slowed, s)
    assert table["sim_gpu_hours"][-1] == pytest.approx(
        10.0 * 384 * 0.2
    )  # a fifth of the training made nothing
    assert table["sim_usd"][-1] == pytest.approx(10.0 * 384 * 0.2 * 2.5) and table["cf_gpu_hours"][-1] > 0
    rate = 48 * 40.0 / 1000 / 86400  # 48 hosts at 40 per 1,000 host-days
    assert table["cf_gpu_hours"][1] == pytest.approx(rate * 600 * 384 * 7 * 24)


def test_sweep_values_parse_and_validate():
    s = build("demo")
    axis, numbers = sweep_params.parse_values(s, "training.checkpoint_interval", "10m, 20m,1h")
    assert axis.values == ("10m", "20m", "1h") and numbers == [600.0, 1200.0, 3600.0]
    axis, numbers = sweep_params.parse_values(s, "training.checkpoint_write", "30s,1m")
    assert axis.values == ('"30s"', '"1m"') and numbers == [30.0, 60.0]
    with pytest.raises(GoodputError, match="twice"):
        sweep_params.parse_values(s, "spares.hosts", "1,1")
    with pytest.raises(GoodputError, match="spares.hosts"):
        sweep_params.parse_values(s, "spares.hosts", "1,x")
    with pytest.raises(GoodputError, match="at least one"):
        sweep_params.parse_values(s, "spares.hosts", " , ")


@pytest.mark.parametrize("param", sweep_params.SWEEP_PARAMS, ids=lambda p: p.key)
def test_default_values_are_four_valid_values(param):
    s = build("demo")
    axis, numbers = sweep_params.parse_values(s, param.key, sweep_params.default_values(s, param.key))
    assert 2 <= len(numbers) <= 4 and numbers == sorted(numbers)


def test_default_intervals_straddle_the_young_daly_optimum():
    s = build("llama3-405b", sets=['training.checkpoint_write="60s"'])
    optimum = young_daly_interval(60.0, closed_form_of(s).mttf_s)
    _, numbers = sweep_params.parse_values(
        s, "training.checkpoint_interval", sweep_params.default_values(s, "training.checkpoint_interval")
    )
    assert numbers[1] < optimum < numbers[2]  # 19.3 min between 15 min and 30 min
    assert numbers == [300.0, 900.0, 1800.0, 3600.0]  # round values (the issue: not 1,437.7 s)


def test_default_values_are_round():
    s = build("llama3-405b")
    assert (
        sweep_params.default_values(s, "training.checkpoint_interval") == "2m,3m,5m,15m"
    )  # Young-Daly ~4.5 min
    assert sweep_params.default_values(s, "training.checkpoint_write") == "1s,2s,5s,10s"  # ~3.3 s
    assert sweep_params.default_values(s, "training.restart_overhead") == "3m,10m,15m,30m"
    assert sweep_params.default_values(s, "failures.rate_per_1000_node_days") == "1.5,2.5,5,10"  # around 3.79
    assert sweep_params.default_values(s, "spares.hosts") == "15,30,60,150"
    assert sweep_params.default_values(s, "repair.fix") == "90m,3h,6h,12h"
    assert sweep_params.default_values(build("demo"), "training.checkpoint_write") == "0.025s,0.05s,0.1s,0.2s"


def test_young_daly_curve_follows_the_row_settings():
    s = build("llama3-405b", sets=['training.checkpoint_write="60s"'])
    flat = sweep_params.young_daly_curve(s, "training.restart_overhead", ("5m", "20m"))
    assert flat[0] == flat[1]
    bent = sweep_params.young_daly_curve(s, "failures.rate_per_1000_node_days", ("1", "4"))
    assert bent[0] == pytest.approx(
        2 * bent[1]
    )  # sqrt(2 w / (N lambda)): four times the rate, half the interval
    assert sweep_params.young_daly_curve(s, "failures.rate_per_1000_node_days", ("0",)) == [math.inf]


def test_processes_only_where_they_pay_off(monkeypatch):
    monkeypatch.setattr(model, "usable_cores", lambda: 8)
    assert model.executor_for(3).workers == 1 and model.executor_for(40).workers is None
    assert model.executor_for(100, 0.02).workers == 1  # 2 s of work: a pool would take longer to start
    assert model.executor_for(100, 1.0).workers is None
    monkeypatch.setattr(model, "usable_cores", lambda: 1)
    assert model.executor_for(100, 1.0).workers == 1


def test_seconds_per_run_times_one_run():
    assert 0.0 < model.seconds_per_run(build("demo")) < 30.0


def test_a_131k_cluster_and_a_100k_job_finish():
    from engine.twin.simulate import simulate

    knobs = model.from_params({"preset": "llama3-405b", "cluster": "131072", "gpus": "100000"})
    s = model.scenario(knobs)
    assert (s["cluster.gpus"], s["training.gpus"], s.job_hosts) == (131072, 100000, 12500)
    run = simulate(s, summary_only=True)  # its speed is bench/bench_simulate.py's, not a test's
    assert run.summary["job"]["gpus"] == 100000 and 0.0 <= run.summary["job"]["ettr"] <= 1.0
    assert run.summary["interruptions"]["unexpected"] > 0


def test_placement_and_network_demand_reach_the_scenario_and_its_slowdown():
    knobs = model.from_params({"preset": "llama3-405b", "place": "spread", "gbps": "100"})
    assert (knobs.placement, knobs.gbps_per_gpu) == ("spread", 100.0)
    assert model.from_params(model.to_params(knobs)) == knobs
    s = model.scenario(knobs)
    assert s["training.placement"] == "spread" and s["network.gbps_per_gpu"] == 100.0
    # 256 job hosts a pod, every ring hop leaving its pod: 256 x 8 x 100 Gbps up against 192 x 16 x 400 / 7
    assert placement_slowdown_of(s) == pytest.approx(256 * 8 * 100 / (192 * 16 * 400 / 7))
    assert (
        placement_slowdown_of(model.scenario(model.from_params({"preset": "llama3-405b", "gbps": "100"})))
        == 1.0
    )
    assert (
        model.from_params({"preset": "demo", "place": "scatter"}).placement == "pack"
    )  # unknown: the preset's


def test_the_knobs_scenario_is_the_one_the_set_strings_gave():
    """Knobs reach the engine as values (Scenario.with_values), no longer as `--set` strings: the same scenario."""
    knobs = model.from_params(
        {
            "preset": "demo",
            "interval": "1800",
            "restart": "90",
            "spares": "2",
            "rate": "30",
            "m_gpu": "2",
            "m_network": "0.5",
            "ckpt": "storage",
            "gb": "2",
            "bw": "500",
        }
    )
    weights = model.base_weights("demo")
    category = {c.cause: c.category for c in CAUSES}
    mix = [
        f"{MIX_PREFIX}{cause}={w * knobs.multipliers[category[cause]]:g}"
        for cause, w in weights.items()
        if knobs.multipliers[category[cause]] != 1.0
    ]
    old = build(
        "demo",
        sets=[
            "cluster.gpus=512",
            "training.gpus=384",
            "failures.rate_per_1000_node_days=30",
            f"failures.scale={category_scale(weights, knobs.multipliers):.12g}",
            "training.checkpoint_interval=1800s",
            "training.restart_overhead=90s",
            "spares.hosts=2",
            "repair.fix=14400s",
            "repair.technicians=2",
            "cost.gpu_hour_usd=2.5",
            "training.placement=pack",
            "network.gbps_per_gpu=25",
            'training.checkpoint_write=""',
            "storage.checkpoint_gb_per_gpu=2",
            "storage.bandwidth_gb_per_s=500",
            *mix,
            "simulation.telemetry=false",
        ],
    )
    new = model.scenario(knobs)
    assert new.values.keys() == old.values.keys()
    assert all(
        new[k] == pytest.approx(old[k]) if isinstance(old[k], float) else new[k] == old[k] for k in old.values
    )
    assert new.checkpoint_write_s == model.write_seconds(knobs) == pytest.approx(2 * 384 / 500)
