"""Events from DCGM gauges and counters: XIDs (changes of DCGM_FI_DEV_XID_ERRORS) and ECC increases, read at
the scrape step for only the GPUs whose value moved."""

import polars as pl

from engine.errors import GoodputError
from engine.ingest.dcgm import XID_METRIC
from engine.ingest.prometheus import promql
from engine.ingest.prometheus.answers import labels_frame
from engine.ingest.prometheus.series import MAX_QUERY_POINTS, by_host_gpu, fetch_range
from engine.ingest.prometheus.source import PrometheusError, PrometheusSource
from engine.ingest.prometheus.status import scrape_interval

ECC_METRICS = {"sbe": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "dbe": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}


def xid_events(
    source: PrometheusSource, start: float, end: float, step_s: float | None = None
) -> pl.DataFrame:
    """The XIDs DCGM_FI_DEV_XID_ERRORS reported in [start, end]: host, gpu, t (epoch s), xid (Int32).

    The gauge holds the last XID and never resets, so an event is a change to a value above 0 from the value
    before (engine/ingest/observed.py's rule); the value one step before `start` is read too, so an XID that
    arrives at the window's first scrape counts. `step_s` is the scrape interval (by default the smallest that
    Prometheus reports for its targets, else 15 s)."""
    changes = changed(source, XID_METRIC, start, end, step_s)
    event = (pl.col("value") != pl.col("before")) & (pl.col("value") > 0)
    return changes.filter(event).select("host", "gpu", "t", pl.col("value").cast(pl.Int32).alias("xid"))


def ecc_events(
    source: PrometheusSource, start: float, end: float, step_s: float | None = None
) -> pl.DataFrame:
    """Increases of the volatile ECC totals in [start, end]: host, gpu, t, kind ("sbe" single-bit, "dbe"
    double-bit), errors (Int64, the increase) and total (Int64, the count after it). A drop (the driver reloaded,
    the volatile count restarts) is not an event."""
    frames = []
    for kind, metric in ECC_METRICS.items():
        changes = changed(source, metric, start, end, step_s)
        frames.append(
            changes.filter(pl.col("value") > pl.col("before")).select(
                "host",
                "gpu",
                "t",
                pl.lit(kind).alias("kind"),
                (pl.col("value") - pl.col("before")).cast(pl.Int64).alias("errors"),
                pl.col("value").cast(pl.Int64).alias("total"),
            )
        )
    return pl.concat(frames).sort("t", "host", "gpu", "kind")


def changed(
    source: PrometheusSource, metric: str, start: float, end: float, step_s: float | None
) -> pl.DataFrame:
    """host, gpu, t, value, before: every step of [start, end] at which a GPU's series differs from its value
    one step earlier. Only the GPUs whose series changed at all are fetched step by step."""
    start_ms, end_ms = promql.window_ms(start, end)
    step = step_s if step_s is not None else scrape_interval(source)
    if not step > 0:
        raise GoodputError(f"step_s must be greater than 0 (got {step})")
    step_ms = max(1, round(step * 1000))
    first_ms = start_ms - step_ms  # the value before the window: an XID at its first scrape is a change
    span_ms = end_ms - first_ms + step_ms
    # One instant query finds the GPUs whose value moved in the window (plain max/min, no changes()); most GPUs
    # never log an XID, so the step-by-step query then asks for a handful of series instead of the cluster.
    moved = promql.by_gpu(
        f"max_over_time({metric}{{sel}}[{span_ms}ms]) != min_over_time({metric}{{sel}}[{span_ms}ms])", None
    )
    data = source.get("query", {"query": moved, "time": promql.seconds(end_ms)}, f"query {moved!r}")
    labels = labels_frame(data.get("result") or [])
    if labels.height == 0:
        return pl.DataFrame(
            schema={
                "host": pl.String,
                "gpu": pl.Int32,
                "t": pl.Float64,
                "value": pl.Float64,
                "before": pl.Float64,
            }
        )
    gpus = by_host_gpu(labels, None)
    steps = (end_ms - first_ms) // step_ms + 1
    if gpus.height * steps > MAX_QUERY_POINTS:
        raise PrometheusError(
            f"{source.shown}: {metric}: {gpus.height:,} GPUs changed, x {steps:,} steps of {step_ms / 1000:g} s"
            f" is over Goodput's limit of {MAX_QUERY_POINTS:,} points (MAX_QUERY_POINTS); narrow the window"
        )
    hosts = gpus["host"].unique().sort().to_list()
    labels, values = fetch_range(
        source, promql.by_gpu(metric + "{sel}", hosts), first_ms / 1000, end_ms / 1000, step_ms / 1000
    )
    series = by_host_gpu(labels, values).join(gpus.select("host", "gpu"), on=["host", "gpu"], how="semi")
    return (
        series.sort("host", "gpu", "t")
        .with_columns(before=pl.col("value").shift(1).over("host", "gpu"))
        .filter(pl.col("before").is_not_null() & (pl.col("t") >= start_ms / 1000))
        .select("host", "gpu", "t", "value", "before")
        .sort("t", "host", "gpu")
    )
