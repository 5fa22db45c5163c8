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
Where they do not (an observed cluster whose Slurm shows only draining and down, a fault history), the whole time
from incident to return is fitted as the mixture, the fixed steps taken as none and technicians as many as no
repair waits for (twice the most hosts out at once: an outage seen whole holds its wait already); a repair queue
can only be suspected: repairs that begin behind more hosts already out taking longer (Kendall's tau) is said.
Repairs still under way at the window's end count as right-censored ("at least this long") throughout.

With fewer than MIN_EVENTS completed repairs nothing is fitted. With no repair longer than RMA_AFTER_S (completed
or not), no vendor return was seen: repair.rma_fraction is a fitted zero with its one-sided 90 % upper bound, and
repair.fix one exponential's mean with its exact interval. Where some are longer but the mixture fits no better
than one exponential (a likelihood ratio at MIXTURE_P: outages of weeks with no short ones), the same: a mixture
fitted to exponential times wanders a ridge of equal likelihood, and the twin's draws from it spread its mean
from days to months.

The Kaplan-Meier median and 90th percentile of the whole time, censored the same way, are reported beside
(scipy.stats.ecdf of the right-censored sample).

Repair time by class of cause (issue 46): a PSU can take weeks where a GPU reseat takes hours, and one law misfits
both. After the overall law, the same law is fitted, the same way (steps seen or outages whole), to the repairs of
each class with at least MIN_CLASS_REPAIRS completed: the scope of the incident's cause (engine.sim.failures.SCOPE:
gpu, host, network; a job-level cause that took its node out counts as a host's, as the twin of a history with no
job takes it as host maintenance; `unknown` and causes the simulator does not model count in the overall law
only). Its keys are the class's (repair.fix_<class>, repair.rma_fraction_<class>, repair.rma_time_<class>, each
with its interval, n and source) and so are its laws' names; a class with too few vendor returns seen to their end
to fit its turnaround holds the overall law's (and emits none: the twin takes the overall key). A class's keys are
emitted where its law differs from the overall one: a likelihood-ratio test of the class's repairs under its own
law against the overall law, at DIFFER_P. A class that does not keeps the overall law, pooled over every class:
emitting every class fitted, alike or not, drew each from its own smaller sample and put the twin's median off by
1.31x the truth's own where the pooled law gives 1.25x (tests/test_twin_coverage.py's 24 truths, one law each).
A warning names the classes that differ and those that do not, with their mean and median beside the overall's.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy.stats import CensoredData, chi2, ecdf, kendalltau

from engine.limits import MAX_HOSTS
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME, REPAIR_CLASSES
from engine.sim.failures import SCOPE
from engine.twin.estimate import LEVEL, MIN_EVENTS, Estimate, exponential_mean_interval, median_estimate
from engine.twin.fit_technicians import QueueFit, fit_technicians
from engine.twin.repair_law import RepairLaw, fit_mixture, log_likelihood
from engine.twin.uncertainty import IntegerBetween, Law, MeanOfExponential, NormalOnScale
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

RMA_AFTER_S = SECONDS_PER_DAY  # repairs longer than a day are the evidence of vendor returns
FIXED_STEPS = {"repair.drain": "draining", "repair.diagnose": "diagnosing", "repair.burn_in": "burn_in"}
STEP_STATES = ("draining", "diagnosing", "down", "repair", "burn_in")
QUEUE_P_VALUE = 0.01  # Kendall's test of "later in the queue, longer to repair"
IMPLAUSIBLE_FIX_S = 60.0  # a hands-on repair under a minute is no repair: the law fitted is not the cluster's
IMPLAUSIBLE_RMA_SHARE = 0.9
MIN_CLASS_REPAIRS = 30  # completed repairs of a class of cause that get a law of their own
DIFFER_P = 0.01  # a class's law differs from the overall one where the likelihood ratio's p is below this
MIXTURE_P = 0.01  # the vendor mixture is fitted where it beats one exponential at this level


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


