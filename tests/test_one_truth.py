"""One truth: every page (AppTest), every export and the CLI summary of one run give the same value for a
figure, and every figure is named and explained by its definition (engine/analysis/definitions).

One simulated run (the demo preset, seed 7) is rendered on every page with nothing selected. For each figure
whose definition is run-wide (scope "run"), the value each page shows must equal the engine's one computation
(the run summary, the incidents table through engine.analysis.incidents.summary_counts), within the rounding the
page shows; so must the HTML and JSON exports and `goodput simulate`'s text summary. Every st.metric must carry
a registered label (a few descriptive fields such as "Cause" are not figures) and its definition's help.
"""

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis.definitions import DEFINITIONS, by_label, definition
from engine.analysis.incidents import flagship_job_id, load_incidents, summary_counts
from engine.analysis.run_summary import RunSummary
from engine.report.export import export_run_incidents
from engine.store import Store

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "dashboard" / "streamlit_app.py")
PAGES = (
    "overview",
    "racks",
    "gpus",
    "jobs",
    "network",
    "incidents",
    "planner",
    "compare",
    "data",
    "definitions",
)
# st.metric used for a descriptive field, not a figure: nothing to define or to agree on
NOT_FIGURES = {"Cause", "Category", "State", "Fabric"}

NUMBER = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)\s*([kMB](?![a-z]))?\s*(%|GPU-h|min|h|d|s)?")
SCALE = {None: 1.0, "k": 1e3, "M": 1e6, "B": 1e9}
# a shown unit -> the factor to the definition's unit (hours for durations in hours, ratios for %)
TO_UNIT = {"%": 0.01, "min": 1 / 60, "h": 1.0, "d": 24.0, "s": 1 / 3600, "GPU-h": 1.0, None: 1.0}


def reading(text: str) -> tuple[float, float] | None:
    """A shown figure as (value, half its last digit): "91.2%" -> (0.912, 0.0005), "1.8M GPU-h" -> (1.8e6,
    5e4), "3.1 h" -> (3.1, 0.05); None for a dash."""
    m = NUMBER.search(text.replace("\u2009", " "))
    if m is None:
        return None
    digits = m[1].replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    factor = SCALE[m[2]] * TO_UNIT[m[3]]
    return float(digits) * factor, 0.5 * 10**-decimals * factor


def agrees(shown: str, expected: float) -> bool:
    got = reading(shown)
    return got is not None and abs(got[0] - expected) <= got[1] + 1e-9 * abs(expected)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The demo run in a store, its JSON summary and `goodput simulate`'s text summary of the same scenario."""
    store = tmp_path_factory.mktemp("truth") / "store"

    def simulate(*extra: str) -> str:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "engine.cli",
                "simulate",
                "--preset",
                "demo",
                "--store",
                str(store),
                *extra,
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout

    summary = json.loads(simulate("--json"))
    text = simulate()  # the same scenario and seed: identical figures (DESIGN), another run id
    return store, summary, text


def _in_hours(value: float | None, unit: str) -> float | None:
    """Durations compare in hours (TO_UNIT); a figure defined in seconds is converted."""
    return value / 3600 if value is not None and unit == "seconds" else value


@pytest.fixture(scope="module")
def truth(run) -> dict[str, float]:
    """Each run-wide figure as the engine computes it, in its definition's unit."""
    store, summary, _ = run
    with duckdb.connect(
        str(next((store / "runs").glob(f"{summary['run_id']}*.duckdb"))), read_only=True
    ) as con:
        incidents = load_incidents(con)
        flagship = flagship_job_id(con)
    days = summary["days"]
    everything, flagship_counts = (
        summary_counts(incidents, days),
        summary_counts(incidents, days, job=flagship),
    )
    typed = RunSummary.from_json(summary)
    assert flagship_counts["total"] == typed.figure(
        "interruptions"
    )  # the summary counts the rows the pages count
    # every run-wide figure the summary holds, read where its definition says (no hand-made map of paths)
    in_summary = {
        d.key: _in_hours(typed.figure(d.key), d.unit)
        for d in DEFINITIONS.values()
        if d.scope == "run" and d.summary is not None and not isinstance(typed.at(d.summary), str)
    }
    assert {"ettr", "interruptions", "goodput_lost", "gpu_hours_down", "utilisation_by_progress"} <= set(
        in_summary
    )
    return in_summary | {
        "hardware_share": flagship_counts["hardware_share"],
        "interruptions_per_day": flagship_counts["per_day"],
        "interruption_gpu_hours_lost": flagship_counts["gpu_hours_lost"],
        "incidents": everything["total"],
        "incidents_per_day": everything["per_day"],
        "incident_gpu_hours_lost": everything["gpu_hours_lost"],
    }


