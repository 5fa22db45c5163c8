"""The dashboard's shell: run selector (?run=), empty store, unreadable run files, friendly page errors.

AppTest runs dashboard/streamlit_app.py (the st.navigation router) headless on a store made by tests/runs.py.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import navigation, state
from dashboard.format import fmt_duration, fmt_gpu_hours, fmt_hours, fmt_int, fmt_pct, fmt_run_time, fmt_usd
from engine.reference import CAUSES
from engine.report.palette import CATEGORY_COLOURS, HOST_STATE_COLOURS, category_of, cause_colour, cause_label
from engine.store import StoreError
from engine.store.schema import HOST_STATES
from tests.runs import (
    DURATION_S,
    HOSTS,
    bare_run,
    expected_summary,
    flagship_checkpoints,
    host_states,
    job_attempts,
    make_store,
    small_run,
)

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
TIMEOUT_S = 60  # generous: two cores shared by several test runs


def app(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


# ----- the hand-made run is what its docstring says ---------------------------------------------------------


def test_hand_made_run_is_consistent():
    states = host_states()
    coverage = states.group_by("host_id").agg(
        (pl.col("end_s") - pl.col("start_s")).sum().alias("covered"), pl.col("start_s").min().alias("first")
    )
    assert coverage.height == HOSTS
    assert (
        coverage["covered"].to_list() == [DURATION_S] * HOSTS and coverage["first"].to_list() == [0.0] * HOSTS
    )
    # intervals of a host follow each other without gaps or overlaps
    gaps = states.sort("host_id", "start_s").with_columns(prev_end=pl.col("end_s").shift().over("host_id"))
    assert (
        gaps.filter(pl.col("prev_end").is_not_null() & (pl.col("prev_end") != pl.col("start_s"))).height == 0
    )
    assert set(states["state"]) <= set(HOST_STATES)
    # lost work is the time since the attempt's last completed checkpoint
    attempts = job_attempts().filter(pl.col("job_id") == "flagship")
    assert attempts["lost_work_s"].to_list() == [6900.0, 300.0, 1500.0, 0.0]
    assert flagship_checkpoints().height == 4 + 8 + 7 + 2
    s = expected_summary()
    assert s["job"]["ettr"] == pytest.approx(152400 / 172800)
    assert s["interruptions"] | {"by_cause": None} == {
        "total": 3,
        "planned": 1,
        "unexpected": 2,
        "by_cause": None,
    }
    assert sum(s["job"]["losses_gpu_hours"].values()) == pytest.approx(16 * (172800 - 152400) / 3600)


# ----- shared helpers ---------------------------------------------------------------------------------------


def test_every_state_and_category_has_a_colour():
    assert set(HOST_STATE_COLOURS) == set(HOST_STATES)
    assert {category_of(c.cause) for c in CAUSES} <= set(CATEGORY_COLOURS)
    assert cause_colour("faulty_gpu") == CATEGORY_COLOURS["GPU"]
    assert cause_colour("planned_maintenance") == CATEGORY_COLOURS["Planned"]
    assert category_of("cosmic_ray") == "Unknown" and cause_label("cosmic_ray") == "Cosmic ray"
    assert cause_label("gpu_hbm3") == "GPU HBM3 memory"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (fmt_pct(0.88194), "88.2%"),
        (fmt_pct(None), "–"),
        (fmt_pct(float("nan")), "–"),
        (fmt_hours(3.14), "3.1 h"),
        (fmt_hours(0.5), "30 min"),
        (fmt_hours(100), "4.2 d"),
        (fmt_hours(float("inf")), "∞"),
        (fmt_duration(42), "42 s"),
        (fmt_duration(3720), "1 h 2 min"),
        (fmt_duration(7200), "2 h"),
        (fmt_duration(200000), "2 d 7 h"),
        (fmt_gpu_hours(38.6667), "38.7 GPU-h"),
        (fmt_gpu_hours(12345), "12.3k GPU-h"),
        (fmt_gpu_hours(264), "264 GPU-h"),
        (fmt_usd(96.67), "$96.7"),
        (fmt_usd(1.2e6), "$1.2M"),
        (fmt_int(1234.4), "1,234"),
        (fmt_run_time(0), "day 1 00:00"),
        (fmt_run_time(169800), "day 2 23:10"),
    ],
)
def test_numbers_carry_their_units(value, text):
    assert value == text


# ----- the shell --------------------------------------------------------------------------------------------


def test_empty_store_says_how_to_make_a_run(store_dir):
    at = app()
    assert not at.exception
    assert at.title[0].value == "Overview"
    assert "No runs in the store yet." in texts(at.sidebar.info)
    [info] = at.main.info
    assert "has no runs yet" in info.value
    assert (
        f"goodput simulate --preset demo --store {store_dir}" in info.value
    )  # a command that fills this store
    assert "run" not in at.query_params
    assert not at.metric


def test_newest_run_is_selected_and_kept_in_the_url(store_dir):
    make_store(store_dir, small_run(), bare_run())
    at = app()
    assert not at.exception
    assert at.sidebar.selectbox[0].value == "sim-20240301-000000-aaaaaa"
    assert at.query_params["run"] == "sim-20240301-000000-aaaaaa"
    assert "tiny" in at.main.caption[0].value


def test_run_in_the_url_is_selected(store_dir):
    make_store(store_dir, small_run(), bare_run())
    at = app(run="ing-20240301-000000-bbbbbb")
    assert not at.exception
    assert at.sidebar.selectbox[0].value == "ing-20240301-000000-bbbbbb"
    assert at.query_params["run"] == "ing-20240301-000000-bbbbbb"
    assert "observed" in at.main.caption[0].value


def test_picking_a_run_updates_the_url(store_dir):
    make_store(store_dir, small_run(), bare_run())
    at = app()
    at.sidebar.selectbox[0].select("ing-20240301-000000-bbbbbb").run()
    assert not at.exception
    assert at.query_params["run"] == "ing-20240301-000000-bbbbbb"
    assert "observed" in at.main.caption[0].value


def test_unknown_run_in_the_url_falls_back_to_the_newest_with_a_warning(store_dir):
    make_store(store_dir, small_run(), bare_run())
    at = app(run="sim-19990101-000000-ffffff")
    assert not at.exception
    assert any("sim-19990101-000000-ffffff" in w for w in texts(at.sidebar.warning))
    assert at.query_params["run"] == "sim-20240301-000000-aaaaaa"


def test_unreadable_run_file_is_reported_and_the_rest_still_works(store_dir):
    make_store(store_dir, small_run())
    (store_dir / "runs" / "sim-20240302-000000-cccccc.duckdb").write_bytes(b"not a duckdb file at all" * 100)
    good, bad = state.scan_runs()
    assert [r.run_id for r in good] == ["sim-20240301-000000-aaaaaa"]
    assert [b.run_id for b in bad] == ["sim-20240302-000000-cccccc"]
    at = app()
    assert not at.exception
    assert any("cannot be read" in w and "cccccc" in w for w in texts(at.sidebar.warning))
    assert at.sidebar.selectbox[0].options == ["tiny · simulate · sim-20240301-000000-aaaaaa"]
    assert at.metric  # the good run's Overview is shown


def test_a_page_that_cannot_read_its_run_shows_a_friendly_error(store_dir, monkeypatch):
    make_store(store_dir, small_run())
    from dashboard.queries import overview

    def broken(run_id):
        raise StoreError(f"{run_id}: cannot open as a Goodput run (disk error)")

    monkeypatch.setattr(overview, "host_count", broken)
    at = app()
    assert not at.exception
    [error] = at.error
    assert "could not read the selected run" in error.value and "disk error" in error.value


def test_query_cache_tells_stores_and_file_versions_apart(tmp_path, monkeypatch):
    """Two stores holding the same run id must not answer from each other's cache."""
    first, second = tmp_path / "a", tmp_path / "b"
    make_store(first, small_run())
    make_store(second, small_run(name="other"))
    sql = "SELECT name FROM runs"
    monkeypatch.setenv("GOODPUT_STORE", str(first))
    assert state.query("sim-20240301-000000-aaaaaa", sql)["name"].to_list() == ["tiny"]
    monkeypatch.setenv("GOODPUT_STORE", str(second))
    assert state.query("sim-20240301-000000-aaaaaa", sql)["name"].to_list() == ["other"]
    state.store().delete_run("sim-20240301-000000-aaaaaa")
    with pytest.raises(StoreError, match="no longer in the store"):
        state.query("sim-20240301-000000-aaaaaa", sql)


