"""What a run's summary says, read through its typed record (engine.analysis.run_summary.RunSummary): a figure
by its definition (`RunSummary.figure`), the rest by the record's fields.

Replayed and ingested runs have other parts (DESIGN "Command line"), and older runs may lack some: the record
reads what is missing as None, and every reader here leaves out what a run does not have.
"""

from dataclasses import dataclass

import polars as pl

from dashboard.format import fmt_duration, fmt_gpu_hours, fmt_hours, fmt_int, fmt_pct, fmt_usd
from engine.analysis.definitions import definition
from engine.analysis.run_summary import RunSummary


def causes_from_summary(summary: RunSummary) -> pl.DataFrame | None:
    """The flagship job's interruptions by cause (planned ones as planned_maintenance), or None if absent."""
    if summary.interruptions is None or not summary.interruptions.by_cause:
        return None
    by_cause = summary.interruptions.by_cause
    counts = {str(k): int(v) for k, v in by_cause.items() if isinstance(v, int | float)}
    planned = summary.interruptions.planned
    if planned and "planned_maintenance" not in counts:
        counts["planned_maintenance"] = int(planned)
    return pl.DataFrame(
        {"cause": list(counts), "count": list(counts.values())},
        schema={"cause": pl.String, "count": pl.Int64},
    )


def losses_from_summary(summary: RunSummary) -> dict[str, float] | None:
    """GPU-hours lost by category (engine.analysis.ledger.LOSSES), or None if the summary has none."""
    losses = summary.job.losses_gpu_hours if summary.job is not None else None
    if not losses:
        return None
    return {str(k): float(v) for k, v in losses.items() if isinstance(v, int | float)}


@dataclass(frozen=True)
class Headline:
    """One headline figure: st.metric's label, value and (grey, arrowless unless `trend`) delta."""

    label: str
    value: str
    delta: str | None = None
    help: str = ""
    trend: bool = False  # the delta is a comparison (green up, red down) rather than a note


def headline(summary: RunSummary) -> list[Headline]:
    """The Overview's headline figures, each only where the summary has what it needs."""
    have_utilization = summary.figure("utilisation_by_allocation") is not None
    return (
        _job_headline(summary)
        + _cluster_headline(summary)
        + _replay_and_ingest_headline(summary, have_utilization=have_utilization)
    )


def _job_headline(summary: RunSummary) -> list[Headline]:
    """The flagship job's figures: ETTR beside the closed form, MTTF, interruptions and goodput lost."""
    out: list[Headline] = []
    ettr, closed = summary.figure("ettr"), summary.figure("closed_form_ettr")
    if ettr is not None:
        delta = (
            f"{(ettr - closed) * 100:+.1f} pts vs closed form {fmt_pct(closed)}"
            if closed is not None
            else None
        )
        out.append(
            Headline(
                definition("ettr").label,
                fmt_pct(ettr),
                delta,
                trend=delta is not None,
                help=definition("ettr").help
                + " The delta compares it with the "
                + definition("closed_form_ettr").help,
            )
        )
    mttf = summary.figure("job_mttf")
    if mttf is not None:
        out.append(Headline(definition("job_mttf").label, fmt_hours(mttf), help=definition("job_mttf").help))
    total = summary.figure("interruptions")
    if total is not None:
        unexpected, planned = (
            summary.figure("unexpected_interruptions"),
            summary.figure("planned_interruptions"),
        )
        note = (
            f"{fmt_int(unexpected)} unexpected · {fmt_int(planned)} planned"
            if unexpected is not None and planned is not None
            else None
        )
        out.append(
            Headline(
                definition("interruptions").label, fmt_int(total), note, help=definition("interruptions").help
            )
        )
    losses = losses_from_summary(summary)
    lost = sum(losses.values()) if losses else summary.figure("goodput_lost")
    if lost is not None:
        usd = summary.job.losses_usd if summary.job is not None else None
        cost = sum(v for v in usd.values() if isinstance(v, int | float)) if usd else None
        out.append(
            Headline(
                definition("goodput_lost").label,
                fmt_gpu_hours(lost),
                fmt_usd(cost) if cost is not None else None,
                help=definition("goodput_lost").help,
            )
        )
    return out


def _cluster_headline(summary: RunSummary) -> list[Headline]:
    """The cluster's figures: utilisation by allocation and by progress, GPU-hours down."""
    out: list[Headline] = []
    utilization = summary.figure("utilisation_by_allocation")
    if utilization is not None:
        out.append(
            Headline(
                definition("utilisation_by_allocation").label,
                fmt_pct(utilization),
                help=definition("utilisation_by_allocation").help,
            )
        )
    progress = summary.figure("utilisation_by_progress")
    if progress is not None:
        out.append(
            Headline(
                definition("utilisation_by_progress").label,
                fmt_pct(progress),
                help=definition("utilisation_by_progress").help,
            )
        )
    down, cluster_hours = summary.figure("gpu_hours_down"), summary.figure("cluster_gpu_hours")
    if down is not None:
        share = f"{fmt_pct(down / cluster_hours)} of the cluster" if cluster_hours else None
        out.append(
            Headline(
                definition("gpu_hours_down").label,
                fmt_gpu_hours(down),
                share,
                help=definition("gpu_hours_down").help,
            )
        )
    return out


def _replay_and_ingest_headline(summary: RunSummary, *, have_utilization: bool) -> list[Headline]:
    """What `goodput replay --json` and `goodput ingest --json` report (DESIGN "Command line")."""
    out: list[Headline] = []
    jobs = _detail(summary, "jobs")
    if jobs is not None:
        pending = _detail(summary, "pending")
        out.append(
            Headline(
                "Jobs",
                fmt_int(jobs),
                f"{fmt_int(pending)} never started" if pending else None,
                help="Jobs of the replayed trace.",
            )
        )
    utilization = _detail(summary, "utilization")
    if utilization is not None and not have_utilization:
        out.append(
            Headline(
                definition("utilisation_by_allocation").label,
                fmt_pct(utilization),
                help=definition("utilisation_by_allocation").help,
            )
        )
    wait, p95 = _detail(summary, "wait_mean_s"), _detail(summary, "wait_p95_s")
    if wait is not None:
        out.append(
            Headline(
                "Mean queue wait",
                fmt_duration(wait),
                f"p95 {fmt_duration(p95)}" if p95 is not None else None,
                help="Time from a job's submission to its start.",
            )
        )
    samples = summary.figure("samples_read")
    if samples:
        out.append(
            Headline(definition("samples_read").label, fmt_int(samples), help=definition("samples_read").help)
        )
    xids = summary.figure("xid_events")
    if xids:
        out.append(
            Headline(definition("xid_events").label, fmt_int(xids), help=definition("xid_events").help)
        )
    return out


def _detail(summary: RunSummary, key: str) -> float | None:
    """A number of a replay's or an ingest's own keys (not a defined figure), or None."""
    value = summary.details.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
