"""Speed of per-GPU telemetry: `python bench/bench_telemetry.py` prints a table, exits 1 on a missed budget.

Budgets (.notes/TELEMETRY.md): 24,576 GPUs x 54 days at 1 h (31.9 M samples) in <= 5 s on a 2-core machine;
131,072 GPUs x 54 days at 6 h with peak memory well under 4 GB (checked here against 2 GB). Each case runs in
its own process so its peak resident memory is its own. The host states are synthetic but shaped like a real
run's: a flagship job with checkpoints every 5 minutes, research jobs on the rest, and hosts that fail, drain,
go down, get diagnosed, repaired and burned in, then wait as spares.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.reference import CAUSES  # noqa: E402
from engine.scenario import build  # noqa: E402
from engine.telemetry import gpu_samples, xid_events  # noqa: E402

CASES = [  # (label, gpus, days, resolution, flagship gpus, budget seconds, budget peak MB)
    ("llama3-405b 1h", 24576, 54, "1h", 16384, 5.0, 2048),
    ("future-131k 6h", 131072, 54, "6h", 98304, None, 2048),
    ("demo-size 15m", 512, 7, "15m", 384, None, None),
    ("llama3-405b 6h", 24576, 54, "6h", 16384, None, None),
]
GPU_XIDS = {
    "faulty_gpu": 79,
    "gpu_hbm3": 48,
    "gpu_sram": 95,
    "gpu_system_processor": 119,
    "gpu_thermal": 79,
    "silent_data_corruption": 13,
}
REPAIR_STEPS = (
    ("draining", 120.0),
    ("down", 600.0),
    ("diagnosing", 900.0),
    ("repair", 4 * 3600.0),
    ("burn_in", 2 * 3600.0),
)


def synthetic_run(gpus: int, days: float, job_gpus: int, seed: int = 1):
    """(gpus, host_states, incidents, checkpoints) of a plausible run, built vectorised."""
    rng = np.random.default_rng(seed)
    hosts, duration = gpus // 8, days * 86400.0
    gpu_frame = pl.DataFrame(
        {
            "gpu_id": np.arange(gpus, dtype=np.int32),
            "host_id": np.arange(gpus) // 8,
            "index": np.arange(gpus) % 8,
        }
    )
    # failures: the Llama 3 rate (3.79 per 1,000 host-days), at most one per host here, causes by the mix
    n_fail = min(hosts, int(rng.poisson(3.79e-3 * hosts * days)))
    failed = rng.choice(hosts, n_fail, replace=False)
    t_fail = rng.uniform(0, duration * 0.95, n_fail)
    weights = np.array([c.count for c in CAUSES], dtype=float)
    cause = np.array([c.cause for c in CAUSES])[rng.choice(len(CAUSES), n_fail, p=weights / weights.sum())]
    steps = np.cumsum([0.0] + [d for _, d in REPAIR_STEPS])
    repaired = t_fail + steps[-1]
    job_of_host = np.where(np.arange(hosts) < job_gpus // 8, "flagship", "research")
    healthy = np.setdiff1d(np.arange(hosts), failed)
    parts = [
        pl.DataFrame(
            {
                "host_id": healthy,
                "state": "running",
                "start_s": 0.0,
                "end_s": duration,
                "job_id": job_of_host[healthy],
            }
        ),
        pl.DataFrame(
            {
                "host_id": failed,
                "state": "running",
                "start_s": 0.0,
                "end_s": t_fail,
                "job_id": job_of_host[failed],
            }
        ),
    ]
    for (state, _), begin, end in zip(REPAIR_STEPS, steps[:-1], steps[1:], strict=True):
        parts.append(
            pl.DataFrame(
                {
                    "host_id": failed,
                    "state": state,
                    "start_s": t_fail + begin,
                    "end_s": np.minimum(t_fail + end, duration),
                    "job_id": None,
                }
            )
        )
    parts.append(
        pl.DataFrame(
            {
                "host_id": failed,
                "state": "spare",
                "start_s": np.minimum(repaired, duration),
                "end_s": duration,
                "job_id": None,
            }
        )
    )
    host_states = pl.concat(
        [p.with_columns(pl.col("host_id").cast(pl.Int64), pl.col("job_id").cast(pl.String)) for p in parts]
    ).filter(pl.col("end_s") > pl.col("start_s"))
    xid = pl.Series([GPU_XIDS.get(c) for c in cause], dtype=pl.Int64)
    incidents = pl.DataFrame(
        {
            "incident_id": np.arange(n_fail),
            "t_s": t_fail,
            "detected_s": t_fail,
            "repaired_s": repaired,
            "cause": cause,
            "host_id": failed,
            "gpu_id": np.where(xid.is_null().to_numpy(), -1, failed * 8 + rng.integers(0, 8, n_fail)),
            "xid": xid,
        }
    )
    incidents = incidents.with_columns(pl.when(pl.col("gpu_id") >= 0).then(pl.col("gpu_id")).alias("gpu_id"))
    starts = np.arange(0.0, duration, 300.0)
    checkpoints = pl.DataFrame({"job_id": "flagship", "start_s": starts, "end_s": starts + 3.3})
    return gpu_frame, host_states, incidents, checkpoints


def run_case(gpus: int, days: float, resolution: str, job_gpus: int) -> dict:
    scenario = build(
        "llama3-405b",
        sets=[
            f"cluster.gpus={gpus}",
            f"simulation.days={days}",
            f"simulation.telemetry_resolution={resolution}",
            f"training.gpus={job_gpus}",
            "spares.hosts=0",
        ],
    )
    frames = synthetic_run(gpus, days, job_gpus)
    began, cpu = time.perf_counter(), time.process_time()
    rows = chunks = 0
    for chunk in gpu_samples(scenario, *frames, np.random.default_rng(7)):
        rows += chunk.height
        chunks += 1
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    events = xid_events(frames[2], frames[0], np.random.default_rng(7))
    return {
        "rows": rows,
        "chunks": chunks,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "xid_events": events.height,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)  # run one case in this process
    args = parser.parse_args()
    if args.case is not None:
        label, gpus, days, resolution, job_gpus, *_ = CASES[args.case]
        print(json.dumps(run_case(gpus, days, resolution, job_gpus)))
        return 0
    load = os.getloadavg()[0]
    print(
        f"load average {load:.1f} on {os.cpu_count()} cores"
        + ("  (busy machine: wall times are inflated; cpu s is this process alone)" if load > 1.5 else "")
    )
    print(
        f"{'case':<16} {'GPUs':>8} {'days':>5} {'res':>4} {'samples':>12} {'chunks':>6} {'seconds':>8} "
        f"{'cpu s':>6} {'M samples/s':>11} {'peak MB':>8} {'budget':>14}  result"
    )
    missed = False
    for i, (label, gpus, days, resolution, _, budget_s, budget_mb) in enumerate(CASES):
        out = subprocess.run(
            [sys.executable, __file__, "--case", str(i)], capture_output=True, text=True, check=True
        )
        result = json.loads(out.stdout)
        ok = (budget_s is None or result["seconds"] <= budget_s) and (
            budget_mb is None or result["peak_mb"] <= budget_mb
        )
        missed |= not ok
        budget = (
            " ".join(
                filter(
                    None, [f"<={budget_s:g}s" if budget_s else "", f"<={budget_mb}MB" if budget_mb else ""]
                )
            )
            or "-"
        )
        print(
            f"{label:<16} {gpus:>8,} {days:>5} {resolution:>4} {result['rows']:>12,} {result['chunks']:>6} "
            f"{result['seconds']:>8.2f} {result['cpu_seconds']:>6.2f} "
            f"{result['rows'] / result['seconds'] / 1e6:>11.1f} "
            f"{result['peak_mb']:>8.0f} {budget:>14}  {'ok' if ok else 'MISSED'}"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
