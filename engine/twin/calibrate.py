"""Fit a scenario to a run the store holds: the twin learns the cluster it watches (`goodput calibrate`).

What is fitted, and how (each key's estimate carries its 90 % interval, its evidence n and its source):
- the cluster's shape as observed: GPUs, hosts, GPUs a host, hosts a rack, racks a pod;
- the unexpected failure rate per 1,000 host-days and the mix of causes. Exposure counts only host-time that
  was observed and in service (engine.store.schema.IN_SERVICE_STATES rows of host_states): gaps in a watch,
  hosts not yet seen and hosts in repair are not healthy exposure, as the simulator draws no failure on a host
  out of service (engine.sim.simulate). A job-level cause (a software bug, a NCCL hang) can only strike a host
  that runs a job, so its exposure is the host-time running one. Each cause's rate is n / exposure with the
  exact (Garwood) Poisson 90 % interval; a cause with fewer than MIN_EVENTS events is shrunk toward the default
  (a Gamma prior worth PRIOR_HOST_DAYS host-days of exposure at the default's rate) and marked "prior". The
  overall rate is the sum of the causes' maximum-likelihood rates (none shrunk); its interval is the exact one of
  all events together, scaled.
  No failure at all gives the one-sided 90 % upper bound, never a rate of zero;
- planned maintenance stops of the flagship job a day;
- checkpoint interval and write time of the flagship job from its checkpoints (median; order-statistic
  interval of the median);
- time to repair: the Kaplan-Meier median and 90th percentile of incident-to-repaired time, right-censored for
  hosts still in repair at the window's end, and the simulator's repair law fitted to it (repair.fix,
  repair.rma_fraction, repair.rma_time: engine.twin.fit_repair);
- the flagship's restart overhead and the other jobs' mix (research.*: engine.twin.fit_jobs);
- bad hosts where repeat offenders show them (failures.bad_host_*: engine.twin.fit_hosts), the overall rate
  then being the other hosts'.
The flagship is the run's flagship job, or on an observed cluster its largest job
(engine.analysis.window_figures.largest_job), the one the backtest follows too.
Everything else keeps the default of engine/scenario/keys.py (the llama3-405b scenario), marked "default".
"""

import math
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import polars as pl
import tomli_w

from engine.analysis.analytics import gamma_quantile
from engine.analysis.incidents import flagship_job_id
from engine.analysis.window_figures import largest_job
from engine.errors import GoodputError
from engine.scenario import Scenario, build
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME, MIX_PREFIX
from engine.sim.failures import CAUSE_KEYS, HARDWARE_SCOPES, SCOPE
from engine.store import Store, query_frame
from engine.store.schema import IN_SERVICE_STATES
from engine.twin.estimate import LEVEL, MIN_EVENTS, Estimate, median_estimate, poisson_interval
from engine.twin.fit_hosts import bad_host_keys, fit_bad_hosts, host_counts
from engine.twin.fit_jobs import research_mix, restart_overhead
from engine.twin.fit_repair import RepairFit, fit_repair
from engine.units import SECONDS_PER_DAY

PRIOR_HOST_DAYS = 20_000.0  # the Gamma prior's weight: the default rate seen over this much exposure
SHORT_WINDOW_DAYS = 7.0  # a window shorter than a week gets a warning
RUN_KEY = "failures.rate_per_1000_node_days"


@dataclass(frozen=True)
class Window:
    start_s: float  # seconds from the run's start
    end_s: float

    @property
    def days(self) -> float:
        return (self.end_s - self.start_s) / SECONDS_PER_DAY


