"""Inputs to ingestion: a file path or a (name, bytes) pair, so the dashboard's uploads need no temp files."""

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.errors import GoodputError


@dataclass(frozen=True)
class Source:
    """One input: its name (for errors and as a fallback host name), its bytes, and when it was written."""

    name: str
    data: bytes
    mtime: float | None = None  # seconds since the epoch; None for uploads and scrapes without a file
    host: str | None = None  # the host it came from, where known (a scraped endpoint)

    @property
    def stem(self) -> str:
        """The host a log or scrape without host names came from: `node017` for `/logs/node017.dmesg.log`."""
        return self.host or Path(self.name).name.split(".")[0] or self.name


SourceLike = str | os.PathLike | tuple[str, bytes] | Source


def as_sources(items: Iterable[SourceLike]) -> list[Source]:
    """Read paths (keeping their modification time) and wrap (name, bytes) pairs."""
    sources = []
    for item in items:
        if isinstance(item, Source):
            sources.append(item)
        elif isinstance(item, tuple):
            name, data = item
            if not isinstance(data, bytes | bytearray | memoryview):
                raise GoodputError(f"{name}: expected bytes, got {type(data).__name__}")
            sources.append(Source(str(name), bytes(data)))
        else:
            path = Path(item)
            try:
                data = path.read_bytes()
                mtime = path.stat().st_mtime
            except IsADirectoryError as err:
                raise GoodputError(f"{path}: is a folder, not a file") from err
            except OSError as err:
                raise GoodputError(f"{path}: cannot read ({err.strerror or err})") from err
            sources.append(Source(str(path), data, mtime))
    if not sources:
        raise GoodputError("no input files given")
    return sources


def decode(source: Source, *, strict: bool) -> str:
    """The text of a source. Strict (Prometheus text must be UTF-8): a bad byte is an error naming its line."""
    try:
        return source.data.decode("utf-8")
    except UnicodeDecodeError as err:
        if not strict:
            return source.data.decode("utf-8", errors="replace")
        line = source.data.count(b"\n", 0, err.start) + 1
        raise GoodputError(f"{source.name}, line {line}: not UTF-8 text (byte {err.start})") from err
