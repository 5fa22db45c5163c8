"""Goodput against AIReSim on AIReSim's own scenario: `python bench/bench_airesim.py` prints a table, exits 1 when
Goodput is slower than AIReSim.

The scenario is the airesim-table1 preset (AIReSim's Table 1: a 4,096-server job on 4,360 servers, 15 % bad, for
the 9,866 h AIReSim takes to finish it; tests/test_validation_airesim.py checks the ETTR). AIReSim takes 13 s
for one replication of it (issue 14, the figure AIReSim's authors give); one Goodput replication is a
summary-only simulation, the run that gives the same figures AIReSim reports (Goodput also builds the tables
every page draws: timed on its own row, not budgeted). Each case runs in its own process, so its peak resident
memory is its own; times exclude interpreter start.
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import main_or_worker, peak_mb, run_in_child  # noqa: E402

AIRESIM_S = 13.0  # seconds AIReSim takes for one replication of this scenario (issue 14)
PRESET = "airesim-table1"
CASES = [  # (label, summary only, seeds, budget s a replication)
    ("summary only (AIReSim's figures)", True, (0, 1, 2), AIRESIM_S),
    ("all tables (pages), no telemetry", False, (0,), None),
]


def worker(spec: dict) -> dict:
    from engine.scenario import build
    from engine.twin.simulate import simulate

    seconds, ettr = [], []
    for seed in spec["seeds"]:
        scenario = build(PRESET, sets=[f"simulation.seed={seed}"])
        started = time.perf_counter()
        run = simulate(scenario, summary_only=spec["summary_only"])
        seconds.append(time.perf_counter() - started)
        ettr.append(run.summary["job"]["ettr"])
    return {
        "seconds": sorted(seconds)[len(seconds) // 2],
        "ettr": sum(ettr) / len(ettr),
        "peak_mb": peak_mb(),
    }


def run_case(spec: dict) -> dict:
    return run_in_child(__file__, spec)


def main() -> int:
    failed = False
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; AIReSim: {AIRESIM_S:g} s a replication\n"
    )
    print(
        f"{'case':36} {'s a run':>8} {'budget':>7} {'AIReSim / Goodput':>18} {'peak MB':>8} {'ETTR':>6}  ok"
    )
    for label, summary_only, seeds, budget in CASES:
        r = run_case({"summary_only": summary_only, "seeds": list(seeds)})
        ok = budget is None or r["seconds"] <= budget
        failed |= not ok
        print(
            f"{label:36} {r['seconds']:8.2f} {budget if budget else '-':>7} {AIRESIM_S / r['seconds']:17.1f}x"
            f" {r['peak_mb']:8.0f} {r['ettr']:6.3f}  {'yes' if ok else 'NO'}"
        )
    print("\nAIReSim's published ETTR for this scenario: 0.623 (30 replications, 0.618 to 0.627)")
    return 1 if failed else 0


if __name__ == "__main__":
    main_or_worker(worker, main)
