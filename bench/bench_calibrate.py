"""Speed of the twin learning a run: `python bench/bench_calibrate.py` prints a table and exits 1 on a missed
budget.

Budgets (issue 23, on this 2-core machine), on a llama3-405b run (24,576 GPUs, 54 days) written to a store of
its own first (not timed; telemetry off, which calibrate does not read):
- calibrate the whole run (engine.twin.calibrate) within 10 s, reading the store included;
- backtest it with the default 20 seeds (engine.twin.backtest: 20 simulations with their tables on the local
  executor, one worker a core, start-up included, each drawing the fitted keys first) within 2 minutes.
Each case runs in a child process of its own (bench/harness.py), so its peak memory is its own.
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import cpu_seconds, main_or_worker, peak_mb, run_in_child  # noqa: E402

BUDGETS_S = {"calibrate": 10.0, "backtest": 120.0}
SEEDS = 20  # engine.twin.backtest.SEEDS: the band that holds a new run 90.5 % of the time


def worker(spec: dict) -> dict:
    from engine.store import Store
    from engine.twin.backtest import backtest
    from engine.twin.calibrate import calibrate

    store = Store(spec["store"])
    cpu, started = cpu_seconds(), time.perf_counter()
    fit = calibrate(store, spec["run_id"])
    result = {"calibrate_s": time.perf_counter() - started, "cpu_s": cpu_seconds() - cpu}
    if spec["case"] == "backtest":
        started = time.perf_counter()
        test = backtest(store, fit, SEEDS)
        result["backtest_s"] = time.perf_counter() - started
        result["outside"] = test.outside()
    result["peak_mb"] = peak_mb()
    return result


def main() -> int:
    from engine.scenario import build
    from engine.store import Store
    from engine.twin.simulate import simulate

    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "store")
        started = time.perf_counter()
        run_id = store.write_run(simulate(build("llama3-405b", sets=["simulation.telemetry=false"])))
        print(f"llama3-405b run written in {time.perf_counter() - started:.1f} s (not timed)")
        spec = {"store": str(store.root), "run_id": run_id}
        fit = run_in_child(__file__, spec | {"case": "calibrate"})
        test = run_in_child(__file__, spec | {"case": "backtest"})
    rows = [
        ("calibrate", fit["calibrate_s"], fit["cpu_s"], fit["peak_mb"], ""),
        (
            "backtest",
            test["backtest_s"],
            None,
            test["peak_mb"],
            f"outside: {', '.join(test['outside']) or 'none'}",
        ),
    ]
    print(f"{'case':<12}{'seconds':>10}{'budget':>10}{'cpu s':>10}{'peak MB':>10}  note")
    missed = False
    for case, seconds, cpu, peak, note in rows:
        budget = BUDGETS_S[case]
        missed |= seconds > budget
        cpu_text = f"{cpu:10.1f}" if cpu is not None else f"{'-':>10}"
        print(f"{case:<12}{seconds:10.1f}{budget:10.0f}{cpu_text}{peak:10.0f}  {note}")
    return 1 if missed else 0


if __name__ == "__main__":
    main_or_worker(worker, main)
