"""engine.store.prefetch.ahead: the items in order, errors where they were due, and no thread left behind."""

import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.store.prefetch import ahead


@given(st.lists(st.integers(), max_size=30), st.integers(min_value=1, max_value=4))
def test_ahead_yields_every_item_in_order(items, depth):
    assert list(ahead(items, depth)) == items


def test_an_error_computing_an_item_reaches_the_consumer_after_the_items_before_it():
    def source():
        yield 1
        yield 2
        raise ValueError("block 3: no route")

    got = []
    with pytest.raises(ValueError, match="block 3: no route"):
        for item in ahead(source()):
            got.append(item)
    assert got == [1, 2]


def test_it_computes_at_most_depth_items_ahead_and_a_consumer_that_stops_stops_the_thread():
    made = []
    closed = threading.Event()

    def source():
        try:
            for i in range(1_000):
                made.append(i)
                yield i
        finally:
            closed.set()

    items = ahead(source(), depth=2, name="test-ahead")
    assert next(items) == 0
    time.sleep(0.3)  # the thread fills the queue (2), holds one more it cannot hand over, and waits
    assert len(made) <= 1 + 2 + 1
    items.close()
    assert closed.is_set()
    assert not any(t.name == "test-ahead" for t in threading.enumerate())


def test_nothing_is_computed_before_the_first_item_is_asked_for():
    made = []

    def source():
        made.append(0)
        yield 0

    items = ahead(source())
    time.sleep(0.1)
    assert made == []
    assert list(items) == [0]
