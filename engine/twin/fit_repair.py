"""Time to repair, fitted to a run's incidents and host states: quantiles as observed, and the simulator's repair
law (engine.sim.repair) fitted to them.

The simulator takes a failed host through fixed steps (repair.drain, repair.diagnose), a wait for one of
repair.technicians, a hands-on repair (exponential, mean repair.fix), for a share repair.rma_fraction a return to
the vendor (exponential, mean repair.rma_time), and burn-in (repair.burn_in). Where the run's host_states show
those steps (a simulated run, or any source that records "diagnosing" and "repair"), each repair is taken apart:
- the fixed steps are the medians of the completed "draining", "diagnosing" and "burn_in" intervals;
- the hands-on and vendor time is the time in "repair", fitted as the mixture of engine.twin.repair_law, a
  lemon's repair (its host's repair.lemon_failures-th within repair.lemon_window, the simulator's rule at the
  keys' defaults) known to go to the vendor: else every lemon would count twice, in the share fitted and again
  as the twin's own lemons;
- the wait for hands is the time in "down" between them, and the technicians are fitted to it
  (engine.twin.fit_technicians).
Where they do not (an observed cluster whose Slurm shows only draining and down), the whole time from incident to
return, less the default fixed steps, is fitted as the mixture, and a repair queue can only be suspected: repairs
that begin behind more hosts already out taking longer (Kendall's tau) is said, as technicians cannot be fitted.
Repairs still under way at the window's end count as right-censored ("at least this long") throughout.

With fewer than MIN_EVENTS completed repairs nothing is fitted. With no repair longer than RMA_AFTER_S (completed
or not), no vendor return was seen: repair.rma_fraction is a fitted zero with its one-sided 90 % upper bound, and
repair.fix one exponential's mean with its exact interval.

The Kaplan-Meier median and 90th percentile of the whole time, censored the same way, are reported beside.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy.stats import kendalltau

from engine.limits import MAX_HOSTS
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME
from engine.twin.estimate import LEVEL, MIN_EVENTS, Estimate, exponential_mean_interval, median_estimate
from engine.twin.fit_technicians import QueueFit, fit_technicians
from engine.twin.repair_law import fit_mixture
from engine.twin.uncertainty import IntegerBetween, Law, MeanOfExponential, NormalOnScale
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

RMA_AFTER_S = SECONDS_PER_DAY  # repairs longer than a day are the evidence of vendor returns
FIXED_STEPS = {"repair.drain": "draining", "repair.diagnose": "diagnosing", "repair.burn_in": "burn_in"}
STEP_STATES = ("draining", "diagnosing", "down", "repair", "burn_in")
QUEUE_P_VALUE = 0.01  # Kendall's test of "later in the queue, longer to repair"
IMPLAUSIBLE_FIX_S = 60.0  # a hands-on repair under a minute is no repair: the law fitted is not the cluster's
IMPLAUSIBLE_RMA_SHARE = 0.9


@dataclass(frozen=True)
class RepairFit:
    """Time to repair over the window (Kaplan-Meier, right-censored), and how the repairs were read."""

    repairs: int  # completed within the window
    censored: int  # still in repair at the window's end
    median_s: float | None
    p90_s: float | None
    steps_seen: bool = False  # the host states showed each step (the wait for hands apart from the repair)
    waited: int = 0  # repairs that waited for a technician
    total_wait_s: float = 0.0


@dataclass(frozen=True)
class RepairKeys:
    """What the repair fit gives calibrate: the summary, the keys, the fit's laws and what it could not see."""

    fit: RepairFit | None
    keys: dict[str, Estimate] = field(default_factory=dict)
    laws: tuple[Law, ...] = ()
    warnings: tuple[str, ...] = ()


