"""Fit a scenario to a run the store holds: the twin learns the cluster it watches (`goodput calibrate`).

What is fitted, and how (each key's estimate carries its 90 % interval, its evidence n and its source):
- the cluster's shape as observed: GPUs, hosts, GPUs a host, hosts a rack, racks a pod;
- unexpected failures (the overall rate, the mix of causes, bad hosts) and planned stops of the flagship job
  (engine.twin.fit_failures: exposure, fitted zeros, shrinkage after too few events);
- the flagship's checkpoint interval and write time, restart overhead and spare hosts, and the other jobs' mix
  (engine.twin.fit_jobs);
- the repair pipeline: its fixed steps, the hands-on and vendor law, the technicians, and the Kaplan-Meier
  median and 90th percentile of the time to repair (engine.twin.fit_repair).
The flagship is the run's flagship job, or on an observed cluster its largest job
(engine.analysis.window_figures.largest_job), the one the backtest follows too.

Every other key keeps the default of engine/scenario/keys.py (the llama3-405b scenario): the scenario file says so
beside each (`Calibration.to_toml`), `assumed()` lists them, and the warnings say what the run could not show.
Each fitted key's law (engine.twin.uncertainty) goes with the fit, so the twin's runs carry its uncertainty.
"""

import math
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from engine import limits
from engine.analysis.incidents import flagship_job_id
from engine.analysis.window_figures import largest_job
from engine.errors import GoodputError
from engine.scenario import Scenario, build
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME
from engine.sim.failures import CAUSE_KEYS
from engine.store import Store, query_frame
from engine.twin.drift import Drift, rate_changes, repair_change, weekly
from engine.twin.estimate import Estimate, Fitted
from engine.twin.fit_bursts import (
    burst_window_s,
    fault_events,
    find_bursts,
    fit_bursts,
    independent_share,
    thin_independent_rate,
)
from engine.twin.fit_failures import RUN_KEY, Exposure, fit_failures, planned
from engine.twin.fit_jobs import checkpoints, median_law, research_mix, restart_overhead, spare_hosts
from engine.twin.fit_repair import RepairFit, RepairKeys, fit_repair
from engine.twin.scenario_file import DEFAULT_SOURCE, scenario_toml
from engine.twin.uncertainty import METHOD, FitUncertainty, Law
from engine.units import SECONDS_PER_DAY

