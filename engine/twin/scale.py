"""Which recovery strategy at which scale: the flagship job's ETTR against its size, one line a strategy, with a
band over seeds (whether warm standbys pay for themselves is engine.twin.standby).

The scale study takes a scenario (the Planner's settings) and, for each strategy (training.recovery) and job
size (1k to 256k GPUs), builds a scenario of that job alone:

- the cluster is the job plus its spares and nothing else (research.utilization = 0, no telemetry): the
  figure is the flagship job's, and research jobs only cost time;
- spares keep the scenario's ratio of spare hosts to job hosts (Llama 3: 48 for 2,048 job hosts), and at least
  the warm standbys recovery.hot_spares, for every strategy alike, so the strategies differ by how they recover,
  not by the hosts they hold (hot_spare keeps recovery.hot_spares of the same spares warm);
- the horizon holds about TARGET_INTERRUPTIONS interruptions of the job (unexpected + planned): a fixed
  number of days would give a 1k-GPU job a handful of failures (its ETTR would be luck) and a 256k-GPU job
  thousands (seconds of simulation for nothing). It is at least twice the time a failed host is away (drain,
  diagnosis, repair, burn-in), so hosts sent to repair at the start come back and the spare pool reaches its
  steady state; at most MAX_DAYS.

Every (strategy, size) runs the same seeds (common random numbers, engine.twin.sweep), as summary-only
simulations through engine.twin.sweep's executors (local processes or Ray); the band is the 10th to 90th
percentile over the seeds. `main_scale` is the command line (`goodput scale`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from engine import limits
from engine.analysis.planner import spare_cover
from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.scenario.keys import KEY_BY_NAME
from engine.twin.sweep import Executor, Task, seeds_of
from engine.units import SECONDS_PER_DAY

Progress = Callable[[float], None]

STRATEGIES: tuple[str, ...] = KEY_BY_NAME["training.recovery"].choices
# The strategies in words, as the Planner offers them and the Compare page shows them.
STRATEGY_LABELS: dict[str, str] = {
    "restart": "Restart from the last checkpoint",
    "in_memory_checkpoint": "In-memory checkpoints (Gemini)",
    "replica_drop": "Drop the failed replica (FT-HSDP)",
    "hot_spare": "Warm standby hosts (hot spare)",
}
assert set(STRATEGY_LABELS) == set(STRATEGIES), "every training.recovery choice needs words"

SIZES_GPUS: tuple[int, ...] = tuple(1024 * 2**i for i in range(9))  # 1k, 2k, ..., 256k (the range)
SEEDS = 10  # p10 and p90 of 10 seeds interpolate between the two lowest and the two highest runs
TARGET_INTERRUPTIONS = 100.0  # relative spread of the losses ~ 1/sqrt(100) = 10 % from the count alone
MIN_DAYS = 1.0
MAX_DAYS = 365.0  # a 1k-GPU job at 0.1 failures per 1,000 host-days would otherwise ask for years
BAND = (0.1, 0.9)  # the chart's band: 10th to 90th percentile over seeds

RUN_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "job_gpus": pl.Int64,
    "spare_hosts": pl.Int64,
    "days": pl.Float64,
    "seed": pl.Int64,
    "ettr": pl.Float64,
    "interruptions": pl.Int64,
    "lost_usd": pl.Float64,
}
BAND_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "job_gpus": pl.Int64,
    "spare_hosts": pl.Int64,
    "days": pl.Float64,
    "runs": pl.Int64,
    "ettr_mean": pl.Float64,
    "ettr_p10": pl.Float64,
    "ettr_p90": pl.Float64,
    "interruptions_mean": pl.Float64,
}


# ----- the scale study ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalePoint:
    """One (strategy, job size) of the study and the scenario that runs it."""

    index: int
    strategy: str
    job_gpus: int
    spare_hosts: int
    days: float
    scenario: Scenario


@dataclass(frozen=True)
class ScaleStudy:
    """Every point of the study and the seeds each one runs."""

    points: tuple[ScalePoint, ...]
    seeds: tuple[int, ...]

    @property
    def runs(self) -> int:
        return len(self.points) * len(self.seeds)


def interruptions_per_day(s: Scenario) -> float:
    """The flagship job's expected interruptions a day: its hosts' unexpected failures and the planned stops."""
    rate = s.failures.rate_per_1000_node_days * s.failures.scale / 1000.0
    return s.job_hosts * rate + s.failures.planned_per_day


def horizon_days(s: Scenario) -> float:
    """Days that hold about TARGET_INTERRUPTIONS of the job's interruptions, at least twice a failed host's time
    away and MIN_DAYS, at most MAX_DAYS (module docstring); rounded up to a hundredth of a day."""
    floor = max(MIN_DAYS, 2.0 * spare_cover(s).time_away_s / SECONDS_PER_DAY)
    per_day = interruptions_per_day(s)
    wanted = TARGET_INTERRUPTIONS / per_day if per_day > 0 else MAX_DAYS
    return math.ceil(min(MAX_DAYS, max(floor, wanted)) * 100.0) / 100.0


def spare_ratio(base: Scenario) -> float:
    """Spare hosts per job host in `base`: what every size of the study keeps."""
    if base.job_hosts == 0:
        raise GoodputError("training.gpus: the scale study needs a flagship job (training.gpus > 0)")
    return base.spares.hosts / base.job_hosts


def spares_for(base: Scenario, job_hosts: int) -> int:
    """The spare hosts of a job of `job_hosts` hosts: the base's ratio, at least its warm standbys."""
    return max(math.ceil(spare_ratio(base) * job_hosts - 1e-9), base.recovery.hot_spares)


