"""Inputs to ingestion: a file path or a (name, bytes) pair, so the dashboard's uploads need no temp files."""

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.errors import GoodputError


@dataclass
class Source:
    """One input: its name (for errors and as a fallback host name), its bytes, and when it was written.

    A file's bytes are read only when asked for: the fast DCGM reader hands Polars the path (memory-mapped),
    so a large scrape file is not copied into Python first.
    """

    name: str
    raw: bytes | None = None
    mtime: float | None = None  # seconds since the epoch; None for uploads and scrapes without a file
    host: str | None = None  # the host it came from, where known (a scraped endpoint)
    path: Path | None = None

    @property
    def data(self) -> bytes:
        if self.raw is None:
            self.raw = _read(self.path) if self.path is not None else b""
        return self.raw

    @property
    def readable(self) -> bytes | Path:
        """What a Polars reader takes: the path when the bytes are not in memory yet."""
        return self.raw if self.raw is not None or self.path is None else self.path

    @property
    def stem(self) -> str:
        """The host a log or scrape without host names came from: `node017` for `/logs/node017.dmesg.log`."""
        return self.host or Path(self.name).name.split(".")[0] or self.name


SourceLike = str | os.PathLike | tuple[str, bytes | str] | Source  # or an upload: `.name` and `.getvalue()`


def as_sources(items: Iterable[SourceLike]) -> list[Source]:
    """Check paths (keeping their modification time); wrap (name, bytes or text) pairs and uploads."""
    sources = []
    for item in items:
        if isinstance(item, Source):
            sources.append(item)
        elif isinstance(item, tuple):
            name, data = item
            if isinstance(data, str):
                data = data.encode("utf-8")
            if not isinstance(data, bytes | bytearray | memoryview):
                raise GoodputError(f"{name}: expected bytes or text, got {type(data).__name__}")
            sources.append(Source(str(name), bytes(data)))
        elif hasattr(item, "getvalue") and hasattr(item, "name"):  # an upload (Streamlit's UploadedFile)
            sources.append(Source(str(item.name), bytes(item.getvalue())))
        else:
            path = Path(item)
            if path.is_dir():
                raise GoodputError(f"{path}: is a folder, not a file")
            try:
                mtime = path.stat().st_mtime
                with path.open("rb"):  # readable now, so a missing permission is reported before any work
                    pass
            except OSError as err:
                raise GoodputError(f"{path}: cannot read ({err.strerror or err})") from err
            sources.append(Source(str(path), mtime=mtime, path=path))
    if not sources:
        raise GoodputError("no input files given")
    return sources


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise GoodputError(f"{path}: cannot read ({err.strerror or err})") from err


def decode(source: Source, *, strict: bool) -> str:
    """The text of a source. Strict (Prometheus text must be UTF-8): a bad byte is an error naming its line."""
    try:
        return source.data.decode("utf-8")
    except UnicodeDecodeError as err:
        if not strict:
            return source.data.decode("utf-8", errors="replace")
        line = source.data.count(b"\n", 0, err.start) + 1
        raise GoodputError(f"{source.name}, line {line}: not UTF-8 text (byte {err.start})") from err
