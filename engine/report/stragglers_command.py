"""`goodput stragglers --run RUN_ID`: the straggler analysis of a run's op-level timeline (engine.analysis.
stragglers) on the command line: its flags, reading the run's `step_ops` table, and what it prints, one JSON
object or text for people."""

import argparse
import json

import polars as pl

from engine.analysis.step_timeline import layout
from engine.analysis.stragglers import StragglerReport, analyse
from engine.errors import GoodputError
from engine.store import Store, query_frame


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `goodput stragglers` (engine/cli.py adds them to its own sub-command parser)."""
    parser.add_argument(
        "--run", required=True, metavar="RUN_ID", help="a run made by `goodput ingest step-times`"
    )
    parser.add_argument(
        "--store", metavar="DIR", help="run store folder (default: $GOODPUT_STORE or data/store)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run_command(args: argparse.Namespace) -> int:
    """`goodput stragglers`: analyse the run's timeline and print the report."""
    ops = load_step_ops(Store(args.store), args.run)
    report = analyse(layout(ops, f"run {args.run}"))
    if args.json:
        print(json.dumps({"run_id": args.run, **report.as_json()}))
    else:
        print(stragglers_text(args.run, report))
    return 0


def load_step_ops(store: Store, run_id: str) -> pl.DataFrame:
    """The run's op timeline; a GoodputError when it has none (a simulated run, or one made before the table)."""
    with store.connect(run_id) as con:
        has = query_frame(
            con, "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = ?", ["step_ops"]
        )["n"][0]
        ops = query_frame(con, 'SELECT * FROM "step_ops"') if has else None
    if ops is None or ops.height == 0:
        raise GoodputError(
            f"run {run_id} has no op-level timeline; make one with `goodput ingest step-times FILE`"
        )
    return ops


def stragglers_text(run_id: str, r: StragglerReport) -> str:
    """The report for people: S and waste, the verdict, the worst stages, ranks and workers."""
    lines = [
        f"run {run_id}: {r.dp * r.stages:,} workers ({r.dp:,} dp ranks x {r.stages:,} stages), {r.steps:,} steps"
        f" of {r.microbatches:,} microbatches",
        f"  slowdown S = {r.slowdown:.3f} (step {r.step_time_s:.3f} s, {r.ideal_step_time_s:.3f} s with every op"
        f" at its typical duration); waste {r.waste:.1%} of the job's time",
        f"  kind: {r.kind}: {r.explanation}",
    ]
    s = r.persistent_straggler
    if s is not None:
        lines.append(
            f"  persistent straggler: dp_rank {s.dp_rank}, stage {s.stage} (S {s.slowdown:.3f} alone; the largest"
            f" cause in {s.share_of_steps:.0%} of steps)"
        )
    else:
        lines.append("  persistent straggler: none")
    lines.append(
        "  by stage (S with only that stage as recorded): " + _top(dict(enumerate(r.by_stage)), "stage")
    )
    lines.append("  by dp rank: " + _top(dict(enumerate(r.by_dp_rank)), "dp"))
    lines.append("  by kind of op: " + ", ".join(f"{k} {v:.3f}" for k, v in list(r.by_optype.items())[:4]))
    workers = {(d, st): v for d, row in enumerate(r.by_worker) for st, v in enumerate(row)}
    lines.append("  worst workers: " + _top(workers, "dp,stage"))
    if r.ignored_ops:
        lines.append(
            f"  note: {r.ignored_ops:,} ops between computes (neither compute nor send/recv) left out"
        )
    return "\n".join(lines)


def _top(values: dict, label: str, n: int = 5) -> str:
    ranked = sorted(values.items(), key=lambda kv: -kv[1])[:n]
    more = f" (+{len(values) - n:,} more)" if len(values) > n else ""
    names = (lambda k: f"{k[0]},{k[1]}") if label == "dp,stage" else str
    return ", ".join(f"{label} {names(k)} {v:.3f}" for k, v in ranked) + more
