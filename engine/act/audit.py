"""The append-only, hash-chained audit log of acting on a cluster: every recommendation, approval, rejection,
command and Slurm answer, in `<store>/audit.sqlite`.

Why SQLite (the standard library's), not the store's DuckDB: the dashboard (many threads) and `goodput act`
processes append at the same time. In WAL mode SQLite lets readers read while one writer writes, and
`BEGIN IMMEDIATE` takes the one write lock across threads and processes, so the next seq and the previous hash
are read and the new row written under one lock: seqs have no gap and the chain never forks. A check-then-append
("approve X unless someone already has") is atomic the same way: AuditWriter.entries reads inside the lock.

What the chain proves. Each row's hash is the sha256 of its content and of the previous row's hash (row 1
follows GENESIS). Triggers refuse UPDATE and DELETE through SQL; the chain catches what goes around them
(dropping the triggers, editing the file): a changed row no longer matches its hash, a row deleted in the middle
leaves a seq gap. Deleting the last rows leaves a shorter chain that is valid on its own, hence the head file
`<store>/audit.head`: it is written (seq 0) before the log's first row is committed, after each commit the last
row's seq and hash are written there (atomically), and verify reports rows missing when the head names a row
beyond the last one, or a hash that is not that row's, and a cut when a log that holds rows has no head or a head
of seq 0 (deleting the last rows together with the head, or setting it back, no longer passes: issue 45). The head
is written after the commit, so a crash between the two leaves it behind the table, which is fine; it is never
ahead of it (a crash between the very first row and its head reads as a cut: rare, and said so). It only moves
along the chain: once it disagrees with the table it stays, and a missing head is not written afresh over rows it
never saw, so a truncated log that grows again keeps showing the truncation.

What is hashed is what is stored: a row's detail is kept as canonical JSON text, and verify refuses a detail
whose stored text is not exactly the canonical text of its values (a duplicate key, a NaN, another spelling), so
no row can be reworded in a way a reader of the stored text would see while its hash still holds.

What it cannot prove. Someone able to write both files can rewrite the chain from any row on and write a
matching head: nothing inside the store tells that from the truth. Only a copy of the head hash kept elsewhere
can, which is why `goodput act verify-log` prints it. Nor does the chain prove that `who` is who they say: that
is the login's job.
"""

import contextlib
import hashlib
import json
import logging
import os
import secrets
import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import polars as pl

from engine.errors import GoodputError
from engine.store.regular_files import read_regular, regular_or_absent

AUDIT_FILE = "audit.sqlite"
HEAD_FILE = "audit.head"
GENESIS = "0" * 64
MAX_DETAIL_BYTES = 64 * 1024
MAX_HEAD_BYTES = 4096  # {"seq": ..., "hash": ...} is under 100 bytes
BUSY_TIMEOUT_S = (
    60.0  # a writer waits this long for another's lock (a Slurm call is not made inside the lock)
)

_log = logging.getLogger(__name__)


class AuditEvent(StrEnum):
    RECOMMENDED = "recommended"
    APPROVED = "approved"
    REJECTED = "rejected"
    DRY_RUN = "dry_run"
    DONE = "done"
    FAILED = "failed"
    REFUSED = "refused"  # a guard (cap, breaker, name check) refused
    BREAKER_RESET = "breaker_reset"


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY, at TEXT NOT NULL, who TEXT NOT NULL,
       event TEXT NOT NULL, action_id TEXT, detail TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS audit_action ON audit (action_id)",
    """CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: its rows cannot be changed'); END""",
    """CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: its rows cannot be deleted'); END""",
)
_TRIGGERS = ("audit_no_update", "audit_no_delete")
# One fixed statement for every filter (no SQL built from strings); `at` is fixed-width ISO text, so it sorts.
_SELECT = """SELECT seq, at, who, event, action_id, detail, prev_hash, hash FROM audit
              WHERE (?1 IS NULL OR action_id = ?1) AND (?2 IS NULL OR at >= ?2) ORDER BY seq"""
