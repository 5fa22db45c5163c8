"""The watch loop: a cycle every `every_s`, one atomic commit each; the first creates the run."""

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

from engine.errors import GoodputError
from engine.ingest import slurm
from engine.ingest.live import STOP_POLL_S, _schedule, _stopped_by_signals
from engine.ingest.watch.access import PrometheusAccess
from engine.ingest.watch.checkpoints import DEFAULT_JOB_LABEL
from engine.ingest.watch.derive import Watcher
from engine.ingest.watch.sources import Reading, SourceState
from engine.ingest.watch.tables import REPLACE_KEYS
from engine.store import Store
from engine.store.run import Run

DEFAULT_LOOKBACK_S = 3600.0  # how far back the first cycle reads: jobs and events of the last hour
# The shortest time between cycles. Each cycle asks Prometheus for several range queries and, with Slurm, runs
# sacct (a query of slurmdbd's database) and sinfo (a call to slurmctld): shared production services. Prometheus
# scrapes every 15-60 s and dcgm-exporter collects every 30 s by default, so a cycle more often than every 10 s
# reads nothing new and only loads them; a 1 ms interval (which the Data page once accepted) would be a flood.
MIN_EVERY_S = 10.0


def watch_loop(
    store: Store,
    *,
    prometheus: PrometheusAccess | None = None,
    prometheus_url: str | None = None,
    slurm_source: "slurm.SlurmSource | None" = None,
    every_s: float = 60.0,
    cycles: int | None = None,
    name: str | None = None,
    lookback_s: float = DEFAULT_LOOKBACK_S,
    log: Callable[[str], None] | None = None,
    quiet: bool = False,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.time,
    checkpoint_metric: str | None = None,
    checkpoint_job_label: str = DEFAULT_JOB_LABEL,
) -> dict:
    """Watch until stopped (or `cycles` times); return the run's summary with its run_id.

    `prometheus` says how to reach Prometheus (credentials read from files each cycle); `prometheus_url` is
    the same without credentials other than a user:password in the URL. `checkpoint_metric` is the gauge of
    the jobs' latest checkpoint times, labelled with `checkpoint_job_label` (engine.ingest.watch.checkpoints).
    `log` (default stderr) gets a line per committed cycle and per problem; `quiet` keeps only problems."""
    prometheus = _check_arguments(prometheus, prometheus_url, slurm_source, every_s, lookback_s)
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    progress = (lambda _line: None) if quiet else log
    stop = stop or threading.Event()
    first = clock()
    watcher = Watcher(
        origin=first - lookback_s,
        slurm=slurm_source,
        access=prometheus,
        checkpoint_metric=checkpoint_metric,
        checkpoint_job_label=checkpoint_job_label,
    )
    scenario = {
        "source": "watch",
        "prometheus": watcher.prometheus_url or None,
        # how pages reach it, credentials included: only the files' paths, never a secret
        "prometheus_access": prometheus.to_scenario() if prometheus is not None else None,
        "checkpoint_metric": (
            {"name": checkpoint_metric, "job_label": checkpoint_job_label}
            if checkpoint_metric is not None
            else None
        ),
        "slurm": slurm_source.conf or "default" if slurm_source is not None else None,
        "every_s": every_s,
    }
    failed: Counter = Counter()
    run_id, committed = "", 0
    with _stopped_by_signals(stop):
        for number, _due in enumerate(_schedule(every_s, cycles, stop), start=1):
            now = first if number == 1 else clock()
            reading = _read_or_stop(watcher, now, stop)
            if reading is None:
                log(f"cycle {number}: stopped while reading; not committed")
                break
            _count_failures(watcher, number, failed, log)
            tables = watcher.derive(reading)
            committed += 1
            summary = watcher.summary(committed, failed, now)
            run_id = _commit(store, run_id, watcher, now, tables, summary, name=name, scenario=scenario)
            progress(
                f"cycle {number} at {datetime.now(UTC):%H:%M:%S}: +{tables['jobs'].height} jobs changed,"
                f" +{tables['xid_events'].height} XID events; run {run_id}: {summary['jobs']} jobs,"
                f" {summary['hosts']} hosts, {summary['incidents']} incidents"
            )
    if not run_id:
        raise GoodputError("stopped before the first cycle completed; nothing was written")
    return {"run_id": run_id, **watcher.summary(committed, failed, watcher.states_end_s + watcher.origin)}


