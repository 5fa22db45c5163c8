"""Step times of a pipeline-parallel training job, simulated from its op durations (the what-if simulation of
ByteDance's OSDI'25 straggler study, written afresh for Goodput's dense timelines).

Each worker (dp_rank x stage) runs, every step: its head ops (parameter all-gather, ...), then its forward and
backward computes in the 1F1B order (Megatron's: stage s runs min(stages - s - 1, microbatches) forwards, then
alternates one forward and one backward, then the remaining backwards), then its tail ops (gradient
reduce-scatter, optimizer, ...). A forward of microbatch k on stage s starts when the stage is free and the
activation of stage s - 1 has arrived (its forward's end plus the transfer time); a backward likewise waits for
stage s + 1. A collective starts when the last worker of its group arrives (engine.analysis.step_timeline
SYNC_SCOPES) and lasts its transfer time. The step ends when the last worker finishes; every step starts at 0.

Every array is simulated at once for all steps and data-parallel ranks ([steps, dp] per op: the
"single-instruction, many-data" form); Python loops only over the ops of one worker's step. `alone` simulates
each data-parallel rank as if every other rank ran at the `ideal` pace (the attribution to one rank or worker).
"""

from dataclasses import dataclass

import numpy as np

_F, _B = 0, 1


@dataclass(frozen=True)
class Durations:
    """Op durations, one entry a stage: `forward[s]`, `backward[s]` [microbatches, steps, dp]; `fwd_latency[s]`,
    `bwd_latency[s]` the transfers into stage s; `head[s]`, `tail[s]` [slots, steps, dp] (NaN: no such op)."""

    forward: tuple[np.ndarray, ...]
    backward: tuple[np.ndarray, ...] | None
    fwd_latency: tuple[np.ndarray, ...]
    bwd_latency: tuple[np.ndarray, ...]
    head: tuple[np.ndarray, ...]
    tail: tuple[np.ndarray, ...]

    def mixed(self, other: "Durations", stages: set[int]) -> "Durations":
        """These durations on `stages`, `other`'s elsewhere (no copy: entries are shared)."""

        def pick(mine, theirs):
            return (
                None
                if mine is None
                else tuple(m if s in stages else t for s, (m, t) in enumerate(zip(mine, theirs, strict=True)))
            )

        return Durations(
            *(
                pick(getattr(self, f), getattr(other, f))
                for f in ("forward", "backward", "fwd_latency", "bwd_latency", "head", "tail")
            )
        )


@dataclass(frozen=True)
class SyncTimes:
    """What a normal simulation saw at each collective: the group's start, per slot of head and tail, for an
    `alone` simulation to meet (every other rank at this pace)."""

    head: tuple[np.ndarray, ...]
    tail: tuple[np.ndarray, ...]
    step_end: np.ndarray  # [steps]


def schedule(stages: int, microbatches: int, backward: bool) -> list[tuple[int, int, int]]:
    """(kind, stage, microbatch) of every compute in an order that respects the pipeline's dependencies."""
    per_stage = [_one_f_one_b(s, stages, microbatches, backward) for s in range(stages)]
    done: set[tuple[int, int, int]] = set()
    order: list[tuple[int, int, int]] = []
    cursor = [0] * stages
    while len(order) < sum(len(q) for q in per_stage):
        progressed = False
        for s in range(stages):
            while cursor[s] < len(per_stage[s]):
                kind, k = per_stage[s][cursor[s]]
                upstream = (_F, s - 1, k) if kind == _F else (_B, s + 1, k)
                if (kind == _F and s > 0 or kind == _B and s < stages - 1) and upstream not in done:
                    break
                done.add((kind, s, k))
                order.append((kind, s, k))
                cursor[s] += 1
                progressed = True
        if not progressed:  # cannot happen with 1F1B; a guard against an endless loop
            raise RuntimeError("pipeline schedule has a cycle")
    return order