_INSERT = """INSERT INTO audit (seq, at, who, event, action_id, detail, prev_hash, hash)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""
_LAST = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1"


@dataclass(frozen=True)
class AuditEntry:
    seq: int  # 1, 2, 3 ... with no gap
    at: datetime  # UTC, tz-aware
    who: str  # the login identity (email on the dashboard, OS user on the CLI), never empty
    event: str  # an AuditEvent value
    action_id: str | None
    detail: dict  # JSON-able: what (action, nodes, job), evidence, command argv, Slurm's answer ...
    prev_hash: str
    hash: str

    def as_json(self) -> dict:
        return {**asdict(self), "at": _iso(self.at)}


@dataclass(frozen=True)
class Verification:
    ok: bool
    rows: int
    head_hash: str  # the last row's hash (GENESIS when empty)
    problems: tuple[str, ...]  # each names the row by seq


class AuditWriter:
    """Appends inside AuditLog.writing(), under the write lock; its reads see the lock's state."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        self._open = True
        self.appended = False
        self.first_seq: int | None = None  # the seq of this writer's first row

    def entries(self, action_id: str | None = None, since: datetime | None = None) -> list[AuditEntry]:
        self._check_open()
        return [_entry(row) for row in _select(self._conn, action_id, since)]

    def append(self, who: str, event: AuditEvent | str, action_id: str | None, detail: dict) -> AuditEntry:
        self._check_open()
        if not isinstance(who, str) or not who.strip():
            raise GoodputError("audit who: empty; every audit entry names who acted")
        try:
            event = AuditEvent(event).value
        except ValueError:
            raise GoodputError(f"audit event: unknown {event!r} (known: {', '.join(AuditEvent)})") from None
        if action_id is not None and (not isinstance(action_id, str) or not action_id):
            raise GoodputError(f"audit action_id: {action_id!r} is neither None nor a non-empty text")
        detail_text = _detail_text(detail)
        detail = json.loads(detail_text)  # what is kept and read back ({1: x} becomes {"1": x})
        last = self._conn.execute(_LAST).fetchone()
        seq, prev_hash = (last[0] + 1, last[1]) if last else (1, GENESIS)
        at = datetime.now(UTC)
        digest = row_hash(seq, _iso(at), who, event, action_id, detail, prev_hash)
        self._conn.execute(
            _INSERT,
            (seq, _iso(at), who, event, action_id, detail_text, prev_hash, digest),
        )
        self.appended = True
        if self.first_seq is None:
            self.first_seq = seq
        return AuditEntry(seq, at, who, event, action_id, detail, prev_hash, digest)

    def _check_open(self) -> None:
        if not self._open:
            raise GoodputError("audit: an AuditWriter is only usable inside AuditLog.writing()")


