"""Live scraping against local HTTP servers that serve DCGM scrapes changing between requests."""

import base64
import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from engine import limits
from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import live
from engine.ingest.live import FETCH_DEADLINE_S, parse_urls, scrape_loop
from engine.store import Store
from tests.fixtures.ingest.samples import labels

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def fast_scrapes(monkeypatch):
    """These tests scrape local fakes many times a second: the floor meant for real exporters
    (live.MIN_EVERY_S) is lowered in this process. tests/test_watch_doors.py checks the real floor."""
    monkeypatch.setattr(live, "MIN_EVERY_S", 0.01)


def exporter_page(host: int, request: int, xid: int = 0) -> str:
    """What dcgm-exporter serves: no timestamps, two GPUs; the temperature follows the request number."""
    rows = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    rows += [f"DCGM_FI_DEV_GPU_TEMP{{{labels(host, g)}}} {50 + request + g}" for g in range(2)]
    rows += [
        "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.",
        "# TYPE DCGM_FI_DEV_XID_ERRORS gauge",
    ]
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
    with exporters(lambda n: exporter_page(0, n, xid=79 if n >= 2 else 0), lambda n: exporter_page(1, n)) as (
        a,
        b,
    ):
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
    assert (
        host0["state"].to_list()[-1] == "down"
        and host0.filter(pl.col("state") == "down")["start_s"].min() == times[2]
    )
    # intervals of each host tile [0, end) without gaps or overlaps
    for host in (0, 1):
        rows = states.filter(pl.col("host_id") == host)
        assert (
            rows["start_s"][0] == pytest.approx(0.0, abs=0.05) and rows["end_s"][-1] == samples["t_s"].max()
        )
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
    garbled_second = lambda n: exporter_page(1, n) if n != 1 else 'DCGM_FI_DEV_GPU_TEMP{gpu="0"\n'  # noqa: E731
    with exporters(broken_after_first, garbled_second) as (a, b):
        result = scrape_loop([a.url, b.url], 0.05, Store(store_dir), scrapes=3, log=lines.append)
    assert result["failed_scrapes"] == {a.url: 2, "garbled scrapes": 1}
    assert any("HTTP 500" in line for line in lines) and any("skipped" in line for line in lines)
    samples = Store(store_dir).table(result["run_id"], "gpu_samples")
    # scrape 1: both hosts; scrape 2: host 0 failed and host 1 garbled (skipped whole); scrape 3: host 1 only
    assert samples.height == 2 + 2 + 2
    assert Store(store_dir).info(result["run_id"]).summary["failed_scrapes"] == result["failed_scrapes"]


def test_quiet_keeps_only_the_problems(store_dir):
    """`ingest dcgm --scrape --json`: no line for a scrape that went well, one for each that did not."""
    lines: list[str] = []
    broken_second = lambda n: exporter_page(0, n) if n != 1 else None  # noqa: E731
    with exporters(broken_second) as (a,):
        result = scrape_loop([a.url], 0.05, Store(store_dir), scrapes=3, log=lines.append, quiet=True)
    assert result["scrapes"] == 2 and result["failed_scrapes"] == {a.url: 1}
    assert len(lines) == 1 and lines[0].startswith("scrape 2: ") and "HTTP 500" in lines[0]


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
    assert parse_urls("http://a:9400/metrics, http://b:9400/metrics") == [
        "http://a:9400/metrics",
        "http://b:9400/metrics",
    ]
    with pytest.raises(GoodputError, match="not an http"):
        parse_urls("file:///etc/passwd")
    with pytest.raises(GoodputError, match="--every"):
        scrape_loop(["http://a/"], 0, Store("/nonexistent"), scrapes=1)


