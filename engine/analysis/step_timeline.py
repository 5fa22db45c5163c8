"""An op-level timeline of a pipeline-parallel training job, laid out as dense arrays for the straggler
simulation (engine.analysis.stragglers).

The input is one row per operation per worker per step (`dp_rank, stage, step, optype, start_ts, duration`,
plus `mb_id` where known), as in the op-level traces ByteDance published with its OSDI'25 straggler study.
Each row becomes a number in one of these arrays, indexed [step, dp_rank, stage, ...]:

- `forward`, `backward`: compute of each microbatch (`forward-compute`, `backward-compute`);
- `fwd_latency`, `bwd_latency`: the transfer time of the activation (gradient) a stage receives for each
  microbatch, from the `*-recv` op and its `*-send` peer: the recv's end less the later of the two starts, so
  the time it spent waiting for a slow peer is not counted as transfer;
- `head`, `tail`: the ops a worker runs before its first compute and after its last (parameter all-gather,
  gradient reduce-scatter, the optimizer, ...), each a slot of the same kind in every worker, NaN where a
  worker has none (the embedding all-reduce of the first and last stages). A collective's number is its
  transfer time (its end less the latest start of its group), a local op's its duration.

Slots are ordered as the workers ran them. Ops that fall between a worker's computes and are neither compute
nor send/recv are left out and counted (`ignored_ops`). Everything is vectorised: no Python loop over rows.
"""

from dataclasses import dataclass

import numpy as np
import polars as pl

from engine import limits
from engine.errors import GoodputError

FORWARD = "forward-compute"
BACKWARD = "backward-compute"
P2P_RECV = {"forward-recv": "forward-send", "backward-recv": "backward-send"}
P2P = ("forward-send", "forward-recv", "backward-send", "backward-recv")
# Collectives and who waits for whom: "dp" the data-parallel ranks of one stage, "ends" the first and last
# stage of one data-parallel rank (tied embeddings), "all" every worker of the step. Any other op is local.
SYNC_SCOPES = {
    "params-all-gather": "dp",
    "grads-reduce-scatter": "dp",
    "separate-grads-all-reduce": "dp",
    "embedding-grads-all-reduce": "ends",
    "optimizer-clip-main-grad": "all",
}
REQUIRED = ("dp_rank", "stage", "step", "optype", "start_ts", "duration")
_WORKER = ("step", "dp_rank", "stage")
_PHASE = pl.Enum(["head", "tail", "between"])
_SCOPE = pl.Enum([*dict.fromkeys(SYNC_SCOPES.values()), "local"])


@dataclass(frozen=True)
class Slot:
    """A head or tail op of the same kind in every worker: its optype, its occurrence in the phase, and
    which workers it waits for (a SYNC_SCOPES value, or "local")."""

    optype: str
    occurrence: int
    scope: str


@dataclass(frozen=True)
class Timeline:
    """The dense form of an op timeline: durations in seconds, NaN where a worker has no such op."""

    steps: np.ndarray  # the step numbers, in order: index i of the first axis is step steps[i]
    dp: int
    stages: int
    microbatches: int
    forward: np.ndarray  # [steps, dp, stages, microbatches]
    backward: np.ndarray | None  # the same, or None for a timeline of forward computes only
    fwd_latency: np.ndarray  # [steps, dp, stages, microbatches]: into stage s from s - 1 (0 at stage 0)
    bwd_latency: np.ndarray  # into stage s from s + 1 (0 at the last stage)
    head: np.ndarray  # [steps, dp, stages, len(head_slots)]
    head_slots: tuple[Slot, ...]
    tail: np.ndarray
    tail_slots: tuple[Slot, ...]
    ops: int  # rows read
    ignored_ops: int  # ops between computes that are neither compute nor send/recv


def check_columns(frame: pl.DataFrame, where: str) -> None:
    """A GoodputError naming `where` and the first missing column."""
    for column in REQUIRED:
        if column not in frame.columns:
            raise GoodputError(f"{where}: no column {column!r} (need {', '.join(REQUIRED)})")


