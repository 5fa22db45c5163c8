"""Racks page: the floor at time t from the URL, the counts of hosts up and out, a rack's hosts and incidents."""

import os
import signal
import subprocess

import pytest
from test_charts_pages import open_page, sparse_run, stored_run

PAGE = "app_pages/racks.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_empty_store_shows_the_empty_state(store_dir):
    at = open_page(PAGE)
    assert not at.exception
    assert [t.value for t in at.title] == ["Racks"]
    assert any("no runs yet" in i.value for i in at.info)


def test_floor_at_t_from_the_url_and_a_rack_drill_down(store_dir):
    run_id = stored_run(store_dir)
    # at t = 30,000 s host 1 is in repair (its faulty GPU failed at 20,000 s); the seven others are up
    at = open_page(PAGE, {"run": run_id, "t": "30000", "rack": "0"})
    assert not at.exception
    assert metrics(at) == {"Racks": "4", "Hosts up": "7", "Hosts out of service": "1",
                           "Hosts without a state": "0"}
    assert "2024-03-01 08:20 UTC" in at.caption[0].value
    assert [s.value for s in at.subheader] == ["Floor plan", "Rack"]
    assert at.query_params["cells"] == "gpus"  # 16 GPUs: a cell a GPU by default
    hosts = at.dataframe[0].value
    assert hosts["hostname"].tolist() == ["host-001", "host-000"] and hosts["state"].tolist() == ["repair", "running"]
    assert "**Incidents** (2)" in [m.value for m in at.markdown]  # faulty_gpu and gpu_hbm3, both on host 1
    incidents = at.dataframe[1].value
    assert incidents["cause"].tolist() == ["faulty_gpu", "gpu_hbm3"]
    assert incidents["time"].tolist() == ["2024-03-01 05:33 UTC", "2024-03-01 19:26 UTC"]
    assert incidents["out_of_service"].tolist() == ["5 h 33 min", "not repaired"]  # the second is never repaired


def test_moving_the_time_slider_updates_the_url_and_the_counts(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "t": "30000"})
    at.slider[0].set_value(10000 / 3600).run()  # before the failure: every host is up
    assert not at.exception
    assert at.query_params["t"] == "10000"
    assert metrics(at)["Hosts out of service"] == "0"
    assert "rack" not in at.query_params  # no rack chosen: nothing below the floor plan


def test_a_bad_url_parameter_falls_back_to_the_end_of_the_run(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "t": "soon", "rack": "99"})
    assert not at.exception
    # at the end of the run host 1 is in repair after its second failure
    assert metrics(at)["Hosts out of service"] == "1"
    assert at.slider[0].value == 24.0


def test_cells_a_host_or_a_gpu_from_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "cells": "hosts"})
    assert not at.exception and at.query_params["cells"] == "hosts"
    assert not any("*failed*" in c.value for c in at.caption)
    at.button_group[0].set_value("gpus").run()
    assert not at.exception and at.query_params["cells"] == "gpus"
    assert any("*failed*" in c.value for c in at.caption)


def test_a_run_without_host_states_shows_every_host_unknown(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id, "rack": "1"})
    assert not at.exception
    assert metrics(at)["Hosts without a state"] == "8"
    assert any("records no host states" in c.value for c in at.caption)
    assert any("No incidents on this rack" in c.value for c in at.caption)


def test_every_move_of_the_slider_counts(store_dir):
    # a widget re-created from the URL on each rerun would drop every second change
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id})
    for hours, seconds in ((2.0, "7200"), (5.0, "18000"), (9.0, "32400"), (12.0, "43200")):
        at.slider[0].set_value(hours).run()
        assert at.slider[0].value == hours and at.query_params["t"] == seconds
    at.selectbox[0].set_value(1).run()
    at.selectbox[0].set_value(2).run()
    assert at.query_params["rack"] == "2" and at.query_params["t"] == "43200"


@pytest.mark.browser
def test_clicking_a_rack_on_the_floor_plan_opens_it(store_dir, tmp_path):
    """AppTest cannot click a Plotly figure: a real Chromium clicks rack 3's dot and the page opens rack 3."""
    from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, GOODPUT, free_port, wait_healthy

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    run_id = stored_run(store_dir)
    port, log = free_port(), tmp_path / "dashboard.log"
    with log.open("w") as out:
        server = subprocess.Popen([str(GOODPUT), "dashboard", "--store", str(store_dir), "--port", str(port)],
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server, log)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1200})
                page.goto(f"{url}/racks?run={run_id}&t=30000&cells=hosts")
                page.wait_for_function(HANDLES_DRAWN, timeout=60_000)
                x, y = page.evaluate(HANDLE_POSITION, 3)
                page.mouse.click(x, y)
                page.wait_for_function("() => location.search.includes('rack=3')", timeout=30_000)
                page.get_by_text("Rack 3:").wait_for(timeout=30_000)
                assert "host-007" in page.inner_text("body") and "host-000" not in page.inner_text("body")
            finally:
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)


HANDLES_DRAWN = """() => { const gd = document.querySelector('.js-plotly-plot');
    return gd && gd._fullData && gd._fullData.some(t => t.name === 'racks'); }"""
# Where rack `i`'s dot is on the screen, from the figure's own axes.
HANDLE_POSITION = """(rack) => { const gd = document.querySelector('.js-plotly-plot');
    const t = gd._fullData.find(t => t.name === 'racks'); const i = Array.from(t.customdata).indexOf(rack);
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
    return [box.left + xa._offset + xa.l2p(t.x[i]), box.top + ya._offset + ya.l2p(t.y[i])]; }"""
