"""`ahead(items)`: an iterator computed in a background thread a few items ahead of its consumer.

For tables produced block by block while the store writes them (a run's link_samples): DuckDB releases the GIL while
it inserts one block and NumPy while it computes the next, so on two cores the two overlap instead of taking turns.
"""

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_END = object()
_POLL_S = 0.1  # how often a producer waiting on a full queue checks whether the consumer has gone


def ahead(items: Iterable[T], depth: int = 2, *, name: str = "ahead") -> Iterator[T]:
    """`items` in order, computed by one thread that starts at the first `next` and runs at most `depth` items
    ahead (so at most `depth + 2` items are alive at once). An error raised computing an item is raised to the
    consumer at that item; a consumer that stops early (closing the iterator, or dropping it) stops the thread."""
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(entry: tuple) -> bool:
        while not stop.is_set():
            try:
                slots.put(entry, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        source = iter(items)
        try:
            for item in source:
                if not offer((item, None)):
                    return
            offer((_END, None))
        except BaseException as err:  # handed to the consumer, which raises it where the item was due
            offer((_END, err))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def consume() -> Iterator[T]:
        thread = threading.Thread(target=produce, name=name, daemon=True)
        thread.start()
        try:
            while True:
                item, err = slots.get()
                if item is _END:
                    if err is not None:
                        raise err
                    return
                yield item
        finally:
            stop.set()
            thread.join()

    return consume()
