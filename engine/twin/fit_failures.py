"""Unexpected failures and planned stops, fitted to a run's incidents over the host-time it had in service.

- Exposure counts only host-time that was observed and in service (engine.store.schema.IN_SERVICE_STATES rows
  of host_states): gaps in a watch, hosts not yet seen and hosts in repair are not healthy exposure, as the
  simulator draws no failure on a host out of service (engine.sim.simulate). A job-level cause (a software bug,
  a NCCL hang) can only strike a host that runs a job, so its exposure is the host-time running one.
- Each cause's rate is n / exposure with the exact (Garwood) Poisson 90 % interval; a cause never seen is a
  fitted zero with its one-sided upper bound, not the default. The overall rate is their sum, its interval the
  exact one of all events together, scaled; the mix is each cause's share.
- With fewer than MIN_EVENTS failures in all, the overall rate is shrunk toward the default (a Gamma prior worth
  PRIOR_HOST_DAYS host-days at the default's rate) and the mix keeps the default's shares, marked "prior"; with
  none, the rate keeps the default and its one-sided upper bound is said.
- Planned stops of the flagship job a day, a fitted zero with its upper bound where none was seen.
- Bad hosts where repeat offenders show them (engine.twin.fit_hosts), the overall rate then being the others'.
Each estimate comes with its law (engine.twin.uncertainty) for the runs that carry the fit's uncertainty.
"""

from dataclasses import dataclass

import numpy as np
import polars as pl

from engine.analysis.analytics import gamma_quantile
from engine.scenario.keys import KEY_BY_NAME, MIX_PREFIX
from engine.sim.failures import CAUSE_KEYS, HARDWARE_SCOPES, SCOPE
from engine.store.schema import IN_SERVICE_STATES
from engine.twin.estimate import LEVEL, MIN_EVENTS, Estimate, Fitted, poisson_interval
from engine.twin.fit_hosts import bad_host_draws, bad_host_keys, fit_bad_hosts, host_counts
from engine.twin.uncertainty import FailureRates, GammaRate, Law
from engine.units import SECONDS_PER_DAY

PRIOR_HOST_DAYS = 20_000.0  # the Gamma prior's weight: the default rate seen over this much exposure
RUN_KEY = "failures.rate_per_1000_node_days"
PLANNED_KEY = "failures.planned_per_day"
HOST_CATCH_ALL = "host_maintenance"  # unplanned host maintenance: the Llama 3 table's host-level catch-all
HARDWARE = frozenset(c for c, scope in SCOPE.items() if scope in HARDWARE_SCOPES)


@dataclass(frozen=True)
class BadHostLaw:
    """The bad-host fit's bootstrap rows of (share, ratio) and its own point (share, ratio)."""

    rows: np.ndarray
    point: tuple[float, float]


@dataclass(frozen=True)
class Exposure:
    in_service_s: float  # host-seconds in service within the window
    running_s: float  # host-seconds running a job


def exposure(
    states: pl.DataFrame, hosts: pl.DataFrame, start_s: float, end_s: float, out: Fitted
) -> Exposure:
    """Host-seconds in service and host-seconds running a job, within the window."""
    if states.is_empty():
        out.warnings.append(
            "the run has no host states: every host counts as in service over the whole window"
        )
        whole = hosts.height * (end_s - start_s)
        return Exposure(whole, whole)
    clipped = states.with_columns(
        s=(pl.col("end_s").clip(start_s, end_s) - pl.col("start_s").clip(start_s, end_s))
    )
    in_service = float(clipped.filter(pl.col("state").is_in(IN_SERVICE_STATES))["s"].sum())
    running = float(clipped.filter(pl.col("state") == "running")["s"].sum())
    return Exposure(in_service, running)


def fit_failures(
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    hosts: pl.DataFrame,
    start_s: float,
    end_s: float,
    source: str,
) -> tuple[Fitted, Exposure]:
    """The unexpected failures of the window's incidents: the overall rate, the mix and the bad hosts, with their
    laws and what could not be fitted; and the exposure they were counted over."""
    out = Fitted()
    seen = exposure(states, hosts, start_s, end_s, out)
    out.add(failure_rates(incidents, seen, source))
    hosts_fit, draws = bad_hosts(incidents, states, start_s, end_s, out.keys, source)
    out.add(hosts_fit)
    if draws is not None:  # the failure rates' law draws the bad hosts too, from the same bootstrap
        out.laws = [
            FailureRates(law.causes, law.events, law.host_days, law.hardware, draws.rows, draws.point)
            if isinstance(law, FailureRates)
            else law
            for law in out.laws
        ]
    return out, seen


