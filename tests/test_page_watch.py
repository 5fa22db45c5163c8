"""Pages of a watched run (`goodput watch` over the real test Prometheus): the Data page's "Watch a cluster"
section with each source's state, and the GPUs page drawing one GPU's telemetry queried from Prometheus."""

import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.ingest.watch import loop, watch_loop
from engine.store import Store
from tests.servers import prometheus as prometheus_servers

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")


@pytest.fixture(autouse=True)
def fast_cycles(monkeypatch):
    """Cycles a fraction of a second apart: the floor for real clusters (loop.MIN_EVERY_S) is lowered in this
    process; tests/test_watch_doors.py checks the real one."""
    monkeypatch.setattr(loop, "MIN_EVERY_S", 0.1)


def page(name: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    return at.switch_page(f"app_pages/{name}.py").run()


@pytest.fixture
def watched(store_dir, prometheus_server, tmp_path):
    """Two watched runs: one of the session's Prometheus (reachable), one whose Prometheus stopped after the
    first cycle (unreachable since the second)."""
    store = Store(store_dir)
    live = watch_loop(store, prometheus_url=prometheus_server.url, cycles=1, name="live", quiet=True)
    server = prometheus_servers.start_prometheus(tmp_path / "prom")
    stopped = threading.Event()

    def stop_after_first(line: str) -> None:
        if line.startswith("cycle 1 at ") and not stopped.is_set():
            server.stop()
            stopped.set()

    try:
        gone = watch_loop(
            store, prometheus_url=server.url, every_s=0.2, cycles=2, name="gone", log=stop_after_first
        )
    finally:
        server.stop()
    return {"live": live, "gone": gone, "gone_url": server.url, "live_url": prometheus_server.url}


def test_data_page_lists_watched_runs_with_their_sources_states(watched):
    at = page("data")
    assert not at.exception
    assert "Watch a cluster" in [h.value for h in at.subheader]
    assert any("goodput watch --prometheus" in c.value for c in at.code)
    [ok] = [s.value for s in at.success if "Prometheus" in s.value]
    [bad] = [e.value for e in at.error if "Prometheus" in e.value]
    assert watched["live_url"].split("//")[1] in ok and "reachable, last read" in ok
    assert watched["gone_url"].split("//")[1] in bad and "unreachable since" in bad and "refused" in bad


def test_gpus_page_draws_a_watched_gpu_from_prometheus(watched):
    at = page("gpus", run=watched["live"]["run_id"], gpu="3")
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert any("points from" in c and watched["live_url"].split("//")[1] in c for c in captions), captions


def test_gpus_page_says_when_prometheus_is_gone(watched):
    at = page("gpus", run=watched["gone"]["run_id"], gpu="3")
    assert not at.exception
    assert any("Prometheus could not answer" in e.value for e in at.error)


def test_overview_shows_where_each_source_stands(watched):
    live = page("overview", run=watched["live"]["run_id"])
    assert not live.exception
    [ok] = [s.value for s in live.success if "Prometheus" in s.value]
    assert "reachable, last read" in ok and not [e for e in live.error if "Prometheus" in e.value]
    gone = page("overview", run=watched["gone"]["run_id"])
    assert not gone.exception
    [bad] = [e.value for e in gone.error if "Prometheus" in e.value]
    assert "unreachable since" in bad