@dataclass(frozen=True)
class Calibration:
    run_id: str
    started_at: datetime
    window: Window
    exposure_host_days: float
    keys: dict[str, Estimate]
    warnings: list[str] = field(default_factory=list)
    repair: RepairFit | None = None

    def scenario(self) -> Scenario:
        """The fitted scenario: the defaults, overlaid by every fitted key."""
        return build().with_values({k: e.value for k, e in self.keys.items() if e.source != "default"})

    def to_json(self) -> dict[str, Any]:
        start = self.started_at + timedelta(seconds=self.window.start_s)
        end = self.started_at + timedelta(seconds=self.window.end_s)
        return {
            "run_id": self.run_id,
            "window": {
                "start": start.isoformat(),
                "end": end.isoformat(),
                "days": round(self.window.days, 6),
            },
            "exposure_host_days": self.exposure_host_days,
            "keys": {k: asdict(e) for k, e in self.keys.items()},
            "repair": asdict(self.repair) if self.repair is not None else None,
            "warnings": list(self.warnings),
        }

    def to_toml(self) -> str:
        """A scenario file a user can read, edit and run (`goodput simulate --scenario FILE`): every fitted key
        with a comment giving its estimate, 90 % interval, n and source; the rest are the defaults."""
        raw = self.scenario().to_dict()
        lines = [
            f"# Goodput scenario fitted to run {self.run_id} ({self.window.days:.2f} days,"
            f" {self.exposure_host_days:,.0f} host-days in service) by `goodput calibrate`.",
            "# Each fitted key says its estimate, 90 % interval, the events or samples behind it (n) and its",
            "# source; keys without a comment are the defaults (engine/scenario/keys.py).",
        ]
        lines += [f"# warning: {w}" for w in self.warnings]
        lines += ["", tomli_w.dumps({"preset": raw.pop("preset")}).strip()]
        lines += _toml_tables(raw, "", self.keys)
        text = "\n".join(lines) + "\n"
        tomllib.loads(text)  # what it writes is TOML
        return text


def calibrate(
    store: Store, run_id: str, *, since: str | None = None, until: str | None = None
) -> Calibration:
    """Fit the scenario keys above to run `run_id` over the window [since, until) (durations from the run's
    start such as "7d", or ISO dates); a GoodputError names an unknown run or a window outside the run."""
    info = store.info(run_id)
    if not info.duration_s > 0:
        raise GoodputError(
            f"run {run_id} spans no time (one scrape, or events at one instant): there is no window to fit;"
            " ingest or watch the cluster for longer"
        )
    window = _window(info.started_at, info.duration_s, since, until)
    with store.connect(run_id) as con:
        tables = {
            name: _table(con, name)
            for name in ("hosts", "gpus", "host_states", "incidents", "checkpoints", "jobs", "job_attempts")
        }
        flagship = flagship_job_id(con)
    if flagship is None:  # an observed cluster's flagship is its largest job (engine.analysis.window_figures)
        largest = largest_job(tables["jobs"])
        flagship = largest.job_id if largest is not None else None
    source = f"run {run_id} days {window.start_s / SECONDS_PER_DAY:g}-{window.end_s / SECONDS_PER_DAY:g}"
    warnings: list[str] = []
    if window.days < SHORT_WINDOW_DAYS:
        warnings.append(f"the window is {window.days:.1f} days, under a week: rates rest on few events")
    keys = _shape(tables["hosts"], tables["gpus"], source)
    keys |= _flagship(tables["jobs"], flagship, keys, source)
    exposure, running = _exposure(tables["host_states"], tables["hosts"], window, warnings)
    incidents = tables["incidents"]
    incidents = incidents.filter(pl.col("t_s").is_between(window.start_s, window.end_s, closed="left"))
    keys |= _failure_rates(incidents, exposure, running, source, warnings)
    keys |= _planned(incidents, window, source)
    keys |= _checkpoints(tables["checkpoints"], flagship, window, source)
    keys |= restart_overhead(tables["job_attempts"], flagship, window.start_s, window.end_s, source)
    keys |= research_mix(
        tables["jobs"], tables["job_attempts"], flagship, keys, window.start_s, window.end_s, source
    )
    repair, repair_keys = fit_repair(incidents, window.end_s, source)
    keys |= repair_keys
    keys |= _bad_hosts(incidents, tables["host_states"], window, keys, source, warnings)
    return Calibration(
        run_id=run_id,
        started_at=info.started_at,
        window=window,
        exposure_host_days=exposure / SECONDS_PER_DAY,
        keys=keys,
        warnings=warnings,
        repair=repair,
    )


# ----- the window and the tables --------------------------------------------------------------------------------


def _window(started_at: datetime, duration_s: float, since: str | None, until: str | None) -> Window:
    start = _offset(since, started_at, "--since") if since else 0.0
    end = _offset(until, started_at, "--until") if until else duration_s
    if not 0.0 <= start < end <= duration_s + 1e-6:
        raise GoodputError(
            f"the window {_days(start)} to {_days(end)} is not inside the run (0 to {_days(duration_s)} days)"
        )
    return Window(start, min(end, duration_s))


def _days(seconds: float) -> str:
    return f"{seconds / SECONDS_PER_DAY:g}"


