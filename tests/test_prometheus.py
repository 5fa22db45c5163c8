"""engine/ingest/prometheus/ against a real Prometheus scraping a small DCGM exporter (tests/servers/prometheus.py).

The exporter stamps scrape n of every host at started + n seconds with values dcgm_exporter.value() gives, so
every query below has one exact answer whatever Prometheus' timing.
"""

import json
import urllib.parse
import urllib.request
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from engine.errors import GoodputError
from engine.ingest import prometheus as prom
from engine.ingest.prometheus import (
    PrometheusError,
    PrometheusSource,
    answers,
    ecc_events,
    gpu_series,
    probe,
    query_range,
    series,
    xid_events,
)
from tests.fixtures.ingest.dcgm_exporter import value
from tests.servers.prometheus import (
    PrometheusServer,
    start_prometheus,
)
from tests.serving import free_port

TEMP = "DCGM_FI_DEV_GPU_TEMP"
GPU_SERIES = {"host": pl.String, "gpu": pl.Int32, "t": pl.Float64, "value": pl.Float64}


def expected(server: PrometheusServer, metric: str, scrapes: list[int], hosts: list[int] | None = None):
    """What the exporter served, one row a host, GPU and scrape, in gpu_series' order."""
    rows = [
        (server.hosts[h], g, server.at(n), float(value(metric, h, g, n)))
        for h in (range(len(server.hosts)) if hosts is None else hosts)
        for g in range(server.gpus_per_host)
        for n in scrapes
    ]
    return pl.DataFrame(rows, schema=GPU_SERIES, orient="row").sort("host", "gpu", "t")


def test_gpu_series_reads_every_host_and_gpu_exactly(prometheus_server: PrometheusServer) -> None:
    s = prometheus_server
    source = PrometheusSource(s.url)
    got = gpu_series(source, TEMP, s.at(0), s.at(5), points=5)
    assert_frame_equal(got, expected(s, TEMP, [0, 1, 2, 3, 4, 5]))
    assert got["host"].unique().sort().to_list() == ["node001", "node002", "node003", "node004:9400"]
    assert got.filter(host="node003", gpu=7)["value"].to_list() == [
        55,
        56,
        57,
        55,
        56,
        57,
    ]  # 40 + 8 + 7 + n % 3


def test_gpu_series_down_samples_and_filters_hosts(prometheus_server: PrometheusServer) -> None:
    s = prometheus_server
    source = PrometheusSource(s.url)
    # 6 s in 2 points: a step of 3 s, sampled at scrapes 0, 3 and 6
    got = gpu_series(
        source, "DCGM_FI_DEV_POWER_USAGE", s.at(0), s.at(6), points=2, hosts=["node002", "node004:9400"]
    )
    assert_frame_equal(got, expected(s, "DCGM_FI_DEV_POWER_USAGE", [0, 3, 6], hosts=[1, 3]))
    # max over each step: the temperature cycles 0, 1, 2 above its base, and each 3-s step holds a peak
    peaks = gpu_series(source, TEMP, s.at(0), s.at(6), points=2, hosts=["node001"], how="max")
    assert peaks.filter(gpu=0)["value"].to_list() == [40, 42, 42]


def test_query_range_returns_one_column_per_label(prometheus_server: PrometheusServer) -> None:
    s = prometheus_server
    got = query_range(PrometheusSource(s.url), f'{TEMP}{{Hostname="node002",gpu="4"}}', s.at(1), s.at(3), 1)
    assert got.columns == [
        "Hostname", "UUID", "__name__", "device", "gpu", "instance", "job", "modelName", "pci_bus_id", "t", "value"
    ]  # fmt: skip
    assert got["t"].to_list() == [s.at(1), s.at(2), s.at(3)]
    assert got["value"].to_list() == [value(TEMP, 1, 4, n) for n in (1, 2, 3)]
    assert got.row(0, named=True)["instance"] == "node002:9400"
    assert got.schema["t"] == pl.Float64 and got.schema["value"] == pl.Float64


