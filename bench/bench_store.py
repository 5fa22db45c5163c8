"""Store write and read speed: a run with 24,576 GPUs x 54 days of hourly telemetry (31.9 M samples)."""

import sys
import tempfile
import time
from datetime import UTC, datetime

import numpy as np
import polars as pl

from engine.store import Store
from engine.store.run import Run

GPUS, HOURS = 24576, 54 * 24
WRITE_BUDGET_S = 6.0  # the store's share of issue 3's 15 s budget for a full llama3-405b run


def samples(chunk_hours: int = 72):
    rng = np.random.default_rng(1)
    for start in range(0, HOURS, chunk_hours):
        hours = min(chunk_hours, HOURS - start)
        n = GPUS * hours
        yield pl.DataFrame(
            {
                "t_s": np.repeat((start + np.arange(hours, dtype=np.float64)) * 3600, GPUS),
                "gpu_id": np.tile(np.arange(GPUS, dtype=np.int32), hours),
                "temp_c": (60 + 15 * rng.random(n)).round(1).astype(np.float32),
                "power_w": (600 + 90 * rng.random(n)).round(0).astype(np.float32),
                "util_pct": np.full(n, 98.0, np.float32),
                "mem_util_pct": np.full(n, 45.0, np.float32),
                "ecc_sbe": np.zeros(n, np.int32),
                "ecc_dbe": np.zeros(n, np.int32),
            }
        )


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp)
        run = Run(
            kind="simulate",
            name="bench",
            started_at=datetime.now(UTC),
            duration_s=HOURS * 3600.0,
            tables={"gpu_samples": samples()},
        )
        started = time.perf_counter()
        store.write_run(run)
        write_s = time.perf_counter() - started
        size_mb = store.path_of(run.run_id).stat().st_size / 1e6
        started = time.perf_counter()
        with store.connect(run.run_id) as con:
            hot = con.execute(
                "SELECT gpu_id, max(temp_c) FROM gpu_samples WHERE t_s = ? GROUP BY gpu_id", [3600.0 * 100]
            ).fetchall()
        query_s = time.perf_counter() - started
    rows = GPUS * HOURS
    print(f"{'what':44} {'figure':>14}")
    print(f"{'samples written':44} {rows:>14,}")
    print(
        f"{'write (generate + insert + fsync + rename)':44} {write_s:>12.2f} s  (budget {WRITE_BUDGET_S} s)"
    )
    print(f"{'rate':44} {rows / write_s / 1e6:>10.1f} M/s")
    print(f"{'file size':44} {size_mb:>11.0f} MB")
    print(f"{'one time slice of every GPU':44} {query_s * 1000:>11.0f} ms  ({len(hot):,} GPUs)")
    return 0 if write_s <= WRITE_BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
