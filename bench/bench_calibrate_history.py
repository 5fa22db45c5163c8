"""Speed of calibrating a fleet's fault history with a time split (issue 46, 6): the history of
bench_node_events.py (100,000 events of 50,000 nodes over three years, tickets CSV) is ingested, then
`goodput calibrate --until D --backtest --seeds 20` is timed: the fit on the history before D (the last 90 days
left out) and 20 runs of the twin forecasting the 90 days after D, each after its 30 days of warm-up.

Budget: within 60 s on 2 cores (the ingest has its own budget in bench_node_events.py). The machine is shared: the
best of two runs is the figure, every run printed, with what the split found.

    python bench/bench_calibrate_history.py          # prints a table; exits 1 on a missed budget
"""

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_node_events import DAYS, EVENTS, NODES, SEED, history_csv  # noqa: E402
from engine.ingest.node_events import ingest_node_events  # noqa: E402
from engine.store import Store  # noqa: E402
from engine.twin.backtest import SEEDS, backtest  # noqa: E402
from engine.twin.calibrate import RUN_KEY, calibrate  # noqa: E402

BUDGET_S = 60.0
RUNS = 2
LEFT_OUT_DAYS = 90


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = history_csv(Path(tmp) / "history.csv", EVENTS, NODES, DAYS, SEED)
        store = Store(Path(tmp) / "store")
        run_id = store.write_run(ingest_node_events([path]))
        days = store.info(run_id).duration_s / 86_400
        until = f"{days - LEFT_OUT_DAYS:g}d"
        fits, tests, totals = [], [], []
        for _ in range(RUNS):
            started = time.perf_counter()
            fit = calibrate(store, run_id, until=until)
            fitted = time.perf_counter()
            split = backtest(store, fit, SEEDS)
            done = time.perf_counter()
            fits.append(fitted - started)
            tests.append(done - fitted)
            totals.append(done - started)
    best = min(totals)
    weeks = split.faults_by_week
    print(f"{'what':48} {'figure':>16}")
    print(f"{'machine':48} {os.cpu_count():>10} cores  (load average {os.getloadavg()[0]:.1f})")
    print(f"{'history':48} {EVENTS:,} events, {NODES:,} nodes, {DAYS} days")
    print(f"{'fitted before':48} {until:>16}  ({split.days:.0f} days forecast, {SEEDS} runs)")
    print(f"{'fitted rate (per 1,000 host-days)':48} {fit.keys[RUN_KEY].value:>16.3g}")
    bursts = fit.keys.get("failures.burst_per_day")
    print(f"{'fitted bursts a day':48} {bursts.value if bursts else 0.0:>16.3g}")
    print(f"{'drift: rate changes found':48} {len(fit.drift.rate_changes) if fit.drift else 0:>16}")
    print(f"{'figures outside their band':48} {', '.join(split.outside()) or 'none':>16}")
    print(f"{'weeks inside their band':48} {sum(weeks['inside']):>10} of {len(weeks['inside'])}")
    print(f"{'calibrate (s)':48} {', '.join(f'{t:.2f}' for t in fits):>16}")
    print(f"{'backtest, 20 runs (s)':48} {', '.join(f'{t:.2f}' for t in tests):>16}")
    print(f"{f'calibrate with the time split, best of {RUNS} (s)':48} {best:>16.2f}  (budget {BUDGET_S:g} s)")
    return 0 if best <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
