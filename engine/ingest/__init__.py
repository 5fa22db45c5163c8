"""Ingestion of real telemetry: DCGM exporter scrapes and kernel logs with XIDs, into observed runs.

    ingest_dcgm(["scrapes/node017.prom", ("upload.prom", data)])        -> Run (kind "ingest")
    ingest_kernel_logs(["dmesg.log"], dcgm=["scrape.prom"])              -> Run, XIDs mapped to scraped GPUs
    live.scrape_loop(["http://node017:9400/metrics"], 30.0, store)        -> a run that grows a scrape a commit

Inputs are file paths or (name, bytes) pairs (the dashboard's uploads). Bad input raises GoodputError naming
the file and line before anything is built; the caller writes the Run with `Store.write_run`.
"""

from collections.abc import Iterable
from datetime import UTC, datetime

import polars as pl

from engine import limits
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.ingest.dcgm import DcgmSamples, parse_dcgm
from engine.ingest.kernel_log import KernelEvents, parse_kernel_logs
from engine.ingest.observed import Batch, Observer, since_boot_sources
from engine.ingest.sources import Source, SourceLike, as_sources
from engine.store.run import Run
from engine.units import SECONDS_PER_DAY

__all__ = ["Source", "ingest_dcgm", "ingest_kernel_logs", "observed_run", "summary_of", "summary_text"]


def ingest_dcgm(
    sources: Iterable[SourceLike],
    *,
    kernel_logs: Iterable[SourceLike] = (),
    name: str | None = None,
    year: int | None = None,
) -> Run:
    """An observed run from DCGM exporter scrapes (and kernel logs of the same hosts, if given)."""
    dcgm_sources = as_sources(sources)
    log_sources = as_sources(kernel_logs) if kernel_logs else []
    dcgm = parse_dcgm(dcgm_sources)
    logs = parse_kernel_logs(log_sources, year=year) if log_sources else None
    return observed_run(dcgm, logs, name=name or _default_name("dcgm", dcgm_sources))


def ingest_kernel_logs(
    sources: Iterable[SourceLike],
    *,
    dcgm: Iterable[SourceLike] = (),
    name: str | None = None,
    year: int | None = None,
) -> Run:
    """An observed run from kernel logs; a DCGM scrape of the same hosts maps bus ids and UUIDs to its GPUs."""
    log_sources = as_sources(sources)
    dcgm_sources = as_sources(dcgm) if dcgm else []
    logs = parse_kernel_logs(log_sources, year=year)
    scrapes = parse_dcgm(dcgm_sources) if dcgm_sources else None
    return observed_run(scrapes, logs, name=name or _default_name("kernel-log", log_sources))


def observed_run(dcgm: DcgmSamples | None, logs: KernelEvents | None, *, name: str) -> Run:
    observer = Observer()
    batch = observer.add(dcgm, logs)
    if batch.samples == 0 and batch.xid_events == 0:
        inputs = ", ".join(s.name for s in _sources_of(dcgm, logs))
        skipped = "; ".join(f"{n} {why}" for why, n in batch.skipped.items() if n)
        raise GoodputError(
            f"{inputs}: nothing to ingest (no DCGM_FI_* value of a GPU, no XID line)"
            + (f"; skipped {skipped}" if skipped else "")
        )
    # each file was in bounds alone; together they may not be
    if observer.end_s > limits.MAX_RUN_DAYS * SECONDS_PER_DAY:
        inputs = ", ".join(s.name for s in _sources_of(dcgm, logs))
        days = observer.end_s / SECONDS_PER_DAY
        raise GoodputError(
            f"{inputs}: together they span {days:,.0f} days, over Goodput's limit"
            f" of {limits.MAX_RUN_DAYS:,} days a run (engine/limits.py MAX_RUN_DAYS)"
        )
    tables = dict(batch.tables)
    tables["host_states"] = observer.host_states(0.0, observer.end_s)
    scenario = {"source": "ingest", "inputs": [s.name for s in _sources_of(dcgm, logs)]}
    if not observer.start_known:
        scenario["start"] = "unknown"  # engine.store.run.UNKNOWN_START: stamped since boot only
    summary = summary_of(
        [batch],
        observer,
        start_known=observer.start_known,
        notes=_clock_notes(since_boot_sources(logs), observer.start_known),
    )
    return Run(
        kind="ingest",
        name=name,
        started_at=datetime.fromtimestamp(observer.origin_us / 1e6, UTC),
        duration_s=observer.end_s,
        scenario=scenario,
        summary=summary,
        tables=tables,
    )


