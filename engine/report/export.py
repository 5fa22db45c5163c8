"""Incident exports: CSV, JSON, Parquet and a standalone HTML report, one code path for the CLI and the page.

`export_incidents(frame, fmt, ...) -> bytes` turns an incidents frame (engine.analysis.incidents.load_incidents, or the
store's incidents table) into a file's bytes; `write_export(path, data)` writes them atomically (a temporary
name in the same folder, then a rename: never a partial file); `export_run_incidents(store, run_id, fmt, ...)`
does both halves' shared work for a stored run (load, filter, anonymise with the store's key, run metadata).
`read_export(data, fmt)` reads CSV, JSON and Parquet exports back to the same frame (replay reads them).

Every export has the columns of EXPORT_SCHEMA, in that order. CSV has no lists: the list columns (job_ids,
job_names, users) are JSON arrays in one cell. CSV text cells are neutralised against formula injection
(engine.report.csv_safety: a leading quote before `=`, `+`, `-`, `@`, tab or CR), which `read_export` undoes; JSON
and Parquet keep every value as it is, typed. The HTML report escapes every data string.

Incidents of a fault history (`goodput ingest node-events`) carry what people wrote about them, as text: `reason`,
`description` and `reported_by` (engine.report.outage_text: an outage's events' distinct texts joined by " | ") and
`node_events`, how many events the outage merged; null for runs without node events. Anonymised, `reported_by`
becomes pseudonyms and the free text (reason, description) is left out: it may name anyone or anything.

A run's export (not one incident's) also carries its fail-slow episodes (engine.report.slow_episodes: every
episode of the run, worst first, with its cost; the filters choose incidents): the JSON under "slow_episodes",
the Parquet file's metadata under the same key, the HTML report as a table with their total. CSV stays the one
incidents table (EXPORT_SCHEMA), so every CSV reader, replay included, reads it as before.
"""

import contextlib
import html
import io
import json
import os
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path

import plotly.io as pio
import polars as pl

from engine import __version__
from engine.analysis.definitions import definition
from engine.analysis.incidents import (
    filter_incidents,
    flagship_job_id,
    incident_detail,
    load_incidents,
    summary_counts,
)
from engine.errors import GoodputError
from engine.report.anonymise import anonymise_frame, anonymise_scenario, pseudonym, store_key
from engine.report.charts import by_cause_figure, timeline_figure
from engine.report.csv_safety import restore_frame, safe_csv
from engine.report.outage_text import JOIN, with_outage_text
from engine.report.palette import cause_label
from engine.report.slow_episodes import HTML_HEADERS, html_rows, load_slow_episodes, slow_records
from engine.report.visible_text import visible
from engine.store import query_frame
from engine.store.outputs import check_target
from engine.units import SECONDS_PER_DAY

FORMATS = ("csv", "json", "parquet", "html")
FORMAT_NAME, FORMAT_VERSION = "goodput-incidents", 1
LISTS = ("job_ids", "job_names", "users")
EXPORT_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.Int32,
    "time_utc": pl.Datetime("us", "UTC"),
    "t_s": pl.Float64,
    "detected_s": pl.Float64,
    "mitigated_s": pl.Float64,
    "repaired_s": pl.Float64,
    "cause": pl.String,
    "category": pl.String,
    "planned": pl.Boolean,
    "xid": pl.Int32,
    "host_id": pl.Int32,
    "hostname": pl.String,
    "rack_id": pl.Int32,
    "gpu_id": pl.Int32,
    "gpu_index": pl.Int32,
    "link_id": pl.Int32,
    "rack_wide": pl.Boolean,
    "jobs_hit": pl.Int32,
    "gpu_hours_lost": pl.Float64,
    **dict.fromkeys(LISTS, pl.List(pl.String)),
    # a fault history's text (engine.report.outage_text), null elsewhere; added last, so older readers keep theirs
    "reason": pl.String,
    "description": pl.String,
    "reported_by": pl.String,
    "node_events": pl.Int32,
}
FREE_TEXT = ("reason", "description")  # left out of an anonymised export


class ExportError(GoodputError):
    """A format we do not write, or a file that is not one of our exports."""


# ----- the frame ------------------------------------------------------------------------------------------


