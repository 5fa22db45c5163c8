"""Racks in a real Chromium: the floor plan draws (screenshots of each measure), a click on a rack's dot opens
its elevation, and Play steps ?t= forward. Marker `browser`; server helpers from tests/test_browser.py.

Screenshots land in pytest's tmp_path; set GOODPUT_RACKS_SHOTS=DIR to keep copies, and GOODPUT_RACKS_STORE=DIR
(a store holding a llama3-405b run) to shoot the full 24,576-GPU floor as well.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_charts_racks import racks_run

from engine.store import Store
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, GOODPUT, ROOT, free_port, wait_healthy
from tests.test_browser import stop_server as stop

pytestmark = pytest.mark.browser
RENDER_TIMEOUT_MS = 90_000

HANDLES_DRAWN = """() => { const gd = document.querySelector('.js-plotly-plot');
    return gd && gd._fullData && gd._fullData.some(t => t.name === 'racks'); }"""
# Where rack `i`'s dot is on the screen, from the figure's own axes.
HANDLE_POSITION = """(rack) => { const gd = document.querySelector('.js-plotly-plot');
    const t = gd._fullData.find(t => t.name === 'racks'); const i = Array.from(t.customdata).indexOf(rack);
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
    return [box.left + xa._offset + xa.l2p(t.x[i]), box.top + ya._offset + ya.l2p(t.y[i])]; }"""
OVER_BUDGET = """() => { const t = document.querySelector('.js-plotly-plot')._fullData
    .find(t => t.name === 'over budget'); return t ? Array.from(t.customdata) : null; }"""


def serve(store: Path, tmp_path: Path):
    """`goodput dashboard` on `store`; returns (url, server) once healthy."""
    port, log = free_port(), tmp_path / "dashboard.log"
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
    except BaseException:
        stop(server)
        raise
    return url, server


def keep(shot: Path) -> None:
    if os.environ.get("GOODPUT_RACKS_SHOTS"):
        target = Path(os.environ["GOODPUT_RACKS_SHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, target / shot.name)


@pytest.fixture
def racks_dashboard(store_dir, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    run_id = Store(store_dir).write_run(racks_run())
    url, server = serve(store_dir, tmp_path)
    try:
        yield url, run_id
    finally:
        stop(server)


def browse(p, height: int = 1100, width: int = 1400):
    browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    return browser, browser.new_page(viewport={"width": width, "height": height})


# The floor plan's box, the main column's scroll and client widths, and the racks ringed as having a problem.
FLOOR_FIT = """() => { const gd = document.querySelector('.js-plotly-plot'); const box = gd.getBoundingClientRect();
    const main = document.querySelector('[data-testid=stMain]') || document.querySelector('section.main');
    const rings = gd._fullData.find(t => t.name === 'racks with a problem');
    return {width: box.width, height: box.height, scroll: main.scrollWidth, client: main.clientWidth,
            rings: rings ? Array.from(rings.customdata) : null}; }"""


def test_floor_plan_screenshots_and_the_rack_over_budget(racks_dashboard, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    url, run_id = racks_dashboard
    with sync_playwright() as p:
        browser, page = browse(p)
        try:
            for measure in ("state", "temp", "power", "job", "failures"):
                page.goto(f"{url}/racks?run={run_id}&t=30000&measure={measure}")
                page.wait_for_function(HANDLES_DRAWN, timeout=RENDER_TIMEOUT_MS)
                expect(page.get_by_test_id("stException")).to_have_count(0)
                assert page.evaluate(OVER_BUDGET) == [1]  # rack 1 crossed out, whatever the measure
                page.wait_for_timeout(300)
                shot = tmp_path / f"racks-{measure}.png"
                page.locator(".js-plotly-plot").first.screenshot(path=str(shot))
                assert shot.stat().st_size > 5_000
                keep(shot)
        finally:
            browser.close()


def test_clicking_a_rack_on_the_floor_plan_opens_its_elevation(racks_dashboard, tmp_path):
    """AppTest cannot click a Plotly figure: Chromium clicks rack 3's dot and the page opens rack 3."""
    from playwright.sync_api import sync_playwright

    url, run_id = racks_dashboard
    with sync_playwright() as p:
        browser, page = browse(p)
        try:
            page.goto(f"{url}/racks?run={run_id}&t=30000")
            page.wait_for_function(HANDLES_DRAWN, timeout=RENDER_TIMEOUT_MS)
            x, y = page.evaluate(HANDLE_POSITION, 3)
            page.mouse.click(x, y)
            page.wait_for_function("() => location.search.includes('rack=3')", timeout=30_000)
            page.get_by_text("Rack 3:").wait_for(timeout=30_000)
            page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=RENDER_TIMEOUT_MS
            )
            body = page.inner_text("body")
            assert "gt-p01-r00003-h1" in body and "gt-p00-r00000-h0" not in body
            shot = tmp_path / "racks-elevation.png"
            page.locator(".js-plotly-plot").nth(1).screenshot(path=str(shot))
            keep(shot)
        finally:
            browser.close()


