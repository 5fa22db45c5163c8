"""A simulated run's summary (engine.analysis.run_summary.RunSummary), from the model's records: the object
`goodput simulate --json` prints (DESIGN "Command line"), less run_id.

`interruptions` counts the flagship job's interruptions the way the Llama 3 paper counts them: every failure
or planned stop that hit the job while it trained or restarted. ETTR is productive time / wall-clock time
from the job's start (Kokolis et al.); the losses (engine.analysis.ledger.LOSSES) add up with productive time
to the run's length. `job.recovery_cost` is what the recovery strategy (engine.sim.recovery) costs besides.
A run with fail-slow episodes (engine.sim.slow) adds the slowdown bucket to the losses and the episodes to the
cluster; a run without them leaves both out, so its summary is what it was before they existed. So with bursts
(failures.burst_per_day > 0, engine.sim.failures.draw_bursts): the cluster's `bursts` and `burst_hosts`.
"""

import math

import numpy as np
import polars as pl

from engine.analysis.analytics import closed_form_ettr, young_daly_interval
from engine.analysis.ledger import LOSSES, GoodputLedger, cluster_progress_share
from engine.analysis.run_summary import ClusterUse, FlagshipJob, Interruptions, RecoveryCost, RunSummary
from engine.fabric.traffic import placement_slowdown
from engine.scenario import Scenario
from engine.sim.bad_hosts import bad_host_summary
from engine.sim.failures import CAUSE_KEYS
from engine.sim.records import JobLedger, SimulationResult
from engine.sim.recovery import memory_gb_per_host
from engine.sim.slow import slowness_on
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR


def summarize(scenario: Scenario, result: SimulationResult, incidents: pl.DataFrame) -> RunSummary:
    """The summary, from the simulation's records (not host_states, so a summary-only run skips building it)."""
    horizon = result.horizon_s
    per_host = scenario.cluster.gpus_per_host
    gpus = scenario.cluster.gpus
    hit = (
        incidents.filter(pl.col("job_ids").list.contains(result.job_id))
        if result.job is not None
        else incidents.head(0)
    )
    counts = dict(
        zip(*hit.group_by("cause").len().sort("cause").to_dict(as_series=False).values(), strict=True)
    )
    planned = int(hit["planned"].sum())
    unexpected = hit.height - planned
    by_cause = {c: int(counts.get(c, 0)) for c in CAUSE_KEYS} | {"planned_maintenance": planned}
    down_s, running_s = _host_seconds(result)
    host_seconds = scenario.hosts * horizon
    job = _job(scenario, result, unexpected)
    return RunSummary(
        gpus=gpus,
        hosts=scenario.hosts,
        # a run whose flagship finished its work (training.work) ended then, before simulation.days
        days=scenario.simulation.days if horizon >= scenario.duration_s else horizon / SECONDS_PER_DAY,
        seed=scenario.simulation.seed,
        interruptions=Interruptions(
            total=hit.height, planned=planned, unexpected=unexpected, by_cause=by_cause
        ),
        job=job,
        cluster=ClusterUse(
            gpu_hours=gpus * horizon / SECONDS_PER_HOUR,
            gpu_hours_down=float(down_s) * per_host / SECONDS_PER_HOUR,
            # utilisation by allocation (hosts running a job) and by progress (work kept), both over
            # every GPU-hour of the cluster (engine/analysis/definitions/cluster.py)
            utilization=float(running_s) / host_seconds if host_seconds else 0.0,
            utilization_progress=cluster_progress_share(
                flagship_productive_gpu_s=job.productive_hours * SECONDS_PER_HOUR * job.gpus,
                research_progress_gpu_s=_research_progress_s(result) * per_host,
                cluster_gpu_s=gpus * horizon,
            ),
            # hosts pulled as lemons (repeat offenders sent to the vendor) and hosts still out at the end
            lemons=result.lemons,
            hosts_in_repair_at_end=result.hosts_in_repair_at_end,
            # research jobs preempted because the flagship job had no spare left
            research_preemptions=result.research_preemptions,
            # the research work failures and preemptions threw away (research jobs keep no checkpoints)
            research_lost_gpu_hours=_research_lost_s(result) * per_host / SECONDS_PER_HOUR,
            # bad hosts (the simulator's ground truth), diagnosis, repair outcomes and retirement
            **bad_host_summary(result),
            **_slow_summary(scenario, result),
            **_burst_summary(scenario, result),
        ),
    )


