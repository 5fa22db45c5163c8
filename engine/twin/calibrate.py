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
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from engine.analysis.incidents import flagship_job_id
from engine.analysis.window_figures import largest_job
from engine.errors import GoodputError
from engine.scenario import Scenario, build
from engine.scenario.durations import parse_duration
from engine.scenario.keys import KEY_BY_NAME
from engine.store import Store, query_frame
from engine.twin.estimate import Estimate, Fitted
from engine.twin.fit_failures import RUN_KEY, fit_failures, planned
from engine.twin.fit_jobs import checkpoints, median_law, research_mix, restart_overhead, spare_hosts
from engine.twin.fit_repair import RepairFit, fit_repair
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
    source = f"run {run_id} days {window.start_s / SECONDS_PER_DAY:g}-{window.end_s / SECONDS_PER_DAY:g}"
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
    failures, seen = fit_failures(incidents, states, tables["hosts"], window.start_s, window.end_s, source)
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
    repair = fit_repair(incidents, states, window.end_s, source)
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