def fit_repair(incidents: pl.DataFrame, states: pl.DataFrame, end_s: float, source: str) -> RepairKeys:
    """The repair keys of the module's docstring from the unexpected incidents (those of the window) and the
    run's host states, up to end_s."""
    episodes = repair_episodes(incidents, states, end_s)
    if episodes is None:
        return RepairKeys(None)
    total, done = episodes["took"].to_numpy(), episodes["done"].to_numpy()
    median, p90 = kaplan_meier_quantiles(total, done, (0.5, 0.9))
    fit = RepairFit(int(done.sum()), int((~done).sum()), median, p90)
    if fit.repairs < MIN_EVENTS:
        return RepairKeys(fit)
    if float(episodes["repair"].sum()) > 0:  # the steps show: each repair taken apart
        return _from_steps(episodes, fit, end_s, source)
    # The steps do not show (a watch's down and drain, a fault history's outages): each outage is taken whole as
    # the repair law's time, and the fixed steps as none. Taking the default steps (2 h 17 min) off each outage
    # instead made every outage shorter than them last them in the twin: its median repair ran 1.6x long on a
    # fault history whose outages last about 4 h.
    keys, laws, warnings = _service_keys(np.clip(total, 1.0, None), done, source)
    keys |= {key: Estimate(0.0, n=fit.repairs, source=source) for key in FIXED_STEPS}
    # an outage seen whole holds any wait for hands already: the twin's technicians must add none
    hands = 2 * _most_out_at_once(episodes)
    keys["repair.technicians"] = Estimate(min(hands, MAX_HOSTS), n=fit.repairs, source="assumed")
    warnings.append(
        "the host states show no repair step (drain, diagnosis, burn-in): each outage is fitted whole as the repair"
        f" law's time, the twin's fixed steps are none and its technicians {hands:,} (twice the most hosts out at"
        " once), so that no repair waits on top of what the outages held"
    )
    queue = _queue_suspected(episodes)
    if queue:
        warnings.append(queue)
    return RepairKeys(fit, keys, laws, tuple(warnings))


def _most_out_at_once(episodes: pl.DataFrame) -> int:
    """The most outages under way at one instant (a sweep over their starts and ends)."""
    starts, ends = episodes["t_s"].to_numpy(), (episodes["t_s"] + episodes["took"]).to_numpy()
    times = np.concatenate([starts, ends])
    steps = np.concatenate([np.ones(starts.size), -np.ones(ends.size)])
    order = np.lexsort((steps, times))  # an end before a start at the same instant
    return max(1, int(np.cumsum(steps[order]).max()))


def repair_episodes(incidents: pl.DataFrame, states: pl.DataFrame, end_s: float) -> pl.DataFrame | None:
    """One row per unexpected incident that took its host out of service: when it began (t_s), how long until
    the host was back or the window ended (took, done), and the seconds of it in each step's state. A fault that
    left its host in service (a job-level cause: back at once) is no repair."""
    if "repaired_s" not in incidents.columns or incidents.is_empty():
        return None
    took = incidents.filter(
        ~pl.col("planned").fill_null(False)
        & pl.col("host_id").is_not_null()
        & (pl.col("repaired_s").is_null() | (pl.col("repaired_s") > pl.col("t_s")))
    ).select(
        "t_s",
        "host_id",
        done=pl.col("repaired_s").is_not_null() & (pl.col("repaired_s") <= end_s),
        until=pl.min_horizontal(pl.col("repaired_s").fill_null(end_s), pl.lit(end_s)),
    )
    if took.is_empty():
        return None
    took = took.with_row_index("episode").with_columns(took=pl.col("until") - pl.col("t_s"))
    seconds = {s: pl.lit(0.0).alias(s) for s in STEP_STATES}
    if not states.is_empty():
        overlap = (
            took.join(
                states.filter(pl.col("state").is_in([*STEP_STATES, "retired"])), on="host_id", how="inner"
            )
            .filter((pl.col("start_s") < pl.col("until")) & (pl.col("end_s") > pl.col("t_s")))
            .with_columns(
                s=pl.min_horizontal("end_s", "until") - pl.max_horizontal("start_s", "t_s"),
                first_s=pl.max_horizontal("start_s", "t_s"),
            )
        )
        by_state = overlap.group_by("episode").agg(
            *(pl.col("s").filter(pl.col("state") == s).sum().alias(s) for s in [*STEP_STATES, "retired"]),
            joined_s=pl.col("first_s").filter(pl.col("state").is_in(["down", "repair"])).min(),
        )
        took = (
            took.join(by_state, on="episode", how="left")
            .sort("episode")
            .with_columns(pl.col([*STEP_STATES, "retired"]).fill_null(0.0))
        )
        # a host retired for good is not repaired; one whose states show no step out of service was not taken out
        took = took.filter((pl.col("retired") == 0) & (pl.sum_horizontal(*STEP_STATES) > 0))
        took = took.drop("episode", "retired").with_row_index("episode")
        return took if took.height else None
    return took.with_columns(*seconds.values(), joined_s=pl.lit(None, pl.Float64))


