"""Paths the user names for writing, checked before any work starts (the CLI's `--output` and `--store`).

A command that fails only after minutes of simulation, or that writes through a symbolic link onto a file it
was never asked to touch, or replaces /dev/null, is worse than one that refuses at once. So:

- `check_output(text, force=...)`: a new regular file in an existing, writable folder; an existing regular file
  only with `force`; never a folder, a device, a FIFO, a socket or a symbolic link (even with `force`: a link is
  not followed, so its target cannot be clobbered).
- `check_store(root)`: the store is a folder (or can be made one) that this process can write.

Writability is proven by making and removing a temporary entry, not by `os.access`: root passes every access
check, yet cannot create files under /proc or on a read-only mount.
"""

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from engine.errors import GoodputError

PROBE_PREFIX = ".goodput-probe-"


def check_output(text: str | os.PathLike, *, force: bool = False, flag: str = "--output") -> Path:
    """The output path, if a file may be written there now; else a GoodputError naming why."""
    raw = os.fspath(text)
    if not raw.strip():
        raise GoodputError(f"{flag}: empty; give the name of a file to write")
    path = Path(raw)
    if raw.endswith(os.sep):
        raise GoodputError(f"{flag}: {raw} names a folder; give the name of a file to write inside it")
    check_target(path, force=force, flag=flag)
    folder = path.parent  # followed if a link: a folder reached through a link is fine
    if not _folder_or_none(folder, flag):
        raise GoodputError(f"{flag}: folder {folder} does not exist")
    _probe(folder, flag)
    return path


def check_target(path: Path, *, force: bool, flag: str = "--output") -> None:
    """What is at `path` now (not following a link) may be replaced by a new regular file."""
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there (a bad folder is the caller's to report)
        return
    except OSError as err:
        raise GoodputError(f"{flag}: {path} cannot be used ({err.strerror})") from None
    if stat.S_ISLNK(mode):
        raise GoodputError(
            f"{flag}: {path} is a symbolic link; Goodput does not write through links (give the"
            " path of a regular file)"
        )
    if stat.S_ISDIR(mode):
        raise GoodputError(f"{flag}: {path} is a folder; give the name of a file to write inside it")
    if not stat.S_ISREG(mode):
        raise GoodputError(
            f"{flag}: {path} is not a regular file (a device, FIFO or socket); Goodput writes only"
            " regular files"
        )
    if not force:
        raise GoodputError(f"{flag}: {path} already exists; add --force to replace it")


def check_store(root: Path, flag: str = "--store") -> None:
    """The store at `root` can take a new run: every existing part of it is a folder this process can write."""
    if _folder_or_none(root, flag):
        runs = root / "runs"
        _probe(runs if _folder_or_none(runs, flag) else root, flag)
        return
    ancestor = root.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise GoodputError(f"{flag}: {root} cannot be made: {ancestor} is not a folder")
    _probe(ancestor, flag, subject=f"{ancestor} (where {root} would be made)")


def _folder_or_none(path: Path, flag: str) -> bool:
    """True for an existing folder, False for nothing there; anything else is a GoodputError."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        raise GoodputError(f"{flag}: {path} cannot be a folder (a file is on its path)") from None
    except OSError as err:
        raise GoodputError(f"{flag}: {path} cannot be used ({err.strerror})") from None
    if not stat.S_ISDIR(mode):
        raise GoodputError(f"{flag}: {path} is not a folder")
    return True


def _probe(folder: Path, flag: str, subject: str | None = None) -> None:
    """Create and remove a temporary folder in `folder`: the one sure test that it can be written."""
    try:
        probe = tempfile.mkdtemp(prefix=PROBE_PREFIX, dir=folder)
    except OSError as err:
        raise GoodputError(f"{flag}: {subject or folder} cannot be written ({err.strerror or err})") from None
    with contextlib.suppress(OSError):
        os.rmdir(probe)
