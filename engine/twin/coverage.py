"""How honest are the twin's bands? An out-of-sample check, as an independent reviewer runs it (issue 44).

A known truth (a scenario) is simulated once over `history_days`, as the cluster Goodput watched; the twin is
calibrated to it (engine.twin.calibrate) and asked about the next `future_days`: its band of each backtest figure is
made as a backtest or forecast makes it (its fitted keys drawn for each run, engine.twin.uncertainty; the band of
engine.twin.prediction). Then the truth is simulated over `future_days` again with new seeds: the same cluster's
futures. Two numbers say how honest the twin is:
- coverage: the share of the futures' figures inside the twin's band (90 % is what the band claims);
- median error: the mean of |twin's median - future| / |future|, beside the same for the true scenario's own
  median over as many runs, which only its luck separates from the futures. Their ratio is the price of having
  learned the cluster instead of knowing it: where the history is as long as the future and the figure is the
  count the fit was made of (incidents), the fit's error is one window's luck, and the ratio is about
  sqrt(1 + 1) = 1.41 however good the fit; a history three times the future brings it to about
  sqrt(1 + 1/3) = 1.15. A forecast is asked of a longer history than its horizon (the next month from the last
  quarter), so the check asks that by default; bench/bench_twin_coverage.py shows equal lengths too.

Seeds: the truth run its scenario's seed; the twin's runs from the fitted scenario's seed up (as a backtest);
the true scenario's band TRUE_SEEDS_FROM up and the futures FUTURE_SEEDS_FROM up, past the truth's own seed, so
nothing is shared between them.
"""

from dataclasses import dataclass

import numpy as np

from engine.scenario import Scenario
from engine.store import Store
from engine.twin.backtest import FIGURES
from engine.twin.calibrate import Calibration, calibrate
from engine.twin.prediction import Interval, prediction_interval
from engine.twin.simulate import simulate
from engine.twin.sweep import Executor, LocalExecutor, Task, seeds_of

# The kinds of cluster the check runs on (tests/test_twin_coverage.py, bench/bench_twin_coverage.py): three presets,
# changed rates, cause mixes and repair laws, a repair queue and bad hosts that repeat, at sizes a test can simulate
# many times.
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "demo, a repair queue": (
        "demo",
        ("repair.technicians=1", "failures.rate_per_1000_node_days=80"),
    ),
    "demo, a changed cause mix": (
        "demo",
        (
            "failures.rate_per_1000_node_days=50",
            "failures.mix.faulty_gpu=0",
            "failures.mix.software_bug=200",
        ),
    ),
    "rsc1, no planned stops": (
        "rsc1",
        (
            "cluster.gpus=2048",
            "training.gpus=1024",
            "failures.rate_per_1000_node_days=30",
        ),
    ),
    "rsc1, a slow repair law": (
        "rsc1",
        (
            "cluster.gpus=2048",
            "training.gpus=1024",
            "failures.rate_per_1000_node_days=30",
            "repair.fix=12h",
            "repair.rma_fraction=0.3",
            "repair.rma_time=10d",
        ),
    ),
    "llama3-405b, bad hosts that repeat": (
        "llama3-405b",
        (
            "cluster.gpus=2048",
            "training.gpus=1536",
            "failures.rate_per_1000_node_days=25",
            "failures.bad_host_fraction=0.05",
            "failures.bad_host_multiplier=10",
            "repair.manual_silent_failure=0.5",
        ),
    ),
    "llama3-405b, a higher rate": (
        "llama3-405b",
        (
            "cluster.gpus=2048",
            "training.gpus=1536",
            "failures.rate_per_1000_node_days=25",
        ),
    ),
}
CASE_SEED_STRIDE = (
    1000  # the k-th case's truths take seeds k x 1000 apart: cases of one cluster size share no luck
)


def truth_seed(case_index: int, seed: int) -> int:
    """The seed of a truth of the case_index-th case (engine.sim.streams: one seed draws the same failures for
    every case of a cluster size, so two cases with one seed would be one truth twice)."""
    return case_index * CASE_SEED_STRIDE + seed


