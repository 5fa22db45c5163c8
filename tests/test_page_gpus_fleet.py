"""The GPUs page's fleet window of a watched run (`goodput watch` over the real test Prometheus): the spread of a
DCGM metric across every GPU over the window and the hosts at either end, as the fake exporter served them."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.ingest.watch import watch_loop
from engine.store import Store
from tests.fixtures.ingest import dcgm_exporter

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")


def gpus_page(run_id: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    return at.switch_page("app_pages/gpus.py").run()


@pytest.fixture
def watched(store_dir, prometheus_server):
    run = watch_loop(
        Store(store_dir), prometheus_url=prometheus_server.url, cycles=1, name="fleet", quiet=True
    )
    return run["run_id"], prometheus_server


def test_the_fleet_window_shows_every_gpu_and_the_hosts_at_either_end(watched):
    run_id, server = watched
    at = gpus_page(run_id)
    assert not at.exception
    assert "Fleet telemetry (from Prometheus)" in [h.value for h in at.subheader]
    assert any("Live: this cluster is being watched (1 cycle so far)" in c.value for c in at.caption)
    gpus = len(server.hosts) * server.gpus_per_host
    [caption] = [c.value for c in at.caption if "GPUs over the 6 h" in c.value]
    assert (
        caption.startswith(f"{gpus} GPUs") and "raw series" in caption
    )  # the session's Prometheus has no rules
    # temperature = 40 + 4 h + g + n % 3 (tests/fixtures/ingest/dcgm_exporter.py): every host has reached n % 3 = 2
    expected_max = {
        host: max(dcgm_exporter.value("DCGM_FI_DEV_GPU_TEMP", h, g, n) for g in range(8) for n in range(3))
        for h, host in enumerate(server.hosts)
    }
    expected_min = {
        host: dcgm_exporter.value("DCGM_FI_DEV_GPU_TEMP", h, 0, 0) for h, host in enumerate(server.hosts)
    }
    hottest, coolest = (frame.value for frame in at.dataframe[:2])
    assert list(hottest["host"]) == sorted(expected_max, key=expected_max.get, reverse=True)
    assert list(hottest["max (°C)"]) == sorted(expected_max.values(), reverse=True)
    assert list(coolest["host"]) == sorted(expected_min, key=expected_min.get)
    assert list(coolest["min (°C)"]) == sorted(expected_min.values())
