"""The dashboard under concurrent sessions (issue 12): `python bench/bench_load.py` prints a table and exits 1
when a round fails or the server ignores SIGTERM.

A store with a simulated (demo), a replayed and an ingested run, made by the CLI; `goodput dashboard` on
127.0.0.1; ten rounds of 20 headless-Chromium sessions (separate browser contexts) over every page, a
third of them closed after 8 s and replaced by newcomers (tests/load_sessions.py); all the while the health
endpoint is polled every 0.25 s with a 2 s timeout. A round passes when every poll answered within 2 s, every
session that stayed saw its page render (title, the page's data, the script finished, no exception element)
and the server is still up. At the end the server gets SIGTERM and must exit within 10 s.

Reported: rounds passed (budget 10 of 10), health latency max and p99, first render p95 and max per page
(opening the page to its script finishing, under the whole load), the server's peak memory (summed VmRSS of
its process tree, and VmHWM), the seconds SIGTERM took, and the machine's load average (other work on the
machine slows the renders, not the verdict). `--rounds N` and `--sessions N` change the load.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import load_sessions as load  # noqa: E402

ROUNDS, SESSIONS = 10, 20  # the load test
RENDER_DEADLINE_S = 180.0  # a session whose page has not rendered by then fails its round


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--sessions", type=int, default=SESSIONS)
    args = parser.parse_args()
    if not load.CHROMIUM.exists():
        print(f"{load.CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        made = time.perf_counter()
        runs = load.build_store(store, Path(tmp) / "inputs")
        print(f"store: {', '.join(f'{k} {v}' for k, v in runs.items())} ({time.perf_counter() - made:.0f} s)")
        server_cpus, browser_cpus = load.cpu_split()
        print(
            f"{os.cpu_count()} cores: server on CPUs {sorted(server_cpus)}, browsers on {sorted(browser_cpus)}"
        )
        server = load.start_server(store, Path(tmp) / "dashboard.log")
        control = load.start_control(Path(tmp) / "control.log")
        health = load.HealthPoller(server.url)
        control_health = load.HealthPoller(control.url)
        memory = load.MemorySampler(server.process.pid)
        health.start()
        control_health.start()
        memory.start()
        load_before = os.getloadavg()
        print(
            f"{'round':>5} {'visits':>6} {'left':>5} {'polls':>6} {'health max s':>12} {'slowest render s':>16} "
            f"{'seconds':>8}  verdict"
        )

        def report(r: load.Round) -> None:
            answered = [x for x in r.health if x is not None]
            renders = [v.render_s for v in r.visits if v.render_s is not None]
            print(
                f"{r.index:>5} {len(r.visits):>6} {sum(v.left_early for v in r.visits):>5} {len(r.health):>6} "
                f"{max(answered, default=float('nan')):>12.3f} {max(renders, default=float('nan')):>16.1f} "
                f"{r.seconds:>8.1f}  {'pass' if r.passed else 'FAIL: ' + '; '.join(r.problems[:3])}",
                flush=True,
            )

        try:
            rounds = load.run_rounds(
                server,
                runs,
                rounds=args.rounds,
                sessions=args.sessions,
                deadline_s=RENDER_DEADLINE_S,
                health=health,
                on_round=report,
            )
        finally:
            health.stop()
            control_health.stop()
            control.stop()
            memory.stop()
            load_after = os.getloadavg()
            stopped = server.stop()
        if any(not r.passed for r in rounds):
            print("late health polls: " + "; ".join(health.late[:20]))
            print("late control polls: " + "; ".join(control_health.late[:20]))
            print("server log (tail):\n" + server.log_tail(2000))

    passed = sum(r.passed for r in rounds)
    latencies = [x for r in rounds for x in r.health if x is not None]
    late = sum(not load.in_time(x) for r in rounds for x in r.health)
    print(f"\n{'page':10} {'renders':>7} {'p95 first render s':>18} {'max s':>7} {'median s':>8}")
    for page in load.PAGES:
        times = [
            v.render_s for r in rounds for v in r.visits if v.page == page.name and v.render_s is not None
        ]
        print(
            f"{page.name:10} {len(times):>7} {load.percentile(times, 95):>18.1f} "
            f"{max(times, default=float('nan')):>7.1f} "
            f"{statistics.median(times) if times else float('nan'):>8.1f}"
        )
    print(f"\nrounds passed: {passed} of {args.rounds} (budget: all)")
    print(
        f"health polls: {sum(len(r.health) for r in rounds)}, unanswered or over {load.HEALTH_TIMEOUT_S:g} s: "
        f"{late}; latency "
        f"max {max(latencies, default=float('nan')):.3f} s, p99 {load.percentile(latencies, 99):.3f} s"
    )
    control_latencies = [x for _, x in control_health.samples if x is not None]
    print(
        f"control server (trivial, same priority, same poller): {len(control_health.samples)} polls, unanswered "
        f"or over {load.HEALTH_TIMEOUT_S:g} s: {len(control_health.late)}; latency max "
        f"{max(control_latencies, default=float('nan')):.3f} s, p99 {load.percentile(control_latencies, 99):.3f} s"
    )
    print(
        f"server peak memory: {memory.peak_rss_kib / 1024:,.0f} MiB summed VmRSS of its process tree "
        f"(VmHWM {memory.peak_hwm_kib / 1024:,.0f} MiB)"
    )
    print(
        "SIGTERM: "
        + (
            f"exited in {stopped:.1f} s"
            if stopped is not None
            else f"IGNORED for {load.STOP_TIMEOUT_S:g} s (killed)"
        )
    )
    print(
        f"machine: {os.cpu_count()} cores, load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        "(1-minute; the browser's 20 tabs included)"
    )
    ok = passed == args.rounds and stopped is not None and len(rounds) == args.rounds
    print(f"budget: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
