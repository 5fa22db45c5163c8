"""Stragglers of a synchronous training job from its op-level timeline: the what-if slowdown of ByteDance's
OSDI'25 study ("Understanding Stragglers in Large Model Training Using What-if Analysis"), its attribution to
workers, data-parallel ranks and stages, and what kind of slowness it is.

    report = analyse(layout(ops))      # ops: one row per operation per worker per step
    report.slowdown, report.waste, report.persistent_straggler, report.kind

- slowdown S = mean simulated step time with the recorded durations / mean simulated step time with every
  operation at its job-wide typical duration (engine.analysis.pipeline_sim; the pipeline's and collectives'
  dependencies respected, launch gaps left out on both sides). As in the study, the typical duration is one
  per kind of op across every step, worker and stage: the mean for computes and other local ops, the median
  of the transfer time (the wait for a slow peer left out) for communication. A stage that is slower than the
  others (an unbalanced partition) therefore counts as slowdown, as in the study's trace ST (S = 1.179).
- waste = 1 - 1/S: the share of the job's time that the slowness cost.
- attribution (the study's Eq. 4): the S of a what-if in which only that worker, data-parallel rank or stage
  keeps its recorded durations and everything else runs at the typical pace. Above 1: it slows the job.
- persistent_straggler: one worker that causes the slowdown in most steps (the worker whose attribution is
  the largest in at least half of the steps, explaining at least half of S - 1 and at least twice what its
  stage's other workers do). None when the slowness is a stage's or moves around.
- kind: none, worker (a persistent straggler: look at its host), stage_imbalance (a stage's work is
  heavier: the model's partition, not hardware), sequence_imbalance (microbatches of unequal length: the
  data, not hardware) or transient (slow workers that change from step to step: fail-slow episodes,
  contention).
"""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from engine.analysis.pipeline_sim import Durations, schedule, simulate
from engine.analysis.step_timeline import Timeline

# Below this waste (1 %), a job is not slowed enough for its attribution to say anything.
MIN_WASTE = 0.01
# A persistent straggler is the cause in at least this share of steps and explains this share of S - 1.
MOST_STEPS = 0.5
MOST_OF_SLOWDOWN = 0.5
# Its stage's other workers explain at most this share of what it explains.
PEER_SHARE = 0.5
# Threads for the what-ifs of one stage each (pure numpy, deterministic whatever the order they finish in).
THREADS = 2
COMM_SCOPES = ("dp", "ends", "all")
KINDS = {
    "none": "no slowdown worth naming (waste under 1 %)",
    "worker": "one worker is slow in most steps: a hardware or host fault is likely (check its GPU, host and links)",
    "stage_imbalance": "one pipeline stage does more work than the others (an unbalanced partition of the model"
    " across stages): not a hardware fault",
    "sequence_imbalance": "microbatches of unequal length (sequence lengths) make different workers wait in"
    " different steps: not a hardware fault",
    "transient": "different workers are slow in different steps: transient fail-slow episodes or contention",
}


@dataclass(frozen=True)
class Straggler:
    """The worker that slows the job in most steps."""

    dp_rank: int
    stage: int
    slowdown: float  # its attribution: S with only this worker as recorded
    share_of_steps: float  # steps in which it is the largest cause


