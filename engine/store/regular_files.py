"""Files of the store read only when they are regular files: never through a symbolic link, never waiting.

Opening a FIFO for reading waits for a writer forever, and a library that opens a path itself (SQLite, DuckDB,
tomllib over read_text) cannot be told not to: a FIFO at `settings.toml`, `audit.sqlite`, `audit.head` or a run's
`.duckdb.wal` hung `goodput act`, `goodput runs` and the pages that read them. So each such path is looked at
with lstat first (a link is not followed), and a file read here is opened with O_NOFOLLOW | O_NONBLOCK and
checked with fstat on the descriptor it got, so nothing swapped in between is read either.
"""

import os
import stat
from pathlib import Path

from engine.errors import GoodputError


def kind_of(mode: int, otherwise: str = "not a regular file") -> str:
    """What a file that is not a regular file is, in words (`otherwise` for one that is)."""
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISDIR, "a folder"),
    )
    return next((words for test, words in kinds if test(mode)), otherwise)


def regular_or_absent(path: Path) -> bool:
    """Whether `path` is a regular file (True) or absent (False); a GoodputError naming what it is else, so a
    library never opens it."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as err:
        raise GoodputError(f"{path}: cannot be looked at ({err.strerror or err})") from None
    if not stat.S_ISREG(mode):
        raise GoodputError(f"{path}: {kind_of(mode)}, not a regular file: it is never opened")
    return True


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of the regular file `path` (None when absent), at most `max_bytes`; a GoodputError for a link,
    a FIFO, a device or a folder, an unreadable file or one larger than `max_bytes`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as err:  # ELOOP: a symbolic link; EACCES; ENXIO ...
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = 0
        what = kind_of(mode, "") if mode and not stat.S_ISREG(mode) else ""
        reason = f"{what}, not a regular file" if what else (err.strerror or str(err))
        raise GoodputError(f"{path}: cannot be read ({reason})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise GoodputError(f"{path}: {kind_of(mode)}, not a regular file: it is never read")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise GoodputError(f"{path}: cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise GoodputError(f"{path}: larger than {max_bytes:,} bytes; is it the right file?")
    return b"".join(chunks)
