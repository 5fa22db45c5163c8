"""fleet_window (engine/ingest/prometheus/fleet.py) against a real Prometheus: from the recording rules of
data/prometheus/goodput-rules.yml (a second server that evaluates them every second) and from the raw series
(the shared server, which has no rules), with the same numbers as the exporter's value() gives.

The window is scrape 0 to scrape 5 of the exporter, each step at a scrape's stamp plus the rules' evaluation
offset (tests/servers/prometheus.py), so both ways read exactly scrape k at step k. Prometheus' quantile
interpolates linearly between the two nearest ranks, as numpy's default quantile does.
"""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal

from engine.errors import GoodputError
from engine.ingest.prometheus import FleetWindow, PrometheusSource, fleet_window, recorded_name
from tests.fixtures.ingest.dcgm_exporter import value
from tests.servers.prometheus import PrometheusServer, start_prometheus
from tests.serving import free_port

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "data" / "prometheus" / "goodput-rules.yml"
TEMP, POWER, UTIL = "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL"
SCRAPES = range(6)
STATISTICS = ("max", "min", "p99", "p50", "count", "host_max", "host_min")


@pytest.fixture(scope="module")
def rules_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, float]]:
    """A Prometheus that evaluates the rule file every second, once it has recorded scrape 5; and the offset of
    its evaluations after each scrape's stamp."""
    server = start_prometheus(tmp_path_factory.mktemp("prometheus-rules"), rules=RULES)
    try:
        offset = server.rules_offset_s(recorded_name(TEMP, "max"), SCRAPES[-1])
        yield server, offset
    finally:
        server.stop()


def expected_band(server: PrometheusServer, metric: str, offset: float) -> pl.DataFrame:
    """t, min, p50, p99, max across the exporter's GPUs at each scrape of the window."""
    hosts, gpus = range(len(server.hosts)), range(server.gpus_per_host)
    rows = []
    for n in SCRAPES:
        values = np.array([value(metric, h, g, n) for h in hosts for g in gpus], dtype=float)
        rows.append(
            (server.at(n) + offset, values.min(), *np.quantile(values, [0.5, 0.99]).tolist(), values.max())
        )
    return pl.DataFrame(rows, schema=["t", "min", "p50", "p99", "max"], orient="row")


def expected_hosts(server: PrometheusServer, metric: str, top: int, *, hottest: bool) -> pl.DataFrame:
    """Each host's max (or min) over the window's scrapes, the `top` highest (or lowest), ties by name."""
    column = "max" if hottest else "min"
    pick = max if hottest else min
    rows = [
        (host, float(pick(value(metric, h, g, n) for g in range(server.gpus_per_host) for n in SCRAPES)))
        for h, host in enumerate(server.hosts)
    ]
    frame = pl.DataFrame(rows, schema={"host": pl.String, column: pl.Float64}, orient="row")
    return frame.sort(column, "host", descending=[hottest, False]).head(top)


def window(server: PrometheusServer, offset: float, metric: str, **options) -> FleetWindow:
    source = PrometheusSource(server.url)
    return fleet_window(source, metric, server.at(0) + offset, server.at(SCRAPES[-1]) + offset, 5, **options)


def check_against_exporter(got: FleetWindow, server: PrometheusServer, metric: str, offset: float) -> None:
    assert got.metric == metric and got.step_s == 1.0
    assert got.gpus == len(server.hosts) * server.gpus_per_host == 32
    assert_frame_equal(got.band, expected_band(server, metric, offset), abs_tol=1e-9, check_exact=False)
    assert got.elapsed_s > 0


@pytest.mark.parametrize("metric", [TEMP, POWER, UTIL])
def test_fleet_window_from_the_rules_is_exact(rules_server, metric: str) -> None:
    server, offset = rules_server
    got = window(server, offset, metric, top=2)
    assert got.recorded
    check_against_exporter(got, server, metric, offset)


def test_hottest_and_coolest_hosts_from_the_rules(rules_server) -> None:
    server, offset = rules_server
    for metric in (TEMP, POWER):
        got = window(server, offset, metric, top=2)
        assert_frame_equal(got.hottest, expected_hosts(server, metric, 2, hottest=True))
        assert_frame_equal(got.coolest, expected_hosts(server, metric, 2, hottest=False))
    # temperature: 40 + 4h + g + n % 3, so host h peaks at 49 + 4h; the bare host is named by its instance
    temps = window(server, offset, TEMP, top=2)
    assert temps.hottest.rows() == [("node004:9400", 61.0), ("node003", 57.0)]
    assert temps.coolest.rows() == [("node001", 40.0), ("node002", 44.0)]
    # utilisation is the same on every host: all four tie at the top, listed by name
    util = window(server, offset, UTIL, top=4)
    assert util.hottest.rows() == [(host, 57.0) for host in sorted(server.hosts)]