def _clock_notes(since_boot: list[str], start_known: bool) -> list[str]:
    """One line on logs stamped only in seconds since boot: nothing in them says on which date they were
    written, so no date is invented (the file's modification time says when it was copied as often as not)."""
    if not since_boot:
        return []
    names = ", ".join(since_boot[:3]) + (f" and {len(since_boot) - 3} more" if len(since_boot) > 3 else "")
    if not start_known:
        return [
            f"{names}: stamped in seconds since boot only, so its dates are unknown; times are shown from"
            ' its first line ("+3 h 25 min from start"); a log with dates (dmesg -T, journalctl -k -o'
            " short-iso) would date them."
        ]
    return [
        f"{names}: stamped in seconds since boot only: their XIDs are placed from the run's start (its"
        " earliest dated sample), not at the times they happened; ingest a log with dates (dmesg -T,"
        " journalctl -k -o short-iso) to place them."
    ]


def summary_of(batches: list[Batch], observer: Observer, **extra) -> dict:
    """What `goodput ingest --json` prints (less run_id) and the run's summary holds (a RunSummary whose details
    are what was read and skipped)."""
    skipped: dict[str, int] = {}
    for batch in batches:
        for reason, count in batch.skipped.items():
            if count:
                skipped[reason] = skipped.get(reason, 0) + count
    xids = pl.concat([b.tables["xid_events"].select("xid") for b in batches])["xid"].value_counts(sort=True)
    return RunSummary(
        gpus=observer.gpus.height,
        hosts=observer.hosts.height,
        days=round(observer.end_s / SECONDS_PER_DAY, 6),
        details={
            "samples": sum(b.samples for b in batches),
            "xid_events": sum(b.xid_events for b in batches),
            "incidents": sum(b.tables["incidents"].height for b in batches),
            "other_lines": sum(b.other_lines for b in batches),
            "skipped": skipped,
            "xid_counts": {str(x): int(n) for x, n in xids.iter_rows()},
            **extra,
        },
    ).to_json()


def _sources_of(dcgm: DcgmSamples | None, logs: KernelEvents | None) -> list:
    names = [Source(n, b"") for n in dcgm.sources] if dcgm is not None else []
    return names + (list(logs.sources) if logs is not None else [])


def _default_name(kind: str, sources: list[Source]) -> str:
    first = sources[0].name.rsplit("/", 1)[-1]
    return f"{kind}: {first}" + (f" and {len(sources) - 1} more" if len(sources) > 1 else "")


def summary_text(r: dict) -> str:
    """`goodput ingest` without --json: what was read, what was skipped and why."""
    if r.get("source") == "step-times":
        return (
            f"run {r['run_id']}: {r['ops']:,} operations of {r['workers']:,} workers ({r['dp']:,} dp ranks x"
            f" {r['stages']:,} stages), {r['steps']:,} steps of {r['microbatches']:,} microbatches"
            + (f"; {r['ignored_ops']:,} ops between computes left out" if r.get("ignored_ops") else "")
            + f"\n  next: goodput stragglers --run {r['run_id']}"
        )
    if r.get("source") == "node-events":
        return _node_events_text(r)
    lines = [
        f"run {r['run_id']}: {r['hosts']:,} hosts, {r['gpus']:,} GPUs, {r['samples']:,} samples,"
        f" {r['xid_events']:,} XID events, {r['incidents']:,} incidents"
    ]
    if r.get("xid_counts"):
        lines.append("  XIDs: " + ", ".join(f"{code} x{n}" for code, n in r["xid_counts"].items()))
    if r.get("other_lines"):
        lines.append(f"  {r['other_lines']:,} other kernel-log lines")
    for reason, count in r.get("skipped", {}).items():
        lines.append(f"  skipped {count:,}: {reason}")
    for endpoint, count in r.get("failed_scrapes", {}).items():
        lines.append(f"  failed scrapes of {endpoint}: {count}")
    lines += [f"  note: {note}" for note in r.get("notes", [])]
    return "\n".join(lines)


def _node_events_text(r: dict) -> str:
    """`goodput ingest node-events` without --json: the outages found, their causes, what was skipped."""
    added = f", {r['nodes_added']:,} added never seen" if r.get("nodes_added") else ""
    lines = [
        f"run {r['run_id']}: {r['incidents']:,} outages from {r['events']:,} node events over {r['days']:,.1f} days"
        f" ({r['window']['start']} to {r['window']['end']})",
        f"  fleet: {r['hosts']:,} nodes ({r['nodes_seen']:,} seen{added}) x {r['gpus_per_node']} GPUs ="
        f" {r['gpus']:,} GPUs",
        f"  {r['unexpected']:,} unexpected, {r['planned']:,} planned; {r['open']:,} still out at the window's end",
    ]
    if r.get("by_cause"):
        lines.append("  causes: " + ", ".join(f"{cause} {n:,}" for cause, n in r["by_cause"].items()))
    lines.append(
        f"  unknown: {r['unknown']:,} of {r['incidents']:,} outages ({r['unknown_share']:.1%}) named by no rule of"
        f" the cause map ({r['causes']})"
    )
    for reason, count in r.get("skipped", {}).items():
        lines.append(f"  skipped {count:,}: {reason}")
    lines += [f"  note: {note}" for note in r.get("notes", [])]
    lines.append(f"  next: goodput calibrate --run {r['run_id']}")
    return "\n".join(lines)
