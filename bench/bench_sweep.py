"""Speed of sweeps and the planner: `python bench/bench_sweep.py` prints a table, exits 1 on a missed budget.

Budgets (issue 9, on this 2-core machine): one planner run of llama3-405b (summary only, what the page's "Run"
calls) <= 1 s; a 5 x 5 sweep (checkpoint interval x restart overhead) x 10 seeds of llama3-405b, 250
summary-only runs on the local executor with one worker a core, <= 60 s wall clock including the workers'
start-up. CPU seconds are shown beside wall time: on a shared machine the neighbours' load shows there.
`--quick` runs a 2 x 2 x 2 sweep instead (a smoke test of the script, no budget).
"""

import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PLANNER_BUDGET_S = 1.0
SWEEP_BUDGET_S = 60.0
AXES = ("training.checkpoint_interval=2m,5m,10m,20m,40m", "training.restart_overhead=5m,10m,20m,30m,1h")
SEEDS = 10


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def planner_run() -> dict:
    from engine.scenario import build
    from engine.twin.simulate import simulate

    scenario = build("llama3-405b")
    simulate(scenario, summary_only=True)  # warm: imports and first-call costs, as on a page already open
    times, cpus = [], []
    for _ in range(3):
        cpu, started = _cpu(resource.RUSAGE_SELF), time.perf_counter()
        simulate(scenario, summary_only=True)
        times.append(time.perf_counter() - started)
        cpus.append(_cpu(resource.RUSAGE_SELF) - cpu)
    return {"seconds": sorted(times)[1], "cpu_s": sorted(cpus)[1], "runs": 1}


def sweep_run(axes: tuple[str, ...], seeds: int) -> dict:
    from engine.scenario import build
    from engine.twin.sweep import LocalExecutor, bands, parse_vary, sweep

    workers = os.cpu_count() or 1
    cpu, started = _cpu(resource.RUSAGE_CHILDREN) + _cpu(resource.RUSAGE_SELF), time.perf_counter()
    frame = sweep(build("llama3-405b"), [parse_vary(a) for a in axes], seeds, executor=LocalExecutor(workers))
    seconds = time.perf_counter() - started
    table = bands(frame, by=[a.split("=")[0] for a in axes])
    return {
        "seconds": seconds,
        "cpu_s": _cpu(resource.RUSAGE_CHILDREN) + _cpu(resource.RUSAGE_SELF) - cpu,
        "runs": frame.height,
        "ettr_range": (table["ettr_mean"].min(), table["ettr_mean"].max()),
    }


def main() -> int:
    quick = "--quick" in sys.argv
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print(f"{'case':46} {'runs':>5} {'seconds':>8} {'budget':>7} {'cpu s':>7} {'cpu s/run':>9}  ok")
    failed = False
    cases = [("planner run, llama3-405b summary only", planner_run(), PLANNER_BUDGET_S)]
    if quick:
        cases.append(
            ("sweep 2 x 2 x 2 seeds (quick)", sweep_run(tuple(a.rsplit(",", 3)[0] for a in AXES), 2), None)
        )
    else:
        cases.append(("sweep 5 x 5 x 10 seeds, llama3-405b, local", sweep_run(AXES, SEEDS), SWEEP_BUDGET_S))
    for label, r, budget in cases:
        ok = budget is None or r["seconds"] <= budget
        failed |= not ok
        print(
            f"{label:46} {r['runs']:5d} {r['seconds']:8.2f} {budget if budget else '-':>7} {r['cpu_s']:7.2f}"
            f" {r['cpu_s'] / r['runs']:9.3f}  {'yes' if ok else 'NO'}"
        )
        if "ettr_range" in r:
            lo, hi = r["ettr_range"]
            print(f"{'':46} mean ETTR over the grid {lo:.3f} .. {hi:.3f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
