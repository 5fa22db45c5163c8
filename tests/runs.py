"""Small, hand-made, self-consistent Runs for dashboard tests (`from tests.runs import small_run, ...`).

The cluster: 2 racks of 2 hosts of 8 GPUs (32 GPUs), one pod, two days from 2024-03-01 00:00 UTC.

    rack 0: host 0 (h0000), host 1 (h0001)      rack 1: host 2 (h0002), host 3 (h0003)

- The flagship job `flagship` (16 GPUs) checkpoints every 2 h (each checkpoint blocks 300 s) and restarts in
  1,800 s after each interruption. It starts on hosts 0 and 1 with host 3 as its hot spare.
- The research job `research-1` (8 GPUs) runs on host 2; `research-2` (16 GPUs) waits in the queue.
- Five incidents, in time order:
    1. t=36,000  faulty_gpu (XID 79) on GPU 11 of host 1: flagship attempt 1 ends; host 3 replaces host 1;
       host 1 goes down, diagnosing, repair, burn-in and back to the spare pool at 120,000.
    2. t=60,000  gpu_hbm3 (XID 48) on GPU 21 of host 2: research-1 restarts after a 1,200 s GPU reset.
    3. t=96,000  planned_maintenance of the flagship job (no host).
    4. t=150,000 network_switch_cable on rack 1's uplink (link 33): hits flagship (host 3) and research-1
       (host 2); flagship resumes on hosts 0 and 1; hosts 2 and 3 are repaired until 164,400.
    5. t=168,000 ssd on host 3 while it is a spare: no job hit; host 3 is still in repair at the end of the
       run, so "what is down at the end" is host 3 (repair since 169,800; down since 168,000).

Every derived figure (checkpoints, lost work, the summary) is computed here from these facts, so tests can
assert exact values: see FLAGSHIP_* and `expected_summary`.
"""

import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from engine.analysis.analytics import closed_form_ettr
from engine.reference import CAUSES
from engine.store import Store
from engine.store.run import Run

STARTED_AT = datetime(2024, 3, 1, tzinfo=UTC)
DURATION_S = 2 * 86400.0
GPUS_PER_HOST = 8
HOSTS = 4
GPUS = HOSTS * GPUS_PER_HOST
GPU_HOUR_USD = 2.5

FLAGSHIP = "flagship"
FLAGSHIP_GPUS = 16
CHECKPOINT_INTERVAL_S = 7200.0
CHECKPOINT_WRITE_S = 300.0
RESTART_OVERHEAD_S = 1800.0


@dataclass(frozen=True)
class Attempt:
    job_id: str
    attempt: int
    start_s: float
    end_s: float
    end_reason: str
    hosts: tuple[int, ...]
    lost_work_s: float | None = None  # None: computed from the checkpoints (flagship)


ATTEMPTS: tuple[Attempt, ...] = (
    Attempt(FLAGSHIP, 1, 0.0, 36000.0, "faulty_gpu", (0, 1)),
    Attempt(FLAGSHIP, 2, 37800.0, 96000.0, "planned_maintenance", (0, 3)),
    Attempt(FLAGSHIP, 3, 97800.0, 150000.0, "network_switch_cable", (0, 3)),
    Attempt(FLAGSHIP, 4, 151800.0, DURATION_S, "end_of_run", (0, 1)),
    Attempt("research-1", 1, 0.0, 60000.0, "gpu_hbm3", (2,), lost_work_s=1800.0),
    Attempt("research-1", 2, 61200.0, 150000.0, "network_switch_cable", (2,), lost_work_s=3600.0),
    Attempt("research-1", 3, 164400.0, DURATION_S, "end_of_run", (2,), lost_work_s=0.0),
)

