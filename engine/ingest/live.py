"""Scrape running DCGM exporter endpoints into an observed run, one atomic commit a scrape.

    goodput ingest dcgm --scrape http://node017:9400/metrics,http://node018:9400/metrics --every 30s

The first scrape creates the run (Store.write_run); every later one appends to it (Store.append_to_run,
copy-on-write, so the dashboard never sees half a scrape). An endpoint that fails on the first scrape is an
error (nothing is written); later failures are counted, reported on stderr and in the run's summary, and the
loop carries on. Bad samples (a value no column holds, a clock outside the run's window, a gpu label that is
no GPU index) are skipped and counted, on stderr and in the summary (engine/ingest/bounds.py).

Every fetch has a whole-answer deadline and a size bound, follows redirects only within its origin and never
shows the password of a `user:pass@` URL (engine/ingest/http_fetch.py). SIGINT or SIGTERM ends the loop within
a fraction of a second, even while fetches hang: the fetches in flight are cut, the scrape they belonged to is
dropped, and what earlier scrapes committed is the run (its summary is returned, the command exits 0).
"""

import contextlib
import logging
import queue
import re
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.ingest import bounds, summary_of
from engine.ingest.dcgm import DcgmSamples, parse_dcgm
from engine.ingest.http_fetch import Endpoint, Fetcher, endpoint
from engine.ingest.observed import Batch, Observer
from engine.ingest.sources import Source
from engine.store import Store
from engine.store.run import Run

FETCH_DEADLINE_S = 10.0  # the whole answer, however slowly it comes
MAX_PARALLEL_FETCHES = 32
_log = logging.getLogger(__name__)
# A line's error in Goodput's own words only, which may be shown: bounds.time_error's
_OWN_WORDS = re.compile(
    r"^timestamp [^'\"`]* is (before 2000-01-01|more than [0-9,]+ s ahead of this machine's clock)"
)
STOP_POLL_S = 0.1  # how often a scrape in progress looks for a stop (a signal only sets a flag)
# The shortest time between scrapes: dcgm-exporter collects its values every 30 s by default (a few seconds at
# its fastest settings), so a scrape a second already reads most values twice; a typo such as 1ms would
# otherwise hammer every host's exporter and fill the run with copies.
MIN_EVERY_S = 1.0


def parse_urls(text: str) -> list[str]:
    """The comma-separated endpoints of --scrape, each checked (an error shows it without its password)."""
    urls = [u.strip() for u in text.split(",") if u.strip()]
    if not urls:
        raise GoodputError("--scrape: give at least one URL")
    for url in urls:
        endpoint(url)
    return urls


def fetch(ep: Endpoint, fetcher: Fetcher) -> Source:
    """One scrape of one endpoint; its time is when the answer arrived. Lines without timestamps take it."""
    data = fetcher.get(ep)
    return Source(ep.shown, data, mtime=time.time(), host=ep.host)


def scrape_loop(
    urls: list[str],
    every_s: float,
    store: Store,
    *,
    scrapes: int | None = None,
    name: str | None = None,
    log: Callable[[str], None] | None = None,
    quiet: bool = False,
    stop: threading.Event | None = None,
    deadline_s: float = FETCH_DEADLINE_S,
) -> dict:
    """Scrape until stopped (or `scrapes` times); return the summary of the run with its run_id.

    `log` (default: stderr) gets a line for each committed scrape and for each problem (an endpoint that
    failed, a garbled answer, a stop mid-scrape); `quiet` keeps only the problems (`--json`: its output is the
    JSON object, and stderr speaks only of what went wrong)."""
    if not every_s >= MIN_EVERY_S:
        raise GoodputError(
            f"--every: the scrape interval must be at least {MIN_EVERY_S:g} s (got {every_s:g} s)"
        )
    endpoints = [endpoint(url) for url in urls]
    shown = [ep.shown for ep in endpoints]
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    progress = (lambda _line: None) if quiet else log
    stop = stop or threading.Event()
    fetcher = Fetcher(deadline_s)
    observer = Observer()
    batches: list[Batch] = []
    failures: Counter = Counter()
    run_id = ""
    committed = 0
    seen = {"last": pl.DataFrame(schema={"ident": pl.UInt64, "last_ms": pl.Int64})}
    with _stopped_by_signals(stop):
        for number, _due in enumerate(_schedule(every_s, scrapes, stop), start=1):
            previous_end = observer.end_s
            answers = _fetch_all(endpoints, fetcher, stop)
            if answers is None:
                log(f"scrape {number}: stopped before every endpoint answered; not committed")
                break
            sources = _answered(endpoints, answers, number, failures, log)
            batch = _batch(sources, observer, seen, number, failures, log, shown)
            if batch is not None:
                batches.append(batch)
                committed += 1
                extra = {"scrapes": committed, "failed_scrapes": dict(failures), "endpoints": shown}
                summary = summary_of(batches, observer, **extra)
                run_id = _commit(
                    store, run_id, observer, batch, previous_end, summary, name=name, shown=shown
                )
                progress(
                    f"scrape {number} at {datetime.now(UTC):%H:%M:%S}: {len(sources)}/{len(endpoints)}"
                    f" endpoints, {batch.samples} samples, {batch.xid_events} XID events{_skips(batch)};"
                    f" run {run_id}: {summary['hosts']} hosts, {summary['gpus']} GPUs,"
                    f" {summary['samples']} samples"
                )
    if not run_id:
        raise GoodputError(
            "stopped before the first scrape completed; nothing was written"
            if stop.is_set()
            else "no scrape completed; nothing was written"
        )
    return {
        "run_id": run_id,
        **summary_of(batches, observer, scrapes=committed, failed_scrapes=dict(failures), endpoints=shown),
    }


