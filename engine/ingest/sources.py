"""Inputs to ingestion: a file path or a (name, bytes) pair, so the dashboard's uploads need no temp files.

Whatever reads a source gets at most engine/limits.py MAX_INPUT_BYTES: a larger file, a device that never
ends (/dev/zero) or compressed bytes that inflate past it are a GoodputError naming the source, raised before
the bytes are held. gzip, zlib and zstd input is inflated here (engine/ingest/inflate.py), never by Polars.
"""

import io
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from engine import limits
from engine.errors import GoodputError
from engine.ingest.inflate import compression_of, inflate


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
    _checked: bool = field(default=False, init=False, repr=False, compare=False)  # raw is plain and in bounds

    @property
    def data(self) -> bytes:
        """The plain bytes (inflated if they came compressed), at most MAX_INPUT_BYTES of them."""
        if not self._checked:
            self.raw = self._load()
            self._checked = True
        return self.raw

    @property
    def readable(self) -> bytes | Path:
        """What a Polars reader takes: the path of a plain regular file in bounds (Polars maps it, nothing is
        copied), else the checked bytes. Never a compressed file: Polars would inflate it without a limit."""
        if self._checked or self.path is None or not self.path.is_file():
            return self.data
        size = _size(self.path)
        if size > limits.MAX_INPUT_BYTES or compression_of(_head(self.path)) is not None:
            return self.data  # the bounded read or the inflation refuses it, or hands back plain bytes
        return self.path

    def _load(self) -> bytes:
        raw = self.raw
        if raw is None and self.path is not None and not self.path.is_file():
            raw = _read(self.path)  # a pipe or device can be read once only: bounded, then taken as bytes
        if raw is not None:
            kind = compression_of(raw[:4])
            if kind is not None:
                return inflate(self.name, kind, lambda: io.BytesIO(raw))
            _check_size(self.name, len(raw))
            return raw
        if self.path is None:
            return b""
        kind = compression_of(_head(self.path))
        if kind is not None:
            return inflate(self.name, kind, lambda: _open(self.path))
        return _read(self.path)

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


def _open(path: Path):
    try:
        return path.open("rb")
    except OSError as err:
        raise GoodputError(f"{path}: cannot read ({err.strerror or err})") from err


def _head(path: Path) -> bytes:
    with _open(path) as file:
        return file.read(4)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as err:
        raise GoodputError(f"{path}: cannot read ({err.strerror or err})") from err


def _read(path: Path) -> bytes:
    """At most one byte past the limit, so a device or pipe that never ends is refused, not read forever."""
    if path.is_file():
        _check_size(str(path), _size(path))  # a large regular file is refused before a byte of it is read
    try:
        with _open(path) as file:
            data = file.read(limits.MAX_INPUT_BYTES + 1)
    except OSError as err:
        raise GoodputError(f"{path}: cannot read ({err.strerror or err})") from err
    _check_size(str(path), len(data))
    return data


def _check_size(name: str, size: int) -> None:
    if size > limits.MAX_INPUT_BYTES:
        raise GoodputError(
            f"{name}: more than {limits.MAX_INPUT_BYTES:,} bytes, over Goodput's limit"
            " (engine/limits.py MAX_INPUT_BYTES)"
        )


def decode(source: Source, *, strict: bool) -> str:
    """The text of a source. Strict (Prometheus text must be UTF-8): a bad byte is an error naming its line."""
    try:
        return source.data.decode("utf-8")
    except UnicodeDecodeError as err:
        if not strict:
            return source.data.decode("utf-8", errors="replace")
        line = source.data.count(b"\n", 0, err.start) + 1
        raise GoodputError(f"{source.name}, line {line}: not UTF-8 text (byte {err.start})") from err
