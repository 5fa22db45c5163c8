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
  hosts still in repair at the window's end, and from it repair.fix and repair.rma_fraction.
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
from engine.errors import GoodputError
from engine.scenario import Scenario, build
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME, MIX_PREFIX
from engine.sim.failures import CAUSE_KEYS, SCOPE
from engine.store import Store, query_frame
from engine.store.schema import IN_SERVICE_STATES
from engine.units import SECONDS_PER_DAY

LEVEL = 0.90  # every interval here is a two-sided 90 % one
MIN_EVENTS = 5  # a cause with fewer events is shrunk toward the default and marked "prior"
PRIOR_HOST_DAYS = 20_000.0  # the Gamma prior's weight: the default rate seen over this much exposure
SHORT_WINDOW_DAYS = 7.0  # a window shorter than a week gets a warning
RMA_AFTER_S = SECONDS_PER_DAY  # a repair longer than a day went back to the vendor (repair.rma_time's scale)
RUN_KEY = "failures.rate_per_1000_node_days"


@dataclass(frozen=True)
class Estimate:
    """One fitted key: its value (in the key's own unit: seconds for durations), the 90 % interval, the number
    of events or samples behind it and where it came from ("run <id> <window>", "prior", "default")."""

    value: Any
    low: float | None = None
    high: float | None = None
    n: int = 0
    source: str = "default"


@dataclass(frozen=True)
class Window:
    start_s: float  # seconds from the run's start
    end_s: float

    @property
    def days(self) -> float:
        return (self.end_s - self.start_s) / SECONDS_PER_DAY


@dataclass(frozen=True)
class RepairFit:
    """Time to repair over the window (Kaplan-Meier, right-censored)."""

    repairs: int  # completed within the window
    censored: int  # still in repair at the window's end
    median_s: float | None
    p90_s: float | None


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
    window = _window(info.started_at, info.duration_s, since, until)
    with store.connect(run_id) as con:
        tables = {
            name: _table(con, name)
            for name in ("hosts", "gpus", "host_states", "incidents", "checkpoints", "jobs")
        }
        flagship = flagship_job_id(con)
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
    repair = _repair(incidents, window)
    keys |= _repair_keys(repair, source)
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
    low_n, high_n = _poisson_interval(n_total)
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


def _share(rate: float | None, total: float) -> float | None:
    return None if rate is None else rate / total


def _cause_rate(n: int, days: float, prior_rate: float, source: str) -> tuple[float, Estimate]:
    """A cause's rate per host-day and its estimate (in failures per host-day until the mix is formed)."""
    if n >= MIN_EVENTS and days > 0:
        low, high = _poisson_interval(n)
        return n / days, Estimate(n / days, low / days, high / days, n, source)
    # Gamma(prior_rate * W, W) prior of weight W host-days; the posterior's mean and 90 % interval
    shape, rate = n + prior_rate * PRIOR_HOST_DAYS, days + PRIOR_HOST_DAYS
    mean = shape / rate
    low = gamma_quantile(shape, (1 - LEVEL) / 2) / rate if shape > 0 else 0.0
    high = gamma_quantile(shape, (1 + LEVEL) / 2) / rate if shape > 0 else 0.0
    return mean, Estimate(mean, low, high, n, "prior")


def _poisson_interval(n: int) -> tuple[float, float]:
    """Garwood's exact two-sided 90 % interval of a Poisson mean after n events."""
    low = gamma_quantile(n, (1 - LEVEL) / 2) if n > 0 else 0.0
    return low, gamma_quantile(n + 1, (1 + LEVEL) / 2)


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
    low, high = _poisson_interval(n)
    days = window.days
    return {"failures.planned_per_day": Estimate(n / days, low / days, high / days, n, source)}


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
        out["training.checkpoint_interval"] = _median_estimate(gaps, source)
    writes = (own["end_s"] - own["start_s"]).drop_nulls().to_numpy()
    if writes.size >= MIN_EVENTS:
        out["training.checkpoint_write"] = _median_estimate(writes, source)
    return out


def _median_estimate(values: np.ndarray, source: str) -> Estimate:
    """The median with its distribution-free 90 % interval (order statistics, normal approximation)."""
    ordered = np.sort(values)
    n = ordered.size
    half = 1.6449 * math.sqrt(n) / 2
    lo, hi = max(int(math.floor(n / 2 - half)), 0), min(int(math.ceil(n / 2 + half)), n - 1)
    return Estimate(float(np.median(ordered)), float(ordered[lo]), float(ordered[hi]), n, source)


# ----- repair -----------------------------------------------------------------------------------------------


def _repair(incidents: pl.DataFrame, window: Window) -> RepairFit | None:
    """Time from an incident to its host being repaired, censored at the window's end for hosts still out."""
    took = incidents.filter(~pl.col("planned").fill_null(False) & pl.col("host_id").is_not_null())
    if "repaired_s" not in took.columns or took.is_empty():
        return None
    took = took.filter(pl.col("repaired_s").is_null() | (pl.col("repaired_s") > pl.col("t_s")))
    if took.is_empty():
        return None
    done = took["repaired_s"].is_not_null() & (took["repaired_s"] <= window.end_s)
    durations = (
        np.where(done.to_numpy(), took["repaired_s"].fill_null(0.0).to_numpy(), window.end_s)
        - took["t_s"].to_numpy()
    )
    observed = done.to_numpy()
    median, p90 = _kaplan_meier_quantiles(durations, observed, (0.5, 0.9))
    return RepairFit(repairs=int(observed.sum()), censored=int((~observed).sum()), median_s=median, p90_s=p90)


def _kaplan_meier_quantiles(
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


def _repair_keys(fit: RepairFit | None, source: str) -> dict[str, Estimate]:
    """repair.fix from the median repair (less the drain, diagnosis and burn-in the defaults already take)."""
    if fit is None or fit.repairs < MIN_EVENTS or fit.median_s is None:
        return {}
    steps = sum(
        parse_duration(KEY_BY_NAME[k].default) for k in ("repair.drain", "repair.diagnose", "repair.burn_in")
    )
    fix = max(fit.median_s - steps, 0.0)
    return {"repair.fix": Estimate(fix, None, None, fit.repairs, source)}


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