RUNS = 20  # the twin's and the true scenario's runs: a band of 20 holds a new run 90.5 % of the time
FUTURES = 5
HISTORY_DAYS = 90.0  # what the twin learns from: a quarter of history
FUTURE_DAYS = 30.0  # what it is asked about: "the next month"
TRUE_SEEDS_FROM = 100_000
FUTURE_SEEDS_FROM = 200_000


@dataclass(frozen=True)
class FigureCheck:
    figure: str
    twin: Interval
    truth: Interval  # the true scenario's own band, over as many runs
    futures: tuple[float, ...]

    @property
    def inside(self) -> int:
        return sum(self.twin.low <= f <= self.twin.high for f in self.futures)

    @property
    def truth_inside(self) -> int:
        return sum(self.truth.low <= f <= self.truth.high for f in self.futures)

    def errors(self, median: float) -> list[float]:
        return [abs(median - f) / abs(f) for f in self.futures if f]


@dataclass(frozen=True)
class CoverageCheck:
    """One truth, its twin and its futures."""

    name: str
    fit: Calibration
    figures: tuple[FigureCheck, ...]

    @property
    def inside(self) -> int:
        return sum(f.inside for f in self.figures)

    @property
    def total(self) -> int:
        return sum(len(f.futures) for f in self.figures)

    def twin_errors(self) -> list[float]:
        return [e for f in self.figures for e in f.errors(f.twin.median)]

    def truth_errors(self) -> list[float]:
        return [e for f in self.figures for e in f.errors(f.truth.median)]


def check_twin(
    name: str,
    truth: Scenario,
    store: Store,
    *,
    history_days: float = HISTORY_DAYS,
    future_days: float = FUTURE_DAYS,
    runs: int = RUNS,
    futures: int = FUTURES,
    executor: Executor | None = None,
) -> CoverageCheck:
    """The out-of-sample check of the module's docstring for one truth (its telemetry is left out: the twin reads
    none of it)."""
    executor = executor or LocalExecutor()
    history = truth.with_values({"simulation.days": history_days, "simulation.telemetry": False})
    truth = truth.with_values({"simulation.days": future_days, "simulation.telemetry": False})
    fit = calibrate(store, store.write_run(simulate(history, name=name)))
    twin = fit.scenario().with_values({"simulation.days": future_days, "simulation.telemetry": False})
    uncertainty = fit.uncertainty()
    seed = truth.simulation.seed
    tasks = [Task(0, uncertainty.scenario_for(twin, s), s, measure="window") for s in seeds_of(twin, runs)]
    tasks += [Task(1, truth, seed + TRUE_SEEDS_FROM + k, measure="window") for k in range(runs)]
    tasks += [Task(2, truth, seed + FUTURE_SEEDS_FROM + k, measure="window") for k in range(futures)]
    rows = executor.run(tasks)
    by_point = {p: [r for r in rows if r["point"] == p] for p in (0, 1, 2)}
    checks = []
    for figure in FIGURES:
        values = {p: [r[figure] for r in group if r[figure] is not None] for p, group in by_point.items()}
        twin_band, truth_band = prediction_interval(values[0]), prediction_interval(values[1])
        if twin_band is None or truth_band is None or not values[2]:
            continue
        checks.append(FigureCheck(figure, twin_band, truth_band, tuple(float(v) for v in values[2])))
    return CoverageCheck(name, fit, tuple(checks))


def summary(checks: list[CoverageCheck]) -> dict:
    """Coverage and median errors over every check together."""
    inside, total = sum(c.inside for c in checks), sum(c.total for c in checks)
    truth_inside = sum(f.truth_inside for c in checks for f in c.figures)
    twin_error = float(np.mean([e for c in checks for e in c.twin_errors()]))
    truth_error = float(np.mean([e for c in checks for e in c.truth_errors()]))
    return {
        "inside": inside,
        "total": total,
        "coverage": inside / total if total else None,
        "truth_coverage": truth_inside / total if total else None,
        "twin_median_error": twin_error,
        "truth_median_error": truth_error,
        "error_ratio": twin_error / truth_error if truth_error else None,
    }