@dataclass(frozen=True)
class StragglerReport:
    slowdown: float
    waste: float
    steps: int
    dp: int
    stages: int
    microbatches: int
    step_time_s: float  # mean simulated step time, recorded durations
    ideal_step_time_s: float  # mean simulated step time, typical durations
    by_stage: tuple[float, ...]
    by_dp_rank: tuple[float, ...]
    by_worker: tuple[tuple[float, ...], ...]  # [dp_rank][stage]
    by_optype: dict[str, float]  # S with only that kind of op as recorded (the study's Eq. 2), largest first
    step_slowdown: tuple[float, ...]  # per step, in the order of `step_numbers`
    step_numbers: tuple[int, ...]
    persistent_straggler: Straggler | None
    stage_imbalance: float  # S with each stage's computes at that stage's typical duration: the stages' part
    kind: str
    ops: int
    ignored_ops: int

    @property
    def explanation(self) -> str:
        return KINDS[self.kind]

    @property
    def hardware_fault_suspected(self) -> bool:
        return self.kind in ("worker", "transient")

    def as_json(self) -> dict:
        """What `goodput stragglers --json` prints (less run_id)."""
        s = self.persistent_straggler
        return {
            "slowdown": self.slowdown,
            "waste": self.waste,
            "persistent_straggler": None
            if s is None
            else {
                "dp_rank": s.dp_rank,
                "stage": s.stage,
                "slowdown": s.slowdown,
                "share_of_steps": s.share_of_steps,
            },
            "kind": self.kind,
            "stage_imbalance_slowdown": self.stage_imbalance,
            "explanation": self.explanation,
            "hardware_fault_suspected": self.hardware_fault_suspected,
            "steps": self.steps,
            "dp": self.dp,
            "stages": self.stages,
            "workers": self.dp * self.stages,
            "microbatches": self.microbatches,
            "step_time_s": self.step_time_s,
            "ideal_step_time_s": self.ideal_step_time_s,
            "by_stage": {str(s): v for s, v in enumerate(self.by_stage)},
            "by_dp_rank": {str(d): v for d, v in enumerate(self.by_dp_rank)},
            "by_worker": [list(row) for row in self.by_worker],
            "by_optype": dict(self.by_optype),
            "by_step": {str(n): v for n, v in zip(self.step_numbers, self.step_slowdown, strict=True)},
            "ops": self.ops,
            "ignored_ops": self.ignored_ops,
        }


def recorded(timeline: Timeline) -> Durations:
    """The timeline's own durations, one entry a stage, in the simulation's layout."""

    def per_stage(
        a: np.ndarray,
    ) -> tuple[np.ndarray, ...]:  # [steps, dp, stages, x] -> stages x [x, steps, dp]
        moved = np.moveaxis(a, (2, 3), (0, 1))
        return tuple(np.ascontiguousarray(moved[s]) for s in range(a.shape[2]))

    def latency(a: np.ndarray) -> tuple[np.ndarray, ...]:  # none recorded: a zero that costs nothing to add
        if a.any():
            return per_stage(a)
        return tuple(np.broadcast_to(0.0, (a.shape[3], a.shape[0], a.shape[1])) for _ in range(a.shape[2]))

    return Durations(
        per_stage(timeline.forward),
        None if timeline.backward is None else per_stage(timeline.backward),
        latency(timeline.fwd_latency),
        latency(timeline.bwd_latency),
        per_stage(timeline.head),
        per_stage(timeline.tail),
    )


def typical(timeline: Timeline, durations: Durations) -> Durations:
    """Every op at its job-wide typical duration (module docstring), NaN where the worker has no such op."""
    shape = durations.forward[0].shape

    def flat(value: float, like: np.ndarray) -> np.ndarray:
        return np.broadcast_to(value, like.shape)

    forward = float(timeline.forward.mean())
    backward = None if timeline.backward is None else float(timeline.backward.mean())
    fwd_lat = _median_latency(timeline.fwd_latency[:, :, 1:])
    bwd_lat = _median_latency(timeline.bwd_latency[:, :, :-1])
    stages = timeline.stages
    return Durations(
        tuple(flat(forward, durations.forward[s]) for s in range(stages)),
        None if backward is None else tuple(flat(backward, durations.backward[s]) for s in range(stages)),
        tuple(flat(0.0 if s == 0 else fwd_lat, durations.fwd_latency[s]) for s in range(stages)),
        tuple(flat(0.0 if s == stages - 1 else bwd_lat, durations.bwd_latency[s]) for s in range(stages)),
        _typical_slots(timeline.head, timeline.head_slots, durations.head, shape),
        _typical_slots(timeline.tail, timeline.tail_slots, durations.tail, shape),
    )


def _median_latency(values: np.ndarray) -> float:
    return float(np.median(values)) if values.size else 0.0