def export_frame(frame: pl.DataFrame, started_at: datetime | str | None = None) -> pl.DataFrame:
    """`frame` with EXPORT_SCHEMA's columns in order: missing ones null (lists empty), `time_utc` from the
    run's start plus t_s."""
    if isinstance(started_at, str):
        started_at = datetime.fromisoformat(started_at)
    missing = {c: pl.lit(None, t) for c, t in EXPORT_SCHEMA.items() if c not in frame.columns}
    out = frame.with_columns(**missing)
    if started_at is not None and "time_utc" not in frame.columns:
        start = started_at if started_at.tzinfo else started_at.replace(tzinfo=UTC)
        out = out.with_columns(
            time_utc=pl.lit(start.astimezone(UTC))
            + pl.duration(microseconds=(pl.col("t_s") * 1e6).round().cast(pl.Int64))
        )
    out = out.with_columns(pl.col(c).cast(pl.List(pl.String)).fill_null([]) for c in LISTS)
    return out.select(list(EXPORT_SCHEMA)).cast(EXPORT_SCHEMA)


# ----- writing --------------------------------------------------------------------------------------------


def export_incidents(
    frame: pl.DataFrame,
    fmt: str,
    *,
    anonymise: bool = False,
    key: bytes | None = None,
    run_info: dict | None = None,
    charts: bool = True,
    chain: pl.DataFrame | None = None,
    slow_episodes: pl.DataFrame | None = None,
) -> bytes:
    """The bytes of an export of `frame` in `fmt` (csv, json, parquet, html).

    `run_info` (the run's id, kind, name, started_at, duration_s, seed, scenario; engine.store.RunInfo fields)
    goes into the JSON's `run`, the Parquet file's metadata and the HTML header; `anonymise` replaces
    hostnames, job names and ids, users and the run's name with pseudonyms keyed by `key`
    (engine.report.anonymise.store_key); `chain` (engine.analysis.incidents.incident_chain, built with the same
    pseudonyms when anonymised) adds one incident's chain to the JSON and the HTML; `slow_episodes`
    (engine.report.slow_episodes.load_slow_episodes) the run's fail-slow episodes to the JSON, Parquet and HTML.
    """
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; formats are {', '.join(FORMATS)}")
    info = dict(run_info or {})
    table = export_frame(frame, info.get("started_at"))
    days = (info.get("duration_s") or 0) / SECONDS_PER_DAY or None
    # the flagship job's interruptions among the exported incidents, counted before pseudonyms replace its id
    flagship = info.get("flagship_job")
    interruptions = summary_counts(table, days, job=flagship) if flagship else None
    if anonymise:
        if key is None:
            raise ExportError(
                "anonymise: no key given (engine.report.anonymise.store_key(store folder) makes one)"
            )
        table = _anonymise_outage_text(anonymise_frame(table, key), key)
        slow_episodes = None if slow_episodes is None else anonymise_frame(slow_episodes, key)
        if info.get("name"):  # a run's name may say whose it is ("alice-debug")
            info["name"] = pseudonym(key, "run", str(info["name"]))
        if "scenario" in info:
            info["scenario"] = anonymise_scenario(info["scenario"], key)
    if fmt == "csv":
        return _csv(table)
    slow = {} if slow_episodes is None else {"slow_episodes": slow_records(slow_episodes)}
    if fmt == "parquet":
        buffer = io.BytesIO()
        meta = _meta(info, anonymise) | slow
        table.write_parquet(buffer, metadata={FORMAT_NAME: json.dumps(meta, default=str)})
        return buffer.getvalue()
    summary = summary_counts(table, days)
    if fmt == "json":
        # "summary" counts every exported incident; "interruptions" those of the flagship job (DESIGN: the word
        # interruptions means the flagship's), each figure as engine.analysis.definitions names it
        document = {**_meta(info, anonymise), "summary": _jsonable_summary(summary, count="incidents")}
        if interruptions is not None:
            document["interruptions"] = _jsonable_summary(interruptions)
        document["incidents"] = _records(table)
        if chain is not None:
            document["chain"] = chain.to_dicts()
        return json.dumps(document | slow, default=str, indent=1).encode()
    return _html(table, info, summary, interruptions, anonymise, charts, chain, slow_episodes).encode()


