"""Sweeps and Monte-Carlo: many summary-only simulations over a grid of scenario values times seeds.

One run of a rare-event process misleads (a lucky month has no rack failure), so every figure here comes from
several seeds, reported as a mean and a 5-95 % band (`bands`).

Seeds: the k-th of N runs of a grid point uses `simulation.seed + k` (k = 0..N-1), so `--seeds 1` reproduces
`goodput simulate` of the same scenario, and every grid point sees the same seeds (common random numbers: two
points differ by their settings, not by their luck). A task is (grid point, seed) and its result depends on
nothing else, so any executor, any worker count and any chunking give the same rows in the same order.

Executors: `LocalExecutor` (processes on this machine, the default) and `RayExecutor` (a Ray cluster, or Ray
on this machine; the optional extra goodput[ray]). Each task runs a summary-only simulation (engine.twin.simulate).
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from typing import Protocol

import polars as pl

from engine import limits
from engine.analysis.ledger import LOSSES
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.scenario import Scenario

Progress = Callable[[float], None]
# What a run of a seed simulates, given its grid point's scenario: a twin's runs draw its fitted keys first
# (engine.twin.uncertainty.FitUncertainty.scenario_for); by default the scenario itself.
Draw = Callable[[Scenario, int], Scenario]

# The columns of one result row, beside the varied keys (see `result_row`).
METRICS: tuple[str, ...] = (
    "ettr",
    "mttf_hours",
    "interruptions",
    "unexpected",
    "planned",
    "closed_form_ettr",
    "lost_gpu_hours",
    "lost_work_gpu_hours",
    "restart_gpu_hours",
    "checkpoint_gpu_hours",
    "waiting_for_spares_gpu_hours",
    "degraded_gpu_hours",
    "slowdown_gpu_hours",  # fail-slow hosts (engine.sim.slow); 0 in runs without them
    "lost_usd",
    "standby_usd",
    "ettr_with_network",
    "time_to_train_days",  # null unless the scenario sets training.work and the job did it in time
)
INT_METRICS = frozenset({"interruptions", "unexpected", "planned"})
BAND_QUANTILES = (0.05, 0.95)  # the 5-95 % band of the issue


@dataclass(frozen=True)
class Axis:
    """One varied key and its values, spelled as given (`"30m"` stays `"30m"`)."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Point:
    """One grid point: the varied keys' values as given, and the validated scenario they make."""

    index: int
    given: dict[str, str]
    scenario: Scenario


def parse_vary(text: str) -> Axis:
    """`KEY=V1,V2,...` of `--vary` (the key and values are checked against the scenario by `grid`)."""
    key, sep, values_text = text.partition("=")
    key = key.strip()
    if values_text.count(",") >= limits.MAX_SWEEP_RUNS:  # before the values are split
        raise GoodputError(
            f"--vary {key}: {values_text.count(',') + 1:,} values, over Goodput's limit of "
            f"{limits.MAX_SWEEP_RUNS:,} runs (engine/limits.py)"
        )
    values = tuple(v.strip() for v in values_text.split(","))
    if not sep or not key:
        raise GoodputError(
            f"--vary {text!r}: expected KEY=V1,V2,..., e.g. training.checkpoint_interval=5m,10m"
        )
    if any(v == "" for v in values):
        raise GoodputError(f"--vary {key}: an empty value in {values_text!r}")
    if len(set(values)) != len(values):
        raise GoodputError(f"--vary {key}: a value is given twice in {values_text!r}")
    return Axis(key, values)


def grid(base: Scenario, axes: Sequence[Axis]) -> list[Point]:
    """Every combination of the axes' values over `base`, each validated now, before anything runs.

    The first axis varies slowest. A bad value raises one GoodputError naming the key and the value.
    """
    keys = [a.key for a in axes]
    if len(set(keys)) != len(keys):
        raise GoodputError(f"--vary: a key is varied twice ({', '.join(keys)})")
    check_runs(axes, 1)
    for axis in axes:  # check each value once on its own, so the error names the culprit, not a combination
        for value in axis.values:
            _build(base, {axis.key: value})
    combos: list[dict[str, str]] = [{}]
    for axis in axes:
        combos = [{**c, axis.key: v} for c in combos for v in axis.values]
    return [Point(i, given, _build(base, given)) for i, given in enumerate(combos)]