def test_background_queries_answer_as_query_does_and_are_cached(store_dir):
    """state.query_in_background (the GPUs page's slow scans, on plain threads that never call Streamlit):
    the frame `query` gives, kept for the next rerun, an error raised where the result is used, and
    forgotten with the run."""
    make_store(store_dir, small_run())
    run_id, sql = (
        "sim-20240301-000000-aaaaaa",
        "SELECT host_id FROM hosts WHERE host_id >= ? ORDER BY host_id",
    )
    later = state.query_in_background(run_id, sql, (1,))
    assert later().equals(state.query(run_id, sql, (1,))) and later().height == HOSTS - 1
    assert state.query_in_background(run_id, sql, (1,))() is later()  # from the cache: no thread
    broken = state.query_in_background(run_id, "SELECT * FROM no_such_table")
    with pytest.raises(duckdb.Error):
        broken()
    state.forget_run(run_id)
    assert state.query_in_background(run_id, sql, (1,))() is not later()


PAGES = [p.name for p in navigation.PAGES]


def test_the_page_list_names_every_page_file():
    files = sorted(p.stem for p in (Path(APP).parent / "app_pages").glob("*.py") if p.stem != "__init__")
    assert sorted(PAGES) == files


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_under_the_shell(store_dir, page):
    """Every page of the router, on a full run, a bare ingested run and an empty store: a title, no error."""
    make_store(store_dir, small_run(), bare_run())
    for run_id in ("sim-20240301-000000-aaaaaa", "ing-20240301-000000-bbbbbb"):
        at = app(run=run_id)
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, run_id, [e.message for e in at.exception])
        assert at.title and at.sidebar.selectbox[0].value == run_id
    for run_id in ("sim-20240301-000000-aaaaaa", "ing-20240301-000000-bbbbbb"):
        state.store().delete_run(run_id)
    at = app()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, (page, "empty store", [e.message for e in at.exception])
    assert at.title