def write_export(path: str | os.PathLike, data: bytes, *, force: bool = False) -> Path:
    """Write `data` to `path` atomically: a temporary file in the same folder, flushed, then put in place.

    A new file is put in place by a hard link, which fails rather than replace a file that appeared since the
    caller's checks; an existing regular file is replaced (rename) only with `force`. A symbolic link, folder,
    device or FIFO at `path` is never replaced, with `force` or not (engine.store.outputs.check_target).
    """
    path = Path(path)
    check_target(path, force=force)
    if not path.parent.is_dir():
        raise ExportError(f"{path}: folder {path.parent} does not exist")
    temp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with open(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        _put_in_place(temp, path, force)
    except FileExistsError:
        raise ExportError(f"{path} already exists; add --force to replace it") from None
    except OSError as err:
        raise ExportError(f"{path}: cannot be written ({err.strerror or err})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    return path


def _put_in_place(temp: Path, path: Path, force: bool) -> None:
    if not force:
        try:
            os.link(temp, path)  # atomic, and never replaces: FileExistsError if something is there now
            return
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: fall back on a checked rename
            if os.path.lexists(path):
                raise FileExistsError(path) from None
    else:
        check_target(path, force=True)  # again: a link or device may have appeared since the caller's check
    os.replace(temp, path)


def export_run_incidents(
    store,
    run_id: str,
    fmt: str,
    *,
    anonymise: bool = False,
    incident_id: int | None = None,
    charts: bool = True,
    **filters,
) -> bytes:
    """Load a stored run's incidents, filter them (engine.analysis.incidents.filter_incidents keywords) or pick one
    (`incident_id`, with its chain), and export them: what `goodput export incidents` and the page share."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; formats are {', '.join(FORMATS)}")
    info = store.info(run_id)
    run_info = {
        "run_id": info.run_id,
        "kind": info.kind,
        "name": info.name,
        "seed": info.seed,
        "started_at": info.started_at,
        "duration_s": info.duration_s,
        "scenario": info.scenario,
        "engine_version": info.engine_version,
    }
    chain = slow_episodes = None
    with store.connect(run_id) as con:
        frame = with_outage_text(con, load_incidents(con))
        run_info["has_jobs"] = bool(query_frame(con, "SELECT EXISTS (SELECT 1 FROM jobs) AS e")["e"][0])
        if incident_id is None:  # a run's export carries its fail-slow episodes; one incident's does not
            slow_episodes = load_slow_episodes(con)
        run_info["flagship_job"] = flagship_job_id(con)
        if incident_id is not None:
            frame = frame.filter(pl.col("incident_id") == int(incident_id))
            if frame.height == 0:
                raise ExportError(f"run {run_id} has no incident {incident_id}")
            rename = None
            if anonymise:
                key = store_key(store.root)
                rename = lambda kind, name: pseudonym(key, kind, name)  # noqa: E731
            chain = incident_detail(con, incident_id, rename=rename).chain
    frame = filter_incidents(frame, **filters)
    run_info["filters"] = {
        k: (list(v) if isinstance(v, (list, tuple, set)) else v) for k, v in filters.items() if v is not None
    } | ({"incident_id": incident_id} if incident_id is not None else {})
    key = store_key(store.root) if anonymise else None
    return export_incidents(
        frame,
        fmt,
        anonymise=anonymise,
        key=key,
        run_info=run_info,
        charts=charts,
        chain=chain,
        slow_episodes=slow_episodes,
    )


def _anonymise_outage_text(table: pl.DataFrame, key: bytes) -> pl.DataFrame:
    """Each reporter of an outage as a pseudonym (as `users` are); its reason and description left out."""
    reporters = table.with_columns(pl.col("reported_by").str.split(JOIN))
    named = anonymise_frame(reporters, key, {"reported_by": "user"})
    return named.with_columns(
        pl.col("reported_by").list.join(JOIN), *(pl.lit(None, pl.String).alias(c) for c in FREE_TEXT)
    )


def _meta(info: dict, anonymised: bool) -> dict:
    run = {k: info.get(k) for k in ("run_id", "kind", "name", "seed", "started_at", "duration_s", "scenario")}
    if isinstance(run["started_at"], datetime):
        run["started_at"] = run["started_at"].isoformat()
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "engine_version": __version__,
        "exported_at": datetime.now(UTC).isoformat(),
        "anonymised": anonymised,
        "run": run,
        "filters": info.get("filters", {}),
    }


def _csv(table: pl.DataFrame) -> bytes:
    def as_json(
        column: str,
    ) -> pl.Expr:  # a list of strings as a JSON array, vectorised, control characters too
        encoded = pl.struct(pl.col(column).alias("v")).struct.json_encode()
        return encoded.str.strip_prefix('{"v":').str.strip_suffix("}").alias(column)

    return safe_csv(table.with_columns(as_json(c) for c in LISTS))


def _records(table: pl.DataFrame) -> list[dict]:
    return table.with_columns(pl.col("time_utc").dt.to_string("%Y-%m-%dT%H:%M:%S%.6f%:z")).to_dicts()


def _jsonable_summary(summary: dict, count: str = "interruptions") -> dict:
    """`summary` as JSON; `count` names each cause's and category's count: "interruptions" for the flagship
    job's, "incidents" for every exported incident (they count different things: DESIGN's words)."""
    groups = ("by_cause", "by_category")
    return {
        k: (
            (v.rename({"interruptions": count}) if k in groups and count != "interruptions" else v).to_dicts()
            if isinstance(v, pl.DataFrame)
            else v
        )
        for k, v in summary.items()
    }


# ----- reading back ---------------------------------------------------------------------------------------


def read_export(data: bytes, fmt: str, *, where: str = "export") -> tuple[pl.DataFrame, dict]:
    """An export's incidents frame (EXPORT_SCHEMA) and its metadata ({} for CSV). `where` names the file in
    errors."""
    try:
        if fmt == "csv":
            text = dict.fromkeys(LISTS, pl.String)
            frame = restore_frame(pl.read_csv(io.BytesIO(data), schema_overrides=EXPORT_SCHEMA | text))
            frame = frame.with_columns(pl.col(c).str.json_decode(pl.List(pl.String)) for c in LISTS)
            return _with_later_columns(frame), {}
        if fmt == "json":
            document = json.loads(data)
            if not isinstance(document, dict) or not isinstance(document.get("incidents"), list):
                raise ExportError(f"{where}: not a Goodput incidents export (no `incidents` list)")
            frame = (
                pl.DataFrame(
                    document["incidents"], schema=EXPORT_SCHEMA | {"time_utc": pl.String}, orient="row"
                )
                if document["incidents"]
                else pl.DataFrame(schema=EXPORT_SCHEMA)
            )
            frame = frame.with_columns(
                pl.col("time_utc").cast(pl.String).str.to_datetime(time_unit="us", time_zone="UTC")
            )
            return frame.select(list(EXPORT_SCHEMA)), {k: v for k, v in document.items() if k != "incidents"}
        if fmt == "parquet":
            raw = pl.read_parquet_metadata(io.BytesIO(data)).get(FORMAT_NAME)
            return _with_later_columns(pl.read_parquet(io.BytesIO(data))), json.loads(raw) if raw else {}
    except ExportError:
        raise
    except Exception as err:  # polars, json and pyarrow each raise their own types for a damaged file
        raise ExportError(f"{where}: cannot read as a {fmt} incidents export ({err})") from err
    raise ExportError(f"{where}: cannot read format {fmt!r} back (csv, json or parquet)")


def _with_later_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """An export written before a column was added (a fault history's text) read with it null."""
    missing = [pl.lit(None, t).alias(c) for c, t in EXPORT_SCHEMA.items() if c not in frame.columns]
    return frame.with_columns(missing) if missing else frame


# ----- the HTML report ------------------------------------------------------------------------------------


def _html(
    table: pl.DataFrame,
    info: dict,
    summary: dict,
    interruptions: dict | None,
    anonymised: bool,
    charts: bool,
    chain: pl.DataFrame | None,
    slow_episodes: pl.DataFrame | None = None,
) -> str:
    name = info.get("name") or "run"
    title = f"Incidents of {name}" + (f" ({info['run_id']})" if info.get("run_id") else "")
    started = info.get("started_at")
    info["outage_text"] = bool(table["node_events"].is_not_null().any())
    parts = _heading(title, info, anonymised) + _summary_section(info, summary, interruptions)
    if charts and table.height:
        parts += _charts(table)
    if chain is not None:
        parts += _chain_section(chain, started)
    has_jobs = info.get("has_jobs", True)
    parts += _by_cause_section(summary["by_cause"], has_jobs) + _incidents_section(table, has_jobs)
    if slow_episodes is not None and slow_episodes.height:
        parts += _slow_section(slow_episodes, started)
    return _page(title, parts)


def _slow_section(episodes: pl.DataFrame, started) -> list[str]:
    """The run's fail-slow episodes, worst first, and their cost summed (the flagship job's fail-slow slowdown)."""
    total = episodes["cost_gpu_hours"].sum() or 0.0
    label = definition("slow_episodes_cost_total").label
    return [
        f"<h2>Fail-slow episodes ({episodes.height:,})</h2>",
        f"<p>{shown(label)}: {total:,.1f}</p>",
        _table(HTML_HEADERS, html_rows(episodes, lambda t: _at(started, t)), klass="slow-episodes"),
    ]


def _heading(title: str, info: dict, anonymised: bool) -> list[str]:
    """The title and one line on when, by what and how the report was exported."""
    esc = shown  # data as text: escaped, and its invisible characters visible
    return [
        f"<h1>{esc(title)}</h1>",
        f"<p>Exported {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by Goodput {esc(__version__)}"
        + (" &middot; <b>anonymised</b>: hosts, jobs and users are pseudonyms" if anonymised else "")
        + (
            "; what people wrote (reasons, descriptions) is left out"
            if anonymised and info.get("outage_text")
            else ""
        )
        + (
            f" &middot; filters: {esc(json.dumps(info['filters'], default=str))}"
            if info.get("filters")
            else ""
        )
        + "</p>",
    ]


def _summary_section(info: dict, summary: dict, interruptions: dict | None) -> list[str]:
    """The run's start and length, then the figures of _facts."""
    facts = _facts(
        summary, interruptions, (info.get("duration_s") or 0) / SECONDS_PER_DAY, info.get("has_jobs", True)
    )
    if info.get("started_at") is not None:
        facts.insert(0, ("run started (UTC)", str(info["started_at"])))
    if info.get("duration_s"):
        facts.insert(1, ("run length", f"{info['duration_s'] / SECONDS_PER_DAY:g} days"))
    return ["<h2>Summary</h2>", _table(["figure", "value"], facts)]


def _charts(table: pl.DataFrame) -> list[str]:
    """The timeline and the by-cause chart; plotly.js embedded once, inline: the report opens offline and
    loads nothing from the network."""
    parts = []
    first = True
    for fig in (timeline_figure(table), by_cause_figure(table)):
        parts.append(
            pio.to_html(
                fig,
                full_html=False,
                include_plotlyjs=first,
                include_mathjax=False,
                config={"displaylogo": False},
            )
        )
        first = False
    return parts


def _chain_section(chain: pl.DataFrame, started) -> list[str]:
    """One incident's chain, step by step."""
    return [
        "<h2>Chain of the incident</h2>",
        _table(
            ["step", "t_s", "time (UTC)", "what", "detail"],
            [(s, f"{t:,.0f}", _at(started, t), w, d) for s, t, w, d in chain.iter_rows()],
        ),
    ]


def _by_cause_section(by_cause: pl.DataFrame, has_jobs: bool = True) -> list[str]:
    """Incidents by cause, with the GPU-hours they cost where the run has jobs to lose them."""
    rows = [
        (cause_label(r["cause"]), r["interruptions"], r["unexpected"], f"{r['gpu_hours_lost']:,.1f}")
        for r in by_cause.iter_rows(named=True)
    ]
    headers = ["cause", "incidents", "unexpected", "GPU-hours lost"]
    if not has_jobs:
        headers, rows = headers[:-1], [r[:-1] for r in rows]
    return ["<h2>By cause</h2>", _table(headers, rows)]


_INCIDENT_COLUMNS = [
    "incident_id",
    "time_utc",
    "cause",
    "category",
    "planned",
    "xid",
    "hostname",
    "rack_id",
    "gpu_id",
    "link_id",
    "detected_s",
    "mitigated_s",
    "repaired_s",
    "gpu_hours_lost",
    "job_ids",
    "users",
]


# what a person reads above each column of the report's incident table (the files keep the column names)
_INCIDENT_HEADERS = {
    "incident_id": "incident #",
    "time_utc": "time (UTC)",
    "xid": "XID",
    "rack_id": "rack",
    "gpu_id": "GPU id",
    "link_id": "link id",
    "detected_s": "detected (s into the run)",
    "mitigated_s": "mitigated (s into the run)",
    "repaired_s": "repaired (s into the run)",
    "gpu_hours_lost": "GPU-hours lost",
    "job_ids": "jobs hit",
    "reported_by": "reported by",
}
_TEXT_COLUMNS = ["reason", "description", "reported_by"]  # a fault history's, shown where an incident has one
_JOB_COLUMNS = ("gpu_hours_lost", "job_ids", "users")  # nothing to say in a run with no job


def _incidents_section(table: pl.DataFrame, has_jobs: bool = True) -> list[str]:
    """Every incident exported, one row each, causes in words (engine.report.palette.cause_label); a fault
    history's text columns where any incident has one; the jobs' columns only where the run has jobs."""
    texts = [c for c in _TEXT_COLUMNS if table[c].is_not_null().any()]
    columns = [c for c in _INCIDENT_COLUMNS if has_jobs or c not in _JOB_COLUMNS] + texts
    cause = columns.index("cause")
    rows = []
    for row in table.select(columns).iter_rows():
        cells = [_cell(v) for v in row]
        cells[cause] = _cell(cause_label(row[cause])) if row[cause] is not None else cells[cause]
        rows.append(cells)
    headers = [_INCIDENT_HEADERS.get(c, c) for c in columns]
    return [f"<h2>Incidents ({table.height:,})</h2>", _table(headers, rows, klass="incidents")]


def _page(title: str, parts: list[str]) -> str:
    style = (
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
        "margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}"
        "th{background:#f3f3f3}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{shown(title)}</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )


def _facts(
    summary: dict, interruptions: dict | None, days: float, has_jobs: bool = True
) -> list[tuple[str, str]]:
    """The report's summary table, each figure under its engine.analysis.definitions label: the incidents
    exported, and among them the flagship job's interruptions (where the run has a flagship job). A run with no
    job (a fault history, telemetry) lost no job's GPU-hours: a dash says so, not a zero that reads as measured."""

    def rate(
        counts: dict,
    ) -> str:  # from less than a day of data a rate says nothing (definitions: *_per_day)
        return "-" if counts["per_day"] is None or days < 1 else f"{counts['per_day']:.2f}"

    facts = [
        (definition("incidents").label, f"{summary['total']:,}"),
        (definition("incidents_per_day").label, rate(summary)),
        (
            definition("incident_gpu_hours_lost").label,
            f"{summary['gpu_hours_lost']:,.1f}" if has_jobs else "- (no jobs in this run)",
        ),
    ]
    if interruptions is not None:
        facts += [
            (definition("interruptions").label, f"{interruptions['total']:,}"),
            (definition("unexpected_interruptions").label, f"{interruptions['unexpected']:,}"),
            (definition("planned_interruptions").label, f"{interruptions['planned']:,}"),
            (
                definition("hardware_share").label,
                "-" if interruptions["hardware_share"] is None else f"{interruptions['hardware_share']:.1%}",
            ),
            (definition("interruptions_per_day").label, rate(interruptions)),
            (definition("interruption_gpu_hours_lost").label, f"{interruptions['gpu_hours_lost']:,.1f}"),
        ]
    return facts


def _at(started, t_s: float) -> str:
    if started is None:
        return ""
    start = datetime.fromisoformat(started) if isinstance(started, str) else started
    return f"{start + timedelta(seconds=t_s):%Y-%m-%d %H:%M:%S}"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(value)
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    return str(value)


def shown(value: object) -> str:
    """Text for the HTML report: its invisible characters as marks (engine.report.visible_text), then escaped."""
    return html.escape(visible(value))


def _table(header: list[str], rows, klass: str = "") -> str:
    esc = shown  # data as text: escaped, and its invisible characters visible
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{klass}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
