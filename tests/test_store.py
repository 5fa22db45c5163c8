"""The run store: atomic writes (also under SIGKILL), readers beside a writer, schema versions, list/delete."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from dashboard.logouts import LEDGER_FILE
from engine.act.audit import AUDIT_FILE, HEAD_FILE
from engine.act.settings import SETTINGS_FILE
from engine.errors import GoodputError
from engine.report.anonymise import KEY_FILE
from engine.store import Store, StoreError
from engine.store.run import Run
from engine.store.schema import SCHEMA_VERSION, TABLES
from tests.file_modes import as_plain_user

ROOT = Path(__file__).resolve().parent.parent


def small_run(name: str = "small", **kw) -> Run:
    hosts = pl.DataFrame(
        {
            "host_id": [0, 1],
            "hostname": ["h0", "h1"],
            "rack_id": [0, 0],
            "pod_id": [0, 0],
            "row": [0, 0],
            "position": [0, 0],
            "slot": [0, 1],
        }
    )
    attempts = pl.DataFrame(
        {
            "job_id": ["j1"],
            "attempt": [1],
            "start_s": [0.0],
            "end_s": [10.0],
            "end_reason": ["completed"],
            "lost_work_s": [0.0],
            "hosts": [[0, 1]],
        },
        schema_overrides={"hosts": pl.List(pl.Int32)},
    )
    return Run(
        kind="simulate",
        name=name,
        started_at=datetime(2024, 3, 1, tzinfo=UTC),
        duration_s=10.0,
        scenario={"preset": "demo"},
        seed=3,
        summary={"job": {"ettr": 0.9}},
        tables={"hosts": hosts, "job_attempts": attempts},
        **kw,
    )


def test_write_list_read_delete(tmp_path):
    store = Store(tmp_path)
    assert store.list_runs() == []
    run_id = store.write_run(small_run())
    [info] = store.list_runs()
    assert (info.run_id, info.kind, info.name, info.seed) == (run_id, "simulate", "small", 3)
    assert info.summary == {"job": {"ettr": 0.9}} and info.scenario == {"preset": "demo"}
    assert store.table(run_id, "hosts")["hostname"].to_list() == ["h0", "h1"]
    assert store.table(run_id, "job_attempts")["hosts"].to_list() == [[0, 1]]
    assert store.table(run_id, "hosts", "host_id = ?", [1])["hostname"].to_list() == ["h1"]
    # every table of the schema exists, empty where the run gave no rows
    assert store.table(run_id, "gpu_samples").columns == list(TABLES["gpu_samples"])
    store.delete_run(run_id)
    assert store.list_runs() == []
    with pytest.raises(StoreError, match="no run"):
        store.delete_run(run_id)


def test_newest_run_first(tmp_path):
    store = Store(tmp_path)
    first = store.write_run(small_run("first"))
    time.sleep(0.02)
    second = store.write_run(small_run("second"))
    os.utime(store.path_of(first), (time.time() - 100, time.time() - 100))
    assert [i.run_id for i in store.list_runs()] == [second, first]


def test_store_location_from_flag_env_or_default(tmp_path, monkeypatch):
    monkeypatch.delenv("GOODPUT_STORE", raising=False)
    assert Store().root.parts[-2:] == ("data", "store")
    monkeypatch.setenv("GOODPUT_STORE", str(tmp_path / "env"))
    assert Store().root == tmp_path / "env"
    assert Store(tmp_path / "flag").root == tmp_path / "flag"


def test_unknown_column_or_table_is_refused_and_nothing_is_written(tmp_path):
    store = Store(tmp_path)
    run = small_run()
    run.tables["hosts"] = run.tables["hosts"].with_columns(colour=pl.lit("red"))
    with pytest.raises(StoreError, match="colour"):
        store.write_run(run)
    assert store.list_runs() == [] and list(store.runs_dir.iterdir()) == []
    bad = small_run()
    bad.tables["nonsense"] = pl.DataFrame({"a": [1]})
    with pytest.raises(StoreError, match="nonsense"):
        store.write_run(bad)
    assert list(store.runs_dir.iterdir()) == []


def test_failure_midway_leaves_nothing(tmp_path):
    def chunks():
        yield pl.DataFrame({"t_s": [0.0], "gpu_id": [0]}, schema_overrides={"gpu_id": pl.Int32})
        raise RuntimeError("generator broke")

    run = small_run()
    run.tables["gpu_samples"] = chunks()
    store = Store(tmp_path)
    with pytest.raises(RuntimeError):
        store.write_run(run)
    assert store.list_runs() == [] and list(store.runs_dir.iterdir()) == []


def test_unknown_schema_version_is_a_clear_error(tmp_path):
    store = Store(tmp_path)
    run_id = store.write_run(small_run())
    con = duckdb.connect(str(store.path_of(run_id)))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 41)])
    con.close()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 41}"):
        store.info(run_id)
    with pytest.raises(GoodputError, match="re-create the run"):
        store.table(run_id, "hosts")


def test_a_file_that_is_not_a_run(tmp_path):
    store = Store(tmp_path)
    store.runs_dir.mkdir(parents=True)
    con = duckdb.connect(str(store.runs_dir / "stray.duckdb"))
    con.execute("CREATE TABLE x (a INTEGER)")
    con.close()
    with pytest.raises(StoreError, match="not a Goodput run file"):
        store.info("stray")


@pytest.mark.parametrize("run_id", ["../etc/passwd", "", "a/b", ".partial-x"])
def test_run_ids_cannot_escape_the_store(tmp_path, run_id):
    with pytest.raises(StoreError, match="not a run id"):
        Store(tmp_path).path_of(run_id)


SLOW_WRITER = textwrap.dedent("""
    import sys, time
    from datetime import UTC, datetime
    import numpy as np, polars as pl
    from engine.store.run import Run
    from engine.store import Store

    def chunks():
        for i in range(10_000):
            n = 200_000
            yield pl.DataFrame({"t_s": np.full(n, float(i)), "gpu_id": np.arange(n, dtype=np.int32)})
            if i == 2:
                print("writing", flush=True)
            time.sleep(0.05)

    run = Run(kind="simulate", name="doomed", started_at=datetime.now(UTC), duration_s=1.0,
              tables={"gpu_samples": chunks()}, run_id="sim-doomed")
    Store(sys.argv[1]).write_run(run)
    print("finished", flush=True)