def layout(ops: pl.DataFrame, where: str = "step timeline") -> Timeline:
    """The dense Timeline of `ops` (columns REQUIRED, `mb_id` optional); a GoodputError naming `where` for a
    timeline that is not a complete pipeline (a worker missing from a step, a microbatch missing, ...)."""
    check_columns(ops, where)
    if ops.height == 0:
        raise GoodputError(f"{where}: no operations")
    frame, steps = _indexed(ops, where)
    n, dp, stages = steps.len(), int(frame["dp_rank"].max()) + 1, int(frame["stage"].max()) + 1
    compute = frame.filter(pl.col("optype").is_in([FORWARD, BACKWARD]))
    if compute.height == 0:
        raise GoodputError(f"{where}: no {FORWARD} operation")
    compute = compute.with_columns(_microbatch(compute))
    m = int(compute["mb"].max()) + 1
    limits.check_at_most(
        n * dp * stages * m, limits.MAX_STEP_TIMELINE_CELLS, f"{where}: steps x workers x microbatches"
    )
    try:
        durations, starts, has_backward = _dense(compute, (n, dp, stages, m), where)
    except GoodputError:
        _check_complete(frame, n, dp, stages, where)  # a whole worker missing from a step: say that instead
        raise
    del compute
    rest = frame.filter(~pl.col("optype").is_in([FORWARD, BACKWARD, *P2P]))
    first = last = np.empty(0)
    if rest.height and has_backward:  # each worker-step's computes' bounds, where other ops need placing
        first, last = starts.min(axis=(3, 4)), (starts + durations).max(axis=(3, 4))
    elif rest.height:
        first, last = starts[..., 0].min(axis=3), (starts[..., 0] + durations[..., 0]).max(axis=3)
    forward, backward = durations[..., 0], durations[..., 1] if has_backward else None
    del starts
    fwd_latency, bwd_latency = _latencies(frame, (n, dp, stages, m))
    del frame
    phased, between = _phases(rest, first.reshape(-1), last.reshape(-1), (dp, stages))
    del rest, first, last
    head, head_slots = _slots(
        phased.filter(pl.col("phase") == "head"), (n, dp, stages), ops.height, where, "before"
    )
    tail, tail_slots = _slots(
        phased.filter(pl.col("phase") == "tail"), (n, dp, stages), ops.height, where, "after"
    )
    return Timeline(
        steps=steps.to_numpy(),
        dp=dp,
        stages=stages,
        microbatches=m,
        forward=forward,
        backward=backward,
        fwd_latency=fwd_latency,
        bwd_latency=bwd_latency,
        head=head,
        head_slots=head_slots,
        tail=tail,
        tail_slots=tail_slots,
        ops=ops.height,
        ignored_ops=between,
    )


def _indexed(ops: pl.DataFrame, where: str) -> tuple[pl.DataFrame, pl.Series]:
    """The rows with typed columns, an end time and `si`, the step's index (0 for the first step), and the
    step numbers in order."""
    frame = ops.select(
        pl.col("dp_rank").cast(pl.Int64),
        pl.col("stage").cast(pl.Int64),
        pl.col("step").cast(pl.Int64),
        pl.col("optype").cast(pl.String),
        pl.col("start_ts").cast(pl.Float64),
        pl.col("duration").cast(pl.Float64),
        (pl.col("mb_id").cast(pl.Int64) if "mb_id" in ops.columns else pl.lit(None, pl.Int64)).alias("mb_id"),
    )
    checks = {
        "dp_rank": (pl.col("dp_rank") < 0) | pl.col("dp_rank").is_null(),
        "stage": (pl.col("stage") < 0) | pl.col("stage").is_null(),
        "step": pl.col("step").is_null(),
        "optype": pl.col("optype").is_null(),
        "start_ts": pl.col("start_ts").is_null() | ~pl.col("start_ts").is_finite(),
        "duration": (pl.col("duration") < 0) | pl.col("duration").is_null() | ~pl.col("duration").is_finite(),
    }
    found = frame.select(**{k: v.fill_null(True).any() for k, v in checks.items()}).row(0, named=True)
    for column, bad in found.items():
        if bad:  # only now find which row: the common case reads each column once
            row = int(frame.select(checks[column].fill_null(True).arg_max()).item())
            raise GoodputError(f"{where}: row {row + 1}: column {column!r} is missing or invalid")
    dp_max, stage_max = int(frame["dp_rank"].max()), int(frame["stage"].max())
    limits.check_at_most(dp_max + 1, limits.MAX_CLUSTER_GPUS, f"{where}: column 'dp_rank' (largest + 1)")
    limits.check_at_most(stage_max + 1, limits.MAX_PIPELINE_STAGES, f"{where}: column 'stage' (largest + 1)")
    steps = _step_numbers(frame["step"])
    limits.check_at_most(steps.len(), limits.MAX_TIMELINE_STEPS, f"{where}: steps")
    contiguous = int(steps[-1]) - int(steps[0]) + 1 == steps.len()
    index = (
        (pl.col("step") - int(steps[0]))
        if contiguous
        else pl.col("step").replace_strict(
            steps, pl.int_range(steps.len(), eager=True), return_dtype=pl.Int64
        )
    )
    frame = frame.with_columns(index.alias("si"), (pl.col("start_ts") + pl.col("duration")).alias("end_ts"))
    cells = steps.len() * (dp_max + 1) * (stage_max + 1)
    limits.check_at_most(cells, limits.MAX_STEP_TIMELINE_CELLS, f"{where}: steps x dp ranks x stages")
    return frame, steps


