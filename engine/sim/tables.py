"""The simulation's records as the store's frames: jobs, job_attempts, checkpoints, incidents, slow_episodes."""

import numpy as np
import polars as pl

from engine.sim.failures import CATEGORY, SCOPE
from engine.sim.records import SimulationResult
from engine.sim.slow import GPU_CAUSES, episode_costs
from engine.store.schema import polars_schema
from engine.units import SECONDS_PER_HOUR

FLAGSHIP_PRIORITY, RESEARCH_PRIORITY = 100, 0


ATTEMPT_COLUMNS = ("job_id", "attempt", "start_s", "end_s", "end_reason", "lost_work_s", "hosts")
JOB_COLUMNS = (
    "job_id",
    "name",
    "gpus",
    "priority",
    "submit_s",
    "start_s",
    "end_s",
    "state",
    "user",
    "kind",
    "wait_reason",
)


def _host_lists(arrays: list[np.ndarray]) -> pl.Series:
    """A List(Int32) column from equal-length arrays in one block (an attempt always holds the full job: 12,288
    hosts an attempt for future-131k), or one by one if lengths differ."""
    if arrays and len({a.size for a in arrays}) == 1:
        return pl.Series("hosts", np.stack(arrays)).cast(pl.List(pl.Int32))
    return pl.Series("hosts", [a.tolist() for a in arrays], dtype=pl.List(pl.Int32))


def job_frames(result: SimulationResult) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The jobs, job_attempts and checkpoints tables: the flagship job (if any), then the research jobs."""
    research_jobs, research_attempts = _research_frames(result)
    frames_jobs, frames_attempts, checkpoints = _flagship_frames(result)
    jobs = pl.concat([*frames_jobs, research_jobs])
    attempts = pl.concat([*frames_attempts, research_attempts])
    return jobs, attempts, checkpoints


def _research_frames(result: SimulationResult) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The research jobs and their single attempts, each on the hosts of its lane."""
    research = result.research_jobs
    ids = [job.job_id for job in research]
    research_jobs = pl.DataFrame(
        {
            "job_id": ids,
            "name": ids,
            "gpus": np.array([job.hosts * result.gpus_per_host for job in research], dtype=float),
            "priority": np.full(len(research), RESEARCH_PRIORITY, dtype=np.int32),
            "submit_s": [job.submit_s for job in research],
            "start_s": [job.start_s for job in research],
            "end_s": [job.end_s for job in research],
            "state": [job.state for job in research],
            "user": ["research"] * len(research),
            "kind": ["research"] * len(research),
            # a research job only waits when a host of its lane is in repair
            "wait_reason": [None if job.start_s == job.submit_s else "failed_hosts" for job in research],
        },
        schema=polars_schema("jobs", JOB_COLUMNS),
    )
    lane_hosts = pl.DataFrame(
        {"lane": np.arange(len(result.lane_hosts)), "hosts": [hosts.tolist() for hosts in result.lane_hosts]},
        schema={"lane": pl.Int64, "hosts": pl.List(pl.Int32)},
    )
    research_attempts = (
        pl.DataFrame(
            {
                "job_id": ids,
                "attempt": np.ones(len(research), dtype=np.int32),
                "start_s": [job.start_s for job in research],
                "end_s": [job.end_s for job in research],
                "end_reason": [job.end_reason for job in research],
                "lost_work_s": [job.lost_work_s for job in research],
                "lane": np.array([job.lane for job in research], dtype=np.int64),
            },
            schema=polars_schema("job_attempts", ATTEMPT_COLUMNS[:-1]) | {"lane": pl.Int64},
        )
        .join(lane_hosts, on="lane", how="left", maintain_order="left")
        .drop("lane")
    )
    return research_jobs, research_attempts


def _flagship_frames(
    result: SimulationResult,
) -> tuple[list[pl.DataFrame], list[pl.DataFrame], pl.DataFrame]:
    """The flagship job, its attempts and its checkpoints (empty lists and no checkpoints without one)."""
    frames_jobs, frames_attempts = [], []
    checkpoints = pl.DataFrame(schema=polars_schema("checkpoints"))
    job = result.job
    if job is not None:
        frames_jobs.append(
            pl.DataFrame(
                {
                    "job_id": [job.job_id],
                    "name": [job.job_id],
                    "gpus": [float(job.gpus)],
                    "priority": [FLAGSHIP_PRIORITY],
                    "submit_s": [0.0],
                    "start_s": [0.0],
                    "end_s": [result.horizon_s],
                    "state": ["running"],
                    "user": ["pretraining"],
                    "kind": ["flagship"],
                    "wait_reason": [None],
                },
                schema=polars_schema("jobs", JOB_COLUMNS),
            )
        )
        rows = job.ledger.attempts
        frames_attempts.append(
            pl.DataFrame(
                {
                    "job_id": [job.job_id] * len(rows),
                    "attempt": [a.attempt for a in rows],
                    "start_s": [float(a.start_s) for a in rows],
                    "end_s": [float(a.end_s) for a in rows],
                    "end_reason": [a.end_reason for a in rows],
                    "lost_work_s": [float(a.lost_work_s) for a in rows],
                },
                schema=polars_schema("job_attempts", ATTEMPT_COLUMNS[:-1]),
            ).with_columns(hosts=_host_lists([a.hosts for a in rows]))
        )
        starts = np.concatenate(job.ledger.checkpoint_starts) if job.ledger.checkpoint_starts else np.zeros(0)
        checkpoints = pl.DataFrame(
            {
                "job_id": [job.job_id] * starts.size,
                "start_s": starts,
                "end_s": starts + job.checkpoint_write_s,
            },
            schema=polars_schema("checkpoints"),
        )
    return frames_jobs, frames_attempts, checkpoints


