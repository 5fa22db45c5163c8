"""Reading the API's answers into frames without a Python loop over points.

A matrix answer of 24,576 series x 600 points is ~270 MB of JSON, which `json.loads` reads in ~15 s here; the
values arrays are cut out of the text and read by Polars' CSV reader, and only the small rest (the series'
labels) goes through `json.loads` (see `read_matrix`). Vector answers (instant queries) are small: read whole.
"""

import io

import numpy as np
import polars as pl

from engine.ingest.prometheus.source import PrometheusError, PrometheusSource, decode_answer

_VALUES_KEY = b'"values":['


def read_matrix(source: PrometheusSource, body: bytes, what: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A matrix answer as (labels: series, one column a label; points: series UInt32, t, value Float64).

    The fast way relies on the compact JSON Prometheus, Thanos and VictoriaMetrics write: `"values":[` cannot
    occur inside a JSON string (its quote after `values` would be escaped), so splitting there cuts exactly the
    values arrays out; they hold only `[t,"v"]` pairs, read as CSV lines. The rest (status, labels) is small
    and goes through json.loads, which checks its structure. Anything else is read by json.loads whole."""
    fast = read_matrix_fast(body)
    data, points = None, None
    if fast is not None:
        skeleton, points, series = fast
        data = decode_answer(source, skeleton, what)
        result = data.get("result")
        # every series' values must have been cut out, one array each, or the layout was not the one expected
        if not (isinstance(result, list) and len(result) == series and all(_emptied(one) for one in result)):
            data, points = None, None
    if data is None:
        data = decode_answer(source, body, what)
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise PrometheusError(f"{source.shown}: {what}: the answer is not a range of series (a matrix)")
    result = data["result"]
    labels = labels_frame(result)
    if points is None:
        points = _points_slow(source, result, what)
    return labels, points


def read_vector(source: PrometheusSource, data: dict, what: str) -> pl.DataFrame:
    """An instant query's decoded `data` (a vector): one row a series, its labels (as `labels_frame`) and
    `value` (Float64)."""
    result = data.get("result")
    if data.get("resultType") != "vector" or not isinstance(result, list):
        raise PrometheusError(f"{source.shown}: {what}: the answer is not a set of series (a vector)")
    pairs = [one.get("value") if isinstance(one, dict) else None for one in result]
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise PrometheusError(f"{source.shown}: {what}: a series has no [time, value] pair")
    values = pl.Series("value", [str(p[1]) for p in pairs], pl.String).cast(pl.Float64, strict=False)
    if values.null_count():
        raise PrometheusError(f"{source.shown}: {what}: a value that is not a number")
    return labels_frame(result).with_columns(values)


def _emptied(one: object) -> bool:
    return isinstance(one, dict) and one.get("values") == []


def read_matrix_fast(body: bytes) -> tuple[bytes, pl.DataFrame, int] | None:
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
        return b"".join(skeleton), empty_points(), len(counts)
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
        return empty_points()
    points = pl.concat(frames).select(
        "series",
        pl.col("t").cast(pl.Float64, strict=False),
        pl.col("v").cast(pl.Float64, strict=False).alias("value"),
    )
    if points.select(pl.col("t").is_null().any() | pl.col("value").is_null().any()).item():
        raise PrometheusError(f"{source.shown}: {what}: a time or value that is not a number")
    return points


def labels_frame(result: list) -> pl.DataFrame:
    """One row a series: `series` (UInt32, its place in the answer), then one String column a label (null where
    a series lacks it)."""
    metrics = [one.get("metric") if isinstance(one, dict) else None for one in result]
    rows = [{str(k): str(v) for k, v in (m or {}).items()} for m in metrics]
    names = sorted({k for row in rows for k in row} - {"series"})
    columns = {"series": pl.Series("series", range(len(rows)), pl.UInt32)}
    columns |= {name: pl.Series(name, [row.get(name) for row in rows], pl.String) for name in names}
    return pl.DataFrame(columns)


def empty_points() -> pl.DataFrame:
    return pl.DataFrame(schema={"series": pl.UInt32, "t": pl.Float64, "value": pl.Float64})
