"""The Data page's imports as plain functions: uploaded files (name and bytes) in, a new run in the store out.

    import_telemetry(store, dcgm=[("node017.prom", data)], kernel_logs=[...])  -> Imported (kind ingest)
    import_trace(store, ("jobs.csv", data), fmt="auto", mode="rescheduled")    -> Imported (kind replay)
    import_trace(store, ("pods.csv", data), node_list=("nodes.csv", data))     -> an openb pod list on its nodes

Everything is parsed and built before anything is written, and the run is written atomically
(Store.write_run), so a file that fails to parse leaves the store as it was; the error names the file and line
(the parsers' GoodputError). Uploads are capped in total (MAX_UPLOAD_BYTES) before any parsing starts, and
imports in the whole server to MAX_IMPORTS_AT_ONCE: each may take ~1-3 GB while it parses (a 200 MB gzip upload
inflates to up to 1 GiB of text, read in blocks: engine/limits.py MAX_INGEST_SAMPLES), so one more is refused at
once with a line saying to try again, never queued behind the others.
"""

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from engine.errors import GoodputError
from engine.ingest import ingest_dcgm, ingest_kernel_logs
from engine.replay import formats as trace_formats
from engine.replay.run import replay_file
from engine.replay.settings import MODES
from engine.store import Store
from engine.store.run import Run

MAX_UPLOAD_MB = (
    200  # what the page states; Streamlit's own per-file limit (server.maxUploadSize) is 200 MB too
)
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024
TRACE_FORMATS = ("auto", *trace_formats.FORMATS)  # the built-in formats; trace_format_choices() sees all


def trace_format_choices() -> tuple[str, ...]:
    """The import picker's formats: auto and every registered one (engine.replay.formats.names)."""
    return ("auto", *trace_formats.names())


# Imports (uploads parsed into runs) running at once in the whole server, every session together.
MAX_IMPORTS_AT_ONCE = 2
_IMPORT_SLOTS = threading.BoundedSemaphore(MAX_IMPORTS_AT_ONCE)


class UploadError(GoodputError):
    """Uploaded files that cannot become a run (too large, none given, a wrong kind)."""


@dataclass(frozen=True)
class Imported:
    run_id: str
    kind: str
    name: str
    summary: dict


class ImportsBusy(UploadError):
    """MAX_IMPORTS_AT_ONCE imports are running already."""


@contextmanager
def import_slot() -> Iterator[None]:
    """Hold one of the server's MAX_IMPORTS_AT_ONCE import slots while parsing and writing; ImportsBusy at once
    (never a wait) when all are taken."""
    if not _IMPORT_SLOTS.acquire(blocking=False):
        raise ImportsBusy(
            f"{MAX_IMPORTS_AT_ONCE} imports are running on this server already (Goodput's limit, each may take"
            " gigabytes while it parses); try again when one has finished, or import with the command line"
        )
    try:
        yield
    finally:
        _IMPORT_SLOTS.release()


def named_bytes(files: Sequence) -> list[tuple[str, bytes]]:
    """(name, bytes) pairs from Streamlit uploads (`.name`, `.getvalue()`) or (name, bytes) pairs."""
    pairs = []
    for item in files:
        if isinstance(item, tuple):
            name, data = item
        elif hasattr(item, "name") and hasattr(item, "getvalue"):
            name, data = item.name, item.getvalue()
        else:
            raise UploadError(f"not an uploaded file: {type(item).__name__}")
        if isinstance(data, str):
            data = data.encode("utf-8")
        pairs.append((str(name), bytes(data)))
    return pairs


def check_size(files: Sequence[tuple[str, bytes]], limit: int = MAX_UPLOAD_BYTES) -> int:
    """The total size of `files`; an UploadError naming the largest file when it is over `limit`."""
    total = sum(len(data) for _, data in files)
    if total > limit:
        largest = max(files, key=lambda f: len(f[1]))
        raise UploadError(
            f"the uploads hold {total / 1e6:,.1f} MB, over the {limit / 1e6:,.0f} MB limit"
            f" (the largest is {largest[0]}, {len(largest[1]) / 1e6:,.1f} MB); import larger"
            " files with the command line"
        )
    return total


def import_telemetry(
    store: Store,
    dcgm: Sequence = (),
    kernel_logs: Sequence = (),
    *,
    name: str | None = None,
    limit: int = MAX_UPLOAD_BYTES,
) -> Imported:
    """DCGM exporter scrapes and/or kernel logs (XIDs mapped to the scraped GPUs) as a new observed run."""
    with import_slot():
        scrapes, logs = named_bytes(dcgm), named_bytes(kernel_logs)
        if not scrapes and not logs:
            raise UploadError("no file to ingest: add DCGM scrapes or kernel logs")
        check_size(scrapes + logs, limit)
        if scrapes:
            run = ingest_dcgm(scrapes, kernel_logs=logs, name=name or None)
        else:
            run = ingest_kernel_logs(logs, name=name or None)
        return _write(store, run)


def import_trace(
    store: Store,
    trace,
    *,
    fmt: str = "auto",
    mode: str = "rescheduled",
    name: str | None = None,
    node_list=None,
    limit: int = MAX_UPLOAD_BYTES,
) -> Imported:
    """A job trace (goodput CSV, Slurm sacct, SWF, Alibaba openb) replayed into a new run.

    `node_list`: an openb pod list's node list (openb_node_list_gpu_node.csv), the upload's counterpart of the
    file `goodput replay` reads beside the pod list. Without it an openb replay runs on a cluster inferred from
    the pods, and the summary's `notes` say so and what to add."""
    if fmt not in (choices := trace_format_choices()):
        raise UploadError(f"unknown trace format {fmt!r}; one of {', '.join(choices)}")
    if mode not in MODES:
        raise UploadError(f"unknown replay mode {mode!r}; one of {', '.join(MODES)}")
    with import_slot():
        [(file_name, data)] = named_bytes([trace])
        nodes = named_bytes([node_list])[0] if node_list is not None else None
        check_size([(file_name, data), *([nodes] if nodes else [])], limit)
        if not data.strip():
            raise UploadError(f"{file_name}: the file is empty")
        if nodes is not None and not nodes[1].strip():
            raise UploadError(f"{nodes[0]}: the node list is empty")
        run = replay_file(data, fmt=fmt, mode=mode, name=file_name, node_list=nodes)
        if name:
            run.name = name
        return _write(store, run)


def _write(store: Store, run: Run) -> Imported:
    run_id = store.write_run(run)
    return Imported(run_id=run_id, kind=run.kind, name=run.name, summary=dict(run.summary or {}))