# ----- Streamlit's public API only --------------------------------------------------------------------------

DASHBOARD = Path(APP).parent
# Streamlit modules the dashboard may import besides `streamlit` itself (its documented API).
PUBLIC_STREAMLIT = {"streamlit", "streamlit.testing.v1", "streamlit.components.v1"}
# module -> the private Streamlit module it still needs, and why. This list only shrinks.
PRIVATE_STREAMLIT_ALLOWED = {
    # the upload route names a session by Streamlit's id, which no public API tells a script
    "upload_gate.py": "streamlit.runtime.scriptrunner",
}


def _streamlit_internals(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for each use of Streamlit beyond its public API in one module: an import of a submodule
    other than PUBLIC_STREAMLIT, a private name (`st._x`), or `runtime.` anything but `exists`."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("streamlit.") and alias.name not in PUBLIC_STREAMLIT:
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "streamlit":
            if node.module not in PUBLIC_STREAMLIT:
                yield node.lineno, f"from {node.module} import ..."
            for alias in node.names:
                if alias.name.startswith("_"):
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute):
            if _dotted(node.value) in ("st", "streamlit") and node.attr.startswith("_"):
                yield node.lineno, f"st.{node.attr}"
            if (
                _dotted(node.value) in ("runtime", "st.runtime", "streamlit.runtime")
                and node.attr != "exists"
            ):
                yield node.lineno, f"runtime.{node.attr}"


def _dotted(node: ast.expr) -> str:
    """`a.b.c` for a chain of names and attributes, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (inner := _dotted(node.value)):
        return f"{inner}.{node.attr}"
    return ""


def test_the_dashboard_uses_streamlits_public_api_only():
    """No module under dashboard/ reaches into Streamlit's internals (`streamlit.runtime.*`, private names);
    `st.runtime.exists()` is public."""
    found = {}
    for path in sorted(DASHBOARD.rglob("*.py")):
        name = path.relative_to(DASHBOARD).as_posix()
        uses = [f"{line}: {what}" for line, what in _streamlit_internals(path)]
        allowed = PRIVATE_STREAMLIT_ALLOWED.get(name)
        uses = [u for u in uses if not (allowed and u.endswith(f"from {allowed} import ..."))]
        if uses:
            found[name] = uses
    assert not found, f"Streamlit internals used (public API only): {found}"
