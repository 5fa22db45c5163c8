"""Acting on a real cluster: the one path every action takes, from the command line and the Operations page alike.

    actions = Actions(store_root)                      # settings from <store>/settings.toml [actions]
    actions.recommend(run_id, who)                     # the rules' findings, new ones logged as recommended
    actions.approve(action_id, who, dry_run=True)      # the exact command, every check, nothing sent
    actions.approve(action_id, who)                    # checked, logged as approved, sent, Slurm's answer logged
    actions.reject(action_id, who, why)
    actions.by_hand(Action.DRAIN, who, nodes=(...), reason="...")   # the same path for a request typed by hand

An approval goes through, in order, holding the store's action lock (engine.act.one_at_a_time: one approval at
a time across every process, so N started at once act as N one after another would): Slurm asked what it has
now (nodes, drained nodes, active jobs); the command built with every name checked against that; then, inside
one audit-log transaction: the action's state (recommended, or failed and so retried: anything else is refused
with who decided it and when), the circuit breaker, the caps, the second confirmation for the largest job, and
the approval appended. Only then is the command run; its answer, success or error, is appended in a second
transaction, and the lock let go. A crash between leaves the action approved with no answer: the page shows it
in flight, and nothing retries it by itself. A dry run does every check and logs what it would have sent, no
more.

Who acts is the caller's to establish (the dashboard's login identity with the operator role; on the command
line the operating-system user, who also needs Slurm's own rights to run scontrol).
"""

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from engine.act import guard
from engine.act.audit import AuditEntry, AuditEvent, AuditLog
from engine.act.one_at_a_time import acting_alone
from engine.act.recommend import recommend
from engine.act.records import Action, ActionState, Recommendation, Rule, recommendation_id
from engine.act.settings import ActionSettings, load_settings
from engine.act.slurm_control import (
    ClusterNow,
    SlurmAnswer,
    SlurmCommand,
    SlurmRefused,
    build_command,
    carry_out,
    read_cluster,
)
from engine.errors import GoodputError
from engine.ingest.slurm import SlurmError, SlurmSource
from engine.store import Store

STATE_OF_EVENT = {
    AuditEvent.RECOMMENDED: ActionState.RECOMMENDED,
    AuditEvent.APPROVED: ActionState.APPROVED,
    AuditEvent.REJECTED: ActionState.REJECTED,
    AuditEvent.DONE: ActionState.DONE,
    AuditEvent.FAILED: ActionState.FAILED,
}
MAY_APPROVE = (ActionState.RECOMMENDED, ActionState.FAILED)  # a failed action may be tried again


class NeedsConfirmation(GoodputError):
    """The action touches the largest running job: ask again with the second confirmation."""


@dataclass(frozen=True)
class Outcome:
    """What became of one request: the action's state after it, the command (built or sent), Slurm's answer
    when sent, and one sentence for the person who asked."""

    action_id: str
    state: ActionState | None
    message: str
    command: SlurmCommand | None = None
    answer: SlurmAnswer | None = None
    dry_run: bool = False
    refused: bool = False

    def as_json(self) -> dict:
        return {
            "id": self.action_id,
            "state": str(self.state) if self.state else None,
            "message": self.message,
            "command": list(self.command.argv) if self.command else None,
            "shown": self.command.shown() if self.command else None,
            "answer": self.answer.as_json() if self.answer else None,
            "dry_run": self.dry_run,
            "refused": self.refused,
        }


def action_state(entries: list[AuditEntry], action_id: str) -> ActionState | None:
    """The action's state: its latest state-changing event in the log (None when the log never saw it)."""
    state = None
    for entry in entries:
        if entry.action_id == action_id and entry.event in STATE_OF_EVENT:
            state = STATE_OF_EVENT[AuditEvent(entry.event)]
    return state


def _decided(entries: list[AuditEntry], action_id: str) -> AuditEntry | None:
    for entry in reversed(entries):
        if entry.action_id == action_id and entry.event in STATE_OF_EVENT:
            return entry
    return None


