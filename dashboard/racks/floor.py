"""The cluster at time t, as every section of the Racks page reads it (dashboard/app_pages/racks.py builds it),
and its cells a host each."""

from dataclasses import dataclass

import polars as pl

from engine.report.palette import OUT_OF_SERVICE_STATES


@dataclass(frozen=True)
class Floor:
    """The cluster at time t."""

    t_s: float
    hosts: pl.DataFrame  # a row a host: its rack, position and state at t
    cells: pl.DataFrame  # a row a GPU: its host's state, readings, failures in the window, job and its kind
    power: pl.DataFrame  # a row a rack: its power at t against its budget
    problems: pl.DataFrame  # the racks with a host out of service or a failed GPU at t
    measure: str  # what the floor is coloured by
    window: str  # the failures window (queries.WINDOWS)
    tdp_w: float
    budget_kw: float


def host_cells(hosts: pl.DataFrame, cells: pl.DataFrame, budget_kw: float) -> pl.DataFrame:
    """The floor's cells a host each: `hosts` (hosts_at) with its hottest GPU, mean GPU power, most failed GPU,
    power and job kind from `cells` (floor_cells, a GPU each), failed_gpus counted, and host_state its own. Its
    state shows a failed GPU ("failed") as a GPU cell would, unless the host is out of service (the larger
    news)."""
    per_host = cells.group_by("host_id").agg(
        (pl.col("state") == "failed").sum().alias("failed_gpus"),
        pl.col("temp_c").max(),
        pl.col("power_w").mean(),
        pl.col("failures").max(),
        pl.col("host_kw").first(),
        pl.col("rack_kw").first(),
        pl.col("budget_kw").first(),
        pl.col("kind").first(),
    )
    failed_shown = (pl.col("failed_gpus") > 0) & ~pl.col("state").is_in(OUT_OF_SERVICE_STATES).fill_null(
        False
    )
    return hosts.join(per_host, on="host_id", how="left").with_columns(
        pl.col("failures").fill_null(0),
        pl.col("rack_kw").fill_null(0.0),
        pl.col("budget_kw").fill_null(budget_kw),
        pl.col("failed_gpus").fill_null(0),
        pl.col("state").alias("host_state"),
        pl.when(failed_shown).then(pl.lit("failed")).otherwise(pl.col("state")).alias("state"),
    )