SHORT_WINDOW_DAYS = 7.0  # a window shorter than a week gets a warning
ASSUMED = (
    "assumed"  # the source of a key the run could not show but the scenario must hold (said in a warning)
)
MEDIAN_KEYS = (
    "training.checkpoint_interval",
    "training.checkpoint_write",
    "training.restart_overhead",
    "repair.drain",
    "repair.diagnose",
    "repair.burn_in",
)  # keys fitted as medians: their laws are the median's (engine.twin.fit_jobs.median_law)
__all__ = ["RUN_KEY", "Calibration", "Estimate", "Window", "calibrate"]


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
    laws: tuple[Law, ...] = ()  # the fitted keys' laws: the fit's own uncertainty (engine.twin.uncertainty)
    # (faults of a cause the simulator does not model, all unexpected faults) in the window: an ingested history's
    # tickets that no rule of its causes map named count in the rate (engine.twin.fit_failures) and are said
    unknown_faults: tuple[int, int] = (0, 0)
    drift: Drift | None = None  # the window's weekly series and its tests of one level (engine.twin.drift)

    def scenario(self) -> Scenario:
        """The fitted scenario: the defaults, overlaid by every fitted key."""
        return build().with_values(self.fitted_values())

    def fitted_values(self) -> dict[str, Any]:
        return {k: e.value for k, e in self.keys.items() if e.source != DEFAULT_SOURCE}

    def uncertainty(self) -> FitUncertainty:
        """What each run of this twin draws before it simulates (backtest, forecast, the Planner)."""
        return FitUncertainty(self.laws)

    def assumed(self) -> dict[str, Any]:
        """Every scenario key the fit did not set, with the default it keeps (spelled as in a scenario file)."""
        fitted = self.fitted_values()
        return {k: v for k, v in self.scenario().raw.items() if k not in fitted and k != "cluster.preset"}

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
            "assumed": {k: {"value": v, "source": DEFAULT_SOURCE} for k, v in self.assumed().items()},
            "uncertainty": METHOD,
            "repair": asdict(self.repair) if self.repair is not None else None,
            "unknown_share": {
                "value": round(self.unknown_faults[0] / self.unknown_faults[1], 6)
                if self.unknown_faults[1]
                else None,
                "unknown": self.unknown_faults[0],
                "faults": self.unknown_faults[1],
            },
            "drift": self.drift.to_json() if self.drift is not None else None,
            "warnings": list(self.warnings),
        }

    def to_toml(self) -> str:
        """A scenario file a user can read, edit and run (`goodput simulate --scenario FILE`): every key with a
        comment giving its estimate, 90 % interval, n and source, or saying it is the default, not fitted."""
        return scenario_toml(
            self.run_id, self.window.days, self.exposure_host_days, self.scenario(), self.keys, self.warnings
        )


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
    source = _source(run_id, window.start_s, window.end_s)
    fitted = Fitted()
    if window.days < SHORT_WINDOW_DAYS:
        fitted.warnings.append(
            f"the window is {window.days:.1f} days, under a week: rates rest on few events"
        )
    fitted.keys = _shape(tables["hosts"], tables["gpus"], source)
    fitted.add(_flagship(tables["jobs"], tables["host_states"], flagship, fitted.keys, window, source))
    states = tables["host_states"]
    incidents = tables["incidents"].filter(
        pl.col("t_s").is_between(window.start_s, window.end_s, closed="left")
    )
    failures, seen, history = _failures_over_time(
        run_id, info.started_at, incidents, states, tables["hosts"], window
    )
    fitted.add(failures)
    fitted.add(planned(incidents, window.days, flagship, source))
    fitted.keys |= checkpoints(tables["checkpoints"], flagship, window.start_s, window.end_s, source)
    fitted.keys |= restart_overhead(tables["job_attempts"], flagship, window.start_s, window.end_s, source)
    fitted.add(
        research_mix(
            tables["jobs"],
            tables["job_attempts"],
            flagship,
            fitted.keys,
            window.start_s,
            window.end_s,
            source,
        )
    )
    if tables["jobs"].is_empty() and "cluster.gpus" in fitted.keys:
        fitted.keys["research.utilization"] = Estimate(0.0, n=0, source=ASSUMED)
        fitted.warnings.append(
            "the run records no job: the twin runs none beside its flagship (research.utilization assumed 0), whose"
            " interruptions, lost GPU-hours and ETTR the run cannot show"
        )
    fitted.add(_telemetry_within_limits(fitted.keys))
    repair = _repair(run_id, info.started_at, incidents, states, window, history)
    fitted.keys |= repair.keys
    fitted.laws += list(repair.laws)
    fitted.warnings += list(repair.warnings)
    for key in MEDIAN_KEYS:
        if key in fitted.keys:
            fitted.laws += median_law(key, fitted.keys[key])
    return Calibration(
        run_id=run_id,
        started_at=info.started_at,
        window=window,
        exposure_host_days=seen.in_service_s / SECONDS_PER_DAY,
        keys=fitted.keys,
        warnings=fitted.warnings,
        repair=repair.fit,
        laws=tuple(fitted.laws),
        unknown_faults=_unknown_faults(incidents),
        drift=history,
    )


