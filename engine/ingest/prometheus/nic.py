"""NIC ports from node_exporter's infiniband collector, read from Prometheus: each port's values now, and the steps
at which a port's rate changed or an error counter rose (engine/ingest/node_exporter.py names the metrics and
the nic_samples column each fills).

Ports are named as `goodput ingest node-exporter` names them: the host is the series' `instance` without its port
(node_exporter's target, `node017:9100` -> node017), the port is the `device` and `port` labels; a series without
an instance, a device or a port number is dropped. Like events.changed, one instant query a metric finds the ports
whose series moved in the window, and only their hosts are then read step by step.
"""

import polars as pl

from engine.errors import GoodputError
from engine.ingest.node_exporter import COLUMNS, GBPS_PER_BYTE_PER_S, MAX_PORT_NUMBER, RATE_METRIC
from engine.ingest.prometheus import promql
from engine.ingest.prometheus.answers import labels_frame, read_vector
from engine.ingest.prometheus.series import fetch_range
from engine.ingest.prometheus.source import PrometheusSource
from engine.ingest.prometheus.status import scrape_interval

PORT_KEYS = ("host", "device", "port")
# host, device, port, t (epoch s) and the nic_samples columns of each row
NIC_COLUMNS = {
    "host": pl.String,
    "device": pl.String,
    "port": pl.Int32,
    "t": pl.Float64,
    "rate_gbps": pl.Float32,
    "link_downed": pl.Int64,
    "symbol_errors": pl.Int64,
    "link_recoveries": pl.Int64,
    "rcv_errors": pl.Int64,
}


def nic_ports(source: PrometheusSource, at: float) -> pl.DataFrame:
    """Every port's values at `at` (epoch s; Prometheus' lookback of 5 minutes): NIC_COLUMNS, t = `at`."""
    at_ms, _ = promql.window_ms(at, at)
    frames = []
    for metric in COLUMNS:
        data = source.get("query", {"query": metric, "time": promql.seconds(at_ms)}, f"query {metric!r}")
        values = read_vector(source, data, f"query {metric!r}")
        keys = port_keys(values.drop("value"))
        frames.append(_long(keys.join(values.select("series", "value"), on="series"), metric, at_ms / 1000))
    return _wide(pl.concat(frames))


def nic_events(
    source: PrometheusSource, start: float, end: float, step_s: float | None = None
) -> pl.DataFrame:
    """The steps of [start, end] at which a port's rate changed or one of its counters rose (a drop, a reboot
    that restarts the counters, is not an event), and the step before each (so what rose, and by how much, is in
    the rows), with every value of the port at those steps: NIC_COLUMNS. `step_s` is the scrape interval (by
    default Prometheus' smallest, else 15 s)."""
    start_ms, end_ms = promql.window_ms(start, end)
    step = step_s if step_s is not None else scrape_interval(source)
    if not step > 0:
        raise GoodputError(f"step_s must be greater than 0 (got {step})")
    step_ms = max(1, round(step * 1000))
    first_ms = start_ms - step_ms  # the value one step before the window: a change at its first step counts
    span_ms = end_ms - first_ms + step_ms
    moved = []
    for metric in COLUMNS:
        query = f"max_over_time({metric}[{span_ms}ms]) != min_over_time({metric}[{span_ms}ms])"
        data = source.get("query", {"query": query, "time": promql.seconds(end_ms)}, f"query {query!r}")
        moved.append(port_keys(labels_frame(data.get("result") or [])).select(PORT_KEYS))
    hosts = pl.concat(moved)["host"].unique().sort().to_list()
    if not hosts:
        return pl.DataFrame(schema=NIC_COLUMNS)
    frames = []
    for metric in COLUMNS:
        query = by_host(metric, hosts)
        labels, points = fetch_range(source, query, first_ms / 1000, end_ms / 1000, step_ms / 1000)
        rows = port_keys(labels).join(points, on="series").drop("series")
        frames.append(_long(rows, metric, None))
    long = pl.concat(frames).sort(*PORT_KEYS, "metric", "t")
    previous = pl.col("value").shift(1).over(*PORT_KEYS, "metric")
    long = long.with_columns(before=previous, before_t=pl.col("t").shift(1).over(*PORT_KEYS, "metric"))
    rose = pl.when(pl.col("metric") == RATE_METRIC).then(pl.col("value") != pl.col("before"))
    flag = rose.otherwise(pl.col("value") > pl.col("before")) & pl.col("before").is_not_null()
    moved_at = long.filter(flag & (pl.col("t") >= start_ms / 1000))
    steps = pl.concat([moved_at.select(*PORT_KEYS, "t"), moved_at.select(*PORT_KEYS, t="before_t")]).unique()
    return _wide(long.join(steps, on=[*PORT_KEYS, "t"], how="semi").drop("before", "before_t"))


def by_host(metric: str, hosts: list[str]) -> str:
    """`metric` for the series of `hosts` (an instance of the host's name, with or without a port)."""
    promql.check_metric(metric)
    pattern = "|".join(promql.re2_escape(h) for h in hosts)
    return f"{metric}{{instance=~{promql.promql_string(f'({pattern})(:[0-9]+)?')}}}"


def port_keys(labels: pl.DataFrame) -> pl.DataFrame:
    """series, host (instance without its port), device, port (Int32) of the series that name a port."""

    def label(name: str) -> pl.Expr:
        return pl.col(name) if name in labels.columns else pl.lit(None, pl.String)

    port = label("port")
    keys = labels.select(
        "series",
        label("instance").str.replace(r":[0-9]+$", "").alias("host"),
        label("device").alias("device"),
        port.alias("port_label"),
    )
    ok = (
        (pl.col("host").fill_null("") != "")
        & (pl.col("device").fill_null("") != "")
        & pl.col("port_label").fill_null("").str.contains(r"^[0-9]{1,3}$")
    )
    keys = keys.filter(ok).with_columns(port=pl.col("port_label").cast(pl.Int32)).drop("port_label")
    return keys.filter(pl.col("port") <= MAX_PORT_NUMBER)


def _long(rows: pl.DataFrame, metric: str, at: float | None) -> pl.DataFrame:
    """host, device, port, t, metric, value; series of one port that differ in other labels keep the largest."""
    if at is not None:
        rows = rows.with_columns(t=pl.lit(at, pl.Float64))
    return (
        rows.group_by(*PORT_KEYS, "t")
        .agg(pl.col("value").max())
        .with_columns(metric=pl.lit(metric))
        .select(*PORT_KEYS, "t", "metric", "value")
    )


def _wide(long: pl.DataFrame) -> pl.DataFrame:
    """One row a port and time, a column a metric (rate in Gbps; counters whole and 0 or more, else null)."""
    if long.height == 0:
        return pl.DataFrame(schema=NIC_COLUMNS)
    value = pl.col("value")
    long = long.with_columns(
        column=pl.col("metric").replace_strict(COLUMNS, return_dtype=pl.String),
        value=pl.when(pl.col("metric") == RATE_METRIC)
        .then(pl.when(value.is_finite() & (value >= 0)).then(value * GBPS_PER_BYTE_PER_S))
        .otherwise(pl.when(value.is_between(0, 2.0**53) & (value == value.floor())).then(value)),
    )
    wide = long.pivot(on="column", index=[*PORT_KEYS, "t"], values="value", aggregate_function="first")
    missing = [pl.lit(None, pl.Float64).alias(c) for c in COLUMNS.values() if c not in wide.columns]
    return (
        wide.with_columns(*missing).select(*NIC_COLUMNS).cast(NIC_COLUMNS, strict=False).sort("t", *PORT_KEYS)
    )
