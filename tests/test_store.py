"""The run store: atomic writes (also under SIGKILL), readers beside a writer, schema versions, list/delete."""

import json
import os
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

from engine.errors import GoodputError
from engine.run import Run
from engine.schema import SCHEMA_VERSION, TABLES
from engine.store import Store, StoreError

ROOT = Path(__file__).resolve().parent.parent


def small_run(name: str = "small", **kw) -> Run:
    hosts = pl.DataFrame({"host_id": [0, 1], "hostname": ["h0", "h1"], "rack_id": [0, 0], "pod_id": [0, 0],
                          "row": [0, 0], "position": [0, 0], "slot": [0, 1]})
    attempts = pl.DataFrame({"job_id": ["j1"], "attempt": [1], "start_s": [0.0], "end_s": [10.0],
                             "end_reason": ["completed"], "lost_work_s": [0.0], "hosts": [[0, 1]]},
                            schema_overrides={"hosts": pl.List(pl.Int32)})
    return Run(kind="simulate", name=name, started_at=datetime(2024, 3, 1, tzinfo=UTC), duration_s=10.0,
               scenario={"preset": "demo"}, seed=3, summary={"job": {"ettr": 0.9}},
               tables={"hosts": hosts, "job_attempts": attempts}, **kw)


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
    from engine.run import Run
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
    writer = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(tmp_path)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "writing"
        # a reader beside the writer: lists, opens and queries the finished run while the new one is written
        for _ in range(5):
            assert [i.run_id for i in store.list_runs()] == [existing]
            assert store.table(existing, "hosts").height == 2
            assert json.loads(json.dumps(store.info(existing).summary)) == {"job": {"ettr": 0.9}}
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == -signal.SIGKILL
    assert [i.run_id for i in store.list_runs()] == [existing]
    assert not store.path_of("sim-doomed").exists()
    # the orphaned partial file is invisible, and the next write works beside it
    assert any(p.name.startswith(".partial-sim-doomed") for p in store.runs_dir.iterdir())
    later = store.write_run(small_run("later"))
    assert {i.run_id for i in store.list_runs()} == {existing, later}


def test_stale_partials_are_swept(tmp_path):
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