class AuditLog:
    """The log in `<store_root>/audit.sqlite`. Holds no connection: every call opens its own, so one AuditLog
    may serve many threads."""

    def __init__(self, store_root: Path | str):
        self.root = Path(store_root)  # nothing is created until the first write

    @property
    def path(self) -> Path:
        return self.root / AUDIT_FILE

    @property
    def head_path(self) -> Path:
        return self.root / HEAD_FILE

    @contextlib.contextmanager
    def writing(self) -> Iterator[AuditWriter]:
        """BEGIN IMMEDIATE (the one write lock, waited for up to BUSY_TIMEOUT_S); commit on exit, roll back on an
        exception; then move the head file to the last row."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise GoodputError(f"{self.root}: the audit log cannot be made ({err.strerror or err})") from None
        new_log = not self._files_are_regular()
        if new_log and not self.head_path.exists():
            self._write_head_or_fail(0, GENESIS)  # before the first row: a log with rows always has a head
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            writer = AuditWriter(conn)
            try:
                conn.execute("PRAGMA journal_mode=WAL")  # kept in the file; readers go on while one writes
                conn.execute("PRAGMA synchronous=FULL")  # a committed row survives a power cut
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:  # also puts back triggers someone dropped
                    conn.execute(statement)
            except sqlite3.Error as err:  # a read-only store or file, a full disk, not a database
                raise GoodputError(f"{self.path}: cannot be written ({err})") from None
            try:
                yield writer
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                writer._open = False
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as err:
                raise GoodputError(f"{self.path}: cannot be written ({err})") from None
            if writer.appended:
                self._advance_head(conn, writer.first_seq)
        finally:
            conn.close()

    def _files_are_regular(self) -> bool:
        """Whether the log exists; a GoodputError when its file, SQLite's -wal and -shm beside it or the head is
        no regular file (SQLite would open a FIFO and wait forever)."""
        for extra in ("-wal", "-shm"):
            regular_or_absent(self.path.with_name(self.path.name + extra))
        regular_or_absent(self.head_path)
        return regular_or_absent(self.path)

    def _write_head_or_fail(self, seq: int, digest: str) -> None:
        try:
            _write_head(self.head_path, seq, digest)
        except OSError as err:
            raise GoodputError(f"{self.head_path}: cannot be written ({err.strerror or err})") from None

    def entries(self, action_id: str | None = None, since: datetime | None = None) -> list[AuditEntry]:
        """Oldest first; [] when the log does not exist yet."""
        with self._reading() as conn:
            return [] if conn is None else [_entry(row) for row in _select(conn, action_id, since)]

    def frame(self) -> pl.DataFrame:
        with self._reading() as conn:
            rows = [] if conn is None else _select(conn, None, None)
        data = [(seq, datetime.fromisoformat(at), *rest) for seq, at, *rest in rows]
        return pl.DataFrame(data, schema=FRAME_SCHEMA, orient="row")

    def verify(self) -> Verification:
        problems: list[str] = []
        head: tuple[int, str] | None = None
        try:  # the head before the rows: it is written after a commit, so it is never ahead of what is read next
            head = _read_head(self.head_path)
            head_read = True
        except GoodputError as err:
            head_read, problems = False, [str(err)]
        try:
            with self._reading() as conn:
                rows = [] if conn is None else _select(conn, None, None)
                triggers = set() if conn is None else {name for (name,) in conn.execute(_TRIGGER_NAMES)}
        except GoodputError as err:  # not a database any more: a problem to report, not a crash of verify-log
            return Verification(False, 0, GENESIS, (*problems, str(err)))
        problems += _chain_problems(rows) + (_head_problems(head, rows) if head_read else [])
        if conn is not None and not triggers >= set(_TRIGGERS):
            problems.append("the triggers refusing UPDATE and DELETE are missing: someone dropped them")
        return Verification(not problems, len(rows), rows[-1][7] if rows else GENESIS, tuple(problems))

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        """A read-only connection (never creates the file) in one read transaction: one snapshot per call.
        None when there is no log yet."""
        if not self._files_are_regular():
            yield None
            return
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            try:
                conn.execute("BEGIN")
                has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'audit'").fetchone()
            except sqlite3.Error as err:
                raise GoodputError(f"{self.path}: cannot be read ({err})") from None
            yield conn if has_table else None
        finally:
            conn.close()

    def _advance_head(self, conn: sqlite3.Connection, first_seq: int | None) -> None:
        """Under the write lock again, so that concurrent writers' heads land in commit order (an earlier head
        never overwrites a later one). A failure is logged, not raised: the rows are committed, and the next
        write moves the head. A head that is missing, or back at seq 0, over rows written before this writer's
        first (`first_seq`) is a cut, and stays one: it is not written afresh."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                head = _read_head(self.head_path)
                if (head is None or head[0] == 0) and (first_seq or 1) > 1:
                    return  # rows before this writer's, and no head of them: keep the cut for verify to say
                if head is not None and head[0] > 0:
                    named = conn.execute("SELECT hash FROM audit WHERE seq = ?", (head[0],)).fetchone()
                    if named is None or named[0] != head[1]:
                        return  # the head disagrees with the table: keep it, so verify keeps saying so
                seq, digest = conn.execute(_LAST).fetchone()
                if head is None or seq > head[0]:
                    _write_head(self.head_path, seq, digest)
            finally:
                conn.execute("ROLLBACK")
        except (OSError, sqlite3.Error, GoodputError) as err:
            _log.warning("audit: rows committed but %s not updated (%s)", self.head_path, err)


FRAME_SCHEMA = {"seq": pl.Int64, "at": pl.Datetime("us", "UTC")} | dict.fromkeys(
    ("who", "event", "action_id", "detail", "prev_hash", "hash"),
    pl.String,  # detail: its JSON text
)
_TRIGGER_NAMES = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit'"


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def row_hash(
    seq: int, at_text: str, who: str, event: str, action_id: str | None, detail: dict, prev_hash: str
) -> str:
    """The sha256 hex of the row's content with the previous row's hash: what chains the rows."""
    content = canonical_json([seq, at_text, who, event, action_id, detail, prev_hash])
    return hashlib.sha256(content.encode()).hexdigest()


def _iso(at: datetime) -> str:
    """Fixed-width UTC ISO text (always microseconds), so text order is time order."""
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def _detail_text(detail: object) -> str:
    if not isinstance(detail, dict):
        raise GoodputError(f"audit detail: must be a JSON object (a dict), not {type(detail).__name__}")
    try:
        text = canonical_json(detail)
        size = len(text.encode())
    except (TypeError, ValueError) as err:  # a set, a NaN, a circular dict, a lone surrogate ...
        raise GoodputError(f"audit detail: not JSON-able ({err})") from None
    if size > MAX_DETAIL_BYTES:
        raise GoodputError(f"audit detail: {size} bytes as JSON, over the limit of {MAX_DETAIL_BYTES}")
    return text


def _select(conn: sqlite3.Connection, action_id: str | None, since: datetime | None) -> list[tuple]:
    if since is not None and since.tzinfo is None:
        raise GoodputError(f"audit since: {since} has no time zone (give UTC)")
    return conn.execute(_SELECT, (action_id, None if since is None else _iso(since))).fetchall()


