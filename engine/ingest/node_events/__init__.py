"""`goodput ingest node-events`: a fault history (Slurm's node events, or fault tickets) into an observed run.

    ingest_node_events(["events.txt"])                                    -> Run (kind "ingest")
    ingest_node_events(["tickets.csv"], causes="site.toml", nodes=2048)   -> the fleet padded to 2,048 nodes
    ingest_node_events(slurm=SlurmSource(conf=...), since_s=365 * 86400)  -> asked of slurmdbd (sacctmgr)

Inputs (engine/ingest/node_events/read.py): `sacctmgr --parsable2 show event` text (NodeName, TimeStart,
TimeEnd, State, Reason, User), or tickets with the columns node, start, end, cause, description as CSV, JSON
lines or Parquet. Each event of a node out of service is read (times: events.py), its cause named by the cause
map (causes.py: the site's words to Goodput's cause keys, `unknown` where no rule matches), and a node's events
that overlap or touch merged into one outage (tables.py): an incident from its start to its end (NULL while
still open), the node `down` meanwhile. The fleet is the nodes seen, or `nodes` (those never seen added, named
`unseen-00001`...), each with `gpus_per_node` GPUs (8 unless told).

Everything is built, and every bad input refused with an error naming the file, line and column, before the
caller writes the run (`Store.write_run`): nothing is ever half-written.
"""

import math
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from engine import limits
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.ingest.node_events import causes as cause_map
from engine.ingest.node_events import tables
from engine.ingest.node_events.events import EVENT_TYPES, drop_unusable, expand_nodes, typed
from engine.ingest.node_events.read import Read, read_source
from engine.ingest.node_events.times import US, describe_us
from engine.ingest.sources import SourceLike, as_sources
from engine.store.run import Run
from engine.units import SECONDS_PER_DAY

__all__ = ["DEFAULT_GPUS_PER_NODE", "DEFAULT_SINCE_S", "ingest_node_events"]

DEFAULT_GPUS_PER_NODE = 8
DEFAULT_SINCE_S = 365 * SECONDS_PER_DAY  # --slurm: a year of history unless --since says otherwise
FORMATS = ("auto", "slurm", "tickets")


def ingest_node_events(
    files: Iterable[SourceLike] = (),
    *,
    fmt: str = "auto",
    causes: str | Path | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    name: str | None = None,
    slurm=None,
    since_s: float | None = None,
    now: float | None = None,
) -> Run:
    """An observed run of a fault history: `files`, or (`slurm`, an engine.ingest.slurm.SlurmSource) the node
    events slurmdbd holds for the last `since_s` seconds. `now`: the clock (tests)."""
    per_node = _check_fleet(nodes, gpus_per_node, fmt)
    rules = cause_map.load(causes)
    now = time.time() if now is None else now
    window = None
    if slurm is not None:
        from engine.ingest.node_events.slurm import read_window

        # whole seconds, as slurmdbd keeps its times
        until = datetime.fromtimestamp(math.floor(now), UTC)
        since = datetime.fromtimestamp(
            math.floor(now - (DEFAULT_SINCE_S if since_s is None else since_s)), UTC
        )
        window = (round(since.timestamp() * US), round(until.timestamp() * US))
        reads = [read_window(slurm, since, until)]
    else:
        reads = _read_files(files, fmt)
    events, named, skipped, notes = _events(reads, now, utc=slurm is not None)
    if events.height == 0 and (window is None or (nodes is None and named.len() == 0)):
        raise _nothing(reads, skipped, window is not None)
    events = rules.classify(events).with_columns(
        xid=pl.coalesce(cause_map.xid_of(pl.col("reason")), cause_map.xid_of(pl.col("description")))
    )
    fleet = Fleet(named, nodes, per_node, gpus_per_node)
    return _run(events, reads, rules, skipped, notes, fleet, window, name, slurm)


@dataclass(frozen=True)
class Fleet:
    named: pl.Series  # every node a record named, an outage's or not
    nodes: int | None  # --nodes
    per_node: int  # GPUs a node
    asked_gpus: int | None  # --gpus-per-node


def _check_fleet(nodes: int | None, gpus_per_node: int | None, fmt: str) -> int:
    if fmt not in FORMATS:
        raise GoodputError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    per_node = DEFAULT_GPUS_PER_NODE if gpus_per_node is None else gpus_per_node
    if not 1 <= per_node <= limits.MAX_GPUS_PER_HOST:
        raise GoodputError(
            f"--gpus-per-node: must be from 1 to {limits.MAX_GPUS_PER_HOST} (engine/limits.py MAX_GPUS_PER_HOST),"
            f" got {per_node}"
        )
    if nodes is not None and not 1 <= nodes <= limits.MAX_EVENT_NODES:
        raise GoodputError(
            f"--nodes: must be from 1 to {limits.MAX_EVENT_NODES:,} (engine/limits.py MAX_EVENT_NODES), got {nodes}"
        )
    if nodes is not None and nodes * per_node > limits.MAX_EVENT_GPUS:
        raise GoodputError(
            f"--nodes {nodes:,} x --gpus-per-node {per_node} is {nodes * per_node:,} GPUs, over Goodput's limit of"
            f" {limits.MAX_EVENT_GPUS:,} (engine/limits.py MAX_EVENT_GPUS)"
        )
    return per_node


