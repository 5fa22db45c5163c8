"""Replay then fork: re-run exactly the failures of an incidents file under other settings.

`replay_incidents(path, preset=..., sets=...)` reads an incidents CSV or JSON that `goodput export incidents`
wrote (from a simulated or an observed run), and feeds that sequence of failures (same t_s, detection time,
host, GPU, cause, XID, rack-wide or not) and planned stops to the simulator (engine.twin.simulate's `arrivals` and
`planned_times`) instead of drawing them. Everything else (repair times, research jobs) draws from the
scenario's seed as usual, so replaying a run's own export under its own scenario reproduces it, and changing
`spares.hosts` or `training.checkpoint_interval` answers "what would that week have cost with ...".

`replay_incidents_data` does the same for bytes (an upload) and `replay_stored_run(store, run_id, sets=...)`
forks a stored run directly (the Incidents page's "replay with other settings").

The JSON export carries the run's scenario; a CSV does not, so it needs a preset or `--set` keys. As in the
simulator, a failure on a host that is being repaired is dropped (the host is not in service), and so is one
detected after the end of the (possibly shorter) replayed run.
"""

import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from engine import limits
from engine.bounded_read import read_bounded
from engine.errors import GoodputError
from engine.replay.bounds import check_text
from engine.report.csv_safety import restore_frame
from engine.scenario import Scenario, build, from_dict
from engine.sim.failures import CATEGORY, CAUSE_KEYS, NO_XID, Arrivals
from engine.store.run import Run

REQUIRED = ("t_s", "cause", "planned")
NUMERIC = {
    "t_s": pl.Float64,
    "detected_s": pl.Float64,
    "host_id": pl.Int64,
    "gpu_id": pl.Int64,
    "gpu_index": pl.Int64,
    "xid": pl.Int64,
}
TRUE, FALSE = ("true", "1", "yes", "t"), ("false", "0", "no", "f", "")


class IncidentsFileError(GoodputError):
    """An incidents file that cannot be replayed: the message names the file and line."""


def read_incidents_file(path: str | os.PathLike) -> tuple[pl.DataFrame, dict, str]:
    """The file's incidents as strings (one row per incident, in file order), its metadata and format, plus a
    `line` column (CSV: the line in the file; JSON: the record's position, from 1)."""
    path = Path(path)
    if not path.is_file():
        raise IncidentsFileError(f"{path}: no such file")
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("csv", "json"):
        raise IncidentsFileError(
            f"{path}: an incidents file is .csv or .json (what `goodput export incidents` writes)"
        )
    return read_incidents_bytes(read_bounded(path, "the incidents file"), fmt, where=str(path))


def read_incidents_bytes(
    data: bytes, fmt: str, *, where: str = "incidents file"
) -> tuple[pl.DataFrame, dict, str]:
    """As read_incidents_file, from bytes (an upload, or an export made in memory); `where` names them."""
    if len(data) > limits.MAX_INPUT_BYTES:
        raise IncidentsFileError(
            f"{where}: larger than Goodput's limit of {limits.MAX_INPUT_BYTES:,} bytes (engine/limits.py)"
        )
    if fmt == "csv":
        # at most MAX_INCIDENTS rows (and a header) and MAX_LINE_BYTES a line, counted before Polars reads them
        check_text(
            where, data, limits.MAX_INCIDENTS + 1, "lines (incidents and a header)", IncidentsFileError
        )
        try:
            frame = pl.read_csv(io.BytesIO(data), infer_schema=False)
        except Exception as err:  # polars raises several types for a malformed CSV
            first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise IncidentsFileError(f"{where}: not a readable incidents CSV ({first_line})") from err
        # The export quoted text cells that start like a formula (engine/report/csv_safety.py): read back the original.
        return restore_frame(frame).with_row_index("line", offset=2), {}, "csv"
    if fmt != "json":
        raise IncidentsFileError(f"{where}: an incidents file is CSV or JSON, not {fmt!r}")
    document = _load_json(data, where)
    if not isinstance(document, dict) or not isinstance(document.get("incidents"), list):
        raise IncidentsFileError(f"{where}: not a Goodput incidents export (no `incidents` list)")
    records = document["incidents"]
    if len(records) > limits.MAX_INCIDENTS:
        raise IncidentsFileError(
            f"{where}: incidents: {len(records):,} records, over Goodput's limit of "
            f"{limits.MAX_INCIDENTS:,} (engine/limits.py)"
        )
    for i, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise IncidentsFileError(f"{where}: incident record {i} is not an object")
    run = document.get("run")
    if run is not None and not isinstance(run, dict):
        raise IncidentsFileError(f"{where}: run is not an object, got {type(run).__name__}")
    if run and run.get("scenario") is not None and not isinstance(run["scenario"], dict):
        raise IncidentsFileError(
            f"{where}: run.scenario is not an object, got {type(run['scenario']).__name__}"
        )
    if run and run.get("run_id") is not None and not isinstance(run["run_id"], str):
        raise IncidentsFileError(f"{where}: run.run_id is not text, got {type(run['run_id']).__name__}")
    columns = sorted({k for r in records for k in r if k in NUMERIC or k in (*REQUIRED, "rack_wide")})
    frame = pl.DataFrame(
        {
            c: [
                None if r.get(c) is None else str(r[c]).lower() if isinstance(r.get(c), bool) else str(r[c])
                for r in records
            ]
            for c in columns
        },
        schema=dict.fromkeys(columns, pl.String),
    )
    return (
        frame.with_row_index("line", offset=1),
        {k: v for k, v in document.items() if k != "incidents"},
        "json",
    )