# (host_id, state, start_s, end_s, job_id): every host covered from 0 to DURATION_S without gaps.
HOST_STATES: tuple[tuple[int, str, float, float, str | None], ...] = (
    (0, "running", 0.0, 36000.0, FLAGSHIP),
    (0, "healthy", 36000.0, 37800.0, None),
    (0, "running", 37800.0, 96000.0, FLAGSHIP),
    (0, "healthy", 96000.0, 97800.0, None),
    (0, "running", 97800.0, 150000.0, FLAGSHIP),
    (0, "healthy", 150000.0, 151800.0, None),
    (0, "running", 151800.0, DURATION_S, FLAGSHIP),
    (1, "running", 0.0, 36000.0, FLAGSHIP),
    (1, "down", 36000.0, 36600.0, None),
    (1, "diagnosing", 36600.0, 37800.0, None),
    (1, "repair", 37800.0, 100000.0, None),
    (1, "burn_in", 100000.0, 120000.0, None),
    (1, "spare", 120000.0, 151800.0, None),
    (1, "running", 151800.0, DURATION_S, FLAGSHIP),
    (2, "running", 0.0, 60000.0, "research-1"),
    (2, "diagnosing", 60000.0, 61200.0, None),
    (2, "running", 61200.0, 150000.0, "research-1"),
    (2, "down", 150000.0, 150600.0, None),
    (2, "diagnosing", 150600.0, 151800.0, None),
    (2, "repair", 151800.0, 160000.0, None),
    (2, "burn_in", 160000.0, 164400.0, None),
    (2, "running", 164400.0, DURATION_S, "research-1"),
    (3, "spare", 0.0, 37800.0, None),
    (3, "running", 37800.0, 96000.0, FLAGSHIP),
    (3, "healthy", 96000.0, 97800.0, None),
    (3, "running", 97800.0, 150000.0, FLAGSHIP),
    (3, "down", 150000.0, 150600.0, None),
    (3, "diagnosing", 150600.0, 151800.0, None),
    (3, "repair", 151800.0, 160000.0, None),
    (3, "burn_in", 160000.0, 164400.0, None),
    (3, "spare", 164400.0, 168000.0, None),
    (3, "down", 168000.0, 168600.0, None),
    (3, "diagnosing", 168600.0, 169800.0, None),
    (3, "repair", 169800.0, DURATION_S, None),
)

UPLINK_RACK1 = 33  # links 0-31: one per GPU to its rack switch; 32, 33: rack switches to the spine


