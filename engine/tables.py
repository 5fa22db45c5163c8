"""The simulation's records as the store's frames: jobs, job_attempts, checkpoints, incidents."""

import numpy as np
import polars as pl

from engine.failures import CATEGORY, SCOPE
from engine.schema import TABLES

FLAGSHIP_PRIORITY, RESEARCH_PRIORITY = 100, 0


def schema_of(table: str, columns: tuple[str, ...] | None = None) -> dict[str, pl.DataType]:
    """Polars types of a store table's columns (all of them, or `columns`)."""
    types = {"VARCHAR": pl.String, "DOUBLE": pl.Float64, "INTEGER": pl.Int32, "SMALLINT": pl.Int16,
             "BIGINT": pl.Int64, "BOOLEAN": pl.Boolean, "REAL": pl.Float32, "INTEGER[]": pl.List(pl.Int32),
             "VARCHAR[]": pl.List(pl.String)}
    return {name: types[sql] for name, sql in TABLES[table].items() if columns is None or name in columns}


ATTEMPT_COLUMNS = ("job_id", "attempt", "start_s", "end_s", "end_reason", "lost_work_s", "hosts")
JOB_COLUMNS = ("job_id", "name", "gpus", "priority", "submit_s", "start_s", "end_s", "state", "user", "kind",
               "wait_reason")


def research_job_id(index: int) -> str:
    return f"research-{index:05d}"


def _host_lists(arrays: list[np.ndarray]) -> pl.Series:
    """A List(Int32) column from equal-length arrays in one block (an attempt always holds the full job: 12,288
    hosts an attempt for future-131k), or one by one if lengths differ."""
    if arrays and len({a.size for a in arrays}) == 1:
        return pl.Series("hosts", np.stack(arrays)).cast(pl.List(pl.Int32))
    return pl.Series("hosts", [a.tolist() for a in arrays], dtype=pl.List(pl.Int32))


def job_frames(sim) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    s, horizon = sim.scenario, sim.horizon
    per_host = s["cluster.gpus_per_host"]
    lanes = sim.research
    r = lanes.jobs
    lane_idx = np.array([j[0] for j in r], dtype=np.int64)
    lane_sizes = np.array([ln.hosts.size for ln in lanes.lanes], dtype=np.int64)
    ids = [research_job_id(i) for i in range(len(r))]
    research_jobs = pl.DataFrame({
        "job_id": ids, "name": ids,
        "gpus": (lane_sizes[lane_idx] * per_host).astype(float) if r else np.zeros(0),
        "priority": np.full(len(r), RESEARCH_PRIORITY, dtype=np.int32),
        "submit_s": [j[1] for j in r], "start_s": [j[2] for j in r], "end_s": [j[3] for j in r],
        "state": [j[4] for j in r], "user": ["research"] * len(r), "kind": ["research"] * len(r),
        # a research job only waits when a host of its lane is in repair
        "wait_reason": [None if j[2] == j[1] else "failed_hosts" for j in r],
    }, schema=schema_of("jobs", JOB_COLUMNS))
    lane_hosts = pl.DataFrame({"lane": np.arange(len(lanes.lanes)),
                               "hosts": [ln.hosts.tolist() for ln in lanes.lanes]},
                              schema={"lane": pl.Int64, "hosts": pl.List(pl.Int32)})
    research_attempts = pl.DataFrame({
        "job_id": ids, "attempt": np.ones(len(r), dtype=np.int32),
        "start_s": [j[2] for j in r], "end_s": [j[3] for j in r], "end_reason": [j[5] for j in r],
        "lost_work_s": [j[6] for j in r], "lane": lane_idx,
    }, schema=schema_of("job_attempts", ATTEMPT_COLUMNS[:-1]) | {"lane": pl.Int64}).join(
        lane_hosts, on="lane", how="left", maintain_order="left").drop("lane")
    frames_jobs, frames_attempts = [], []
    checkpoints = pl.DataFrame(schema=schema_of("checkpoints"))
    if sim.job is not None:
        ledger = sim.job.ledger
        frames_jobs.append(pl.DataFrame({
            "job_id": [sim.job_id], "name": [sim.job_id], "gpus": [float(s["training.gpus"])],
            "priority": [FLAGSHIP_PRIORITY], "submit_s": [0.0], "start_s": [0.0], "end_s": [horizon],
            "state": ["running"], "user": ["pretraining"], "kind": ["flagship"], "wait_reason": [None],
        }, schema=schema_of("jobs", JOB_COLUMNS)))
        rows = ledger.attempts
        scalars = pl.DataFrame([r[:5] for r in rows], schema=["attempt", "start_s", "end_s", "end_reason",
                                                              "lost_work_s"], orient="row")
        frames_attempts.append(scalars.with_columns(job_id=pl.lit(sim.job_id), hosts=_host_lists([r[5] for r in rows]))
                               .select(ATTEMPT_COLUMNS).cast(schema_of("job_attempts", ATTEMPT_COLUMNS)))
        starts = np.concatenate(ledger.checkpoint_starts) if ledger.checkpoint_starts else np.zeros(0)
        checkpoints = pl.DataFrame({"job_id": [sim.job_id] * starts.size, "start_s": starts,
                                    "end_s": starts + sim.job.w}, schema=schema_of("checkpoints"))
    jobs = pl.concat([*frames_jobs, research_jobs])
    attempts = pl.concat([*frames_attempts, research_attempts])
    return jobs, attempts, checkpoints