def _build(base: Scenario, given: dict[str, str]) -> Scenario:
    try:
        return base.with_overrides([f"{k}={v}" for k, v in given.items()])
    except GoodputError as err:
        shown = ", ".join(f"{k}={v}" for k, v in given.items())
        raise GoodputError(f"--vary {shown}: {str(err).removeprefix('--set: ')}") from err


def check_runs(axes: Sequence[Axis], seeds: int) -> int:
    """The runs of a sweep (grid points x seeds), counted before anything is built; a GoodputError naming
    the axes and seeds when they pass MAX_SWEEP_RUNS."""
    points = math.prod(len(a.values) for a in axes)
    runs = points * max(seeds, 1)
    if runs > limits.MAX_SWEEP_RUNS:
        shape = " x ".join([*(f"{len(a.values)} values of {a.key}" for a in axes), f"{seeds:,} seeds"])
        raise GoodputError(
            f"--vary/--seeds: {shape} make {runs:,} runs, over Goodput's limit of "
            f"{limits.MAX_SWEEP_RUNS:,} (engine/limits.py)"
        )
    return runs


def seeds_of(scenario: Scenario, n: int) -> list[int]:
    """The seeds of n runs of `scenario`: simulation.seed, simulation.seed + 1, ..."""
    if n < 1:
        raise GoodputError(f"--seeds: must be at least 1, got {n}")
    limits.check_at_most(n, limits.MAX_SWEEP_RUNS, "--seeds")
    first = scenario.simulation.seed
    limits.check_at_most(
        first + n - 1, limits.MAX_SEED, f"--seeds: the last seed (simulation.seed + {n - 1})"
    )
    return list(range(first, first + n))


def sweep(
    base: Scenario,
    axes: Sequence[Axis],
    seeds: int,
    *,
    executor: Executor | None = None,
    progress: Progress | None = None,
    draw: Draw | None = None,
) -> pl.DataFrame:
    """One row per grid point and seed: the varied keys (as given, strings), `point`, `seed` and METRICS.

    Rows come in grid order (first axis slowest), seeds ascending within a point, whatever the executor. With
    `draw`, each run simulates draw(point's scenario, seed) (a twin's fitted keys drawn for that seed).
    """
    if seeds < 1:
        raise GoodputError(f"--seeds: must be at least 1, got {seeds}")
    check_runs(axes, seeds)  # before the grid is built: 10 axes of 10 values are 10^10 scenarios
    points = grid(base, axes)
    seed_lists = [seeds_of(p.scenario, seeds) for p in points]  # validated before anything runs
    tasks = [
        Task(p.index, draw(p.scenario, s) if draw else p.scenario, s)
        for p, ss in zip(points, seed_lists, strict=True)
        for s in ss
    ]
    rows = (executor or LocalExecutor()).run(tasks, progress)
    keys = [a.key for a in axes]
    given = pl.DataFrame(
        [points[r["point"]].given for r in rows], schema=dict.fromkeys(keys, pl.String), orient="row"
    )
    return pl.concat([given, _frame(rows)], how="horizontal")


def monte_carlo(
    scenario: Scenario,
    seeds: int,
    *,
    executor: Executor | None = None,
    progress: Progress | None = None,
    draw: Draw | None = None,
) -> pl.DataFrame:
    """`seeds` runs of one scenario (seeds from simulation.seed up): one row per seed, columns seed + METRICS."""
    return sweep(scenario, (), seeds, executor=executor, progress=progress, draw=draw).drop("point")


