"""The guard-rails, read from the audit log so that they hold across every process that acts (the dashboard's
sessions and each `goodput act` alike) and survive restarts: nothing is counted in memory.

- Caps on drains: nodes drained by Goodput in any 60 minutes and any 24 hours (approved drains, less those Slurm
  refused), and the nodes out of service once the drain is done: at most max_drain_share of Slurm's nodes, and
  never less than one node (a cluster of 40 nodes at 2 % may still drain one).
- The circuit breaker: `breaker_errors` Slurm errors in a row (no success between) stop every action until an
  operator resets it; the reset is itself an audit entry.
- The largest running job: a node of it is touched only with a second confirmation.
"""

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from engine.act.audit import AuditEntry, AuditEvent
from engine.act.records import Action
from engine.act.settings import ActionSettings
from engine.act.slurm_control import ClusterNow, SlurmCommand


@dataclass(frozen=True)
class Breaker:
    open: bool
    errors_in_a_row: int
    last_error: str  # Slurm's last answer of the run of errors ("" when none)


def breaker(entries: list[AuditEntry], settings: ActionSettings) -> Breaker:
    """The breaker as the log has it: the Slurm errors since the last success or reset."""
    errors, last = 0, ""
    for entry in entries:
        if entry.event in (AuditEvent.DONE, AuditEvent.BREAKER_RESET):
            errors, last = 0, ""
        elif entry.event == AuditEvent.FAILED and entry.detail.get("slurm_error"):
            errors += 1
            last = str(entry.detail.get("answer", {}).get("text", ""))
    return Breaker(open=errors >= settings.breaker_errors, errors_in_a_row=errors, last_error=last)


def drained_nodes(entries: list[AuditEntry], since: datetime) -> int:
    """Nodes Goodput sent to drain since `since`: approved drains, less those whose answer was a failure."""
    failed = {e.action_id for e in entries if e.event == AuditEvent.FAILED}
    approved = [
        e
        for e in entries
        if e.event == AuditEvent.APPROVED
        and e.at >= since
        and e.detail.get("action") == Action.DRAIN
        and not (e.action_id in failed and _failed_after(entries, e))
    ]
    return sum(len(e.detail.get("nodes", ())) for e in approved)


def _failed_after(entries: list[AuditEntry], approved: AuditEntry) -> bool:
    """Whether the answer to this approval (the next DONE or FAILED of its action) was a failure."""
    for entry in entries:
        if entry.seq > approved.seq and entry.action_id == approved.action_id:
            if entry.event == AuditEvent.FAILED:
                return True
            if entry.event == AuditEvent.DONE:
                return False
    return False


def cap_refusal(
    entries: list[AuditEntry], settings: ActionSettings, now: ClusterNow, command: SlurmCommand, at: datetime
) -> str | None:
    """Why this drain would pass a cap, in words; None when it may go (every action but a drain may)."""
    if command.action is not Action.DRAIN:
        return None
    new = len(set(command.nodes) - now.out_of_service)
    hour = drained_nodes(entries, at - timedelta(hours=1))
    if hour + new > settings.max_drains_per_hour:
        return (
            f"cap: {hour} node(s) drained by Goodput in the last hour; {new} more would pass max_drains_per_hour "
            f"= {settings.max_drains_per_hour}"
        )
    day = drained_nodes(entries, at - timedelta(days=1))
    if day + new > settings.max_drains_per_day:
        return (
            f"cap: {day} node(s) drained by Goodput in the last 24 hours; {new} more would pass "
            f"max_drains_per_day = {settings.max_drains_per_day}"
        )
    most = max(1, math.floor(settings.max_drain_share * len(now.nodes)))
    after = len(now.out_of_service | set(command.nodes))
    if after > most:
        return (
            f"cap: {after} of {len(now.nodes)} nodes would be out of service; max_drain_share "
            f"= {settings.max_drain_share:g} allows {most}"
        )
    return None


def touches_largest_job(now: ClusterNow, command: SlurmCommand) -> str | None:
    """The largest running job's id when the command touches one of its nodes (or requeues it), else None."""
    largest = now.largest_job()
    if largest is None:
        return None
    job_id, nodes = largest
    if command.job_id == job_id or set(command.nodes) & set(nodes):
        return job_id
    return None
