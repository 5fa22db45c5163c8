"""The planner's closed forms beyond ETTR: how far the hot spares and the technicians cover the failures, and
round values for the knobs and the sweeps.

The closed-form ETTR (engine.analysis.analytics) depends on the flagship job alone: its hosts, the failure rate, the
checkpoint and the restart. The cluster around it and the spares held for it reach ETTR only when the spares
run out (the job borrows a research host, or waits). This module estimates how often that happens, first
order, so the Planner's spare and cluster knobs move a figure of their own:

- a failure that sends a host to repair (every cause but the job-level ones, engine.sim.failures.SCOPE) keeps it
  away for drain + diagnose + fix + rma_fraction x rma_time + burn-in (no queue for technicians);
- by Little's law the job's hosts away at once average (job failures to repair a second) x (time away), each
  incident taking one host, or a whole rack for a rack-switch fault;
- the number away is about Poisson, so the spares run out with P(Poisson(mean) > spares);
- the technicians are asked for (cluster-wide failures to repair a second) x fix / technicians of their time.
"""

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from engine.analysis.analytics import ClosedForm, closed_form_ettr
from engine.analysis.ledger import LOSSES
from engine.reference import CAUSES
from engine.scenario import MIX_PREFIX, Scenario, build
from engine.sim.failures import SCOPE
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

# Round values a person would choose, in seconds: the ladder the Planner's duration sliders and default sweep
# values are drawn from ("10 min", "15 min", "30 min", "1 h"; never "1,437.7 s").
DURATION_LADDER_S: tuple[float, ...] = (
    1,
    2,
    3,
    5,
    10,
    15,
    20,
    30,
    45,
    60,
    120,
    180,
    300,
    600,
    900,
    1200,
    1800,
    2700,
    3600,
    5400,
    7200,
    10800,
    14400,
    21600,
    28800,
    43200,
    86400,
    2 * 86400,
    3 * 86400,
    7 * 86400,
    14 * 86400,
    30 * 86400,
)
NICE_MANTISSAS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


def nice_duration(seconds: float) -> float:
    """The ladder's value nearest to `seconds` on a log scale (0 stays 0; under a second, a nice number)."""
    if seconds <= 0:
        return 0.0
    if seconds < 1:  # a write of 0.08 s (a small job on fast storage) is no second
        return nice_number(seconds)
    return min(DURATION_LADDER_S, key=lambda v: abs(math.log(v / seconds)))


def nice_number(x: float) -> float:
    """The nearest of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten, on a log scale (0 stays 0)."""
    if x <= 0:
        return 0.0
    power = 10.0 ** math.floor(math.log10(x))
    best = min((m * power for m in NICE_MANTISSAS), key=lambda v: abs(math.log(v / x)))
    return float(f"{best:.6g}")  # 0.1 x 3 is 0.30000000000000004: keep what a person would type


def poisson_tail(mean: float, k: int) -> float:
    """P(X > k) for X ~ Poisson(mean) (scipy.stats.poisson.sf: exact for 100,000 spares or a mean of 1,000)."""
    if mean <= 0:
        return 0.0
    if k < 0:
        return 1.0
    from scipy.stats import poisson  # scipy.stats costs ~0.7 s to import: only where it is used

    return float(poisson.sf(k, mean))


@dataclass(frozen=True)
class SpareCover:
    """First-order spare and repair figures of a scenario (module docstring)."""

    repair_share: float  # share of unexpected failures that send hosts to repair
    hosts_per_incident: float  # hosts a failure to repair takes, on average (a rack-switch fault: the rack)
    time_away_s: float  # how long a failed host stays out of service, technicians never busy
    hosts_away: float  # the job's hosts in repair at once, on average
    spares: int
    run_out: float  # share of the time more of the job's hosts are away than spares are held
    technician_load: (
        float  # share of the technicians' time the cluster's repairs ask for (>= 1: a queue grows)
    )


def repair_share(s: Scenario) -> float:
    """Share of the failure mix (failures.mix.*) whose causes send hosts to repair, not just restart the job."""
    weights = {cause: s[MIX_PREFIX + cause] for cause in SCOPE}
    total = math.fsum(weights.values())
    if total == 0:
        return 0.0
    return math.fsum(w for cause, w in weights.items() if SCOPE[cause] != "job") / total