def _step_numbers(step: pl.Series) -> pl.Series:
    """The distinct step numbers, in order: counted over their range where it is short (a pass over the
    rows), else hashed."""
    low, high = int(step.min()), int(step.max())
    if high - low < min(step.len(), limits.MAX_TIMELINE_STEPS):
        present = np.bincount((step - low).to_numpy(), minlength=high - low + 1) > 0
        return pl.Series("step", np.flatnonzero(present) + low, dtype=pl.Int64)
    return step.unique().sort()


def _check_complete(frame: pl.DataFrame, n: int, dp: int, stages: int, where: str) -> None:
    """Every worker (dp_rank x stage) in every step: a synchronous job has no step without one of them. Found
    from the workers the rows name (sorted), not from a grid of every worker: the rows may name far more."""
    flat = ((frame["si"] * dp + frame["dp_rank"]) * stages + frame["stage"]).unique().sort()
    first = _first_absent(flat.to_numpy(), n * dp * stages)
    if first is not None:
        si, rest = divmod(first, dp * stages)
        step = frame.filter(pl.col("si") == si)["step"]
        name = int(step[0]) if step.len() else si
        raise GoodputError(
            f"{where}: step {name} has no operation of dp_rank {rest // stages}, stage {rest % stages}"
            f" ({dp} dp ranks x {stages} stages expected in every step)"
        )


def _first_absent(present: np.ndarray, size: int) -> int | None:
    """The smallest of 0 .. size - 1 that `present` (distinct, sorted, each in that range) lacks, or None."""
    gaps = np.flatnonzero(present != np.arange(present.size))
    if gaps.size:
        return int(gaps[0])
    return present.size if present.size < size else None


def _microbatch(compute: pl.DataFrame) -> pl.Expr:
    """Each compute's microbatch: `mb_id` where given (>= 0), else its order among the worker's computes of
    the same kind in the step."""
    order = pl.col("start_ts").rank("ordinal").over([*_WORKER, "optype"]).cast(pl.Int64) - 1
    if compute["mb_id"].is_null().all() or (compute["mb_id"] < 0).all():
        return order.alias("mb")
    return pl.when(pl.col("mb_id") >= 0).then(pl.col("mb_id")).otherwise(order).alias("mb")


def _dense(
    compute: pl.DataFrame, shape: tuple[int, int, int, int], where: str
) -> tuple[np.ndarray, np.ndarray, bool]:
    """`duration` and `start_ts` of the computes at [si, dp_rank, stage, mb, forward 0 / backward 1], and
    whether there are backwards; every cell exactly once (backwards: all or none), else a GoodputError.

    The grid's size comes from numbers the input names (the largest step, rank, stage and microbatch), but a
    complete timeline has exactly one forward a cell: the grid is made only once the rows fill it, each cell
    once. Two rows naming microbatches 0 and 99,999,999 are refused from the rows alone (they were a 2.1 GB
    count)."""
    n, dp, stages, m = shape
    cells = n * dp * stages * m
    kind = (compute["optype"] == BACKWARD).cast(pl.Int64)
    cell = ((compute["si"] * dp + compute["dp_rank"]) * stages + compute["stage"]) * m + compute["mb"]
    backwards = int(kind.sum())
    has_backward = backwards > 0
    if compute.height - backwards != cells or backwards not in (0, cells):
        _grid_error(cell, kind, shape, has_backward, where)
    flat = (cell * 2 + kind).to_numpy()
    seen = np.zeros(cells * 2, np.bool_)  # as many rows as cells: a cell twice leaves another empty
    seen[flat] = True
    if int(np.count_nonzero(seen)) != compute.height:
        _grid_error(cell, kind, shape, has_backward, where)
    del seen
    out, starts = np.empty(cells * 2), np.empty(cells * 2)
    out[flat] = compute["duration"].to_numpy()
    starts[flat] = compute["start_ts"].to_numpy()
    return out.reshape(*shape, 2), starts.reshape(*shape, 2), has_backward