def test_play_steps_the_time_forward(racks_dashboard):
    from playwright.sync_api import sync_playwright

    url, run_id = racks_dashboard
    with sync_playwright() as p:
        browser, page = browse(p)
        try:
            page.goto(f"{url}/racks?run={run_id}&t=3600")
            page.wait_for_function(HANDLES_DRAWN, timeout=RENDER_TIMEOUT_MS)
            page.get_by_text("Play", exact=True).click()
            # each tick (2 s) moves t one step (1 h): 3600 -> 7200 -> 10800
            page.wait_for_function("() => location.search.includes('t=10800')", timeout=30_000)
            page.get_by_text("Play", exact=True).click()
            page.wait_for_timeout(3000)
            stopped = page.evaluate("() => location.search")
            page.wait_for_timeout(4500)
            assert page.evaluate("() => location.search") == stopped  # paused: t stays
        finally:
            browser.close()


def test_llama3_floor_plan_in_chromium(tmp_path):
    """The whole 24,576-GPU floor draws in the browser for each measure (GOODPUT_RACKS_STORE reuses a store)."""
    from playwright.sync_api import sync_playwright

    from engine.scenario import build
    from engine.twin.simulate import simulate

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing")
    if os.environ.get("GOODPUT_RACKS_STORE"):
        store = Path(os.environ["GOODPUT_RACKS_STORE"])
    else:  # coarse telemetry keeps the run quick; the floor is the same size
        store = tmp_path / "llama3"
        Store(store).write_run(
            simulate(
                build("llama3-405b", sets=["simulation.telemetry_resolution=12h", "network.link_samples=off"])
            )
        )
    run_id = Store(store).run_ids()[0]
    url, server = serve(store, tmp_path)
    try:
        with sync_playwright() as p:
            browser, page = browse(p, height=1000, width=1600)  # the screen the floor must fit
            try:
                for measure in ("state", "power", "job"):
                    page.goto(f"{url}/racks?run={run_id}&t=1728000&measure={measure}&rack=700")
                    page.wait_for_function(HANDLES_DRAWN, timeout=RENDER_TIMEOUT_MS)
                    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
                    page.wait_for_timeout(500)
                    fit = page.evaluate(FLOOR_FIT)
                    # the whole floor on a 1080p screen: no sideways scroll, no taller than the window
                    assert fit["scroll"] <= fit["client"] and fit["height"] <= 820, fit
                    # 1,536 racks: the floor opens on the racks with a problem, each ringed
                    assert "problems=1" in page.evaluate("() => location.search")
                    assert fit["rings"], fit
                    shot = tmp_path / f"racks-llama3-{measure}.png"
                    page.locator(".js-plotly-plot").first.screenshot(path=str(shot))
                    keep(shot)
            finally:
                browser.close()
    finally:
        stop(server)