def flagship_checkpoints() -> pl.DataFrame:
    """Every CHECKPOINT_INTERVAL_S after an attempt's start, kept where the write completes inside it."""
    starts, ends = [], []
    for a in ATTEMPTS:
        if a.job_id != FLAGSHIP:
            continue
        s = a.start_s + CHECKPOINT_INTERVAL_S * np.arange(
            1, int((a.end_s - a.start_s) // CHECKPOINT_INTERVAL_S) + 1
        )
        s = s[s + CHECKPOINT_WRITE_S <= a.end_s]
        starts.append(s)
        ends.append(s + CHECKPOINT_WRITE_S)
    start = np.concatenate(starts)
    return pl.DataFrame({"job_id": [FLAGSHIP] * len(start), "start_s": start, "end_s": np.concatenate(ends)})


def _lost_work(a: Attempt, checkpoints: pl.DataFrame) -> float:
    """Work since the last completed checkpoint of the attempt (nothing is lost at the end of the run)."""
    if a.lost_work_s is not None:
        return a.lost_work_s
    if a.end_reason == "end_of_run":
        return 0.0
    done = checkpoints.filter(
        (pl.col("job_id") == a.job_id) & (pl.col("end_s") <= a.end_s) & (pl.col("start_s") >= a.start_s)
    )["end_s"]
    return a.end_s - (done.max() if done.len() else a.start_s)


def job_attempts() -> pl.DataFrame:
    checkpoints = flagship_checkpoints()
    return pl.DataFrame(
        {
            "job_id": [a.job_id for a in ATTEMPTS],
            "attempt": [a.attempt for a in ATTEMPTS],
            "start_s": [a.start_s for a in ATTEMPTS],
            "end_s": [a.end_s for a in ATTEMPTS],
            "end_reason": [a.end_reason for a in ATTEMPTS],
            "lost_work_s": [_lost_work(a, checkpoints) for a in ATTEMPTS],
            "hosts": [list(a.hosts) for a in ATTEMPTS],
        },
        schema_overrides={"attempt": pl.Int32, "hosts": pl.List(pl.Int32)},
    )


def _gpu_hours_lost(job_id: str, attempt: int, gpus: int) -> float:
    """Lost work plus the time until the job's next attempt, for the job's GPUs (what an incident cost it)."""
    attempts = job_attempts().filter(pl.col("job_id") == job_id).sort("attempt")
    this = attempts.filter(pl.col("attempt") == attempt).row(0, named=True)
    nxt = attempts.filter(pl.col("attempt") == attempt + 1)
    resumed = nxt["start_s"][0] if nxt.height else DURATION_S
    return gpus * (this["lost_work_s"] + resumed - this["end_s"]) / 3600


def incidents() -> pl.DataFrame:
    flag1 = _gpu_hours_lost(FLAGSHIP, 1, FLAGSHIP_GPUS)
    research1 = _gpu_hours_lost("research-1", 1, 8)
    planned = _gpu_hours_lost(FLAGSHIP, 2, FLAGSHIP_GPUS)
    cable = _gpu_hours_lost(FLAGSHIP, 3, FLAGSHIP_GPUS) + _gpu_hours_lost("research-1", 2, 8)
    return pl.DataFrame(
        {
            "incident_id": [1, 2, 3, 4, 5],
            "t_s": [36000.0, 60000.0, 96000.0, 150000.0, 168000.0],
            "detected_s": [36060.0, 60030.0, 96000.0, 150120.0, 168300.0],
            "mitigated_s": [37800.0, 61200.0, 97800.0, 151800.0, 168600.0],
            "repaired_s": [120000.0, 61200.0, 97800.0, 164400.0, None],
            "cause": ["faulty_gpu", "gpu_hbm3", "planned_maintenance", "network_switch_cable", "ssd"],
            "category": ["GPU", "GPU", "Planned", "Network", "Host"],
            "planned": [False, False, True, False, False],
            "xid": [79, 48, None, None, None],
            "host_id": [1, 2, None, None, 3],
            "gpu_id": [11, 21, None, None, None],
            "link_id": [None, None, None, UPLINK_RACK1, None],
            "jobs_hit": [1, 1, 1, 2, 0],
            "gpu_hours_lost": [flag1, research1, planned, cable, 0.0],
            "job_ids": [[FLAGSHIP], ["research-1"], [FLAGSHIP], [FLAGSHIP, "research-1"], []],
        },
        schema_overrides={
            "incident_id": pl.Int32,
            "xid": pl.Int32,
            "host_id": pl.Int32,
            "gpu_id": pl.Int32,
            "link_id": pl.Int32,
            "jobs_hit": pl.Int32,
            "job_ids": pl.List(pl.String),
        },
    )


def host_states() -> pl.DataFrame:
    cols = list(zip(*HOST_STATES, strict=True))
    return pl.DataFrame(
        {"host_id": cols[0], "state": cols[1], "start_s": cols[2], "end_s": cols[3], "job_id": cols[4]},
        schema_overrides={"host_id": pl.Int32, "job_id": pl.String},
    )


def hosts() -> pl.DataFrame:
    ids = np.arange(HOSTS)
    return pl.DataFrame(
        {
            "host_id": ids,
            "hostname": [f"h{i:04d}" for i in ids],
            "rack_id": ids // 2,
            "pod_id": np.zeros(HOSTS, dtype=int),
            "row": np.zeros(HOSTS, dtype=int),
            "position": ids // 2,
            "slot": ids % 2,
        }
    ).cast(dict.fromkeys(("host_id", "rack_id", "pod_id", "row", "position", "slot"), pl.Int32))


def gpus() -> pl.DataFrame:
    ids = np.arange(GPUS)
    return pl.DataFrame(
        {
            "gpu_id": ids,
            "host_id": ids // GPUS_PER_HOST,
            "index": ids % GPUS_PER_HOST,
            "uuid": [f"GPU-00000000-0000-0000-0000-{i:012d}" for i in ids],
            "model": ["H100-SXM5-80GB"] * GPUS,
        }
    ).cast({"gpu_id": pl.Int32, "host_id": pl.Int32, "index": pl.Int16})


def links() -> pl.DataFrame:
    ids = np.arange(GPUS + 2)
    rack_of_gpu = np.arange(GPUS) // GPUS_PER_HOST // 2
    a = [f"gpu{i}" for i in range(GPUS)] + ["rtsw0", "rtsw1"]
    b = [f"rtsw{r}" for r in rack_of_gpu] + ["ctsw0", "ctsw0"]
    return pl.DataFrame(
        {
            "link_id": ids,
            "tier": ["gpu_rtsw"] * GPUS + ["rtsw_ctsw"] * 2,
            "a": a,
            "b": b,
            "capacity_gbps": [400.0] * GPUS + [3200.0] * 2,
        }
    ).cast({"link_id": pl.Int32})


def gpu_samples() -> pl.DataFrame:
    """Every GPU at 0 h, 24 h and 48 h; busy GPUs (running hosts) warm and loaded, idle ones cool."""
    times = np.array([0.0, 86400.0, DURATION_S - 1])
    t = np.repeat(times, GPUS)
    gpu = np.tile(np.arange(GPUS), len(times))
    states = host_states()
    busy = np.zeros(len(t), dtype=bool)
    for i, (ti, host) in enumerate(zip(t, gpu // GPUS_PER_HOST, strict=True)):
        row = states.filter((pl.col("host_id") == host) & (pl.col("start_s") <= ti) & (pl.col("end_s") > ti))
        busy[i] = row["state"][0] == "running"
    return pl.DataFrame(
        {
            "t_s": t,
            "gpu_id": gpu,
            "temp_c": np.where(busy, 70.0, 35.0) + gpu % 4,
            "power_w": np.where(busy, 650.0, 90.0),
            "util_pct": np.where(busy, 97.0, 0.0),
            "mem_util_pct": np.where(busy, 80.0, 0.0),
            "ecc_sbe": np.where(gpu == 21, 12, 0),
            "ecc_dbe": np.where((gpu == 21) & (t >= 60000), 1, 0),
        }
    ).cast(
        {
            "gpu_id": pl.Int32,
            "temp_c": pl.Float32,
            "power_w": pl.Float32,
            "util_pct": pl.Float32,
            "mem_util_pct": pl.Float32,
            "ecc_sbe": pl.Int32,
            "ecc_dbe": pl.Int32,
        }
    )


def xid_events() -> pl.DataFrame:
    """The XIDs of incidents 1 and 2, plus a harmless application fault (XID 13) tied to no incident."""
    return pl.DataFrame(
        {
            "t_s": [5000.0, 36000.0, 60000.0, 60010.0],
            "gpu_id": [3, 11, 21, 21],
            "host_id": [0, 1, 2, 2],
            "xid": [13, 79, 48, 63],
            "incident_id": [None, 1, 2, 2],
            "message": [
                "NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception",
                "NVRM: Xid (PCI:0000:9a:00): 79, GPU has fallen off the bus.",
                "NVRM: Xid (PCI:0000:ba:00): 48, An uncorrectable double bit error (DBE) has been detected",
                "NVRM: Xid (PCI:0000:ba:00): 63, Row remapping event",
            ],
        }
    ).cast({"gpu_id": pl.Int32, "host_id": pl.Int32, "xid": pl.Int32, "incident_id": pl.Int32})


def link_samples() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "t_s": [0.0, 0.0, 86400.0, 86400.0],
            "link_id": [32, 33, 32, 33],
            "util_pct": [62.0, 31.0, 64.0, 30.0],
            "errors": [0, 0, 0, 3],
        }
    ).cast({"link_id": pl.Int32, "util_pct": pl.Float32, "errors": pl.Int32})


def jobs() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "job_id": [FLAGSHIP, "research-1", "research-2"],
            "name": ["tiny-pretrain", "ablation-a", "sweep-b"],
            "gpus": [16.0, 8.0, 16.0],
            "priority": [10, 1, 1],
            "submit_s": [0.0, 0.0, 100000.0],
            "start_s": [0.0, 0.0, None],
            "end_s": [None, None, None],
            "state": ["running", "running", "queued"],
            "user": ["pretrain", "alice", "bob"],
            "kind": ["flagship", "research", "research"],
        }
    ).cast({"priority": pl.Int32})