def _slow_summary(scenario: Scenario, result: SimulationResult) -> dict[str, int]:
    """Fail-slow episodes over the run and the hosts swapped or drained out of the flagship job for them; none
    of it when the scenario has no fail-slow rate."""
    if not slowness_on(scenario):
        return {}
    episodes = result.slow_episodes
    return {
        "slow_episodes": sum(1 for e in episodes if e.start_s < result.horizon_s),
        "slow_hosts_swapped": sum(1 for e in episodes if e.action != "none"),
    }


def _burst_summary(scenario: Scenario, result: SimulationResult) -> dict[str, int]:
    """Bursts that struck several hosts (failures of one cause at one instant, at least two hosts in service:
    one struck alone reads as any failure in the tables, as it would to a calibration) and the hosts they struck;
    none of it when the scenario has no bursts (failures.burst_per_day 0)."""
    if scenario.failures.burst_per_day <= 0:
        return {}
    struck = [n for n in result.bursts if n >= 2]
    return {"bursts": len(struck), "burst_hosts": sum(struck)}


def _host_seconds(result: SimulationResult) -> tuple[float, float]:
    """Host-seconds out of service (the repair layer: engine.store.schema.OUT_OF_SERVICE_STATES) and running a job,
    as host_states would sum them: the repair layer never overlaps a job (a failure ends the job on its hosts
    before their repair starts)."""
    horizon = result.horizon_s
    repair = np.array([(i.start_s, i.end_s) for i in result.repair_intervals]).reshape(-1, 2)
    down = np.clip(repair[:, 1], None, horizon) - np.clip(repair[:, 0], None, horizon)
    flagship = sum(i.end_s - i.start_s for i in result.flagship_intervals if i.state == "running")
    # and research hosts lent to the flagship
    flagship += sum(i.end_s - i.start_s for i in result.borrowed_intervals)
    return float(down.sum()), float(flagship) + _research_running_s(result)


def _research_running_s(result: SimulationResult) -> float:
    """Host-seconds the research lanes ran jobs."""
    busy = np.array(
        [(i.lane, i.end_s - i.start_s) for i in result.lane_intervals if i.state == "running"]
    ).reshape(-1, 2)
    return float((busy[:, 1] * result.lane_sizes[busy[:, 0].astype(int)]).sum()) if busy.size else 0.0


def _research_lost_s(result: SimulationResult) -> float:
    """Host-seconds of research work thrown away by failures and preemptions (research jobs keep no checkpoints,
    engine.sim.research)."""
    return float(sum(job.lost_work_s * job.hosts for job in result.research_jobs if job.lost_work_s))


def _research_progress_s(result: SimulationResult) -> float:
    """Host-seconds of research work kept: their running time less the work thrown away."""
    return max(_research_running_s(result) - _research_lost_s(result), 0.0)