""")


def test_sigkill_mid_write_leaves_no_run_and_readers_keep_reading(tmp_path):
    store = Store(tmp_path)
    existing = store.write_run(small_run("existing"))
    writer = subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "writing"
        # a reader beside the writer: lists, opens and queries the finished run while the new one is written;
        # each listing sweeps partial files, and never the live writer's
        for _ in range(5):
            assert [i.run_id for i in store.list_runs()] == [existing]
            assert store.table(existing, "hosts").height == 2
            assert json.loads(json.dumps(store.info(existing).summary)) == {"job": {"ettr": 0.9}}
            assert store.sweep_partials() == []
        live = sorted(p.name for p in store.runs_dir.iterdir() if p.name.startswith(".partial-sim-doomed"))
        assert {"duckdb", "lock"} <= {name.rsplit(".", 1)[1] for name in live}  # and DuckDB's .wal, maybe
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == -signal.SIGKILL
    # the dead writer's files are still there (nothing has used the store since), and invisible to readers
    assert sorted(p.name for p in store.runs_dir.iterdir() if p.name.startswith(".partial-")) == live
    assert Store(tmp_path).run_ids() == [existing]
    # the next use of the store removes them, at once (not after a day)
    assert [i.run_id for i in store.list_runs()] == [existing]
    assert not store.path_of("sim-doomed").exists()
    assert sorted(p.name for p in store.runs_dir.iterdir()) == [f"{existing}.duckdb"]
    later = store.write_run(small_run("later"))
    assert {i.run_id for i in store.list_runs()} == {existing, later}


def test_partials_without_a_lock_file_are_swept_only_when_a_day_old(tmp_path):
    # written by a Goodput from before the lock files: whether their writer lives cannot be told
    store = Store(tmp_path)
    store.runs_dir.mkdir(parents=True)
    stale = store.runs_dir / ".partial-sim-old.123.duckdb"
    stale.write_bytes(b"half")
    old = time.time() - 2 * 86400
    os.utime(stale, (old, old))
    fresh = store.runs_dir / ".partial-sim-new.456.duckdb"
    fresh.write_bytes(b"half")
    store.write_run(small_run())
    assert not stale.exists() and fresh.exists()


HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("holding", flush=True)
    sys.stdin.readline()
""")


