"""Odd files in the store's runs/ (a name with a space, a file that is not DuckDB, a DuckDB file without the runs
table, another schema version, a folder) never break the dashboard: every page serves the readable run, the
sidebar warns, and the Data page lists each skipped file with why."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.navigation import RUN_PAGES
from engine.store import Store
from tests.runs import make_store, small_run
from tests.test_store import ODD_FILES, make_odd_files

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
PAGES = RUN_PAGES  # every page that shows a run (dashboard/navigation.py)


def test_every_page_serves_the_readable_run_beside_odd_files(store_dir):
    store = make_store(store_dir, small_run())
    [good] = store.run_ids()
    make_odd_files(store.runs_dir, store.path_of(good))
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    assert not at.exception
    [warning] = [w.value for w in at.sidebar.warning]
    assert f"{len(ODD_FILES)} run file(s) cannot be read" in warning and "see the Data page" in warning
    assert at.sidebar.selectbox[0].options == [f"tiny · simulate · {good}"]
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert at.query_params.get("run") in ([good], good, None), page


def test_the_data_page_lists_every_skipped_file_with_why(store_dir):
    store = make_store(store_dir, small_run())
    [good] = store.run_ids()
    make_odd_files(store.runs_dir, store.path_of(good))
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("app_pages/data.py").run()
    assert not at.exception
    assert any(f"{len(ODD_FILES)} file(s) in the store were skipped" in w.value for w in at.warning)
    errors = [e.value for e in at.error]
    assert len(errors) == len(ODD_FILES)
    for name, why in ODD_FILES.items():
        [line] = [e for e in errors if name in e]
        assert why.split(" (")[0] in line.replace("\\", ""), line
        assert str(store.root) not in line  # a browser sees no server path
    [mine] = [e for e in errors if "my run.duckdb" in e]
    assert "Rename or remove it" in mine
    # only files named by a run id can be deleted here (the page would address them by id)
    options = at.selectbox(key="data_victim").options
    assert not any("my run" in o for o in options) and any("sim-text" in o for o in options)
    assert list(at.table[0].value["run id"]) == [good]
    assert Store(store_dir).run_ids()  # nothing was removed by looking