def expected_summary() -> dict:
    """The summary `goodput simulate --json` would print for this run, derived from the tables above."""
    attempts = job_attempts().filter(pl.col("job_id") == FLAGSHIP)
    checkpoints = flagship_checkpoints()
    wall = DURATION_S  # the flagship job starts at 0
    ran = float((attempts["end_s"] - attempts["start_s"]).sum())
    checkpointing = float((checkpoints["end_s"] - checkpoints["start_s"]).sum())
    lost = float(attempts["lost_work_s"].sum())
    restart = wall - ran
    productive = ran - checkpointing - lost
    hits = attempts.filter(pl.col("end_reason") != "end_of_run")["end_reason"].to_list()
    unexpected = [c for c in hits if c != "planned_maintenance"]
    by_cause = {c.cause: unexpected.count(c.cause) for c in CAUSES}
    gpu_h = FLAGSHIP_GPUS / 3600
    losses = {
        "lost_work": lost * gpu_h,
        "restart": restart * gpu_h,
        "checkpoint": checkpointing * gpu_h,
        "waiting_for_spares": 0.0,
    }
    states = host_states().with_columns(hours=(pl.col("end_s") - pl.col("start_s")) / 3600 * GPUS_PER_HOST)
    down = float(
        states.filter(pl.col("state").is_in(["down", "diagnosing", "repair", "burn_in", "draining"]))[
            "hours"
        ].sum()
    )
    running = float(states.filter(pl.col("state") == "running")["hours"].sum())
    cluster_gpu_hours = GPUS * DURATION_S / 3600
    rate = len(unexpected) / (FLAGSHIP_GPUS / GPUS_PER_HOST) / (DURATION_S / 86400) * 1000
    closed = closed_form_ettr(
        gpus=FLAGSHIP_GPUS,
        rate_per_1000_node_days=rate,
        checkpoint_interval_s=CHECKPOINT_INTERVAL_S,
        checkpoint_write_s=CHECKPOINT_WRITE_S,
        restart_overhead_s=RESTART_OVERHEAD_S,
    )
    return {
        "gpus": GPUS,
        "hosts": HOSTS,
        "days": DURATION_S / 86400,
        "seed": 1,
        "interruptions": {
            "total": len(hits),
            "planned": len(hits) - len(unexpected),
            "unexpected": len(unexpected),
            "by_cause": by_cause,
        },
        "job": {
            "name": "tiny-pretrain",
            "gpus": FLAGSHIP_GPUS,
            "ettr": productive / wall,
            "mttf_hours": wall / 3600 / len(unexpected),
            "checkpoints": checkpoints.height,
            "lost_gpu_hours": sum(losses.values()),
            "losses_gpu_hours": losses,
            "losses_usd": {k: v * GPU_HOUR_USD for k, v in losses.items()},
            "closed_form_ettr": closed.ettr,
        },
        "cluster": {
            "gpu_hours": cluster_gpu_hours,
            "gpu_hours_down": down,
            "utilization": running / cluster_gpu_hours,
        },
    }