def test_a_partial_is_swept_exactly_when_no_process_holds_its_lock(tmp_path):
    store = Store(tmp_path)
    store.runs_dir.mkdir(parents=True)
    base = store.runs_dir / ".partial-sim-x.77.0123456789ab"
    files = [Path(f"{base}{suffix}") for suffix in (".lock", ".duckdb", ".duckdb.wal")]
    for path in files:
        path.write_bytes(b"x")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(files[0])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        assert store.sweep_partials() == [] and all(p.exists() for p in files)
        assert store.list_runs() == [] and all(p.exists() for p in files)
    finally:
        holder.communicate("done\n", timeout=30)
    assert sorted(store.sweep_partials()) == sorted(files)  # lock file, data and WAL: all of them
    assert list(store.runs_dir.iterdir()) == []


ODD_FILES = {
    "my run.duckdb": "the name is not a run id",
    "sim-text.duckdb": "cannot open as a Goodput run",
    "sim-foreign.duckdb": "not a Goodput run file (no meta table)",
    "sim-norunstable.duckdb": "not a Goodput run file (no readable runs table",
    "sim-badversion.duckdb": "schema version banana",
    "sim-folder.duckdb": "a folder, not a run file: never opened",
}


def make_odd_files(runs_dir: Path, good: Path) -> None:
    (runs_dir / "my run.duckdb").write_bytes(
        good.read_bytes()
    )  # a good run under a name that is not a run id
    (runs_dir / "sim-text.duckdb").write_bytes(b"not a duckdb file at all\n" * 50)
    con = duckdb.connect(str(runs_dir / "sim-foreign.duckdb"))
    con.execute("CREATE TABLE x (a INTEGER)")
    con.close()
    con = duckdb.connect(str(runs_dir / "sim-norunstable.duckdb"))
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
    con.close()
    shutil.copyfile(good, runs_dir / "sim-badversion.duckdb")
    con = duckdb.connect(str(runs_dir / "sim-badversion.duckdb"))
    con.execute("UPDATE meta SET value = 'banana' WHERE key = 'schema_version'")
    con.close()
    (runs_dir / "sim-folder.duckdb").mkdir()


def test_odd_files_in_runs_are_skipped_with_why_and_the_rest_still_listed(tmp_path):
    store = Store(tmp_path)
    good = store.write_run(small_run("good"))
    make_odd_files(store.runs_dir, store.path_of(good))
    runs, skipped = store.scan()
    assert [i.run_id for i in runs] == [good] and store.list_runs() == runs
    assert sorted(s.name for s in skipped) == sorted(ODD_FILES)
    for odd in skipped:
        assert ODD_FILES[odd.name] in odd.reason, odd
        assert str(store.runs_dir) not in odd.reason  # named by its file name once, in `name`
        assert odd.run_id == (None if " " in odd.name else odd.name.removesuffix(".duckdb"))
    assert "my run" not in store.run_ids() and good in store.run_ids()
    assert store.table(good, "hosts").height == 2
    # a skipped file with a run id can be deleted like any run; the others stay skipped
    store.delete_run("sim-text")
    assert "sim-text.duckdb" not in {s.name for s in store.scan()[1]}


