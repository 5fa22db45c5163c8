"""Range queries: any PromQL (`query_range`) and DCGM series by host and GPU (`gpu_series`), asked in time
chunks in parallel and bounded in points."""

from concurrent.futures import ThreadPoolExecutor

import polars as pl

from engine.errors import GoodputError
from engine.ingest import bounds
from engine.ingest.prometheus import promql
from engine.ingest.prometheus.answers import read_matrix
from engine.ingest.prometheus.source import PrometheusError, PrometheusSource

# Prometheus refuses a range query of more than 11,000 points a series (its web/api/v1 `maxResolution`).
MAX_POINTS_PER_SERIES = 11_000
# Points (series x steps) one call may bring back, all chunks together: Prometheus' own default for
# --query.max-samples. At ~20 bytes a point of JSON and 24 bytes a row once read, that is ~1.2 GB at most.
MAX_QUERY_POINTS = 50_000_000
# A range query is split into time chunks of this many steps, asked in parallel: Prometheus evaluates them on
# several cores, each answer stays well under MAX_SCRAPE_BYTES, and Polars reads one while the next arrives.
CHUNK_STEPS = 150
PARALLEL_QUERIES = 4


def query_range(
    source: PrometheusSource, query: str, start: float, end: float, step_s: float
) -> pl.DataFrame:
    """`query` (PromQL) evaluated every `step_s` from `start` to `end` (epoch seconds): one column per label (a
    label called `t` or `value` becomes `label_t`, `label_value`), then `t` (Float64, epoch s) and `value`.

    A window of more than 11,000 points a series is refused before anything is asked: choose a larger step."""
    labels, points = fetch_range(source, query, start, end, step_s)
    labels = labels.rename({c: f"label_{c}" for c in labels.columns if c in ("t", "value")})
    return (
        points.join(labels, on="series", how="left")
        .select(*[c for c in labels.columns if c != "series"], "t", "value")
        .sort([*[c for c in labels.columns if c != "series"], "t"], nulls_last=True)
    )


def gpu_series(
    source: PrometheusSource,
    metric: str,
    start: float,
    end: float,
    points: int = 600,
    hosts: list[str] | None = None,
    *,
    how: str = "last",
) -> pl.DataFrame:
    """A DCGM metric (DCGM_FI_DEV_GPU_TEMP, ..._POWER_USAGE, ...) by host and GPU over [start, end], about
    `points` steps: columns host (String), gpu (Int32), t (Float64, epoch s), value (Float64).

    `how`: "last" samples the series at each step (what Grafana draws); "max", "min" or "avg" summarise each step
    (`max_over_time`), so a chart of 600 points does not miss a one-scrape spike. Series of one GPU that differ in
    other labels (a driver upgrade, two jobs scraping one exporter) are merged with `max`, step by step."""
    promql.check_metric(metric)
    if how not in ("last", "max", "min", "avg"):
        raise GoodputError(f"gpu_series: how={how!r}; use last, max, min or avg")
    check_points("gpu_series", points)
    start_ms, end_ms = promql.window_ms(start, end)
    step_ms = promql.step_for(start_ms, end_ms, points)
    template = metric + "{sel}" if how == "last" else f"{how}_over_time({metric}{{sel}}[{step_ms}ms])"
    query = promql.by_gpu(template, hosts)
    labels, values = fetch_range(source, query, start_ms / 1000, end_ms / 1000, step_ms / 1000)
    return by_host_gpu(labels, values).select("host", "gpu", "t", "value").sort("host", "gpu", "t")


def check_points(caller: str, points: int) -> None:
    if not 1 <= points <= MAX_POINTS_PER_SERIES - 1:
        raise GoodputError(f"{caller}: points must be 1 to {MAX_POINTS_PER_SERIES - 1:,} (got {points:,})")


