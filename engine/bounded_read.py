"""Reading an input file without trusting its size: at most a limit's worth of bytes is ever read.

`Path.read_bytes()` of a 50 GB file, of /dev/zero or of a pipe that never ends reads until memory runs out;
here a file is read up to one byte past its limit, and a file that has that byte is refused with a
GoodputError naming it and the limit, before the rest of it is looked at.
"""

import json
from collections.abc import Callable
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


def load_json(
    data: bytes | str,
    where: str,
    *,
    error: type[GoodputError] = GoodputError,
    object_hook: Callable[[dict], object] | None = None,
    invalid: str = "not valid JSON",
):
    """The JSON document of `data`, nested at most MAX_JSON_DEPTH deep, else an `error` naming `where`.

    Python's parser recurses: a document nested 100,000 deep stops it with a RecursionError (caught here), and
    one nested less than that passes it and is measured here without recursion."""
    try:
        document = json.loads(data, object_hook=object_hook)
    except RecursionError:
        raise error(
            f"{where}: nested deeper than Goodput's limit of {limits.MAX_JSON_DEPTH} (engine/limits.py)"
        ) from None
    except (ValueError, UnicodeDecodeError) as err:  # JSONDecodeError, and an integer of over 4,300 digits
        raise error(f"{where}: {invalid} ({err})") from None
    stack = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limits.MAX_JSON_DEPTH:
            raise error(
                f"{where}: nested deeper than Goodput's limit of {limits.MAX_JSON_DEPTH} (engine/limits.py)"
            )
        children = node.values() if isinstance(node, dict) else node
        stack.extend((v, depth + 1) for v in children if isinstance(v, dict | list))
    return document
