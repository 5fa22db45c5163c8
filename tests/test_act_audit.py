"""engine.act.audit: the append-only, hash-chained audit log, on real SQLite files, real threads and processes."""

import hashlib
import json
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.act.audit import (
    AUDIT_FILE,
    GENESIS,
    HEAD_FILE,
    MAX_DETAIL_BYTES,
    AuditEvent,
    AuditLog,
)
from engine.errors import GoodputError

ROOT = Path(__file__).resolve().parent.parent


def _expected_hash(seq, at_text, who, event, action_id, detail, prev_hash) -> str:
    """The rule, written out again here rather than imported: a change to it must fail this test."""
    content = json.dumps(
        [seq, at_text, who, event, action_id, detail, prev_hash],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(content.encode()).hexdigest()


def _append(log: AuditLog, n: int, action_id: str = "drain-abc") -> None:
    for i in range(n):
        with log.writing() as writer:
            writer.append("alice@example.com", AuditEvent.RECOMMENDED, action_id, {"i": i})


def _raw(log: AuditLog, sql: str, params: tuple = ()) -> None:
    """What someone with the file in hand can do, bypassing the module."""
    conn = sqlite3.connect(log.path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def _head(log: AuditLog) -> dict:
    return json.loads((log.root / HEAD_FILE).read_text())


def test_three_appends_make_an_exact_chain(tmp_path):
    log = AuditLog(tmp_path)
    details = [
        {"action": "drain", "nodes": ["gpu-001"]},
        {"argv": ["scontrol", "update"]},
        {"answer": "ok é"},
    ]
    events = [AuditEvent.RECOMMENDED, "approved", AuditEvent.DONE]
    returned = []
    for event, detail in zip(events, details, strict=True):
        with log.writing() as writer:
            returned.append(writer.append("alice@example.com", event, "drain-abc", detail))

    entries = log.entries()
    assert entries == returned
    assert [e.seq for e in entries] == [1, 2, 3]
    assert [e.event for e in entries] == ["recommended", "approved", "done"]
    assert [e.detail for e in entries] == details
    assert entries[0].prev_hash == GENESIS
    assert [e.prev_hash for e in entries[1:]] == [e.hash for e in entries[:-1]]
    for e in entries:
        assert e.at.tzinfo is not None and e.at.utcoffset() == timedelta(0)
        at_text = e.at.isoformat(timespec="microseconds")
        assert e.hash == _expected_hash(e.seq, at_text, e.who, e.event, e.action_id, e.detail, e.prev_hash)
        assert e.as_json()["at"] == at_text
    assert _head(log) == {"seq": 3, "hash": entries[-1].hash}
    verification = log.verify()
    assert verification.ok and verification.rows == 3 and verification.problems == ()
    assert verification.head_hash == entries[-1].hash


def test_missing_log_reads_empty_and_creates_nothing(tmp_path):
    log = AuditLog(tmp_path / "store")
    assert log.entries() == []
    assert log.verify().ok and log.verify().rows == 0 and log.verify().head_hash == GENESIS
    frame = log.frame()
    assert frame.height == 0
    assert frame.schema == pl.Schema(
        {
            "seq": pl.Int64,
            "at": pl.Datetime("us", "UTC"),
            "who": pl.String,
            "event": pl.String,
            "action_id": pl.String,
            "detail": pl.String,
            "prev_hash": pl.String,
            "hash": pl.String,
        }
    )
    assert not (tmp_path / "store").exists()


def test_filters_and_frame(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 2, "drain-a")
    middle = datetime.now(UTC)
    _append(log, 1, "drain-b")
    with log.writing() as writer:
        writer.append("bob", AuditEvent.BREAKER_RESET, None, {"why": "fixed"})
    assert [e.seq for e in log.entries("drain-a")] == [1, 2]
    assert [e.seq for e in log.entries(since=middle)] == [3, 4]
    assert [e.seq for e in log.entries("drain-b", since=middle)] == [3]
    frame = log.frame()
    assert frame["seq"].to_list() == [1, 2, 3, 4]
    assert frame["action_id"].to_list() == ["drain-a", "drain-a", "drain-b", None]
    assert json.loads(frame["detail"][3]) == {"why": "fixed"}
    assert frame["at"].to_list() == [e.at for e in log.entries()]


def test_update_and_delete_are_refused_by_the_triggers(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 2)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        _raw(log, "UPDATE audit SET who = 'mallory' WHERE seq = 1")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        _raw(log, "DELETE FROM audit WHERE seq = 2")
    assert [e.who for e in log.entries()] == ["alice@example.com"] * 2
    assert log.verify().ok


def test_a_changed_row_is_caught(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 3)
    _raw(log, "DROP TRIGGER audit_no_update")
    _raw(log, """UPDATE audit SET detail = '{"i":99}' WHERE seq = 2""")
    verification = log.verify()
    assert not verification.ok
    assert "row 2: its hash does not match its content (changed)" in verification.problems
    assert any("triggers" in p for p in verification.problems)
    # changing the hash too only moves the break to the next row's link
    digest = _expected_hash(2, *_raw_fields(log, 2))
    _raw(log, "UPDATE audit SET hash = ? WHERE seq = 2", (digest,))
    assert "row 3: its prev_hash is not row 2's hash (the chain is broken)" in log.verify().problems


def _raw_fields(log: AuditLog, seq: int) -> tuple:
    conn = sqlite3.connect(log.path)
    try:
        at, who, event, action_id, detail, prev_hash = conn.execute(
            "SELECT at, who, event, action_id, detail, prev_hash FROM audit WHERE seq = ?", (seq,)
        ).fetchone()
    finally:
        conn.close()
    return at, who, event, action_id, json.loads(detail), prev_hash


def test_a_deleted_middle_row_is_caught(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 5)
    _raw(log, "DROP TRIGGER audit_no_delete")
    _raw(log, "DELETE FROM audit WHERE seq = 2")
    _raw(log, "DELETE FROM audit WHERE seq IN (4)")
    problems = log.verify().problems
    assert "row 2: missing (seq jumps 1 -> 3)" in problems
    assert "row 4: missing (seq jumps 3 -> 5)" in problems


def test_deleted_last_rows_are_caught_by_the_head(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 4)
    _raw(log, "DROP TRIGGER audit_no_delete")
    _raw(log, "DELETE FROM audit WHERE seq >= 3")
    verification = log.verify()
    assert not verification.ok and verification.rows == 2
    assert verification.problems[0] == "rows after 2 are missing: the head file says 4 rows"
    # appending again does not hide it: the head stays on the row that went
    _append(log, 3)
    assert _head(log)["seq"] == 4
    assert "row 4: its hash is not the head file's (rows from 4 on were rewritten)" in log.verify().problems


def test_the_whole_file_deleted_is_caught_by_the_head(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 2)
    log.path.unlink()
    assert log.verify().problems == ("rows after 0 are missing: the head file says 2 rows",)


def test_a_head_behind_the_table_is_fine_and_catches_up(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 3)
    second = log.entries()[1]
    # a crash between the commit of row 3 and the head's write leaves the head on row 2
    (log.root / HEAD_FILE).write_text(json.dumps({"seq": 2, "hash": second.hash}))
    assert log.verify().ok
    _append(log, 1)
    assert _head(log) == {"seq": 4, "hash": log.entries()[-1].hash}
    (log.root / HEAD_FILE).write_text("{half a fi")
    assert not log.verify().ok


def test_a_file_that_is_no_database_is_a_problem_not_a_crash(tmp_path):
    log = AuditLog(tmp_path)
    log.path.write_bytes(b"not sqlite at all, " * 100)
    verification = log.verify()
    assert not verification.ok and "cannot be read" in verification.problems[0]
    with pytest.raises(GoodputError, match="cannot be"):
        log.entries()


def test_an_exception_rolls_back(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 1)
    with pytest.raises(RuntimeError), log.writing() as writer:
        writer.append("alice", AuditEvent.APPROVED, "drain-abc", {})
        raise RuntimeError("the caller changed its mind")
    assert [e.seq for e in log.entries()] == [1]
    assert log.verify().ok


def test_eight_threads_append_contiguously(tmp_path):
    log = AuditLog(tmp_path)
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        start.wait()
        for i in range(10):
            with log.writing() as writer:
                writer.append(f"thread-{n}", AuditEvent.RECOMMENDED, f"drain-{n}", {"i": i})

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e.seq for e in log.entries()] == list(range(1, 81))
    verification = log.verify()
    assert verification.ok and verification.rows == 80
    assert _head(log) == {"seq": 80, "hash": verification.head_hash}


def test_two_processes_append_contiguously(tmp_path):
    script = (
        "import sys\n"
        "from engine.act.audit import AuditLog\n"
        "log = AuditLog(sys.argv[1])\n"
        "for i in range(25):\n"
        "    with log.writing() as writer:\n"
        "        writer.append(sys.argv[2], 'dry_run', None, {'i': i})\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path), f"proc-{n}"], cwd=ROOT)
        for n in range(2)
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0]
    log = AuditLog(tmp_path)
    entries = log.entries()
    assert [e.seq for e in entries] == list(range(1, 51))
    assert sorted(e.who for e in entries) == ["proc-0"] * 25 + ["proc-1"] * 25
    assert log.verify().ok


def test_check_then_append_is_atomic(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 1, "drain-x")
    start = threading.Barrier(2)

    def approve(who: str) -> None:
        start.wait()
        with log.writing() as writer:
            if not any(e.event == AuditEvent.APPROVED for e in writer.entries("drain-x")):
                time.sleep(0.05)  # widen the window a non-atomic check would lose in
                writer.append(who, AuditEvent.APPROVED, "drain-x", {})

    threads = [threading.Thread(target=approve, args=(who,)) for who in ("alice", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e.event for e in log.entries("drain-x")].count("approved") == 1


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=40)
@given(
    detail=st.dictionaries(st.text(max_size=12), JSON_VALUES, max_size=5),
    who=st.text(min_size=1).filter(str.strip),
)
def test_any_json_detail_round_trips(detail, who):
    with tempfile.TemporaryDirectory() as folder:
        log = AuditLog(folder)
        with log.writing() as writer:
            writer.append("first", AuditEvent.RECOMMENDED, None, {"before": True})
            written = writer.append(who, AuditEvent.DONE, "requeue-1", detail)
        assert written.detail == detail
        assert log.entries()[-1] == written
        assert log.verify().ok


@pytest.mark.parametrize(
    ("who", "event", "action_id", "detail", "field"),
    [
        ("", "approved", "a", {}, "who"),
        ("   ", "approved", "a", {}, "who"),
        ("alice", "launched", "a", {}, "event"),
        ("alice", "approved", "", {}, "action_id"),
        ("alice", "approved", "a", ["not", "a", "dict"], "detail"),
        ("alice", "approved", "a", {"nodes": {"gpu-1"}}, "detail"),
        ("alice", "approved", "a", {"rate": float("nan")}, "detail"),
        ("alice", "approved", "a", {"rate": float("inf")}, "detail"),
        ("alice", "approved", "a", {"text": "x" * MAX_DETAIL_BYTES}, "detail"),
    ],
)
def test_bad_input_is_refused_naming_the_field(tmp_path, who, event, action_id, detail, field):
    log = AuditLog(tmp_path)
    with pytest.raises(GoodputError, match=f"audit {field}"), log.writing() as writer:
        writer.append(who, event, action_id, detail)
    assert log.entries() == []


def test_writer_outside_writing_and_naive_since_are_refused(tmp_path):
    log = AuditLog(tmp_path)
    with log.writing() as writer:
        writer.append("alice", AuditEvent.REFUSED, "drain-abc", {"guard": "cap"})
    with pytest.raises(GoodputError, match="only usable inside"):
        writer.append("alice", AuditEvent.APPROVED, "drain-abc", {})
    with pytest.raises(GoodputError, match="since"):
        log.entries(since=datetime(2026, 1, 1))
    assert (tmp_path / AUDIT_FILE).exists()


def test_the_last_rows_cut_with_the_head_are_caught_and_stay_caught(tmp_path):
    """Issue 45, 4: delete the last rows together with audit.head (or set the head back to seq 0) and verify-log
    said the chain was intact; the next action wrote a fresh head and hid the cut for good."""
    log = AuditLog(tmp_path)
    _append(log, 4)
    _raw(log, "DROP TRIGGER audit_no_delete")
    _raw(log, "DELETE FROM audit WHERE seq >= 3")
    (log.root / HEAD_FILE).unlink()
    verification = log.verify()
    assert not verification.ok and verification.rows == 2
    assert "the head file audit.head is missing, yet the log holds 2 rows" in verification.problems[0]
    _append(log, 1)  # the next action does not write a fresh head over rows it never saw
    assert not (log.root / HEAD_FILE).exists() and not log.verify().ok
    (log.root / HEAD_FILE).write_text(json.dumps({"seq": 0, "hash": GENESIS}))  # or the head set back
    assert "says no row was written, yet the log holds 3 rows" in log.verify().problems[0]
    _append(log, 1)
    assert _head(log)["seq"] == 0 and not log.verify().ok


def test_a_new_log_has_a_head_before_its_first_row(tmp_path):
    log = AuditLog(tmp_path)
    _append(log, 1)
    assert _head(log) == {"seq": 1, "hash": log.entries()[0].hash} and log.verify().ok


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ('{"i":0,"i":7}', "a key twice"),  # the hash is of {"i": 7}... or was it 0? A reader sees both
        ('{"i": 7}', "not the text its hash covers"),  # another spelling of the same values
        ('{"i":NaN}', "NaN is no JSON value"),
    ],
)
def test_a_reworded_detail_breaks_the_chain_and_a_nan_is_a_problem_not_a_crash(tmp_path, stored, why):
    """Issue 45, 5: duplicate keys in a row's detail passed verify-log (it hashed the parsed detail, not the
    stored bytes) while the CSV export showed the forged text; a NaN crashed verify-log."""
    log = AuditLog(tmp_path)
    with log.writing() as writer:
        writer.append("alice@example.com", AuditEvent.RECOMMENDED, "drain-abc", {"i": 7})
    digest = log.entries()[0].hash
    _raw(log, "DROP TRIGGER audit_no_update")
    _raw(log, "UPDATE audit SET detail = ? WHERE seq = 1", (stored,))
    if stored.startswith('{"i":0,"i":7}'):
        assert _expected_hash(1, *_raw_fields(log, 1)) == digest  # the old check: parsed, it still matched
    verification = log.verify()
    assert not verification.ok
    assert any(p.startswith("row 1: ") and why in p for p in verification.problems), verification.problems


