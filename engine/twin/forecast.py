"""Forecast: the next days of a cluster as its fitted twin sees them, with Monte-Carlo bands.

The fitted scenario (engine.twin.calibrate) is run `seeds` times over `days` (summary-only runs of the sweep,
engine.twin.sweep.monte_carlo) and each figure is reported as its mean and 5-95 % band over the runs: the
flagship's ETTR, its interruptions, its MTTF and the GPU-hours it loses. The band is the spread of luck under
the fitted rates; the fit's own uncertainty (each key's interval) and the backtest's error come on top.

With `work_days` (training.work: the days of ideal compute the job still needs) each run ends when that work is
done, and the forecast says when training finishes: the band of time_to_train_days over the runs that finished
within `days` (`finished` says how many did; the others need longer than the horizon).
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass

from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.twin.sweep import Executor, bands, monte_carlo
from engine.units import SECONDS_PER_DAY

DAYS = 30.0  # "the next 30 days of this cluster"
SEEDS = 10
MAX_DAYS = 3650.0
# The forecast's figures: columns of a sweep's result rows (engine.twin.sweep.METRICS).
FIGURES = ("ettr", "interruptions", "mttf_hours", "lost_gpu_hours", "time_to_train_days")


@dataclass(frozen=True)
class Spread:
    mean: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Forecast:
    days: float
    seeds: int
    figures: dict[str, Spread]
    work_days: float | None = None  # the work forecast to be done (training.work); None: a fixed horizon
    finished: int = 0  # runs whose work was done within `days` (time_to_train_days' band counts only them)

    def to_json(self) -> dict:
        return {
            "days": self.days,
            "seeds": self.seeds,
            "work_days": self.work_days,
            "finished": self.finished,
            **{k: asdict(v) for k, v in self.figures.items()},
        }


def forecast(
    scenario: Scenario,
    days: float = DAYS,
    seeds: int = SEEDS,
    *,
    work_days: float | None = None,
    executor: Executor | None = None,
    progress: Callable[[float], None] | None = None,
) -> Forecast:
    if not 0 < days <= MAX_DAYS:
        raise GoodputError(f"--forecast: days must be above 0 and at most {MAX_DAYS:g}, got {days:g}")
    if seeds < 2:
        raise GoodputError(f"--seeds: a band needs at least 2 runs, got {seeds}")
    if work_days is not None and not 0 < work_days <= days:
        raise GoodputError(
            f"--work: the work must be above 0 and at most the days forecast ({days:g}), got {work_days:g}"
        )
    values = {
        "simulation.days": days,
        "training.work": None if work_days is None else work_days * SECONDS_PER_DAY,
    }
    runs = monte_carlo(scenario.with_values(values), seeds, executor=executor, progress=progress)
    row = bands(runs).row(0, named=True)
    return Forecast(
        days=days,
        seeds=seeds,
        work_days=work_days,
        finished=int(runs["time_to_train_days"].is_not_null().sum()),
        figures={
            name: Spread(_round(row[f"{name}_mean"]), _round(row[f"{name}_p5"]), _round(row[f"{name}_p95"]))
            for name in FIGURES
        },
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)
