"""Reading an input file without trusting its size: at most a limit's worth of bytes is ever read.

`Path.read_bytes()` of a 50 GB file, of /dev/zero or of a pipe that never ends reads until memory runs out;
here a file is read up to one byte past its limit, and a file that has that byte is refused with a
GoodputError naming it and the limit, before the rest of it is looked at.
"""

from pathlib import Path

from engine import limits
from engine.errors import GoodputError


def read_bounded(path: str | Path, what: str, limit: int | None = None, source: str | None = None) -> bytes:
    """The bytes of `path` (at most `limit`, default MAX_INPUT_BYTES); `what` says what the file is for the
    error (e.g. "the trace"), `source` how to name it (default: the path)."""
    limit = limits.MAX_INPUT_BYTES if limit is None else limit
    source = source or str(path)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise GoodputError(f"{source}: cannot read {what}: {err.strerror or err}") from None
    if len(data) > limit:
        raise GoodputError(
            f"{source}: {what} is larger than Goodput's limit of {limit:,} bytes (engine/limits.py)"
        )
    return data
