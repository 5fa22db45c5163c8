"""A watched run's telemetry, read from the Prometheus it watches (a watched run keeps no samples): one GPU's
panels, and the fleet window of every GPU at once, each down-sampled there to about the points a chart draws."""

from datetime import timedelta

import polars as pl
import streamlit as st

from engine.errors import GoodputError

# The DCGM series of the telemetry panels (dashboard.charts.gpu_telemetry.TELEMETRY_PANELS): a watched run keeps
# no samples, so one GPU's window is asked of Prometheus, down-sampled there to about the points the chart draws.
PROMETHEUS_PANELS = {
    "temp_c": "DCGM_FI_DEV_GPU_TEMP",
    "power_w": "DCGM_FI_DEV_POWER_USAGE",
    "util_pct": "DCGM_FI_DEV_GPU_UTIL",
}


def prometheus_telemetry(
    access, hostname: str, index: int, start: float, end: float, points: int
) -> pl.DataFrame:
    """One GPU's temperature, power and utilisation over [start, end] (epoch seconds) at about `points` steps,
    in gpu_telemetry's columns (t_s counted from `start`). Raises engine.ingest.prometheus.PrometheusError
    (naming the URL and query) when Prometheus cannot answer."""
    from engine.ingest.prometheus import gpu_series

    source = access.source()
    frame = None
    for column, metric in PROMETHEUS_PANELS.items():
        series = gpu_series(source, metric, start, end, points=points, hosts=[hostname])
        one = series.filter((pl.col("host") == hostname) & (pl.col("gpu") == index)).select(
            "t", pl.col("value").cast(pl.Float64).alias(column)
        )
        frame = one if frame is None else frame.join(one, on="t", how="full", coalesce=True)
    frame = frame.sort("t")
    step = max((end - start) / max(points, 1), 1.0)
    return frame.select(
        (pl.col("t") - start).alias("t_s"),
        *PROMETHEUS_PANELS,
        pl.lit(None, pl.Int32).alias("ecc_sbe"),
        pl.lit(None, pl.Int32).alias("ecc_dbe"),
        pl.lit(1, pl.Int64).alias("samples"),
        pl.lit(step).alias("bucket_s"),
    )


# The fleet window of a watched run (engine.ingest.prometheus.fleet_window): what the GPUs page draws of every GPU
# at once. Metric name, unit; the order is the selector's.
FLEET_METRICS = {
    "temperature": ("DCGM_FI_DEV_GPU_TEMP", "°C"),
    "power": ("DCGM_FI_DEV_POWER_USAGE", "W"),
    "utilisation": ("DCGM_FI_DEV_GPU_UTIL", "%"),
}


# How long one fleet window is kept: about a watch cycle, so every session looking at the same window in that
# time shares one set of queries, and a page rerun (a click elsewhere on it) costs nothing.
FLEET_TTL_S = 60


# Without the recording rules a fleet window is asked of every raw series: 19-27 s at 24,576 GPUs over 6 h on 2
# cores (bench/bench_prometheus.py), over the fetcher's usual 10 s. Waited for, so a large cluster still draws
# (the page says to load the rules); with them it takes under a second.
FLEET_TIMEOUT_S = 60.0


def prometheus_fleet(access, metric: str, start: float, end: float, points: int):
    """engine.ingest.prometheus.fleet_window for [start, end] (epoch seconds), cached a minute. Raises
    PrometheusError (naming the URL and query) when Prometheus cannot answer."""
    return _prometheus_fleet(access, metric, float(start), float(end), int(points))


@st.cache_data(max_entries=32, ttl=timedelta(seconds=FLEET_TTL_S), show_spinner=False)
def _prometheus_fleet(access, metric: str, start: float, end: float, points: int):
    from engine.ingest.prometheus import fleet_window

    return fleet_window(access.source(timeout_s=FLEET_TIMEOUT_S), metric, start, end, points=points)


def prometheus_access(run):
    """How to reach the Prometheus a watched run reads, else None. Its credentials come only from the endpoint
    configured in the dashboard's secrets file whose URL is the run's (dashboard/watch_endpoints.py), never from
    paths a run file names."""
    from dashboard.watch_endpoints import run_access

    scenario = run.scenario if isinstance(run.scenario, dict) else {}
    return run_access(scenario) if scenario.get("source") == "watch" else None


def prometheus_access_or_error(run):
    """(access, None), or (None, the error) when the run's stored access cannot be read (a hand-edited store)."""
    try:
        return prometheus_access(run), None
    except GoodputError as err:
        return None, err
