"""Why jobs wait: the four reasons, and turning the scheduler's per-class reason timeline into per-job pieces.

The scheduler records a reason per demand class at every pass where it changes (jobs of one demand share
one answer); a job's wait is the stretch of that timeline between its entering the queue and its start.
"""

import numpy as np
import polars as pl

REASONS = ("no_capacity", "fragmentation", "priority", "failed_hosts")


def cut_waits(spells_rows: list[tuple], reason_log: list[tuple]) -> pl.DataFrame:
    """Wait spells (job, class, from, to) cut by their class's reason timeline [(class, t, reason or None)]
    into (job, start_s, end_s, reason) pieces, neighbours with one reason merged."""
    empty = pl.DataFrame(
        schema={"job": pl.Int64, "start_s": pl.Float64, "end_s": pl.Float64, "reason": pl.String}
    )
    if not spells_rows:
        return empty
    spells = np.array([r[:2] for r in spells_rows], dtype=np.int64)
    times = np.array([r[2:] for r in spells_rows], dtype=float)
    log = (
        pl.DataFrame(reason_log, schema={"c": pl.Int64, "t": pl.Float64, "reason": pl.String}, orient="row")
        .with_row_index("i")
        .sort("c", "t", "i")
    )
    lc, lt = log["c"].to_numpy(), log["t"].to_numpy()
    reasons = log["reason"].to_numpy()
    # key (class, time) as one sortable number: time ranks within the class block
    lo = np.searchsorted(lc, spells[:, 1], side="left")
    hi = np.searchsorted(lc, spells[:, 1], side="right")
    out_job, out_from, out_to, out_reason = [], [], [], []
    for idx in range(len(spells)):
        a, b = lo[idx], hi[idx]
        t0, t1 = times[idx]
        block_t = lt[a:b]
        first = a + max(int(np.searchsorted(block_t, t0, side="right")) - 1, 0)
        last = a + int(np.searchsorted(block_t, t1, side="left"))
        edges = np.concatenate(([t0], lt[first + 1 : last], [t1]))
        out_job.append(np.full(len(edges) - 1, spells[idx, 0]))
        out_from.append(edges[:-1])
        out_to.append(edges[1:])
        out_reason.append(reasons[first:last] if last > first else reasons[first : first + 1])
    frame = pl.DataFrame(
        {
            "job": np.concatenate(out_job),
            "start_s": np.concatenate(out_from),
            "end_s": np.concatenate(out_to),
            "reason": np.concatenate(out_reason).astype(str),
        }
    )
    frame = frame.filter((pl.col("end_s") > pl.col("start_s")) & (pl.col("reason") != "None"))
    # merge neighbouring pieces of one job with the same reason
    frame = frame.sort("job", "start_s").with_columns(
        new=(pl.col("reason") != pl.col("reason").shift()).fill_null(True)
        | (pl.col("job") != pl.col("job").shift()).fill_null(True)
        | (pl.col("start_s") != pl.col("end_s").shift()).fill_null(True)
    )
    return (
        frame.with_columns(g=pl.col("new").cum_sum())
        .group_by("g", maintain_order=True)
        .agg(
            pl.col("job").first(), pl.col("start_s").first(), pl.col("end_s").last(), pl.col("reason").first()
        )
        .drop("g")
    )


def dominant_reason(waits: pl.DataFrame) -> pl.DataFrame:
    """(job, wait_reason): the reason each job waited longest for (ties: REASONS order)."""
    rank = {r: i for i, r in enumerate(REASONS)}
    return (
        waits.with_columns(d=pl.col("end_s") - pl.col("start_s"))
        .group_by("job", "reason")
        .agg(pl.col("d").sum())
        .with_columns(r=pl.col("reason").replace_strict(rank, return_dtype=pl.Int64))
        .sort("job", "d", "r", descending=[False, True, False])
        .group_by("job", maintain_order=True)
        .agg(pl.col("reason").first().alias("wait_reason"))
    )