def _answered(
    endpoints: list[Endpoint], answers: list, number: int, failures: Counter, log: Callable[[str], None]
) -> list[Source]:
    """The answers that came; a failed endpoint is counted and logged (on the first scrape, raised)."""
    sources = []
    for ep, answer in zip(endpoints, answers, strict=True):
        if isinstance(answer, Source):
            sources.append(answer)
            continue
        if number == 1:
            raise answer
        failures[ep.shown] += 1
        log(f"scrape {number}: {answer}")
    return sources


def _batch(
    sources: list[Source],
    observer: Observer,
    seen: dict,
    number: int,
    failures: Counter,
    log: Callable[[str], None],
    shown: list[str],
) -> Batch | None:
    """This scrape's new samples added to the observer (None: nothing answered, or a garbled scrape skipped;
    on the first scrape a garbled one is raised)."""
    try:
        parsed = parse_dcgm(sources, live_window=_window(observer)) if sources else None
        return observer.add(_only_new(parsed, seen)) if parsed is not None else None
    except GoodputError as err:
        err = _unquoted(err, shown)
        if number == 1:
            raise err from None
        failures["garbled scrapes"] += 1
        log(f"scrape {number}: skipped, {err}")
        return None


def _commit(
    store: Store,
    run_id: str,
    observer: Observer,
    batch: Batch,
    previous_end: float,
    summary: dict,
    *,
    name: str | None,
    shown: list[str],
) -> str:
    """One scrape's rows in the store, atomically: the first creates the run, later ones append to it."""
    tables = dict(batch.tables)
    if run_id:
        tables["host_states"] = observer.host_states(previous_end, observer.end_s)
        store.append_to_run(run_id, tables, duration_s=observer.end_s, summary=summary)
        return run_id
    tables["host_states"] = observer.host_states(0.0, observer.end_s)
    run = Run(
        kind="ingest",
        name=name or f"live: {', '.join(shown)}",
        started_at=datetime.fromtimestamp(observer.origin_us / 1e6, UTC),
        duration_s=observer.end_s,
        scenario={"source": "scrape", "endpoints": shown},
        summary=summary,
        tables=tables,
    )
    return store.write_run(run)


def _fetch_all(endpoints: list[Endpoint], fetcher: Fetcher, stop: threading.Event) -> list | None:
    """Every endpoint's answer (a Source or a GoodputError), fetched side by side, so a slow or dead host costs
    one deadline, not one each. None when stopped first: the fetches in flight are cut, not waited for.

    Workers are daemon threads, so one stuck where no cut reaches (a connect to a host that never answers)
    does not hold the process open after the loop has ended.
    """
    answers: list = [None] * len(endpoints)
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for index in range(len(endpoints)):
        todo.put(index)
    left = [len(endpoints)]
    lock, done = threading.Lock(), threading.Event()

    def work() -> None:
        while True:
            try:
                index = todo.get_nowait()
            except queue.Empty:
                return
            answers[index] = _fetch_or_error(endpoints[index], fetcher)
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set()

    for _ in range(min(MAX_PARALLEL_FETCHES, len(endpoints))):
        threading.Thread(target=work, name="goodput-scrape", daemon=True).start()
    while not done.wait(STOP_POLL_S):
        if stop.is_set():
            fetcher.abort()
            return None
    if stop.is_set():
        return None
    return answers


