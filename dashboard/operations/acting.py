"""Acting from the page: dry run first, then a confirmation of the exact command, then (for a node of the largest
running job) a second confirmation; Slurm's answer shown and kept.

Nothing here acts on a page load, a link or a query parameter: only a button's callback acts, each callback
checks the operator role again (auth.require), and the approval goes through engine.act.service, whose audit-log
transaction refuses an action already approved, done or rejected. A replayed click, a second tab or a second
operator therefore cannot act twice. The dry run a confirmation follows is this session's own: a confirmation
without one (a forged widget message) is refused.
"""

from dataclasses import dataclass, replace

import streamlit as st

from dashboard import auth
from dashboard.text import code, md
from engine.act.records import Action, Recommendation
from engine.act.service import Actions, NeedsConfirmation, Outcome
from engine.errors import GoodputError
from engine.report.visible_text import visible

DRY_RUN = "ops_dry_run"  # action key -> the dry run's Outcome (this session's)
LARGEST = "ops_largest"  # action key -> the second confirmation's question
RESULT = "ops_result"  # the last outcome, shown once


@dataclass(frozen=True)
class Request:
    """What a button asks for: a recommended action by id, or one typed by hand."""

    key: str  # the session's name for it: the action id, or "by-hand"
    action_id: str | None = None
    action: Action | None = None
    nodes: tuple[str, ...] = ()
    job_id: str | None = None
    reason: str = ""

    def send(self, actions: Actions, who: str, *, dry_run: bool, confirm_largest: bool = False) -> Outcome:
        flags = {"dry_run": dry_run, "confirm_largest": confirm_largest}
        if self.action_id is not None:
            return actions.approve(self.action_id, who, **flags)
        return actions.by_hand(
            self.action, who, nodes=self.nodes, job_id=self.job_id, reason=self.reason, **flags
        )


def dry_run(actions: Actions, request: Request) -> None:
    """Callback of Dry run: every check, the exact command; nothing sent."""
    _reset(request.key)
    try:
        auth.require(auth.Role.OPERATOR)
        outcome = request.send(actions, auth.identity(), dry_run=True)
    except NeedsConfirmation as err:
        st.session_state.setdefault(LARGEST, {})[request.key] = str(err)
        outcome = request.send(actions, auth.identity(), dry_run=True, confirm_largest=True)
    except GoodputError as err:
        st.session_state[RESULT] = ("error", str(err), None)
        return
    st.session_state.setdefault(DRY_RUN, {})[request.key] = outcome


def carry_out(actions: Actions, request: Request, second_confirmation: bool) -> None:
    """Callback of Carry out: only after this session's dry run of the same request, and its confirmations."""
    try:
        auth.require(auth.Role.OPERATOR)
        shown = st.session_state.get(DRY_RUN, {}).get(request.key)
        if shown is None or shown.refused or shown.command is None:
            raise GoodputError("carry out: do a dry run first, and read the command it shows")
        if not st.session_state.get(f"ops_confirm:{request.key}"):
            raise GoodputError("carry out: tick the confirmation beside the command first")
        outcome = request.send(actions, auth.identity(), dry_run=False, confirm_largest=second_confirmation)
        if outcome.command is not None and outcome.command.argv != shown.command.argv:
            # Slurm changed between (a job ended, a node went down): what ran was still checked, say so
            outcome = replace(outcome, message=outcome.message + " (Slurm had changed since the dry run)")
    except NeedsConfirmation as err:
        st.session_state.setdefault(LARGEST, {})[request.key] = str(err)
        return
    except GoodputError as err:
        st.session_state[RESULT] = ("error", str(err), None)
        return
    _reset(request.key)
    st.session_state[RESULT] = (
        "success" if outcome.answer and outcome.answer.ok else "error",
        outcome.message,
        outcome,
    )


def _reset(key: str) -> None:
    for name in (DRY_RUN, LARGEST):
        st.session_state.get(name, {}).pop(key, None)
    st.session_state.pop(f"ops_confirm:{key}", None)
    st.session_state.pop(f"ops_second:{key}", None)


def controls(actions: Actions, request: Request, may_act: bool) -> None:
    """Dry run, then the command with its confirmation(s) and Carry out."""
    if not may_act:
        auth.missing(auth.Role.OPERATOR, "Carrying out actions")
        return
    st.button(
        "Dry run",
        key=f"ops_dry_button:{request.key}",
        icon=":material/preview:",
        on_click=dry_run,
        args=(actions, request),
        help="Asks Slurm what it has now, checks the names, the caps and the breaker, and shows the exact command. "
        "Nothing is sent.",
    )
    shown: Outcome | None = st.session_state.get(DRY_RUN, {}).get(request.key)
    if shown is None:
        return
    if shown.refused or shown.command is None:
        st.error(f"It would be refused: {md(shown.message)}", icon=":material/block:")
        return
    st.markdown("The command, exactly as it would run (no shell):")
    # the reason is the operator's words and Slurm's answer is Slurm's: a U+202E would reverse what is confirmed
    st.code(visible(shown.command.shown()), language="bash", wrap_lines=True)
    st.checkbox("Carry out exactly this command", key=f"ops_confirm:{request.key}")
    largest = st.session_state.get(LARGEST, {}).get(request.key)
    second = False
    if largest:
        st.warning(md(largest), icon=":material/warning:")
        second = st.checkbox("Yes: touch the largest running job", key=f"ops_second:{request.key}")
    st.button(
        "Carry out",
        key=f"ops_go:{request.key}",
        type="primary",
        icon=":material/bolt:",
        disabled=not st.session_state.get(f"ops_confirm:{request.key}") or (bool(largest) and not second),
        on_click=carry_out,
        args=(actions, request, second),
    )


def last_result() -> None:
    """The last outcome, once: what was sent and what Slurm said (as text: Slurm's words are data)."""
    result = st.session_state.pop(RESULT, None)
    if result is None:
        return
    kind, message, outcome = result
    (st.success if kind == "success" else st.error)(md(message), icon=":material/terminal:")
    if outcome is not None and outcome.answer is not None:
        st.caption(f"Slurm said ({outcome.answer.seconds:.2f} s):")
        st.code(visible(outcome.answer.text), language=None, wrap_lines=True)


def reject(actions: Actions, rec: Recommendation) -> None:
    """Callback of Reject: with the reason typed beside it."""
    try:
        auth.require(auth.Role.OPERATOR)
        why = st.session_state.get(f"ops_why:{rec.id}", "")
        outcome = actions.reject(rec.id, auth.identity(), why)
        st.session_state[RESULT] = ("success" if not outcome.refused else "error", outcome.message, None)
    except GoodputError as err:
        st.session_state[RESULT] = ("error", str(err), None)


def target_words(rec: Recommendation) -> str:
    return (f"job {code(rec.job_id)} on " if rec.job_id else "") + ", ".join(code(n) for n in rec.nodes)
