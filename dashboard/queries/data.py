"""The Data page's query: the store's runs as one table (a row a run), their GPUs from the summary or counted."""

import polars as pl

from dashboard import state
from engine.analysis.run_summary import RunSummary
from engine.ingest.watch import SourceState, source_states
from engine.store import RunInfo
from engine.store.run import start_known
from engine.units import SECONDS_PER_DAY


def gpus_of(info: RunInfo) -> int | None:
    """GPUs of a run: from its summary when the simulator wrote one, else counted in its gpus table."""
    gpus = RunSummary.from_json(info.summary).gpus
    if gpus is not None:
        return int(gpus)
    counted = state.query(info.run_id, "SELECT count(*) AS n FROM gpus")
    return int(counted["n"][0]) if counted.height else None


def fmt_start(started_at) -> str:
    """A run's wall-clock start, or "unknown (since boot)" where nothing dated it (engine.store.run.start_known)."""
    return f"{started_at:%Y-%m-%d %H:%M} UTC" if start_known(started_at) else "unknown (since boot)"


def runs_table(runs: list[RunInfo]) -> pl.DataFrame:
    """run_id, kind, name, created, started, days, GPUs, seed, size_mb: a row a run."""
    s = state.store()
    return pl.DataFrame(
        {
            "run_id": [r.run_id for r in runs],
            "kind": [r.kind for r in runs],
            "name": [r.name for r in runs],
            "created": [r.created_at.replace(tzinfo=None) for r in runs],
            "started": [fmt_start(r.started_at) for r in runs],
            "days": [r.duration_s / SECONDS_PER_DAY for r in runs],
            "GPUs": [gpus_of(r) for r in runs],
            "seed": [r.seed for r in runs],
            "size_mb": [s.path_of(r.run_id).stat().st_size / 1e6 for r in runs],
        },
        schema_overrides={"GPUs": pl.Int64, "seed": pl.Int64},
    )


def watched_runs(runs: list[RunInfo]) -> list[tuple[RunInfo, list[SourceState]]]:
    """The runs `goodput watch` keeps current, each with where its sources stood at its last cycle."""
    return [
        (r, source_states(r.summary))
        for r in runs
        if isinstance(r.scenario, dict)
        and r.scenario.get("source") == "watch"
        and isinstance(r.summary, dict)
    ]
