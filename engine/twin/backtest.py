"""Backtest: does the fitted twin reproduce the window it was fitted to? (`goodput calibrate --backtest`)

The fitted scenario (engine.twin.calibrate) is simulated over the window's length under N seeds, each run with the
fitted keys drawn from their laws first (engine.twin.uncertainty: the band holds the fit's uncertainty as well as
the runs' luck), and each figure the observed run shows over the window (engine.analysis.window_figures, the same
function on both sides) is put beside the twin's band: where a new run's value falls with probability 90 %
(engine.twin.prediction: order statistics of the runs; with fewer than 19 runs it holds less, and says so). An
observed value outside its band is the twin's published error: the fit misses something the cluster does (a cause
it does not model, a rate that changed inside the window, a repair queue it does not have), and the output says
so plainly.

Seeds: simulation.seed, simulation.seed + 1, ... as in a sweep (engine.twin.sweep), so a backtest is
reproducible and runs on the sweep's executors.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass

from engine.analysis.window_figures import WindowFigures, window_figures
from engine.errors import GoodputError
from engine.store import Store, query_frame
from engine.twin.calibrate import Calibration
from engine.twin.prediction import band_level, prediction_interval
from engine.twin.sweep import Executor, LocalExecutor, Task, seeds_of
from engine.twin.uncertainty import METHOD

SEEDS = 20  # the default: the smallest and largest of 20 runs hold a new run's value 90.5 % of the time
# The figures of the backtest, in the order shown; each is a field of WindowFigures (definitions: "Twin").
FIGURES = ("interruptions", "incidents", "gpu_hours_lost", "ettr", "hosts_in_repair_mean")
# Figures the observed run sees only in part when the largest job's checkpoints were not read (Slurm records
# none): its lost work after the last checkpoint and its checkpoint writes are unseen.
UNSEEN_WITHOUT_CHECKPOINTS = {"ettr": "upper bound", "gpu_hours_lost": "lower bound"}
TOLERANCE = 1e-9  # rounding of sums, not a statistical allowance
TABLES = ("incidents", "jobs", "job_attempts", "checkpoints", "host_states")


@dataclass(frozen=True)
class Band:
    """One figure: the observed value beside the twin's band (engine.twin.prediction) and median."""

    observed: float | None
    low: float | None
    median: float | None
    high: float | None
    inside: bool | None  # None when either side has no value (no largest job, say)
    # "measured", or "upper bound"/"lower bound" where the observed run cannot see part of the figure (a job
    # whose checkpoints were not read): then inside means the bound does not contradict the band
    observed_is: str = "measured"


@dataclass(frozen=True)
class Backtest:
    seeds: int
    days: float
    figures: dict[str, Band]
    by_cause: dict[str, Band]  # incidents by cause, every cause seen on either side
    repair_by_day: dict[str, list[float]]  # observed, low, median, high hosts in repair for each day
    observed: WindowFigures

    def outside(self) -> list[str]:
        """The figures whose observed value fell outside the simulated band."""
        return [name for name, band in self.figures.items() if band.inside is False]

    def to_json(self) -> dict:
        return {
            "seeds": self.seeds,
            "days": round(self.days, 6),
            "band_level": round(band_level(self.seeds), 6),
            "uncertainty": METHOD,
            **{name: asdict(band) for name, band in self.figures.items()},
            "incidents_by_cause": {cause: asdict(band) for cause, band in self.by_cause.items()},
            "hosts_in_repair_by_day": self.repair_by_day,
            "largest_job": self.observed.largest_job,
            "outside": self.outside(),
        }


def observed_figures(store: Store, calibration: Calibration) -> WindowFigures:
    """The observed run's figures over the calibration's window."""
    with store.connect(calibration.run_id) as con:
        present = {
            row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        tables = {
            name: query_frame(con, f'SELECT * FROM "{name}"')  # noqa: S608 (a fixed table name)
            for name in TABLES
            if name in present
        }
    return window_figures(tables, calibration.window.start_s, calibration.window.end_s)


def backtest(
    store: Store,
    calibration: Calibration,
    seeds: int = SEEDS,
    *,
    executor: Executor | None = None,
    progress: Callable[[float], None] | None = None,
) -> Backtest:
    """Simulate the calibration's window `seeds` times with the fitted scenario and band each figure."""
    if seeds < 2:
        raise GoodputError(f"--seeds: a band needs at least 2 runs, got {seeds}")
    scenario = calibration.scenario().with_values(
        {"simulation.days": calibration.window.days, "simulation.telemetry": False}
    )
    uncertainty = calibration.uncertainty()
    tasks = [
        Task(0, uncertainty.scenario_for(scenario, seed), seed, measure="window")
        for seed in seeds_of(scenario, seeds)
    ]
    rows = (executor or LocalExecutor()).run(tasks, progress)
    observed = observed_figures(store, calibration)
    bounds = {} if observed.checkpointed else UNSEEN_WITHOUT_CHECKPOINTS
    figures = {
        name: _band(observed.figure(name), [row[name] for row in rows], bounds.get(name, "measured"))
        for name in FIGURES
    }
    causes = sorted(set(observed.incidents_by_cause).union(*(row["incidents_by_cause"] for row in rows)))
    by_cause = {
        cause: _band(
            float(observed.incidents_by_cause.get(cause, 0)),
            [row["incidents_by_cause"].get(cause, 0) for row in rows],
        )
        for cause in causes
    }
    return Backtest(
        seeds=seeds,
        days=calibration.window.days,
        figures=figures,
        by_cause=by_cause,
        repair_by_day=_repair_days(observed, rows),
        observed=observed,
    )


def _band(observed: float | None, simulated: list, observed_is: str = "measured") -> Band:
    band = prediction_interval(simulated)
    if band is None:
        return Band(_round(observed), None, None, None, None, observed_is)
    low, median, high = band.low, band.median, band.high
    if observed is None:
        inside = None
    elif (
        observed_is == "upper bound"
    ):  # the truth is at most the observed: it contradicts the band only below it
        inside = observed >= low - TOLERANCE
    elif observed_is == "lower bound":
        inside = observed <= high + TOLERANCE
    else:
        inside = low - TOLERANCE <= observed <= high + TOLERANCE
    verdict = None if inside is None else bool(inside)
    return Band(_round(observed), _round(low), _round(median), _round(high), verdict, observed_is)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def _repair_days(observed: WindowFigures, rows: list[dict]) -> dict[str, list[float]]:
    days = len(observed.hosts_in_repair_by_day)
    out: dict[str, list[float]] = {"observed": [], "low": [], "median": [], "high": []}
    for day in range(days):
        band = prediction_interval(
            [row["hosts_in_repair_by_day"][day] for row in rows if day < len(row["hosts_in_repair_by_day"])]
        )
        if band is None:
            continue
        out["observed"].append(round(observed.hosts_in_repair_by_day[day], 6))
        for name, value in (("low", band.low), ("median", band.median), ("high", band.high)):
            out[name].append(round(value, 6))
    return out
