"""What every page shares: the store, the selected run (kept in the URL as ?run=) and cached queries.

DuckDB connections are not thread-safe and Streamlit serves each session on its own thread, so a run's
read-only connection is cached once per process (`st.cache_resource`) and every query takes its own
`.cursor()`. Query results are cached per (store, run, file version, SQL, parameters); deleting a run clears
the caches. A run file that cannot be read is reported by `scan_runs`, never allowed to break every page.
"""

import os
import shlex
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import duckdb
import polars as pl
import streamlit as st

from dashboard.format import fmt_duration, fmt_int
from dashboard.text import code, md
from engine.analysis.run_summary import RunSummary
from engine.report.visible_text import visible
from engine.store import DEFAULT_STORE, RunInfo, Store, StoreError, check_schema_version, query_frame
from engine.store.run import start_known
from engine.units import SECONDS_PER_DAY

RUN_PARAM = "run"
SELECTOR_KEY = "run_selector"


@st.cache_resource
def get_store(root: str | None = None) -> Store:
    return Store(root or os.environ.get("GOODPUT_STORE") or None)


def store() -> Store:
    return get_store(os.environ.get("GOODPUT_STORE"))


@st.cache_resource(max_entries=32)
def _connection(root: str, run_id: str, version: int) -> duckdb.DuckDBPyConnection:
    """A read-only connection to one version of a run's file: an in-memory database with the file ATTACHed.

    Not `duckdb.connect(path)`: DuckDB keeps one database instance per path in a process, so while such a
    connection is cached, every later connect to the path (Store.info's too) answers from the version first
    opened, even after live ingestion replaced the file. An attached file belongs to its own connection only.
    """
    path = Store(root).run_file(run_id)  # a regular file: ATTACH never waits on a FIFO named like a run
    con = duckdb.connect()
    try:
        con.execute("ATTACH ? AS run (READ_ONLY)", [str(path)]).fetchall()
        con.execute("USE run").fetchall()
        check_schema_version(con, path)
    except duckdb.Error as err:
        con.close()
        raise StoreError(f"{path}: cannot open as a Goodput run ({err})") from err
    except BaseException:
        con.close()
        raise
    return con


