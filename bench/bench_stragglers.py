"""Speed of the straggler analysis: `python bench/bench_stragglers.py` prints a table and exits 1 on a missed
budget.

Budget (issue 24 item 7, on this 2-core machine): `goodput stragglers`' analysis (engine.analysis.step_timeline
.layout, then engine.analysis.stragglers.analyse: S, attribution to every worker, rank and stage, the
persistent straggler and the kind) on 16,384 workers (2,048 dp ranks x 8 stages) x 1,000 steps within 10 s.
The timeline is synthetic and made here (not timed): per-step records, a forward and a backward compute of one
microbatch per worker per step (32.8M rows), durations with noise and one worker 30 % slow in every step.
Each case runs in a child process of its own (bench/harness.py), so its peak memory is its own.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import cpu_seconds, main_or_worker, peak_mb, run_in_child  # noqa: E402

BUDGET_S = 10.0
DP, STAGES, STEPS = 2048, 8, 1000
SLOW_WORKER = (1234, 5)


def synthetic_ops(dp: int, stages: int, steps: int, seed: int = 7):
    """Per-step records of a dp x stages job: one forward and one backward compute a worker a step."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    cells = steps * dp * stages
    step = np.repeat(np.arange(steps, dtype=np.int64), dp * stages)
    dp_rank = np.tile(np.repeat(np.arange(dp, dtype=np.int32), stages), steps)
    stage = np.tile(np.arange(stages, dtype=np.int32), steps * dp)
    forward = rng.normal(0.1, 0.002, cells)
    forward[(dp_rank == SLOW_WORKER[0]) & (stage == SLOW_WORKER[1])] *= 1.3
    frame = pl.DataFrame(
        {
            "dp_rank": np.concatenate([dp_rank, dp_rank]),
            "stage": np.concatenate([stage, stage]),
            "step": np.concatenate([step, step]),
            "optype": pl.Series(["forward-compute", "backward-compute"]).gather(np.repeat([0, 1], cells)),
            "start_ts": np.concatenate([np.zeros(cells), forward]),
            "duration": np.concatenate([forward, 2 * forward]),
            "mb_id": np.zeros(2 * cells, dtype=np.int32),
        }
    )
    return frame


def worker(spec: dict) -> dict:
    from engine.analysis.step_timeline import layout
    from engine.analysis.stragglers import analyse

    ops = synthetic_ops(spec["dp"], spec["stages"], spec["steps"])
    cpu, started = cpu_seconds(), time.perf_counter()
    timeline = layout(ops, "bench")
    laid_out = time.perf_counter()
    report = analyse(timeline)
    done = time.perf_counter()
    s = report.persistent_straggler
    return {
        "seconds": done - started,
        "layout_s": laid_out - started,
        "analyse_s": done - laid_out,
        "cpu_s": cpu_seconds() - cpu,
        "peak_mb": peak_mb(),
        "rows": ops.height,
        "slowdown": report.slowdown,
        "straggler": None if s is None else [s.dp_rank, s.stage],
        "kind": report.kind,
    }


def main() -> int:
    r = run_in_child(__file__, {"dp": DP, "stages": STAGES, "steps": STEPS})
    found = r["straggler"] == list(SLOW_WORKER)
    print(f"{'case':<34}{'seconds':>10}{'budget':>10}{'cpu s':>10}{'peak MB':>10}  note")
    note = (
        f"{r['rows']:,} rows; layout {r['layout_s']:.1f} s, analyse {r['analyse_s']:.1f} s; S = {r['slowdown']:.3f},"
        f" {r['kind']}, straggler {r['straggler']} ({'right' if found else 'WRONG'})"
    )
    name = f"{DP * STAGES:,} workers x {STEPS:,} steps"
    print(f"{name:<34}{r['seconds']:10.1f}{BUDGET_S:10.0f}{r['cpu_s']:10.1f}{r['peak_mb']:10.0f}  {note}")
    return 1 if r["seconds"] > BUDGET_S or not found else 0


if __name__ == "__main__":
    main_or_worker(worker, main)