def _grid_error(
    cell: pl.Series, kind: pl.Series, shape: tuple[int, int, int, int], has_backward: bool, where: str
) -> None:
    """The error for the first cell (in grid order) whose forward (or backward) is missing or twice, found from
    the cells the rows name."""
    n, dp, stages, m = shape
    counts = (
        pl.DataFrame({"cell": cell, "kind": kind})
        .group_by("cell")
        .agg(forward=(pl.col("kind") == 0).sum(), backward=(pl.col("kind") == 1).sum())
        .sort("cell")
    )
    wrong = (pl.col("forward") != 1) | ((pl.col("backward") != 1) if has_backward else pl.lit(False))
    candidates = counts.filter(wrong).head(1)
    absent = _first_absent(counts["cell"].to_numpy(), n * dp * stages * m)
    if absent is not None and (candidates.height == 0 or absent < candidates["cell"][0]):
        cell_index, what, how = absent, 0, "missing"
    else:
        row = candidates.row(0, named=True)
        cell_index = row["cell"]
        what = 0 if row["forward"] != 1 else 1
        how = "twice" if row[("forward", "backward")[what]] > 1 else "missing"
    rest, mb = divmod(cell_index, m)
    rest, stage = divmod(rest, stages)
    si, rank = divmod(rest, dp)
    raise GoodputError(
        f"{where}: {(FORWARD, BACKWARD)[what]} of microbatch {mb} is {how} at step index {si}, dp_rank {rank},"
        f" stage {stage} (every worker runs each of the {m} microbatches once a step)"
    )


