"""Named random streams (engine/sim/streams.py): each is a fixed child of the seed, so adding a stream or
drawing more from one never shifts another's draws."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from engine.sim.streams import Stream, generator


def test_streams_have_distinct_numbers_in_order():
    numbers = [int(s) for s in Stream]
    assert numbers == list(range(len(Stream)))  # a new stream takes the next number; none is reused


@given(seed=st.integers(0, 2**62), extra=st.integers(0, 8))
def test_a_stream_is_the_seeds_child_of_its_number_however_many_there_are(seed, extra):
    children = np.random.SeedSequence(seed).spawn(len(Stream) + extra)  # more streams than today
    for stream in Stream:
        expected = np.random.default_rng(children[stream]).random(3)
        assert np.array_equal(generator(seed, stream).random(3), expected)


def test_drawing_from_one_stream_leaves_the_others_as_they_were():
    seed = 7
    alone = generator(seed, Stream.REPAIR).random(5)
    busy = generator(seed, Stream.FAILURES)
    busy.random(10_000)  # a part that draws much more than before
    assert np.array_equal(generator(seed, Stream.REPAIR).random(5), alone)
    assert not np.array_equal(generator(seed, Stream.FAILURES).random(5), alone)  # streams differ