def _failures_over_time(
    run_id: str,
    started_at: datetime,
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    hosts: pl.DataFrame,
    window: Window,
) -> tuple[Fitted, Exposure, Drift]:
    """The failure rates, the bursts and the drift of the window: where the rate changed, the rates and bursts are
    fitted to the recent level only (engine.twin.drift), and the bursts' hosts are taken out of the independent
    rate (engine.twin.fit_bursts). The exposure returned is the whole window's."""
    source = _source(run_id, window.start_s, window.end_s)
    failures, seen = fit_failures(incidents, states, hosts, window.start_s, window.end_s, source)
    # bad hosts fail less once repaired, which the twin models: their faults would read as a drift
    repeaters = "failures.bad_host_fraction" in failures.keys
    history = drift_of(incidents, states, hosts.height, window, leave_out_repeat_hosts=repeaters)
    rate_from = history.recent_rate_from_s or window.start_s
    recent = incidents.filter(pl.col("t_s") >= rate_from)
    if rate_from > window.start_s:
        source = _source(run_id, rate_from, window.end_s)
        failures, _ = fit_failures(recent, states, hosts, rate_from, window.end_s, source)
        failures.warnings.append(_rate_change_words(history, started_at))
    found = find_bursts(recent, rate_from, window.end_s, burst_window_s())
    bursts = fit_bursts(found, (window.end_s - rate_from) / SECONDS_PER_DAY, source)
    thin_independent_rate(failures, independent_share(found))
    failures.add(bursts)
    return failures, seen, history


def _repair(
    run_id: str,
    started_at: datetime,
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    window: Window,
    history: Drift,
) -> RepairKeys:
    """The repair fit (engine.twin.fit_repair), to the repairs since the repair time changed where it did."""
    change = history.repair_change
    if change is None:
        return fit_repair(incidents, states, window.end_s, _source(run_id, window.start_s, window.end_s))
    repair = fit_repair(
        incidents.filter(pl.col("t_s") >= change.at_s),
        states,
        window.end_s,
        _source(run_id, change.at_s, window.end_s),
    )
    said = (
        f"the time to repair changed about {_date(started_at, change.at_s)}: median {change.before / 3600:.3g} h"
        f" before, {change.after / 3600:.3g} h since (p = {change.p_value:.3f}); the repair law is fitted to the"
        " repairs since"
    )
    return replace(repair, warnings=(*repair.warnings, said))


def _telemetry_within_limits(keys: dict[str, Estimate]) -> Fitted:
    """A fitted cluster too large for the default telemetry of the default days (a 50,000-node fleet's history:
    446M samples against MAX_GPU_SAMPLES) gets a scenario with telemetry off, said: the fitted scenario must run.
    The twin's backtests and forecasts never simulate telemetry; `goodput simulate --scenario` would."""
    out = Fitted()
    if "cluster.gpus" not in keys:
        return out
    default = build()
    samples = math.ceil(default.duration_s / default["simulation.telemetry_resolution"])
    if keys["cluster.gpus"].value * samples > limits.MAX_GPU_SAMPLES:
        out.keys["simulation.telemetry"] = Estimate(False, n=0, source=ASSUMED)
        out.warnings.append(
            f"{keys['cluster.gpus'].value:,} GPUs: the fitted scenario simulates no GPU telemetry (its"
            f" {default['simulation.days']:g} days of samples would pass Goodput's limit, engine/limits.py"
            " MAX_GPU_SAMPLES); set simulation.telemetry_resolution coarser to have some"
        )
    return out


def _source(run_id: str, start_s: float, end_s: float) -> str:
    return f"run {run_id} days {start_s / SECONDS_PER_DAY:g}-{end_s / SECONDS_PER_DAY:g}"


def _date(started_at: datetime, offset_s: float) -> str:
    return (started_at + timedelta(seconds=offset_s)).date().isoformat()


