"""Watches started from the Data page: `goodput watch` (engine.ingest.watch.watch_loop) running in a daemon
thread of the dashboard server, shared by every session of that server.

A module-level registry, behind one lock, holds one watch per (store, run name). Each watch has its own stop
event and keeps the last LOG_LINES lines the loop logged; `watches()` gives their typed states. A watch lives in
this server process: it stops when the server stops (a cycle cut short is dropped; the store's writes are atomic,
so the run keeps every committed cycle). Days-long watches belong in `goodput watch` run as a service.

The page calls `start`, then `wait_first_cycle`: the first cycle either commits (the run exists, with its id) or
fails with the GoodputError watch_loop raises (a bad URL, Slurm missing), and then nothing was written.

The page reads only what the dashboard's administrator configured (dashboard/watch_endpoints.py): a Prometheus
endpoint by its name, with that endpoint's credentials, and Slurm where allowed, with the configured slurm.conf
(refused when it is a symbolic link or no regular file). No URL, token path or file path comes from the page: a
watch runs on the dashboard's server, so one typed there would be a request or a read made for the operator
(issue 27). Cycles are at least engine.ingest.watch.loop.MIN_EVERY_S apart.
"""

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from dashboard.watch_endpoints import WatchConfig, checked_slurm_conf
from engine.errors import GoodputError
from engine.ingest import slurm
from engine.ingest.watch import DEFAULT_LOOKBACK_S, PrometheusAccess, watch_loop
from engine.ingest.watch import loop as watch_loop_module
from engine.scenario.durations import format_duration
from engine.store import Store
from engine.store.run import Run

# Each running watch holds a thread in the dashboard server and rewrites its run's file every cycle
# (copy-on-write): a few keep the server responsive for the people reading pages; more, or long-lived ones,
# are what `goodput watch` as a service is for.
MAX_RUNNING = 4
LOG_LINES = 50  # lines of a watch's log kept for the page: its recent cycles and problems
# watch_loop ends within STOP_POLL_S (0.1 s) of a stop while it waits or reads; a commit in progress finishes
# first, which takes longer only for large runs. A watch still ending after this is shown as stopping.
STOP_JOIN_S = 5.0
THREAD_PREFIX = "goodput-dashboard-watch"
# How long the page's Start waits for the first cycle: a refused connection or a missing sacct fails at once, and
# a source that hangs is cut by its own deadline later (Prometheus' 10 s a request, Slurm's 30 s a command); the
# list of watches then shows how it ended.
FIRST_CYCLE_WAIT_S = 20.0


class WatchRefused(GoodputError):
    """A start this server will not make: a name already watched in the store, or too many watches."""


@dataclass(frozen=True)
class WatchSettings:
    """What the Data page's form gives: a configured endpoint's name, whether to read Slurm, the cadence and the
    run's name."""

    name: str
    endpoint: str | None = None  # the name of a [goodput.watch.endpoints.NAME] entry
    slurm: bool = False  # read Slurm as [goodput.watch.slurm] says
    every_s: float = 60.0
    lookback_s: float = DEFAULT_LOOKBACK_S

    def checked(self, config: WatchConfig) -> "Watching":
        """What these settings watch under `config`; a GoodputError names the field that is wrong."""
        name = (self.name or "").strip() or None
        endpoint = (self.endpoint or "").strip() or None
        if name is None:
            raise GoodputError("Run name: give the watched run a name (one watch per name in a store)")
        if endpoint is None and not self.slurm:
            raise GoodputError("Sources: choose a Prometheus endpoint, read Slurm, or both")
        floor = watch_loop_module.MIN_EVERY_S
        if not self.every_s >= floor:
            raise GoodputError(
                f"Every: at least {format_duration(floor)} between cycles; each cycle queries Prometheus and"
                " Slurm, which learn nothing new faster"
            )
        if self.lookback_s < 0:
            raise GoodputError("Look back: must not be negative")
        chosen = None if endpoint is None else config.endpoint(endpoint)
        if self.slurm and not config.slurm:
            raise GoodputError("Read Slurm: the dashboard's configuration has no [goodput.watch.slurm]")
        conf = None
        if self.slurm and config.slurm_conf is not None:
            conf = checked_slurm_conf(config.slurm_conf)
        settings = WatchSettings(name, endpoint, self.slurm, self.every_s, self.lookback_s)
        return Watching(settings, chosen.access if chosen else None, chosen.shown if chosen else None, conf)