def incidents_frame(sim) -> pl.DataFrame:
    rows = sim.incidents
    n = len(rows)
    fault = np.array([r[0] for r in rows], dtype=float)
    detected = np.array([r[1] for r in rows], dtype=float)
    cause = [r[2] for r in rows]
    jobs = [r[8] for r in rows]
    lost = np.array([r[9] for r in rows], dtype=float)
    per_host = sim.scenario["cluster.gpus_per_host"]
    flagship = np.array([bool(j) and j[0] == sim.job_id for j in jobs], dtype=bool)
    mitigated = np.full(n, np.nan)
    gpu_hours = np.zeros(n)
    if sim.job is not None and flagship.any():
        resumed = np.array(sim.job.ledger.resumed_at + [np.inf])
        at = resumed[np.searchsorted(resumed, detected[flagship], side="left")]
        mitigated[flagship] = np.where(np.isfinite(at), at, np.nan)
        # downtime is charged to one incident at a time: until the job resumes or the next interruption
        d = detected[flagship]
        next_hit = np.append(d[1:], np.inf)
        down = np.minimum(np.minimum(np.nan_to_num(at, posinf=sim.horizon), next_hit), sim.horizon) - d
        gpu_hours[flagship] = (lost[flagship] + down) * sim.scenario["training.gpus"] / 3600.0
    # research work lost: the attempt of each research job hit (they keep no checkpoints)
    research = sim.research
    for i, job_list in enumerate(jobs):
        for job in job_list:
            if job != sim.job_id:
                record = research.jobs[int(job.split("-")[1])]
                gpu_hours[i] += record[6] * research.lanes[record[0]].hosts.size * per_host / 3600.0
    repaired = np.array([sim.repairs.repaired_at.get(i, np.nan) if SCOPE.get(c) != "job" and not r[3]
                         else (np.nan if r[3] else r[1]) for i, (c, r) in enumerate(zip(cause, rows, strict=True))])

    def nullable(values: list[int]) -> list[int | None]:
        return [None if v < 0 else v for v in values]

    frame = pl.DataFrame({
        "incident_id": np.arange(n, dtype=np.int32), "t_s": fault, "detected_s": detected,
        "mitigated_s": mitigated, "repaired_s": repaired, "cause": cause,
        "category": [CATEGORY[c] for c in cause], "planned": [r[3] for r in rows],
        "xid": nullable([r[4] for r in rows]), "host_id": nullable([r[5] for r in rows]),
        "gpu_id": nullable([r[6] for r in rows]), "link_id": nullable([r[7] for r in rows]),
        "jobs_hit": np.array([len(j) for j in jobs], dtype=np.int32), "gpu_hours_lost": gpu_hours,
        "job_ids": jobs,
    }, schema=schema_of("incidents"))
    return frame.with_columns(pl.col("mitigated_s", "repaired_s").fill_nan(None))
