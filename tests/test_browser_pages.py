"""Every page of the default llama3-405b run in Chromium, screenshotted as a user sees it.

The screenshots are CI artefacts: they land in $GOODPUT_ARTIFACTS/screenshots (default artifacts/screenshots in
the checkout, git-ignored), one PNG a page at 1600 x 1000, so a reviewer can open what the issue asks to see
(what is down near the top of the Overview, the Racks floor plan at 24,576 GPUs, the flagship's attempts on
the Jobs page, ...). Each page must render without an exception and show its figures, and at 1280 px have nothing
cut (tests/test_browser_layout.py's measure).
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from dashboard import navigation
from dashboard.format import fmt_int, fmt_pct
from tests.serving import WAITING_FOR_SCROLL
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, GOODPUT, ROOT, free_port, stop_server, wait_healthy
from tests.test_browser_layout import CUT_SCRIPT

pytestmark = pytest.mark.browser

ARTIFACTS = Path(os.environ.get("GOODPUT_ARTIFACTS", ROOT / "artifacts")) / "screenshots"
PAGE_TIMEOUT_MS = 180_000  # a 24,576-GPU run on a busy 2-core machine
# page (dashboard/navigation.py) -> text every render of the page shows once its figures are in; the pages and
# their URL paths come from the navigation, so a page added there without a heading here fails at once
HEADINGS = {
    "overview": "ETTR (goodput)",
    "racks": "Racks",
    "gpus": "GPUs",
    "jobs": "Jobs",
    "network": "Network",
    "incidents": "Interruptions",
    "operations": "Circuit breaker",
    "twin": "What the twin learned",
    "planner": "Planner",
    "compare": "Compare",
    "data": "Data",
    "definitions": "Definitions",
}
PAGES = {entry.path: HEADINGS[entry.name] for entry in navigation.PAGES}


@pytest.fixture(scope="module")
def llama3(tmp_path_factory):
    """The default store of `make run`: one llama3-405b run, served by `goodput dashboard`."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    folder = tmp_path_factory.mktemp("llama3")
    store = folder / "store"
    simulated = subprocess.run(
        [
            str(GOODPUT),
            "simulate",
            "--preset",
            "llama3-405b",
            "--name",
            "llama3-405b (default)",
            "--store",
            str(store),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
    )
    assert simulated.returncode == 0, simulated.stderr
    summary = json.loads(simulated.stdout)
    port, log = free_port(), folder / "dashboard.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(GOODPUT), "dashboard", "--store", str(store), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server, log)
        yield url, summary
    finally:
        stop_server(server)


def test_every_page_of_the_default_run(llama3):
    from playwright.sync_api import expect, sync_playwright

    url, summary = llama3
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cut: dict[str, list] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            for path, heading in PAGES.items():
                page.goto(f"{url}/{path}?run={summary['run_id']}")
                main = page.get_by_test_id("stMain")
                expect(main.get_by_text(heading, exact=True).first).to_be_visible(timeout=PAGE_TIMEOUT_MS)
                # the script has finished: Streamlit shows its running indicator until then
                expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=PAGE_TIMEOUT_MS)
                # ... and every element has replaced its loading placeholder (the figures are in)
                expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=PAGE_TIMEOUT_MS)
                # ... and nothing is left greyed from an earlier pass of the script (Streamlit marks such
                # elements data-stale until the run that redraws them reaches them: the GPUs page draws its
                # grid last, so its metrics stayed grey in the screenshot while the grid was still coming)
                expect(page.locator('[data-stale="true"]')).to_have_count(0, timeout=PAGE_TIMEOUT_MS)
                expect(page.get_by_test_id("stException")).to_have_count(0)
                expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
                if path == "":
                    metrics = page.get_by_test_id("stMetric")
                    expect(metrics.filter(has_text="ETTR (goodput)")).to_contain_text(
                        fmt_pct(summary["job"]["ettr"])
                    )
                    expect(metrics.filter(has_text="Interruptions")).to_contain_text(
                        fmt_int(summary["interruptions"]["total"])
                    )
                page.wait_for_timeout(1000)  # Plotly's transitions
                shot = ARTIFACTS / f"{path or 'overview'}.png"
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 10_000, shot
                # at a laptop's width with 24,576 GPUs' figures in it: nothing cut (the layout test checks the
                # small demo run's pages; a large run's figures are wider: "21,065.1 T…" on Network)
                page.set_viewport_size({"width": 1280, "height": 1000})
                page.wait_for_timeout(500)  # Streamlit and Plotly lay the page out again
                cut[path or "overview"] = page.evaluate(CUT_SCRIPT)
                page.set_viewport_size({"width": 1600, "height": 1000})
        finally:
            browser.close()
    assert {page: found for page, found in cut.items() if found} == {}