@dataclass(frozen=True)
class Watching:
    """Checked settings with what they resolve to in the configuration: the endpoint's access (credentials as
    files, read each cycle), how the page names it, and the slurm.conf to read (None: Slurm's default)."""

    settings: WatchSettings
    access: PrometheusAccess | None
    prometheus_shown: str | None  # `prod (https://prometheus.example.com)`
    slurm_conf: str | None


@dataclass(frozen=True)
class WatchKey:
    store_root: str  # the store's folder as a path string
    name: str


@dataclass(frozen=True)
class WatchState:
    """One watch as the page shows it."""

    key: WatchKey
    watching: Watching
    started_at: datetime
    run_id: str | None  # once the first cycle committed
    cycles: int  # committed cycles
    lines: tuple[str, ...]  # the last LOG_LINES lines of its log, oldest first
    error: str | None  # why it ended, if it ended with an error
    running: bool
    stopping: bool  # asked to stop, not yet ended

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def settings(self) -> WatchSettings:
        return self.watching.settings

    @property
    def last_line(self) -> str | None:
        return self.lines[-1] if self.lines else None


@dataclass
class _Watch:
    """A watch's thread and what it has done so far (guarded by its own lock: the page reads while it runs)."""

    key: WatchKey
    watching: Watching
    started_at: datetime
    stop: threading.Event = field(default_factory=threading.Event)
    first_outcome: threading.Event = field(default_factory=threading.Event)  # first commit, or the end
    lock: threading.Lock = field(default_factory=threading.Lock)
    lines: deque = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    run_id: str | None = None
    cycles: int = 0
    error: str | None = None
    thread: threading.Thread | None = None

    def log(self, line: str) -> None:
        with self.lock:
            self.lines.append(line)

    def committed(self, run_id: str, summary: dict | None) -> None:
        with self.lock:
            self.run_id = run_id
            cycles = (summary or {}).get("cycles")
            self.cycles = cycles if isinstance(cycles, int) else self.cycles + 1
        self.first_outcome.set()

    def ended(self, error: str | None) -> None:
        with self.lock:
            self.error = error
        self.first_outcome.set()

    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def state(self) -> WatchState:
        with self.lock:
            running = self.alive()
            return WatchState(
                key=self.key,
                watching=self.watching,
                started_at=self.started_at,
                run_id=self.run_id,
                cycles=self.cycles,
                lines=tuple(self.lines),
                error=self.error,
                running=running,
                stopping=running and self.stop.is_set(),
            )


class _ReportingStore(Store):
    """The store, telling its watch of each commit: the run's id once the first cycle wrote it, and the cycles
    committed (from the summary the loop writes with each one)."""

    def __init__(self, root: str, on_commit: Callable[[str, dict | None], None]) -> None:
        super().__init__(root)
        self._on_commit = on_commit

    def write_run(self, run: Run) -> str:
        run_id = super().write_run(run)
        self._on_commit(run_id, run.summary)
        return run_id

    def append_to_run(self, run_id: str, tables: dict, *, summary: dict | None = None, **kwargs) -> None:
        super().append_to_run(run_id, tables, summary=summary, **kwargs)
        self._on_commit(run_id, summary)


_log = logging.getLogger(__name__)
_registry: dict[WatchKey, _Watch] = {}
_lock = threading.Lock()


