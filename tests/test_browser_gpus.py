"""The GPUs page's health grid in a real Chromium (dashboard/gpus/health_grid.js on a canvas): every GPU's cell
names that GPU when hovered, in the words dashboard.charts.health_grid documents, and opens it under the tabs when
clicked; filters from the URL draw the others pale and the legend says so; the grid fits the page at a laptop's
width and a wide screen's. Marker `browser`; server helpers from tests/test_browser.py and
tests/test_browser_racks.py.
"""

import json

import polars as pl
import pytest
from test_browser_racks import serve
from test_charts_pages import pages_run

from dashboard.charts import gpus as charts
from dashboard.charts.health_grid import health_grid
from dashboard.queries import gpus as queries
from engine.store import Store
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS
from tests.test_browser import stop_server as stop

pytestmark = pytest.mark.browser
RENDER_TIMEOUT_MS = 90_000
T_S = 30000  # GPU 3 failed (XID 79, a faulty GPU), host 6's GPUs hit by a cable failure so far
GRID = ".grid[data-geometry]"


@pytest.fixture
def gpus_dashboard(store_dir, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    run_id = Store(store_dir).write_run(pages_run())
    url, server = serve(store_dir, tmp_path)
    try:
        yield url, run_id
    finally:
        stop(server)


def page_cells(run_id: str) -> pl.DataFrame:
    """The grid's rows at T_S with each GPU's last samples, as the page reads them."""
    resolution = queries.sample_resolution("simulate", pages_run().scenario)
    samples = queries.last_samples(run_id, T_S, resolution)
    return queries.grid_at(run_id, T_S).join(samples, on="gpu_id", how="left")


def expected_hovers(cells: pl.DataFrame) -> dict[int, str]:
    """What each GPU's hover should say, written here from the rows (the oracle of health_grid.js)."""
    said = {}
    for g in cells.iter_rows(named=True):
        text = f"GPU {g['gpu_id']} | {g['hostname']} #{g['gpu_index']}, rack {g['rack_id']} | "
        text += charts.gpu_state_label(g["state"] or "unknown")
        if g["temp_c"] is not None or g["power_w"] is not None:
            temp = "n/a" if g["temp_c"] is None else round(g["temp_c"])
            power = "n/a" if g["power_w"] is None else round(g["power_w"])
            text += f" | {temp} C, {power} W"
        if g["xid_events"]:
            text += f" | XIDs {g['xid_events']}" + (f" (last {g['last_xid']})" if g["last_xid"] else "")
        if g["causes"]:
            text += " | incidents: " + ", ".join(charts.cause_label(c) for c in g["causes"])
        said[g["gpu_id"]] = text
    return said


def cells_of(cells: pl.DataFrame) -> dict[int, tuple[int, int]]:
    """GPU -> (line, column) of its cell, as the page lays the grid out."""
    data = health_grid(cells)
    return {g: divmod(c, data["columns"]) for g, c in zip(data["gpu"], data["cell"], strict=True)}


def cell_centre(page, line: int, column: int) -> tuple[float, float]:
    """Where on the screen the middle of cell (line, column) is, from the geometry the canvas reports."""
    left, top, cw, ch = json.loads(page.locator(GRID).get_attribute("data-geometry"))
    box = page.locator(f"{GRID} canvas").bounding_box()
    return box["x"] + left + (column + 0.5) * cw, box["y"] + top + (line + 0.5) * ch


def hover(page, line: int, column: int) -> str | None:
    """The hover label's text with the pointer on the middle of cell (line, column); None where none shows."""
    page.mouse.move(*cell_centre(page, line, column))
    tip = page.locator(f"{GRID} .tip")
    return tip.text_content() if tip.is_visible() else None


def test_every_cell_names_its_gpu_and_filters_draw_the_others_pale(gpus_dashboard, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    url, run_id = gpus_dashboard
    cells = page_cells(run_id)
    said, where = expected_hovers(cells), cells_of(cells)
    assert (
        said[3]
        == "GPU 3 | host-001 #1, rack 0 | Failed GPU | 35 C, 90 W | XIDs 1 (last 79) | incidents: Faulty GPU"
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for width in (1280, 1920):
                page = browser.new_page(viewport={"width": width, "height": 1000})
                page.goto(f"{url}/gpus?run={run_id}&t={T_S}")
                expect(page.locator(GRID)).to_be_visible(timeout=RENDER_TIMEOUT_MS)
                canvas = page.locator(f"{GRID} canvas")
                assert "Health grid of 16 GPUs" in canvas.get_attribute("aria-label")
                assert canvas.bounding_box()["width"] <= width
                shown = {g: hover(page, *cell) for g, cell in where.items()}
                assert shown == said, width
                # the blank column between racks, and a pointer off the cells, name no GPU
                line, column = where[1]
                assert hover(page, line, column + 1) is None
                page.screenshot(path=str(tmp_path / f"gpus-{width}.png"))
                page.close()
            # a filter from the URL: GPU 3 alone in its colour, the others pale, each hover still its own
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{url}/gpus?run={run_id}&t={T_S}&state=failed")
            legend = page.locator(f"{GRID} .legend")
            expect(legend).to_have_text("Failed GPUFiltered out", timeout=RENDER_TIMEOUT_MS)
            assert hover(page, *where[0]) == said[0] and hover(page, *where[3]) == said[3]
            expect(page.get_by_test_id("stException")).to_have_count(0)
            # a click on a GPU opens it under the tabs, and the URL says which
            page.mouse.click(*cell_centre(page, *where[5]))
            expect(page.get_by_text("GPU 5: index 1 of host host-002")).to_be_visible(
                timeout=RENDER_TIMEOUT_MS
            )
            assert "gpu=5" in page.url
            expect(page.get_by_text("GPU 5 is open", exact=False)).to_be_visible()  # said by the grid too
            page.mouse.click(*cell_centre(page, *where[3]))
            expect(page.get_by_text("GPU 3: index 1 of host host-001")).to_be_visible(
                timeout=RENDER_TIMEOUT_MS
            )
            assert "gpu=3" in page.url and "state=failed" in page.url
        finally:
            browser.close()