def failure_rates(incidents: pl.DataFrame, seen: Exposure, source: str) -> Fitted:
    """The overall unexpected rate and the mix of causes, with their laws (see the module's docstring).

    A fault whose cause the simulator does not model (`unknown`: no rule of an ingest's causes map matched, or a
    cause of another taxonomy) still happened: it counts in the overall rate, shared among the known causes in
    their proportions, and a warning says what share it was. Left out, a history whose tickets are a third
    unclassified would forecast a third too few faults."""
    out = Fitted()
    unexpected = incidents.filter(~pl.col("planned").fill_null(False))
    counts = dict(unexpected.group_by("cause").len().iter_rows())
    other = sorted(set(counts) - set(CAUSE_KEYS))
    n_other = sum(int(counts[c]) for c in other)
    host_days = seen.in_service_s / SECONDS_PER_DAY
    n = {c: int(counts.get(c, 0)) for c in CAUSE_KEYS}
    if seen.running_s == 0:
        out.warnings += _fold_job_causes(n)
    days = {
        c: (seen.running_s if SCOPE[c] == "job" else seen.in_service_s) / SECONDS_PER_DAY for c in CAUSE_KEYS
    }
    n_known = sum(n.values())
    n_total = n_known + n_other
    if n_other:
        out.warnings.append(
            f"{n_other:,} of {n_total:,} unexpected faults ({n_other / n_total:.1%}) have a cause the simulator"
            f" does not model ({', '.join(other)}): they count in the rate, shared among the known causes in"
            " their proportions" + (" (none is known: the mix is the default's)" if n_known == 0 else "")
        )
    if n_total < MIN_EVENTS or n_known == 0:
        out.add(_overall_only(n_total, host_days, source))
        return out
    spread = n_total / n_known  # each known cause carries its share of the unclassified faults
    rates = {c: spread * n[c] / days[c] if days[c] > 0 else 0.0 for c in CAUSE_KEYS}
    total = sum(rates.values())
    low_n, high_n = poisson_interval(n_total)
    out.keys[RUN_KEY] = Estimate(
        1000.0 * total, 1000.0 * total * low_n / n_total, 1000.0 * total * high_n / n_total, n_total, source
    )
    for cause in CAUSE_KEYS:
        low, high = poisson_interval(n[cause])
        scale = spread / (days[cause] * total) if days[cause] > 0 else 0.0
        out.keys[MIX_PREFIX + cause] = Estimate(
            rates[cause] / total, low * scale, high * scale, n[cause], source
        )
    never = [c for c in CAUSE_KEYS if n[c] == 0]
    if never:
        out.warnings.append(
            f"{len(never)} of {len(CAUSE_KEYS)} causes never seen in {host_days:,.0f} host-days: each a fitted zero"
            f" (at most {1000.0 * gamma_quantile(1.0, LEVEL) / host_days:.3g} per 1,000 host-days, 90 % upper"
            f" bound): {', '.join(never)}"
        )
    out.keys["failures.scale"] = Estimate(1.0, source=source)  # the fitted rate is the whole rate
    out.laws.append(
        FailureRates(
            causes=tuple(CAUSE_KEYS),
            events=tuple(spread * n[c] for c in CAUSE_KEYS),
            host_days=tuple(days[c] for c in CAUSE_KEYS),
            hardware=HARDWARE,
        )
    )
    return out


def _fold_job_causes(n: dict[str, int]) -> list[str]:
    """In a history with no job in it (a fault history: Slurm's node events, tickets), every fault took its node out
    of service, a software fault too; the simulator's job-level causes never take a host out and strike only
    where a job runs, so the twin counts them as unplanned host maintenance (the Llama 3 table's host-level
    catch-all), which does. Said, with how many."""
    moved = {c: n[c] for c in CAUSE_KEYS if SCOPE[c] == "job" and n[c]}
    if not moved:
        return []
    for cause in moved:
        n[cause] = 0
    n[HOST_CATCH_ALL] += sum(moved.values())
    named = ", ".join(f"{c} {k:,}" for c, k in moved.items())
    return [
        f"the run holds no job: its faults of job-level causes ({named}) took their nodes out as a host's do, and"
        f" the twin counts them as {HOST_CATCH_ALL}"
    ]


def _overall_only(n_total: int, host_days: float, source: str) -> Fitted:
    """The overall rate alone, the mix kept at the default's: after no failure (the default, with its upper bound),
    fewer than MIN_EVENTS (shrunk toward the default), or faults none of whose causes the simulator knows."""
    out = Fitted()
    if n_total == 0:
        high = 1000.0 * gamma_quantile(1.0, LEVEL) / host_days if host_days else None
        out.warnings.append(
            f"no unexpected failure in {host_days:,.0f} host-days: the rate is at most {high:.3g} per 1,000"
            " host-days (90 % upper bound); the default is kept"
            if high is not None
            else "no host-time in service: the failure rate keeps its default"
        )
        out.keys[RUN_KEY] = Estimate(KEY_BY_NAME[RUN_KEY].default, 0.0, high, 0, "prior")
        return out
    if n_total < MIN_EVENTS:
        out.keys[RUN_KEY], law = _shrunk_total(n_total, host_days)
        out.warnings.append(
            f"{n_total} unexpected failure{'s' if n_total > 1 else ''} in {host_days:,.1f} host-days: too few to"
            " fit the rate, which is shrunk toward the default (prior), and the mix of causes is the default's"
        )
    else:
        low_n, high_n = poisson_interval(n_total)
        scale = 1000.0 / host_days
        out.keys[RUN_KEY] = Estimate(n_total * scale, low_n * scale, high_n * scale, n_total, source)
        out.keys["failures.scale"] = Estimate(1.0, source=source)
        law = GammaRate.after(RUN_KEY, n_total, host_days, 1000.0)
    out.laws.append(law)
    return out


