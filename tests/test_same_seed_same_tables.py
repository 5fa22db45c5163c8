"""The same scenario and seed give the same tables, bit for bit, across refactors of the engine (issue 26):
every preset's tables and summary against digests recorded before (tests/golden_tables.py)."""

import json

import pytest

from tests.golden_tables import CASES, GOLDEN, digests


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_preset_draws_and_holds_what_it_did(case):
    expected = json.loads(GOLDEN.read_text())[case]
    got = digests(*CASES[case])
    changed = sorted(name for name in expected.keys() | got.keys() if expected.get(name) != got.get(name))
    assert not changed, (
        f"{case}: {changed} differ from tests/fixtures/golden/tables.json. A refactor must not change them; a "
        "change meant to alter runs records them anew with `python -m tests.golden_tables --write`"
    )