def _read_files(files: Iterable[SourceLike], fmt: str) -> list[Read]:
    reads: list[Read] = []
    total = 0
    for source in as_sources(files):
        read = read_source(source, fmt)
        total += read.raw.height
        if total > limits.MAX_NODE_EVENTS:
            raise GoodputError(
                f"{source.name}: the inputs hold more than {limits.MAX_NODE_EVENTS:,} events together, over"
                " Goodput's limit (engine/limits.py MAX_NODE_EVENTS); split the history into several runs"
            )
        reads.append(read)
    return reads


def _events(
    reads: list[Read], now: float, *, utc: bool
) -> tuple[pl.DataFrame, pl.Series, Counter, list[str]]:
    """Every input's typed events together, hostlists expanded and unusable events left out; every node a record
    named (skipped ones too: they are in the fleet); what was skipped (reason: count) and the notes on how the
    inputs were read."""
    skipped: Counter = Counter()
    notes: list[str] = []
    parts, naive = [], []
    for read in reads:
        found = typed(read, now=now)
        read.raw = read.raw.clear()  # the text as read, let go of once typed
        skipped += found.skipped
        parts.append(found.events)
        if found.naive and not utc:  # --slurm: sacctmgr ran with TZ=UTC
            naive.append(read.name)
        if read.joined_reasons:
            notes.append(
                f"{read.name}: reasons holding a '|' (sacctmgr's separator, which it does not escape):"
                f" {read.joined_reasons:,}, their fields joined back into the reason"
            )
    if naive:
        shown = ", ".join(naive[:3]) + (f" and {len(naive) - 3} more" if len(naive) > 3 else "")
        notes.append(f"{shown}: times with no zone were read as UTC")
    where = {read.name: read.where for read in reads}
    events = pl.concat(parts, how="vertical") if parts else pl.DataFrame(schema=EVENT_TYPES)
    events = expand_nodes(events, where)
    quiet = [q.with_columns(source=pl.lit(r.name)) for r in reads for q in r.quiet]
    quiet = expand_nodes(pl.concat(quiet), where) if quiet else pl.DataFrame(schema={"node": pl.String})
    named = pl.concat([events["node"], quiet["node"]]).unique()
    events, dropped, dropped_notes = drop_unusable(events, where)
    return events, named, skipped + dropped, notes + dropped_notes


def _nothing(reads: list[Read], skipped: Counter, slurm: bool) -> GoodputError:
    inputs = ", ".join(r.name for r in reads)
    said = "; ".join(f"skipped {n:,} {why}" for why, n in skipped.items() if n)
    if slurm:
        return GoodputError(
            f"{inputs}: no node was down, drained or failed in the window; give --nodes N to make a run of a"
            " quiet fleet" + (f" ({said})" if said else "")
        )
    return GoodputError(
        f"{inputs}: nothing to ingest (no event of a node down, drained or failed)"
        + (f"; {said}" if said else "")
    )


def _window(events: pl.DataFrame, reads: list[Read], window: tuple[int, int] | None) -> tuple[int, int]:
    """The run's window in µs: the asked one (--slurm) widened to every event, else the earliest start to the
    latest time seen; a window longer than MAX_RUN_DAYS is refused naming the latest time's line."""
    starts, ends = events["start_us"], events["end_us"]
    lo = [] if window is None else [window[0]]
    hi = [] if window is None else [window[1]]
    origin = min([*lo, *([int(starts.min())] if events.height else [])])
    end = max(
        [
            *hi,
            *([int(starts.max())] if events.height else []),
            *([int(ends.max())] if ends.drop_nulls().len() else []),
        ]
    )
    days = (end - origin) / US / SECONDS_PER_DAY
    if days > limits.MAX_RUN_DAYS:
        latest = (
            events.with_columns(t=pl.max_horizontal("start_us", "end_us"))
            .sort("t", descending=True)
            .row(0, named=True)
        )
        where = {r.name: r.where for r in reads}[latest["source"]]
        raise GoodputError(
            f"{latest['source']}, {where} {latest['line']:,}: {describe_us(latest['t'])} is {days:,.0f} days after"
            f" the earliest start ({describe_us(origin)}); a run may span at most {limits.MAX_RUN_DAYS:,} days"
            " (engine/limits.py MAX_RUN_DAYS)"
        )
    return origin, end


