"""Scrape running DCGM exporter endpoints into an observed run, one atomic commit a scrape.

    goodput ingest dcgm --scrape http://node017:9400/metrics,http://node018:9400/metrics --every 30s

The first scrape creates the run (Store.write_run); every later one appends to it (Store.append_to_run,
copy-on-write, so the dashboard never sees half a scrape). SIGINT or SIGTERM ends the loop after the commit in
progress. An endpoint that fails on the first scrape is an error (nothing is written); later failures are
counted, reported on stderr and in the run's summary, and the loop carries on.
"""

import contextlib
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import polars as pl

from engine.errors import GoodputError
from engine.ingest import summary_of
from engine.ingest.dcgm import DcgmSamples, parse_dcgm
from engine.ingest.observed import Batch, Observer
from engine.ingest.sources import Source
from engine.run import Run
from engine.store import Store

FETCH_TIMEOUT_S = 10.0
MAX_PARALLEL_FETCHES = 32
MAX_BODY_BYTES = 256 * 1024 * 1024  # far above any real exporter page; stops a runaway endpoint


def parse_urls(text: str) -> list[str]:
    urls = [u.strip() for u in text.split(",") if u.strip()]
    if not urls:
        raise GoodputError("--scrape: give at least one URL")
    for url in urls:
        parts = urllib.parse.urlparse(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise GoodputError(f"--scrape: {url!r} is not an http(s) URL")
    return urls


def fetch(url: str, timeout_s: float = FETCH_TIMEOUT_S) -> Source:
    """One scrape of one endpoint; its time is when the answer arrived. Lines without timestamps take it."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (scheme checked above)
            data = response.read(MAX_BODY_BYTES + 1)
    except urllib.error.HTTPError as err:
        raise GoodputError(f"{url}: HTTP {err.code} {err.reason}") from err
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise GoodputError(f"{url}: cannot scrape ({reason})") from err
    if len(data) > MAX_BODY_BYTES:
        raise GoodputError(f"{url}: answer larger than {MAX_BODY_BYTES} bytes")
    return Source(url, data, mtime=time.time(), host=urllib.parse.urlparse(url).netloc)


def _fetch_or_error(url: str) -> Source | GoodputError:
    try:
        return fetch(url)
    except GoodputError as err:
        return err


def scrape_loop(urls: list[str], every_s: float, store: Store, *, scrapes: int | None = None,
                name: str | None = None, log: Callable[[str], None] | None = None,
                stop: threading.Event | None = None) -> dict:
    """Scrape until stopped (or `scrapes` times); return the summary of the run with its run_id."""
    if every_s <= 0:
        raise GoodputError("--every: the scrape interval must be greater than 0")
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    stop = stop or threading.Event()
    observer = Observer()
    batches: list[Batch] = []
    failures: Counter = Counter()
    run_id = ""
    seen = {"last": pl.DataFrame(schema={"ident": pl.UInt64, "last_ms": pl.Int64})}
    # Endpoints are scraped side by side: a slow or dead host costs one timeout, not one each.
    with _stopped_by_signals(stop), ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_FETCHES, len(urls))) as pool:
        for number, _due in enumerate(_schedule(every_s, scrapes, stop), start=1):
            previous_end = observer.end_s
            sources = []
            for url, answer in zip(urls, pool.map(_fetch_or_error, urls), strict=True):
                if isinstance(answer, Source):
                    sources.append(answer)
                    continue
                if number == 1:
                    raise answer
                failures[url] += 1
                log(f"scrape {number}: {answer}")
            try:
                batch = observer.add(_only_new(parse_dcgm(sources), seen)) if sources else None
            except GoodputError as err:
                if number == 1:
                    raise
                failures["garbled scrapes"] += 1
                log(f"scrape {number}: skipped, {err}")
                batch = None
            if batch is not None:
                batches.append(batch)
                extra = {"scrapes": number, "failed_scrapes": dict(failures), "endpoints": urls}
                summary = summary_of(batches, observer, **extra)
                tables = dict(batch.tables)
                if not run_id:
                    tables["host_states"] = observer.host_states(0.0, observer.end_s)
                    run = Run(kind="ingest", name=name or f"live: {', '.join(urls)}",
                              started_at=datetime.fromtimestamp(observer.origin_us / 1e6, UTC),
                              duration_s=observer.end_s, scenario={"source": "scrape", "endpoints": urls},
                              summary=summary, tables=tables)
                    run_id = store.write_run(run)
                else:
                    tables["host_states"] = observer.host_states(previous_end, observer.end_s)
                    store.append_to_run(run_id, tables, duration_s=observer.end_s, summary=summary)
                log(f"scrape {number} at {datetime.now(UTC):%H:%M:%S}: {len(sources)}/{len(urls)} endpoints,"
                    f" {batch.samples} samples, {batch.xid_events} XID events;"
                    f" run {run_id}: {summary['hosts']} hosts, {summary['gpus']} GPUs, {summary['samples']} samples")
    if not run_id:
        raise GoodputError("no scrape completed; nothing was written")
    return {"run_id": run_id, **summary_of(batches, observer, scrapes=number, failed_scrapes=dict(failures),
                                           endpoints=urls)}


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