def test_verify_log_exits_3_with_one_line_a_problem_for_a_nan(tmp_path, capsys):
    from engine.cli import main

    log = AuditLog(tmp_path)
    _append(log, 2)
    _raw(log, "DROP TRIGGER audit_no_update")
    _raw(log, """UPDATE audit SET detail = '{"i":NaN}' WHERE seq = 2""")
    assert main(["act", "verify-log", "--store", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "row 2: its detail is not JSON as Goodput writes it" in err and "Traceback" not in err


@pytest.mark.parametrize("name", [AUDIT_FILE, HEAD_FILE, AUDIT_FILE + "-wal"])
def test_a_fifo_in_place_of_the_logs_files_is_refused_not_waited_on(tmp_path, name):
    """Issue 45, 8: a FIFO at audit.sqlite or audit.head made verify-log, log and drain hang or crash."""
    import os

    log = AuditLog(tmp_path)
    if name != AUDIT_FILE:
        _append(log, 1)
    (tmp_path / name).unlink(missing_ok=True)
    os.mkfifo(tmp_path / name)
    code = (
        "import sys; from engine.act.audit import AuditLog, AuditEvent\n"
        "log = AuditLog(sys.argv[1]); v = log.verify(); print(v.ok, v.problems)\n"
        "try:\n"
        "    with log.writing() as w: w.append('a@b', AuditEvent.RECOMMENDED, 'x', {})\n"
        "except Exception as e: print(type(e).__name__, e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=20, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert "False" in done.stdout and "FIFO" in done.stdout
    assert "GoodputError" in done.stdout and "not a regular file" in done.stdout
