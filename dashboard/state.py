"""What every page shares: the store, the selected run (kept in the URL as ?run=) and cached queries.

DuckDB connections are not thread-safe and Streamlit serves each session on its own thread, so a run's
read-only connection is cached once per process (`st.cache_resource`) and every query takes its own
`.cursor()`. Query results are cached per (run, SQL, parameters); a run file never changes once written, so
its id is a sound cache key, and deleting a run clears the caches.
"""

import os
from datetime import timedelta

import duckdb
import polars as pl
import streamlit as st

from engine.store import RunInfo, Store, StoreError, query_frame

RUN_PARAM = "run"


@st.cache_resource
def get_store(root: str | None = None) -> Store:
    return Store(root or os.environ.get("GOODPUT_STORE") or None)


def store() -> Store:
    return get_store(os.environ.get("GOODPUT_STORE"))


@st.cache_resource(max_entries=32)
def _connection(root: str, run_id: str, mtime: float) -> duckdb.DuckDBPyConnection:
    return Store(root).open(run_id)


def cursor(run_id: str) -> duckdb.DuckDBPyConnection:
    """A cursor of the run's shared read-only connection, for this thread only."""
    s = store()
    return _connection(str(s.root), run_id, s.path_of(run_id).stat().st_mtime).cursor()


@st.cache_data(max_entries=512, ttl=timedelta(hours=1), show_spinner=False)
def query(run_id: str, sql: str, params: tuple = ()) -> pl.DataFrame:
    """`sql` (user values only as `?` parameters) on one run, as a Polars frame, cached."""
    con = cursor(run_id)
    try:
        return query_frame(con, sql, list(params))
    finally:
        con.close()


def list_runs() -> list[RunInfo]:
    return store().list_runs()


def forget_run(run_id: str) -> None:
    """After a delete: drop cached connections and results so no page reads a vanished file."""
    _connection.clear()
    query.clear()
    if st.query_params.get(RUN_PARAM) == run_id:
        del st.query_params[RUN_PARAM]


def sidebar_run_selector() -> RunInfo | None:
    """The run picker shown on every page; its choice lives in the URL so a link reproduces the view."""
    runs = list_runs()
    if not runs:
        st.sidebar.info("No runs in the store yet.")
        return None
    by_id = {info.run_id: info for info in runs}
    wanted = st.query_params.get(RUN_PARAM)
    if wanted not in by_id:
        wanted = runs[0].run_id
    chosen = st.sidebar.selectbox(
        "Run", list(by_id), index=list(by_id).index(wanted), key="run_selector",
        format_func=lambda run_id: f"{by_id[run_id].name} · {by_id[run_id].kind} · {run_id}",
    )
    st.query_params[RUN_PARAM] = chosen
    info = by_id[chosen]
    st.sidebar.caption(f"{info.kind} · seed {info.seed} · {info.duration_s / 86400:.1f} days from "
                       f"{info.started_at:%Y-%m-%d %H:%M} UTC")
    return info


def selected_run() -> RunInfo | None:
    """The run chosen in the sidebar, or None when the store is empty (pages then show `empty_state`)."""
    run_id = st.query_params.get(RUN_PARAM)
    if not run_id:
        return None
    try:
        return store().info(run_id)
    except StoreError:
        return None


def empty_state() -> None:
    """What a page shows when there is no run to show."""
    st.info(
        "The store has no runs yet. Make one from the command line with "
        "`goodput simulate --preset demo`, or import a trace or telemetry on the **Data** page."
    )
    st.page_link("app_pages/data.py", label="Go to Data", icon=":material/database:")