def test_raw_series_give_the_same_numbers(rules_server) -> None:
    server, offset = rules_server
    for metric in (TEMP, POWER, UTIL):
        recorded = window(server, offset, metric, top=2)
        raw = window(server, offset, metric, top=2, use_rules=False)
        assert recorded.recorded and not raw.recorded
        assert_frame_equal(raw.band, recorded.band, abs_tol=1e-9, check_exact=False)
        assert raw.gpus == recorded.gpus
        if metric != UTIL:  # the rules also see the sample current at the window's start (scrape 0), the raw
            # range only samples inside it: utilisation's lowest value is at scrape 0 (module fixtures)
            assert_frame_equal(raw.hottest, recorded.hottest)
            assert_frame_equal(raw.coolest, recorded.coolest)


def test_a_prometheus_without_the_rules_answers_from_raw_series(prometheus_server: PrometheusServer) -> None:
    """The shared server loads no rule file: the recorded series are absent, and the raw ones say the same."""
    server = prometheus_server
    offset = 0.25
    for metric in (TEMP, POWER, UTIL):
        got = window(server, offset, metric, top=2)
        assert not got.recorded
        check_against_exporter(got, server, metric, offset)
    got = window(server, offset, TEMP, top=3)
    assert_frame_equal(got.hottest, expected_hosts(server, TEMP, 3, hottest=True))
    assert_frame_equal(got.coolest, expected_hosts(server, TEMP, 3, hottest=False))


def test_rules_that_do_not_cover_the_window_are_not_used(rules_server) -> None:
    """Rules loaded after the window began (here: before the first scrape) would leave a gap: the raw series
    answer, and a metric without rules is read raw too."""
    server, offset = rules_server
    source = PrometheusSource(server.url)
    early = fleet_window(source, TEMP, server.at(0) + offset - 600, server.at(5) + offset, points=605)
    assert not early.recorded and early.gpus == 32 and early.step_s == 1.0
    assert_frame_equal(
        early.band.tail(6), expected_band(server, TEMP, offset), abs_tol=1e-9, check_exact=False
    )
    assert early.band.height == 6  # no samples before scrape 0: those steps are absent, not zero
    sbe = fleet_window(
        source, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", server.at(0) + offset, server.at(5) + offset, 5
    )
    assert not sbe.recorded and sbe.band["max"].to_list() == [5, 5, 5, 8, 8, 8]


def test_bounds_are_checked_before_asking() -> None:
    source = PrometheusSource(f"http://127.0.0.1:{free_port()}")  # nothing listens: no request is made
    start, end = 1_733_133_600, 1_733_155_200
    with pytest.raises(GoodputError, match="fleet_window: points must be 1 to 10,999"):
        fleet_window(source, TEMP, start, end, points=11_000)
    with pytest.raises(GoodputError, match="fleet_window: top must be 1 to 1,000"):
        fleet_window(source, TEMP, start, end, top=0)
    with pytest.raises(GoodputError, match="is not a Prometheus metric name"):
        fleet_window(source, "up or vector(1)", start, end)
    with pytest.raises(GoodputError, match="is before start"):
        fleet_window(source, TEMP, end, start)


def test_the_rule_file_records_what_fleet_window_asks_for() -> None:
    checked = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 21 rules found" in checked.stdout
    (group,) = yaml.safe_load(RULES.read_text())["groups"]
    assert group["name"] == "goodput" and "interval" not in group  # the global evaluation_interval
    rules = {rule["record"]: rule["expr"] for rule in group["rules"]}
    for metric in (TEMP, POWER, UTIL):
        assert rules[recorded_name(metric, "max")] == f"max({metric})"
        assert rules[recorded_name(metric, "min")] == f"min({metric})"
        assert rules[recorded_name(metric, "p99")] == f"quantile(0.99, {metric})"
        assert rules[recorded_name(metric, "p50")] == f"quantile(0.5, {metric})"
        assert rules[recorded_name(metric, "count")] == f"count({metric})"
        assert rules[recorded_name(metric, "host_max")] == f"max by (Hostname, instance) ({metric})"
        assert rules[recorded_name(metric, "host_min")] == f"min by (Hostname, instance) ({metric})"
    assert len(rules) == 3 * len(STATISTICS)
    assert recorded_name(TEMP, "max") == "goodput:dcgm_gpu_temp:max"