def _offset(text: str, started_at: datetime, flag: str) -> float:
    """Seconds from the run's start: a duration ("7d") or a date/time ("2024-03-08", ISO)."""
    try:
        return parse_duration(text, flag)
    except GoodputError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise GoodputError(
            f"{flag} {text!r}: expected a duration from the run's start (7d) or a date"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - started_at).total_seconds()


def _table(con, name: str) -> pl.DataFrame:
    return query_frame(con, f'SELECT * FROM "{name}"')  # noqa: S608 (a fixed table name)


# ----- shape ------------------------------------------------------------------------------------------------


def _shape(hosts: pl.DataFrame, gpus: pl.DataFrame, source: str) -> dict[str, Estimate]:
    if hosts.is_empty() or gpus.is_empty():
        return {}
    per_host = gpus.group_by("host_id").len()["len"]
    out = {
        "cluster.gpus": Estimate(gpus.height, n=gpus.height, source=source),
        "cluster.gpus_per_host": Estimate(int(per_host.max()), n=per_host.len(), source=source),
    }
    racks = hosts.drop_nulls("rack_id").group_by("rack_id").len()["len"]
    if racks.len():
        out["cluster.hosts_per_rack"] = Estimate(int(racks.max()), n=racks.len(), source=source)
        pods = hosts.drop_nulls(["rack_id", "pod_id"]).group_by("pod_id").agg(pl.col("rack_id").n_unique())
        if pods.height:
            out["cluster.racks_per_pod"] = Estimate(int(pods["rack_id"].max()), n=pods.height, source=source)
    return out


def _flagship(
    jobs: pl.DataFrame, flagship: str | None, shape: dict[str, Estimate], source: str
) -> dict[str, Estimate]:
    """The flagship (largest) job's size, and the spare hosts the cluster leaves beside it (at most the
    default's): the fitted scenario must fit its own cluster."""
    if "cluster.gpus" not in shape:
        return {}
    gpus, per_host = shape["cluster.gpus"].value, shape["cluster.gpus_per_host"].value
    row = jobs.filter(pl.col("job_id") == flagship) if flagship is not None else jobs.head(0)
    job_gpus = (
        int(row["gpus"][0])
        if row.height and row["gpus"][0]
        else min(KEY_BY_NAME["training.gpus"].default, gpus)
    )
    job_gpus = min(job_gpus, gpus)
    left = gpus // per_host - math.ceil(job_gpus / per_host)
    return {
        "training.gpus": Estimate(job_gpus, n=1 if row.height else 0, source=source),
        "spares.hosts": Estimate(min(KEY_BY_NAME["spares.hosts"].default, left), n=0, source=source),
    }


# ----- failures ---------------------------------------------------------------------------------------------


def _exposure(
    states: pl.DataFrame, hosts: pl.DataFrame, window: Window, warnings: list[str]
) -> tuple[float, float]:
    """Host-seconds in service and host-seconds running a job, within the window."""
    if states.is_empty():
        warnings.append("the run has no host states: every host counts as in service over the whole window")
        whole = hosts.height * (window.end_s - window.start_s)
        return whole, whole
    clipped = states.with_columns(
        s=(
            pl.col("end_s").clip(window.start_s, window.end_s)
            - pl.col("start_s").clip(window.start_s, window.end_s)
        )
    )
    in_service = float(clipped.filter(pl.col("state").is_in(IN_SERVICE_STATES))["s"].sum())
    running = float(clipped.filter(pl.col("state") == "running")["s"].sum())
    return in_service, running


