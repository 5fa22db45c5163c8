"""Whether warm standbys pay for themselves: the break-even of hot_spare against restart.

For each standby count (0, 1, 2, 4, ... up to about twice a rough estimate of what the job needs), the job runs
under hot_spare and under restart on the same hosts and seeds (common random numbers, engine.twin.sweep), each
a summary-only simulation of the job alone, as the scale study builds it (engine.twin.scale). What the
standbys win is the ETTR they add times the job's GPU-hours at cost.gpu_hour_usd; what they cost is their idle
GPU-hours (the summary's recovery_cost.standby_usd). The break-even is the count where the net crosses zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from engine import limits
from engine.analysis.planner import repair_share
from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.twin.scale import BAND, Progress
from engine.twin.sweep import Executor, Task, seeds_of
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

BREAK_EVEN_SEEDS = 5  # paired differences (the same seeds with and without standbys) vary far less than ETTR
MAX_STANDBY_POINTS = 10


@dataclass(frozen=True)
class StandbyPoint:
    """One scenario of the break-even study: restart (standbys 0) or hot_spare with `standbys` warm hosts."""

    index: int
    strategy: str
    standbys: int
    spare_hosts: int
    scenario: Scenario


@dataclass(frozen=True)
class BreakEvenStudy:
    """hot_spare at each standby count and its restart baseline on the same hosts, over the same seeds."""

    points: tuple[StandbyPoint, ...]
    seeds: tuple[int, ...]
    current: int  # the standby count of the settings studied
    job_gpu_hours: float  # the job's GPUs x the horizon's hours: what an ETTR point is worth
    gpu_hour_usd: float

    @property
    def runs(self) -> int:
        return len(self.points) * len(self.seeds)


BREAK_EVEN_SCHEMA: dict[str, pl.DataType] = {
    "standbys": pl.Int64,
    "seed": pl.Int64,
    "ettr": pl.Float64,
    "restart_ettr": pl.Float64,
    "won_usd": pl.Float64,
    "standby_usd": pl.Float64,
    "net_usd": pl.Float64,
}


def standby_estimate(s: Scenario) -> float:
    """A first-order break-even in standby hosts, used only to choose the counts the study runs: the job's
    failures that take a host, each saving (restart overhead - hot swap) x the job's GPUs, against one standby
    host's GPUs idle all the time."""
    failures_per_s = (
        s.job_hosts
        * s.failures.rate_per_1000_node_days
        * s.failures.scale
        / 1000.0
        / SECONDS_PER_DAY
        * repair_share(s)
    )
    saving = max(0.0, s.training.restart_overhead - s.recovery.hot_swap) * s.training.gpus
    return failures_per_s * saving / s.cluster.gpus_per_host


def standby_counts(s: Scenario) -> tuple[int, ...]:
    """0, the settings' own count, and doubling counts (1, 2, 4, ...) up to twice the larger of the settings'
    count and the first-order break-even (at least 4), so the net value's peak and its zero crossing both fall
    inside; every other doubling is dropped (the largest kept) while there are more than
    MAX_STANDBY_POINTS, and counts whose spare pool would not fit the largest cluster are left out."""
    current = s.recovery.hot_spares
    top = max(4.0, 2.0 * current, 2.0 * standby_estimate(s))
    doubling = [2**k for k in range(int(math.log2(top)) + 1)]
    while len(doubling) > MAX_STANDBY_POINTS - 2:
        doubling = doubling[::-2][::-1]
    most = limits.MAX_CLUSTER_GPUS // s.cluster.gpus_per_host - s.job_hosts
    return tuple(c for c in sorted({0, current, *doubling}) if c <= max(most, 0))


def standby_scenario(base: Scenario, strategy: str, standbys: int) -> Scenario:
    """`base` under `strategy` with `standbys` warm hosts, the spare pool holding them (spares.hosts at least
    the standbys; the cluster grows by the hosts that takes), telemetry off."""
    spares = max(base.spares.hosts, standbys)
    per_host = base.cluster.gpus_per_host
    cluster = max(base.cluster.gpus, (base.job_hosts + spares) * per_host)
    values = {
        "training.recovery": strategy,
        "spares.hosts": spares,
        "cluster.gpus": cluster,
        "simulation.telemetry": False,
    }
    if strategy == "hot_spare":
        values["recovery.hot_spares"] = standbys
    return base.with_values(values)


