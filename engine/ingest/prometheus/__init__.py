"""Read DCGM series from Prometheus' HTTP API (and from Thanos, Mimir or VictoriaMetrics, which serve the same API).

    source = PrometheusSource("http://prometheus:9090", headers={"X-Scope-OrgID": "team-a"})
    temps = gpu_series(source, "DCGM_FI_DEV_GPU_TEMP", start, end, points=600)   # host, gpu, t, value
    fleet = fleet_window(source, "DCGM_FI_DEV_GPU_TEMP", start, end)             # band, hottest, coolest
    xids = xid_events(source, start, end)                                         # host, gpu, t, xid

Raw per-GPU samples stay in Prometheus: a page asks for its window, down-sampled to what its chart shows, and only
events (XIDs, ECC increases) are derived here to be stored. Series are named as engine/ingest/dcgm.py names them:
the host is the `Hostname` label dcgm-exporter writes, else the scrape's `instance` (what a live scrape of that
endpoint would call it), and the GPU is the `gpu` index label (a series whose label is no GPU index is dropped,
as dcgm.py skips it).

The modules, in the order a request passes them:
- source: PrometheusSource (the base URL, headers, one Fetcher) and PrometheusError. Every request goes through
  engine/ingest/http_fetch.py (a whole-answer deadline, answers bounded by engine/limits.py MAX_SCRAPE_BYTES,
  same-origin redirects only, credentials never shown); errors name the URL and the query.
- promql: the query text (selectors by host, escapes) and the window in whole milliseconds.
- answers: matrix answers read without a Python loop over points (a 24,576-GPU answer is ~270 MB of JSON).
- series: query_range and gpu_series, asked in time chunks in parallel, bounded in points.
- events: xid_events and ecc_events, changes read at the scrape step for the GPUs that moved.
- throttle: clock_events, where clocks-event reasons changed or throttle-violation counters rose (with the SM clock).
- nic: nic_ports and nic_events, NIC ports of node_exporter's infiniband collector now and where they changed.
- status: probe (reachable since when, version, targets) and scrape_interval.
- fleet: fleet_window, a metric across the whole fleet within 2 s, from recording rules where loaded
  (data/prometheus/goodput-rules.yml), else from the raw series.
"""

from engine.ingest.prometheus.events import ECC_METRICS, ecc_events, xid_events
from engine.ingest.prometheus.fleet import FleetWindow, fleet_window, recorded_name
from engine.ingest.prometheus.nic import nic_events, nic_ports
from engine.ingest.prometheus.series import MAX_POINTS_PER_SERIES, MAX_QUERY_POINTS, gpu_series, query_range
from engine.ingest.prometheus.source import PrometheusError, PrometheusSource
from engine.ingest.prometheus.status import (
    DEFAULT_SCRAPE_S,
    PrometheusStatus,
    TargetHealth,
    probe,
    scrape_interval,
)
from engine.ingest.prometheus.throttle import clock_events

__all__ = [
    "DEFAULT_SCRAPE_S",
    "ECC_METRICS",
    "MAX_POINTS_PER_SERIES",
    "MAX_QUERY_POINTS",
    "FleetWindow",
    "PrometheusError",
    "PrometheusSource",
    "PrometheusStatus",
    "TargetHealth",
    "clock_events",
    "ecc_events",
    "fleet_window",
    "gpu_series",
    "nic_events",
    "nic_ports",
    "probe",
    "query_range",
    "recorded_name",
    "scrape_interval",
    "xid_events",
]