def _shrunk_total(n: int, host_days: float) -> tuple[Estimate, Law]:
    """The overall rate after fewer than MIN_EVENTS failures: the Gamma posterior of the default's prior (worth
    PRIOR_HOST_DAYS host-days), its mean and 90 % interval, per 1,000 host-days."""
    prior = KEY_BY_NAME[RUN_KEY].default / 1000.0
    shape, rate = n + prior * PRIOR_HOST_DAYS, host_days + PRIOR_HOST_DAYS
    estimate = Estimate(
        1000.0 * shape / rate,
        1000.0 * gamma_quantile(shape, (1 - LEVEL) / 2) / rate,
        1000.0 * gamma_quantile(shape, (1 + LEVEL) / 2) / rate,
        n,
        "prior",
    )
    return estimate, GammaRate(RUN_KEY, shape, rate, shape / rate, 1000.0)


def planned(incidents: pl.DataFrame, window_days: float, flagship: str | None, source: str) -> Fitted:
    """Planned stops of the flagship job a day; none seen is a fitted zero with its upper bound, said."""
    out = Fitted()
    if flagship is None or window_days <= 0:
        return out
    n = int(incidents["planned"].fill_null(False).sum()) if incidents.height else 0
    low, high = poisson_interval(n)
    out.keys[PLANNED_KEY] = Estimate(n / window_days, low / window_days, high / window_days, n, source)
    out.laws.append(GammaRate.after(PLANNED_KEY, n, window_days))
    if n == 0:
        out.warnings.append(
            f"no planned stops observed in {window_days:.0f} days: planned_per_day 0, upper bound"
            f" {high / window_days:.2g} (90 %)"
        )
    return out


def bad_hosts(
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    start_s: float,
    end_s: float,
    keys: dict[str, Estimate],
    source: str,
) -> tuple[Fitted, BadHostLaw | None]:
    """Bad hosts where repeat offenders show them (engine.twin.fit_hosts), in the simulator's terms.

    The fit sees hardware failures only: a share s of hosts failing at M times the others' hardware rate. The
    simulator adds to a bad host (failures.bad_host_multiplier - 1) times the whole base rate, as hardware
    causes; with h the hardware causes' share of the mix, M = (h + m - 1) / h, so m = 1 + h (M - 1). The
    overall rate it draws for every host is then the observed one less the bad hosts' excess:
    R_base = R_observed / (1 + s (m - 1))."""
    out = Fitted()
    if states.is_empty() or RUN_KEY not in keys or keys[RUN_KEY].n < MIN_EVENTS:
        return out, None
    counts, days = host_counts(incidents, states, start_s, end_s)
    fit = fit_bad_hosts(counts, days)
    if fit is None:
        return out, None
    draws = bad_host_draws(counts, days)
    fitted_keys = bad_host_keys(fit, draws, source)
    hardware = sum(
        e.value for k, e in keys.items() if k.startswith(MIX_PREFIX) and k[len(MIX_PREFIX) :] in HARDWARE
    )
    share, ratio = fitted_keys["failures.bad_host_fraction"], fitted_keys["failures.bad_host_multiplier"]

    def sim_multiplier(m: float | None) -> float | None:
        return None if m is None else 1.0 + hardware * (m - 1.0)

    multiplier = Estimate(
        sim_multiplier(ratio.value), sim_multiplier(ratio.low), sim_multiplier(ratio.high), ratio.n, source
    )
    excess = 1.0 + share.value * (multiplier.value - 1.0)
    rate = keys[RUN_KEY]
    out.warnings.append(
        f"{fit.repeat_hosts} hosts failed repeatedly: about {share.value:.1%} of hosts fail {ratio.value:.1f}x as"
        f" often (likelihood ratio {fit.likelihood_ratio:.1f}); the base rate is the others' ({rate.value / excess:.3g}"
        " per 1,000 host-days)"
    )
    out.keys = {
        "failures.bad_host_fraction": share,
        "failures.bad_host_multiplier": multiplier,
        RUN_KEY: Estimate(
            rate.value / excess,
            None if rate.low is None else rate.low / excess,
            None if rate.high is None else rate.high / excess,
            rate.n,
            source,
        ),
    }
    return out, BadHostLaw(draws, (share.value, ratio.value))
