"""Racks floor plan speed: `python bench/bench_racks.py [--full] [--store DIR]` prints a table, exits 1 on a miss.

Budgets (issue 7): the floor plan of llama3-405b's 24,576 GPUs builds server-side in <= 1 s (figure built and
serialised to the JSON Streamlit sends) and its JSON stays under 5 MB, for every measure. The run is simulated
first (telemetry every 6 h unless --full: hourly, 31.9 M samples), or read from --store (its newest run). Also
printed, without a budget: the page's queries cold and warm, and the whole page run server-side by AppTest.
"""

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIGURE_BUDGET_S = 1.0
JSON_BUDGET_BYTES = 5_000_000
T_S = 20 * 86400.0  # day 21 of the 54: mid-run, jobs and repairs under way


def simulate(store: Path, full: bool) -> str:
    sets = [] if full else ["--set", "simulation.telemetry_resolution=6h"]
    out = subprocess.run(
        [
            str(Path(sys.executable).parent / "goodput"),
            "simulate",
            "--preset",
            "llama3-405b",
            *sets,
            "--store",
            str(store),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if out.returncode:
        raise SystemExit(f"goodput simulate failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)["run_id"]


def measure(store: Path, run_id: str) -> bool:
    os.environ["GOODPUT_STORE"] = str(store)
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from dashboard import state
    from dashboard.charts import racks as charts
    from dashboard.queries import racks as queries

    info = state.store().info(run_id)
    ok = True
    print(f"{'what':40} {'seconds':>9} {'JSON MB':>9}")
    for label in ("queries, cold", "queries, warm"):
        started = time.perf_counter()
        cells = queries.floor_cells(run_id, T_S, info.scenario, queries.WINDOWS["1d"]).join(
            queries.jobs(run_id).select("job_id", "kind"), on="job_id", how="left"
        )
        print(f"{label:40} {time.perf_counter() - started:>9.3f}")
    print(f"{'GPU cells':40} {cells.height:>9,}")
    tdp_w, _ = queries.power_limits(info.scenario)
    for name in charts.MEASURES:
        started = time.perf_counter()
        figure = charts.floor_plan(cells, name, tdp_w=tdp_w)
        size = len(figure.to_json())  # what st.plotly_chart sends: plotly.io.to_json of the figure
        seconds = time.perf_counter() - started
        miss = seconds > FIGURE_BUDGET_S or size >= JSON_BUDGET_BYTES
        ok &= not miss
        print(f"{'floor plan: ' + name:40} {seconds:>9.3f} {size / 1e6:>9.2f}{'  MISSED' if miss else ''}")
    print(f"(budgets: {FIGURE_BUDGET_S} s and {JSON_BUDGET_BYTES / 1e6:.0f} MB a figure)")

    from streamlit.testing.v1 import AppTest

    for label, params in (
        ("whole page (AppTest), first open", {"measure": "state"}),
        ("whole page (AppTest), power, rack 700", {"measure": "power", "rack": "700"}),
    ):
        at = AppTest.from_file(str(ROOT / "dashboard" / "streamlit_app.py"), default_timeout=300)
        for key, value in {"run": run_id, "t": f"{T_S:.0f}", **params}.items():
            at.query_params[key] = value
        at.switch_page("app_pages/racks.py")
        started = time.perf_counter()
        at.run()
        seconds = time.perf_counter() - started
        if at.exception:
            print(f"{label}: exception {at.exception[0].message}")
            ok = False
        print(f"{label:40} {seconds:>9.3f}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="hourly telemetry (the preset's own resolution)")
    parser.add_argument("--store", help="a store holding a llama3-405b run: skip the simulation")
    args = parser.parse_args()
    if args.store:
        from engine.store import Store

        return 0 if measure(Path(args.store), Store(args.store).run_ids()[0]) else 1
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        run_id = simulate(Path(tmp), args.full)
        print(f"{'simulate llama3-405b':40} {time.perf_counter() - started:>9.1f}")
        return 0 if measure(Path(tmp), run_id) else 1


if __name__ == "__main__":
    sys.exit(main())
