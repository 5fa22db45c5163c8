"""Clock events from the real test Prometheus: the fake exporter (tests/fixtures/ingest/dcgm_exporter.py) holds
host 0 GPU 1 down (reasons 0x48, thermal violation rising) and host 2 GPU 4 (reasons 0x4 under field 112's older
name, power violation rising); the watch stores the SM clock, the reasons and both counters where they moved."""

import time

import polars as pl
import pytest

from engine.ingest.prometheus import PrometheusSource, clock_events
from engine.ingest.watch import loop, watch_loop
from engine.store import Store
from tests.fixtures.ingest import dcgm_exporter


@pytest.fixture(autouse=True)
def fast_cycles(monkeypatch):
    monkeypatch.setattr(loop, "MIN_EVERY_S", 0.1)


def _wait_until(t: float) -> None:
    while time.time() < t:
        time.sleep(0.1)


# (host index, gpu, scrape, sm_clock_mhz, reasons, power_violation_ns, thermal_violation_ns) of every event
EXPECTED = [
    (0, 1, 2, 1200.0, 0x48, 0, 0),  # reasons 0 -> 0x48
    (0, 1, 3, 1200.0, 0x48, 0, 1_000_000_000),  # thermal violation rose
    (0, 1, 4, 1980.0, 0, 0, 2_000_000_000),  # reasons back to 0, violation rose again
    (2, 4, 3, 1600.0, 0x4, 0, 0),  # older name of field 112
    (2, 4, 4, 1600.0, 0x4, 500_000_000, 0),
    (2, 4, 5, 1980.0, 0, 1_000_000_000, 0),
]


def _expected(server) -> list[tuple]:
    return sorted(
        (server.hosts[h], g, n, clock, reasons, power, thermal)
        for h, g, n, clock, reasons, power, thermal in EXPECTED
    )


def _as_scrapes(rows: list[tuple], server) -> list[tuple]:
    """(host, gpu, t, ...) with t as the scrape it follows: each event lies at the first step that saw it, in
    [stamp, stamp + a scrape interval) (to 1 us: a time stored from the run's start and added back rounds)."""
    out = []
    for host, gpu, t, *values in rows:
        out.append((host, gpu, int((t - server.started + 1e-6) // server.every_s), *values))
    return sorted(out)


def test_clock_events_read_the_changes_with_the_values_at_each(prometheus_server):
    server = prometheus_server
    _wait_until(server.at(6) + 2)
    source = PrometheusSource(server.url)
    events = clock_events(source, server.started - 5, server.at(6) + 1, step_s=1.0)
    assert events.schema["clocks_event_reasons"] == pl.Int64 and events.schema["sm_clock_mhz"] == pl.Float32
    assert dcgm_exporter.THERMAL_GPU == (0, 1) and dcgm_exporter.POWER_GPU == (2, 4)
    assert _as_scrapes(events.rows(), server) == _expected(server)
    # a window after the last change holds no event
    assert clock_events(source, server.at(6) + 0.5, server.at(6) + 1, step_s=1.0).is_empty()


def test_the_watch_stores_the_clock_events_as_gpu_samples(prometheus_server, tmp_path):
    server = prometheus_server
    _wait_until(server.at(6) + 2)
    store = Store(tmp_path)
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
            "SELECT h.hostname, g.index, s.t_s, s.sm_clock_mhz, s.clocks_event_reasons, s.power_violation_ns,"
            " s.thermal_violation_ns FROM gpu_samples s JOIN gpus g USING (gpu_id) JOIN hosts h USING (host_id)"
            " WHERE s.clocks_event_reasons IS NOT NULL"
        ).pl()
        ecc_only = con.sql(
            "SELECT count(*) AS n FROM gpu_samples WHERE clocks_event_reasons IS NULL AND sm_clock_mhz IS NULL"
        ).pl()["n"][0]
    stored = [(host, gpu, t + origin, *values) for host, gpu, t, *values in rows.rows()]
    assert _as_scrapes(stored, server) == _expected(server)
    assert result["clock_events"] == len(EXPECTED)
    assert ecc_only == 2  # the two ECC rises (tests/test_watch.py) stay rows of their own