def test_an_unreadable_run_file_is_skipped(tmp_path):
    store = Store(tmp_path)
    good = store.write_run(small_run("good"))
    other = store.write_run(small_run("other"))
    store.path_of(other).chmod(0)
    code = (
        "import json, sys; from engine.store import Store; runs, skipped = Store(sys.argv[1]).scan(); "
        "print(json.dumps([[i.run_id for i in runs], [[s.name, s.run_id] for s in skipped]]))"
    )
    done = subprocess.run(
        as_plain_user([sys.executable, "-c", code, str(tmp_path)]),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=True,
    )
    assert json.loads(done.stdout) == [[good], [[f"{other}.duckdb", other]]]


def test_append_is_copy_on_write_and_readers_keep_their_version(tmp_path):
    store = Store(tmp_path)
    run_id = store.write_run(small_run())
    reader = store.open(run_id)  # a dashboard holding the run open
    try:
        samples = pl.DataFrame({"t_s": [0.0, 30.0], "gpu_id": [0, 1]}, schema_overrides={"gpu_id": pl.Int32})
        store.append_to_run(run_id, {"gpu_samples": samples}, duration_s=60.0, summary={"samples": 2})
        assert reader.execute("SELECT count(*) FROM gpu_samples").fetchall() == [(0,)]
    finally:
        reader.close()
    assert store.table(run_id, "gpu_samples").height == 2
    info = store.info(run_id)
    assert info.duration_s == 60.0 and info.summary == {"samples": 2}
    with pytest.raises(StoreError, match="cannot append"):
        store.append_to_run(run_id, {"runs": pl.DataFrame({"run_id": ["x"]})})
    assert store.table(run_id, "gpu_samples").height == 2
    assert [p.name for p in store.runs_dir.iterdir()] == [f"{run_id}.duckdb"]


def test_append_can_replace_rows_by_key_in_the_same_commit(tmp_path):
    """A watched job that ended replaces its running row; rows of other keys stay; a bad key changes nothing."""
    store = Store(tmp_path)
    run_id = store.write_run(small_run())
    ended = pl.DataFrame(
        {
            "job_id": ["j1", "j2"],
            "attempt": [1, 1],
            "start_s": [0.0, 5.0],
            "end_s": [12.0, None],
            "end_reason": ["failed", None],
            "lost_work_s": [0.0, 0.0],
            "hosts": [[0, 1], [1]],
        },
        schema_overrides={"hosts": pl.List(pl.Int32), "end_s": pl.Float64, "end_reason": pl.String},
    )
    store.append_to_run(run_id, {"job_attempts": ended}, replace={"job_attempts": ("job_id", "attempt")})
    rows = store.table(run_id, "job_attempts").sort("job_id")
    assert rows.select("job_id", "end_s", "end_reason").rows() == [("j1", 12.0, "failed"), ("j2", None, None)]
    with pytest.raises(StoreError, match=r"cannot replace rows of job_attempts by \['nope'\]"):
        store.append_to_run(run_id, {"job_attempts": ended}, replace={"job_attempts": ("nope",)})
    assert store.table(run_id, "job_attempts").height == 2


def test_a_store_that_cannot_be_written_is_a_store_error(tmp_path):
    (tmp_path / "runs").write_text("a file where the runs folder should be\n")
    with pytest.raises(StoreError, match=r"cannot write run sim-x \(File exists\)"):
        Store(tmp_path).write_run(small_run(run_id="sim-x"))


def test_the_readme_names_every_table_and_the_store_files():
    store_section = (ROOT / "README.md").read_text().split("## The store", 1)[1].split("\n## ", 1)[0]
    listed = store_section.split("Tables: `", 1)[1].split("`", 1)[0]
    assert [name.strip() for name in " ".join(listed.split()).split(",")] == list(TABLES)
    for name in (AUDIT_FILE, HEAD_FILE, SETTINGS_FILE, KEY_FILE, LEDGER_FILE.as_posix()):
        assert f"`{name}`" in store_section, name
