"""Live scraping against local HTTP servers that serve DCGM scrapes changing between requests."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest

from engine.cli import main
from engine.errors import GoodputError
from engine.ingest.live import parse_urls, scrape_loop
from engine.store import Store
from tests.fixtures.ingest.samples import labels

ROOT = Path(__file__).resolve().parent.parent


def exporter_page(host: int, request: int, xid: int = 0) -> str:
    """What dcgm-exporter serves: no timestamps, two GPUs; the temperature follows the request number."""
    rows = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    rows += [f"DCGM_FI_DEV_GPU_TEMP{{{labels(host, g)}}} {50 + request + g}" for g in range(2)]
    rows += ["# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.",
             "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    rows += [f"DCGM_FI_DEV_XID_ERRORS{{{labels(host, g)}}} {xid if g == 1 else 0}" for g in range(2)]
    return "\n".join(rows) + "\n"


class Exporter:
    """A fake exporter: `pages(request_number)` gives the body, or None for an HTTP 500."""

    def __init__(self, pages) -> None:
        self.requests = 0
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                body = pages(exporter.requests)
                exporter.requests += 1
                if body is None:
                    self.send_error(500, "exporter broke")
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def exporters(*page_functions) -> Iterator[list[Exporter]]:
    started = [Exporter(pages) for pages in page_functions]
    try:
        yield started
    finally:
        for exporter in started:
            exporter.close()


def dead_url() -> str:
    """A port nothing listens on (bound, then closed)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    server.server_close()
    return f"http://127.0.0.1:{port}/metrics"


def test_each_scrape_is_committed_to_one_run(store_dir):
    lines: list[str] = []
    with exporters(lambda n: exporter_page(0, n, xid=79 if n >= 2 else 0), lambda n: exporter_page(1, n)) as (a, b):
        result = scrape_loop([a.url, b.url], 0.05, Store(store_dir), scrapes=4, log=lines.append)
    store = Store(store_dir)
    assert store.run_ids() == [result["run_id"]]
    assert (result["hosts"], result["gpus"], result["scrapes"], result["samples"]) == (2, 4, 4, 4 * 2 * 2 * 2)
    assert len(lines) == 4 and lines[0].startswith("scrape 1 at") and "2/2 endpoints" in lines[3]
    samples = store.table(result["run_id"], "gpu_samples").sort("t_s", "gpu_id")
    assert samples.height == 4 * 4
    # each endpoint has its own time: the run starts at the first answer, from either host
    assert samples["t_s"].min() == 0.0
    times = samples.filter(pl.col("gpu_id") == 0)["t_s"]  # host 0's scrapes
    assert 0.0 <= times[0] < 0.05 and (times.diff().drop_nulls() > 0).all()
    temps = samples.filter(pl.col("gpu_id") == 1)["temp_c"].to_list()
    assert temps == [51.0, 52.0, 53.0, 54.0]  # request n serves 50 + n + gpu
    # the gauge turned 79 at the third scrape: one event, one incident, the host down from then
    events = store.table(result["run_id"], "xid_events")
    assert events.select("gpu_id", "xid").rows() == [(1, 79)] and events["t_s"][0] == times[2]
    assert store.table(result["run_id"], "incidents")["xid"].to_list() == [79]
    states = store.table(result["run_id"], "host_states").sort("host_id", "start_s")
    host0 = states.filter(pl.col("host_id") == 0)
    assert host0["state"].to_list()[-1] == "down" and host0.filter(pl.col("state") == "down")["start_s"].min() \
        == times[2]
    # intervals of each host tile [0, end) without gaps or overlaps
    for host in (0, 1):
        rows = states.filter(pl.col("host_id") == host)
        assert rows["start_s"][0] == pytest.approx(0.0, abs=0.05) and rows["end_s"][-1] == samples["t_s"].max()
        assert (rows["start_s"].slice(1) == rows["end_s"].slice(0, rows.height - 1)).all()
    info = store.info(result["run_id"])
    assert info.kind == "ingest" and info.summary["scrapes"] == 4 and info.duration_s == samples["t_s"].max()


def test_a_dead_endpoint_on_the_first_scrape_is_an_error_and_writes_nothing(store_dir):
    url = dead_url()
    with pytest.raises(GoodputError, match=rf"{url}: cannot scrape"):
        scrape_loop([url], 0.05, Store(store_dir), scrapes=2, log=lambda _: None)
    assert Store(store_dir).run_ids() == []


def test_later_failures_are_counted_and_reported(store_dir):
    lines: list[str] = []
    broken_after_first = lambda n: exporter_page(0, n) if n == 0 else None  # noqa: E731
    garbled_second = lambda n: exporter_page(1, n) if n != 1 else "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"\n"  # noqa: E731
    with exporters(broken_after_first, garbled_second) as (a, b):
        result = scrape_loop([a.url, b.url], 0.05, Store(store_dir), scrapes=3, log=lines.append)
    assert result["failed_scrapes"] == {a.url: 2, "garbled scrapes": 1}
    assert any("HTTP 500" in line for line in lines) and any("skipped" in line for line in lines)
    samples = Store(store_dir).table(result["run_id"], "gpu_samples")
    # scrape 1: both hosts; scrape 2: host 0 failed and host 1 garbled (skipped whole); scrape 3: host 1 only
    assert samples.height == 2 + 2 + 2
    assert Store(store_dir).info(result["run_id"]).summary["failed_scrapes"] == result["failed_scrapes"]


