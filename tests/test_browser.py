"""End to end: `goodput simulate` writes a run, `goodput dashboard` serves it, a real Chromium shows it.

Playwright drives Debian's chromium (DESIGN "Known facts about the tools"; `playwright install` cannot
download browsers here). The Overview's screenshot is saved under the test's tmp folder; with
GOODPUT_UPDATE_SCREENSHOT=1 a downscaled copy replaces docs/screenshot.png, the picture in the README.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dashboard.format import fmt_pct
from tests.runs import make_store, small_run
from tests.serving import CHROMIUM, CHROMIUM_ARGS, WAITING_FOR_SCROLL, scroll_through

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
GOODPUT = Path(sys.executable).parent / "goodput"
SCREENSHOT = ROOT / "docs" / "screenshot.png"
SCREENSHOT_WIDTH = 1200  # px: sharp in the README, small in the repository
START_TIMEOUT_S = 60
RENDER_TIMEOUT_MS = 60_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"goodput dashboard exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:  # noqa: S310 (local)
                if response.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"the dashboard was not healthy within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def dashboard(tmp_path):
    """A store with the hand-made run and a fresh demo simulation, served by `goodput dashboard`."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    store = tmp_path / "store"
    make_store(store, small_run())
    simulated = subprocess.run(
        [str(GOODPUT), "simulate", "--preset", "demo", "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert simulated.returncode == 0, simulated.stderr
    demo = json.loads(simulated.stdout)
    port = free_port()
    log = tmp_path / "dashboard.log"
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
        yield url, demo
    finally:
        stop_server(server)


def stop_server(server: subprocess.Popen) -> None:
    """Stop a `goodput dashboard` started in its own process group: politely, then for sure."""
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=10)


def test_overview_and_data_in_chromium(dashboard, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    url, demo = dashboard
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{url}/?run={demo['run_id']}")
            metrics = page.get_by_test_id("stMetric")
            expect(metrics.first).to_be_visible(timeout=RENDER_TIMEOUT_MS)
            ettr = metrics.filter(has_text="ETTR (goodput)")
            expect(ettr).to_contain_text(fmt_pct(demo["job"]["ettr"]), timeout=RENDER_TIMEOUT_MS)
            expect(metrics.filter(has_text="Interruptions")).to_contain_text(
                f"{demo['interruptions']['total']:,}"
            )
            expect(page.get_by_text("What is down", exact=True)).to_be_visible()
            # the losses and causes under what is down are drawn once the reader scrolls to them
            expect(page.get_by_text(WAITING_FOR_SCROLL)).to_be_visible()
            scroll_through(page, RENDER_TIMEOUT_MS)
            # every chart drawn before the picture is taken (Plotly renders after the metrics)
            expect(page.locator(".js-plotly-plot")).to_have_count(
                3, timeout=RENDER_TIMEOUT_MS
            )  # ETTR over time waits for its tab
            expect(page.get_by_test_id("stException")).to_have_count(0)
            assert f"run={demo['run_id']}" in page.url
            page.wait_for_timeout(500)  # let Plotly finish its transitions
            shot = tmp_path / "overview.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000

            page.goto(f"{url}/data?run={demo['run_id']}")
            expect(page.get_by_role("heading", name="Data")).to_be_visible(timeout=RENDER_TIMEOUT_MS)
            table = page.get_by_test_id("stTable").first  # a store's few runs: static cells
            expect(table).to_be_visible(timeout=RENDER_TIMEOUT_MS)
            expect(table.get_by_text(demo["run_id"], exact=True)).to_be_visible()
            page.screenshot(path=str(tmp_path / "data.png"), full_page=True)
        finally:
            browser.close()
    if os.environ.get("GOODPUT_UPDATE_SCREENSHOT") == "1":
        save_downscaled(shot, SCREENSHOT)


def save_downscaled(source: Path, target: Path) -> None:
    from PIL import Image

    with Image.open(source) as image:
        height = round(image.height * SCREENSHOT_WIDTH / image.width)
        small = image.convert("RGB").resize((SCREENSHOT_WIDTH, height), Image.Resampling.LANCZOS)
        small = small.quantize(
            colors=256, method=Image.Quantize.FASTOCTREE
        )  # a flat UI: a palette is lossless enough
        target.parent.mkdir(parents=True, exist_ok=True)
        small.save(target, optimize=True)
