"""Every page at a laptop's and a desktop's width (1280 and 1920 px) in Chromium: nothing cut, nothing wider than
the page (issue 28, "Check every page at 1280 and 1920 wide"), and not one request beyond the dashboard's server.

One server, one browser session, a small store (the demo simulation and a one-line kernel log, made by the CLI);
the pages come from dashboard/navigation.py, so a new page is checked the day it is added. Each page is opened
once at 1280 px, checked, widened to 1920 px and checked again (Streamlit lays the page out again without a
rerun). What "cut" means here, measured in the page's DOM:

- the main area scrolls sideways (its content wider than it): something is wider than the page;
- a metric's label or value, or a widget's label, clipped with an ellipsis (its text wider than its box);
- a title or heading reaching past the main area;
- a chart's axis tick label, axis title or legend entry reaching past the chart's own picture (Plotly's SVG
  hides what lies outside it).

Tables (st.dataframe) draw on a canvas the DOM cannot see into; their columns' widths are checked by the pages'
AppTests (tests/test_page_*.py) instead.
"""

import json
import subprocess

import pytest

from dashboard.navigation import PAGES
from tests.serving import (
    CHROMIUM,
    CHROMIUM_ARGS,
    GOODPUT,
    ROOT,
    free_port,
    scroll_through,
    start,
    stop,
    wait_until,
)

pytestmark = pytest.mark.browser

WIDTHS = (1280, 1920)
HEIGHT = 1000
RENDER_TIMEOUT_MS = 120_000  # a page of the demo run on a busy 2-core machine

# Everything the DOM shows that is cut or too wide, as [what, text] pairs; [] when the page is whole.
CUT_SCRIPT = """() => {
  const cut = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const box = main.getBoundingClientRect();
  const page = document.documentElement;
  if (main.scrollWidth > main.clientWidth + 1) cut.push(['main area scrolls sideways', `${main.scrollWidth}`]);
  if (page.scrollWidth > window.innerWidth + 1) cut.push(['page scrolls sideways', `${page.scrollWidth}`]);
  const clipped = el => [el, ...el.querySelectorAll('*')].some(e =>
    e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0 && getComputedStyle(e).overflowX !== 'visible');
  const labels = '[data-testid="stMetricLabel"], [data-testid="stMetricValue"], [data-testid="stWidgetLabel"]';
  for (const label of main.querySelectorAll(labels)) {
    if (label.offsetParent !== null && clipped(label)) cut.push(['label clipped', label.innerText.trim()]);
  }
  const outside = (r, f) =>
    r.left < f.left - 1 || r.right > f.right + 1 || r.top < f.top - 1 || r.bottom > f.bottom + 1;
  for (const heading of main.querySelectorAll('h1, h2, h3')) {
    const r = heading.getBoundingClientRect();
    if (r.width && (r.right > box.right + 1 || r.left < box.left - 1)) {
      cut.push(['heading past the page', heading.innerText.trim()]);
    }
  }
  const texts = '.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .legendtext, .gtitle';
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    const svg = plot.querySelector('svg.main-svg');
    if (!svg) continue;
    const frame = svg.getBoundingClientRect();
    for (const t of plot.querySelectorAll(texts)) {
      const r = t.getBoundingClientRect();
      if (r.width && t.textContent.trim() && outside(r, frame)) {
        cut.push(['chart text past its chart', t.textContent.trim()]);
      }
    }
  }
  return cut;
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`goodput dashboard` over a store with the demo simulation and a kernel log's run; their ids."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    from tests.fixtures.ingest.samples import kernel_log, xid_body

    folder = tmp_path_factory.mktemp("layout")
    store = folder / "store"
    log = folder / "node001.log"
    log.write_text(kernel_log("journal", [(0, xid_body(3, 79))], host="node001", noise=2))

    def goodput(*args: str) -> str:
        done = subprocess.run(
            [str(GOODPUT), *args, "--store", str(store), "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["run_id"]

    runs = {
        "kernel-log": goodput("ingest", "kernel-log", str(log)),
        "demo": goodput("simulate", "--preset", "demo"),
    }
    port, server_log = free_port(), folder / "dashboard.log"
    server = start([str(GOODPUT), "dashboard", "--store", str(store), "--port", str(port)], server_log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(f"{url}/_stcore/health", server, server_log, expect=b"ok")
        yield url, runs
    finally:
        stop(server)


def rendered(page, title: str) -> None:
    """Until the page's title is shown and the script has finished drawing everything below it."""
    from playwright.sync_api import expect

    main = page.get_by_test_id("stMain")
    expect(main.locator("h1").filter(has_text=title).first).to_be_visible(timeout=RENDER_TIMEOUT_MS)
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=RENDER_TIMEOUT_MS)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=RENDER_TIMEOUT_MS)
    expect(page.locator('[data-stale="true"]')).to_have_count(0, timeout=RENDER_TIMEOUT_MS)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def visits(runs: dict[str, str]) -> list[tuple[str, str, str]]:
    """(what, URL path and query, title) for every page of the navigation on the demo run, Compare with both
    runs side by side, and the kernel log's Overview (a run without a flagship job)."""
    both = f"{runs['demo']},{runs['kernel-log']}"
    out = [
        (
            entry.name,
            f"/{entry.path}?run={runs['demo']}" + (f"&runs={both}" if entry.name == "compare" else ""),
            entry.title,
        )
        for entry in PAGES
    ]
    overview = next(e for e in PAGES if e.default)
    return [
        *out,
        ("overview of the kernel log", f"/{overview.path}?run={runs['kernel-log']}", overview.title),
    ]


def test_every_page_whole_at_1280_and_1920_px_asking_nothing_beyond_the_server(served):
    """... and no request leaves the dashboard's own server: a cluster's network is often air-gapped (a request
    to a CDN or a font service fails there, and tells a third party who looks; the tab's icon was one)."""
    from playwright.sync_api import sync_playwright

    url, runs = served
    found: dict[str, list] = {}
    elsewhere: set[str] = set()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTHS[0], "height": HEIGHT})
            page.on(
                "request",
                lambda r: None if r.url.startswith((f"{url}/", "data:", "blob:")) else elsewhere.add(r.url),
            )
            for what, path, title in visits(runs):
                page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
                page.goto(url + path)
                rendered(page, title)
                scroll_through(page, RENDER_TIMEOUT_MS)  # what waits under the fold is checked too
                rendered(page, title)
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": HEIGHT})
                    page.wait_for_timeout(800)  # Plotly redraws a resized chart after a debounce
                    cut = page.evaluate(CUT_SCRIPT)
                    if cut:
                        found[f"{what} at {width} px"] = cut
        finally:
            browser.close()
    assert not found, json.dumps(found, indent=1)
    assert not elsewhere, sorted(elsewhere)


def test_the_visits_follow_the_navigation():
    """Every page of dashboard/navigation.py is visited, at the path Streamlit serves it at."""
    paths = [path.split("?")[0] for _, path, _ in visits({"demo": "d", "kernel-log": "k"})]
    assert paths[: len(PAGES)] == [f"/{e.path}" for e in PAGES]
    assert paths[0] == "/" and "/definitions" in paths
