"""What the bench scripts share: each case runs in a child process of its own (so its peak memory is its own and
no earlier case's imports or caches flatter it), and CPU time is kept beside wall time (on a shared machine wall
time alone says more about the neighbours)."""

import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds() -> float:
    """CPU time of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_mb() -> float:
    """Peak resident memory of this process, MB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_in_child(script: str, spec: dict) -> dict:
    """`python SCRIPT --worker SPEC` in a child process; the JSON object it prints last."""
    out = subprocess.run(
        [sys.executable, script, "--worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"case {spec} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main_or_worker(worker, main) -> None:
    """A bench script's entry: `SCRIPT --worker SPEC` runs one case (run_in_child's child) and prints its JSON
    object; otherwise `main()` runs every case, each in a child of its own. Exits with their status."""
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
        raise SystemExit(0)
    raise SystemExit(main())
