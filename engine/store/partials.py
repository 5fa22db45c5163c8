"""The temporary files of store writers: made under an advisory lock, swept as soon as their writer is gone.

A writer first creates and locks (flock) `.partial-<stem>.<pid>.<token>.lock`, then writes
`.partial-<stem>.<pid>.<token>.duckdb` (and DuckDB's `.duckdb.wal`) beside it, renames the finished file into
place, and removes the lock file last. The kernel drops a flock when its holder dies, SIGKILL included, so the
next use of the store can tell a dead writer's leftovers (their lock file can be locked) from a live writer's
files (locked: never touched), and removes the former at once rather than after a day.

Why a separate lock file and not a lock on the DuckDB file itself: DuckDB refuses to open an existing empty
file, so a writer could only lock its data file after DuckDB had created it, and a sweep in that moment would
remove a live writer's file.
"""

import contextlib
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from engine.errors import GoodputError
from engine.units import SECONDS_PER_DAY

PARTIAL_PREFIX = ".partial-"
LOCK_SUFFIX = ".lock"
DATA_SUFFIXES = (".duckdb", ".duckdb.wal")
# A partial file with no lock file beside it was written by a Goodput from before the locks, whose liveness
# cannot be told: it is removed only once this old, as then.
UNLOCKED_STALE_S = SECONDS_PER_DAY
_ATTEMPTS = 8


@contextlib.contextmanager
def locked_partial(folder: Path, stem: str) -> Iterator[Path]:
    """A fresh partial path in `folder` (not yet created), locked for the block's duration.

    On leaving the block, whatever is left at the path (and DuckDB's WAL beside it) is removed, then the lock
    file: a caller that succeeded has renamed the partial into place by then, so only a failure leaves files
    to remove.
    """
    for _ in range(_ATTEMPTS):
        base = folder / f"{PARTIAL_PREFIX}{stem}.{os.getpid()}.{secrets.token_hex(6)}"
        lock = base.with_name(base.name + LOCK_SUFFIX)
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        if _lock_still_named(fd, lock):
            break
        os.close(fd)  # a sweep took the fresh lock file for a dead writer's and removed it: take another name
    else:
        raise GoodputError(f"{folder}: could not take a lock file for a new run in {_ATTEMPTS} tries")
    data = base.with_name(base.name + DATA_SUFFIXES[0])
    try:
        yield data
    finally:
        for leftover in _data_files(base):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        os.close(fd)  # the lock is released last, when nothing of this writer is left to sweep


def _lock_still_named(fd: int, lock: Path) -> bool:
    """Lock `fd` and say whether `lock` still names it: a sweeper that opened the file a moment after it was
    created may have locked it first, taken it for a dead writer's, and unlinked it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    try:
        return os.stat(lock).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def sweep(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the partial files of writers that are gone; return what was removed.

    Safe beside live writers in any process: a lock file is removed, with its partial files, only while this
    sweep holds its lock, which a live writer never lets go. Files this process may not open or remove (a
    read-only store) are left alone.
    """
    try:
        names = [p for p in folder.iterdir() if p.name.startswith(PARTIAL_PREFIX)]
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    removed: list[Path] = []
    for lock in (p for p in names if p.name.endswith(LOCK_SUFFIX)):
        removed += _sweep_one(lock)
    now = time.time() if now is None else now
    for path in names:
        base = _base_of(path)
        if base is None or base.with_name(base.name + LOCK_SUFFIX).exists():
            continue  # a lock file's partials: handled above (a live writer's stay)
        try:
            if now - path.stat().st_mtime > UNLOCKED_STALE_S:
                path.unlink()
                removed.append(path)
        except OSError:  # gone meanwhile, or not ours to remove
            continue
    return removed


def _sweep_one(lock: Path) -> list[Path]:
    try:
        # flock works on a read-only descriptor; O_NOFOLLOW and O_NONBLOCK: a symbolic link or a FIFO named like
        # a lock file is neither followed nor waited on (opening a FIFO blocks until a writer comes)
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # removed by its writer meanwhile, or not ours to open
        return []
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return []
    removed: list[Path] = []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return []  # a live writer
        base = lock.with_name(lock.name[: -len(LOCK_SUFFIX)])
        for path in [*_data_files(base), lock]:  # the lock file last, as a writer does
            try:
                path.unlink()
                removed.append(path)
            except FileNotFoundError:
                continue
            except OSError:
                return removed  # a read-only store: leave the rest for a sweep that may write
    finally:
        os.close(fd)
    return removed


def _data_files(base: Path) -> list[Path]:
    return [base.with_name(base.name + suffix) for suffix in DATA_SUFFIXES]


def _base_of(path: Path) -> Path | None:
    """`.partial-x.1.ab` for `.partial-x.1.ab.duckdb` or `.duckdb.wal`; None for a lock or a stranger."""
    for suffix in sorted(DATA_SUFFIXES, key=len, reverse=True):
        if path.name.endswith(suffix):
            return path.with_name(path.name[: -len(suffix)])
    return None
