"""Compressed inputs, inflated as a stream and never past engine/limits.py MAX_INPUT_BYTES.

Polars' CSV reader quietly inflates gzip, zlib and zstd input in memory (a 393 KB zstd file became 3 GB), and a
scraped answer may come compressed too, so an input's first bytes are looked at before anything reads it.
Compressed input is inflated here in two passes: the first only counts (nothing is kept, so a bomb is refused
having cost CPU but no memory), the second keeps what is now known to fit. Compression inside compression is
refused: Polars would inflate the inner layer, unchecked.

`text_blocks` hands a reader the text of an input in blocks of whole lines (BLOCK_BYTES each, about), inflating
as it goes: a 1,000 MiB scrape inflated from 50 MB of gzip is never held whole, so a parser that keeps only
compact typed columns of each block (engine/ingest/dcgm.py) peaks at a small multiple of its output, not of the
text. A line longer than MAX_LINE_BYTES is refused as soon as it is seen.
"""

import gzip
import io
import queue
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO

import pyarrow as pa

from engine import limits
from engine.errors import GoodputError

CHUNK_BYTES = 1 << 20
# The text a block-wise reader is handed at once (whole lines): large enough that Polars' per-call overhead
# vanishes, small enough that a block's own working memory (~5x its bytes while split) stays ~100 MiB.
BLOCK_BYTES = 32 << 20
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
            raise _too_big(name, kind, limit)
    data = b"".join(_chunks(name, kind, open_raw))
    inner = compression_of(data[:4])
    if inner:
        raise GoodputError(f"{name}: {inner} data inside {kind} data; inflate the outer layer first")
    return data


def text_blocks(source, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, bytes]]:
    """(number of its first line, bytes) for each block of whole lines of `source` (engine/ingest/sources.py's
    Source), plain or inflated, at most MAX_INPUT_BYTES in all; the last block may lack its final newline.

    The next block is read (and inflated) in a thread while the caller parses this one: Polars lets go of the
    GIL, so on two cores reading costs no wall time. One block is read ahead, no more."""
    return _read_ahead(cut_lines(source.name, _plain_chunks(source), block_bytes))


_DONE = object()


def _read_ahead(blocks: Iterator) -> Iterator:
    """The items of `blocks`, produced one ahead in a thread; its exception is raised here, in order. Closing
    this generator (the caller stopped at an error) stops the thread before the next block."""
    ahead: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in blocks:
                while not stop.is_set():
                    try:
                        ahead.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                del item
                if stop.is_set():
                    return
            ahead.put((_DONE, None))
        except BaseException as err:  # handed to the caller, raised there
            ahead.put((_DONE, err))
        finally:
            blocks.close()

    thread = threading.Thread(target=produce, name="goodput-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, err = ahead.get()
            if err is not None:
                raise err
            if item is _DONE:
                return
            yield item
            del item
    finally:
        stop.set()
        while thread.is_alive():  # free a producer blocked on a full queue
            try:
                ahead.get_nowait()
            except queue.Empty:
                thread.join(timeout=0.05)


def _plain_chunks(source) -> Iterator[bytes]:
    """The plain bytes of a source in chunks: compressed input counted first, then inflated as it streams."""
    path, raw = source.path, source.raw
    if raw is None and path is not None and path.is_file():
        with _open_file(source.name, path) as file:
            kind = compression_of(file.read(4))
        if kind is not None:
            yield from _checked_stream(source.name, kind, lambda: _open_file(source.name, path))
            return
        _check_plain_size(source.name, _file_size(source.name, path))
        with _open_file(source.name, path) as file:
            while chunk := file.read(BLOCK_BYTES):  # a block at a time: one copy less than in chunks
                yield chunk
        return
    if raw is not None:  # plain once checked: inflated text never starts like compressed data
        kind = compression_of(raw[:4])
        if kind is not None:
            yield from _checked_stream(source.name, kind, lambda: io.BytesIO(raw))
            return
    data = source.data  # plain bytes in bounds (a pipe or device is read once, bounded)
    _check_plain_size(source.name, len(data))
    view = memoryview(data)
    for offset in range(0, len(view), CHUNK_BYTES):
        yield view[offset : offset + CHUNK_BYTES]


def _checked_stream(name: str, kind: str, open_raw: Opener) -> Iterator[bytes]:
    """Count the inflated bytes first (a bomb is refused having cost no memory), then stream them."""
    limit = limits.MAX_INPUT_BYTES
    total = 0
    for chunk in _chunks(name, kind, open_raw):
        total += len(chunk)
        if total > limit:
            raise _too_big(name, kind, limit)
    first = True
    for chunk in _chunks(name, kind, open_raw):
        if first and (inner := compression_of(chunk[:4])):
            raise GoodputError(f"{name}: {inner} data inside {kind} data; inflate the outer layer first")
        first = False
        yield chunk


def cut_lines(
    name: str, chunks: Iterator[bytes], block_bytes: int, too_long: Callable[[int], Exception] | None = None
) -> Iterator[tuple[int, bytes]]:
    """Blocks of at least `block_bytes` ending at a newline; a line past MAX_LINE_BYTES is refused on sight,
    with `too_long(line number)` where given (the block's reader words the lines it sees whole)."""
    held: list[bytes] = []
    size = 0
    line = 1  # the number of the first line held
    for chunk in chunks:
        held.append(chunk)
        size += len(chunk)
        if size < block_bytes:
            continue
        data = b"".join(held)
        cut = data.rfind(b"\n") + 1
        if cut:
            block, data = (data, b"") if cut == len(data) else (data[:cut], data[cut:])
            yield line, block
            line += block.count(b"\n")
            del block
        held, size = ([data], len(data)) if data else ([], 0)
        if size > limits.MAX_LINE_BYTES:
            if too_long is not None:
                raise too_long(line)
            raise GoodputError(
                f"{name}, line {line}: over {limits.MAX_LINE_BYTES:,} bytes in one line, over Goodput's"
                f" limit of {limits.MAX_LINE_BYTES:,} (engine/limits.py MAX_LINE_BYTES)"
            )
    if held or line == 1:
        yield line, b"".join(held)


def _open_file(name: str, path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as err:
        raise GoodputError(f"{name}: cannot read ({err.strerror or err})") from err


def _file_size(name: str, path) -> int:
    try:
        return path.stat().st_size
    except OSError as err:
        raise GoodputError(f"{name}: cannot read ({err.strerror or err})") from err


def _check_plain_size(name: str, size: int) -> None:
    if size > limits.MAX_INPUT_BYTES:
        raise GoodputError(
            f"{name}: more than {limits.MAX_INPUT_BYTES:,} bytes, over Goodput's limit"
            " (engine/limits.py MAX_INPUT_BYTES)"
        )


def _too_big(name: str, kind: str, limit: int) -> GoodputError:
    return GoodputError(
        f"{name}: {kind} data inflates past {limit:,} bytes, over Goodput's limit"
        " (engine/limits.py MAX_INPUT_BYTES); nothing was read"
    )


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