SCENARIO = {
    "preset": "demo",
    "cluster": {"gpus": GPUS, "gpus_per_host": GPUS_PER_HOST, "hosts_per_rack": 2},
    "simulation": {"days": 2, "seed": 1, "start": "2024-03-01T00:00:00Z"},
    "training": {
        "name": "tiny-pretrain",
        "gpus": FLAGSHIP_GPUS,
        "checkpoint_interval": "2h",
        "checkpoint_write": "5m",
        "restart_overhead": "30m",
    },
    "spares": {"hosts": 1},
    "cost": {"gpu_hour_usd": GPU_HOUR_USD},
}


def small_run(name: str = "tiny", run_id: str = "sim-20240301-000000-aaaaaa") -> Run:
    """The whole run described in the module docstring, every table filled."""
    return Run(
        kind="simulate",
        name=name,
        started_at=STARTED_AT,
        duration_s=DURATION_S,
        scenario=SCENARIO,
        seed=1,
        summary=expected_summary(),
        run_id=run_id,
        tables={
            "hosts": hosts(),
            "gpus": gpus(),
            "links": links(),
            "jobs": jobs(),
            "job_attempts": job_attempts(),
            "checkpoints": flagship_checkpoints(),
            "incidents": incidents(),
            "host_states": host_states(),
            "gpu_samples": gpu_samples(),
            "link_samples": link_samples(),
            "xid_events": xid_events(),
        },
    )


def bare_run(name: str = "observed", run_id: str = "ing-20240301-000000-bbbbbb") -> Run:
    """An ingested run: hosts, GPUs and telemetry only, an empty summary (pages must show what exists)."""
    return Run(
        kind="ingest",
        name=name,
        started_at=STARTED_AT,
        duration_s=DURATION_S,
        run_id=run_id,
        summary={},
        tables={"hosts": hosts(), "gpus": gpus(), "gpu_samples": gpu_samples(), "xid_events": xid_events()},
    )


def make_store(root: str | Path, *runs: Run) -> Store:
    """A store at `root` holding `runs` (default: `small_run()`), listed in the order given (newest first)."""
    store = Store(root)
    runs = runs or (small_run(),)
    now = time.time()
    for age, run in enumerate(runs):
        store.write_run(run)
        # the store lists newest first by file mtime: make the order explicit whatever the clock's resolution
        os.utime(store.path_of(run.run_id), (now - age, now - age))
    return store