def bands(frame: pl.DataFrame, by: Sequence[str] = ()) -> pl.DataFrame:
    """Mean, 5th and 95th percentile of every metric per group of `by` (all rows when empty).

    Columns: `by`, `runs`, then `<metric>_mean`, `<metric>_p5`, `<metric>_p95` for each metric present.
    Nulls (MTTF of a run without an unexpected failure) are left out of that metric's figures; the band
    interpolates linearly between order statistics (10 seeds: p5 lies between the two smallest).
    """
    lo, hi = BAND_QUANTILES
    metrics = [m for m in METRICS if m in frame.columns]
    aggs = [pl.len().alias("runs")]
    for m in metrics:
        aggs += [
            pl.col(m).cast(pl.Float64).mean().alias(f"{m}_mean"),
            pl.col(m).cast(pl.Float64).quantile(lo, "linear").alias(f"{m}_p5"),
            pl.col(m).cast(pl.Float64).quantile(hi, "linear").alias(f"{m}_p95"),
        ]
    if not by:
        return frame.select(aggs)
    return frame.group_by(list(by), maintain_order=True).agg(aggs)


def result_row(summary: dict) -> dict:
    """The sweep's figures of one run's summary (engine.analysis.summary), read through its typed record: the
    flagship job's ETTR, MTTF, interruptions (unexpected + planned, as the Llama 3 paper counts them), the closed
    form and the goodput losses."""
    typed = RunSummary.from_json(summary)
    job, inter = typed.job, typed.interruptions
    assert job is not None and inter is not None, "a sweep runs simulations: their summary has a job"
    return {
        "ettr": job.ettr,
        "mttf_hours": job.mttf_hours,
        "interruptions": inter.unexpected + inter.planned,
        "unexpected": inter.unexpected,
        "planned": inter.planned,
        "closed_form_ettr": job.closed_form_ettr,
        "lost_gpu_hours": job.lost_gpu_hours,
        # the ledger's loss buckets; a summary stored before the degraded bucket existed has none of it
        **{f"{k}_gpu_hours": job.losses_gpu_hours.get(k, 0.0) for k in LOSSES},
        "lost_usd": math.fsum(job.losses_usd.values()),
        # what the recovery strategy's standby hosts cost (engine.sim.recovery; 0 without hot spares)
        "standby_usd": float(job.recovery_cost.standby_usd or 0.0),
        "ettr_with_network": job.ettr_with_network,  # ETTR over the placement's network slowdown
        "time_to_train_days": job.time_to_train_days,
    }


# ----- tasks and executors -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One summary-only run: the grid point's scenario under one seed."""

    point: int
    scenario: Scenario
    seed: int
    # what the task measures: "summary", the sweep's METRICS of a summary-only run (result_row); "window", the
    # backtest's figures of a run with its tables (engine.analysis.window_figures over the run after warm_up_s)
    measure: str = "summary"
    # "window" only: the seconds simulated before the measured window (a time-split backtest's warm-up, so the
    # window does not begin with every host healthy and no repair under way)
    warm_up_s: float = 0.0


def run_task(task: Task) -> dict:
    from engine.twin.simulate import simulate  # here, so a worker pays for the engine only when it simulates

    scenario = task.scenario.with_overrides([f"simulation.seed={task.seed}"])
    if task.measure == "window":
        from engine.analysis.window_figures import window_figures

        # the figures read jobs, attempts, checkpoints, incidents and the out-of-service host states: no
        # telemetry, whose draws come from a stream of their own (engine.sim.streams), so leaving it out changes
        # none of them
        run = simulate(scenario.with_values({"simulation.telemetry": False}), figures_only=True)
        figures = window_figures(run.tables, task.warm_up_s, run.duration_s)
        return {"point": task.point, "seed": task.seed, **asdict(figures)}
    run = simulate(scenario, summary_only=True)
    return {"point": task.point, "seed": task.seed, **result_row(run.summary)}


def run_chunk(tasks: list[Task]) -> list[dict]:
    """What one worker does with one chunk (module level, so processes and Ray pickle it by name)."""
    return [run_task(t) for t in tasks]


class Executor(Protocol):
    def run(self, tasks: list[Task], progress: Progress | None = None) -> list[dict]:
        """The rows of `tasks`, in the order of `tasks`."""
        ...


