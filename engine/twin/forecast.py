"""Forecast: the next days of a cluster as its fitted twin sees them, with Monte-Carlo bands.

The fitted scenario (engine.twin.calibrate) is run `seeds` times over `days` (summary-only runs of the sweep,
engine.twin.sweep.monte_carlo), each run with the fitted keys drawn from their laws first
(engine.twin.uncertainty), and each figure is reported as its mean and band over the runs: the flagship's
ETTR, its interruptions, its MTTF and the GPU-hours it loses. The band is where the next run's value falls with
probability 90 % (engine.twin.prediction; fewer than 19 runs hold less, and `level` says how much): it holds the
fit's own uncertainty and the luck of the runs; what the twin does not model (the backtest's error) comes on top.

With `work_days` (training.work: the days of ideal compute the job still needs) each run ends when that work is
done, and the forecast says when training finishes: the band of time_to_train_days over the runs that finished
within `days` (`finished` says how many did; the others need longer than the horizon).
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass

from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.twin.prediction import band_level, prediction_interval
from engine.twin.sweep import Executor, monte_carlo
from engine.twin.uncertainty import FitUncertainty
from engine.units import SECONDS_PER_DAY

DAYS = 30.0  # "the next 30 days of this cluster"
SEEDS = 20  # the smallest and largest of 20 runs hold a new run's value 90.5 % of the time
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
            "band_level": round(band_level(self.seeds), 6),
            **{k: asdict(v) for k, v in self.figures.items()},
        }


def forecast(
    scenario: Scenario,
    days: float = DAYS,
    seeds: int = SEEDS,
    *,
    work_days: float | None = None,
    uncertainty: FitUncertainty | None = None,
    executor: Executor | None = None,
    progress: Callable[[float], None] | None = None,
) -> Forecast:
    """`scenario` run forward; with `uncertainty` (a calibration's), each run draws the fitted keys first."""
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
    draw = uncertainty.scenario_for if uncertainty is not None else None
    runs = monte_carlo(scenario.with_values(values), seeds, executor=executor, progress=progress, draw=draw)
    return Forecast(
        days=days,
        seeds=seeds,
        work_days=work_days,
        finished=int(runs["time_to_train_days"].is_not_null().sum()),
        figures={name: _spread(runs[name].to_list()) for name in FIGURES},
    )


def _spread(values: list) -> Spread:
    """The mean of the runs and their band; nulls (no MTTF without a failure) left out."""
    present = [v for v in values if v is not None]
    band = prediction_interval(present)
    mean = sum(present) / len(present) if present else None
    if band is None:
        return Spread(_round(mean), _round(mean), _round(mean))
    return Spread(_round(mean), _round(band.low), _round(band.high))


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)
