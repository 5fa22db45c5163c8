"""Clock events from DCGM: the moments a GPU's clocks-event (throttle) reasons changed or a throttle-violation
counter rose, with the SM clock, the reasons and both counters at each such moment.

    DCGM_FI_DEV_CLOCKS_EVENT_REASONS (field 112; DCGM_FI_DEV_CLOCK_THROTTLE_REASONS on exporters built on DCGM
    before 3.3): a bitmask, engine.telemetry.clocks.decode_reasons reads it
    DCGM_FI_DEV_POWER_VIOLATION, DCGM_FI_DEV_THERMAL_VIOLATION: time held down by a power or thermal limit (ns,
    cumulative)
    DCGM_FI_DEV_SM_CLOCK: MHz

Like XIDs and ECC (events.py), only the GPUs whose reasons or counters moved are read step by step
(events.changed), and the values at those steps are then asked for those GPUs' hosts only; the raw series stay
in Prometheus. A GPU held down over a whole window without a change in it is not an event of that window.
"""

import polars as pl

from engine.errors import GoodputError
from engine.ingest.dcgm import COLUMNS
from engine.ingest.prometheus import promql
from engine.ingest.prometheus.events import changed
from engine.ingest.prometheus.series import MAX_QUERY_POINTS, by_host_gpu, fetch_range
from engine.ingest.prometheus.source import PrometheusError, PrometheusSource
from engine.ingest.prometheus.status import scrape_interval

# Field 112 under its current name first: a GPU served under both names reads the current one.
REASON_METRICS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
VIOLATION_METRICS = ("DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION")
SM_CLOCK_METRIC = "DCGM_FI_DEV_SM_CLOCK"
# host, gpu, t (epoch s) and the gpu_samples columns (engine/ingest/dcgm.py COLUMNS) of each event
CLOCK_COLUMNS = {
    "host": pl.String,
    "gpu": pl.Int32,
    "t": pl.Float64,
    "sm_clock_mhz": pl.Float32,
    "clocks_event_reasons": pl.Int64,
    "power_violation_ns": pl.Int64,
    "thermal_violation_ns": pl.Int64,
}


def clock_events(
    source: PrometheusSource, start: float, end: float, step_s: float | None = None
) -> pl.DataFrame:
    """The steps of [start, end] at which a GPU's clocks-event reasons changed (to any value, 0 included: the
    end of a throttle is news too) or a violation counter rose (a drop, a driver reload, is not), with the SM
    clock, the reasons and both counters at that step (null where the GPU serves no such series): CLOCK_COLUMNS.
    `step_s` is the scrape interval (by default Prometheus' smallest, else 15 s)."""
    step = step_s if step_s is not None else scrape_interval(source)
    if not step > 0:
        raise GoodputError(f"step_s must be greater than 0 (got {step})")
    keys = []
    for metric in REASON_METRICS:
        moved = changed(source, metric, start, end, step)
        keys.append(moved.filter(pl.col("value") != pl.col("before")).select("host", "gpu", "t"))
    for metric in VIOLATION_METRICS:
        moved = changed(source, metric, start, end, step)
        keys.append(moved.filter(pl.col("value") > pl.col("before")).select("host", "gpu", "t"))
    events = pl.concat(keys).unique().sort("t", "host", "gpu")
    if events.height == 0:
        return pl.DataFrame(schema=CLOCK_COLUMNS)
    return _values_at(source, events, start, end, step)


def _values_at(
    source: PrometheusSource, events: pl.DataFrame, start: float, end: float, step: float
) -> pl.DataFrame:
    """Each metric's value at the events' steps, asked on the grid events.changed uses (one step before
    `start`, then every step), for the events' hosts only."""
    start_ms, end_ms = promql.window_ms(start, end)
    step_ms = max(1, round(step * 1000))
    first_ms = start_ms - step_ms
    gpus = events.select("host", "gpu").unique()
    steps = (end_ms - first_ms) // step_ms + 1
    if gpus.height * steps > MAX_QUERY_POINTS:
        raise PrometheusError(
            f"{source.shown}: clock events: {gpus.height:,} GPUs x {steps:,} steps of {step_ms / 1000:g} s is over"
            f" Goodput's limit of {MAX_QUERY_POINTS:,} points (MAX_QUERY_POINTS); narrow the window"
        )
    hosts = gpus["host"].unique().sort().to_list()
    out = events
    for column, metrics in (
        ("sm_clock_mhz", (SM_CLOCK_METRIC,)),
        ("clocks_event_reasons", REASON_METRICS),
        ("power_violation_ns", VIOLATION_METRICS[:1]),
        ("thermal_violation_ns", VIOLATION_METRICS[1:]),
    ):
        found = []
        for rank, metric in enumerate(metrics):
            assert COLUMNS[metric] == column  # the column `goodput ingest dcgm` fills from it
            query = promql.by_gpu(metric + "{sel}", hosts)
            labels, values = fetch_range(source, query, first_ms / 1000, end_ms / 1000, step_ms / 1000)
            rows = by_host_gpu(labels, values).select("host", "gpu", "t", "value")
            found.append(
                rows.join(events, on=["host", "gpu", "t"], how="semi").with_columns(rank=pl.lit(rank))
            )
        value = (
            pl.concat(found)
            .sort("rank")
            .group_by("host", "gpu", "t")
            .agg(pl.col("value").first().alias(column))
        )
        out = out.join(value, on=["host", "gpu", "t"], how="left")
    return out.select(
        pl.col(c).cast(t, strict=False) if c in ("host", "gpu", "t") else _whole(c, t)
        for c, t in CLOCK_COLUMNS.items()
    ).sort("t", "host", "gpu")


def _whole(column: str, dtype: pl.DataType) -> pl.Expr:
    """A value as the store's type: counters and the bitmask are whole and 0 or more (else null)."""
    value = pl.col(column)
    if dtype == pl.Float32:
        return value.cast(pl.Float32)
    ok = value.is_finite() & (value >= 0) & (value < 2.0**63) & (value == value.floor())
    return pl.when(ok).then(value).cast(pl.Int64, strict=False).alias(column)
