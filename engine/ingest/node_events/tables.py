"""Typed node events into the tables of an observed run: hosts, gpus, incidents (one an outage), host_states and
node_events (every event as read, with the outage it joined). Every step is a Polars expression over all events
at once (the house rule: no Python loop over rows).

An outage is a node's events whose spans overlap or touch, one after another: a DRAIN for a fault followed by a
DOWN of the same fault is one failure, not two. It runs from its earliest start to its latest end (open, right-
censored, where any of its events is still open); its cause is its first event's that a rule named (`unknown`
only where none was), so a `Not responding` before `xid 79` does not hide the XID.
"""

import numpy as np
import polars as pl

from engine.ingest.node_events.causes import UNKNOWN, category_of
from engine.ingest.observed import FATAL_XIDS, hosts_table
from engine.store.schema import polars_schema

OPEN = np.iinfo(np.int64).max  # an open event's end, while spans are compared
UNSEEN = "unseen-"


def hosts(seen: pl.Series, nodes: int | None) -> tuple[pl.DataFrame, int]:
    """The hosts table (seen nodes by name, then the unseen ones --nodes adds, named `unseen-00001`...) and how
    many were added."""
    names = seen.unique().sort()
    added = 0 if nodes is None else nodes - names.len()
    if added > 0:
        width = max(5, len(str(added)))
        taken = set(names.filter(names.str.starts_with(UNSEEN)).to_list())
        extra, i = [], 1
        while len(extra) < added:
            name = f"{UNSEEN}{i:0{width}d}"
            if name not in taken:
                extra.append(name)
            i += 1
        names = pl.concat([names, pl.Series(extra, dtype=pl.String)])
    frame = pl.DataFrame(
        {"host_id": pl.int_range(0, names.len(), dtype=pl.Int32, eager=True), "hostname": names}
    )
    return hosts_table(frame), max(added, 0)


def gpus(host_count: int, per_host: int) -> pl.DataFrame:
    """`per_host` GPUs on each host, numbered host by host; no UUID or model is known."""
    gpu_id = np.arange(host_count * per_host, dtype=np.int32)
    return pl.DataFrame(
        {
            "gpu_id": gpu_id,
            "host_id": gpu_id // per_host,
            "index": (gpu_id % per_host).astype(np.int16),
            "uuid": _nulls(len(gpu_id)),
            "model": _nulls(len(gpu_id)),
        }
    ).cast(polars_schema("gpus"))


