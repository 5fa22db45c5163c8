"""The named random streams of a simulation: each process draws from its own child of the run's seed.

    rng = generator(scenario.simulation.seed, Stream.FAILURES)

A stream is a fixed child of `np.random.SeedSequence(seed)` (its spawn key is the stream's number), so a stream
draws the same numbers whatever other streams exist or how much they draw: adding a process (a new member at the
end) or changing one part's settings never shifts another part's draws. The numbers are part of every stored
run's identity (the same scenario and seed give the same tables, tests/test_same_seed_same_tables.py): never
renumber or reuse one; a new stream takes the next number.
"""

from enum import IntEnum

import numpy as np


class Stream(IntEnum):
    """Who draws from which child of the seed."""

    TOPOLOGY = 0  # GPU UUIDs and other names of the cluster (engine.fabric.topology)
    FAILURES = 1  # unexpected failure arrivals (engine.sim.failures)
    PLANNED = 2  # planned stops of the flagship job
    REPAIR = 3  # diagnosis and repair times (engine.sim.repair)
    RESEARCH = 4  # research jobs on the rest of the cluster (engine.sim.research)
    TELEMETRY = 5  # GPU samples and XID events (engine.telemetry)
    NETWORK = 6  # the fabric's load and faults (engine.fabric.traffic)
    FAULTS = 7  # bad hosts, their extra failures, diagnosis misses, repair outcomes (engine.sim.bad_hosts)
    SLOW = 8  # fail-slow episodes, a child a cause (engine.sim.slow)
    FIT = (
        9  # a twin's run: its fitted keys drawn from their laws before it simulates (engine.twin.uncertainty)
    )
    BURSTS = 10  # correlated failures of several hosts at once (engine.sim.failures.draw_bursts)


def seed_sequence(seed: int, stream: Stream) -> np.random.SeedSequence:
    """The stream's child of the run's seed: what `SeedSequence(seed).spawn(n)[stream]` gives for any n."""
    return np.random.SeedSequence(seed, spawn_key=(int(stream),))


def generator(seed: int, stream: Stream) -> np.random.Generator:
    return np.random.default_rng(seed_sequence(seed, stream))