class Actions:
    def __init__(
        self,
        store_root: Path | str,
        settings: ActionSettings | None = None,
        source: SlurmSource | None = None,
    ) -> None:
        self.store = Store(store_root)
        self.settings = settings or load_settings(self.store.root)
        self.source = source or SlurmSource(conf=self.settings.slurm_conf, bin_dir=self.settings.slurm_bin)
        self.log = AuditLog(self.store.root)

    # ----- reading ---------------------------------------------------------------------------------------------

    def recommend(self, run_id: str, who: str) -> list[Recommendation]:
        """The rules' findings on the run, each with its state from the log; new findings are logged."""
        return self.record(recommend(self.store, run_id, self.settings), who)

    def record(self, found: list[Recommendation], who: str) -> list[Recommendation]:
        """Log the findings the log has not seen (as recommended, by `who`: the person who asked for or saw them
        first); each back with its state as the log has it."""
        entries = self.log.entries()
        seen = {e.action_id for e in entries if e.event == AuditEvent.RECOMMENDED}
        if any(rec.id not in seen for rec in found):
            with self.log.writing() as log:
                entries = log.entries()
                seen = {e.action_id for e in entries if e.event == AuditEvent.RECOMMENDED}
                for rec in found:
                    if rec.id not in seen:
                        log.append(who, AuditEvent.RECOMMENDED, rec.id, rec.as_json())
                entries = log.entries()
        return [replace(rec, state=action_state(entries, rec.id) or ActionState.RECOMMENDED) for rec in found]

    def recommendation(self, action_id: str, entries: list[AuditEntry] | None = None) -> Recommendation:
        """The recommendation as it was logged (what is approved is what was recommended, not a recomputation)."""
        for entry in entries if entries is not None else self.log.entries(action_id=action_id):
            if entry.action_id == action_id and entry.event == AuditEvent.RECOMMENDED:
                rec = Recommendation.from_json(entry.detail)
                return replace(rec, state=action_state(entries or [entry], action_id) or rec.state)
        raise GoodputError(
            f"no action {action_id!r} in the audit log ({self.log.path}); list them with `goodput act recommend`"
        )

    def listed(self) -> list[Recommendation]:
        """Every action the log knows, newest first, with its state."""
        entries = self.log.entries()
        recs = [Recommendation.from_json(e.detail) for e in entries if e.event == AuditEvent.RECOMMENDED]
        return [replace(r, state=action_state(entries, r.id) or r.state) for r in reversed(recs)]

    def breaker(self) -> guard.Breaker:
        return guard.breaker(self.log.entries(), self.settings)

    # ----- deciding --------------------------------------------------------------------------------------------

    def reject(self, action_id: str, who: str, why: str) -> Outcome:
        if not why.strip():
            raise GoodputError("reject: say why (it is kept in the audit log)")
        with self.log.writing() as log:
            entries = log.entries(action_id=action_id)
            self.recommendation(action_id, entries)
            state = action_state(entries, action_id)
            if state not in MAY_APPROVE:
                return self._refusal(action_id, state, entries)
            log.append(who, AuditEvent.REJECTED, action_id, {"why": why.strip()})
        return Outcome(action_id, ActionState.REJECTED, f"rejected by {who}")

    def by_hand(
        self,
        action: Action,
        who: str,
        *,
        nodes: tuple[str, ...] = (),
        job_id: str | None = None,
        reason: str = "",
        dry_run: bool = False,
        confirm_largest: bool = False,
    ) -> Outcome:
        """A drain, resume or requeue asked for by a person: logged as a recommendation of theirs, then approved
        on the same path as any other (the same checks, caps and log)."""
        if not reason.strip():
            raise GoodputError(f"{action}: say why (--reason); it goes to Slurm and the audit log")
        at = datetime.now(UTC)
        rec = Recommendation(
            id=recommendation_id(action, tuple(nodes), job_id, Rule.MANUAL, f"{who}@{at.isoformat()}"),
            action=action,
            nodes=tuple(nodes),
            reason=" ".join(reason.split()),
            rule=Rule.MANUAL,
            run_id="",
            job_id=job_id,
            pricing="asked for by hand: not priced by the twin",
        )
        if not dry_run:
            with self.log.writing() as log:
                log.append(who, AuditEvent.RECOMMENDED, rec.id, rec.as_json())
        return self._approve(rec, who, dry_run=dry_run, confirm_largest=confirm_largest)

    def approve(
        self, action_id: str, who: str, *, dry_run: bool = False, confirm_largest: bool = False
    ) -> Outcome:
        return self._approve(
            self.recommendation(action_id), who, dry_run=dry_run, confirm_largest=confirm_largest
        )

    def reset_breaker(self, who: str, why: str) -> None:
        if not why.strip():
            raise GoodputError("reset-breaker: say why (it is kept in the audit log)")
        with self.log.writing() as log:
            log.append(who, AuditEvent.BREAKER_RESET, None, {"why": why.strip()})

    # ----- the one path to Slurm -------------------------------------------------------------------------------

    def _approve(self, rec: Recommendation, who: str, *, dry_run: bool, confirm_largest: bool) -> Outcome:
        with acting_alone(self.store.root):  # the next action reads Slurm and the log with this one's answer
            return self._approve_alone(rec, who, dry_run=dry_run, confirm_largest=confirm_largest)

    def _approve_alone(
        self, rec: Recommendation, who: str, *, dry_run: bool, confirm_largest: bool
    ) -> Outcome:
        try:
            now = read_cluster(self.source)
        except SlurmError as err:
            return self._slurm_unreachable(rec, who, str(err), dry_run)
        try:
            command = build_command(rec.action, now, nodes=rec.nodes, job_id=rec.job_id, reason=rec.reason)
        except SlurmRefused as err:
            return self._refuse(rec, who, str(err), None, dry_run)
        with self.log.writing() as log:
            entries = log.entries()
            state = action_state(entries, rec.id)
            if state is not None and state not in MAY_APPROVE:
                return self._refusal(rec.id, state, entries)
            refusal = self._guard(entries, now, command, confirm_largest)
            if refusal is not None:
                if isinstance(refusal, NeedsConfirmation):
                    raise refusal
                if not dry_run:
                    log.append(
                        who, AuditEvent.REFUSED, rec.id, {"why": refusal, "command": list(command.argv)}
                    )
                return Outcome(rec.id, state, refusal, command, dry_run=dry_run, refused=True)
            detail = {
                "action": str(rec.action),
                "nodes": list(command.nodes),
                "job_id": rec.job_id,
                "command": list(command.argv),
                "shown": command.shown(),
            }
            if dry_run:
                log.append(who, AuditEvent.DRY_RUN, rec.id, detail)
                return Outcome(rec.id, state, f"dry run: would run {command.shown()}", command, dry_run=True)
            log.append(who, AuditEvent.APPROVED, rec.id, detail)
        answer = carry_out(self.source, command)
        event, state = (
            (AuditEvent.DONE, ActionState.DONE) if answer.ok else (AuditEvent.FAILED, ActionState.FAILED)
        )
        with self.log.writing() as log:
            log.append(who, event, rec.id, {"answer": answer.as_json(), "slurm_error": not answer.ok})
        said = "Slurm accepted" if answer.ok else "Slurm refused"
        return Outcome(rec.id, state, f"{said}: {command.shown()}", command, answer)

    def _guard(
        self, entries: list[AuditEntry], now: ClusterNow, command: SlurmCommand, confirm_largest: bool
    ) -> str | NeedsConfirmation | None:
        breaker = guard.breaker(entries, self.settings)
        if breaker.open:
            return (
                f"circuit breaker open: {breaker.errors_in_a_row} Slurm errors in a row (last: "
                f"{breaker.last_error[:200]}); an operator must reset it (goodput act reset-breaker)"
            )
        refusal = guard.cap_refusal(entries, self.settings, now, command, datetime.now(UTC))
        if refusal is not None:
            return refusal
        largest = guard.touches_largest_job(now, command)
        if largest is not None and not confirm_largest:
            return NeedsConfirmation(
                f"{command.action} touches job {largest}, the largest running job: confirm a second time "
                "(--confirm-largest-job, or the page's second confirmation)"
            )
        return None

    def _refuse(self, rec: Recommendation, who: str, why: str, command, dry_run: bool) -> Outcome:
        if not dry_run:
            with self.log.writing() as log:
                log.append(who, AuditEvent.REFUSED, rec.id, {"why": why})
        return Outcome(rec.id, rec.state, why, command, dry_run=dry_run, refused=True)

    def _slurm_unreachable(self, rec: Recommendation, who: str, error: str, dry_run: bool) -> Outcome:
        """Slurm did not answer the questions asked before acting: an error of Slurm's, so the breaker counts it
        (a dry run only says so)."""
        if dry_run:
            return Outcome(rec.id, rec.state, f"Slurm did not answer: {error}", dry_run=True, refused=True)
        answer = SlurmAnswer(False, error, 0.0)
        with self.log.writing() as log:
            log.append(who, AuditEvent.FAILED, rec.id, {"answer": answer.as_json(), "slurm_error": True})
        return Outcome(rec.id, ActionState.FAILED, f"Slurm did not answer: {error}", answer=answer)

    @staticmethod
    def _refusal(action_id: str, state: ActionState | None, entries: list[AuditEntry]) -> Outcome:
        last = _decided(entries, action_id)
        by = f" by {last.who} at {last.at:%Y-%m-%d %H:%M:%S} UTC" if last else ""
        words = {
            ActionState.APPROVED: "already approved and sent to Slurm",
            ActionState.DONE: "already done",
            ActionState.REJECTED: "rejected",
        }.get(state, str(state))
        return Outcome(action_id, state, f"{action_id}: {words}{by}; nothing sent", refused=True)
