"""The ledger of definitions (engine/analysis/definitions): one label a figure, docs/definitions.md generated from it,
the Definitions page and `goodput definitions` showing the same, every help linking to its definition."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis.definitions import DEFINITIONS, PAGE_PATH, SECTIONS, by_label, definition, markdown

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "dashboard" / "streamlit_app.py")


def test_docs_page_is_the_registry():
    # regenerate with: goodput definitions --markdown > docs/definitions.md
    assert (ROOT / "docs" / "definitions.md").read_text() == markdown()


def test_labels_are_unique_and_each_help_links_to_its_own_heading():
    labels = [d.label for d in DEFINITIONS.values()]
    assert len(labels) == len(set(labels))
    for d in DEFINITIONS.values():
        assert d.help.startswith(d.means) and d.help.endswith(f"]({PAGE_PATH}#{d.anchor})"), d.key
        assert f'<a id="{d.anchor}"></a>{d.label}' in markdown()
        assert by_label(d.label) is d
    assert by_label("no such figure") is None


def test_the_words_of_the_issue_name_different_figures():
    # DESIGN: "interruptions" are the flagship job's; the cluster's are "incidents"
    assert definition("interruptions").label != definition("incidents").label
    assert definition("utilisation_by_allocation").label != definition("utilisation_by_progress").label
    assert definition("goodput_lost").label != definition("incident_gpu_hours_lost").label
    assert "incidents" in definition("interruptions").not_to_confuse
    with pytest.raises(KeyError, match="no definition 'nope'"):
        definition("nope")


def test_cli_prints_the_same_definitions():
    run = subprocess.run(
        [sys.executable, "-m", "engine.cli", "definitions", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    printed = json.loads(run.stdout)
    assert [d["key"] for d in printed] == list(DEFINITIONS)
    assert printed[0]["label"] == next(iter(DEFINITIONS.values())).label
    text = subprocess.run(
        [sys.executable, "-m", "engine.cli", "definitions"], capture_output=True, text=True, check=True
    ).stdout
    assert f"Interruptions [count] (interruptions): {definition('interruptions').means}" in text.splitlines()


def test_definitions_page_lists_every_figure_under_its_anchor_and_finds_one(store_dir):
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("app_pages/definitions.py").run()
    assert not at.exception
    assert [h.value for h in at.header] == list(SECTIONS)
    # a section's figures are one Markdown block, each under the anchor its help links to, in order
    shown = "\n\n".join(m.value for m in at.markdown)
    places = [shown.index(f'### <a id="{d.anchor}"></a>{d.label}\n\n{d.means}') for d in DEFINITIONS.values()]
    assert places == sorted(places)
    at.text_input(key="definitions_find").input("lost work").run()
    found = "\n".join(m.value for m in at.markdown)
    assert (
        f'id="{definition("lost_work").anchor}"' in found and f'id="{definition("ettr").anchor}"' not in found
    )
    at.text_input(key="definitions_find").input("[x](http://evil) zzz").run()
    assert at.info[0].value.startswith("No figure mentions") and "\\[x\\]" in at.info[0].value  # as text