def _failure_rates(
    incidents: pl.DataFrame, exposure_s: float, running_s: float, source: str, warnings: list[str]
) -> dict[str, Estimate]:
    defaults = _default_cause_rates()
    unexpected = incidents.filter(~pl.col("planned").fill_null(False))
    counts = dict(unexpected.group_by("cause").len().iter_rows())
    unknown = sorted(set(counts) - set(CAUSE_KEYS))
    if unknown:
        warnings.append(f"causes the simulator does not model, left out of the rates: {', '.join(unknown)}")
    out: dict[str, Estimate] = {}
    shrunk: dict[str, float] = {}
    observed = 0.0  # the maximum-likelihood total: every cause's n / exposure, none shrunk
    for cause in CAUSE_KEYS:
        n = int(counts.get(cause, 0))
        days = (running_s if SCOPE[cause] == "job" else exposure_s) / SECONDS_PER_DAY
        shrunk[cause], out[MIX_PREFIX + cause] = _cause_rate(n, days, defaults[cause], source)
        observed += n / days if days > 0 else 0.0
    n_total = sum(int(counts.get(c, 0)) for c in CAUSE_KEYS)
    host_days = exposure_s / SECONDS_PER_DAY
    if n_total == 0:
        high = 1000.0 * gamma_quantile(1.0, LEVEL) / host_days if host_days else None
        warnings.append(
            f"no unexpected failure in {host_days:,.0f} host-days: the rate is at most {high:.3g} per 1,000"
            " host-days (90 % upper bound); the default is kept"
            if high is not None
            else "no host-time in service: the failure rate keeps its default"
        )
        out[RUN_KEY] = Estimate(KEY_BY_NAME[RUN_KEY].default, 0.0, high, 0, "prior")
        return out
    if n_total < MIN_EVENTS:
        out[RUN_KEY] = _shrunk_total(n_total, host_days)
        warnings.append(
            f"{n_total} unexpected failure{'s' if n_total > 1 else ''} in {host_days:,.1f} host-days: too few to"
            " fit the rate, which is shrunk toward the default (prior)"
        )
    else:
        low_n, high_n = poisson_interval(n_total)
        out[RUN_KEY] = Estimate(
            1000.0 * observed,
            1000.0 * observed * low_n / n_total,
            1000.0 * observed * high_n / n_total,
            n_total,
            source,
        )
    # the mix is relative: each cause's (shrunk) rate over their sum, its interval scaled the same way
    total = sum(shrunk.values())
    for cause in CAUSE_KEYS:
        e = out[MIX_PREFIX + cause]
        out[MIX_PREFIX + cause] = Estimate(
            e.value / total, _share(e.low, total), _share(e.high, total), e.n, e.source
        )
    out["failures.scale"] = Estimate(1.0, source=source)  # the fitted rate is the whole rate
    return out


def _shrunk_total(n: int, host_days: float) -> Estimate:
    """The overall rate after fewer than MIN_EVENTS failures: the Gamma posterior of the default's prior (worth
    PRIOR_HOST_DAYS host-days), its mean and 90 % interval, per 1,000 host-days."""
    prior = KEY_BY_NAME[RUN_KEY].default / 1000.0
    shape, rate = n + prior * PRIOR_HOST_DAYS, host_days + PRIOR_HOST_DAYS
    return Estimate(
        1000.0 * shape / rate,
        1000.0 * gamma_quantile(shape, (1 - LEVEL) / 2) / rate,
        1000.0 * gamma_quantile(shape, (1 + LEVEL) / 2) / rate,
        n,
        "prior",
    )


def _share(rate: float | None, total: float) -> float | None:
    return None if rate is None else rate / total


def _cause_rate(n: int, days: float, prior_rate: float, source: str) -> tuple[float, Estimate]:
    """A cause's rate per host-day and its estimate (in failures per host-day until the mix is formed)."""
    if n >= MIN_EVENTS and days > 0:
        low, high = poisson_interval(n)
        return n / days, Estimate(n / days, low / days, high / days, n, source)
    # Gamma(prior_rate * W, W) prior of weight W host-days; the posterior's mean and 90 % interval
    shape, rate = n + prior_rate * PRIOR_HOST_DAYS, days + PRIOR_HOST_DAYS
    mean = shape / rate
    low = gamma_quantile(shape, (1 - LEVEL) / 2) / rate if shape > 0 else 0.0
    high = gamma_quantile(shape, (1 + LEVEL) / 2) / rate if shape > 0 else 0.0
    return mean, Estimate(mean, low, high, n, "prior")


def _default_cause_rates() -> dict[str, float]:
    """Each cause's default rate per host-day: the default rate shared by the default mix."""
    rate = KEY_BY_NAME[RUN_KEY].default / 1000.0
    mix = {c: float(KEY_BY_NAME[MIX_PREFIX + c].default) for c in CAUSE_KEYS}
    total = sum(mix.values()) or 1.0
    return {c: rate * w / total for c, w in mix.items()}


def _planned(incidents: pl.DataFrame, window: Window, source: str) -> dict[str, Estimate]:
    n = int(incidents["planned"].fill_null(False).sum())
    if n == 0:
        return {}
    low, high = poisson_interval(n)
    days = window.days
    return {"failures.planned_per_day": Estimate(n / days, low / days, high / days, n, source)}