def test_stopping_ends_cleanly_after_a_commit(store_dir):
    stop = threading.Event()
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        if len(lines) == 2:
            stop.set()

    with exporters(lambda n: exporter_page(0, n)) as (a,):
        result = scrape_loop([a.url], 0.05, Store(store_dir), log=log, stop=stop)
    assert result["scrapes"] == 2 and len(lines) == 2
    assert Store(store_dir).table(result["run_id"], "gpu_samples").height == 4


def test_urls_and_interval_are_checked():
    assert parse_urls("http://a:9400/metrics, http://b:9400/metrics") == ["http://a:9400/metrics",
                                                                         "http://b:9400/metrics"]
    with pytest.raises(GoodputError, match="not an http"):
        parse_urls("file:///etc/passwd")
    with pytest.raises(GoodputError, match="--every"):
        scrape_loop(["http://a/"], 0, Store("/nonexistent"), scrapes=1)


def test_cli_scrapes_n_times(store_dir, capsys):
    with exporters(lambda n: exporter_page(3, n)) as (a,):
        code = main(["ingest", "dcgm", "--scrape", a.url, "--every", "50ms", "--scrapes", "2", "--store",
                     str(store_dir), "--json"])
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert code == 0 and result["scrapes"] == 2 and result["gpus"] == 2 and result["samples"] == 8
    assert captured.err.count("\n") == 2 and "scrape 2 at" in captured.err
    assert Store(store_dir).run_ids() == [result["run_id"]]


def test_cli_dead_endpoint_exits_2(store_dir, capsys):
    url = dead_url()
    assert main(["ingest", "dcgm", "--scrape", url, "--scrapes", "1", "--store", str(store_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("goodput: error: ") and url in err
    assert not (store_dir / "runs").exists() or not list((store_dir / "runs").glob("*.duckdb"))


def test_sigterm_stops_the_command_after_its_commit(store_dir):
    with exporters(lambda n: exporter_page(0, n)) as (a,):
        process = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "ingest", "dcgm", "--scrape", a.url, "--every", "100ms",
             "--store", str(store_dir), "--json"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            first = process.stderr.readline()
            assert first.startswith("scrape 1 at"), first
            process.send_signal(signal.SIGTERM)
            out, _ = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0
    result = json.loads(out)
    assert result["scrapes"] >= 1
    assert Store(store_dir).table(result["run_id"], "gpu_samples").height == 2 * result["scrapes"]


def test_a_stamped_page_served_again_is_not_read_twice(store_dir):
    def page(n: int) -> str:
        stamp = 1_733_133_600_000 + 30_000 * (n // 2)  # requests 0,1 share a stamp, so do 2,3
        return "".join(f"DCGM_FI_DEV_GPU_TEMP{{{labels(0, g)}}} {60 + n} {stamp}\n" for g in range(2))

    with exporters(page) as (a,):
        result = scrape_loop([a.url], 0.05, Store(store_dir), scrapes=4, log=lambda _: None)
    samples = Store(store_dir).table(result["run_id"], "gpu_samples").sort("t_s", "gpu_id")
    assert samples.select("t_s", "gpu_id", "temp_c").rows() == [(0.0, 0, 60.0), (0.0, 1, 60.0), (30.0, 0, 62.0),
                                                                 (30.0, 1, 62.0)]
    assert result["skipped"] == {"values already read in an earlier scrape": 4} and result["samples"] == 4


def test_feeding_scrapes_one_by_one_gives_the_tables_of_one_file():
    from engine.ingest import observed_run
    from engine.ingest.dcgm import parse_dcgm
    from engine.ingest.observed import Observer
    from engine.ingest.sources import Source
    from tests.fixtures.ingest.samples import scrape_text

    # (host, gpu, scrape) -> XID; scrape n is built alone, its gauge showing the last XID up to n, its stamps moved
    xid = {(1, 3, 2): 79, (1, 3, 3): 48, (2, 5, 6): 13, (0, 0, 4): 95}
    scrapes = [scrape_text(3, 8, 1, xid={(h, g, 0): v for (h, g, s), v in xid.items() if s <= n})
               .replace("1733133600000", str(1733133600000 + 30_000 * n)) for n in range(8)]
    whole = observed_run(parse_dcgm([Source("all.prom", "".join(scrapes).encode())]), None, name="whole")
    observer = Observer()
    batches = [observer.add(parse_dcgm([Source(f"s{n}.prom", text.encode())])) for n, text in enumerate(scrapes)]
    for table in ("hosts", "gpus", "gpu_samples", "xid_events", "incidents"):
        pieces = pl.concat([b.tables[table] for b in batches], how="vertical_relaxed")
        assert pieces.equals(whole.tables[table]), table
    assert whole.tables["xid_events"]["xid"].to_list() == [79, 48, 95, 13]