def start(store_root: str | Path, settings: WatchSettings, config: WatchConfig) -> WatchKey:
    """Start watching what `settings` choose among what `config` (the administrator's) allows, in a daemon
    thread; a WatchRefused when the name is already watched in this store or MAX_RUNNING watches run, a
    GoodputError naming the field for settings that cannot work."""
    watching = settings.checked(config)
    settings = watching.settings
    key = WatchKey(str(Store(store_root).root), settings.name)
    with _lock:
        existing = _registry.get(key)
        if existing is not None and existing.alive():
            raise WatchRefused(
                f"Run name: a watch named {settings.name!r} already runs in this store; stop it first, or "
                "choose another name"
            )
        if sum(w.alive() for w in _registry.values()) >= MAX_RUNNING:
            raise WatchRefused(
                f"{MAX_RUNNING} watches already run in this dashboard server, its limit: stop one first, or run "
                "`goodput watch` as a service"
            )
        watch = _Watch(key=key, watching=watching, started_at=datetime.now(UTC))
        watch.thread = threading.Thread(
            target=_run, args=(watch,), name=f"{THREAD_PREFIX} {settings.name}", daemon=True
        )
        _registry[key] = watch
        watch.thread.start()
    return key


def _run(watch: _Watch) -> None:
    """The thread's body: the loop until stopped; how it ended is kept for the page, never raised."""
    s = watch.watching.settings
    error = None
    try:
        watch_loop(
            _ReportingStore(watch.key.store_root, watch.committed),
            prometheus=watch.watching.access,
            slurm_source=slurm.SlurmSource(conf=watch.watching.slurm_conf) if s.slurm else None,
            every_s=s.every_s,
            name=s.name,
            lookback_s=s.lookback_s,
            log=watch.log,
            stop=watch.stop,
        )
    except GoodputError as err:
        error = str(err)
    except Exception as err:  # noqa: BLE001 (a thread has no caller: the page shows what stopped it)
        error = f"{type(err).__name__}: {err}"
        _log.exception(
            "watch %r ended with an unexpected error", s.name
        )  # the traceback, in the server's log
    watch.ended(error)


def wait_first_cycle(key: WatchKey, timeout_s: float) -> WatchState:
    """The watch's state once its first cycle committed or it ended, or after `timeout_s`."""
    watch = _get(key)
    watch.first_outcome.wait(timeout_s)
    if not watch.first_outcome.is_set():
        return watch.state()
    if watch.thread is not None and watch.run_id is None:
        watch.thread.join(STOP_JOIN_S)  # it ended: let the thread finish, so the state says it is not running
    return watch.state()


def watches(store_root: str | Path | None = None) -> list[WatchState]:
    """Every watch of this server (of one store if given), oldest first."""
    root = None if store_root is None else str(Store(store_root).root)
    with _lock:
        chosen = [w for k, w in _registry.items() if root is None or k.store_root == root]
    return sorted((w.state() for w in chosen), key=lambda s: s.started_at)


def stop(key: WatchKey, join_s: float = STOP_JOIN_S) -> WatchState | None:
    """Ask the watch to stop and wait up to `join_s` for its thread to end; None if no such watch is listed
    (another session dismissed it: a Stop drawn before that has nothing left to do)."""
    with _lock:
        watch = _registry.get(key)
    if watch is None:
        return None
    watch.stop.set()
    if watch.thread is not None:
        watch.thread.join(join_s)
    return watch.state()


def forget(key: WatchKey) -> None:
    """Drop an ended watch from the list (a running one must be stopped first)."""
    with _lock:
        watch = _registry.get(key)
        if watch is not None and watch.alive():
            raise WatchRefused(f"the watch {key.name!r} still runs: stop it first")
        _registry.pop(key, None)


def _get(key: WatchKey) -> _Watch:
    with _lock:
        watch = _registry.get(key)
    if watch is None:
        raise GoodputError(f"no watch named {key.name!r} in this server (it may have been dismissed)")
    return watch