def test_cli_scrapes_n_times(store_dir, capsys):
    with exporters(lambda n: exporter_page(3, n)) as (a,):
        code = main(
            [
                "ingest",
                "dcgm",
                "--scrape",
                a.url,
                "--every",
                "50ms",
                "--scrapes",
                "2",
                "--store",
                str(store_dir),
                "--json",
            ]
        )
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert code == 0 and result["scrapes"] == 2 and result["gpus"] == 2 and result["samples"] == 8
    assert captured.err == ""  # --json: the object on stdout, no line a scrape (those are for people)
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
            [
                sys.executable,
                "-m",
                "engine.cli",
                "ingest",
                "dcgm",
                "--scrape",
                a.url,
                "--every",
                "1s",
                "--store",
                str(store_dir),
                "--json",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            # --json reports no scrape on stderr: the first commit shows as the run in the store (written
            # whole under a temporary name, then renamed, so a run listed is a committed scrape)
            deadline = time.monotonic() + 60
            while not Store(store_dir).run_ids() and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert Store(store_dir).run_ids(), process.poll()
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0 and err == "", err
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
    assert samples.select("t_s", "gpu_id", "temp_c").rows() == [
        (0.0, 0, 60.0),
        (0.0, 1, 60.0),
        (30.0, 0, 62.0),
        (30.0, 1, 62.0),
    ]
    assert result["skipped"] == {"values already read in an earlier scrape": 4} and result["samples"] == 4


def test_feeding_scrapes_one_by_one_gives_the_tables_of_one_file():
    from engine.ingest import observed_run
    from engine.ingest.dcgm import parse_dcgm
    from engine.ingest.observed import Observer
    from engine.ingest.sources import Source
    from tests.fixtures.ingest.samples import scrape_text

    # (host, gpu, scrape) -> XID; scrape n is built alone, its gauge showing the last XID up to n, its stamps moved
    xid = {(1, 3, 2): 79, (1, 3, 3): 48, (2, 5, 6): 13, (0, 0, 4): 95}
    scrapes = [
        scrape_text(3, 8, 1, xid={(h, g, 0): v for (h, g, s), v in xid.items() if s <= n}).replace(
            "1733133600000", str(1733133600000 + 30_000 * n)
        )
        for n in range(8)
    ]
    whole = observed_run(parse_dcgm([Source("all.prom", "".join(scrapes).encode())]), None, name="whole")
    observer = Observer()
    batches = [
        observer.add(parse_dcgm([Source(f"s{n}.prom", text.encode())])) for n, text in enumerate(scrapes)
    ]
    for table in ("hosts", "gpus", "gpu_samples", "xid_events", "incidents"):
        pieces = pl.concat([b.tables[table] for b in batches], how="vertical_relaxed")
        assert pieces.equals(whole.tables[table]), table
    assert whole.tables["xid_events"]["xid"].to_list() == [79, 48, 95, 13]


# ----- hostile endpoints: slow drip, redirects, bad samples, credentials, bombs --------------------------------


class Endpoint:
    """A local HTTP server whose `respond(handler, request_number)` writes the whole answer itself."""

    def __init__(self, respond) -> None:
        self.requests = 0
        self.closing = threading.Event()
        self.seen_auth: list[str | None] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                number = endpoint.requests
                endpoint.requests += 1
                endpoint.seen_auth.append(self.headers.get("Authorization"))
                with contextlib.suppress(OSError):  # the client cut us off: that is the point of some tests
                    respond(self, number)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def endpoints(*responders) -> Iterator[list[Endpoint]]:
    started = [Endpoint(r) for r in responders]
    try:
        yield started
    finally:
        for one in started:
            one.close()


def send(handler: BaseHTTPRequestHandler, body: bytes | str, status: int = 200, **headers: str) -> None:
    data = body.encode() if isinstance(body, str) else body
    handler.send_response(status)
    for key, value in {"Content-Length": str(len(data)), **headers}.items():
        handler.send_header(key.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(data)


def drip(handler: BaseHTTPRequestHandler, closing: threading.Event, every_s: float = 0.2) -> None:
    """A 200 answer without a length, then one byte every `every_s` until the client leaves."""
    handler.send_response(200)
    handler.end_headers()
    while not closing.wait(every_s):
        handler.wfile.write(b"#")
        handler.wfile.flush()


def serve_page(host: int = 0):
    return lambda h, n: send(h, exporter_page(host, n))


def test_a_slow_drip_endpoint_meets_the_whole_answer_deadline(store_dir):
    with endpoints(lambda h, n: drip(h, ep.closing)) as (ep,):
        started = time.monotonic()
        with pytest.raises(GoodputError, match=rf"^{ep.url}: no complete answer within 1 s$"):
            scrape_loop([ep.url], 0.05, Store(store_dir), scrapes=1, log=lambda _: None, deadline_s=1.0)
        assert time.monotonic() - started < 20  # a socket timeout alone would wait forever
    assert Store(store_dir).run_ids() == []


def test_a_silent_endpoint_and_a_later_drip_are_counted_and_the_loop_carries_on(store_dir):
    lines: list[str] = []

    def flaky(handler, number):
        if number == 1:
            drip(handler, flaky_ep.closing)
        elif number == 2:
            flaky_ep.closing.wait(3)  # accepts, then says nothing at all
        else:
            send(handler, exporter_page(0, number))

    with endpoints(flaky) as (flaky_ep,):
        result = scrape_loop(
            [flaky_ep.url], 0.05, Store(store_dir), scrapes=4, log=lines.append, deadline_s=0.5
        )
    assert result["failed_scrapes"] == {flaky_ep.url: 2} and result["scrapes"] == 2
    assert sum("no complete answer within 0.5 s" in line for line in lines) == 2
    assert Store(store_dir).table(result["run_id"], "gpu_samples").height == 2 * 2


def test_an_answer_past_the_size_limit_is_refused(store_dir, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SCRAPE_BYTES", 1000)
    page = exporter_page(0, 0) * 3
    assert len(page) > 1000
    chunked = lambda h, n: drip(h, ep.closing, every_s=0.0005)  # noqa: E731 (no length: refused as it arrives)
    with endpoints(lambda h, n: send(h, page), chunked) as (big, ep):
        for url in (big.url, ep.url):
            with pytest.raises(
                GoodputError,
                match=rf"^{url}: answer larger than 1,000 bytes, over Goodput's limit"
                r" \(engine/limits.py MAX_SCRAPE_BYTES\)",
            ):
                scrape_loop([url], 0.05, Store(store_dir), scrapes=1, log=lambda _: None, deadline_s=5)


def test_a_compressed_answer_is_inflated_within_the_limit(store_dir, monkeypatch):
    page = exporter_page(0, 0).encode()
    gzipped = lambda h, n: send(h, gzip.compress(page), Content_Encoding="gzip")  # noqa: E731
    with endpoints(gzipped) as (ep,):
        result = scrape_loop([ep.url], 0.05, Store(store_dir), scrapes=1, log=lambda _: None)
    assert result["samples"] == 4
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 4 * 1024 * 1024)
    bomb = pa.compress(bytes(8 * 1024 * 1024), "zstd", asbytes=True)
    with endpoints(lambda h, n: send(h, bomb)) as (ep,):
        with pytest.raises(GoodputError, match=rf"^{ep.url}: zstd data inflates past 4,194,304 bytes"):
            scrape_loop([ep.url], 0.05, Store(store_dir), scrapes=1, log=lambda _: None)


def test_redirects_are_followed_only_within_the_origin(store_dir):
    def same_origin(handler, number):
        if handler.path == "/metrics":
            send(handler, "", 302, Location="/real?x=1")
        else:
            assert handler.path == "/real?x=1"
            send(handler, exporter_page(0, number))

    with endpoints(same_origin, serve_page()) as (ep, other):
        result = scrape_loop([ep.url], 0.05, Store(store_dir), scrapes=1, log=lambda _: None)
        assert result["samples"] == 4 and ep.requests == 2
        targets = {
            "port": other.url,
            "host": f"http://localhost:{ep.port}/metrics",
            "scheme": f"https://127.0.0.1:{ep.port}/metrics",
            "credentials": f"http://127.0.0.1:{other.port}/metrics".replace("//", "//u:hunter2@"),
        }
        for kind, target in targets.items():
            with endpoints(lambda h, n, t=target: send(h, "", 301, Location=t)) as (hop,):
                with pytest.raises(GoodputError) as caught:
                    scrape_loop([hop.url], 0.05, Store(store_dir), scrapes=1, log=lambda _: None)
            message = str(caught.value)
            assert message.startswith(f"{hop.url}: redirected to ") and "same origin" in message, kind
            assert "hunter2" not in message
        assert other.requests == 0  # nothing followed a redirect to the other server
    with endpoints(lambda h, n: send(h, "", 307, Location="/metrics")) as (loop,):
        with pytest.raises(GoodputError, match="more than 5 redirects"):
            scrape_loop([loop.url], 0.05, Store(store_dir), scrapes=1, log=lambda _: None)
        assert loop.requests == 6


def test_bad_samples_are_skipped_counted_and_reported(store_dir):
    def bad_second(handler, number):
        page = exporter_page(0, number)
        if number == 1:
            page += "".join(
                [
                    f"DCGM_FI_DEV_XID_ERRORS{{{labels(0, 0)}}} 3e9\n".replace('gpu="0"', 'gpu="0",x="1"'),
                    f"DCGM_FI_DEV_GPU_TEMP{{{labels(0, 0)}}} 60 100000000000000000\n".replace(
                        'gpu="0"', 'gpu="0",x="2"'
                    ),
                    f"DCGM_FI_DEV_POWER_USAGE{{{labels(0, 1)}}} 1e308\n",
                    f"DCGM_FI_DEV_GPU_TEMP{{{labels(0, 0)}}} 61\n".replace('gpu="0"', 'gpu="4000000000"'),
                ]
            )
        send(handler, page)

    lines: list[str] = []
    with endpoints(bad_second) as (ep,):
        result = scrape_loop([ep.url], 0.05, Store(store_dir), scrapes=3, log=lines.append)
    assert result["scrapes"] == 3 and result["failed_scrapes"] == {}
    assert result["skipped"] == {
        "values out of range for their column (beyond Float32, or an XID or ECC count not"
        " a whole 0-2^31-1)": 2,
        "samples stamped outside the run's time window": 1,
        "series whose gpu label is not a GPU index (0-71)": 1,
    }
    assert "skipped 4 bad samples" in lines[1] and "skipped" not in lines[0] + lines[2]
    store = Store(store_dir)
    assert store.info(result["run_id"]).summary["skipped"] == result["skipped"]
    samples = store.table(result["run_id"], "gpu_samples")
    assert samples.height == 3 * 2 and samples["power_w"].null_count() == 6
    assert (
        store.table(result["run_id"], "xid_events").height == 0
        and store.info(result["run_id"]).duration_s < 60
    )


def test_credentials_are_used_but_never_shown_or_stored(store_dir, capsys):
    token = "Basic " + base64.b64encode(b"scraper:s3cr3t-pw").decode()

    def guarded(handler, number):
        if handler.headers.get("Authorization") != token:
            send(handler, "who are you", 401, WWW_Authenticate='Basic realm="dcgm"')
        elif number == 2:
            send(handler, "broken", 500)
        else:
            send(handler, exporter_page(0, number))

    with endpoints(guarded) as (ep,):
        url = ep.url.replace("//", "//scraper:s3cr3t-pw@")
        shown = ep.url.replace("//", "//scraper:***@")
        code = main(
            [
                "ingest",
                "dcgm",
                "--scrape",
                url,
                "--every",
                "50ms",
                "--scrapes",
                "3",
                "--store",
                str(store_dir),
                "--json",
            ]
        )
        captured = capsys.readouterr()
        assert code == 0 and ep.seen_auth[0] == token
        result = json.loads(captured.out)
        assert result["endpoints"] == [shown] and result["failed_scrapes"] == {shown: 1}
        assert f"{shown}: HTTP 500" in captured.err
        store = Store(store_dir)
        info = store.info(result["run_id"])
        assert info.name == f"live: {shown}" and info.scenario["endpoints"] == [shown]
        wrong = ep.url.replace("//", "//scraper:wrong-pw@")
        assert main(["ingest", "dcgm", "--scrape", wrong, "--scrapes", "1", "--store", str(store_dir)]) == 2
        assert (
            main(["ingest", "dcgm", "--scrape", "ftp://scraper:s3cr3t-pw@host/x", "--store", str(store_dir)])
            == 2
        )
        captured_errors = capsys.readouterr()
    everything = (
        captured.out + captured.err + captured_errors.out + captured_errors.err + json.dumps(info.summary)
    )
    assert "s3cr3t" not in everything and "wrong-pw" not in everything
    assert "scraper:***@" in captured_errors.err and "HTTP 401" in captured_errors.err
    for path in store_dir.rglob("*"):
        if path.is_file():
            assert b"s3cr3t" not in path.read_bytes(), path


def test_a_stop_while_fetches_hang_ends_the_loop_at_once(store_dir):
    stop = threading.Event()
    lines: list[str] = []

    def hang_after_first(handler, number):
        if number == 0:
            send(handler, exporter_page(0, 0))
        else:
            drip(handler, ep.closing)

    def log(line: str) -> None:
        lines.append(line)
        threading.Timer(0.3, stop.set).start()

    with endpoints(hang_after_first) as (ep,):
        started = time.monotonic()
        result = scrape_loop([ep.url], 0.05, Store(store_dir), log=log, stop=stop, deadline_s=60)
        assert time.monotonic() - started < 30  # the stop, not the 60 s deadline, ended it
    assert result["scrapes"] == 1 and "stopped before every endpoint answered" in lines[-1]
    assert Store(store_dir).table(result["run_id"], "gpu_samples").height == 2


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_command_while_its_endpoint_hangs(store_dir, sig):
    def hang_after_first(handler, number):
        if number == 0:
            send(handler, exporter_page(0, 0))
        else:
            drip(handler, ep.closing, every_s=1.0)  # one byte a second, forever

    with endpoints(hang_after_first) as (ep,):
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "engine.cli",
                "ingest",
                "dcgm",
                "--scrape",
                ep.url,
                "--every",
                "1s",
                "--store",
                str(store_dir),
                "--json",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            while ep.requests < 2:  # the first scrape is committed, the second is hanging now
                time.sleep(0.05)
            time.sleep(0.5)
            sent = time.monotonic()
            process.send_signal(sig)
            out, err = process.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    # the signal, not the scrape's whole-answer deadline, ended it (room left for a busy machine)
    assert took < FETCH_DEADLINE_S - 1, f"{took:.1f} s to stop"
    result = json.loads(out)
    assert result["scrapes"] == 1 and "stopped before every endpoint answered" in err
    assert Store(store_dir).table(result["run_id"], "gpu_samples").height == 2