@pytest.fixture(scope="module")
def pages(run) -> dict[str, list]:
    """Every page's metrics, rendered with nothing selected."""
    store, summary, _ = run
    shown = {}
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GOODPUT_STORE", str(store))
        for name in PAGES:
            at = AppTest.from_file(APP, default_timeout=180)
            at.query_params["run"] = summary["run_id"]
            at.switch_page(f"app_pages/{name}.py").run()
            assert not at.exception, (name, [e.value for e in at.exception])
            shown[name] = list(at.metric)
    return shown


def test_every_figure_on_a_page_is_defined_and_explained(pages):
    for page, metrics in pages.items():
        for m in metrics:
            if m.label in NOT_FIGURES:
                continue
            d = by_label(m.label)
            assert d is not None, (
                f"{page}: figure {m.label!r} has no definition in engine/analysis/definitions"
            )
            assert d.help in m.proto.help, f"{page}: {m.label!r} does not give its definition's help"


def test_every_page_shows_the_engines_value(pages, truth):
    checked = set()
    for page, metrics in pages.items():
        for m in metrics:
            d = by_label(m.label)
            if d is None or d.scope != "run" or d.key not in truth or truth[d.key] is None:
                continue
            assert agrees(m.value, truth[d.key]), (
                f"{page}: {m.label} shows {m.value}, the engine says {truth[d.key]}"
            )
            checked.add(d.key)
    # the headline figures were on some page (a test that checked nothing would pass too)
    assert {"ettr", "interruptions", "goodput_lost", "utilisation_by_allocation", "gpu_hours_down"} <= checked


def test_a_run_wide_figure_has_one_value_across_pages(pages):
    seen: dict[str, tuple[str, str]] = {}
    for page, metrics in pages.items():
        for m in metrics:
            d = by_label(m.label)
            if d is None or d.scope != "run":
                continue
            if d.key in seen:
                other_page, other = seen[d.key]
                a, b = reading(other), reading(m.value)
                assert a is not None and b is not None and abs(a[0] - b[0]) <= max(a[1], b[1]), (
                    f"{m.label}: {other} on {other_page}, {m.value} on {page}"
                )
            else:
                seen[d.key] = (page, m.value)


def facts(report: str) -> dict[str, str]:
    """The HTML report's summary table: label -> value."""
    table = report.split("<h2>Summary</h2>", 1)[1].split("</table>", 1)[0]
    return {
        html.unescape(k): html.unescape(v)
        for k, v in re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", table)
    }


def test_exports_say_what_the_pages_say(run, truth):
    store, summary, _ = run
    report = facts(export_run_incidents(Store(store), summary["run_id"], "html", charts=False).decode())
    for label, value in report.items():
        d = by_label(label)
        if d is None:
            continue  # run facts such as "run started (UTC)"
        assert agrees(value, truth[d.key]), f"HTML export: {label} {value}, the engine says {truth[d.key]}"
    assert {
        definition(k).label
        for k in ("incidents", "interruptions", "incident_gpu_hours_lost", "interruption_gpu_hours_lost")
    } <= set(report)
    document = json.loads(export_run_incidents(Store(store), summary["run_id"], "json"))
    assert document["summary"]["total"] == truth["incidents"] == len(document["incidents"])
    assert document["interruptions"]["total"] == truth["interruptions"]
    assert document["interruptions"]["gpu_hours_lost"] == pytest.approx(truth["interruption_gpu_hours_lost"])
    csv = export_run_incidents(Store(store), summary["run_id"], "csv").decode()
    assert len(csv.strip().splitlines()) == truth["incidents"] + 1


def test_cli_summary_says_what_the_pages_say(run, truth):
    _, _, text = run

    def shown(key: str) -> str:
        label = definition(key).label
        match = re.search(re.escape(label) + r":? ([\d,.]+%?(?: h)?)", text)
        assert match, f"the CLI summary has no {label!r}:\n{text}"
        return match[1]

    for key in (
        "ettr",
        "job_mttf",
        "checkpoints_written",
        "interruptions",
        "utilisation_by_allocation",
        "utilisation_by_progress",
        "gpu_hours_down",
    ):
        assert agrees(shown(key), truth[key]), (key, shown(key), truth[key])
    assert agrees(shown("goodput_lost"), truth["goodput_lost"])