def fitting_hosts(base: Scenario, job_hosts: int) -> int:
    """`job_hosts`, or fewer where the job and its spares would pass the largest cluster Goodput simulates."""
    most = limits.MAX_CLUSTER_GPUS // base.cluster.gpus_per_host
    while job_hosts > 1 and job_hosts + spares_for(base, job_hosts) > most:
        job_hosts -= max(1, (job_hosts + spares_for(base, job_hosts) - most) // 2)
    return job_hosts


def job_sizes(base: Scenario, sizes_gpus: Sequence[int] = SIZES_GPUS) -> list[int]:
    """The job sizes of the study in GPUs: whole hosts, each fitting with its spares (a size near MAX_CLUSTER_GPUS
    is cut so that its spares fit beside it), ascending, no size twice."""
    per_host = base.cluster.gpus_per_host
    out = set()
    for gpus in sizes_gpus:
        if gpus < 1:
            raise GoodputError(f"--sizes: a job size must be at least 1 GPU, got {gpus}")
        limits.check_at_most(gpus, limits.MAX_CLUSTER_GPUS, "--sizes")
        out.add(fitting_hosts(base, math.ceil(gpus / per_host)) * per_host)
    return sorted(out)


def point_scenario(base: Scenario, strategy: str, job_gpus: int) -> Scenario:
    """The scenario of one point: `base` with the strategy, the job of `job_gpus` GPUs, its spares, a cluster of
    exactly those hosts, research and telemetry off, at most a replica a job host, and the horizon of
    `horizon_days`."""
    per_host = base.cluster.gpus_per_host
    job_hosts = math.ceil(job_gpus / per_host)
    spares = spares_for(base, job_hosts)
    sized = base.with_values(
        {
            "training.recovery": strategy,
            "training.gpus": job_gpus,
            "spares.hosts": spares,
            "cluster.gpus": (job_hosts + spares) * per_host,
            "research.utilization": 0.0,
            "simulation.telemetry": False,
            # a replica needs a host at least: a small job keeps as many replicas as it has hosts
            "recovery.replicas": max(2, min(base.recovery.replicas, job_hosts)),
        }
    )
    return sized.with_values({"simulation.days": horizon_days(sized)})


def plan_study(
    base: Scenario,
    *,
    strategies: Sequence[str] = STRATEGIES,
    sizes_gpus: Sequence[int] = SIZES_GPUS,
    seeds: int = SEEDS,
) -> ScaleStudy:
    """Every point of the study, validated before anything runs (a GoodputError names the key or flag)."""
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown or not strategies:
        raise GoodputError(
            f"--strategies: unknown strategy {', '.join(unknown) or '(none given)'}; strategies: "
            f"{', '.join(STRATEGIES)}"
        )
    sizes = job_sizes(base, sizes_gpus)
    limits.check_at_most(
        len(strategies) * len(sizes) * seeds, limits.MAX_SWEEP_RUNS, "the scale study's runs"
    )
    points = []
    for strategy in dict.fromkeys(strategies):
        for gpus in sizes:
            s = point_scenario(base, strategy, gpus)
            points.append(ScalePoint(len(points), strategy, gpus, s.spares.hosts, s.simulation.days, s))
    return ScaleStudy(tuple(points), tuple(seeds_of(base, seeds)))


def run_study(
    study: ScaleStudy, *, executor: Executor | None = None, progress: Progress | None = None
) -> pl.DataFrame:
    """One row per point and seed (RUN_SCHEMA), points in study order, seeds ascending within a point."""
    from engine.twin.sweep import LocalExecutor

    # seed by seed, every point within: the executors cut the tasks into contiguous chunks, and a chunk of one
    # point's seeds would put all the 256k-GPU runs (half the work) into a few chunks and idle the other workers
    tasks = [Task(p.index, p.scenario, seed) for seed in study.seeds for p in study.points]
    rows = sorted((executor or LocalExecutor()).run(tasks, progress), key=lambda r: (r["point"], r["seed"]))
    points = study.points
    return pl.DataFrame(
        {
            "strategy": [points[r["point"]].strategy for r in rows],
            "job_gpus": [points[r["point"]].job_gpus for r in rows],
            "spare_hosts": [points[r["point"]].spare_hosts for r in rows],
            "days": [points[r["point"]].days for r in rows],
            "seed": [r["seed"] for r in rows],
            "ettr": [r["ettr"] for r in rows],
            "interruptions": [r["interruptions"] for r in rows],
            "lost_usd": [r["lost_usd"] for r in rows],
        },
        schema=RUN_SCHEMA,
    )


def scale_bands(runs: pl.DataFrame) -> pl.DataFrame:
    """Per strategy and size (in the runs' order): mean ETTR and its 10th and 90th percentile over the seeds
    (linear between order statistics, as engine.twin.sweep.bands), mean interruptions (BAND_SCHEMA)."""
    lo, hi = BAND
    return (
        runs.group_by(["strategy", "job_gpus", "spare_hosts", "days"], maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("runs"),
            pl.col("ettr").mean().alias("ettr_mean"),
            pl.col("ettr").quantile(lo, "linear").alias("ettr_p10"),
            pl.col("ettr").quantile(hi, "linear").alias("ettr_p90"),
            pl.col("interruptions").cast(pl.Float64).mean().alias("interruptions_mean"),
        )
        .cast(BAND_SCHEMA)
    )


def best_strategy(bands: pl.DataFrame) -> pl.DataFrame:
    """Per size: the strategy with the highest mean ETTR (columns job_gpus, strategy, ettr_mean)."""
    return (
        bands.sort(["job_gpus", "ettr_mean"], descending=[False, True])
        .group_by("job_gpus", maintain_order=True)
        .first()
        .select("job_gpus", "strategy", "ettr_mean")
    )
