"""A fault history (`goodput ingest node-events`: Slurm's node events or a ticket system's export) as every page
names it: outages of nodes, each an incident, the node down while out, and nothing else. It has no jobs, no GPU
telemetry and no network links, so a page whose subject that is says so in one line (`lacks`) instead of drawing
empty charts or zeros that look like measurements; and what the ingest noted and skipped is said where the run
is described (the Overview's header, the Data page). Every line is Markdown with the run's data (file names,
notes that quote input) escaped by dashboard.text.md, ready for st.caption or st.info.

    is_fault_history(run)       # the run was made by `goodput ingest node-events`
    lacks(run, "jobs")          # "This run is a fault history ...: it has no jobs ..."
    ingest_notes(run)           # the ingest's notes and skips, one line each
"""

from dashboard.format import fmt_int, fmt_pct
from dashboard.text import md
from engine.store import RunInfo

SOURCE = "node-events"  # the scenario's and summary's `source` of such a run

# what a page's subject is, in the words of "it has no ..."
SUBJECTS = {
    "jobs": "jobs: it records when nodes were out, not what ran on them",
    "telemetry": "GPU telemetry (temperature, power, utilisation, ECC) or XID events",
    "links": "network links: an outage names its node, not a cable or switch",
    "gpus": "GPU-level faults: it names nodes, and each node's GPUs take its state",
}


def is_fault_history(run: RunInfo) -> bool:
    """Whether the run is a fault history read by `goodput ingest node-events`."""
    return isinstance(run.scenario, dict) and run.scenario.get("source") == SOURCE


def origin(run: RunInfo) -> str:
    """Where the history came from, in words (Markdown): its files, or Slurm."""
    inputs = [str(i) for i in run.scenario.get("inputs") or []] if isinstance(run.scenario, dict) else []
    names = [i.rsplit("/", 1)[-1] for i in inputs]
    if not names:
        return "Slurm's node events"
    return md(names[0]) + (f" and {len(names) - 1} more" if len(names) > 1 else "")


def lacks(run: RunInfo, subject: str) -> str:
    """One plain line: this fault history has no `subject` (a key of SUBJECTS), so the page has nothing of it."""
    return f"This run is a fault history ({origin(run)}): it has no {SUBJECTS[subject]}."


def summary_of(run: RunInfo) -> dict:
    return run.summary if isinstance(run.summary, dict) else {}


def ingest_notes(run: RunInfo) -> list[str]:
    """What the ingest said about its input: its notes, then each kind of record it skipped with the count."""
    summary = summary_of(run)
    notes = [str(n) for n in summary.get("notes") or []]
    skipped = summary.get("skipped") or {}
    notes += [f"skipped {fmt_int(int(n))} {why}" for why, n in skipped.items() if n]
    return [md(n) for n in notes]


def outline(run: RunInfo) -> str:
    """The history in one line: outages, still open, nodes, the causes map and how much of it was named."""
    summary = summary_of(run)
    incidents, open_, events = (int(summary.get(k) or 0) for k in ("incidents", "open", "events"))
    seen, added = int(summary.get("nodes_seen") or 0), int(summary.get("nodes_added") or 0)
    causes = summary.get("causes") or "default"
    causes = (
        "Goodput's default causes map"
        if causes == "default"
        else f"the causes map {md(causes.rsplit('/', 1)[-1])}"
    )
    merged = f" from {fmt_int(events)} events" if events and events != incidents else ""
    fleet = f"{fmt_int(seen)} nodes named" + (f", {fmt_int(added)} more given by --nodes" if added else "")
    unknown = summary.get("unknown_share")
    named = (
        f", {fmt_pct(float(unknown))} of them of unknown cause" if isinstance(unknown, int | float) else ""
    )
    return (
        f"A fault history read from {origin(run)}: {fmt_int(incidents)} outages{merged}, "
        f"{fmt_int(open_)} still open, over {fleet}; causes by {causes}{named}."
    )
