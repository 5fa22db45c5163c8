"""host_states: contiguous intervals covering every host for the whole run, built by overlaying two layers.

The base layer says who holds a host (the flagship job: running; the spare pool: spare; a research job:
running; nobody: healthy). The overlay layer (draining, diagnosing, down, repair, burn_in, and research hosts
lent to the flagship job: running) wins wherever it covers the base. Elementary segments between all
boundaries of a host are labelled with Polars as-of joins and equal neighbours merged, so there is no Python
loop over rows.
"""

import numpy as np
import polars as pl

from engine.sim.records import NONE, SimulationResult, research_job_id_expr
from engine.store.schema import OUT_OF_SERVICE_STATES

BASE_SCHEMA = {
    "host_id": pl.Int32,
    "state": pl.String,
    "start_s": pl.Float64,
    "end_s": pl.Float64,
    "job_id": pl.String,
}  # the columns of engine.sim.records.HostInterval
LANE_SCHEMA = {
    "lane": pl.Int32,
    "state": pl.String,
    "start_s": pl.Float64,
    "end_s": pl.Float64,
    "job": pl.Int64,
}  # the columns of engine.sim.records.LaneInterval


def host_states(result: SimulationResult) -> pl.DataFrame:
    """The host_states table of a simulation: its flagship-family hosts and research lanes as the base layer,
    repairs and research hosts lent to the flagship job over them."""
    base = pl.DataFrame(result.flagship_intervals, schema=BASE_SCHEMA, orient="row")
    if result.lane_intervals:
        lanes = pl.DataFrame(result.lane_intervals, schema=LANE_SCHEMA, orient="row")
        members = pl.DataFrame(
            {
                "lane": [i for i, hosts in enumerate(result.lane_hosts) for _ in hosts],
                "host_id": np.concatenate(result.lane_hosts),
            },
            schema={"lane": pl.Int32, "host_id": pl.Int32},
        )
        research = lanes.join(members, on="lane").select(
            "host_id",
            "state",
            "start_s",
            "end_s",
            job_id=pl.when(pl.col("job") != NONE).then(research_job_id_expr(pl.col("job"))),
        )
        base = pl.concat([base, research])
    repair = pl.DataFrame(
        result.repair_intervals + result.borrowed_intervals, schema=BASE_SCHEMA, orient="row"
    )
    return overlay(base, repair, result.topology.n_hosts, result.horizon_s)


def out_of_service(result: SimulationResult) -> pl.DataFrame:
    """Only the rows of host_states whose state is out of service (engine.store.schema.OUT_OF_SERVICE_STATES):
    the repair layer as it is, since it wins wherever it covers the base. What a backtest's runs need (hosts in
    repair), without building the base layer: at 200,000 GPUs the research jobs' rows made 27 of a run's 40 s."""
    repair = pl.DataFrame(result.repair_intervals, schema=BASE_SCHEMA, orient="row")
    return (
        _clip(repair, result.horizon_s)
        .filter(pl.col("state").is_in(OUT_OF_SERVICE_STATES))
        .sort("host_id", "start_s")
    )


def overlay(base: pl.DataFrame, repair: pl.DataFrame, n_hosts: int, horizon: float) -> pl.DataFrame:
    """`base` and `repair` have BASE_SCHEMA columns; intervals of one layer and host must not overlap."""
    base = _clip(base, horizon)
    repair = _clip(repair, horizon)
    hosts = pl.int_range(0, n_hosts, eager=True).cast(pl.Int32).alias("host_id").to_frame()
    bounds = (
        pl.concat(
            [
                hosts.with_columns(t=pl.lit(0.0)),
                hosts.with_columns(t=pl.lit(horizon)),
                base.select("host_id", t="start_s"),
                base.select("host_id", t="end_s"),
                repair.select("host_id", t="start_s"),
                repair.select("host_id", t="end_s"),
            ]
        )
        .unique()
        .sort("host_id", "t")
    )
    segments = (
        bounds.with_columns(end_s=pl.col("t").shift(-1).over("host_id"))
        .drop_nulls("end_s")
        .rename({"t": "start_s"})
        .filter(pl.col("end_s") > pl.col("start_s"))
    )
    labelled = (
        segments.sort("start_s")
        .join_asof(
            repair.sort("start_s").rename({"end_s": "r_end", "state": "r_state", "job_id": "r_job"}),
            on="start_s",
            by="host_id",
            strategy="backward",
            check_sortedness=False,
        )
        .join_asof(
            base.sort("start_s").rename({"end_s": "b_end", "state": "b_state", "job_id": "b_job"}),
            on="start_s",
            by="host_id",
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns(
            in_repair=pl.col("r_end").is_not_null() & (pl.col("start_s") < pl.col("r_end")),
            in_base=pl.col("b_end").is_not_null() & (pl.col("start_s") < pl.col("b_end")),
        )
        .select(
            "host_id",
            "start_s",
            "end_s",
            state=pl.when("in_repair")
            .then("r_state")
            .when("in_base")
            .then("b_state")
            .otherwise(pl.lit("healthy")),
            job_id=pl.when("in_repair")
            .then("r_job")
            .when("in_base")
            .then("b_job")
            .otherwise(pl.lit(None, pl.String)),
        )
        .sort("host_id", "start_s")
    )
    # merge neighbours with the same state and job
    key_change = (
        (pl.col("host_id") != pl.col("host_id").shift(1))
        | (pl.col("state") != pl.col("state").shift(1))
        | (pl.col("job_id").fill_null("") != pl.col("job_id").shift(1).fill_null(""))
    ).fill_null(True)
    return (
        labelled.with_columns(run=key_change.cum_sum())
        .group_by("run", maintain_order=True)
        .agg(
            pl.col("host_id").first(),
            pl.col("state").first(),
            pl.col("start_s").first(),
            pl.col("end_s").last(),
            pl.col("job_id").first(),
        )
        .drop("run")
    )


def _clip(frame: pl.DataFrame, horizon: float) -> pl.DataFrame:
    return frame.with_columns(pl.col("end_s").clip(upper_bound=horizon)).filter(
        pl.col("end_s") > pl.col("start_s"), pl.col("start_s") < horizon
    )
