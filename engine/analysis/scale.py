"""Which recovery strategy at which scale: the flagship job's ETTR against its size, one line a strategy, with a
band over seeds; and whether warm standbys pay for themselves (the break-even of hot_spare against restart).

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

Every (strategy, size) runs the same seeds (common random numbers, engine.sim.sweep), as summary-only
simulations through engine.sim.sweep's executors (local processes or Ray); the band is the 10th to 90th
percentile over the seeds. `main_scale` is the command line (`goodput scale`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from engine import limits
from engine.analysis.planner import repair_share, spare_cover
from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.scenario.keys import KEY_BY_NAME
from engine.sim.sweep import Executor, Task, make_executor, seeds_of
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

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
    rate = s["failures.rate_per_1000_node_days"] * s["failures.scale"] / 1000.0
    return s.job_hosts * rate + s["failures.planned_per_day"]


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
    return base["spares.hosts"] / base.job_hosts


def spares_for(base: Scenario, job_hosts: int) -> int:
    """The spare hosts of a job of `job_hosts` hosts: the base's ratio, at least its warm standbys."""
    return max(math.ceil(spare_ratio(base) * job_hosts - 1e-9), base["recovery.hot_spares"])


def fitting_hosts(base: Scenario, job_hosts: int) -> int:
    """`job_hosts`, or fewer where the job and its spares would pass the largest cluster Goodput simulates."""
    most = limits.MAX_CLUSTER_GPUS // base["cluster.gpus_per_host"]
    while job_hosts > 1 and job_hosts + spares_for(base, job_hosts) > most:
        job_hosts -= max(1, (job_hosts + spares_for(base, job_hosts) - most) // 2)
    return job_hosts


def job_sizes(base: Scenario, sizes_gpus: Sequence[int] = SIZES_GPUS) -> list[int]:
    """The job sizes of the study in GPUs: whole hosts, each fitting with its spares (the 256k point is a little
    under 262,144 GPUs: its spares must fit beside it), ascending, no size twice."""
    per_host = base["cluster.gpus_per_host"]
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
    per_host = base["cluster.gpus_per_host"]
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
            "recovery.replicas": max(2, min(base["recovery.replicas"], job_hosts)),
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
            points.append(ScalePoint(len(points), strategy, gpus, s["spares.hosts"], s["simulation.days"], s))
    return ScaleStudy(tuple(points), tuple(seeds_of(base, seeds)))


def run_study(
    study: ScaleStudy, *, executor: Executor | None = None, progress: Progress | None = None
) -> pl.DataFrame:
    """One row per point and seed (RUN_SCHEMA), points in study order, seeds ascending within a point."""
    from engine.sim.sweep import LocalExecutor

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
    (linear between order statistics, as engine.sim.sweep.bands), mean interruptions (BAND_SCHEMA)."""
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


# ----- the break-even of warm standbys ------------------------------------------------------------------------

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
        * s["failures.rate_per_1000_node_days"]
        * s["failures.scale"]
        / 1000.0
        / SECONDS_PER_DAY
        * repair_share(s)
    )
    saving = max(0.0, s["training.restart_overhead"] - s["recovery.hot_swap"]) * s["training.gpus"]
    return failures_per_s * saving / s["cluster.gpus_per_host"]


def standby_counts(s: Scenario) -> tuple[int, ...]:
    """0, the settings' own count, and doubling counts (1, 2, 4, ...) up to twice the larger of the settings'
    count and the first-order break-even (at least 4), so the net value's peak and its zero crossing both fall
    inside; every other doubling is dropped (the largest kept) while there are more than
    MAX_STANDBY_POINTS, and counts whose spare pool would not fit the largest cluster are left out."""
    current = s["recovery.hot_spares"]
    top = max(4.0, 2.0 * current, 2.0 * standby_estimate(s))
    doubling = [2**k for k in range(int(math.log2(top)) + 1)]
    while len(doubling) > MAX_STANDBY_POINTS - 2:
        doubling = doubling[::-2][::-1]
    most = limits.MAX_CLUSTER_GPUS // s["cluster.gpus_per_host"] - s.job_hosts
    return tuple(c for c in sorted({0, current, *doubling}) if c <= max(most, 0))


def standby_scenario(base: Scenario, strategy: str, standbys: int) -> Scenario:
    """`base` under `strategy` with `standbys` warm hosts, the spare pool holding them (spares.hosts at least
    the standbys; the cluster grows by the hosts that takes), telemetry off."""
    spares = max(base["spares.hosts"], standbys)
    per_host = base["cluster.gpus_per_host"]
    cluster = max(base["cluster.gpus"], (base.job_hosts + spares) * per_host)
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
        spares = max(base["spares.hosts"], count)
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
        current=base["recovery.hot_spares"],
        job_gpu_hours=base["training.gpus"] * base.duration_s / SECONDS_PER_HOUR,
        gpu_hour_usd=base["cost.gpu_hour_usd"],
    )


def run_break_even(
    study: BreakEvenStudy, *, executor: Executor | None = None, progress: Progress | None = None
) -> pl.DataFrame:
    """Per standby count and seed (BREAK_EVEN_SCHEMA): hot_spare's ETTR, restart's on the same hosts and seed,
    the goodput won ((ETTR - restart ETTR) x job GPU-hours x the GPU-hour price), the standby hosts' cost
    (the summary's job.recovery_cost.standby_usd, via the sweep's row `standby_usd`) and the net (won - cost);
    cost and net are null where the rows carry no standby cost."""
    from engine.sim.sweep import LocalExecutor

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


# ----- the command line ---------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `goodput scale` (engine/cli.py may add them to its own sub-command parser)."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--preset", metavar="NAME", help="the settings to scale (default llama3-405b)")
    source.add_argument("--scenario", metavar="FILE", help="a TOML scenario file")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one scenario key")
    parser.add_argument(
        "--strategies",
        default=",".join(STRATEGIES),
        metavar="S1,S2,...",
        help=f"recovery strategies (default all: {', '.join(STRATEGIES)})",
    )
    parser.add_argument(
        "--sizes",
        default=",".join(str(g) for g in SIZES_GPUS),
        metavar="G1,G2,...",
        help="job sizes in GPUs (default 1024 to 262144, doubling)",
    )
    parser.add_argument(
        "--seeds", type=int, default=SEEDS, metavar="N", help=f"runs a point (default {SEEDS})"
    )
    parser.add_argument(
        "--executor", default="local", choices=["local", "ray"], help="local processes or Ray"
    )
    parser.add_argument("--workers", type=int, metavar="N", help="worker processes or Ray CPUs (default all)")
    parser.add_argument("--ray-address", metavar="ADDR", help="an existing Ray cluster (default: Ray here)")
    parser.add_argument("--json", action="store_true", help="print one JSON object: results and bands")


def _sizes(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise GoodputError(
            f"--sizes: expected GPUs as whole numbers separated by commas, got {text!r}"
        ) from None


def run_command(args: argparse.Namespace) -> int:
    """`goodput scale`: the study of the scenario the flags name, printed as JSON or as a table."""
    from engine.scenario import build

    base = build(args.preset, file=args.scenario, sets=list(args.set or []))
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    study = plan_study(base, strategies=strategies, sizes_gpus=_sizes(args.sizes), seeds=args.seeds)
    executor = make_executor(args.executor, workers=args.workers, address=args.ray_address, quiet=args.json)
    runs = run_study(study, executor=executor, progress=None if args.json else _terminal_progress())
    bands = scale_bands(runs)
    if args.json:
        print(json.dumps({"results": runs.to_dicts(), "bands": bands.to_dicts()}))
    else:
        print(scale_text(bands, len(study.seeds)))
    return 0


def _terminal_progress() -> Progress | None:
    """A one-line bar on stderr when it is a terminal (as `goodput sweep` shows), else nothing."""
    if not sys.stderr.isatty():
        return None

    def show(fraction: float) -> None:
        filled = int(fraction * 30)
        end = "\n" if fraction >= 1 else ""
        print(
            f"\r[{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%}", end=end, file=sys.stderr, flush=True
        )

    return show


def scale_text(bands: pl.DataFrame, seeds: int) -> str:
    """A line per size: its horizon, then each strategy's mean ETTR [p10, p90]."""
    strategies = bands["strategy"].unique(maintain_order=True).to_list()
    header = ["job GPUs", "days", *strategies]
    rows = []
    for (gpus,), part in bands.group_by(["job_gpus"], maintain_order=True):
        by = {r["strategy"]: r for r in part.to_dicts()}
        cells = [
            f"{by[s]['ettr_mean']:.3f} [{by[s]['ettr_p10']:.3f}, {by[s]['ettr_p90']:.3f}]" for s in strategies
        ]
        rows.append([f"{gpus:,}", f"{part['days'][0]:g}", *cells])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [f"ETTR by job size and recovery strategy, {seeds} seeds: mean [10%, 90%]"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
    return "\n".join(lines)


def main_scale(argv: Sequence[str] | None = None) -> int:
    """`goodput scale` on its own: bad input prints `goodput: error: ...` and returns 2, as engine/cli.py does."""
    parser = argparse.ArgumentParser(
        prog="goodput scale", description="ETTR of the flagship job by size and recovery strategy"
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_command(args)
    except GoodputError as err:
        print(f"goodput: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main_scale())
