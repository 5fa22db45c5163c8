"""Read DCGM series from Prometheus' HTTP API (and from Thanos or VictoriaMetrics, which serve the same API).

    source = PrometheusSource("http://prometheus:9090")
    temps = gpu_series(source, "DCGM_FI_DEV_GPU_TEMP", start, end, points=600)   # host, gpu, t, value
    xids = xid_events(source, start, end)                                         # host, gpu, t, xid

Raw per-GPU samples stay in Prometheus: a page asks for its window, down-sampled to what its chart shows, and only
events (XIDs, ECC increases) are derived here to be stored. Series are named as engine/ingest/dcgm.py names them:
the host is the `Hostname` label dcgm-exporter writes, else the scrape's `instance` (what a live scrape of that
endpoint would call it), and the GPU is the `gpu` index label (a series whose label is no GPU index is dropped,
as dcgm.py skips it).

Every request goes through engine/ingest/http_fetch.py (a whole-answer deadline, answers bounded by
engine/limits.py MAX_SCRAPE_BYTES, same-origin redirects only, credentials never shown). Errors (unreachable,
an HTTP error, Prometheus' own `status: error`) are a `PrometheusError` naming the URL and the query.

Answers are read without a Python loop over points: a matrix answer of 24,576 series x 600 points is ~270 MB
of JSON, which `json.loads` reads in ~15 s here; the values arrays are cut out of the text and read by Polars'
CSV reader, and only the small rest (the series' labels) goes through `json.loads` (see `_read_matrix`).
"""

import io
import json
import re
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.ingest import bounds
from engine.ingest.dcgm import XID_METRIC
from engine.ingest.http_fetch import Endpoint, Fetcher, HttpStatusError, endpoint, redact

# Prometheus refuses a range query of more than 11,000 points a series (its web/api/v1 `maxResolution`).
MAX_POINTS_PER_SERIES = 11_000
# Points (series x steps) one call may bring back, all chunks together: Prometheus' own default for
# --query.max-samples. At ~20 bytes a point of JSON and 24 bytes a row once read, that is ~1.2 GB at most.
MAX_QUERY_POINTS = 50_000_000
# A range query is split into time chunks of this many steps, asked in parallel: Prometheus evaluates them on
# several cores, each answer stays well under MAX_SCRAPE_BYTES, and Polars reads one while the next arrives.
CHUNK_STEPS = 150
PARALLEL_QUERIES = 4
# The body of an HTTP error kept to read Prometheus' error text from (its errors are a line or two).
MAX_ERROR_BYTES = 64 * 1024
# The step for event queries when Prometheus does not say its scrape interval (Thanos, VictoriaMetrics).
DEFAULT_SCRAPE_S = 15.0
ECC_METRICS = {"sbe": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "dbe": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_VALUES_KEY = b'"values":['
_API = "/api/v1"


class PrometheusError(GoodputError):
    """Prometheus (or what stands in its place) could not answer a query: says which URL, which query, why."""


class PrometheusSource:
    """Where the API is: `url` may be the server (`http://prom:9090`), a path prefix (`http://thanos/thanos`,
    VictoriaMetrics' `http://vm:8481/select/0/prometheus`) or any API URL below it: everything before `/api/v1`
    is the base. `headers` may carry `Authorization` (a bearer token); user:password in the URL is basic auth."""

    def __init__(self, url: str, timeout_s: float = 10.0, headers: dict | None = None) -> None:
        if not timeout_s > 0:
            raise GoodputError(f"--prometheus: the timeout must be greater than 0 (got {timeout_s})")
        parts = urllib.parse.urlsplit(url.strip())
        if parts.query or parts.fragment:
            raise GoodputError(
                f"--prometheus: {redact(url)!r} has a query or fragment; give the server's base URL"
            )
        path = parts.path
        if _API in path:
            path = path[: path.index(_API)]
        base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path.rstrip("/"), "", ""))
        try:
            ep = endpoint(base + "/")
        except GoodputError as err:
            raise GoodputError(str(err).replace("--scrape", "--prometheus", 1)) from None
        for name, value in (headers or {}).items():
            if name.lower() != "authorization":
                # http_fetch sends Accept, Accept-Encoding and Authorization only; another header would be lost
                raise GoodputError(
                    f"--prometheus: header {name!r} is not supported (only Authorization, e.g. a bearer token)"
                )
            secret = str(value).partition(" ")[2] or str(value)
            ep = replace(ep, authorization=str(value), secrets=(*ep.secrets, str(value), secret))
        self.base = ep.url.rstrip("/")
        self.shown = ep.shown.rstrip("/")
        self.timeout_s = timeout_s
        self._endpoint = ep
        self.fetcher = Fetcher(
            timeout_s, accept="application/json", error_body_bytes=MAX_ERROR_BYTES, failing="unreachable"
        )

    def __repr__(self) -> str:
        return f"PrometheusSource({self.shown!r})"

    def abort(self) -> None:
        """Cut every request in flight (and every later one): a watch loop's SIGTERM ends at once."""
        self.fetcher.abort()

    def get(self, path: str, params: dict[str, str], what: str) -> dict:
        """The `data` of a successful API answer; a PrometheusError naming the URL and `what` otherwise."""
        query = urllib.parse.urlencode(params)
        ep = replace(self._endpoint, url=f"{self.base}{_API}/{path}" + (f"?{query}" if query else ""))
        return _decode_small(self, self._get(ep, what), what)

    def _get(self, ep: Endpoint, what: str) -> bytes:
        try:
            return self.fetcher.get(ep)
        except HttpStatusError as err:
            raise PrometheusError(f"{self.shown}: {what}: {_error_text(ep, err)}") from None
        except GoodputError as err:
            text = str(err).removeprefix(ep.shown).removeprefix(": ")
            raise PrometheusError(f"{self.shown}: {what}: {ep.scrub(text)}") from None


