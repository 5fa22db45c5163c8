"""The presets are the TOML files in data/presets: each is a scenario file users can copy."""

from pathlib import Path

import pytest

from engine.scenario import PRESETS, build
from engine.scenario.presets import PRESETS_DIR, PresetError, read_presets


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_preset_file_run_as_a_scenario_file_is_the_preset(name):
    from_file = build(file=PRESETS_DIR / f"{name}.toml")
    assert from_file.values == build(name).values


def test_every_file_is_a_preset_and_the_first_two_lead():
    assert sorted(PRESETS) == sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))
    assert list(PRESETS)[:2] == ["demo", "llama3-405b"]


def test_each_preset_file_names_its_source_in_a_comment():
    for path in PRESETS_DIR.glob("*.toml"):
        assert path.read_text().startswith(f"# {path.stem}: "), path


def test_a_new_file_is_a_new_preset_and_a_mistyped_key_names_file_and_key(tmp_path: Path):
    (tmp_path / "small.toml").write_text("[cluster]\ngpus = 64\n[training]\ngpus = 32\n")
    assert read_presets(tmp_path) == {"small": {"cluster.gpus": 64, "training.gpus": 32}}
    (tmp_path / "typo.toml").write_text('[training]\ncheckpoint_intervall = "30m"\n')
    with pytest.raises(
        PresetError, match=r"typo\.toml: unknown scenario key 'training\.checkpoint_intervall'"
    ):
        read_presets(tmp_path)


def test_a_broken_or_missing_preset_folder_is_named(tmp_path: Path):
    with pytest.raises(PresetError, match="no preset files"):
        read_presets(tmp_path)
    (tmp_path / "bad.toml").write_text("[cluster\n")
    with pytest.raises(PresetError, match=r"bad\.toml: cannot read the preset"):
        read_presets(tmp_path)
