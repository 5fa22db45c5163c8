"""Speed of the recovery strategies: `python bench/bench_recovery.py` prints a table, exits 1 on a missed budget.

Budgets (issue 14, on this 2-core machine): a 100,000-GPU, 54-day run of any strategy (training.recovery) with
every table (summary_only=False, telemetry off) <= 60 s with peak memory under 4 GB, and summary-only <= 2 s.
The cluster is the meta-100k-hsdp preset (100,352 GPUs: a 98,304-GPU job and 256 spare hosts, about 2,500
interruptions in 54 days). Every case runs in its own process, so its peak resident memory is its own; times
exclude interpreter start.
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import cpu_seconds, main_or_worker, peak_mb, run_in_child  # noqa: E402

PRESET = "meta-100k-hsdp"
STRATEGIES = ("restart", "in_memory_checkpoint", "replica_drop", "hot_spare")
FULL_S, FULL_MB, SUMMARY_S = 60.0, 4096, 2.0


def worker(spec: dict) -> dict:
    from engine.scenario import build
    from engine.twin.simulate import simulate

    scenario = build(PRESET, sets=[f"training.recovery={spec['strategy']}", "simulation.telemetry=false"])
    times = []
    for _ in range(spec["repeats"]):
        cpu_before = cpu_seconds()
        started = time.perf_counter()
        run = simulate(scenario, summary_only=spec["summary_only"])
        times.append((time.perf_counter() - started, cpu_seconds() - cpu_before))
    seconds, cpu_s = sorted(times)[len(times) // 2]
    return {
        "seconds": seconds,
        "cpu_s": cpu_s,
        "peak_mb": peak_mb(),
        "interruptions": run.summary["interruptions"]["total"],
        "ettr": run.summary["job"]["ettr"],
    }


def run_case(spec: dict) -> dict:
    return run_in_child(__file__, spec)


def main() -> int:
    failed = False
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {PRESET}, 54 days\n")
    print(
        f"{'strategy':22} {'run':13} {'seconds':>8} {'budget':>7} {'cpu s':>6} {'peak MB':>8} {'budget':>7}"
        f" {'interr.':>7} {'ETTR':>6}  ok"
    )
    for strategy in STRATEGIES:
        for summary_only, repeats, budget_s, budget_mb in (
            (False, 1, FULL_S, FULL_MB),
            (True, 3, SUMMARY_S, None),
        ):
            r = run_case({"strategy": strategy, "summary_only": summary_only, "repeats": repeats})
            ok = r["seconds"] <= budget_s and (budget_mb is None or r["peak_mb"] <= budget_mb)
            failed |= not ok
            print(
                f"{strategy:22} {'summary only' if summary_only else 'all tables':13} {r['seconds']:8.2f}"
                f" {budget_s:7g} {r['cpu_s']:6.2f} {r['peak_mb']:8.0f} {budget_mb or '-':>7}"
                f" {r['interruptions']:7d} {r['ettr']:6.3f}  {'yes' if ok else 'NO'}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    main_or_worker(worker, main)