def _typical_slots(
    values: np.ndarray, slots, per_stage: tuple[np.ndarray, ...], shape
) -> tuple[np.ndarray, ...]:
    """Each slot at the typical value of its kind of op (all slots of one optype together)."""
    by_optype: dict[str, float] = {}
    for optype in {slot.optype for slot in slots}:
        columns = [j for j, slot in enumerate(slots) if slot.optype == optype]
        chosen = values[..., columns]
        chosen = chosen[~np.isnan(chosen)]
        comm = slots[columns[0]].scope in COMM_SCOPES
        by_optype[optype] = float(np.median(chosen) if comm else chosen.mean()) if chosen.size else 0.0
    typ = np.array([by_optype[slot.optype] for slot in slots]).reshape(-1, 1, 1)
    return tuple(np.where(np.isnan(stage_values), np.nan, typ) for stage_values in per_stage)


def analyse(timeline: Timeline) -> StragglerReport:
    """The slowdown, its attribution and its kind (module docstring)."""
    rec = recorded(timeline)
    ideal = typical(timeline, rec)
    order = schedule(timeline.stages, timeline.microbatches, timeline.backward is not None)
    scopes = (tuple(s.scope for s in timeline.head_slots), tuple(s.scope for s in timeline.tail_slots))
    t_rec, _ = simulate(rec, scopes, order)
    t_ideal, ideal_sync = simulate(ideal, scopes, order)
    base = float(t_ideal.mean())
    slowdown = float(t_rec.mean()) / base
    by_dp, _ = simulate(rec, scopes, order, ideal=ideal_sync)  # [steps, dp]

    def only_stage(s: int) -> tuple[float, np.ndarray]:
        only_s = rec.mixed(ideal, {s})
        return simulate(only_s, scopes, order)[0].mean() / base, simulate(
            only_s, scopes, order, ideal=ideal_sync
        )[0]

    # numpy lets go of the GIL on large arrays: two threads use both cores of a small machine
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        stage_results = list(pool.map(only_stage, range(timeline.stages)))
    by_stage = [float(b) for b, _ in stage_results]
    per_worker = np.stack([w for _, w in stage_results], axis=2)  # [steps, dp, stages]
    del stage_results
    by_worker = per_worker.mean(axis=0) / base
    straggler = _persistent(per_worker, t_ideal, by_worker, slowdown)
    stage_typical = _stage_typical(timeline, ideal)
    stage_part = float(simulate(stage_typical, scopes, order)[0].mean()) / base
    kind = _kind(timeline, slowdown, straggler, stage_part)
    by_optype = {
        optype: float(simulate(durations, scopes, order)[0].mean()) / base
        for optype, durations in _optype_what_ifs(timeline, rec, ideal).items()
    }
    return StragglerReport(
        slowdown=slowdown,
        waste=1.0 - 1.0 / slowdown,
        steps=len(timeline.steps),
        dp=timeline.dp,
        stages=timeline.stages,
        microbatches=timeline.microbatches,
        step_time_s=float(t_rec.mean()),
        ideal_step_time_s=base,
        by_stage=tuple(by_stage),
        by_dp_rank=tuple(float(v) for v in by_dp.mean(axis=0) / base),
        by_worker=tuple(tuple(float(v) for v in row) for row in by_worker),
        by_optype=dict(sorted(by_optype.items(), key=lambda kv: -kv[1])),
        step_slowdown=tuple(float(v) for v in t_rec / t_ideal),
        step_numbers=tuple(int(v) for v in timeline.steps),
        persistent_straggler=straggler,
        stage_imbalance=stage_part,
        kind=kind,
        ops=timeline.ops,
        ignored_ops=timeline.ignored_ops,
    )