@dataclass(frozen=True)
class ServiceFit:
    """The hands-on and vendor law fitted to one set of repairs: its keys, laws and warnings, and the law."""

    keys: dict[str, Estimate]
    laws: list[Law]
    warnings: list[str]
    law: RepairLaw


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
    whole = np.clip(total, 1.0, None)
    service = _service_keys(whole, done, source)
    classes = _by_class(repair_classes(episodes["cause"]), whole, done, source, None, service.law)
    keys, laws, warnings = service.keys | classes.keys, service.laws + classes.laws, service.warnings
    warnings += classes.warnings
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
        cause=pl.col("cause") if "cause" in incidents.columns else pl.lit(None, pl.String),
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
    warnings: list[str] = []
    if int(service_done.sum()) >= MIN_EVENTS:
        lemons = lemon_repairs(episodes)[episodes["repair"].to_numpy() > 0]
        y = served["repair"].to_numpy()
        service = _service_keys(y, service_done, source, lemons)
        classes = _by_class(repair_classes(served["cause"]), y, service_done, source, lemons, service.law)
        keys |= service.keys | classes.keys
        laws += service.laws + classes.laws
        warnings = service.warnings + classes.warnings
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
    y: np.ndarray,
    done: np.ndarray,
    source: str,
    vendor: np.ndarray | None = None,
    *,
    cls: str | None = None,
    overall: RepairLaw | None = None,
) -> ServiceFit:
    """repair.fix, repair.rma_fraction and repair.rma_time (a class's own keys, with `cls`) from hands-on (and
    vendor) times y, censored where not done (`vendor`: the repairs known to go to the vendor); their laws;
    warnings where the law is implausible. A vendor turnaround too seldom seen to fit is held at the `overall`
    law's (a class), else at the key's default."""
    n, completed = int(y.size), int(done.sum())
    fix_key, share_key, rma_key = (_key(base, cls) for base in ("fix", "rma_fraction", "rma_time"))
    default_rma = (
        overall.rma_s if overall is not None else parse_duration(KEY_BY_NAME["repair.rma_time"].default)
    )
    if int((y > RMA_AFTER_S).sum()) == 0:  # no vendor return seen: one exponential, and a fitted zero share
        upper = 1.0 - (1.0 - LEVEL) ** (1.0 / n)  # Clopper-Pearson's one-sided bound after 0 of n
        share = Estimate(0.0, 0.0, upper, n, source)
        return _one_exponential(y, done, source, (fix_key, share_key), share, default_rma, [])
    returned = int(((y > RMA_AFTER_S) & done).sum())  # vendor returns seen to their end
    law = fit_mixture(y, done, RMA_AFTER_S, vendor, rma_s=None if returned >= MIN_EVENTS else default_rma)
    assert law is not None  # some repair completed: the caller checked
    alike = _mixture_not_better(law, y, done, vendor)
    if alike is not None:  # long repairs, but no sign of a vendor share: the mixture's ridge is not fitted
        said = (
            f"the {'' if cls is None else cls + ' '}repair times fit one exponential as well as a mixture with vendor"
            f" returns (likelihood ratio p = {alike:.2g}): {share_key} is a fitted zero and {fix_key} their mean"
        )
        share = Estimate(0.0, n=n, source=source)
        return _one_exponential(y, done, source, (fix_key, share_key), share, default_rma, [said])
    (p_low, p_high), (fix_low, fix_high), (rma_low, rma_high) = (law.interval(i) for i in range(3))
    keys = {
        fix_key: Estimate(law.fix_s, fix_low, fix_high, completed, source),
        share_key: Estimate(law.p, p_low, p_high, n, source),
    }
    warnings = []
    if law.rma_fitted:
        keys[rma_key] = Estimate(law.rma_s, rma_low, rma_high, returned, source)
    else:
        kept = "keeps its default" if cls is None else f"takes the overall law's ({_readable(law.rma_s)})"
        warnings.append(
            f"{returned} vendor return{'' if returned == 1 else 's'}{_of(cls)} seen to the end (under"
            f" {MIN_EVENTS}): {rma_key} {kept}, and the share and the fix are fitted beside it"
        )
    if law.fix_s < IMPLAUSIBLE_FIX_S or law.p > IMPLAUSIBLE_RMA_SHARE:
        warnings.append(
            f"the repair law fitted{_of(cls)} is implausible (a {law.fix_s:,.0f} s hands-on fix, {law.p:.1%}"
            " vendor returns): the repairs are not what the simulator's repair law can say, and the twin's hosts"
            " in repair will be off"
        )
    laws: list[Law] = []
    if law.covariance is not None:
        names = (share_key, fix_key, rma_key)[: law.centre.size]
        laws.append(
            NormalOnScale(
                names, ("logit", "log", "log")[: law.centre.size], tuple(law.centre), law.covariance
            )
        )
    else:
        warnings.append(
            f"the repair law's uncertainty{_of(cls)} could not be estimated (a flat likelihood): it is kept fixed"
        )
    return ServiceFit(keys, laws, warnings, law)


