"""Speed of the Planner's "which strategy at which scale" chart: `python bench/bench_scale.py` prints a table and
exits 1 on a missed budget.

Budget (issue 14, on this 2-core machine): the full chart of llama3-405b's settings, 4 recovery strategies x 9
job sizes (1k to 256k GPUs) x 10 seeds = 360 summary-only runs (engine.twin.scale), <= 30 s wall clock on
the local executor with one worker a core, the workers' start-up included. The break-even of warm standbys
(llama3-405b under hot_spare, 5 seeds a count) is timed beside it, without a budget of its own. CPU seconds are
shown beside wall time: on a shared machine the neighbours' load shows there. `--ray` times the chart on Ray
too (no budget: Ray's start-up is its own); `--quick` runs 2 sizes x 2 seeds instead (a smoke test, no budget).
"""

import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHART_BUDGET_S = 30.0


def _cpu() -> float:
    return sum(
        u.ru_utime + u.ru_stime
        for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def timed(work) -> tuple[float, float, object]:
    cpu, started = _cpu(), time.perf_counter()
    result = work()
    return time.perf_counter() - started, _cpu() - cpu, result


def chart(executor, quick: bool) -> dict:
    from engine.scenario import build
    from engine.twin import scale

    kwargs = {"sizes_gpus": (1024, 262144), "seeds": 2} if quick else {}
    study = scale.plan_study(build("llama3-405b"), **kwargs)
    seconds, cpu, runs = timed(lambda: scale.run_study(study, executor=executor))
    bands = scale.scale_bands(runs)
    return {"seconds": seconds, "cpu_s": cpu, "runs": runs.height, "bands": bands}


def break_even(executor, quick: bool) -> dict:
    from engine.scenario import build
    from engine.twin import standby

    base = build("llama3-405b").with_values({"training.recovery": "hot_spare"})
    study = standby.plan_break_even(base, counts=(0, 16) if quick else None, seeds=2 if quick else 5)
    seconds, cpu, frame = timed(lambda: standby.run_break_even(study, executor=executor))
    return {"seconds": seconds, "cpu_s": cpu, "runs": study.runs, "bands": standby.break_even_bands(frame)}


def main() -> int:
    from engine.twin.scale import STRATEGIES
    from engine.twin.sweep import LocalExecutor, RayExecutor

    quick = "--quick" in sys.argv
    workers = os.cpu_count() or 1
    print(f"load average {os.getloadavg()[0]:.1f} on {workers} cores\n")
    cases = [
        (
            "scale chart, llama3-405b, local",
            chart(LocalExecutor(workers), quick),
            None if quick else CHART_BUDGET_S,
        )
    ]
    if "--ray" in sys.argv:
        cases.append(
            ("scale chart, llama3-405b, Ray", chart(RayExecutor(workers=workers, quiet=True), quick), None)
        )
    cases.append(("standby break-even, llama3-405b, local", break_even(LocalExecutor(workers), quick), None))
    print(f"{'case':42} {'runs':>5} {'seconds':>8} {'budget':>7} {'cpu s':>7} {'cpu s/run':>9}  ok")
    failed = False
    for label, r, budget in cases:
        ok = budget is None or r["seconds"] <= budget
        failed |= not ok
        print(
            f"{label:42} {r['runs']:5d} {r['seconds']:8.2f} {budget if budget else '-':>7} {r['cpu_s']:7.2f}"
            f" {r['cpu_s'] / r['runs']:9.3f}  {'yes' if ok else 'NO'}"
        )
    bands = cases[0][1]["bands"]
    print("\nmean ETTR by job size (the chart's lines):")
    print(f"{'job GPUs':>9} {'days':>6} " + " ".join(f"{s:>20}" for s in STRATEGIES))
    for gpus in sorted(set(bands["job_gpus"].to_list())):
        part = {r["strategy"]: r for r in bands.filter(bands["job_gpus"] == gpus).to_dicts()}
        cells = " ".join(f"{part[s]['ettr_mean']:20.3f}" if s in part else f"{'-':>20}" for s in STRATEGIES)
        print(f"{gpus:9,} {next(iter(part.values()))['days']:6.2f} {cells}")
    print("\nnet value of warm standbys (USD, mean over seeds):")
    for r in cases[-1][1]["bands"].to_dicts():
        net = r["net_usd_mean"]
        print(
            f"{r['standbys']:5d} standbys: won {r['won_usd_mean']:12,.0f}  net {'-' if net is None else f'{net:,.0f}'}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