def _run(events, reads, rules, skipped, notes, fleet: Fleet, window, name, slurm) -> Run:
    seen, nodes, per_node = fleet.named, fleet.nodes, fleet.per_node
    if seen.len() > limits.MAX_EVENT_NODES:
        raise GoodputError(
            f"{', '.join(r.name for r in reads)}: {seen.len():,} nodes, over Goodput's limit of"
            f" {limits.MAX_EVENT_NODES:,} (engine/limits.py MAX_EVENT_NODES)"
        )
    if nodes is not None and nodes < seen.len():
        raise GoodputError(f"--nodes {nodes:,}: the events name {seen.len():,} nodes, more than that")
    if seen.len() * per_node > limits.MAX_EVENT_GPUS:
        raise GoodputError(
            f"{seen.len():,} nodes x {per_node} GPUs is over Goodput's limit of {limits.MAX_EVENT_GPUS:,} GPUs"
            " (engine/limits.py MAX_EVENT_GPUS); give --gpus-per-node"
        )
    hosts, added = tables.hosts(seen, nodes)
    events = events.join(hosts.select("hostname", "host_id"), left_on="node", right_on="hostname", how="left")
    events, found = tables.outages(events)
    origin, end = _window(events, reads, window)
    run_tables = {
        "hosts": hosts,
        "gpus": tables.gpus(hosts.height, per_node),
        "incidents": tables.incidents(found, origin),
        "host_states": tables.host_states(found, hosts.height, origin, end),
        "node_events": tables.node_events(events, origin),
    }
    if fleet.asked_gpus is None:
        notes.append(f"{per_node} GPUs a node assumed (--gpus-per-node to say how many)")
    if added:
        notes.append(
            f"{added:,} nodes never named by an event added to make --nodes {nodes:,}"
            f" ({tables.UNSEEN}00001 and on): out of service never"
        )
    if window is not None and origin < window[0]:
        notes.append(
            f"outages under way when the window asked for began: the run starts at the earliest, {describe_us(origin)}"
        )
    if (
        events.height
        and events["reason"].null_count() == events.height
        and events["description"].null_count() == events.height
    ):
        notes.append("no event has a cause or description: every outage's cause is unknown")
    summary = _summary(run_tables, reads, rules, skipped, notes, seen.len(), added, per_node, origin, end)
    inputs = [r.name for r in reads]
    return Run(
        kind="ingest",
        name=name or _name(inputs, slurm),
        started_at=datetime.fromtimestamp(origin / US, UTC),
        duration_s=(end - origin) / US,
        scenario={
            "source": "node-events",
            "inputs": inputs,
            "formats": {r.name: r.fmt for r in reads},
            "causes": rules.name,
            "gpus_per_node": per_node,
            "nodes": hosts.height,
            **({"slurm_conf": slurm.conf} if slurm is not None and slurm.conf else {}),
        },
        summary=summary,
        tables=run_tables,
    )


def _summary(run_tables, reads, rules, skipped, notes, seen, added, per_node, origin, end) -> dict:
    """What `goodput ingest node-events --json` prints (less run_id) and the run's summary holds."""
    incidents = run_tables["incidents"]
    by_cause = incidents["cause"].value_counts().sort(["count", "cause"], descending=[True, False])
    unknown = int((incidents["cause"] == cause_map.UNKNOWN).sum())
    planned = int(incidents["planned"].sum())
    return RunSummary(
        gpus=run_tables["gpus"].height,
        hosts=run_tables["hosts"].height,
        days=round((end - origin) / US / SECONDS_PER_DAY, 6),
        details={
            "source": "node-events",
            "formats": {r.name: r.fmt for r in reads},
            "samples": 0,
            "xid_events": 0,
            "events": run_tables["node_events"].height,
            "incidents": incidents.height,
            "planned": planned,
            "unexpected": incidents.height - planned,
            "open": int(incidents["repaired_s"].null_count()),
            "nodes_seen": seen,
            "nodes_added": added,
            "gpus_per_node": per_node,
            "unknown": unknown,
            "unknown_share": round(unknown / incidents.height, 6) if incidents.height else 0.0,
            "by_cause": {c: int(n) for c, n in by_cause.iter_rows()},
            "causes": rules.name,
            "window": {"start": describe_us(origin), "end": describe_us(end)},
            "skipped": {why: n for why, n in skipped.items() if n},
            "notes": notes,
        },
    ).to_json()


def _name(inputs: list[str], slurm) -> str:
    if slurm is not None:
        return "node-events: slurmdbd" + (f" ({slurm.conf})" if slurm.conf else "")
    first = inputs[0].rsplit("/", 1)[-1]
    return f"node-events: {first}" + (f" and {len(inputs) - 1} more" if len(inputs) > 1 else "")
