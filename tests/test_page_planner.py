"""Planner page: knobs start from a preset, the closed form follows them at once, the URL keeps them, and the
simulator runs with a progress bar and is stored only on "Keep as run"."""

import pytest
from test_charts_pages import open_page

from dashboard.charts.common import fmt_pct
from engine.analytics import closed_form_ettr
from engine.scenario import build
from engine.store import Store

PAGE = "app_pages/planner.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def knob(at, label):
    return next(n for n in at.number_input if n.label == label)


def test_starts_from_the_demo_preset_and_shows_its_closed_form(store_dir):
    at = open_page(PAGE)  # works without any run in the store
    assert not at.exception
    demo = build("demo")
    assert at.selectbox[0].value == "demo"
    assert knob(at, "Job GPUs").value == 384
    assert knob(at, "Checkpoint interval (min)").value == 20.0
    expected = closed_form_ettr(gpus=384, rate_per_1000_node_days=40.0, checkpoint_interval_s=1200.0,
                                checkpoint_write_s=demo.checkpoint_write_s,
                                restart_overhead_s=demo["training.restart_overhead"])
    assert metrics(at)["ETTR"] == fmt_pct(expected.ettr)
    assert at.query_params["preset"] == "demo" and at.query_params["gpus"] == "384"


def test_telemetry_is_offered_only_where_it_stays_small(store_dir):
    at = open_page(PAGE, {"preset": "demo"})  # 512 GPUs x 7 days at 15 min: 344,064 samples
    assert not at.checkbox[0].disabled
    at.selectbox[0].set_value("llama3-405b").run()  # 24,576 GPUs x 54 days at 1 h: 31.9 million
    assert at.checkbox[0].disabled


def test_a_knob_moves_the_closed_form_and_the_url(store_dir):
    at = open_page(PAGE, {"preset": "llama3-405b", "interval": "1800", "write": "60", "restart": "600",
                          "rate": "3.79", "gpus": "16384"})
    assert not at.exception
    expected = closed_form_ettr(gpus=16384, rate_per_1000_node_days=3.79, checkpoint_interval_s=1800.0,
                                checkpoint_write_s=60.0, restart_overhead_s=600.0)
    m = metrics(at)
    assert m["ETTR"] == fmt_pct(expected.ettr) and m["Job MTTF"] == "3.1 h"
    knob(at, "Failures / 1,000 host-days").set_value(7.58).run()  # twice the rate
    assert not at.exception and at.query_params["rate"] == "7.58"
    doubled = closed_form_ettr(gpus=16384, rate_per_1000_node_days=7.58, checkpoint_interval_s=1800.0,
                               checkpoint_write_s=60.0, restart_overhead_s=600.0)
    assert metrics(at)["ETTR"] == fmt_pct(doubled.ettr) and metrics(at)["Job MTTF"] == "1.5 h"


def test_changing_the_preset_resets_the_knobs(store_dir):
    at = open_page(PAGE, {"preset": "demo", "gpus": "64"})
    assert knob(at, "Job GPUs").value == 64
    at.selectbox[0].set_value("rsc1").run()
    assert not at.exception
    assert knob(at, "Job GPUs").value == 8192 and at.query_params["gpus"] == "8192"


@pytest.mark.parametrize("value", ["lots", "-5"])
def test_a_bad_knob_in_the_url_falls_back_or_clamps(store_dir, value):
    at = open_page(PAGE, {"preset": "demo", "rate": value})
    assert not at.exception
    assert knob(at, "Failures / 1,000 host-days").value == (40.0 if value == "lots" else 0.0)


def test_run_simulation_then_keep_as_run(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    run_button = next(b for b in at.button if b.label == "Run simulation")
    run_button.click().run()
    assert not at.exception
    m = metrics(at)
    assert m["Simulated ETTR"].endswith("%") and "vs closed form" in str(at.metric[-4].delta)
    assert Store(store_dir).list_runs() == []  # nothing stored yet
    losses = next(d.value for d in at.dataframe if "loss" in d.value.columns)
    assert "Restart overhead" in losses["loss"].tolist()
    next(b for b in at.button if b.label == "Keep as run").click().run()
    assert not at.exception
    [kept] = Store(store_dir).list_runs()
    assert kept.name == "planner · demo" and kept.summary["job"]["ettr"] is not None
    assert any(s.value.startswith(f"Kept as run {kept.run_id}") for s in at.success)


def test_every_change_of_a_knob_counts(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    for gpus in (64, 128, 256):
        knob(at, "Job GPUs").set_value(gpus).run()
        assert at.query_params["gpus"] == str(gpus)
    knob(at, "Restart overhead (min)").set_value(5.0).run()
    assert at.query_params["restart"] == "300" and at.query_params["gpus"] == "256"
