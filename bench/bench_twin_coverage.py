"""How honest the twin's bands are, the larger version of tests/test_twin_coverage.py: `python
bench/bench_twin_coverage.py` prints a table and exits 1 when the twin misses the bar of issue 44.

For each kind of cluster of engine.twin.coverage.CASES and TRUTHS seeds of it, a truth is simulated over the
history, the twin calibrated to it, and five futures of the next FUTURE_DAYS simulated with new seeds; the
twin's bands (20 runs each, its fitted keys drawn for each) must hold at least 85 % of the futures' figures, and
its median must be off by at most 1.3x the true scenario's own median. Besides, not budgeted: the same with a
history only as long as the future (the backtest's case: the fit's error is then one window's luck, and the
error ratio about sqrt(2) for the counts the fit is made of), and one full llama3-405b cluster (24,576 GPUs).
"""

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.scenario import build  # noqa: E402
from engine.store import Store  # noqa: E402
from engine.twin.coverage import (  # noqa: E402
    CASES,
    FUTURE_DAYS,
    HISTORY_DAYS,
    check_twin,
    summary,
    truth_seed,
)
from engine.twin.sweep import LocalExecutor  # noqa: E402

TRUTHS = (11, 23, 37, 41, 53, 67, 79, 97)  # truth seeds of each case (engine.twin.coverage.truth_seed)
COVERAGE_AT_LEAST = 0.85
ERROR_RATIO_AT_MOST = 1.3
FULL = ("llama3-405b, the full cluster", ("llama3-405b", ()))


def run(cases, truths, history_days: float, label: str) -> dict:
    started = time.perf_counter()
    store = Store(Path(tempfile.mkdtemp()) / "store")
    checks = []
    for i, (name, (preset, sets)) in enumerate(cases):
        for seed in truths:
            truth = build(preset, sets=[*sets, f"simulation.seed={truth_seed(i, seed)}"])
            check = check_twin(name, truth, store, history_days=history_days, executor=LocalExecutor())
            checks.append(check)
            figures = " ".join(f"{f.figure[:13]}={f.inside}" for f in check.figures)
            print(
                f"  {name:38} seed {truth_seed(i, seed):5}: {check.inside:2}/{check.total}  {figures}",
                flush=True,
            )
    result = summary(checks)
    print(
        f"{label}: bands held {result['inside']}/{result['total']} = {result['coverage']:.1%} (the true scenario's"
        f" own: {result['truth_coverage']:.1%}); median error {result['twin_median_error']:.3f} against the"
        f" truth's {result['truth_median_error']:.3f}: {result['error_ratio']:.2f}x"
        f" ({time.perf_counter() - started:.0f} s)\n",
        flush=True,
    )
    return result


def main() -> int:
    print(
        f"{os.cpu_count()} cores; history {HISTORY_DAYS:g} days, future {FUTURE_DAYS:g} days, 20 runs a band\n"
    )
    cases = list(CASES.items())
    result = run(cases, TRUTHS, HISTORY_DAYS, "every case")
    run(cases, TRUTHS, FUTURE_DAYS, f"a history of {FUTURE_DAYS:g} days only (not budgeted)")
    run([FULL], TRUTHS[:1], HISTORY_DAYS, "the full llama3-405b (not budgeted)")
    ok = result["coverage"] >= COVERAGE_AT_LEAST and result["error_ratio"] <= ERROR_RATIO_AT_MOST
    print(
        f"budget: coverage at least {COVERAGE_AT_LEAST:.0%}, error ratio at most {ERROR_RATIO_AT_MOST}:"
        f" {'met' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