def _check_arguments(
    prometheus: PrometheusAccess | None,
    prometheus_url: str | None,
    slurm_source: "slurm.SlurmSource | None",
    every_s: float,
    lookback_s: float,
) -> PrometheusAccess | None:
    """The watch's arguments checked up front; how to reach Prometheus (None: not watched)."""
    if prometheus is not None and prometheus_url is not None:
        raise GoodputError("watch: give prometheus or prometheus_url, not both")
    if prometheus_url is not None:
        prometheus = PrometheusAccess(prometheus_url)
    if prometheus is None and slurm_source is None:
        raise GoodputError("watch: give --prometheus URL, --slurm, or both")
    if not every_s >= MIN_EVERY_S:
        raise GoodputError(
            f"--every: the time between cycles must be at least {MIN_EVERY_S:g} s (got {every_s:g} s);"
            " a cycle queries Prometheus and Slurm, which learn nothing new faster"
        )
    if lookback_s < 0:
        raise GoodputError("--since: must not be negative")
    return prometheus


def _count_failures(watcher: Watcher, number: int, failed: Counter, log: Callable[[str], None]) -> None:
    """Count and log the sources this cycle could not read; on the first cycle that is an error."""
    down = [s for s in watcher.states.values() if not s.reachable]
    if number == 1 and down:  # a watch that cannot read a source it was given must not start
        raise GoodputError("; ".join(s.line() for s in down) + "; nothing was written")
    for state in down:
        failed[state.source] += 1
        log(f"cycle {number}: {state.line()}")


def _commit(
    store: Store,
    run_id: str,
    watcher: Watcher,
    now: float,
    tables: dict,
    summary: dict,
    *,
    name: str | None,
    scenario: dict,
) -> str:
    """One cycle's rows in the store, atomically: the first creates the run, later ones add to it."""
    duration_s = now - watcher.origin
    if run_id:
        store.append_to_run(run_id, tables, duration_s=duration_s, summary=summary, replace=REPLACE_KEYS)
        return run_id
    run = Run(
        kind="ingest",
        name=name or f"watch: {', '.join(s.target for s in watcher.states.values())}",
        started_at=datetime.fromtimestamp(watcher.origin, UTC),
        duration_s=duration_s,
        scenario=scenario,
        summary=summary,
        tables=tables,
    )
    return store.write_run(run)


def _read_or_stop(watcher: Watcher, now: float, stop: threading.Event) -> Reading | None:
    """watcher.read(now) in a worker thread, so a stop ends the cycle within STOP_POLL_S even while a source
    hangs: Prometheus' requests in flight are cut, a Slurm command is left to its own timeout in the daemon
    thread. None when stopped."""
    done: list = []

    def work() -> None:
        try:
            done.append(watcher.read(now))
        except BaseException as err:  # noqa: BLE001 (handed to the loop's thread, which raises it)
            done.append(err)

    thread = threading.Thread(target=work, name="goodput-watch", daemon=True)
    thread.start()
    while True:
        thread.join(STOP_POLL_S)
        if stop.is_set():
            if watcher.prometheus is not None:
                watcher.prometheus.abort()
            return None
        if not thread.is_alive():
            break
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def watch_text(r: dict) -> str:
    """`goodput watch` without --json: what the run holds and where each source stands."""
    goodput = "n/a" if r.get("jobs_goodput") is None else f"{r['jobs_goodput']:.1%}"
    lines = [
        f"run {r['run_id']}: {r['cycles']:,} cycles, {r['jobs']:,} jobs ({r['running_jobs']:,} running,"
        f" {r['interrupted_attempts']:,} interrupted attempts), {r['hosts']:,} hosts, {r['gpus']:,} GPUs,"
        f" {r['xid_events']:,} XID events, {r['incidents']:,} incidents ({r['incidents_with_jobs']:,} hit jobs),"
        f" jobs' goodput {goodput}{_basis(r)}"
    ]
    lines += [f"  {SourceState(**s).line()}" for s in r.get("sources", [])]
    return "\n".join(lines)


def _basis(r: dict) -> str:
    """On what the jobs' goodput stands: ` (2 jobs measured from their checkpoints, 5 upper bounds)`."""
    measured, bounds = r.get("jobs_goodput_measured"), r.get("jobs_goodput_upper_bounds")
    if measured is None or bounds is None or measured + bounds == 0:
        return ""
    if measured == 0:
        return f" (an upper bound: no checkpoints read for its {bounds:,} jobs)"
    return f" ({measured:,} jobs measured from their checkpoints, {bounds:,} upper bounds)"
