"""Backtest: does the fitted twin reproduce the window it was fitted to? (`goodput calibrate --backtest`)

The fitted scenario (engine.twin.calibrate) is simulated over the window's length under N seeds, each run with the
fitted keys drawn from their laws first (engine.twin.uncertainty: the band holds the fit's uncertainty as well as
the runs' luck), and each figure the observed run shows over the window (engine.analysis.window_figures, the same
function on both sides) is put beside the twin's band: where a new run's value falls with probability 90 %
(engine.twin.prediction: order statistics of the runs; with fewer than 19 runs it holds less, and says so). An
observed value outside its band is the twin's published error: the fit misses something the cluster does (a cause
it does not model, a rate that changed inside the window, a repair queue it does not have), and the output says
so plainly.

A time split, the backtest that tells the truth (`goodput calibrate --until D --backtest` on a run that goes on
after D): the fit saw only the history before D, and the twin forecasts the window after it, each run simulating
a warm-up first (the last WARM_UP_DAYS of the fit, at most) so that the window does not open with every host
healthy and no repair under way; the observed figures are those after D. Beside the five figures it bands the
faults of each week, the hosts out of each day, the repair-time quantiles and the share of faults of unknown
cause (a beta-binomial prediction from the fit's share: the simulator has no unknown cause), and gives each
figure's error of the median (the median over the observed, less one).

Seeds: simulation.seed, simulation.seed + 1, ... as in a sweep (engine.twin.sweep), so a backtest is
reproducible and runs on the sweep's executors.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from scipy.stats import betabinom

from engine.analysis.window_figures import WindowFigures, window_figures
from engine.errors import GoodputError
from engine.sim.failures import CAUSE_KEYS
from engine.store import Store, query_frame
from engine.twin.calibrate import Calibration, Window
from engine.twin.prediction import band_level, prediction_interval
from engine.twin.sweep import Executor, LocalExecutor, Task, seeds_of
from engine.twin.uncertainty import METHOD
from engine.units import SECONDS_PER_DAY

SEEDS = 20  # the default: the smallest and largest of 20 runs hold a new run's value 90.5 % of the time
# The figures of the backtest, in the order shown; each is a field of WindowFigures (definitions: "Twin").
FIGURES = ("interruptions", "incidents", "gpu_hours_lost", "ettr", "hosts_in_repair_mean")
# and the repair time's quantiles (engine.analysis.window_figures), banded where the observed window has repairs
REPAIR_FIGURES = ("repair_median_s", "repair_p90_s")
WARM_UP_DAYS = (
    30.0  # a time split's runs simulate this much of the fit's end first (at most the fit's window)
)
MIN_FORECAST_DAYS = 1.0  # a time split must leave at least a day after D to compare anything
# Figures the observed run sees only in part when the largest job's checkpoints were not read (Slurm records
# none): its lost work after the last checkpoint and its checkpoint writes are unseen.
UNSEEN_WITHOUT_CHECKPOINTS = {"ettr": "upper bound", "gpu_hours_lost": "lower bound"}
TOLERANCE = 1e-9  # rounding of sums, not a statistical allowance
SIMULATED_CAUSES = frozenset(CAUSE_KEYS)  # what the simulator can draw; anything else is an unknown cause
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
    median_error: float | None = None  # the twin's median over the observed value, less one (None at 0)


@dataclass(frozen=True)
class Split:
    """A time split: fitted before `until_s`, forecast over [until_s, end_s) after `warm_up_s` of warm-up."""

    until_s: float
    end_s: float
    warm_up_s: float

    @property
    def forecast_days(self) -> float:
        return (self.end_s - self.until_s) / SECONDS_PER_DAY


@dataclass(frozen=True)
class Backtest:
    seeds: int
    days: float
    figures: dict[str, Band]
    by_cause: dict[str, Band]  # incidents by cause, every cause seen on either side
    repair_by_day: dict[str, list[float]]  # observed, low, median, high hosts in repair for each day
    observed: WindowFigures
    faults_by_week: dict[str, list] = field(default_factory=dict)  # observed, low, median, high, inside
    unknown_share: Band | None = None  # faults of unknown cause, observed against the fit's share
    split: Split | None = None

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
            "faults_by_week": self.faults_by_week,
            "unknown_share": asdict(self.unknown_share) if self.unknown_share is not None else None,
            "largest_job": self.observed.largest_job,
            "split": None
            if self.split is None
            else {
                "until_s": self.split.until_s,
                "end_s": self.split.end_s,
                "forecast_days": round(self.split.forecast_days, 6),
                "warm_up_days": round(self.split.warm_up_s / SECONDS_PER_DAY, 6),
            },
            "outside": self.outside(),
        }


def observed_figures(store: Store, calibration: Calibration, window: Window | None = None) -> WindowFigures:
    """The observed run's figures over `window` (default: the calibration's)."""
    window = window or calibration.window
    with store.connect(calibration.run_id) as con:
        present = {
            row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        tables = {
            name: query_frame(con, f'SELECT * FROM "{name}"')  # noqa: S608 (a fixed table name)
            for name in TABLES
            if name in present
        }
    return window_figures(tables, window.start_s, window.end_s)


def split_of(store: Store, calibration: Calibration) -> Split | None:
    """The time split of a calibration that stopped before its run's end (--until D), or None."""
    run_end = store.info(calibration.run_id).duration_s
    until = calibration.window.end_s
    if until >= run_end - 1e-6:
        return None
    if run_end - until < MIN_FORECAST_DAYS * SECONDS_PER_DAY:
        raise GoodputError(
            f"--until: the run goes on {(run_end - until) / 3600:.1f} hours after it, too little to forecast;"
            f" a time split needs at least {MIN_FORECAST_DAYS:g} day after --until (or leave --until out to"
            " backtest the window itself)"
        )
    warm_up = min(calibration.window.days, WARM_UP_DAYS) * SECONDS_PER_DAY
    return Split(until, run_end, warm_up)


