"""What a valid scenario may ask for: the sizes its keys imply together, checked before anything is built.

Single keys have their own bounds (engine.scenario.keys: `cluster.gpus` at most MAX_CLUSTER_GPUS, ...). The
sizes here come from several keys at once (GPU-days, telemetry samples, failures drawn, checkpoints written,
research jobs run), and each is what a simulation allocates or loops over. Each is estimated from the scenario
alone (expected counts, no draws); engine.scenario raises a ScenarioError for the first over its limit,
naming the keys, the size and the limit in engine/limits.py, so `goodput simulate --set simulation.days=3650`
on a large cluster stops at once instead of after minutes or gigabytes.
"""

import math
from dataclasses import dataclass
from typing import Any

from engine import limits
from engine.units import SECONDS_PER_DAY

DURATION_SIGMA = 1.0  # engine.sim.research's log-normal shape: mean duration = median x exp(sigma^2 / 2)


@dataclass(frozen=True)
class Size:
    """One size a scenario implies: what it counts, the keys it comes from, its value and its limit."""

    what: str
    keys: str
    value: float
    limit: float

    def message(self) -> str:
        return (
            f"{self.keys}: {self.what} would be {_number(self.value)}, over Goodput's limit of "
            f"{_number(self.limit)} (engine/limits.py)"
        )


def sizes(s: Any) -> list[Size]:
    """Every derived size of scenario `s` (an engine.scenario.Scenario) with its limit."""
    days, hosts = s["simulation.days"], s.hosts
    duration = days * SECONDS_PER_DAY
    out = [
        Size(
            "GPU-days (cluster.gpus x simulation.days)",
            "cluster.gpus, simulation.days",
            s["cluster.gpus"] * days,
            limits.MAX_GPU_DAYS,
        )
    ]
    if s["simulation.telemetry"]:
        samples = math.ceil(duration / s["simulation.telemetry_resolution"])
        out.append(
            Size(
                "GPU telemetry samples (cluster.gpus x samples a GPU)",
                "simulation.telemetry_resolution",
                s["cluster.gpus"] * samples,
                limits.MAX_GPU_SAMPLES,
            )
        )
    # bad hosts fail at failures.bad_host_multiplier times the rate: the mean rate over every host
    per_host = s["failures.rate_per_1000_node_days"] * s["failures.scale"] * _bad_host_factor(s)
    failures = per_host * hosts * days / 1000.0
    # bursts (engine.sim.failures.draw_bursts): each strikes burst_size_mean hosts on average, at most every host
    bursts = s["failures.burst_per_day"] * s["failures.scale"] * days
    burst_hosts = bursts * min(s["failures.burst_size_mean"], hosts)
    events = (
        failures
        + burst_hosts
        + s["failures.planned_per_day"] * days
        + s["network.fabric_faults_per_day"] * days
    )
    out.append(
        Size(
            "the failures, planned stops and fabric faults to simulate",
            "failures.rate_per_1000_node_days, failures.scale, failures.bad_host_*, "
            + ("failures.burst_*, " if bursts > 0 else "")
            + "failures.planned_per_day, network.fabric_faults_per_day",
            events,
            limits.MAX_SIM_EVENTS,
        )
    )
    if s["training.gpus"] > 0:
        job_hosts = s.job_hosts
        # a burst interrupts the job once however many of its hosts it strikes: at most once a burst
        stops = (per_host * job_hosts / 1000.0 + s["failures.planned_per_day"]) * days + bursts
        out.append(
            Size(
                "the flagship job's attempts x its hosts (each attempt lists its hosts)",
                "training.gpus, failures.rate_per_1000_node_days, failures.scale, simulation.days",
                job_hosts * (stops + 1),
                limits.MAX_JOB_ATTEMPT_HOSTS,
            )
        )
        cycle = s["training.checkpoint_interval"] + s.checkpoint_write_s
        out.append(
            Size(
                "the flagship job's checkpoints",
                "training.checkpoint_interval",
                duration / cycle,
                limits.MAX_CHECKPOINTS,
            )
        )
    research_hosts = max(hosts - s.job_hosts - s["spares.hosts"], 0)
    busy = s["research.utilization"]
    if research_hosts and busy > 0:
        mean_job_s = s["research.median_duration"] * math.exp(DURATION_SIGMA**2 / 2)
        out.append(
            Size(
                "research job-host intervals",
                "research.median_duration",
                research_hosts * busy * duration / mean_job_s,
                limits.MAX_RESEARCH_HOST_JOBS,
            )
        )
    return out


def _bad_host_factor(s: Any) -> float:
    """The mean failure rate of a host over the base rate: 1 + share of bad hosts x (their multiplier - 1)."""
    return 1.0 + s["failures.bad_host_fraction"] * (s["failures.bad_host_multiplier"] - 1.0)


def first_over(s: Any) -> Size | None:
    """The first size of `s` over its limit (infinities and NaN count as over), else None."""
    return next((size for size in sizes(s) if not size.value <= size.limit), None)


def _number(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    return f"{value:,.0f}" if value >= 10 else f"{value:,.3g}"
