"""Digests of every table and the summary a scenario and seed give, for the bit-for-bit test of refactors
(tests/test_same_seed_same_tables.py). `python -m tests.golden_tables --write` records them anew: only when a
change is meant to alter what runs draw or hold (say so in the commit), never to make a refactor pass.

Digests are SHA-256 of each table's CSV (Polars writes floats with their shortest exact repr, so a changed bit
changes the digest; lists as their items joined by commas) and of the summary as sorted JSON.
"""

import hashlib
import json
import sys
from pathlib import Path

import polars as pl

from engine.scenario import build
from engine.twin.simulate import simulate

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden" / "tables.json"
# Every preset (telemetry off where it would make millions of samples) and the one strategy no preset uses.
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "demo": ("demo", ()),
    "demo-in-memory": ("demo", ("training.recovery=in_memory_checkpoint",)),
    **{
        preset: (preset, ("simulation.telemetry=false",))
        for preset in (
            "llama3-405b",
            "meta-24k-ib",
            "rsc1",
            "future-131k",
            "meta-100k-hsdp",
            "airesim-table1",
            "byterobust-9600",
        )
    },
}


def digests(preset: str, sets: tuple[str, ...]) -> dict[str, str]:
    run = simulate(build(preset, sets=list(sets)))
    out = {name: table_digest(table) for name, table in sorted(run.tables.items())}
    out["summary"] = hashlib.sha256(json.dumps(run.summary, sort_keys=True, default=str).encode()).hexdigest()
    return out


def table_digest(table) -> str:
    """A frame's digest; a table streamed as frames (telemetry samples) is digested chunk after chunk."""
    frames = [table] if isinstance(table, pl.DataFrame) else table
    digest = hashlib.sha256()
    for frame in frames:
        flat = frame.with_columns(  # CSV has no lists: a list of hosts is written as its JSON
            pl.col(name).list.eval(pl.element().cast(pl.String)).list.join(",")
            for name, dtype in frame.schema.items()
            if dtype.base_type() == pl.List
        )
        digest.update(flat.write_csv().encode())
    return digest.hexdigest()


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.golden_tables --write")
    GOLDEN.write_text(json.dumps({case: digests(*args) for case, args in CASES.items()}, indent=1) + "\n")
    print(f"wrote {GOLDEN}")
