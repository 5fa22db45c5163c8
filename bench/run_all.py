"""`make bench`: run every bench/bench_*.py, each in its own process, and summarise.

Each bench script prints its own table of figures and exits non-zero when it misses a budget of its issue.
Budgets are measured here, never in unit tests. The core count is printed because every budget is stated
for a given machine (the issues say: this 2-core machine).
"""

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    only = sys.argv[1:]
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not only or any(o in p.stem for o in only))
    print(
        f"# Goodput benchmarks on {os.cpu_count()} cores, {platform.processor() or platform.machine()},"
        f" Python {platform.python_version()}\n",
        flush=True,
    )
    results = []
    for script in scripts:
        print(f"## {script.stem}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script)], cwd=HERE.parent)
        results.append((script.stem, code, time.perf_counter() - started))
        print(flush=True)
    print("## summary")
    for name, code, seconds in results:
        print(
            f"{name:32} {'ok' if code == 0 else 'MISSED BUDGET' if code == 1 else f'ERROR ({code})':16}"
            f" {seconds:7.1f} s"
        )
    return 0 if all(code == 0 for _, code, _ in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