def _fetch_or_error(ep: Endpoint, fetcher: Fetcher) -> Source | GoodputError:
    try:
        return fetch(ep, fetcher)
    except GoodputError as err:
        return err
    except Exception as err:  # noqa: BLE001 (a worker must always answer, or the scrape would wait forever)
        _log.exception("%s: scrape failed unexpectedly", ep.shown)  # the details, in the log only
        return GoodputError(f"{ep.shown}: cannot scrape (unexpected {type(err).__name__})")


def _unquoted(err: GoodputError, shown: list[str]) -> GoodputError:
    """A parse error of scraped answers without the answer's text: the parser quotes the line (or names the
    metric) it cannot read, which is fine for a file on disk but would hand back whatever an endpoint served (a
    metadata service's answer, an admin page). The endpoint and line stay; the text goes to the log only.
    Errors in Goodput's own words (a size over a limit, a bad compression) pass as they are."""
    text = str(err)
    for name in sorted(shown, key=len, reverse=True):
        if not text.startswith(name):
            continue
        line = re.match(r", line (\d+): ", text[len(name) :])
        if line is None and not text[len(name) :].startswith(": cannot read as text"):
            return err
        if line is not None and _OWN_WORDS.match(text[len(name) + line.end() :]):
            return err  # a stamp outside the run's window, described by Goodput (engine/ingest/bounds.py)
        _log.info("unreadable scrape: %s", text)
        where = f"{name}, line {line[1]}" if line else name
        return GoodputError(
            f"{where}: not DCGM exporter metrics in Prometheus' text format (what it served is not shown)"
        )
    return err


def _window(observer: Observer) -> bounds.Window:
    """The times a live sample may carry: not before 2000 nor more than a run's span before now, not more
    than MAX_CLOCK_AHEAD_S ahead of this machine, and once the run has begun, within its span."""
    window = bounds.file_window()
    lo, hi = max(window.lo_ms, window.hi_ms - limits.MAX_RUN_DAYS * bounds.DAY_MS), window.hi_ms
    if observer.origin_us is not None:
        origin_ms = observer.origin_us // 1000
        lo, hi = max(lo, origin_ms), min(hi, origin_ms + limits.MAX_RUN_DAYS * bounds.DAY_MS)
    return bounds.Window(lo, hi)


def _skips(batch: Batch) -> str:
    """`; skipped 2 (values out of range ...)` for what this scrape skipped as bad, on the scrape's one line."""
    bad = {
        reason: n
        for reason, n in batch.skipped.items()
        if n and reason in (bounds.SKIP_VALUE, bounds.SKIP_TIME, bounds.SKIP_GPU_LABEL)
    }
    if not bad:
        return ""
    return (
        f"; skipped {sum(bad.values())} bad samples (" + "; ".join(f"{n} {r}" for r, n in bad.items()) + ")"
    )


def _only_new(parsed: DcgmSamples, seen: dict[str, pl.DataFrame]) -> DcgmSamples:
    """Drop values an endpoint served again with the same timestamp (an exporter that stamps its lines and
    has not refreshed since the last scrape), so a series never has two rows at one time."""
    samples = parsed.samples.join(seen["last"], on="ident", how="left")
    fresh = pl.col("last_ms").is_null() | (pl.col("t_ms") > pl.col("last_ms"))
    repeated = samples.filter(~fresh).height
    if repeated:
        parsed.skipped["values already read in an earlier scrape"] += repeated
    parsed.samples = samples.filter(fresh).drop("last_ms")
    latest = parsed.samples.group_by("ident").agg(pl.col("t_ms").max().alias("last_ms"))
    seen["last"] = pl.concat([seen["last"].join(latest, on="ident", how="anti"), latest])
    return parsed


def _schedule(every_s: float, scrapes: int | None, stop: threading.Event) -> Iterator[float]:
    """Due times on a fixed grid (a slow scrape does not shift the next one), until stopped."""
    start = time.monotonic()
    number = 0
    while not stop.is_set() and (scrapes is None or number < scrapes):
        due = start + number * every_s
        if stop.wait(max(0.0, due - time.monotonic())):
            return
        yield due
        number += 1


@contextlib.contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C and SIGTERM set `stop`, so the loop ends cleanly after the scrape it is committing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda *_: stop.set())
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