# ----- range queries --------------------------------------------------------------------------------------------


def query_range(
    source: PrometheusSource, promql: str, start: float, end: float, step_s: float
) -> pl.DataFrame:
    """`promql` evaluated every `step_s` from `start` to `end` (epoch seconds): one column per label (a label
    called `t` or `value` becomes `label_t`, `label_value`), then `t` (Float64, epoch s) and `value` (Float64).

    A window of more than 11,000 points a series is refused before anything is asked: choose a larger step."""
    labels, points = _range(source, promql, start, end, step_s)
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
    _check_metric(metric)
    if how not in ("last", "max", "min", "avg"):
        raise GoodputError(f"gpu_series: how={how!r}; use last, max, min or avg")
    if not 1 <= points <= MAX_POINTS_PER_SERIES - 1:
        raise GoodputError(f"gpu_series: points must be 1 to {MAX_POINTS_PER_SERIES - 1:,} (got {points:,})")
    start_ms, end_ms = _window_ms(start, end)
    step_ms = max(1, -(-(end_ms - start_ms) // points))
    template = metric + "{sel}" if how == "last" else f"{how}_over_time({metric}{{sel}}[{step_ms}ms])"
    labels, values = _range(source, _by_gpu(template, hosts), start_ms / 1000, end_ms / 1000, step_ms / 1000)
    return _by_host_gpu(labels, values).select("host", "gpu", "t", "value").sort("host", "gpu", "t")


def xid_events(
    source: PrometheusSource, start: float, end: float, step_s: float | None = None
) -> pl.DataFrame:
    """The XIDs DCGM_FI_DEV_XID_ERRORS reported in [start, end]: host, gpu, t (epoch s), xid (Int32).

    The gauge holds the last XID and never resets, so an event is a change to a value above 0 from the value
    before (engine/ingest/observed.py's rule); the value one step before `start` is read too, so an XID that
    arrives at the window's first scrape counts. `step_s` is the scrape interval (by default the smallest that
    Prometheus reports for its targets, else 15 s)."""
    changes = _changed(source, XID_METRIC, start, end, step_s)
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
        changes = _changed(source, metric, start, end, step_s)
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


def _changed(
    source: PrometheusSource, metric: str, start: float, end: float, step_s: float | None
) -> pl.DataFrame:
    """host, gpu, t, value, before: every step of [start, end] at which a GPU's series differs from its value
    one step earlier. Only the GPUs whose series changed at all are fetched step by step."""
    start_ms, end_ms = _window_ms(start, end)
    step = step_s if step_s is not None else scrape_interval(source)
    if not step > 0:
        raise GoodputError(f"step_s must be greater than 0 (got {step})")
    step_ms = max(1, round(step * 1000))
    first_ms = start_ms - step_ms  # the value before the window: an XID at its first scrape is a change
    span_ms = end_ms - first_ms + step_ms
    # One instant query finds the GPUs whose value moved in the window (plain max/min, no changes()); most GPUs
    # never log an XID, so the step-by-step query then asks for a handful of series instead of the cluster.
    moved = _by_gpu(
        f"max_over_time({metric}{{sel}}[{span_ms}ms]) != min_over_time({metric}{{sel}}[{span_ms}ms])", None
    )
    data = source.get("query", {"query": moved, "time": _seconds(end_ms)}, f"query {moved!r}")
    labels = _labels_frame(data.get("result") or [])
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
    gpus = _by_host_gpu(labels, None)
    steps = (end_ms - first_ms) // step_ms + 1
    if gpus.height * steps > MAX_QUERY_POINTS:
        raise PrometheusError(
            f"{source.shown}: {metric}: {gpus.height:,} GPUs changed, x {steps:,} steps of {step_ms / 1000:g} s"
            f" is over Goodput's limit of {MAX_QUERY_POINTS:,} points (MAX_QUERY_POINTS); narrow the window"
        )
    hosts = gpus["host"].unique().sort().to_list()
    labels, values = _range(
        source, _by_gpu(metric + "{sel}", hosts), first_ms / 1000, end_ms / 1000, step_ms / 1000
    )
    series = _by_host_gpu(labels, values).join(gpus.select("host", "gpu"), on=["host", "gpu"], how="semi")
    return (
        series.sort("host", "gpu", "t")
        .with_columns(before=pl.col("value").shift(1).over("host", "gpu"))
        .filter(pl.col("before").is_not_null() & (pl.col("t") >= start_ms / 1000))
        .select("host", "gpu", "t", "value", "before")
        .sort("t", "host", "gpu")
    )


def _range(
    source: PrometheusSource, promql: str, start: float, end: float, step_s: float
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(labels: series + one column a label, points: series, t, value) of a range query, asked in time chunks."""
    start_ms, end_ms = _window_ms(start, end)
    if not step_s > 0:
        raise GoodputError(f"query_range: the step must be greater than 0 (got {step_s})")
    step_ms = max(1, round(step_s * 1000))
    steps = (end_ms - start_ms) // step_ms + 1
    what = f"query {promql!r}"
    if steps > MAX_POINTS_PER_SERIES:
        raise PrometheusError(
            f"{source.shown}: {what}: {steps:,} points a series ({(end_ms - start_ms) / 1000:,.0f} s every"
            f" {step_ms / 1000:g} s) is over Prometheus' limit of {MAX_POINTS_PER_SERIES:,}; choose a larger step"
        )
    chunks = [
        (start_ms + k * step_ms, start_ms + min(k + CHUNK_STEPS, steps) * step_ms - step_ms)
        for k in range(0, steps, CHUNK_STEPS)
    ]

    def ask(chunk: tuple[int, int]) -> tuple[pl.DataFrame, pl.DataFrame]:
        params = {
            "query": promql,
            "start": _seconds(chunk[0]),
            "end": _seconds(chunk[1]),
            "step": _seconds(step_ms),
        }
        query = urllib.parse.urlencode(params)
        ep = replace(source._endpoint, url=f"{source.base}{_API}/query_range?{query}")
        return _read_matrix(source, source._get(ep, what), what)

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


def _by_gpu(template: str, hosts: list[str] | None) -> str:
    """`template` (PromQL with `{sel}` where the metric's matchers go) for `hosts` (by Hostname, or by instance
    for series without one: engine/ingest/dcgm.py's rule), or for every series.

    No aggregation here: `max by (Hostname, gpu)` and `or` cost Prometheus 4x the plain query on a 24,576-GPU
    cluster (6.3 s against 1.7 s a 150-step chunk here). Series of one GPU are merged after (`_by_host_gpu`)."""
    if hosts is None:
        return template.replace("{sel}", "")
    if not hosts:
        raise GoodputError("hosts: give at least one host, or None for all")
    pattern = _promql_string("|".join(_re2_escape(h) for h in hosts))
    named, bare = f"{{Hostname=~{pattern}}}", f'{{Hostname="",instance=~{pattern}}}'
    return f"{template.replace('{sel}', named)} or {template.replace('{sel}', bare)}"


def _by_host_gpu(labels: pl.DataFrame, points: pl.DataFrame | None) -> pl.DataFrame:
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


# ----- scrape interval and health -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetHealth:
    job: str
    instance: str
    health: str  # up, down, unknown
    last_error: str
    last_scrape: float | None  # epoch s
    scrape_interval_s: float | None


@dataclass(frozen=True)
class PrometheusStatus:
    """What `probe` saw. `down_since` (epoch s): when the source was first found unreachable in a row of failed
    probes (the previous status passed to `probe`), so a page can say "Prometheus unreachable since 10:42"."""

    url: str
    reachable: bool
    checked_at: float
    error: str | None = None
    version: str | None = None
    down_since: float | None = None
    targets: tuple[TargetHealth, ...] | None = field(default=None)  # None: the server has no targets API

    @property
    def targets_up(self) -> int:
        return sum(t.health == "up" for t in self.targets or ())

    @property
    def targets_down(self) -> int:
        return sum(t.health != "up" for t in self.targets or ())


def probe(source: PrometheusSource, previous: PrometheusStatus | None = None) -> PrometheusStatus:
    """Is the source answering queries, which version is it, how are its scrape targets? Never raises for an
    unreachable server: the status says so (and since when, given the previous status)."""
    now = time.time()
    try:
        source.get("query", {"query": "vector(1)"}, "query 'vector(1)'")
    except PrometheusError as err:
        since = previous.down_since if previous is not None and not previous.reachable else None
        return PrometheusStatus(source.shown, False, now, error=str(err), down_since=since or now)
    version = None
    try:
        version = str(source.get("status/buildinfo", {}, "build info").get("version") or "") or None
    except PrometheusError:
        pass  # Thanos and VictoriaMetrics may not serve it: a version is a nicety
    return PrometheusStatus(source.shown, True, now, version=version, targets=_targets(source))


def scrape_interval(source: PrometheusSource) -> float:
    """The smallest scrape interval among Prometheus' active targets; DEFAULT_SCRAPE_S where it does not say."""
    intervals = [t.scrape_interval_s for t in _targets(source) or () if t.scrape_interval_s]
    return min(intervals) if intervals else DEFAULT_SCRAPE_S


def _targets(source: PrometheusSource) -> tuple[TargetHealth, ...] | None:
    try:
        data = source.get("targets", {"state": "active"}, "targets")
    except PrometheusError:
        return None
    active = data.get("activeTargets") if isinstance(data, dict) else None
    if not isinstance(active, list):
        return None
    found = []
    for target in active[: limits.MAX_HOSTS]:
        labels = target.get("labels") or {}
        found.append(
            TargetHealth(
                job=str(labels.get("job", "")),
                instance=str(labels.get("instance", "")),
                health=str(target.get("health", "unknown")),
                last_error=str(target.get("lastError", "")),
                last_scrape=_epoch(target.get("lastScrape")),
                scrape_interval_s=_duration_s(target.get("scrapeInterval")),
            )
        )
    return tuple(found)


# ----- reading answers ------------------------------------------------------------------------------------------


def _read_matrix(source: PrometheusSource, body: bytes, what: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A matrix answer as (labels: series, one column a label; points: series UInt32, t, value Float64).

    The fast way relies on the compact JSON Prometheus, Thanos and VictoriaMetrics write: `"values":[` cannot
    occur inside a JSON string (its quote after `values` would be escaped), so splitting there cuts exactly the
    values arrays out; they hold only `[t,"v"]` pairs, read as CSV lines. The rest (status, labels) is small
    and goes through json.loads, which checks its structure. Anything else is read by json.loads whole."""
    fast = _read_matrix_fast(body)
    data, points = None, None
    if fast is not None:
        skeleton, points, series = fast
        data = _decode_small(source, skeleton, what)
        result = data.get("result")
        # every series' values must have been cut out, one array each, or the layout was not the one expected
        if not (isinstance(result, list) and len(result) == series and all(_emptied(one) for one in result)):
            data, points = None, None
    if data is None:
        data = _decode_small(source, body, what)
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise PrometheusError(f"{source.shown}: {what}: the answer is not a range of series (a matrix)")
    result = data["result"]
    labels = _labels_frame(result)
    if points is None:
        points = _points_slow(source, result, what)
    return labels, points


def _emptied(one: object) -> bool:
    return isinstance(one, dict) and one.get("values") == []


def _read_matrix_fast(body: bytes) -> tuple[bytes, pl.DataFrame, int] | None:
    """(the answer without its values, the points, how many values arrays were cut); None: read it whole."""
    pieces = body.split(_VALUES_KEY)
    skeleton, texts, counts = [pieces[0]], [], []
    for piece in pieces[1:]:
        end = piece.find(b"]]") if piece[:1] == b"[" else -1
        if piece[:1] == b"]":  # no values
            counts.append(0)
            skeleton.append(_VALUES_KEY + piece)
            continue
        if end < 0:
            return None
        text = piece[1:end]
        counts.append(text.count(b"],[") + 1)
        texts.append(text)
        skeleton.append(_VALUES_KEY + b"]" + piece[end + 2 :])
    if not texts:
        return b"".join(skeleton), _empty_points(), len(counts)
    csv = b"\n".join(texts).replace(b"],[", b"\n")
    try:
        rows = pl.read_csv(
            io.BytesIO(csv),
            has_header=False,
            new_columns=["t", "v"],
            schema={"t": pl.Float64, "v": pl.String},
            quote_char='"',
        )
    except (pl.exceptions.PolarsError, OSError):
        return None
    value = pl.col("v").cast(pl.Float64, strict=False)
    if rows.height != sum(counts) or rows.select((value.is_null() | pl.col("t").is_null()).any()).item():
        return None
    series = np.repeat(np.arange(len(counts), dtype=np.uint32), counts)
    points = rows.select(pl.Series("series", series, pl.UInt32), "t", value.alias("value"))
    return b"".join(skeleton), points, len(counts)


def _points_slow(source: PrometheusSource, result: list, what: str) -> pl.DataFrame:
    """Points of a decoded answer (other JSON layouts): a loop over series; each series' pairs are read whole."""
    frames = []
    for i, one in enumerate(result):
        values = one.get("values") if isinstance(one, dict) else None
        if not isinstance(values, list) or not all(isinstance(v, list) and len(v) == 2 for v in values):
            raise PrometheusError(f"{source.shown}: {what}: series {i} has no [time, value] pairs")
        pairs = np.asarray(values, dtype=object).reshape(-1, 2)
        frame = pl.DataFrame(
            {"t": pairs[:, 0].astype(str), "v": pairs[:, 1].astype(str)},
            schema={"t": pl.String, "v": pl.String},
        )
        frames.append(frame.with_columns(series=pl.lit(i, pl.UInt32)))
    if not frames:
        return _empty_points()
    points = pl.concat(frames).select(
        "series",
        pl.col("t").cast(pl.Float64, strict=False),
        pl.col("v").cast(pl.Float64, strict=False).alias("value"),
    )
    if points.select(pl.col("t").is_null().any() | pl.col("value").is_null().any()).item():
        raise PrometheusError(f"{source.shown}: {what}: a time or value that is not a number")
    return points


def _labels_frame(result: list) -> pl.DataFrame:
    """One row a series: `series` (UInt32, its place in the answer), then one String column a label (null where
    a series lacks it)."""
    metrics = [one.get("metric") if isinstance(one, dict) else None for one in result]
    rows = [{str(k): str(v) for k, v in (m or {}).items()} for m in metrics]
    names = sorted({k for row in rows for k in row} - {"series"})
    columns = {"series": pl.Series("series", range(len(rows)), pl.UInt32)}
    columns |= {name: pl.Series(name, [row.get(name) for row in rows], pl.String) for name in names}
    return pl.DataFrame(columns)


def _decode_small(source: PrometheusSource, body: bytes, what: str) -> dict:
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        raise PrometheusError(
            f"{source.shown}: {what}: the answer is not JSON (is this Prometheus' API?)"
        ) from None
    if not isinstance(answer, dict):
        raise PrometheusError(f"{source.shown}: {what}: the answer is not a Prometheus API answer")
    if answer.get("status") != "success":
        raise PrometheusError(f"{source.shown}: {what}: {_status_error(answer)}")
    data = answer.get("data")
    return data if isinstance(data, dict) else {"result": data}


def _status_error(answer: dict) -> str:
    kind, text = answer.get("errorType"), answer.get("error")
    return f"Prometheus answered {kind or 'an error'}: {text or answer.get('status')}"


def _error_text(ep: Endpoint, err: HttpStatusError) -> str:
    try:
        answer = json.loads(err.body)
    except (ValueError, RecursionError):
        answer = None
    if isinstance(answer, dict) and answer.get("status") == "error":
        return f"HTTP {err.status}, {_status_error(answer)}"
    excerpt = err.body[:200].decode("utf-8", "replace").strip()
    return f"HTTP {err.status} {ep.scrub(err.reason)}" + (f": {ep.scrub(excerpt)}" if excerpt else "")


def _empty_points() -> pl.DataFrame:
    return pl.DataFrame(schema={"series": pl.UInt32, "t": pl.Float64, "value": pl.Float64})


# ----- small helpers --------------------------------------------------------------------------------------------


def _window_ms(start: float, end: float) -> tuple[int, int]:
    """The window in whole milliseconds (Prometheus' own resolution), checked against engine/limits.py."""
    try:
        start_ms, end_ms = round(float(start) * 1000), round(float(end) * 1000)
    except (TypeError, ValueError, OverflowError):
        raise GoodputError(f"start {start!r} and end {end!r} must be epoch seconds") from None
    window = bounds.file_window()
    for name, t in (("start", start_ms), ("end", end_ms)):
        if not window.lo_ms <= t <= window.hi_ms:
            raise GoodputError(f"{name}: {bounds.describe_ms(t)} is outside 2000-01-01 .. a day from now")
    if end_ms < start_ms:
        raise GoodputError(f"end ({end}) is before start ({start})")
    return start_ms, end_ms


def _seconds(ms: int) -> str:
    return f"{ms // 1000}.{ms % 1000:03d}"


def _check_metric(metric: str) -> None:
    if not _METRIC_NAME.match(metric):
        raise GoodputError(f"metric {metric!r} is not a Prometheus metric name")


def _re2_escape(text: str) -> str:
    """A literal for Prometheus' RE2 regular expressions (punctuation escaped; nothing else is)."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", text)


def _promql_string(text: str) -> str:
    return json.dumps(text)  # a PromQL double-quoted string escapes like JSON (\\, \", \n)


def _epoch(text: object) -> float | None:
    """Prometheus' RFC 3339 times (nanoseconds, `Z`) in epoch seconds; None for its zero time or garbage."""
    if not isinstance(text, str) or text.startswith("0001-"):
        return None
    match = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", text)
    if match is None:
        return None
    fraction = (match[2] or ".0")[:7]
    zone = "+00:00" if match[3] == "Z" else match[3]
    try:
        return datetime.fromisoformat(match[1] + fraction + zone).timestamp()
    except ValueError:
        return None


def _duration_s(text: object) -> float | None:
    """Prometheus' durations (`15s`, `1m30s`, `500ms`) in seconds."""
    if not isinstance(text, str):
        return None
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    parts = re.findall(r"([0-9]+)(ms|[smhdwy])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(int(n) * units[u] for n, u in parts)