def _one_exponential(
    y: np.ndarray,
    done: np.ndarray,
    source: str,
    names: tuple[str, str],
    share: Estimate,
    rma_s: float,
    warnings: list[str],
) -> ServiceFit:
    """The hands-on time as one exponential (its mean with the exact interval, the law of that mean) and the
    vendor share's fitted zero `share` (names: the fix's key and the share's)."""
    fix_key, share_key = names
    completed = int(done.sum())
    total = float(np.clip(y, 1.0, None).sum())
    low, high = exponential_mean_interval(total, float(completed))
    keys = {fix_key: Estimate(total / completed, low, high, completed, source), share_key: share}
    law = RepairLaw(0.0, total / completed, rma_s, None, rma_fitted=False)
    return ServiceFit(keys, [MeanOfExponential(fix_key, total, completed)], warnings, law)


def _mixture_not_better(
    law: RepairLaw, y: np.ndarray, done: np.ndarray, vendor: np.ndarray | None
) -> float | None:
    """The likelihood ratio's p-value of the mixture fitted against one exponential of the same times, where
    the mixture is no better (p at or above MIXTURE_P; None where it is): exponential times longer than
    RMA_AFTER_S start the mixture's fit, which then wanders a ridge of equal likelihood (a share of any size,
    with a fix and a turnaround alike) and its law draws means from a day to months."""
    completed = int(done.sum())
    one = RepairLaw(0.0, float(np.clip(y, 1.0, None).sum()) / completed, law.rma_s, None, rma_fitted=False)
    ratio = 2.0 * (log_likelihood(law, y, done, vendor) - log_likelihood(one, y, done))
    p_value = float(chi2.sf(max(ratio, 0.0), 2 if law.rma_fitted else 1))
    return p_value if p_value >= MIXTURE_P else None


def _key(base: str, cls: str | None) -> str:
    """The overall key (repair.fix) or a class's (repair.fix_host)."""
    return f"repair.{base}" if cls is None else f"repair.{base}_{cls}"


def _of(cls: str | None) -> str:
    return "" if cls is None else f" of {cls} repairs"


def repair_classes(causes: pl.Series) -> np.ndarray:
    """The class of each repair's cause (module docstring): gpu, host or network; None for a cause the simulator
    does not model. A job-level cause whose repair shows took its node out: a host's."""
    scope = {cause: "host" if of == "job" else of for cause, of in SCOPE.items()}
    return causes.replace_strict(scope, default=None, return_dtype=pl.String).to_numpy()