def _latencies(frame: pl.DataFrame, shape: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The transfer time into each stage for each microbatch: the k-th recv of a stage pairs with the k-th
    send of its upstream peer (stage - 1 forward, stage + 1 backward); 0 where no send/recv was recorded."""
    n, dp, stages, m = shape
    worker = ["si", "dp_rank", "stage"]
    p2p = frame.filter(pl.col("optype").is_in(P2P)).select(*worker, "optype", "start_ts", "end_ts")
    out = []
    for recv, send, delta in (("forward-recv", "forward-send", -1), ("backward-recv", "backward-send", 1)):
        latency = np.zeros(shape)
        recvs = p2p.filter(pl.col("optype") == recv).drop("optype")
        recvs = recvs.with_columns(
            k=pl.Series(_occurrence(recvs, worker))
        )  # the worker's k-th recv of the step
        sends = p2p.filter(pl.col("optype") == send)
        sends = sends.select(
            "si",
            "dp_rank",
            (pl.col("stage") - delta).alias("stage"),
            pl.Series("k", _occurrence(sends, worker)),
            pl.col("start_ts").alias("send_start"),
        )
        pairs = recvs.join(sends, on=["si", "dp_rank", "stage", "k"], how="inner").filter(pl.col("k") < m)
        if pairs.height:
            transfer = (pl.col("end_ts") - pl.max_horizontal("start_ts", "send_start")).clip(lower_bound=0.0)
            pairs = pairs.with_columns(transfer.alias("duration"))
            flat = (
                ((pairs["si"] * dp + pairs["dp_rank"]) * stages + pairs["stage"]) * m + pairs["k"]
            ).to_numpy()
            latency.reshape(-1)[flat] = pairs["duration"].to_numpy()
        out.append(latency)
    return out[0], out[1]


def _phases(
    rest: pl.DataFrame, first: np.ndarray, last: np.ndarray, workers: tuple[int, int]
) -> tuple[pl.DataFrame, int]:
    """The non-compute, non-send/recv ops (`rest`) before the worker's first compute starts (phase head) or after
    its last ends (tail), with their occurrence in the phase and the number the simulation uses (transfer time
    for a collective, duration otherwise); and the count of those in between, left out. `first`, `last`: flat
    [step, dp, stage].

    Only the columns used are kept, the phase and scope are Enums, not strings, and places in a group come from a
    sort (_occurrence), not a window: 6.4M head and tail ops took 2.1 GB here, now 0.6 GB."""
    dp, stages = workers
    worker = ["si", "dp_rank", "stage"]  # si numbers the steps as `step` does: the same partitions
    cell = ((rest["si"] * dp + rest["dp_rank"]) * stages + rest["stage"]).to_numpy()
    rest = rest.select(*worker, "optype", "start_ts", "end_ts", "duration").with_columns(
        first_start=pl.Series(first[cell]), last_end=pl.Series(last[cell])
    )
    del cell
    # a microsecond, or the rounding of a float32 time stamp (ByteDance's traces: 4 us at 43 s)
    eps = pl.max_horizontal(pl.lit(1e-6), pl.col("last_end").abs() * 2e-7)
    phase = (
        pl.when(pl.col("start_ts") < pl.col("first_start") - eps)
        .then(pl.lit("head"))
        .when(pl.col("start_ts") >= pl.col("last_end") - eps)
        .then(pl.lit("tail"))
        .otherwise(pl.lit("between"))
        .cast(_PHASE)
    )
    rest = rest.select(pl.exclude("first_start", "last_end"), phase.alias("phase"))
    between = int((rest["phase"] == "between").sum())
    rest = rest.filter(pl.col("phase") != "between")  # ranks and groups below are within a phase
    # the kinds of op as numbers, for the groups below (grouping by the names hashes each name for each group)
    rest = rest.with_columns(pl.col("optype").cast(pl.Categorical).to_physical().alias("kind"))
    rest = rest.with_columns(
        k=pl.Series(_occurrence(rest, [*worker, "phase", "kind"])),
        position=pl.Series(_occurrence(rest, [*worker, "phase"])),
        scope=pl.col("optype").replace_strict(SYNC_SCOPES, default="local", return_dtype=_SCOPE),
    )
    group = {
        "dp": ["si", "stage", "phase", "kind", "k"],
        "ends": ["si", "dp_rank", "phase", "kind", "k"],
        "all": ["si", "phase", "kind", "k"],
    }
    value = pl.col("duration")
    for scope, keys in group.items():
        transfer = (pl.col("end_ts") - pl.col("start_ts").max().over(keys)).clip(lower_bound=0.0)
        value = pl.when(pl.col("scope") == scope).then(transfer).otherwise(value)
    return rest.with_columns(value.alias("value")).drop("end_ts", "duration", "kind"), between


def _occurrence(frame: pl.DataFrame, keys: list[str]) -> np.ndarray:
    """Each row's place (0, 1, ...) among the rows of its `keys` in order of start_ts, ties in row order: what
    `rank("ordinal").over(keys) - 1` gives, from one stable sort. The window made a group for each worker, phase
    and kind of op: 6.4M ops in 1.6M groups took 1.7 GB, the sort ~50 bytes a row."""
    n = frame.height
    if n == 0:
        return np.zeros(0, np.int64)
    columns = [frame[key].to_physical().to_numpy() for key in keys]
    order = np.lexsort(
        (frame["start_ts"].to_numpy(), *columns)
    )  # the last key sorts first; the sort is stable
    first = np.zeros(n, np.bool_)  # where a group starts, in sorted order
    first[0] = True
    for column in columns:
        ranked = column[order]
        first[1:] |= ranked[1:] != ranked[:-1]
        del ranked
    starts = np.flatnonzero(first)
    place = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    out = np.empty(n, np.int64)
    out[order] = place
    return out


def _slots(
    rows: pl.DataFrame, shape: tuple[int, int, int], ops: int, where: str, when: str
) -> tuple[np.ndarray, tuple[Slot, ...]]:
    """The [steps, dp, stages, slots] array of a phase (ops `when` compute: before or after) and its slots, in
    the order the workers ran them. Its cells are bounded by the `ops` read (MAX_PHASE_CELLS_PER_OP a row)
    before it is made: a kind of op in one worker is a column in all of them."""
    n, dp, stages = shape
    if rows.height == 0:
        return np.full((n, dp, stages, 0), np.nan), ()
    order = (
        rows.group_by("optype", "k", "scope")
        .agg(pl.col("position").mean().alias("position"), pl.col("start_ts").mean().alias("at"))
        .sort("position", "at", "optype", "k")
        .with_row_index("slot")
    )
    limits.check_at_most(
        order.height, limits.MAX_PHASE_SLOTS, "step timeline: kinds of op before or after compute"
    )
    rows = rows.join(order.select("optype", "k", pl.col("slot").cast(pl.Int64)), on=["optype", "k"])
    count = order.height
    limits.check_at_most(
        n * dp * stages * count,
        limits.MAX_STEP_TIMELINE_CELLS,
        "step timeline: steps x workers x kinds of op",
    )
    limits.check_at_most(
        n * dp * stages * count,
        limits.MAX_PHASE_CELLS_PER_OP * ops,
        f"{where}: steps x workers x kinds of op {when} compute ({n:,} x {dp * stages:,} x {count};"
        f" at most MAX_PHASE_CELLS_PER_OP = {limits.MAX_PHASE_CELLS_PER_OP} for each of the {ops:,} ops read)",
    )
    out = np.full(n * dp * stages * count, np.nan)
    flat = (((rows["si"] * dp + rows["dp_rank"]) * stages + rows["stage"]) * count + rows["slot"]).to_numpy()
    out[flat] = rows["value"].to_numpy()
    slots = tuple(Slot(o, int(k), s) for o, k, s in order.select("optype", "k", "scope").iter_rows())
    return out.reshape(n, dp, stages, count), slots