def test_xid_events_are_changes_of_the_gauge(prometheus_server: PrometheusServer) -> None:
    s = prometheus_server
    source = PrometheusSource(s.url)
    got = xid_events(source, s.at(0), s.at(5))
    assert got.rows() == [
        ("node002", 2, s.at(2), 13),
        (s.xid_host, s.xid_gpu, s.xid_at, 79),
        ("node002", 2, s.at(4), 43),
    ]
    assert got.schema == {"host": pl.String, "gpu": pl.Int32, "t": pl.Float64, "xid": pl.Int32}
    # the scrape before the window is read: an XID at the window's first scrape is an event; a held value is not
    assert xid_events(source, s.xid_at, s.xid_at).rows() == [(s.xid_host, s.xid_gpu, s.xid_at, 79)]
    assert xid_events(source, s.at(5), s.at(6)).height == 0
    # a coarser step (the scrape interval Prometheus reports is 1 s, used by default) still sees each change
    assert xid_events(source, s.at(0), s.at(5), step_s=1).equals(got)


def test_ecc_events_are_increases(prometheus_server: PrometheusServer) -> None:
    s = prometheus_server
    got = ecc_events(PrometheusSource(s.url), s.at(0), s.at(5))
    assert got.rows() == [("node001", 6, s.at(3), "sbe", 3, 8), ("node002", 5, s.at(4), "dbe", 2, 2)]


def test_probe_reports_version_and_targets(prometheus_server: PrometheusServer) -> None:
    status = probe(PrometheusSource(prometheus_server.url))
    assert status.reachable and status.error is None and status.down_since is None
    assert status.version is not None and status.version.startswith("2.")
    assert sorted(t.instance for t in status.targets) == [f"node00{i}:9400" for i in range(1, 5)]
    assert status.targets_up == 4 and status.targets_down == 0
    assert {t.scrape_interval_s for t in status.targets} == {1}
    assert prom.scrape_interval(PrometheusSource(prometheus_server.url)) == 1


def test_bad_promql_gives_prometheus_own_error(prometheus_server: PrometheusServer) -> None:
    source = PrometheusSource(prometheus_server.url)
    with pytest.raises(PrometheusError) as err:
        query_range(source, "rate(DCGM_FI_DEV_GPU_TEMP[", prometheus_server.at(0), prometheus_server.at(1), 1)
    text = str(err.value)
    assert text.startswith(f"{prometheus_server.url}: query 'rate(DCGM_FI_DEV_GPU_TEMP[': HTTP 400")
    assert "Prometheus answered bad_data: 1:27: parse error" in text