def _job(scenario: Scenario, result: SimulationResult, unexpected: int) -> FlagshipJob:
    job_gpus = scenario.training.gpus
    horizon = result.horizon_s
    rate = scenario.failures.rate_per_1000_node_days * scenario.failures.scale
    estimate = closed_form_ettr(
        gpus=job_gpus,
        gpus_per_host=scenario.cluster.gpus_per_host,
        rate_per_1000_node_days=rate,
        checkpoint_interval_s=scenario.training.checkpoint_interval,
        checkpoint_write_s=scenario.checkpoint_write_s,
        restart_overhead_s=scenario.training.restart_overhead,
    )
    yd = young_daly_interval(scenario.checkpoint_write_s, estimate.mttf_s)
    losses = LOSSES if slowness_on(scenario) else tuple(k for k in LOSSES if k != "slowdown")
    if result.job is None:
        zero = dict.fromkeys(losses, 0.0)
        return FlagshipJob(
            name=result.job_id,
            gpus=0,
            ettr=0.0,
            mttf_hours=None,
            checkpoints=0,
            lost_gpu_hours=0.0,
            losses_gpu_hours=zero,
            losses_usd=zero,
            closed_form_ettr=None,
            young_daly_interval_s=None,
            checkpoint_write_s=scenario.checkpoint_write_s,
            productive_hours=0.0,
            attempts=0,
            placement=scenario.training.placement,
            placement_slowdown=None,
            ettr_with_network=0.0,
            recovery=scenario.training.recovery,
            recovery_cost=_recovery_cost(scenario, JobLedger(), 0.0),
        )
    ledger = result.job.ledger
    slow = placement_slowdown(scenario, result.topology)
    goodput = GoodputLedger.from_training(ledger, gpus=job_gpus, wall_clock_s=horizon, slowdown=slow)
    gpu_hours = {k: v for k, v in goodput.gpu_hours().items() if k in losses}
    price = scenario.cost.gpu_hour_usd
    return FlagshipJob(
        name=result.job_id,
        gpus=job_gpus,
        ettr=goodput.ettr,
        mttf_hours=horizon / unexpected / SECONDS_PER_HOUR if unexpected else None,
        checkpoints=int(sum(len(c) for c in ledger.checkpoint_starts)),
        lost_gpu_hours=sum(gpu_hours.values()),
        losses_gpu_hours=gpu_hours,
        losses_usd={k: v * price for k, v in gpu_hours.items()},
        closed_form_ettr=estimate.ettr,
        young_daly_interval_s=None if math.isinf(yd) else yd,
        checkpoint_write_s=scenario.checkpoint_write_s,
        productive_hours=float(ledger.productive_s) / SECONDS_PER_HOUR,
        attempts=len(ledger.attempts),
        # the network's cost of where the job sits (engine.fabric.traffic.placement_slowdown): ETTR counts time,
        # not speed, so it stays as Meta measures it; ettr_with_network is the progress once slowed steps count
        placement=scenario.training.placement,
        placement_slowdown=slow if math.isfinite(slow) else None,
        ettr_with_network=goodput.goodput_with_network,
        # the goodput ledger in seconds (engine.analysis.ledger): its buckets add up to the wall clock
        ledger_s={k: v for k, v in goodput.to_json().items() if k in losses or k not in LOSSES},
        # how the job recovers from a failure (engine.sim.recovery) and what the strategy costs besides its
        # ledger buckets
        recovery=result.job.recovery,
        recovery_cost=_recovery_cost(scenario, ledger, gpu_hours["degraded"]),
        # training.work done: the wall clock it took (the run ended then); None without work or not done in time
        time_to_train_days=None if ledger.finished_s is None else ledger.finished_s / SECONDS_PER_DAY,
    )


def _recovery_cost(scenario: Scenario, ledger: JobLedger, degraded_gpu_hours: float) -> RecoveryCost:
    """What the recovery strategy costs (engine/analysis/definitions/goodput.py): warm standbys idle
    (hot_spare), training lost with replicas out (replica_drop: the degraded ledger bucket) in GPU-hours and
    dollars, and the host memory in-memory checkpoints take (in_memory_checkpoint); zeros where it has none."""
    price = scenario.cost.gpu_hour_usd
    standby = ledger.standby_host_s * scenario.cluster.gpus_per_host / SECONDS_PER_HOUR
    return RecoveryCost(
        standby_gpu_hours=standby,
        standby_usd=standby * price,
        degraded_gpu_hours=degraded_gpu_hours,
        degraded_usd=degraded_gpu_hours * price,
        memory_gb_per_host=memory_gb_per_host(scenario),
    )