def _cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A cursor (this thread's own connection) that reads the attached run (`USE` is per connection)."""
    cur = con.cursor()
    cur.execute("USE run").fetchall()
    return cur


def file_version(s: Store, run_id: str) -> int:
    """The file's modification time in ns: live ingestion replaces a run's file (copy, append, rename), and a
    new version must not be answered from the old one's cache."""
    try:
        return s.path_of(run_id).stat().st_mtime_ns
    except FileNotFoundError as err:
        raise StoreError(f"run {run_id!r} is no longer in the store {s.root} (deleted?)") from err


def cursor(run_id: str) -> duckdb.DuckDBPyConnection:
    """A cursor of the run's shared read-only connection, for this thread only."""
    s = store()
    return _cursor(_connection(str(s.root), run_id, file_version(s, run_id)))


def query(run_id: str, sql: str, params: tuple = ()) -> pl.DataFrame:
    """`sql` (user values only as `?` parameters) on one run, as a Polars frame, cached.

    The cache key holds the store and the file's version besides the run id, so two stores with the same run
    ids (tests, a moved store) and a run extended by live ingestion never see each other's results.
    """
    s = store()
    return _query(str(s.root), run_id, file_version(s, run_id), sql, tuple(params))


@st.cache_data(max_entries=512, ttl=timedelta(hours=1), show_spinner=False)
def _query(root: str, run_id: str, version: int, sql: str, params: tuple) -> pl.DataFrame:
    con = _cursor(_connection(root, run_id, version))
    try:
        return query_frame(con, sql, list(params))
    finally:
        con.close()


BACKGROUND_ENTRIES = 32  # results of `query_in_background` kept per process (a few scans of the samples each)
_background_lock = threading.Lock()
_background: OrderedDict[tuple, pl.DataFrame] = OrderedDict()


def query_in_background(run_id: str, sql: str, params: tuple = ()) -> Callable[[], pl.DataFrame]:
    """`query(run_id, sql, params)` started on a plain thread; returns what waits for its frame. For the slow
    scans: DuckDB works while Python draws the rest of the page.

    Everything Streamlit's caches hold (the store, the run's connection) is looked up here, on the script's
    thread; the thread itself only runs DuckDB on its own cursor, never Streamlit. Its results are kept in a
    small cache of this module, keyed like `query`'s and cleared with it (`forget_run`).
    """
    s = store()
    key = (str(s.root), run_id, file_version(s, run_id), sql, tuple(params))
    with _background_lock:
        if key in _background:
            _background.move_to_end(key)
            hit = _background[key]
            return lambda: hit
    con = _connection(*key[:3])
    box: dict = {}

    def work() -> None:
        try:
            cur = _cursor(con)
            try:
                box["value"] = query_frame(cur, sql, list(params))
            finally:
                cur.close()
        except (
            BaseException
        ) as err:  # handed to the script's thread, which raises it where the result is used
            box["error"] = err

    thread = threading.Thread(target=work, name="goodput-query", daemon=True)
    thread.start()

    def result() -> pl.DataFrame:
        thread.join()
        if "error" in box:
            raise box["error"]
        with _background_lock:
            _background[key] = box["value"]
            _background.move_to_end(key)
            while len(_background) > BACKGROUND_ENTRIES:
                _background.popitem(last=False)
        return box["value"]

    return result


def _forget_background() -> None:
    with _background_lock:
        _background.clear()


STORE_UNLISTABLE = "runs/"  # Unreadable.name when the store's runs/ folder itself cannot be listed


@dataclass(frozen=True)
class Unreadable:
    """A file in the store's runs/ that is not a readable run (corrupt, foreign, misnamed, another schema)."""

    run_id: str | None  # None when the file's name is not a run id: it cannot be deleted from the dashboard
    error: str
    name: str  # the file's name in runs/


def scan_runs() -> tuple[list[RunInfo], list[Unreadable]]:
    """Every run of the store, newest first, and the files among them that cannot be read, with why.

    One bad file must not take the dashboard down: it is reported (and can be deleted on the Data page)
    while every other run stays usable. Store.scan also sweeps what killed writers left behind.
    """
    try:
        good, skipped = store().scan()
    except (
        StoreError
    ) as err:  # runs/ itself cannot be listed: said on every page, never an empty-looking store
        return [], [Unreadable(None, str(err), STORE_UNLISTABLE)]
    return good, [Unreadable(s.run_id, s.reason, s.name) for s in skipped]


def list_runs() -> list[RunInfo]:
    return scan_runs()[0]


def forget_run(run_id: str) -> None:
    """After a delete: drop cached connections and results so no page reads a vanished file."""
    _connection.clear()
    _query.clear()
    _forget_background()
    if st.query_params.get(RUN_PARAM) == run_id:
        del st.query_params[RUN_PARAM]
    if st.session_state.get(SELECTOR_KEY) == run_id:
        del st.session_state[SELECTOR_KEY]


def _on_pick() -> None:
    st.query_params[RUN_PARAM] = st.session_state[SELECTOR_KEY]


def sidebar_run_selector() -> RunInfo | None:
    """The run picker shown on every page; its choice lives in the URL so a link reproduces the view."""
    runs, unreadable = scan_runs()
    if unreadable and unreadable[0].name == STORE_UNLISTABLE:
        st.sidebar.error(f"The store cannot be listed: {md(unreadable[0].error)}", icon=":material/error:")
    elif unreadable:
        names = ", ".join(code(u.name) for u in unreadable[:3]) + (" …" if len(unreadable) > 3 else "")
        st.sidebar.warning(
            f"{len(unreadable)} run file(s) cannot be read ({names}); see the Data page.",
            icon=":material/warning:",
        )
    if not runs:
        st.sidebar.info("No runs in the store yet.")
        if RUN_PARAM in st.query_params:
            del st.query_params[RUN_PARAM]
        return None
    by_id = {info.run_id: info for info in runs}
    ids = list(by_id)
    wanted = st.query_params.get(RUN_PARAM)
    if wanted and wanted not in by_id:
        st.sidebar.warning(
            f"Run {code(wanted)} is not in the store (deleted?); showing the newest run instead."
        )
    # the URL wins over the widget's remembered value, so a pasted link shows the run it names; a pick in the
    # widget reaches the URL first through `_on_pick`, so it is not undone here
    if wanted in by_id:
        st.session_state[SELECTOR_KEY] = wanted
    elif st.session_state.get(SELECTOR_KEY) not in by_id:
        st.session_state[SELECTOR_KEY] = ids[0]
    chosen = st.sidebar.selectbox(
        "Run",
        ids,
        key=SELECTOR_KEY,
        on_change=_on_pick,
        format_func=lambda run_id: visible(f"{by_id[run_id].name} · {by_id[run_id].kind} · {run_id}"),
    )
    st.query_params[RUN_PARAM] = chosen
    info = by_id[chosen]
    seed = f" · seed {info.seed}" if info.seed is not None else ""
    # a kernel log stamped since boot has no date (engine.store.run.UNKNOWN_START): none is shown
    start = (
        f"{info.started_at:%Y-%m-%d %H:%M} UTC"
        if start_known(info.started_at)
        else "an unknown date (since boot)"
    )
    st.sidebar.caption(
        f"{info.kind}{seed} · {info.duration_s / SECONDS_PER_DAY:.1f} days from "
        f"{start} · made {info.created_at:%Y-%m-%d %H:%M}"
    )
    return info


def selected_run() -> RunInfo | None:
    """The run chosen in the sidebar, or None when the store is empty (pages then show `empty_state`)."""
    run_id = st.query_params.get(RUN_PARAM)
    if not run_id:
        return None
    try:
        return store().info(run_id)
    except (StoreError, duckdb.Error, OSError):  # listed as unreadable by the sidebar; nothing to show here
        return None


def empty_state() -> None:
    """What a page shows when there is no run to show."""
    root = store().root
    unreadable = scan_runs()[1]
    if unreadable and unreadable[0].name == STORE_UNLISTABLE:  # not empty: unreadable (the sidebar says why)
        st.error(f"The store cannot be listed: {md(unreadable[0].error)}", icon=":material/error:")
        return
    command = "goodput simulate --preset demo" + (
        "" if root.resolve() == DEFAULT_STORE.resolve() else f" --store {shlex.quote(str(root))}"
    )
    st.info(
        f"The store at `{root}` has no runs yet. Make one from the command line with `{command}`; the "
        "**Data** page lists the commands that import job traces and telemetry.",
        icon=":material/info:",
    )
    st.page_link("app_pages/data.py", label="Go to Data", icon=":material/database:")


# ----- widgets kept in the URL -------------------------------------------------------------------------------


def seed(key: str, value) -> str:
    """A widget's first value comes from the URL; after that its own state rules (a keyed widget keeps the
    user's changes, where one re-created from the URL on every rerun would drop every other one)."""
    if key not in st.session_state:
        st.session_state[key] = value
    return key


def url_list(name: str, allowed: list[str]) -> list[str]:
    """A comma-separated URL parameter, keeping only the values the page knows."""
    return [v for v in st.query_params.get(name, "").split(",") if v in allowed]


def set_url(name: str, value: str) -> None:
    """Keep `value` in the URL as ?name=, or drop the parameter when it is empty."""
    if value:
        st.query_params[name] = value
    else:
        st.query_params.pop(name, None)


# ----- live-ingest runs ----------------------------------------------------------------------------------

LIVE_STALE_S = 600.0  # a scraped run whose file has not changed for 10 minutes is no longer being scraped
LIVE_REFRESH_MIN_S, LIVE_REFRESH_MAX_S = 5.0, 60.0


def live_refresh_s(info: RunInfo, now: float | None = None) -> float | None:
    """How often a page should rerun while `info` is a live-ingest run (`goodput ingest dcgm --scrape`, which
    commits every scrape by replacing the run's file: engine.ingest.live); None for any other run.

    Live: kind "ingest", scraped or watched (scenario source "scrape", which engine.ingest.live writes, or
    "watch", engine.ingest.watch), and its file replaced within LIVE_STALE_S. The interval follows the scrapes
    (the run's span over its scrapes) or the watch's cycle (scenario every_s), kept between 5 s and a minute.
    """
    source = info.scenario.get("source") if isinstance(info.scenario, dict) else None
    if info.kind != "ingest" or source not in ("scrape", "watch"):
        return None
    try:
        modified = store().path_of(info.run_id).stat().st_mtime
    except FileNotFoundError:
        return None
    if (now if now is not None else time.time()) - modified > LIVE_STALE_S:
        return None
    scrapes = RunSummary.from_json(info.summary).details.get("scrapes")
    cycle = info.scenario.get("every_s")
    if source == "watch" and isinstance(cycle, int | float) and cycle > 0:
        every = float(cycle)
    elif isinstance(scrapes, int) and scrapes > 1:
        every = info.duration_s / (scrapes - 1)
    else:
        every = LIVE_REFRESH_MAX_S / 2
    return min(max(every, LIVE_REFRESH_MIN_S), LIVE_REFRESH_MAX_S)


def live_note(info: RunInfo, every_s: float) -> str:
    """The line a page shows above a live run: a watched cluster counts its cycles, a scraped run its samples."""
    details = RunSummary.from_json(info.summary).details  # an ingest's or a watch's counts
    refresh = f"the page refreshes every {fmt_duration(every_s)}"
    if isinstance(info.scenario, dict) and info.scenario.get("source") == "watch":
        cycles = details.get("cycles")
        return (
            f":material/sensors: Live: this cluster is being watched ({fmt_int(cycles)}"
            f" {'cycle' if cycles == 1 else 'cycles'} so far); {refresh}."
        )
    return (
        f":material/sensors: Live: this run is still being scraped ({fmt_int(details.get('scrapes'))} scrapes,"
        f" {fmt_int(details.get('samples'))} samples so far); {refresh}."
    )


def render_run_page(render, info: RunInfo) -> None:
    """Draw a page's body for the selected run: once, or, while `info` is a live-ingest run, as a fragment that
    reruns itself as scrapes arrive (`query` answers each new file version afresh)."""
    every = live_refresh_s(info)
    if every:
        st.fragment(render, run_every=every)(info.run_id)
    else:
        render(info.run_id)


def run_or_stop() -> RunInfo:
    """The selected run; with none (an empty store) the page shows the empty state and stops here."""
    info = selected_run()
    if info is None:
        empty_state()
        st.stop()
    return info
