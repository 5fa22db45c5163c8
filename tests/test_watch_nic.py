"""NIC ports from the real test Prometheus: the fake exporter (tests/fixtures/ingest/dcgm_exporter.py) serves
node_exporter's infiniband metrics for two ports of each named host; host 0's mlx5_1 trains down to 200 Gbps at
scrape 3, host 1's mlx5_0 counts symbol errors 0 -> 4 -> 10 and one link down. The watch stores each port when
first seen and the changes with the step before each, exactly, and the Network page shows the degraded ports."""

import time

import pytest
from test_charts_pages import open_page

from engine.ingest.prometheus import PrometheusSource, nic_events, nic_ports
from engine.ingest.watch import loop, watch_loop
from engine.store import Store

PORT = (400.0, 0, 0, 0, 0)  # a healthy port: 400 Gbps, no errors


@pytest.fixture(autouse=True)
def fast_cycles(monkeypatch):
    monkeypatch.setattr(loop, "MIN_EVERY_S", 0.1)


def _wait_until(t: float) -> None:
    while time.time() < t:
        time.sleep(0.1)


def _expected(server) -> list[tuple]:
    """(host, device, port, scrape, rate, link_downed, symbols, recoveries, rcv_errors): each change and the
    scrape before it."""
    h0, h1 = server.hosts[0], server.hosts[1]
    return sorted(
        [
            (h0, "mlx5_1", 1, 2, *PORT),
            (h0, "mlx5_1", 1, 3, 200.0, 0, 0, 0, 0),
            (h1, "mlx5_0", 1, 1, *PORT),
            (h1, "mlx5_0", 1, 2, 400.0, 0, 4, 0, 0),
            (h1, "mlx5_0", 1, 3, 400.0, 0, 4, 0, 0),
            (h1, "mlx5_0", 1, 4, 400.0, 1, 10, 0, 0),
        ]
    )


def _as_scrapes(rows: list[tuple], server) -> list[tuple]:
    """(host, device, port, t, ...) with t as the scrape it follows (to 1 us: a stored time added back rounds)."""
    return sorted(
        (host, device, port, int((t - server.started + 1e-6) // server.every_s), *values)
        for host, device, port, t, *values in rows
    )


def test_nic_events_and_the_ports_now(prometheus_server):
    server = prometheus_server
    _wait_until(server.at(6) + 2)
    source = PrometheusSource(server.url)
    events = nic_events(source, server.started - 5, server.at(6) + 1, step_s=1.0)
    assert _as_scrapes(events.rows(), server) == _expected(server)
    now = nic_ports(source, server.at(6) + 1)
    named = server.hosts[:3]  # the bare host serves no NIC metrics
    assert now.height == 2 * len(named) and set(now["host"]) == set(named)
    assert now.filter(now["rate_gbps"] < 400)["device"].to_list() == ["mlx5_1"]
    assert now.filter(now["symbol_errors"] > 0).select("link_downed", "symbol_errors").rows() == [(1, 10)]


def test_the_watch_stores_nic_samples_and_the_page_shows_the_degraded_ports(prometheus_server, store_dir):
    server = prometheus_server
    _wait_until(server.at(6) + 2)
    store = Store(store_dir)
    result = watch_loop(
        store,
        prometheus_url=server.url,
        every_s=0.2,
        cycles=2,  # the second cycle reads nothing new: no row twice
        lookback_s=time.time() - server.started + 5,
        quiet=True,
    )
    run_id = result["run_id"]
    origin = store.info(run_id).started_at.timestamp()
    with store.connect(run_id) as con:
        rows = con.sql(
            "SELECT h.hostname, n.device, n.port, n.t_s, n.rate_gbps, n.link_downed, n.symbol_errors,"
            " n.link_recoveries, n.rcv_errors FROM nic_samples n JOIN hosts h USING (host_id)"
        ).pl()
    stored = [(host, device, port, t + origin, *values) for host, device, port, t, *values in rows.rows()]
    later = server.at(6)
    changes = [r for r in stored if r[3] < later]
    first_seen = sorted((r[0], r[1], *r[4:]) for r in stored if r[3] >= later)
    assert _as_scrapes(changes, server) == _expected(server)
    h0, h1, h2 = server.hosts[:3]
    # the ports that never changed, stored once as the watch first saw them
    assert first_seen == sorted(
        [(h0, "mlx5_0", *PORT), (h1, "mlx5_1", *PORT), (h2, "mlx5_0", *PORT), (h2, "mlx5_1", *PORT)]
    )
    assert result["nic_ports"] == 6 and result["hosts"] == len(server.hosts)

    at = open_page("app_pages/network.py", {"run": run_id, "tab": "Degraded links"})
    assert not at.exception
    [table] = [d.value for d in at.dataframe if "problem" in d.value.columns]
    assert table[["hostname", "device", "problem"]].values.tolist() == [
        [h0, "mlx5_1", "rate below nominal"],
        [h1, "mlx5_0", "symbol errors"],
        [h1, "mlx5_0", "link downed"],
    ]
    assert table["rise"].isna().tolist() == [True, False, False] and table["rise"].tolist()[1:] == [10, 1]