def test_huge_window_is_refused_before_asking() -> None:
    # nothing listens there: a refusal that names the limit shows no request was made
    source = PrometheusSource(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(PrometheusError, match=r"86,401 points a series .* over Prometheus' limit of 11,000"):
        query_range(source, TEMP, 1_733_133_600, 1_733_133_600 + 86_400, 1)
    with pytest.raises(GoodputError, match="points must be 1 to 10,999"):
        gpu_series(source, TEMP, 1_733_133_600, 1_733_220_000, points=20_000)
    with pytest.raises(GoodputError, match="is not a Prometheus metric name"):
        gpu_series(source, 'up} or vector(1) or {a="', 1_733_133_600, 1_733_220_000)


def test_bad_urls_and_credentials_never_shown() -> None:
    with pytest.raises(GoodputError, match="--prometheus: 'ftp://host/' is not an http"):
        PrometheusSource("ftp://host/")
    with pytest.raises(GoodputError, match="has a query or fragment"):
        PrometheusSource("http://user:secret@host:9090/?x=1")
    port = free_port()
    source = PrometheusSource(
        f"http://user:secret@127.0.0.1:{port}", headers={"Authorization": "Bearer tok3n"}
    )
    with pytest.raises(PrometheusError) as err:
        query_range(source, TEMP, 1_733_133_600, 1_733_133_700, 10)
    assert str(err.value).startswith(
        f"http://user:***@127.0.0.1:{port}: query 'DCGM_FI_DEV_GPU_TEMP': unreachable ("
    )
    assert "secret" not in str(err.value) and "tok3n" not in str(err.value)


def test_path_prefix_as_thanos_and_victoriametrics_serve_it(tmp_path: Path) -> None:
    """--web.route-prefix puts the API under /prom, as Thanos (/thanos) or VictoriaMetrics (/select/0/prometheus)
    do: the base URL is everything before /api/v1. Then the server stops: unreachable, and since when."""
    server = start_prometheus(tmp_path, hosts=["rack1-a"], bare_host=None, route_prefix="/prom")
    try:
        assert server.url.endswith("/prom")
        for url in (server.url, server.url + "/", server.url + "/api/v1/query_range"):
            source = PrometheusSource(url)
            assert source.base == server.url
            got = gpu_series(source, TEMP, server.at(0), server.at(3), points=3)
            assert got["host"].unique().to_list() == ["rack1-a"]
            assert got.filter(gpu=1)["value"].to_list() == [value(TEMP, 0, 1, n) for n in range(4)]
            assert xid_events(source, server.at(0), server.at(4)).rows() == [
                ("rack1-a", 3, server.xid_at, 79)
            ]
        root = PrometheusSource(server.url.removesuffix("/prom"))
        with pytest.raises(PrometheusError, match=r"HTTP 404"):
            gpu_series(root, TEMP, server.at(0), server.at(3), points=3)
        up = probe(PrometheusSource(server.url))
        assert up.reachable and up.targets_up == 1
    finally:
        server.stop()
    source = PrometheusSource(server.url)
    with pytest.raises(PrometheusError, match=r"query 'vector\(1\)': unreachable \(.*refused"):
        source.get("query", {"query": "vector(1)"}, "query 'vector(1)'")
    first = probe(source, up)
    assert not first.reachable and first.down_since == first.checked_at and "unreachable" in first.error
    again = probe(source, first)
    assert not again.reachable and again.down_since == first.down_since


def test_other_json_layouts_read_the_same(prometheus_server: PrometheusServer) -> None:
    """The fast reader cuts values out of compact JSON; any other layout goes through json.loads: same frames."""
    s = prometheus_server
    params = {"query": TEMP, "start": s.at(0), "end": s.at(4), "step": 1}
    with urllib.request.urlopen(f"{s.url}/api/v1/query_range?{urllib.parse.urlencode(params)}") as answer:
        body = answer.read()
    source = PrometheusSource(s.url)
    assert answers.read_matrix_fast(body) is not None
    fast = answers.read_matrix(source, body, "q")
    pretty = json.dumps(json.loads(body), indent=2).encode()
    assert answers.read_matrix_fast(pretty)[1].height == 0  # nothing cut out: read_matrix reads it whole
    slow = answers.read_matrix(source, pretty, "q")
    assert_frame_equal(fast[0], slow[0])
    assert_frame_equal(fast[1], slow[1])
    assert fast[1].height == 4 * 8 * 5


def test_chunked_queries_give_the_one_answer(
    prometheus_server: PrometheusServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Long ranges are asked in time chunks, in parallel: 2 steps a chunk gives what one query gives."""
    s = prometheus_server
    source = PrometheusSource(s.url)
    whole = gpu_series(source, TEMP, s.at(0), s.at(5), points=5)
    xids = xid_events(source, s.at(0), s.at(5))
    monkeypatch.setattr(series, "CHUNK_STEPS", 2)
    assert_frame_equal(gpu_series(source, TEMP, s.at(0), s.at(5), points=5), whole)
    assert_frame_equal(xid_events(source, s.at(0), s.at(5)), xids)
    got = query_range(source, f'{TEMP}{{gpu="0"}}', s.at(0), s.at(4), 1)
    assert got.height == 4 * 5 and got.filter(Hostname="node001")["value"].to_list() == [40, 41, 42, 40, 41]
