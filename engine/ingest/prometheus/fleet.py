"""The fleet window: one DCGM metric across every GPU of the cluster over a page's window, as a band (max, p99,
median, min at each step) and the hosts at its extremes, within the issue's 2 s for 24,576 GPUs.

Any query that touches every raw series over 6 hours costs Prometheus itself 2.2-5.5 s on 24,576 GPUs (2 cores,
bench/bench_prometheus.py), so the band is read from recording rules where they are loaded
(data/prometheus/goodput-rules.yml: `goodput:dcgm_gpu_temp:max` and so on, one series each, and per-host max
and min), as fleets do. One cheap query says whether they cover the window; without them the same figures are
asked of the raw series (max(M), quantile(0.99, M), ..., topk over max_over_time), in parallel, slower.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from engine.errors import GoodputError
from engine.ingest.prometheus import promql
from engine.ingest.prometheus.answers import read_vector
from engine.ingest.prometheus.series import MAX_POINTS_PER_SERIES, check_points, fetch_range
from engine.ingest.prometheus.source import PrometheusSource

# The band's columns after t, each a statistic across GPUs at one step, and its PromQL over raw series.
BAND = {"min": "min({m})", "p50": "quantile(0.5, {m})", "p99": "quantile(0.99, {m})", "max": "max({m})"}
COUNT = "count"
MAX_TOP = 1000
# Prometheus' default --query.lookback-delta: an instant of a query sees a series' sample up to 5 min old, so a
# recorded series covers a moment when one of its samples lies within 5 min before it.
LOOKBACK_MS = 5 * 60 * 1000
HOST = "goodput_host"  # the label host_label writes (a name no exporter uses)
PARALLEL_QUERIES = 8  # the raw way asks 7 queries at once


@dataclass(frozen=True)
class FleetWindow:
    """One metric across the fleet over [start, end]. `band`: t (epoch s), min, p50, p99, max across GPUs at
    each step; `hottest`: the hosts with the highest max over the window (host, max), highest first;
    `coolest`: the lowest min (host, min), lowest first (idle GPUs show there for utilisation). `recorded`: the
    recording rules answered (else the raw series did); `gpus`: the most GPU series seen at one step;
    `elapsed_s`: Prometheus to frames."""

    metric: str
    band: pl.DataFrame
    hottest: pl.DataFrame
    coolest: pl.DataFrame
    recorded: bool
    gpus: int
    step_s: float
    elapsed_s: float


def recorded_name(metric: str, statistic: str) -> str:
    """The recording rule's series for `metric`'s `statistic` (max, p99, p50, min, count, host_max, host_min):
    DCGM_FI_DEV_GPU_TEMP's max is `goodput:dcgm_gpu_temp:max` (Prometheus' level:metric:operation names)."""
    name = metric.lower()
    if name.startswith("dcgm_fi_dev_"):
        name = "dcgm_" + name.removeprefix("dcgm_fi_dev_")
    return f"goodput:{name}:{statistic}"


def fleet_window(
    source: PrometheusSource,
    metric: str,
    start: float,
    end: float,
    points: int = 600,
    *,
    top: int = 20,
    use_rules: bool = True,
) -> FleetWindow:
    """`metric` across every GPU over [start, end] (epoch s) in about `points` steps, and the `top` hottest and
    coolest hosts (Hostname, else instance, as gpu_series names them). From the recording rules when they cover
    the window (and `use_rules`), else from the raw series."""
    began = time.perf_counter()
    promql.check_metric(metric)
    check_points("fleet_window", points)
    if not 1 <= top <= MAX_TOP:
        raise GoodputError(f"fleet_window: top must be 1 to {MAX_TOP:,} (got {top:,})")
    start_ms, end_ms = promql.window_ms(start, end)
    step_ms = promql.step_for(start_ms, end_ms, points)
    recorded = use_rules and _rules_cover(source, metric, start_ms, end_ms, step_ms)
    span = f"[{max(1, end_ms - start_ms)}ms]"
    if recorded:
        band = "{__name__=~" + promql.promql_string(recorded_name(metric, "(max|p99|p50|min|count)")) + "}"
        hot = f"max_over_time({recorded_name(metric, 'host_max')}{span})"
        cool = f"min_over_time({recorded_name(metric, 'host_min')}{span})"
        asks = [_Ask(band, ranged=True)]
    else:
        hot, cool = f"max_over_time({metric}{span})", f"min_over_time({metric}{span})"
        asks = [_Ask(query.format(m=metric), ranged=True) for query in BAND.values()]
        asks.append(_Ask(f"count({metric})", ranged=True))  # the order of _band's columns
    asks += [
        _Ask(f"topk({top}, max by ({HOST}) ({promql.host_label(hot, HOST)}))", ranged=False),
        _Ask(f"bottomk({top}, min by ({HOST}) ({promql.host_label(cool, HOST)}))", ranged=False),
    ]
    with ThreadPoolExecutor(min(PARALLEL_QUERIES, len(asks))) as pool:
        *lines, hottest, coolest = pool.map(lambda ask: ask.run(source, start_ms, end_ms, step_ms), asks)
    band = _band(lines, recorded)
    return FleetWindow(
        metric=metric,
        band=band.drop(COUNT),
        hottest=_extremes(hottest, "max", descending=True),
        coolest=_extremes(coolest, "min", descending=False),
        recorded=recorded,
        gpus=int(band[COUNT].max() or 0) if band.height else 0,
        step_s=step_ms / 1000,
        elapsed_s=time.perf_counter() - began,
    )


@dataclass(frozen=True)
class _Ask:
    """One query of the window: a range query (the band's lines) or an instant one at the window's end (the
    hosts at an extreme over the whole window)."""

    query: str
    ranged: bool

    def run(self, source: PrometheusSource, start_ms: int, end_ms: int, step_ms: int) -> pl.DataFrame:
        if self.ranged:
            # a few series at most: one request for the whole window (no time chunks)
            labels, points = fetch_range(
                source,
                self.query,
                start_ms / 1000,
                end_ms / 1000,
                step_ms / 1000,
                chunk_steps=MAX_POINTS_PER_SERIES,
            )
            return points.join(labels, on="series").drop("series")
        what = f"query {self.query!r}"
        data = source.get("query", {"query": self.query, "time": promql.seconds(end_ms)}, what)
        return read_vector(source, data, what)


def _rules_cover(source: PrometheusSource, metric: str, start_ms: int, end_ms: int, step_ms: int) -> bool:
    """Does the recorded max hold a sample within the lookback of the window's first step (or during that step:
    rules evaluate at their own offset, so a series recorded from the window's start may begin a little after
    it) and of its last? One range query of two steps over one series: rules loaded an hour ago do not cover a
    6-hour window, and the raw series answer instead."""
    first = min(start_ms + step_ms, end_ms)
    query = f"count_over_time({recorded_name(metric, 'max')}[{LOOKBACK_MS + step_ms}ms])"
    labels, points = fetch_range(source, query, first / 1000, end_ms / 1000, max(1, end_ms - first) / 1000)
    return labels.height == 1 and set(points["t"].to_list()) == {first / 1000, end_ms / 1000}


def _band(lines: list[pl.DataFrame], recorded: bool) -> pl.DataFrame:
    """t, min, p50, p99, max, count (Float64) at each step any line has, in time order."""
    columns = [*BAND, COUNT]
    if recorded:  # one answer, its series named goodput:<metric>:<column>
        (answer,) = lines
        if "__name__" not in answer.columns:
            answer = answer.with_columns(__name__=pl.lit(None, pl.String))
        column = pl.col("__name__").str.extract(r":([a-z0-9]+)$")
        parts = {c: answer.filter(column == c).select("t", "value") for c in columns}
    else:
        parts = dict(zip(columns, (line.select("t", "value") for line in lines), strict=True))
    steps = pl.concat([p.select("t") for p in parts.values()]).unique()
    for name, part in parts.items():
        steps = steps.join(part.rename({"value": name}), on="t", how="left")
    return steps.sort("t").select("t", *columns)


def _extremes(answer: pl.DataFrame, column: str, *, descending: bool) -> pl.DataFrame:
    """host, `column` of an instant answer by host; hosts without a name are left out, as gpu_series does."""
    hosts = answer[HOST] if HOST in answer.columns else pl.Series(HOST, [None] * answer.height, pl.String)
    frame = pl.DataFrame(
        {"host": hosts, column: answer["value"]}, schema={"host": pl.String, column: pl.Float64}
    )
    return frame.filter(pl.col("host").is_not_null()).sort(column, "host", descending=[descending, False])