def _from_steps(episodes: pl.DataFrame, fit: RepairFit, end_s: float, source: str) -> RepairKeys:
    keys: dict[str, Estimate] = {}
    laws: list[Law] = []
    for key, state in FIXED_STEPS.items():
        # a step is over once a later one began or the host was back: its time in the repair is its length
        later = STEP_STATES[STEP_STATES.index(state) + 1 :]
        over = pl.col("done") | (pl.sum_horizontal(*later) > 0) if later else pl.col("done")
        lengths = episodes.filter(over & (pl.col(state) > 0))[state].to_numpy()
        if lengths.size >= MIN_EVENTS:
            keys[key] = median_estimate(lengths, source)
    # the hands-on and vendor time: complete once burn-in began or the host was back
    served = episodes.filter(pl.col("repair") > 0)
    service_done = (served["done"] | (served["burn_in"] > 0)).to_numpy()
    service, warnings = {}, []
    if int(service_done.sum()) >= MIN_EVENTS:
        lemons = lemon_repairs(episodes)[episodes["repair"].to_numpy() > 0]
        service, service_laws, warnings = _service_keys(
            served["repair"].to_numpy(), service_done, source, lemons
        )
        keys |= service
        laws += service_laws
    queue = None
    joined = episodes.filter(pl.col("joined_s").is_not_null())
    if "repair.fix" in keys and joined.height:
        queue = fit_technicians(
            joined["joined_s"].to_numpy(), joined["down"].to_numpy(), keys["repair.fix"].value, end_s, source
        )
    if queue is not None:
        keys["repair.technicians"] = queue.technicians
        laws += _technician_laws(queue)
        warnings += _queue_words(queue)
    summary = RepairFit(
        fit.repairs,
        fit.censored,
        fit.median_s,
        fit.p90_s,
        steps_seen=True,
        waited=queue.waited if queue else 0,
        total_wait_s=queue.total_wait_s if queue else 0.0,
    )
    return RepairKeys(summary, keys, tuple(laws), tuple(warnings))


def lemon_repairs(episodes: pl.DataFrame) -> np.ndarray:
    """Which repairs are a lemon's, by the simulator's rule (engine.sim.repair.Repairs._is_lemon) at the keys'
    defaults: a host's repair.lemon_failures-th repair within repair.lemon_window, its count starting again after.
    A loop over the repairs of each host: a run has thousands of repairs, not millions."""
    failures = int(KEY_BY_NAME["repair.lemon_failures"].default)
    window = parse_duration(KEY_BY_NAME["repair.lemon_window"].default)
    lemon = np.zeros(episodes.height, dtype=bool)
    ordered = episodes.select("episode", "host_id", "t_s").sort("host_id", "t_s")
    history: dict[int, list[float]] = {}
    for index, host, t in ordered.iter_rows():
        recent = [h for h in history.get(host, []) if t - h <= window] + [t]
        if len(recent) >= failures:
            lemon[index] = True
            recent = []
        history[host] = recent
    return lemon


def _service_keys(
    y: np.ndarray, done: np.ndarray, source: str, vendor: np.ndarray | None = None
) -> tuple[dict[str, Estimate], list[Law], list[str]]:
    """repair.fix, repair.rma_fraction and repair.rma_time from hands-on (and vendor) times y, censored where
    not done (`vendor`: the repairs known to go to the vendor); their laws; warnings where the law is
    implausible."""
    n, completed = int(y.size), int(done.sum())
    if int((y > RMA_AFTER_S).sum()) == 0:  # no vendor return seen: one exponential, and a fitted zero share
        total = float(np.clip(y, 1.0, None).sum())
        low, high = exponential_mean_interval(total, float(completed))
        upper = 1.0 - (1.0 - LEVEL) ** (1.0 / n)  # Clopper-Pearson's one-sided bound after 0 of n
        keys = {
            "repair.fix": Estimate(total / completed, low, high, completed, source),
            "repair.rma_fraction": Estimate(0.0, 0.0, upper, n, source),
        }
        return keys, [MeanOfExponential("repair.fix", total, completed)], []
    returned = int(((y > RMA_AFTER_S) & done).sum())  # vendor returns seen to their end
    held = None if returned >= MIN_EVENTS else parse_duration(KEY_BY_NAME["repair.rma_time"].default)
    law = fit_mixture(y, done, RMA_AFTER_S, vendor, rma_s=held)
    assert law is not None  # some repair completed: the caller checked
    (p_low, p_high), (fix_low, fix_high), (rma_low, rma_high) = (law.interval(i) for i in range(3))
    keys = {
        "repair.fix": Estimate(law.fix_s, fix_low, fix_high, completed, source),
        "repair.rma_fraction": Estimate(law.p, p_low, p_high, n, source),
    }
    warnings = []
    if law.rma_fitted:
        keys["repair.rma_time"] = Estimate(law.rma_s, rma_low, rma_high, returned, source)
    else:
        warnings.append(
            f"{returned} vendor return{'' if returned == 1 else 's'} seen to the end (under {MIN_EVENTS}):"
            " repair.rma_time keeps its default, and the share and the fix are fitted beside it"
        )
    if law.fix_s < IMPLAUSIBLE_FIX_S or law.p > IMPLAUSIBLE_RMA_SHARE:
        warnings.append(
            f"the repair law fitted is implausible (a {law.fix_s:,.0f} s hands-on fix, {law.p:.1%} vendor"
            " returns): the repairs are not what the simulator's repair law can say, and the twin's hosts in"
            " repair will be off"
        )
    laws: list[Law] = []
    if law.covariance is not None:
        names = _REPAIR_LAW_KEYS[: law.centre.size]
        laws.append(
            NormalOnScale(
                names, ("logit", "log", "log")[: law.centre.size], tuple(law.centre), law.covariance
            )
        )
    else:
        warnings.append(
            "the repair law's uncertainty could not be estimated (a flat likelihood): it is kept fixed"
        )
    return keys, laws, warnings