def _one_f_one_b(stage: int, stages: int, microbatches: int, backward: bool) -> list[tuple[int, int]]:
    if not backward:
        return [(_F, k) for k in range(microbatches)]
    warmup = min(stages - stage - 1, microbatches)
    ops = [(_F, k) for k in range(warmup)]
    for i in range(microbatches - warmup):
        ops += [(_F, warmup + i), (_B, i)]
    return ops + [(_B, k) for k in range(microbatches - warmup, microbatches)]


def simulate(
    durations: Durations,
    scopes: tuple[tuple[str, ...], tuple[str, ...]],
    order: list[tuple[int, int, int]],
    ideal: SyncTimes | None = None,
) -> tuple[np.ndarray, SyncTimes]:
    """Step times [steps] (or [steps, dp] with `ideal`: each rank alone among ideal ones) and the sync times
    seen. `scopes` are the head's and tail's slot scopes."""
    stages = len(durations.forward)
    n, dp = durations.forward[0].shape[1:]
    t = np.zeros((stages, n, dp))
    t, head_sync = _phase(t, durations.head, scopes[0], None if ideal is None else ideal.head)
    t = _pipeline(durations, order, t)
    t, tail_sync = _phase(t, durations.tail, scopes[1], None if ideal is None else ideal.tail)
    if ideal is None:
        end = t.max(axis=(0, 2))
    else:
        end = np.maximum(t.max(axis=0), ideal.step_end[:, None])
    return end, SyncTimes(tuple(head_sync), tuple(tail_sync), end)


def _pipeline(durations: Durations, order: list[tuple[int, int, int]], ready: np.ndarray) -> np.ndarray:
    """When each stage's last compute ends [stages, steps, dp], from when its head ended (`ready`). Arrays are
    updated in place and recycled: a large timeline allocates nothing per op."""
    stages = ready.shape[0]
    last = ready  # the caller's own array, updated in place
    ends: dict[tuple[int, int, int], np.ndarray] = {}
    spare: list[np.ndarray] = []
    for kind, s, k in order:
        if kind == _F:
            duration, upstream, latency = durations.forward[s][k], (_F, s - 1, k), durations.fwd_latency[s][k]
        else:
            duration, upstream, latency = (
                durations.backward[s][k],
                (_B, s + 1, k),
                durations.bwd_latency[s][k],
            )
        arrival = ends.pop(upstream, None)
        if arrival is not None:
            if not _zero(latency):
                np.add(arrival, latency, out=arrival)
            np.maximum(last[s], arrival, out=last[s])
            spare.append(arrival)
        np.add(last[s], duration, out=last[s])
        if kind == _F and s < stages - 1 or kind == _B and s > 0:
            keep = spare.pop() if spare else np.empty_like(last[s])
            np.copyto(keep, last[s])
            ends[(kind, s, k)] = keep
    return last


def _zero(a: np.ndarray) -> bool:
    """True for a broadcast zero (no transfer recorded), without reading a whole array."""
    return all(stride == 0 for stride in a.strides) and a.flat[0] == 0.0


def _phase(
    t: np.ndarray,
    values: tuple[np.ndarray, ...],
    scopes: tuple[str, ...],
    ideal: tuple[np.ndarray, ...] | None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run the head or tail slots in order from `t` [stages, steps, dp]; a collective waits for its group (and,
    with `ideal`, for the ideal ranks' arrival at it). Returns the new `t` and each slot's group start."""
    seen = []
    for j, scope in enumerate(scopes):
        v = np.stack([values[s][j] for s in range(len(values))])
        has = ~np.isnan(v)
        if scope == "local":
            t = np.where(has, t + np.where(has, v, 0.0), t)
            seen.append(np.zeros(0))
            continue
        arrive = np.where(has, t, -np.inf)
        if scope == "dp":
            group = arrive if ideal is not None else arrive.max(axis=2, keepdims=True)
        elif scope == "ends":
            group = arrive.max(axis=0, keepdims=True)
        else:
            group = arrive.max(axis=0, keepdims=True)
            if ideal is None:
                group = group.max(axis=2, keepdims=True)
        if ideal is not None and scope != "ends":  # the tied embeddings wait inside one rank only
            group = np.maximum(group, ideal[j])
        seen.append(group)
        t = np.where(has, group + np.where(has, v, 0.0), t)
    return t, seen