def spare_cover(s: Scenario) -> SpareCover:
    """How far `s`'s hot spares and technicians cover its failures (module docstring)."""
    rate_per_host_s = s.failures.rate_per_1000_node_days * s.failures.scale / 1000.0 / SECONDS_PER_DAY
    share = repair_share(s)
    weights = {cause: s[MIX_PREFIX + cause] for cause in SCOPE}
    total = math.fsum(weights.values())
    rack = s.failures.network_rack_share * s.cluster.hosts_per_rack + (1 - s.failures.network_rack_share)
    repaired = math.fsum(w for cause, w in weights.items() if SCOPE[cause] != "job")
    per_incident = (
        (
            math.fsum(
                w * (rack if SCOPE[c] == "network" else 1.0) for c, w in weights.items() if SCOPE[c] != "job"
            )
            / repaired
        )
        if total and repaired
        else 1.0
    )
    away = (
        s.repair.drain
        + s.repair.diagnose
        + s.repair.fix
        + s.repair.rma_fraction * s.repair.rma_time
        + s.repair.burn_in
    )
    hosts_away = s.job_hosts * rate_per_host_s * share * per_incident * away
    load = s.hosts * rate_per_host_s * share * s.repair.fix / s.repair.technicians
    spares = s.spares.hosts
    # past full load the repair queue grows without end: sooner or later every spare is in it
    run_out = 1.0 if load >= 1.0 and hosts_away > 0 else poisson_tail(hosts_away, spares)
    return SpareCover(
        repair_share=share,
        hosts_per_incident=per_incident,
        time_away_s=away,
        hosts_away=hosts_away,
        spares=spares,
        run_out=run_out,
        technician_load=load,
    )


# ----- the planner's inputs: category multipliers, checkpoint writes, the closed form of a scenario ----------


def cause_weights(s: Scenario) -> dict[str, float]:
    """The relative weight of each cause in `s`'s failure mix (failures.mix.*), every cause of the table."""
    return {c.cause: s[MIX_PREFIX + c.cause] for c in CAUSES}


def category_scale(weights: Mapping[str, float], multipliers: Mapping[str, float]) -> float:
    """sum(w x m) / sum(w): how much multiplying each category's causes by m raises the all-cause rate (1 with
    every category x1); a category missing from `multipliers` stays x1."""
    total = math.fsum(weights.values())
    if total == 0:
        return 1.0
    category = {c.cause: c.category for c in CAUSES}
    return math.fsum(w * multipliers.get(category[k], 1.0) for k, w in weights.items()) / total


def scaled_mix(weights: Mapping[str, float], multipliers: Mapping[str, float]) -> dict[str, float]:
    """The failures.mix.<cause> values that multiply each category's causes: only the causes that change."""
    category = {c.cause: c.category for c in CAUSES}
    return {
        MIX_PREFIX + cause: w * multipliers[category[cause]]
        for cause, w in weights.items()
        if multipliers.get(category[cause], 1.0) != 1.0
    }


def checkpoint_write_seconds(gb_per_gpu: float, gpus: int, bandwidth_gb_per_s: float) -> float:
    """Blocking time of one checkpoint that every GPU of the job writes through one shared bandwidth (as
    Scenario.checkpoint_write_s derives it where training.checkpoint_write is not given)."""
    return gb_per_gpu * gpus / bandwidth_gb_per_s


def closed_form_of(s: Scenario) -> ClosedForm:
    """Kokolis et al.'s estimate for a scenario's flagship job, as engine.analysis.summary computes it."""
    return closed_form_ettr(
        gpus=s.training.gpus,
        gpus_per_host=s.cluster.gpus_per_host,
        rate_per_1000_node_days=s.failures.rate_per_1000_node_days * s.failures.scale,
        checkpoint_interval_s=s.training.checkpoint_interval,
        checkpoint_write_s=s.checkpoint_write_s,
        restart_overhead_s=s.training.restart_overhead,
    )


# The keys the flagship's placement slowdown depends on: the rest of a scenario leaves it where it is.
PLACEMENT_KEYS = (
    "cluster.gpus",
    "cluster.gpus_per_host",
    "cluster.hosts_per_rack",
    "cluster.racks_per_pod",
    "cluster.fabric",
    "training.gpus",
    "spares.hosts",
    "training.placement",
    "network.gbps_per_gpu",
)


def placement_slowdown_of(s: Scenario) -> float:
    """The flagship's slowdown from its placement alone (engine.fabric.traffic.placement_slowdown): a topology build
    (~0.1 s on llama3-405b), cached on PLACEMENT_KEYS so a planner's other moves cost nothing."""
    return _placement_slowdown(s.preset or "llama3-405b", tuple((k, s[k]) for k in PLACEMENT_KEYS))


