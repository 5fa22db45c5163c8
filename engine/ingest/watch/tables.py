"""The store's column types of the tables a watch writes, and the small frame helpers its modules share."""

import polars as pl

from engine.store.schema import polars_schema

# Rows that a later cycle replaces rather than adds to (a running job ends, an incident learns its jobs).
REPLACE_KEYS = {"jobs": ("job_id",), "job_attempts": ("job_id", "attempt"), "incidents": ("incident_id",)}

TYPES = {
    t: polars_schema(t)
    for t in ("jobs", "job_attempts", "incidents", "host_states", "xid_events", "checkpoints")
}
SAMPLE_TYPES = polars_schema("gpu_samples")


def empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=TYPES[table])


def upsert(old: pl.DataFrame, new: pl.DataFrame, keys: tuple[str, ...]) -> pl.DataFrame:
    """`old` with the rows of `new` in place of those with the same keys."""
    if new.height == 0:
        return old
    return pl.concat([old.join(new, on=list(keys), how="anti"), new])


def since(col: pl.Expr, origin: float) -> pl.Expr:
    """A Slurm time (a UTC datetime) as seconds since the run's start."""
    return col.dt.epoch("us").cast(pl.Float64) / 1e6 - origin