_REPAIR_LAW_KEYS = ("repair.rma_fraction", "repair.fix", "repair.rma_time")


def _technician_laws(queue: QueueFit) -> list[Law]:
    e = queue.technicians
    if e.high is None or e.low is None or e.low == e.high:
        return []
    return [IntegerBetween("repair.technicians", int(e.value), int(e.low), int(e.high))]


def _queue_words(queue: QueueFit) -> list[str]:
    e = queue.technicians
    if queue.waited == 0:
        return [
            f"no repair waited for a technician: there are at least {int(e.low)} technicians (the twin keeps"
            f" {e.value})"
        ]
    hours = queue.total_wait_s / SECONDS_PER_HOUR
    return [
        f"repair queue: {queue.waited} repairs waited {hours:,.0f} host-hours in all for a technician, as"
        f" {e.value} technicians would (90 % set {int(e.low)} to {int(e.high)})"
    ]


def _queue_suspected(episodes: pl.DataFrame) -> str | None:
    """Without the wait for hands in the host states: do repairs that begin behind more hosts already out take
    longer? (Kendall's tau of each repair's time against the hosts out when it began.)"""
    ordered = episodes.sort("t_s")
    starts, ends = ordered["t_s"].to_numpy(), (ordered["t_s"] + ordered["took"]).to_numpy()
    if starts.size < 2 * MIN_EVENTS:
        return None
    ahead = np.array([int(((starts[:i] <= t) & (ends[:i] > t)).sum()) for i, t in enumerate(starts)])
    done = ordered["done"].to_numpy()
    if np.unique(ahead[done]).size < 2:
        return None
    tau, p_value = kendalltau(ahead[done], ordered["took"].to_numpy()[done])
    if not (tau > 0 and p_value < QUEUE_P_VALUE):
        return None
    return (
        f"repair queue suspected: repairs wait for each other (those that began behind more hosts out took"
        f" longer, Kendall's tau {tau:.2f}, p={p_value:.1g}); repair.technicians is not fitted without the wait"
        " for hands in the host states, and repair.fix holds the wait"
    )


def kaplan_meier_quantiles(
    durations: np.ndarray, observed: np.ndarray, quantiles: tuple[float, ...]
) -> list[float | None]:
    """Quantiles of a right-censored sample from the Kaplan-Meier survival curve (None where the curve never
    falls that far: too many censored)."""
    order = np.lexsort((~observed, durations))  # at a tie, an event before a censoring
    d, e = durations[order], observed[order]
    at_risk = np.arange(d.size, 0, -1, dtype=float)
    survival = np.cumprod(np.where(e, 1.0 - 1.0 / at_risk, 1.0))
    out: list[float | None] = []
    for q in quantiles:
        below = np.flatnonzero(survival <= 1.0 - q + 1e-12)
        out.append(float(d[below[0]]) if below.size else None)
    return out


assert math.isclose(LEVEL, 0.9)  # the one-sided bound above is Clopper-Pearson's at this level