def incidents_frame(result: SimulationResult) -> pl.DataFrame:
    """The incidents table: the records plus what each cost and when it was mitigated and repaired."""
    rows = result.incidents
    n = len(rows)
    fault = np.array([r.t_s for r in rows], dtype=float)
    detected = np.array([r.detected_s for r in rows], dtype=float)
    cause = [r.cause for r in rows]
    lost = np.array([r.lost_work_s for r in rows], dtype=float)
    flagship = np.array([r.flagship is not None for r in rows], dtype=bool)
    mitigated = np.full(n, np.nan)
    gpu_hours = np.zeros(n)
    horizon = result.horizon_s
    if result.job is not None and flagship.any():
        resumed = np.array(result.job.ledger.resumed_at + [np.inf])
        at = resumed[np.searchsorted(resumed, detected[flagship], side="left")]
        mitigated[flagship] = np.where(np.isfinite(at), at, np.nan)
        # downtime is charged to one incident at a time: until the job resumes or the next interruption
        d = detected[flagship]
        next_hit = np.append(d[1:], np.inf)
        down = np.minimum(np.minimum(np.nan_to_num(at, posinf=horizon), next_hit), horizon) - d
        gpu_hours[flagship] = (lost[flagship] + down) * result.job.gpus / SECONDS_PER_HOUR
    # research work lost: the attempt of each research job hit (they keep no checkpoints)
    for i, incident in enumerate(rows):
        for job in incident.research:
            gpu_hours[i] += job.lost_work_s * job.hosts * result.gpus_per_host / SECONDS_PER_HOUR
    # a job-scope fault is over when detected (the job restarts in place); a planned stop repairs nothing
    repaired = np.array(
        [
            np.nan
            if r.planned
            else r.detected_s
            if SCOPE.get(r.cause) == "job"
            else result.repaired_at.get(i, np.nan)
            for i, r in enumerate(rows)
        ]
    )

    def nullable(values: list[int]) -> list[int | None]:
        return [None if v < 0 else v for v in values]  # NONE, and any other negative, is no value

    job_ids = [r.job_ids for r in rows]

    frame = pl.DataFrame(
        {
            "incident_id": np.arange(n, dtype=np.int32),
            "t_s": fault,
            "detected_s": detected,
            "mitigated_s": mitigated,
            "repaired_s": repaired,
            "cause": cause,
            "category": [CATEGORY[c] for c in cause],
            "planned": [r.planned for r in rows],
            "xid": nullable([r.xid for r in rows]),
            "host_id": nullable([r.host_id for r in rows]),
            "gpu_id": nullable([r.gpu_id for r in rows]),
            "link_id": nullable([r.link_id for r in rows]),
            "jobs_hit": np.array([len(ids) for ids in job_ids], dtype=np.int32),
            "gpu_hours_lost": gpu_hours,
            "job_ids": job_ids,
        },
        schema=polars_schema("incidents"),
    )
    return frame.with_columns(pl.col("mitigated_s", "repaired_s").fill_nan(None))


def slow_episodes_frame(result: SimulationResult) -> pl.DataFrame:
    """The slow_episodes table: the fail-slow episodes that began before the run ended (as the summary counts
    them), their ends clipped to it; gpu_id for a GPU cause (a GPU's id is host x GPUs a host + its index, as
    engine.sim.simulate numbers them), NULL for a slow host or link; cost_gpu_hours from engine.sim.slow.episode_costs.
    Empty where slowness is off."""
    costs = episode_costs(result.slow_episodes, result.job)
    kept = [(e, c) for e, c in zip(result.slow_episodes, costs, strict=True) if e.start_s < result.horizon_s]
    rows = [e for e, _ in kept]

    def finite(x: float) -> float | None:
        return x if np.isfinite(x) else None

    return pl.DataFrame(
        {
            "host_id": [e.host for e in rows],
            "gpu_id": [
                e.host * result.gpus_per_host + e.gpu_index if e.cause in GPU_CAUSES else None for e in rows
            ],
            "cause": [e.cause for e in rows],
            "start_s": [e.start_s for e in rows],
            "end_s": [min(e.end_s, result.horizon_s) for e in rows],
            "factor": [e.factor for e in rows],
            "detected_s": [finite(e.detected_s) for e in rows],
            "action": [e.action for e in rows],
            "left_s": [finite(e.left_s) for e in rows],
            "cost_gpu_hours": [c for _, c in kept],
        },
        schema=polars_schema("slow_episodes"),
    )