def plan_break_even(
    base: Scenario, *, counts: Sequence[int] | None = None, seeds: int = BREAK_EVEN_SEEDS
) -> BreakEvenStudy:
    """hot_spare at each standby count (default standby_counts) and restart on the same hosts (a restart run for
    each spare pool the counts need), validated before anything runs."""
    if base.job_hosts == 0:
        raise GoodputError("training.gpus: the break-even needs a flagship job (training.gpus > 0)")
    chosen = sorted(set(standby_counts(base) if counts is None else counts))
    if any(c < 0 for c in chosen) or not chosen:
        raise GoodputError(f"recovery.hot_spares: standby counts must be 0 or more, got {chosen}")
    points: list[StandbyPoint] = []
    restarts: set[int] = set()
    for count in chosen:
        spares = max(base.spares.hosts, count)
        if spares not in restarts:
            restarts.add(spares)
            s = standby_scenario(base, "restart", count)
            points.append(StandbyPoint(len(points), "restart", 0, spares, s))
        s = standby_scenario(base, "hot_spare", count)
        points.append(StandbyPoint(len(points), "hot_spare", count, spares, s))
    limits.check_at_most(len(points) * seeds, limits.MAX_SWEEP_RUNS, "the break-even's runs")
    return BreakEvenStudy(
        points=tuple(points),
        seeds=tuple(seeds_of(base, seeds)),
        current=base.recovery.hot_spares,
        job_gpu_hours=base.training.gpus * base.duration_s / SECONDS_PER_HOUR,
        gpu_hour_usd=base.cost.gpu_hour_usd,
    )


def run_break_even(
    study: BreakEvenStudy, *, executor: Executor | None = None, progress: Progress | None = None
) -> pl.DataFrame:
    """Per standby count and seed (BREAK_EVEN_SCHEMA): hot_spare's ETTR, restart's on the same hosts and seed,
    the goodput won ((ETTR - restart ETTR) x job GPU-hours x the GPU-hour price), the standby hosts' cost
    (the summary's job.recovery_cost.standby_usd, via the sweep's row `standby_usd`) and the net (won - cost);
    cost and net are null where the rows carry no standby cost."""
    from engine.twin.sweep import LocalExecutor

    tasks = [Task(p.index, p.scenario, seed) for p in study.points for seed in study.seeds]
    rows = (executor or LocalExecutor()).run(tasks, progress)
    by_point = {(r["point"], r["seed"]): r for r in rows}
    restart_of = {p.spare_hosts: p.index for p in study.points if p.strategy == "restart"}
    records = []
    for p in (p for p in study.points if p.strategy == "hot_spare"):
        for seed in study.seeds:
            row, baseline = by_point[(p.index, seed)], by_point[(restart_of[p.spare_hosts], seed)]
            won = (row["ettr"] - baseline["ettr"]) * study.job_gpu_hours * study.gpu_hour_usd
            cost = row.get("standby_usd")  # None (unknown, not free) where the sweep's rows do not report it
            net = None if cost is None else won - cost
            records.append((p.standbys, seed, row["ettr"], baseline["ettr"], won, cost, net))
    return pl.DataFrame(records, schema=BREAK_EVEN_SCHEMA, orient="row")


def break_even_bands(frame: pl.DataFrame) -> pl.DataFrame:
    """Per standby count: mean goodput won, standby cost and net, and the net's 10th and 90th percentiles."""
    lo, hi = BAND
    return (
        frame.group_by("standbys", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("runs"),
            pl.col("won_usd").mean().alias("won_usd_mean"),
            pl.col("standby_usd").mean().alias("standby_usd_mean"),
            pl.col("net_usd").mean().alias("net_usd_mean"),
            pl.col("net_usd").quantile(lo, "linear").alias("net_usd_p10"),
            pl.col("net_usd").quantile(hi, "linear").alias("net_usd_p90"),
        )
        .sort("standbys")
    )


@dataclass(frozen=True)
class BreakEven:
    """What the net value over the standby counts says: the count worth most and where standbys stop paying."""

    best: int  # the count with the highest mean net value (0: standbys never pay)
    best_net_usd: float
    break_even: float | None  # past the best, where the mean net falls to 0 (linear between counts); None:
    # it stays above 0 over every count studied (or never rises above it)


def break_even_of(bands: pl.DataFrame) -> BreakEven | None:
    """The best count and the break-even of `break_even_bands` (counts ascending); None where a net is unknown."""
    counts, nets = bands["standbys"].to_list(), bands["net_usd_mean"].to_list()
    if not nets or any(n is None for n in nets):
        return None
    i = max(range(len(nets)), key=lambda k: (nets[k], -counts[k]))
    crossing = None
    if nets[i] > 0:
        for k in range(i + 1, len(nets)):
            if nets[k] <= 0:
                crossing = counts[k - 1] + (counts[k] - counts[k - 1]) * nets[k - 1] / (nets[k - 1] - nets[k])
                break
    return BreakEven(counts[i], nets[i], crossing)