def fetch_range(
    source: PrometheusSource,
    query: str,
    start: float,
    end: float,
    step_s: float,
    *,
    chunk_steps: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(labels: series + one column a label, points: series, t, value) of a range query, asked in time chunks
    of `chunk_steps` (CHUNK_STEPS by default; a query of a few series asks for the whole window at once)."""
    start_ms, end_ms = promql.window_ms(start, end)
    if not step_s > 0:
        raise GoodputError(f"query_range: the step must be greater than 0 (got {step_s})")
    step_ms = max(1, round(step_s * 1000))
    steps = (end_ms - start_ms) // step_ms + 1
    what = f"query {query!r}"
    if steps > MAX_POINTS_PER_SERIES:
        raise PrometheusError(
            f"{source.shown}: {what}: {steps:,} points a series ({(end_ms - start_ms) / 1000:,.0f} s every"
            f" {step_ms / 1000:g} s) is over Prometheus' limit of {MAX_POINTS_PER_SERIES:,}; choose a larger step"
        )
    size = chunk_steps or CHUNK_STEPS
    chunks = [
        (start_ms + k * step_ms, start_ms + min(k + size, steps) * step_ms - step_ms)
        for k in range(0, steps, size)
    ]

    def ask(chunk: tuple[int, int]) -> tuple[pl.DataFrame, pl.DataFrame]:
        params = {
            "query": query,
            "start": promql.seconds(chunk[0]),
            "end": promql.seconds(chunk[1]),
            "step": promql.seconds(step_ms),
        }
        return read_matrix(source, source.get_body("query_range", params, what), what)

    with ThreadPoolExecutor(min(PARALLEL_QUERIES, len(chunks))) as pool:
        answers, total = [], 0
        for labels, points in pool.map(ask, chunks):
            total += points.height
            if total > MAX_QUERY_POINTS:
                raise PrometheusError(
                    f"{source.shown}: {what}: more than {MAX_QUERY_POINTS:,} points, over Goodput's limit"
                    " (MAX_QUERY_POINTS); narrow the window, the hosts or the points"
                )
            answers.append((labels, points))
    return _merge_chunks(answers)


def _merge_chunks(answers: list[tuple[pl.DataFrame, pl.DataFrame]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Chunks number their series each from 0; the same label set is one series across chunks."""
    if len(answers) == 1:
        return answers[0]
    # a label set's columns differ between chunks (a chunk without bare series has no instance column): key the
    # label sets once all chunks share their columns
    all_labels = pl.concat(
        [labels.with_columns(chunk=pl.lit(i, pl.UInt32)) for i, (labels, _) in enumerate(answers)],
        how="diagonal_relaxed",
    )
    names = [c for c in all_labels.columns if c not in ("series", "chunk")]
    key = pl.struct(names).hash() if names else pl.lit(0, pl.UInt64)
    all_labels = all_labels.with_columns(key=key)
    ids = all_labels.select("key").unique(maintain_order=True).with_row_index("id")
    mapping = all_labels.join(ids, on="key").select("chunk", "series", "id")
    points = (
        pl.concat([points.with_columns(chunk=pl.lit(i, pl.UInt32)) for i, (_, points) in enumerate(answers)])
        .join(mapping, on=["chunk", "series"])
        .select(pl.col("id").alias("series"), "t", "value")
    )
    labels = (
        all_labels.join(ids, on="key")
        .unique("id", keep="first", maintain_order=True)
        .drop("series", "key", "chunk")
        .rename({"id": "series"})
    )
    return labels.select("series", pl.exclude("series")), points


def by_host_gpu(labels: pl.DataFrame, points: pl.DataFrame | None) -> pl.DataFrame:
    """Series labels to host and GPU (dcgm.py's rules): host = Hostname, else instance; gpu = the `gpu` label
    when it is a GPU index, else the series is dropped. With `points`, their rows with host and gpu."""
    columns = labels.columns
    hostname = pl.col("Hostname") if "Hostname" in columns else pl.lit(None, pl.String)
    instance = pl.col("instance") if "instance" in columns else pl.lit(None, pl.String)
    gpu = pl.col("gpu") if "gpu" in columns else pl.lit(None, pl.String)
    keys = labels.select(
        "series",
        pl.when(hostname != "").then(hostname).otherwise(instance).alias("host"),
        gpu.alias("gpu_label"),
    ).filter(
        pl.col("host").is_not_null()
        & pl.col("gpu_label").is_not_null()
        & bounds.gpu_index_ok(pl.col("gpu_label"))
    )
    keys = keys.select("series", "host", pl.col("gpu_label").cast(pl.Int32).alias("gpu"))
    if points is None:
        return keys
    rows = points.join(keys, on="series", how="inner")
    if keys.select(pl.struct("host", "gpu").is_duplicated().any()).item():
        # one GPU in several series (a driver upgrade changed DCGM_FI_DRIVER_VERSION, two jobs scrape one
        # exporter): one value a step, the largest; checked on the series, so the usual case costs nothing
        rows = rows.group_by("host", "gpu", "t").agg(pl.col("value").max(), pl.col("series").min())
    return rows