def _bad_hosts(
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    window: Window,
    keys: dict[str, Estimate],
    source: str,
    warnings: list[str],
) -> dict[str, Estimate]:
    """Bad hosts where repeat offenders show them (engine.twin.fit_hosts), in the simulator's terms.

    The fit sees hardware failures only: a share s of hosts failing at M times the others' hardware rate. The
    simulator adds to a bad host (failures.bad_host_multiplier - 1) times the whole base rate, as hardware
    causes; with h the hardware causes' share of the mix, M = (h + m - 1) / h, so m = 1 + h (M - 1). The
    overall rate it draws for every host is then the observed one less the bad hosts' excess:
    R_base = R_observed / (1 + s (m - 1))."""
    if states.is_empty() or RUN_KEY not in keys or keys[RUN_KEY].n == 0:
        return {}
    counts, days = host_counts(incidents, states, window.start_s, window.end_s)
    fit = fit_bad_hosts(counts, days)
    if fit is None:
        return {}
    fitted = bad_host_keys(fit, counts, days, source)
    hardware = sum(
        e.value
        for k, e in keys.items()
        if k.startswith(MIX_PREFIX) and SCOPE[k[len(MIX_PREFIX) :]] in HARDWARE_SCOPES
    )
    share, ratio = fitted["failures.bad_host_fraction"], fitted["failures.bad_host_multiplier"]

    def sim_multiplier(m: float | None) -> float | None:
        return None if m is None else 1.0 + hardware * (m - 1.0)

    multiplier = Estimate(
        sim_multiplier(ratio.value), sim_multiplier(ratio.low), sim_multiplier(ratio.high), ratio.n, source
    )
    excess = 1.0 + share.value * (multiplier.value - 1.0)
    rate = keys[RUN_KEY]
    warnings.append(
        f"{fit.repeat_hosts} hosts failed repeatedly: about {share.value:.1%} of hosts fail {ratio.value:.1f}x as"
        f" often (likelihood ratio {fit.likelihood_ratio:.1f}); the base rate is the others' ({rate.value / excess:.3g}"
        " per 1,000 host-days)"
    )
    return {
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


# ----- checkpoints ------------------------------------------------------------------------------------------


def _checkpoints(
    checkpoints: pl.DataFrame, flagship: str | None, window: Window, source: str
) -> dict[str, Estimate]:
    if flagship is None or checkpoints.is_empty():
        return {}
    own = checkpoints.filter(
        (pl.col("job_id") == flagship)
        & pl.col("start_s").is_between(window.start_s, window.end_s, closed="left")
    ).sort("start_s")
    out: dict[str, Estimate] = {}
    gaps = own["start_s"].diff().drop_nulls().to_numpy()
    gaps = gaps[gaps > 0]
    if gaps.size >= MIN_EVENTS:
        # the interval between checkpoints of one attempt: a gap spanning a restart is not an interval
        typical = np.median(gaps)
        gaps = gaps[gaps < 2 * typical]
        out["training.checkpoint_interval"] = median_estimate(gaps, source)
    writes = (own["end_s"] - own["start_s"]).drop_nulls().to_numpy()
    if writes.size >= MIN_EVENTS:
        out["training.checkpoint_write"] = median_estimate(writes, source)
    return out


# ----- the scenario file ------------------------------------------------------------------------------------


def _toml_tables(node: dict[str, Any], prefix: str, keys: dict[str, Estimate]) -> list[str]:
    lines: list[str] = []
    leaves = {k: v for k, v in node.items() if not isinstance(v, dict)}
    if leaves and prefix:
        lines += ["", f"[{prefix}]"]
    for name, value in leaves.items():
        dotted = f"{prefix}.{name}" if prefix else name
        text = tomli_w.dumps({name: value}).strip()
        estimate = keys.get(dotted)
        if estimate is not None and estimate.source != "default":
            text += f"  # {_comment(dotted, estimate)}"
        lines.append(text)
    for name, child in node.items():
        if isinstance(child, dict):
            lines += _toml_tables(child, f"{prefix}.{name}" if prefix else name, keys)
    return lines


def _comment(key: str, e: Estimate) -> str:
    interval = (
        f", 90 % interval {_fmt(e.low)} to {_fmt(e.high)}" if e.low is not None and e.high is not None else ""
    )
    return f"estimate {_fmt(e.value)}{interval}, n={e.n}, {e.source}"


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