def _entry(row: tuple) -> AuditEntry:
    seq, at, who, event, action_id, detail, prev_hash, digest = row
    try:
        return AuditEntry(
            seq, datetime.fromisoformat(at), who, event, action_id, json.loads(detail), prev_hash, digest
        )
    except ValueError:
        raise GoodputError(f"audit row {seq}: unreadable (changed by hand? see verify-log)") from None


def _chain_problems(rows: list[tuple]) -> list[str]:
    problems = []
    expected, prev = 1, GENESIS
    for seq, at, who, event, action_id, detail_text, prev_hash, digest in rows:
        if seq != expected:
            span = f"row {expected}" if seq == expected + 1 else f"rows {expected}-{seq - 1}"
            problems.append(f"{span}: missing (seq jumps {expected - 1} -> {seq})")
        elif prev_hash != prev:
            before = "GENESIS" if seq == 1 else f"row {seq - 1}'s hash"
            problems.append(f"row {seq}: its prev_hash is not {before} (the chain is broken)")
        problems += _row_problems(seq, at, who, event, action_id, detail_text, prev_hash, digest)
        expected, prev = seq + 1, digest
    return problems


def _row_problems(seq, at, who, event, action_id, detail_text, prev_hash, digest) -> list[str]:
    """What is wrong with one row's own content: its stored detail must be the canonical JSON of its values (so
    the hash, over the values, covers the stored text), and the hash must be the content's."""
    try:
        detail = _strict_json(detail_text)
    except (TypeError, ValueError) as err:
        return [f"row {seq}: its detail is not JSON as Goodput writes it ({err}: changed)"]
    if canonical_json(detail) != detail_text:
        return [f"row {seq}: its stored detail is not the text its hash covers (reworded: changed)"]
    try:
        if row_hash(seq, at, who, event, action_id, detail, prev_hash) == digest:
            return []
    except (TypeError, ValueError):  # a field that is no text any more
        pass
    return [f"row {seq}: its hash does not match its content (changed)"]


def _strict_json(text: str) -> object:
    """JSON as canonical_json writes it can be: no NaN or infinity, no key twice in an object."""

    def no_constant(name: str) -> None:
        raise ValueError(f"{name} is no JSON value")

    def no_twice(pairs: list[tuple[str, object]]) -> dict:
        keys = [key for key, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(
                f"a key twice in one object ({sorted(k for k in keys if keys.count(k) > 1)[0]!r})"
            )
        return dict(pairs)

    if not isinstance(text, str):
        raise TypeError("not text")
    return json.loads(text, parse_constant=no_constant, object_pairs_hook=no_twice)


def _head_problems(head: tuple[int, str] | None, rows: list[tuple]) -> list[str]:
    if not rows:
        return [] if head is None or head[0] == 0 else _beyond(head, 0)
    if head is None:
        return [
            f"the head file {HEAD_FILE} is missing, yet the log holds {len(rows)} rows: rows may have been cut"
            " from its end (compare the head hash kept elsewhere)"
        ]
    if head[0] == 0:
        return [
            f"the head file {HEAD_FILE} says no row was written, yet the log holds {len(rows)} rows: rows may"
            " have been cut from its end and the head set back (or Goodput stopped between the very first row"
            " and its head); compare the head hash kept elsewhere"
        ]
    head_seq, head_hash = head
    last_seq = rows[-1][0]
    if head_seq > last_seq:
        return _beyond(head, last_seq)
    named = next((row for row in rows if row[0] == head_seq), None)
    if named is None:
        return [f"row {head_seq}: missing, though the head file names it"]
    if named[7] != head_hash:
        return [f"row {head_seq}: its hash is not the head file's (rows from {head_seq} on were rewritten)"]
    return []  # at the last row, or behind it (a crash between a commit and the head's write)


def _beyond(head: tuple[int, str], last_seq: int) -> list[str]:
    return [f"rows after {last_seq} are missing: the head file says {head[0]} rows"]


def _read_head(path: Path) -> tuple[int, str] | None:
    try:
        raw = read_regular(path, MAX_HEAD_BYTES)
    except GoodputError as err:
        raise GoodputError(f"the head file {path.name} cannot be read ({err})") from None
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        seq, digest = data["seq"], data["hash"]
    except (ValueError, KeyError, TypeError) as err:
        raise GoodputError(f"the head file {path.name} cannot be read ({err})") from None
    if not isinstance(seq, int) or not isinstance(digest, str):
        raise GoodputError(f'the head file {path.name} is not {{"seq": int, "hash": text}}')
    return seq, digest


def _write_head(path: Path, seq: int, digest: str) -> None:
    """Temp file, fsync, rename, fsync the folder: the head is the old one or the new one, never half of one."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    try:
        with open(temp, "x", encoding="utf-8") as handle:
            json.dump({"seq": seq, "hash": digest}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