def backtest(
    store: Store,
    calibration: Calibration,
    seeds: int = SEEDS,
    *,
    executor: Executor | None = None,
    progress: Callable[[float], None] | None = None,
) -> Backtest:
    """Simulate the calibration's window `seeds` times with the fitted scenario and band each figure; where the
    calibration stopped before the run's end, forecast the rest instead (a time split, see the module)."""
    if seeds < 2:
        raise GoodputError(f"--seeds: a band needs at least 2 runs, got {seeds}")
    split = split_of(store, calibration)
    measured = calibration.window if split is None else Window(split.until_s, split.end_s)
    warm_up_s = 0.0 if split is None else split.warm_up_s
    days = (warm_up_s + measured.end_s - measured.start_s) / SECONDS_PER_DAY
    scenario = calibration.scenario().with_values({"simulation.days": days, "simulation.telemetry": False})
    uncertainty = calibration.uncertainty()
    tasks = [
        Task(0, uncertainty.scenario_for(scenario, seed), seed, measure="window", warm_up_s=warm_up_s)
        for seed in seeds_of(scenario, seeds)
    ]
    rows = (executor or LocalExecutor()).run(tasks, progress)
    observed = observed_figures(store, calibration, measured)
    bounds = {} if observed.checkpointed else UNSEEN_WITHOUT_CHECKPOINTS
    figures = {
        name: _band(observed.figure(name), [row[name] for row in rows], bounds.get(name, "measured"))
        for name in FIGURES
    }
    if observed.repairs:
        for name in REPAIR_FIGURES:
            figures[name] = _band(observed.figure(name), [row[name] for row in rows if row[name] is not None])
    causes = sorted(set(observed.incidents_by_cause).union(*(row["incidents_by_cause"] for row in rows)))
    by_cause = {
        cause: _band(
            float(observed.incidents_by_cause.get(cause, 0)),
            [row["incidents_by_cause"].get(cause, 0) for row in rows],
        )
        for cause in causes
        if cause in SIMULATED_CAUSES  # an unknown cause has its share's band below, not a count's
    }
    return Backtest(
        seeds=seeds,
        days=measured.days,
        figures=figures,
        by_cause=by_cause,
        repair_by_day=_repair_days(observed, rows),
        observed=observed,
        faults_by_week=_weeks(observed, rows),
        unknown_share=_unknown_share(calibration, observed),
        split=split,
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
    error = None if observed is None or observed == 0 else median / observed - 1.0
    return Band(
        _round(observed), _round(low), _round(median), _round(high), verdict, observed_is, _round(error)
    )


def _weeks(observed: WindowFigures, rows: list[dict]) -> dict[str, list]:
    """The faults of each week, observed beside the twin's band (each week's own prediction interval)."""
    out: dict[str, list] = {"observed": [], "low": [], "median": [], "high": [], "inside": []}
    for week, count in enumerate(observed.faults_by_week):
        band = prediction_interval(
            [row["faults_by_week"][week] for row in rows if week < len(row["faults_by_week"])]
        )
        if band is None:
            continue
        out["observed"].append(count)
        for name, value in (("low", band.low), ("median", band.median), ("high", band.high)):
            out[name].append(round(value, 6))
        out["inside"].append(bool(band.low - TOLERANCE <= count <= band.high + TOLERANCE))
    return out


def _unknown_share(calibration: Calibration, observed: WindowFigures) -> Band | None:
    """The observed share of faults of unknown cause beside where it falls 90 % of the time if each fault is
    unknown with the fit's share: a beta-binomial prediction (Jeffreys' posterior of the fit's share), as the
    simulator draws no unknown cause. None where neither window had such a fault."""
    fitted_unknown, fitted_faults = calibration.unknown_faults
    n = observed.incidents
    unknown = sum(
        count for cause, count in observed.incidents_by_cause.items() if cause not in SIMULATED_CAUSES
    )
    if n == 0 or (fitted_unknown == 0 and unknown == 0):
        return None
    law = betabinom(n, fitted_unknown + 0.5, fitted_faults - fitted_unknown + 0.5)
    low, median, high = (float(law.ppf(q)) / n for q in (0.05, 0.5, 0.95))
    share = unknown / n
    inside = low - TOLERANCE <= share <= high + TOLERANCE
    error = None if share == 0 else median / share - 1.0
    return Band(
        _round(share), _round(low), _round(median), _round(high), bool(inside), "measured", _round(error)
    )


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