def test_what_lies_under_a_tall_chart_appears_once_scrolled_to_and_at_once_where_a_link_asks(llama3):
    """dashboard/lazy.below_fold in a browser at 24,576 GPUs: under the GPUs page's health grid and the Jobs page's
    Gantt (each taller than the screen's remainder) the tabs and the one GPU or job wait, with a caption saying
    so, until the reader scrolls to them; a link to a GPU or a job draws them at once. (The Racks page's floor
    plan of this run is short enough that what follows it is drawn at once: tests/test_browser_racks.py.)"""
    from playwright.sync_api import expect, sync_playwright

    url, summary = llama3
    run_id = summary["run_id"]
    waiting = WAITING_FOR_SCROLL
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            main = page.get_by_test_id("stMain")
            for path, tab, below in (
                ("gpus", "XID events", "One GPU"),
                ("jobs", "Jobs in the window", "One job"),
            ):
                page.goto(f"{url}/{path}?run={run_id}")
                expect(main.get_by_text(waiting)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
                expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=PAGE_TIMEOUT_MS)
                # the page has settled and nobody scrolled: still waiting, nothing of it drawn (the section's
                # heading: the grid's caption links to it by name)
                page.wait_for_timeout(3000)
                expect(page.get_by_role("tab", name=tab)).to_have_count(0)
                expect(main.get_by_role("heading", name=below, exact=True)).to_have_count(0)
                # the reader scrolls down the main pane (what scrolls in Streamlit, not the window)
                box = main.bounding_box()
                page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 500)
                for _ in range(8):
                    page.mouse.wheel(0, 800)
                    page.wait_for_timeout(200)
                expect(page.get_by_role("tab", name=tab)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
                expect(main.get_by_role("heading", name=below, exact=True)).to_have_count(
                    1, timeout=PAGE_TIMEOUT_MS
                )
                expect(main.get_by_text(waiting)).to_have_count(0)
                expect(page.get_by_test_id("stException")).to_have_count(0)
            # a link to one GPU, one job: drawn at once, without a scroll
            flagship = summary["job"]["name"]  # the flagship's job id is its name in a simulated run
            for link, below in (("gpus?gpu=5", "One GPU"), (f"jobs?job={flagship}", "One job")):
                page.goto(f"{url}/{link}&run={run_id}")
                expect(main.get_by_role("heading", name=below, exact=True)).to_have_count(
                    1, timeout=PAGE_TIMEOUT_MS
                )
                expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=PAGE_TIMEOUT_MS)
                expect(main.get_by_text(waiting)).to_have_count(0)
                expect(page.get_by_test_id("stException")).to_have_count(0)
        finally:
            browser.close()


def test_the_gpus_page_draws_24576_gpus_without_plotly(llama3):
    """The GPUs page's health grid is a canvas (dashboard/gpus/health_grid.js): with what lies under it waiting for
    a scroll, a visit loads no Plotly at all (its 4.7 MB module cost a first visit 0.73 s on 2 cores, issue 28),
    and the grid holds every GPU of the run."""
    from playwright.sync_api import expect, sync_playwright

    url, summary = llama3
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            fetched: list[str] = []
            page.on("request", lambda request: fetched.append(request.url))
            page.goto(f"{url}/gpus?run={summary['run_id']}")
            canvas = page.locator(".grid[data-geometry] canvas")
            expect(canvas).to_have_attribute(
                "aria-label", re.compile(r"^Health grid of 24,576 GPUs: "), timeout=PAGE_TIMEOUT_MS
            )
            expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=PAGE_TIMEOUT_MS)
            page.wait_for_timeout(1000)
            assert any("/static/js/" in u for u in fetched)  # the page's own code was seen loading
            assert not [u for u in fetched if "plotly" in u.lower()]
        finally:
            browser.close()