@functools.lru_cache(maxsize=64)
def _placement_slowdown(preset: str, shape: tuple[tuple[str, Any], ...]) -> float:
    import numpy as np  # the topology and its routes: only when a slowdown is asked for

    from engine.fabric.topology import build_topology
    from engine.fabric.traffic import placement_slowdown

    s = build(preset).with_values(dict(shape))
    return placement_slowdown(s, build_topology(s, np.random.default_rng(0)))  # the rng only names GPUs


# ----- the closed form's loss split (the Planner's waterfall beside a simulated run) ----------------------

# The losses of Goodput lost (the ledger's, degraded included once the recovery strategies have it), then the
# training time the network slowed, shown apart.
PLANNER_LOSSES = (*LOSSES, "network_slowdown")


def closed_form_losses(
    estimate: ClosedForm,
    *,
    gpus: int,
    interval_s: float,
    write_s: float,
    restart_s: float,
    duration_s: float,
    gpu_hour_usd: float,
    slowdown: float = 1.0,
) -> pl.DataFrame:
    """The closed form's split of the job's wall-clock time (category, gpu_hours, usd; PLANNER_LOSSES order).

    Per failure (rate lambda) half an interval of work is lost and a restart is paid: lambda (T/2 + R) of the
    time; the rest trains and checkpoints in the ratio T : w. The first-order model has no queue for spares,
    so waiting_for_spares is 0, and it models restart, so nothing is degraded. Where failures outrun progress
    (lambda (T/2 + R) > 1) the two failure shares are scaled to fill the time, as the clipped ETTR of 0
    implies. Of the training time left, a placement the network slows `slowdown` times makes no progress for
    1 - 1/slowdown of it (network_slowdown).
    """
    rate = estimate.failures_per_s
    lost, restart = rate * interval_s / 2.0, rate * restart_s
    failing = lost + restart
    if failing > 1.0:
        lost, restart = lost / failing, restart / failing
    rest = max(0.0, 1.0 - lost - restart)
    checkpoint = rest * (write_s / interval_s) / (1.0 + write_s / interval_s)
    job_gpu_hours = gpus * duration_s / SECONDS_PER_HOUR
    network = (rest - checkpoint) * slowed_share(slowdown)
    shares = {"lost_work": lost, "restart": restart, "checkpoint": checkpoint, "network_slowdown": network}
    hours = [shares.get(category, 0.0) * job_gpu_hours for category in PLANNER_LOSSES]
    return pl.DataFrame(
        {"category": list(PLANNER_LOSSES), "gpu_hours": hours, "usd": [h * gpu_hour_usd for h in hours]}
    )


def slowed_share(slowdown: float) -> float:
    """Share of training time that makes no progress when steps take `slowdown` times as long."""
    return 1.0 - 1.0 / slowdown if slowdown > 1.0 else 0.0


def job_slowdown(job: Mapping[str, Any]) -> float:
    """A summary job's placement_slowdown: 1 where absent (a run from before it), inf where null (no path)."""
    value = job.get("placement_slowdown", 1.0)
    return math.inf if value is None else float(value)


def loss_table(summary: Mapping[str, Any], s: Scenario) -> pl.DataFrame:
    """A run's simulated losses beside the closed form's for its scenario `s` (PLANNER_LOSSES order): category,
    sim_gpu_hours, sim_usd, cf_gpu_hours, cf_usd. The simulated network slowdown is the share of the job's
    productive GPU-hours its placement made no progress in (slowed_share)."""
    job = summary.get("job", {})
    hours = dict(job.get("losses_gpu_hours") or {})
    slowdown = job_slowdown(job)
    hours["network_slowdown"] = job.get("productive_hours", 0.0) * job.get("gpus", 0) * slowed_share(slowdown)
    price = s.cost.gpu_hour_usd
    cf = closed_form_losses(
        closed_form_of(s),
        gpus=s.training.gpus,
        interval_s=s.training.checkpoint_interval,
        write_s=s.checkpoint_write_s,
        restart_s=s.training.restart_overhead,
        duration_s=s.duration_s,
        gpu_hour_usd=price,
        slowdown=slowdown,
    )
    sim_hours = [float(hours.get(c, 0.0)) for c in PLANNER_LOSSES]
    return pl.DataFrame(
        {
            "category": list(PLANNER_LOSSES),
            "sim_gpu_hours": sim_hours,
            "sim_usd": [h * price for h in sim_hours],
            "cf_gpu_hours": cf["gpu_hours"],
            "cf_usd": cf["usd"],
        }
    )
