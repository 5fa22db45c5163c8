"""Store faults (issue 27, 8): a FIFO, a socket or a symbolic link named like a run is listed as skipped and never
opened (opening a FIFO waited forever: `goodput runs` and every page listing runs hung); a full disk while a run
is written, and a read-only store under `runs --delete`, end in one line and exit 2, leaving nothing behind.

The full disk and the read-only store are real: a tmpfs of a few MiB mounted here (root, as CI runs), with a
file-size limit (the same write failure, EFBIG instead of ENOSPC) where mounting is not allowed."""

import contextlib
import os
import re
import resource
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.cli import main
from engine.errors import GoodputError
from engine.store import Store
from tests.runs import make_store, small_run

GOODPUT = Path(sys.executable).parent / "goodput"
APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
FIFO_ID = "sim-20240301-000000-f1f0f1"


def goodput(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(GOODPUT), *args], capture_output=True, text=True, timeout=120, **kwargs)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("goodput: error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@contextlib.contextmanager
def tmpfs(where: Path, size: str):
    """A small tmpfs at `where`, or None where this machine does not let us mount one."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        yield None
        return
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def odd_store(store_dir):
    """A store with one good run, and a FIFO, a socket and a symbolic link to a FIFO, each named like a run."""
    store = make_store(store_dir, small_run())
    os.mkfifo(store.runs_dir / f"{FIFO_ID}.duckdb")
    os.mkfifo(store.runs_dir / "elsewhere")
    (store.runs_dir / "sim-20240301-000000-11111a.duckdb").symlink_to(store.runs_dir / "elsewhere")
    listener = socket.socket(socket.AF_UNIX)
    with contextlib.chdir(store.runs_dir):  # relative: the whole path is longer than AF_UNIX's 108 bytes
        listener.bind("sim-20240301-000000-50c4e7.duckdb")
    os.mkfifo(store.runs_dir / ".partial-x.lock")  # a FIFO named like a writer's lock: the sweep opens those
    try:
        yield store
    finally:
        listener.close()


def test_goodput_runs_lists_beside_a_fifo_and_says_what_it_skipped(odd_store):
    done = goodput("runs", "--json", "--store", str(odd_store.root))
    assert done.returncode == 0, done.stderr
    assert [r["name"] for r in __import__("json").loads(done.stdout)] == ["tiny"]
    good, skipped = odd_store.scan()
    reasons = {f.name: f.reason for f in skipped}
    assert reasons == {
        f"{FIFO_ID}.duckdb": "a FIFO (named pipe), not a run file: never opened",
        "sim-20240301-000000-11111a.duckdb": "a symbolic link, not a run file: never opened",
        "sim-20240301-000000-50c4e7.duckdb": "a socket, not a run file: never opened",
    }
    with pytest.raises(GoodputError, match="a FIFO .* never opened"):
        odd_store.info(FIFO_ID)


def test_pages_list_runs_beside_a_fifo(odd_store):
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("app_pages/data.py").run()  # hung forever before, waiting for a writer to the FIFO
    assert not at.exception
    assert at.sidebar.selectbox[0].options[0].startswith("tiny")
    errors = [e.value.replace("\\", "") for e in at.error]  # the page lists each skipped file with why
    assert any(f"{FIFO_ID}.duckdb" in e and "a FIFO (named pipe)" in e for e in errors), errors


def test_an_odd_file_named_like_a_run_can_be_deleted(odd_store):
    odd_store.delete_run(FIFO_ID)  # removing opens nothing
    assert not os.path.lexists(odd_store.path_of(FIFO_ID))


def simulate_into(store: Path, limit_bytes: int | None = None) -> subprocess.CompletedProcess:
    def small_files() -> None:  # a write past the limit fails with EFBIG (not a signal) as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return goodput(
        "simulate", "--preset", "demo", "--store", str(store), preexec_fn=small_files if limit_bytes else None
    )


def test_a_full_disk_while_simulating_is_one_line_and_leaves_nothing(tmp_path):
    with tmpfs(tmp_path / "disk", "1m") as disk:  # the demo run takes ~8 MB
        done = (
            simulate_into(disk / "store")
            if disk
            else simulate_into(tmp_path / "store", limit_bytes=1_000_000)
        )
        line = one_error_line(done)
        store = (disk or tmp_path) / "store"
        assert f"store {store}: cannot write run sim-" in line
        assert ("no space left on device" if disk else "file too large") in line
        assert [p.name for p in (store / "runs").iterdir()] == []  # no partial file, no lock left


def test_a_file_size_limit_while_simulating_is_one_line_and_leaves_nothing(tmp_path):
    """The same failure where no tmpfs can be mounted: each write past the limit fails with EFBIG."""
    store = tmp_path / "store"
    line = one_error_line(simulate_into(store, limit_bytes=1_000_000))
    assert f"store {store}: cannot write run sim-" in line and line.endswith("(file too large)")
    assert [p.name for p in (store / "runs").iterdir()] == []


def test_runs_delete_on_a_read_only_store_is_one_line(tmp_path):
    with tmpfs(tmp_path / "disk", "32m") as disk:
        if disk is None:  # no mount here: the same refusal, the file system's answer stood in for
            store = make_store(tmp_path / "store", small_run())
            [run_id] = store.run_ids()

            def read_only(self, *args, **kwargs):
                raise OSError(30, "Read-only file system")

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(Path, "unlink", read_only)
                with pytest.raises(GoodputError, match="cannot be removed \\(Read-only file system\\)"):
                    store.delete_run(run_id)
            return
        store = make_store(disk / "store", small_run())
        [run_id] = store.run_ids()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        line = one_error_line(goodput("runs", "--delete", run_id, "--store", str(store.root)))
        assert line == (f"goodput: error: {store.path_of(run_id)}: cannot be removed (Read-only file system)")
        listed = goodput("runs", "--store", str(store.root))  # reading a read-only store still works
        assert listed.returncode == 0 and run_id in listed.stdout, listed.stderr


def test_the_cli_never_shows_a_traceback_for_a_store_fault(tmp_path, capsys):
    store = make_store(tmp_path / "store", small_run())
    os.mkfifo(store.runs_dir / f"{FIFO_ID}.duckdb")
    assert (
        main(
            [
                "export",
                "incidents",
                "--run",
                FIFO_ID,
                "--format",
                "csv",
                "--output",
                str(tmp_path / "x.csv"),
                "--store",
                str(store.root),
            ]
        )
        == 2
    )
    assert "a FIFO (named pipe), not a run file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda root: (root.mkdir(), os.mkfifo(root / "runs")), "runs/ is a FIFO (named pipe), not a folder"),
        (lambda root: (root.mkdir(), (root / "runs").write_text("")), "runs/ is a file, not a folder"),
        (lambda root: root.write_text(""), "a file, not a folder"),
    ],
    ids=["runs-is-a-fifo", "runs-is-a-file", "store-is-a-file"],
)
def test_a_store_that_cannot_be_listed_says_so_instead_of_looking_empty(tmp_path, make, says):
    root = tmp_path / "store"
    make(root)
    line = one_error_line(goodput("runs", "--store", str(root)))
    assert line == f"goodput: error: store {root}: {says}: no run can be listed"
    with pytest.raises(GoodputError, match=re.escape(says)):
        Store(root).scan()


def test_a_store_named_but_not_there_is_an_error_not_an_empty_list(tmp_path):
    """A typo in --store must not read as "no runs" (issue 28, 5); an empty store folder lists none."""
    done = goodput("runs", "--json", "--store", str(tmp_path / "not-yet"))
    assert done.returncode == 2 and done.stdout == "" and "not-yet does not exist" in done.stderr
    (tmp_path / "empty").mkdir()
    done = goodput("runs", "--json", "--store", str(tmp_path / "empty"))
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_pages_say_the_store_cannot_be_listed(store_dir):
    store_dir.mkdir()
    os.mkfifo(store_dir / "runs")  # listed as empty before: every page said "no runs yet"
    for page in ("app_pages/data.py", "app_pages/overview.py"):
        at = AppTest.from_file(APP, default_timeout=60)
        at.switch_page(page).run()
        assert not at.exception, page
        errors = [e.value.replace("\\", "") for e in [*at.error, *at.sidebar.error]]
        assert any(
            "The store cannot be listed" in e and "runs/ is a FIFO (named pipe), not a folder" in e
            for e in errors
        ), (page, errors)
        assert not any("no runs yet" in i.value.lower() for i in at.info), page


@pytest.mark.browser
def test_a_served_dashboard_lists_runs_beside_a_fifo(odd_store, tmp_path):
    """The attack on a real server on loopback: health said ok while every page listing runs hung on the FIFO.
    Now the health check and the Data page both answer, the page naming the run and the FIFO it skipped."""
    from playwright.sync_api import expect, sync_playwright

    from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, free_port, stop_server, wait_healthy

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    port, log = free_port(), tmp_path / "dashboard.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(GOODPUT), "dashboard", "--store", str(odd_store.root), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server, log)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"{url}/data")
                expect(page.get_by_text(f"{FIFO_ID}.duckdb").first).to_be_visible(timeout=90_000)
                expect(page.get_by_text("a FIFO (named pipe)").first).to_be_visible()
                expect(page.get_by_test_id("stTable").first).to_be_visible()  # the readable runs
                expect(page.get_by_test_id("stException")).to_have_count(0)
            finally:
                browser.close()
    finally:
        stop_server(server)


def test_the_dashboard_never_attaches_a_fifo_named_like_a_run(odd_store):
    """`?run=` names any id: the page's connection refuses a FIFO before DuckDB could wait on it."""
    import threading

    from dashboard import state

    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            state.query(FIFO_ID, "SELECT 1")
            outcome.append(None)
        except BaseException as err:  # noqa: BLE001 (what it raised is the test's answer)
            outcome.append(err)

    reader = threading.Thread(target=read, daemon=True)  # daemon: a hang fails the test, not the session
    reader.start()
    reader.join(60)
    assert not reader.is_alive(), "attached the FIFO and waited for a writer"
    [err] = outcome
    assert isinstance(err, GoodputError) and "a FIFO (named pipe), not a run file" in str(err), err


def test_a_fifo_in_place_of_a_runs_write_ahead_log_is_skipped_not_waited_on(tmp_path):
    """Issue 45, 8: DuckDB opens `<run>.duckdb.wal` with the run; a FIFO there hung `goodput runs`."""
    store = make_store(tmp_path / "store", small_run(), small_run("other", "sim-20240301-000000-bbbbbb"))
    run_file = store.path_of("sim-20240301-000000-bbbbbb")
    os.mkfifo(run_file.with_name(run_file.name + ".wal"))
    done = goodput("runs", "--json", "--store", str(store.root))
    assert done.returncode == 0, done.stderr
    assert [r["name"] for r in __import__("json").loads(done.stdout)] == ["tiny"]
    _, skipped = store.scan()
    assert [f.reason for f in skipped] == [f"its {run_file.name}.wal is a FIFO (named pipe): never opened"]
    with pytest.raises(GoodputError, match="wal is a FIFO"):
        store.info(run_file.stem)