def drift_of(
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    hosts: int,
    window: Window,
    *,
    leave_out_repeat_hosts: bool = False,
) -> Drift:
    """The window's weekly series and its tests of one level (engine.twin.drift); where the fit found bad hosts,
    the rate's test counts only the faults of hosts that failed once in the window (a bad host's faults stop when
    a repair cures it, a decline the twin models; for any host, where its faults fall in time does not depend on
    how many it had, so leaving some hosts out keeps the test fair)."""
    counted = incidents
    if leave_out_repeat_hosts:
        unexpected = incidents.filter(~pl.col("planned").fill_null(False))
        once = unexpected.group_by("host_id").len().filter(pl.col("len") == 1)["host_id"]
        counted = unexpected.filter(pl.col("host_id").is_in(once.implode()))
    events = fault_events(counted, window.start_s, window.end_s, burst_window_s())
    repairs = incidents.filter(
        ~pl.col("planned").fill_null(False)
        & pl.col("repaired_s").is_not_null()
        & (pl.col("repaired_s") > pl.col("t_s"))
        & (pl.col("repaired_s") <= window.end_s)
    ).select("t_s", repair_s=pl.col("repaired_s") - pl.col("t_s"))
    # near the window's end only the quick repairs are over: the repair times of faults that began within the
    # 95th percentile of a repair of the end would read as a fall (a change on the last day); leave them out
    if repairs.height:
        recent = float(repairs["repair_s"].quantile(0.95, "higher"))
        repairs = repairs.filter(pl.col("t_s") < window.end_s - recent)
    weeks = weekly(events, repairs, states, hosts, window.start_s, window.end_s)
    rate_p, changes = rate_changes(weeks)
    repair_p, repair_step = repair_change(repairs)
    return Drift(weeks, changes, repair_step, rate_p, repair_p)


def _rate_change_words(history: Drift, started_at: datetime) -> str:
    steps = "; then ".join(
        f"from {c.before:.3g} to {c.after:.3g} per 1,000 host-days about {_date(started_at, c.at_s)}"
        f" (p = {c.p_value:.3f})"
        for c in history.rate_changes
    )
    return (
        f"the failure rate changed within the window: {steps}; the twin takes the level since"
        f" {_date(started_at, history.rate_changes[-1].at_s)}"
    )


def _unknown_faults(incidents: pl.DataFrame) -> tuple[int, int]:
    unexpected = incidents.filter(~pl.col("planned").fill_null(False))
    return int((~unexpected["cause"].is_in(list(CAUSE_KEYS))).sum()), unexpected.height


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
    jobs: pl.DataFrame,
    states: pl.DataFrame,
    flagship: str | None,
    shape: dict[str, Estimate],
    window: Window,
    source: str,
) -> Fitted:
    """The flagship (largest) job's size and its spare hosts (engine.twin.fit_jobs.spare_hosts); where the pool
    cannot be seen, the default's spares at most what the cluster leaves beside the job, said: the fitted scenario
    must fit its own cluster."""
    out = Fitted()
    if "cluster.gpus" not in shape:
        return out
    gpus, per_host = shape["cluster.gpus"].value, shape["cluster.gpus_per_host"].value
    row = jobs.filter(pl.col("job_id") == flagship) if flagship is not None else jobs.head(0)
    if row.height and row["gpus"][0]:
        out.keys["training.gpus"] = Estimate(min(int(row["gpus"][0]), gpus), n=1, source=source)
    else:
        job_gpus = min(KEY_BY_NAME["training.gpus"].default, gpus)
        out.keys["training.gpus"] = Estimate(job_gpus, n=0, source=ASSUMED)
        out.warnings.append(
            f"no job ran in the window: the twin's flagship job is assumed to take {job_gpus:,} GPUs"
        )
    job_hosts = math.ceil(out.keys["training.gpus"].value / per_host)
    left = gpus // per_host - job_hosts
    spares = spare_hosts(states, flagship, job_hosts, window.start_s, window.end_s, source)
    if spares is None:
        assumed = max(0, min(KEY_BY_NAME["spares.hosts"].default, left))
        spares = Estimate(assumed, n=0, source=ASSUMED)
        out.warnings.append(
            f"no spare pool seen (no host waited as a spare for the flagship job): spares.hosts assumed {assumed}"
            " (the default, at most what the cluster leaves beside the job)"
        )
    out.keys["spares.hosts"] = Estimate(
        min(spares.value, max(left, 0)), spares.low, spares.high, spares.n, spares.source
    )
    return out
