"""Compressed inputs, inflated as a stream and never past engine/limits.py MAX_INPUT_BYTES.

Polars' CSV reader quietly inflates gzip, zlib and zstd input in memory (a 393 KB zstd file became 3 GB), and a
scraped answer may come compressed too, so an input's first bytes are looked at before anything reads it.
Compressed input is inflated here in two passes: the first only counts (nothing is kept, so a bomb is refused
having cost CPU but no memory), the second keeps what is now known to fit. Compression inside compression is
refused: Polars would inflate the inner layer, unchecked.
"""

import gzip
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO

import pyarrow as pa

from engine import limits
from engine.errors import GoodputError

CHUNK_BYTES = 1 << 20
# The first bytes of each format Polars inflates by itself (polars-io sniffs exactly these).
MAGIC = {
    "zstd": (b"\x28\xb5\x2f\xfd",),
    "gzip": (b"\x1f\x8b",),
    "zlib": (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda"),
}

Opener = Callable[[], BinaryIO]  # a fresh stream of the compressed bytes, from their start


def compression_of(head: bytes) -> str | None:
    """`zstd`, `gzip` or `zlib` when `head` (an input's first 4 bytes) starts like one, else None."""
    for kind, prefixes in MAGIC.items():
        if head.startswith(prefixes):
            return kind
    return None


def inflate(name: str, kind: str, open_raw: Opener, limit: int | None = None) -> bytes:
    """The inflated bytes of `name`; a GoodputError naming it when they would pass `limit` or are corrupt."""
    limit = limits.MAX_INPUT_BYTES if limit is None else limit
    total = 0
    for chunk in _chunks(name, kind, open_raw):
        total += len(chunk)
        if total > limit:
            raise GoodputError(
                f"{name}: {kind} data inflates past {limit:,} bytes, over Goodput's limit"
                " (engine/limits.py MAX_INPUT_BYTES); nothing was read"
            )
    data = b"".join(_chunks(name, kind, open_raw))
    inner = compression_of(data[:4])
    if inner:
        raise GoodputError(f"{name}: {inner} data inside {kind} data; inflate the outer layer first")
    return data


def _chunks(name: str, kind: str, open_raw: Opener) -> Iterator[bytes]:
    try:
        with open_raw() as raw:
            yield from _READERS[kind](raw)
    except (OSError, EOFError, zlib.error, pa.ArrowException) as err:
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise GoodputError(f"{name}: corrupt or truncated {kind} data ({first_line})") from err


def _zstd(raw: BinaryIO) -> Iterator[bytes]:
    # readinto one reused buffer: `stream.read` took a fresh chunk from Arrow's allocator each time, and under
    # load the allocator held on to freed chunks (peak RSS 575 MiB on a refused 2 GiB bomb, 97 MiB when idle).
    stream = pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd")
    buffer = bytearray(CHUNK_BYTES)
    while size := stream.readinto(buffer):
        yield bytes(memoryview(buffer)[:size])


def _gzip(raw: BinaryIO) -> Iterator[bytes]:
    # GzipFile reads members one after another: a bomb of many concatenated members is counted whole.
    stream = gzip.GzipFile(fileobj=raw, mode="rb")
    while chunk := stream.read(CHUNK_BYTES):
        yield chunk


def _zlib(raw: BinaryIO) -> Iterator[bytes]:
    inflater = zlib.decompressobj()
    while not inflater.eof and (block := inflater.unconsumed_tail or raw.read(CHUNK_BYTES)):
        # max_length keeps each step's output to a chunk however well the input compresses
        if chunk := inflater.decompress(block, CHUNK_BYTES):
            yield chunk
    if not inflater.eof:
        raise EOFError("the stream ends before its end marker")


_READERS = {"zstd": _zstd, "gzip": _gzip, "zlib": _zlib}
