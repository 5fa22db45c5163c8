"""`goodput scale` on the command line: its flags, the study they name (engine.twin.scale) and what it prints,
a JSON object or a table, with a progress bar on a terminal. Here, not in engine.analysis: printing and the
progress bar are the report's, and analysis does not import the report."""

import argparse
import json
import sys
from collections.abc import Sequence

import polars as pl

from engine.errors import GoodputError
from engine.report.progress import progress_bar
from engine.scenario import build
from engine.twin.scale import SEEDS, SIZES_GPUS, STRATEGIES, plan_study, run_study, scale_bands
from engine.twin.sweep import make_executor


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `goodput scale` (engine/cli.py may add them to its own sub-command parser)."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--preset", metavar="NAME", help="the settings to scale (default llama3-405b)")
    source.add_argument("--scenario", metavar="FILE", help="a TOML scenario file")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one scenario key")
    parser.add_argument(
        "--strategies",
        default=",".join(STRATEGIES),
        metavar="S1,S2,...",
        help=f"recovery strategies (default all: {', '.join(STRATEGIES)})",
    )
    parser.add_argument(
        "--sizes",
        default=",".join(str(g) for g in SIZES_GPUS),
        metavar="G1,G2,...",
        help="job sizes in GPUs (default 1024 to 262144, doubling)",
    )
    parser.add_argument(
        "--seeds", type=int, default=SEEDS, metavar="N", help=f"runs a point (default {SEEDS})"
    )
    parser.add_argument(
        "--executor", default="local", choices=["local", "ray"], help="local processes or Ray"
    )
    parser.add_argument("--workers", type=int, metavar="N", help="worker processes or Ray CPUs (default all)")
    parser.add_argument("--ray-address", metavar="ADDR", help="an existing Ray cluster (default: Ray here)")
    parser.add_argument("--json", action="store_true", help="print one JSON object: results and bands")


def _sizes(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise GoodputError(
            f"--sizes: expected GPUs as whole numbers separated by commas, got {text!r}"
        ) from None


def run_command(args: argparse.Namespace) -> int:
    """`goodput scale`: the study of the scenario the flags name, printed as JSON or as a table."""
    base = build(args.preset, file=args.scenario, sets=list(args.set or []))
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    study = plan_study(base, strategies=strategies, sizes_gpus=_sizes(args.sizes), seeds=args.seeds)
    executor = make_executor(args.executor, workers=args.workers, address=args.ray_address, quiet=args.json)
    runs = run_study(study, executor=executor, progress=progress_bar(args.json))
    bands = scale_bands(runs)
    if args.json:
        print(json.dumps({"results": runs.to_dicts(), "bands": bands.to_dicts()}))
    else:
        print(scale_text(bands, len(study.seeds)))
    return 0


def scale_text(bands: pl.DataFrame, seeds: int) -> str:
    """A line per size: its horizon, then each strategy's mean ETTR [p10, p90]."""
    strategies = bands["strategy"].unique(maintain_order=True).to_list()
    header = ["job GPUs", "days", *strategies]
    rows = []
    for (gpus,), part in bands.group_by(["job_gpus"], maintain_order=True):
        by = {r["strategy"]: r for r in part.to_dicts()}
        cells = [
            f"{by[s]['ettr_mean']:.3f} [{by[s]['ettr_p10']:.3f}, {by[s]['ettr_p90']:.3f}]" for s in strategies
        ]
        rows.append([f"{gpus:,}", f"{part['days'][0]:g}", *cells])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [f"ETTR by job size and recovery strategy, {seeds} seeds: mean [10%, 90%]"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]
    return "\n".join(lines)


def main_scale(argv: Sequence[str] | None = None) -> int:
    """`goodput scale` on its own: bad input prints `goodput: error: ...` and returns 2, as engine/cli.py does."""
    parser = argparse.ArgumentParser(
        prog="goodput scale", description="ETTR of the flagship job by size and recovery strategy"
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_command(args)
    except GoodputError as err:
        print(f"goodput: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main_scale())