def _by_class(
    classes: np.ndarray,
    y: np.ndarray,
    done: np.ndarray,
    source: str,
    vendor: np.ndarray | None,
    overall: RepairLaw,
) -> ServiceFit:
    """The law of each class with MIN_CLASS_REPAIRS completed repairs (module docstring), fitted to its times y
    as the overall law was, its keys and laws for the classes that differ from the overall law; and one warning:
    which classes differ, which do not, and which have too few repairs of their own."""
    keys: dict[str, Estimate] = {}
    laws: list[Law] = []
    warnings: list[str] = []
    differ, alike, few = [], [], []
    overall_median = kaplan_meier_quantiles(y, done, (0.5,))[0]
    for cls in REPAIR_CLASSES:
        mine = classes == cls
        completed = int(done[mine].sum())
        if completed < MIN_CLASS_REPAIRS:
            if mine.any():
                few.append(f"{cls} ({completed})")
            continue
        own_vendor = None if vendor is None else vendor[mine]
        fitted = _service_keys(y[mine], done[mine], source, own_vendor, cls=cls, overall=overall)
        p_value = _differs(fitted.law, overall, y[mine], done[mine], own_vendor)
        if p_value < DIFFER_P:  # only then its own keys: else the overall law, pooled, is the better guess
            keys |= fitted.keys
            laws += fitted.laws
            warnings += fitted.warnings
        median = kaplan_meier_quantiles(y[mine], done[mine], (0.5,))[0]
        said = f"{cls} (mean {_readable(_mean(fitted.law))}, median {_readable(median)}, p = {p_value:.2g})"
        (differ if p_value < DIFFER_P else alike).append(said)
    if not (differ or alike):
        return ServiceFit(keys, laws, warnings, overall)
    parts = [
        f"the overall law's mean {_readable(_mean(overall))}, median {_readable(overall_median)}",
        f"differ from it: {', '.join(differ) if differ else 'none'}",
    ]
    if alike:
        parts.append(f"not distinguishable from it, taking the overall law: {', '.join(alike)}")
    if few:
        parts.append(f"under {MIN_CLASS_REPAIRS} repairs, taking the overall law: {', '.join(few)}")
    warnings.append(
        "repair time by class of cause (a likelihood ratio of each class's repairs under its own law against the"
        f" overall law, differing below p = {DIFFER_P:g}): " + "; ".join(parts)
    )
    return ServiceFit(keys, laws, warnings, overall)


def _differs(
    law: RepairLaw, overall: RepairLaw, y: np.ndarray, done: np.ndarray, vendor: np.ndarray | None
) -> float:
    """The p-value of the class's repairs under the overall law against their own (a likelihood ratio, as many
    degrees of freedom as the class's law has parameters fitted). A law of one exponential was fitted with no
    repair known to go to the vendor: both are read so."""
    seen = None if law.p <= 0.0 else vendor
    ratio = 2.0 * (log_likelihood(law, y, done, seen) - log_likelihood(overall, y, done, seen))
    return float(chi2.sf(max(ratio, 0.0), 3 if law.rma_fitted else 2))


def _mean(law: RepairLaw) -> float:
    return law.fix_s + law.p * law.rma_s


def _readable(seconds: float | None) -> str:
    """A duration to three figures in the unit a person reads it in."""
    if seconds is None:
        return "-"
    for unit, size in (("d", SECONDS_PER_DAY), ("h", SECONDS_PER_HOUR), ("min", 60.0)):
        if abs(seconds) >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


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
    """Quantiles of a right-censored sample from the Kaplan-Meier survival curve (scipy.stats.ecdf): the first
    time where it falls to 1 - q or below (None where it never falls that far: too many censored)."""
    durations = np.asarray(durations, dtype=float)
    observed = np.asarray(observed, dtype=bool)
    if not observed.any():
        return [None] * len(quantiles)
    curve = ecdf(CensoredData.right_censored(durations, ~observed)).sf
    out: list[float | None] = []
    for q in quantiles:
        below = np.flatnonzero(curve.probabilities <= 1.0 - q + 1e-12)
        out.append(float(curve.quantiles[below[0]]) if below.size else None)
    return out


assert math.isclose(LEVEL, 0.9)  # the one-sided bound above is Clopper-Pearson's at this level