def _optype_what_ifs(timeline: Timeline, rec: Durations, ideal: Durations) -> dict[str, Durations]:
    """For each kind of op: the typical durations with that kind's recorded (send/recv pairs counted as
    forward-pp-comm and backward-pp-comm, as the study groups them)."""
    out = {"forward-compute": replace(ideal, forward=rec.forward)}
    if rec.backward is not None:
        out["backward-compute"] = replace(ideal, backward=rec.backward)
    if timeline.fwd_latency.any():
        out["forward-pp-comm"] = replace(ideal, fwd_latency=rec.fwd_latency)
    if timeline.bwd_latency.any():
        out["backward-pp-comm"] = replace(ideal, bwd_latency=rec.bwd_latency)
    for phase, slots in (("head", timeline.head_slots), ("tail", timeline.tail_slots)):
        for optype in dict.fromkeys(slot.optype for slot in slots):
            mask = np.array([slot.optype == optype for slot in slots]).reshape(-1, 1, 1)
            mixed = tuple(
                np.where(mask, r, i) for r, i in zip(getattr(rec, phase), getattr(ideal, phase), strict=True)
            )
            out[optype] = replace(out.get(optype, ideal), **{phase: mixed})
    return out


def _persistent(
    per_worker: np.ndarray, t_ideal: np.ndarray, by_worker: np.ndarray, slowdown: float
) -> Straggler | None:
    """The worker that is the largest cause in most steps, if it explains most of the slowdown and is slower
    than its stage's other workers (module docstring)."""
    n, dp, stages = per_worker.shape
    if slowdown < 1.0 / (1.0 - MIN_WASTE) or dp < 2:
        return None  # nothing to explain, or no peer to tell a slow worker from a slow stage
    flat = per_worker.reshape(n, dp * stages)
    top2 = np.partition(flat, -2, axis=1)[:, -2:] if flat.shape[1] > 1 else np.repeat(flat, 2, axis=1)
    excess = flat.max(axis=1) - t_ideal
    clear = (top2[:, 1] > top2[:, 0] * (1 + 1e-9)) & (excess > t_ideal * 1e-9)
    causes = np.where(clear, flat.argmax(axis=1), -1)
    counts = np.bincount(causes[causes >= 0], minlength=dp * stages)
    if counts.sum() == 0:
        return None
    worker = int(counts.argmax())
    d, s = divmod(worker, stages)
    share = float(counts[worker]) / n
    own = by_worker[d, s] - 1.0
    peers = np.delete(by_worker[:, s], d) - 1.0
    if share < MOST_STEPS or own < MOST_OF_SLOWDOWN * (slowdown - 1.0) or np.median(peers) > PEER_SHARE * own:
        return None
    return Straggler(dp_rank=d, stage=s, slowdown=float(by_worker[d, s]), share_of_steps=share)


def _stage_typical(timeline: Timeline, ideal: Durations) -> Durations:
    """The typical durations, except each stage's computes at the mean of that stage's own: what the slowdown
    would be if the only unevenness were between stages (an unbalanced partition of the model)."""

    def per_stage(values: np.ndarray | None, like: tuple[np.ndarray, ...] | None):
        if values is None or like is None:
            return None
        means = values.mean(axis=(0, 1, 3))
        return tuple(np.broadcast_to(float(means[s]), like[s].shape) for s in range(timeline.stages))

    return replace(
        ideal,
        forward=per_stage(timeline.forward, ideal.forward),
        backward=per_stage(timeline.backward, ideal.backward),
    )


def _kind(timeline: Timeline, slowdown: float, straggler: Straggler | None, stage_part: float) -> str:
    if slowdown < 1.0 / (1.0 - MIN_WASTE):
        return "none"
    if straggler is not None:
        return "worker"
    if stage_part - 1.0 >= MOST_OF_SLOWDOWN * (slowdown - 1.0):
        return "stage_imbalance"
    forward = timeline.forward  # [steps, dp, stages, microbatches]
    if timeline.microbatches > 1:
        within = float(forward.var(axis=3).mean())  # microbatch to microbatch, inside one worker's step
        # rank to rank inside one stage and step (the stages' own difference is the stage imbalance's)
        between = float(forward.mean(axis=3).var(axis=1).mean())
        if within > between:
            return "sequence_imbalance"
    return "transient"