def outages(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`events` (host_id, start_us, end_us, cause, planned, xid, in read order) with the incident_id of the outage
    each joined, and the outages: incident_id, host_id, start_us, end_us (null: open), cause, planned, xid.
    Incident ids count outages by start, then host."""
    end = pl.col("end_us").fill_null(OPEN)
    ordered = events.with_row_index("_order").sort("host_id", "start_us", end, "_order")
    # the latest end of the host's events before this one: past it, a new outage (a host's first event too, so a
    # running count over all hosts numbers every outage)
    ordered = ordered.with_columns(_reach=end.cum_max().shift(1).over("host_id"))
    opens = pl.col("_reach").is_null() | (pl.col("start_us") > pl.col("_reach"))
    ordered = ordered.with_columns(_outage=opens.cum_sum()).drop("_reach")
    named = pl.col("cause") != UNKNOWN
    grouped = ordered.group_by("_outage").agg(
        pl.col("host_id").first(),
        pl.col("start_us").min(),
        pl.when(pl.col("end_us").is_null().any())
        .then(None)
        .otherwise(pl.col("end_us").max())
        .alias("end_us"),
        pl.col("cause").filter(named).first().fill_null(UNKNOWN).alias("cause"),
        pl.col("planned").filter(named).first().fill_null(False).alias("planned"),
        pl.coalesce(pl.col("xid").filter(named).first(), pl.col("xid").drop_nulls().first()).alias("xid"),
    )
    grouped = grouped.sort("start_us", "host_id").with_columns(
        incident_id=pl.int_range(0, pl.len(), dtype=pl.Int32)
    )
    joined = ordered.join(grouped.select("_outage", "incident_id"), on="_outage", how="left")
    events = joined.sort("_order").drop("_order", "_outage")
    return events, grouped.drop("_outage")


def incidents(found: pl.DataFrame, origin_us: int) -> pl.DataFrame:
    """The incidents table: detected and mitigated when the node went out, repaired when it came back (NULL while
    still out); no GPU, link or job is known to have been hit."""
    t_s = _seconds(found["start_us"] - origin_us)
    repaired = _seconds(found["end_us"] - origin_us)
    xid = pl.when(pl.col("xid").is_in(FATAL_XIDS)).then(pl.col("xid"))
    return found.select(
        "incident_id",
        t_s.alias("t_s"),
        t_s.alias("detected_s"),
        t_s.alias("mitigated_s"),
        repaired.alias("repaired_s"),
        "cause",
        pl.col("cause").replace_strict(_categories(found), return_dtype=pl.String).alias("category"),
        "planned",
        xid.alias("xid"),
        "host_id",
        pl.lit(None, pl.Int32).alias("gpu_id"),
        pl.lit(None, pl.Int32).alias("link_id"),
        pl.lit(0, pl.Int32).alias("jobs_hit"),
        pl.lit(0.0).alias("gpu_hours_lost"),
        pl.lit([], pl.List(pl.String)).alias("job_ids"),
    ).cast(polars_schema("incidents"))


def _categories(found: pl.DataFrame) -> dict[str, str]:
    return {cause: category_of(cause) for cause in found["cause"].unique().to_list()}


def host_states(found: pl.DataFrame, host_count: int, origin_us: int, end_us: int) -> pl.DataFrame:
    """Each host healthy over the window but `down` while out (an open outage to the window's end): intervals in
    time order, none overlapping, together covering the window."""
    down = found.select(
        "host_id",
        pl.col("start_us").alias("start"),
        pl.col("end_us").fill_null(end_us).clip(upper_bound=end_us).alias("end"),
    ).sort("host_id", "start")
    same_host = pl.col("host_id") == pl.col("host_id").shift(1)  # rows sorted by host: no window needed
    previous = pl.when(same_host).then(pl.col("end").shift(1)).otherwise(origin_us)
    gaps = down.select("host_id", previous.alias("start"), pl.col("start").alias("end"))
    last = down.group_by("host_id").agg(pl.col("end").max().alias("start")).with_columns(end=pl.lit(end_us))
    quiet = pl.DataFrame({"host_id": pl.int_range(0, host_count, dtype=pl.Int32, eager=True)}).join(
        down.select("host_id").unique(), on="host_id", how="anti"
    )
    quiet = quiet.with_columns(start=pl.lit(origin_us), end=pl.lit(end_us))
    healthy = pl.concat([gaps, last.select(gaps.columns), quiet.select(gaps.columns)], how="vertical_relaxed")
    states = pl.concat(
        [
            healthy.with_columns(state=pl.lit("healthy")),
            down.with_columns(state=pl.lit("down")),
        ],
        how="vertical_relaxed",
    ).filter(pl.col("end") > pl.col("start"))
    states = states.sort("host_id", "start")
    return pl.DataFrame(
        {
            "host_id": states["host_id"],
            "state": states["state"],
            "start_s": _seconds(states["start"] - origin_us),
            "end_s": _seconds(states["end"] - origin_us),
            "job_id": _nulls(states.height),
        }
    ).cast(polars_schema("host_states"))


def node_events(events: pl.DataFrame, origin_us: int) -> pl.DataFrame:
    """Every event as read, with its cause and the outage (incident) it joined."""
    return pl.DataFrame(
        {
            "host_id": events["host_id"],
            "start_s": _seconds(events["start_us"] - origin_us),
            "end_s": _seconds(events["end_us"] - origin_us),
            "state": events["state"],
            "reason": events["reason"],
            "description": events["description"],
            "user": events["user"],
            "cause": events["cause"],
            "planned": events["planned"],
            "incident_id": events["incident_id"],
            "source": events["source"],
            "line": events["line"],
        }
    ).cast(polars_schema("node_events"))


def _seconds(micros: pl.Series) -> pl.Series:
    """Microseconds to seconds by true division (NumPy's), as engine/ingest/observed.py does: a time has one
    spelling in every table."""
    values = micros.cast(pl.Float64).to_numpy() / 1e6
    return pl.Series(values, dtype=pl.Float64).fill_nan(None)


def _nulls(n: int) -> pl.Series:
    return pl.repeat(None, n, dtype=pl.String, eager=True)
