"""The scenario's typed sections (engine.scenario.sections) hold exactly the keys of engine/scenario/keys.py, with
the Python type each key parses to, and the engine reads keys through them rather than by dotted strings."""

import re
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import get_type_hints

import pytest

from engine.scenario import build
from engine.scenario.keys import KEY_BY_NAME, MIX_PREFIX, SECTIONS
from engine.scenario.sections import SECTION_TYPES

ROOT = Path(__file__).resolve().parents[1]
# the failure mix (failures.mix.<cause>) is Scenario.mix, a map by cause, not a field each
KEYS = {name: key for name, key in KEY_BY_NAME.items() if not name.startswith(MIX_PREFIX)}
PARSED = {
    "int": int,
    "float": float,
    "duration": float,
    "bool": bool,
    "str": str,
    "choice": str,
    "datetime": datetime,
    "optional_duration": float | None,
    "optional_float": float | None,
}


def test_each_section_record_holds_exactly_its_keys_with_their_types():
    assert sorted(SECTION_TYPES) == sorted(SECTIONS)
    for section, record in SECTION_TYPES.items():
        hints = get_type_hints(record)
        keys = {n.split(".", 1)[1]: k for n, k in KEYS.items() if n.split(".")[0] == section}
        assert [f.name for f in fields(record)] == list(keys), section
        for name, key in keys.items():
            assert hints[name] == PARSED[key.kind], f"{section}.{name}: {hints[name]} for a {key.kind} key"


@pytest.mark.parametrize("preset", ["demo", "llama3-405b"])
def test_a_built_scenario_reads_the_same_through_its_sections(preset):
    scenario = build(preset, sets=["training.checkpoint_interval=30m", "repair.fix=2h"])
    for name in KEYS:
        section, key = name.split(".", 1)
        assert getattr(getattr(scenario, section), key) == scenario[name], name
    assert scenario.training.checkpoint_interval == 1800.0 and scenario.repair.fix == 7200.0
    assert isinstance(scenario.simulation.start, datetime)
    assert scenario.mix == {
        n[len(MIX_PREFIX) :]: scenario[n] for n in KEY_BY_NAME if n.startswith(MIX_PREFIX)
    }


def test_an_overridden_scenario_has_its_own_sections():
    base = build("demo")
    assert base.cluster.gpus == 512  # read once: cached on the scenario
    other = base.with_values({"cluster.gpus": 1024})
    assert (other.cluster.gpus, base.cluster.gpus) == (1024, 512)


# Literal dotted-key reads of a scenario outside engine/scenario: code that takes a key as data (a sweep's axis, a
# slider's key, TOML) indexes with a variable, never with a literal like scenario["training.gpus"].
_LITERAL = re.compile(
    r"\b(scenario|s|sc|base|self\.scenario|settings\.scenario|plan\.scenario)\["
    r'"(' + "|".join(SECTIONS) + r')\.[a-z_0-9]+"\](?!\s*=[^=])'
)


def test_the_engine_reads_scenario_keys_through_the_typed_sections():
    found = []
    for path in sorted((ROOT / "engine").rglob("*.py")):
        if path.parent.name == "scenario":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _LITERAL.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "read these through scenario.<section>.<key>:\n" + "\n".join(found)
