"""Forecast: the next days of a cluster as its fitted twin sees them, with Monte-Carlo bands.

The fitted scenario (engine.twin.calibrate) is run `seeds` times over `days` (summary-only runs of the sweep,
engine.twin.sweep.monte_carlo) and each figure is reported as its mean and 5-95 % band over the runs: the
flagship's ETTR, its interruptions, its MTTF and the GPU-hours it loses. The band is the spread of luck under
the fitted rates; the fit's own uncertainty (each key's interval) and the backtest's error come on top.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass

from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.twin.sweep import Executor, bands, monte_carlo

DAYS = 30.0  # "the next 30 days of this cluster"
SEEDS = 10
MAX_DAYS = 3650.0
# The forecast's figures: columns of a sweep's result rows (engine.twin.sweep.METRICS).
FIGURES = ("ettr", "interruptions", "mttf_hours", "lost_gpu_hours")


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

    def to_json(self) -> dict:
        return {"days": self.days, "seeds": self.seeds, **{k: asdict(v) for k, v in self.figures.items()}}


def forecast(
    scenario: Scenario,
    days: float = DAYS,
    seeds: int = SEEDS,
    *,
    executor: Executor | None = None,
    progress: Callable[[float], None] | None = None,
) -> Forecast:
    if not 0 < days <= MAX_DAYS:
        raise GoodputError(f"--forecast: days must be above 0 and at most {MAX_DAYS:g}, got {days:g}")
    if seeds < 2:
        raise GoodputError(f"--seeds: a band needs at least 2 runs, got {seeds}")
    runs = monte_carlo(
        scenario.with_values({"simulation.days": days}), seeds, executor=executor, progress=progress
    )
    row = bands(runs).row(0, named=True)
    return Forecast(
        days=days,
        seeds=seeds,
        figures={
            name: Spread(_round(row[f"{name}_mean"]), _round(row[f"{name}_p5"]), _round(row[f"{name}_p95"]))
            for name in FIGURES
        },
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)