def _load_json(data: bytes, where: str):
    """The document, nested at most MAX_JSON_DEPTH deep. Python's parser recurses, so a deep file either stops
    it (RecursionError) or passes and is measured here without recursion."""
    try:
        document = json.loads(data)
    except RecursionError:
        raise IncidentsFileError(
            f"{where}: nested deeper than Goodput's limit of {limits.MAX_JSON_DEPTH} (engine/limits.py)"
        ) from None
    except (ValueError, UnicodeDecodeError) as err:  # JSONDecodeError, and an integer of over 4,300 digits
        raise IncidentsFileError(f"{where}: not valid JSON ({err})") from None
    stack = [(document, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if depth > limits.MAX_JSON_DEPTH:
            raise IncidentsFileError(
                f"{where}: {path[:120] or '(top)'}: nested deeper than Goodput's limit of "
                f"{limits.MAX_JSON_DEPTH} (engine/limits.py)"
            )
        if isinstance(node, dict):  # only containers are pushed: a million records stay a quick walk
            stack.extend(
                (v, f"{path}.{k}" if path else str(k), depth + 1)
                for k, v in node.items()
                if isinstance(v, dict | list)
            )
        elif isinstance(node, list):
            stack.extend(
                (v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node) if isinstance(v, dict | list)
            )
    return document


def replay_incidents(
    path: str | os.PathLike, *, preset: str | None = None, sets=(), name: str | None = None
) -> Run:
    """A Run (kind replay) of `path`'s failures under the file's scenario (JSON) or `preset`, with `sets`."""
    raw, meta, fmt = read_incidents_file(path)
    return _replay(raw, meta, fmt, str(path), preset, list(sets), name)


def replay_incidents_data(
    data: bytes,
    fmt: str,
    *,
    where: str = "incidents file",
    preset: str | None = None,
    sets=(),
    name: str | None = None,
) -> Run:
    """replay_incidents for bytes (the page's upload)."""
    raw, meta, fmt = read_incidents_bytes(data, fmt, where=where)
    return _replay(raw, meta, fmt, where, preset, list(sets), name)


def replay_stored_run(
    store, run_id: str, *, values: Mapping[str, Any] | None = None, name: str | None = None
) -> Run:
    """Fork a stored run: its incidents (as the JSON export carries them, scenario included) replayed with
    `values` set as the engine reads them (Scenario.with_values: seconds for durations), the page's "replay
    with other settings"."""
    from engine.report.export import export_run_incidents

    data = export_run_incidents(store, run_id, "json", charts=False)
    raw, meta, fmt = read_incidents_bytes(data, "json", where=f"run {run_id}")
    return _replay(raw, meta, fmt, f"run {run_id}", None, [], name, values=values)


def _replay(
    raw: pl.DataFrame,
    meta: dict,
    fmt: str,
    where: str,
    preset: str | None,
    sets: list[str],
    name: str | None,
    values: Mapping[str, Any] | None = None,
) -> Run:
    from engine.twin.simulate import simulate

    scenario = _scenario(where, meta, fmt, preset, sets)
    if values:
        scenario = scenario.with_values(values)
    rows = _parse(raw, where, fmt, scenario)
    planned = rows.filter(pl.col("planned"))
    failures = rows.filter(~pl.col("planned") & (pl.col("detected_s") < scenario.duration_s))
    arrivals = _arrivals(failures)
    planned_times = planned.filter(pl.col("t_s") < scenario.duration_s)["t_s"].to_numpy()
    source = (meta.get("run") or {}).get("run_id") or Path(where).name
    run = simulate(
        scenario,
        name=name or f"replay of {source}",
        arrivals=arrivals,
        planned_times=planned_times,
        kind="replay",
    )
    jobs = run.tables.get("jobs")
    # `goodput replay --json` prints at least run_id, jobs, gpus and days (DESIGN "Command line")
    run.summary.update(jobs=jobs.height if isinstance(jobs, pl.DataFrame) else 0, format="incidents")
    run.summary["replayed"] = {
        "file": where,
        "format": fmt,
        "source_run": source,
        "failures": len(arrivals),
        "planned": int(planned_times.size),
        "beyond_the_run": rows.height - len(arrivals) - int(planned_times.size),
    }
    return run


def _scenario(path: str, meta: dict, fmt: str, preset: str | None, sets: list[str]) -> Scenario:
    stored = (meta.get("run") or {}).get("scenario")
    if preset is not None or not stored:
        if fmt == "csv" and preset is None and not sets:
            raise IncidentsFileError(
                f"{path}: a CSV export carries no scenario; give a preset (--preset) and"
                " --set keys for the cluster it ran on"
            )
        return build(preset, sets=sets)
    try:  # the file's scenario is validated like a scenario file: its sizes bounded (engine.scenario.bounds)
        base = from_dict(stored)
    except GoodputError as err:
        raise IncidentsFileError(f"{path}: run.scenario: {str(err).removeprefix('scenario: ')}") from None
    return base.with_overrides(sets) if sets else base


def _parse(raw: pl.DataFrame, path: str, fmt: str, scenario: Scenario) -> pl.DataFrame:
    """Typed columns, every value checked; the first bad one is an error naming its line and column."""
    where = "line" if fmt == "csv" else "incident record"
    missing = [c for c in REQUIRED if c not in raw.columns]
    if not any(c in raw.columns for c in ("host_id",)):
        missing.append("host_id")
    if missing:
        raise IncidentsFileError(
            f"{path}: missing column(s) {', '.join(missing)}; columns are"
            f" {', '.join(c for c in raw.columns if c != 'line')}"
        )

    def fail(mask: pl.Series, what: str, column: str | None = None) -> None:
        if mask.any():
            i = int(mask.arg_true()[0])
            value = f" {raw[column][i]!r}" if column and column in raw.columns else ""
            raise IncidentsFileError(f"{path}: {where} {raw['line'][i]}: {what}{value}")

    typed = {}
    for column, dtype in NUMERIC.items():
        if column not in raw.columns:
            typed[column] = pl.Series(column, [None] * raw.height, dtype=dtype)
            continue
        text = raw[column].str.strip_chars().replace("", None)
        values = text.cast(pl.Float64, strict=False)
        fail(text.is_not_null() & values.is_null(), f"{column} is not a number:", column)
        if dtype == pl.Int64:
            fail(
                values.is_not_null() & (values != values.round()), f"{column} is not a whole number:", column
            )
            fail(values.is_not_null() & (values.abs() >= 2**31), f"{column} is out of range:", column)
        typed[column] = values.cast(dtype)
    planned_text = raw["planned"].str.strip_chars().str.to_lowercase().fill_null("")
    fail(~planned_text.is_in([*TRUE, *FALSE]), "planned is not true or false:", "planned")
    planned = planned_text.is_in(TRUE)
    rack_wide = (
        raw["rack_wide"].str.strip_chars().str.to_lowercase().is_in(TRUE)
        if "rack_wide" in raw.columns
        else pl.Series([False] * raw.height)
    )
    cause = raw["cause"].str.strip_chars()
    fail(cause.is_null() | ~cause.is_in(list(CATEGORY)), "unknown cause", "cause")
    fail(
        planned != (cause == "planned_maintenance"),
        "planned must be true exactly for planned_maintenance:",
        "cause",
    )
    t = typed["t_s"]
    fail(
        t.is_null() | (t < 0) | ~t.is_finite().fill_null(False),
        "t_s must be a time in seconds, at least 0:",
        "t_s",
    )
    detected = typed["detected_s"].fill_null(t)
    fail(detected < t, "detected_s is before t_s:", "detected_s")
    host, per_host = typed["host_id"], scenario.cluster.gpus_per_host
    fail(~planned & host.is_null(), "an unexpected failure needs a host_id (which host failed)")
    fail(
        ~planned & ((host < 0) | (host >= scenario.hosts)).fill_null(False),
        f"host_id is not a host of the replayed cluster (0 to {scenario.hosts - 1}):",
        "host_id",
    )
    gpu_index = typed["gpu_index"].fill_null(typed["gpu_id"] - host * per_host).fill_null(0)
    fail(
        ~planned & ((gpu_index < 0) | (gpu_index >= per_host)),
        f"the GPU is not one of the host's {per_host}:",
        "gpu_id",
    )
    return pl.DataFrame(
        {
            "t_s": t,
            "detected_s": detected,
            "cause": cause,
            "planned": planned,
            "host": host,
            "gpu_index": gpu_index,
            "xid": typed["xid"].fill_null(NO_XID),
            "rack_wide": rack_wide,
        }
    )


def _arrivals(failures: pl.DataFrame) -> Arrivals:
    """In the order the simulator notices them (detection time, then host), as engine.sim.failures draws them."""
    f = failures.sort("detected_s", "host", maintain_order=True)
    index = {c: i for i, c in enumerate(CAUSE_KEYS)}
    return Arrivals(
        fault_s=f["t_s"].to_numpy().astype(float),
        detected_s=f["detected_s"].to_numpy().astype(float),
        host=f["host"].to_numpy().astype(np.int64),
        cause=np.array([index[c] for c in f["cause"].to_list()], dtype=np.int64),
        gpu_index=f["gpu_index"].to_numpy().astype(np.int64),
        xid=f["xid"].to_numpy().astype(np.int64),
        rack_wide=f["rack_wide"].to_numpy().astype(bool),
    )
