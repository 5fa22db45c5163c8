"""Scenario keys, presets and validation: every mistake is one error naming its key."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.reference import CAUSES, LLAMA3_RATE_PER_1000_NODE_DAYS
from engine.scenario import KEY_BY_NAME, PRESETS, ScenarioError, build, from_dict


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_builds_and_round_trips(preset):
    scenario = build(preset)
    again = from_dict(scenario.to_dict())
    assert again.values == scenario.values
    assert scenario.job_hosts + scenario["spares.hosts"] <= scenario.hosts


def test_llama3_defaults_come_from_the_reference():
    s = build("llama3-405b")
    assert s.hosts == 3072 and s.job_hosts == 2048 and s["simulation.days"] == 54
    assert s["failures.rate_per_1000_node_days"] == pytest.approx(LLAMA3_RATE_PER_1000_NODE_DAYS, abs=1e-4)
    assert s["failures.planned_per_day"] * 54 == pytest.approx(47, abs=0.01)
    assert s.mix == {c.cause: float(c.count) for c in CAUSES}
    # 0.4 GB a GPU x 16,384 GPUs over Tectonic's 2 TB/s sustained
    assert s.checkpoint_write_s == pytest.approx(0.4 * 16384 / 2000)
    assert build("llama3-405b", sets=["training.checkpoint_write=30s"]).checkpoint_write_s == 30
    assert build("rsc1")["failures.rate_per_1000_node_days"] == 6.5
    assert build("future-131k")["cluster.gpus"] == 131072


@pytest.mark.parametrize(
    ("sets", "key"),
    [
        (["nonsense.key=1"], "nonsense.key"),
        (["failures.mix.gpu_hmb3=1"], "gpu_hmb3"),
        (["failures.rate_per_1000_node_days=-1"], "failures.rate_per_1000_node_days"),
        (["training.gpus=30000"], "training.gpus"),
        (["spares.hosts=2000"], "spares.hosts"),
        (["cluster.gpus=1001"], "cluster.gpus"),
        (["failures.network_rack_share=1.5"], "failures.network_rack_share"),
        (["training.checkpoint_interval=soon"], "training.checkpoint_interval"),
        (["failures.distribution=gamma"], "failures.distribution"),
        (["simulation.days=0"], "simulation.days"),
    ],
)
def test_bad_values_name_their_key(sets, key):
    with pytest.raises(ScenarioError, match=key.replace(".", r"\.")):
        build("llama3-405b", sets=sets)


def test_a_file_names_itself_in_errors(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[failures]\nscale = "lots"\n')
    with pytest.raises(ScenarioError, match="bad.toml.*failures.scale"):
        build(file=path)


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=400), st.sampled_from(["s", "m", "h"]))
def test_durations_parse_in_every_unit(amount, unit):
    s = build("demo", sets=[f"training.checkpoint_interval={amount}{unit}"])
    assert s["training.checkpoint_interval"] == amount * {"s": 1, "m": 60, "h": 3600}[unit]


def test_every_key_has_a_doc_and_the_rack_share_key_exists():
    assert all(k.doc for k in KEY_BY_NAME.values())
    assert 0 <= build("demo")["failures.network_rack_share"] <= 1