def chunks(tasks: list[Task], workers: int) -> list[list[Task]]:
    """About four chunks a worker: few enough that start-up and pickling stay small beside a run (~0.3 s),
    enough that a slow chunk at the end does not leave the other workers idle for long."""
    size = max(1, math.ceil(len(tasks) / (workers * 4)))
    return [tasks[i : i + size] for i in range(0, len(tasks), size)]


@dataclass
class LocalExecutor:
    """Processes on this machine: `workers` of them (default: the machine's cores); one worker runs in this
    process (no start-up at all: the planner page's small Monte-Carlo)."""

    workers: int | None = None

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise GoodputError(f"--workers: must be at least 1, got {self.workers}")

    def run(self, tasks: list[Task], progress: Progress | None = None) -> list[dict]:
        workers = min(self.workers or usable_cores(), len(tasks))
        if workers <= 1:
            rows = []
            for task in tasks:
                rows.append(run_task(task))
                _tick(progress, len(rows), len(tasks))
            return rows
        parts = chunks(tasks, workers)
        results: list[list[dict] | None] = [None] * len(parts)
        done = 0
        # spawn, not fork: a forked child of a process whose Polars thread pool is running can deadlock
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {pool.submit(run_chunk, part): i for i, part in enumerate(parts)}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                done += len(parts[futures[future]])
                _tick(progress, done, len(tasks))
        return [row for part in results for row in part]


@dataclass
class RayExecutor:
    """Ray: `address` reaches an existing cluster (`ray://head:10001` or `auto`; its nodes need goodput
    installed), none starts Ray on this machine with `workers` CPUs (default: all). Ray is imported only here,
    so its start-up never touches the local path. A Ray session this executor started is shut down after.
    `quiet` keeps Ray's own start-up lines (INFO and WARNING) off stderr: `goodput sweep --json`."""

    address: str | None = None
    workers: int | None = None
    quiet: bool = False

    def run(self, tasks: list[Task], progress: Progress | None = None) -> list[dict]:
        try:
            import ray
        except ImportError as err:
            raise GoodputError("--executor ray: Ray is not installed (pip install 'goodput[ray]')") from err
        started = not ray.is_initialized()
        if started:
            # quiet: errors only; else Ray's own level ($RAY_LOGGER_LEVEL, default info)
            logs = {"logging_level": logging.ERROR} if self.quiet else {}
            if self.address:
                ray.init(address=self.address, log_to_driver=False, **logs)
            else:
                ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False, **logs)
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            parts = chunks(tasks, self.workers or cpus)
            remote = ray.remote(run_chunk)
            refs = [remote.remote(part) for part in parts]
            index = {ref: i for i, ref in enumerate(refs)}
            results: list[list[dict] | None] = [None] * len(parts)
            pending, done = list(refs), 0
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                i = index[ready[0]]
                results[i] = ray.get(ready[0])
                done += len(parts[i])
                _tick(progress, done, len(tasks))
            return [row for part in results for row in part]
        finally:
            if started:
                ray.shutdown()


def usable_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def make_executor(
    name: str = "local", *, workers: int | None = None, address: str | None = None, quiet: bool = False
) -> Executor:
    """The executor of `--executor NAME` (local or ray); `quiet`: nothing of its own on stderr."""
    if name == "local":
        if address:
            raise GoodputError("--ray-address: only with --executor ray")
        return LocalExecutor(workers)
    if name == "ray":
        if workers is not None and workers < 1:
            raise GoodputError(f"--workers: must be at least 1, got {workers}")
        return RayExecutor(address, workers, quiet)
    raise GoodputError(f"--executor: unknown executor {name!r}; executors: local, ray")


def _tick(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None and total:
        progress(done / total)


def _frame(rows: list[dict]) -> pl.DataFrame:
    schema = {"point": pl.Int32, "seed": pl.Int64} | {
        m: (pl.Int64 if m in INT_METRICS else pl.Float64) for m in METRICS
    }
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
