"""Operations: what Goodput recommends doing to the cluster of the selected run, what each costs by the twin (acting
against not acting), and, for an operator, carrying it out through Slurm behind a dry run, caps, a circuit
breaker and confirmations; every step in the hash-chained audit log (engine/act/).

Top to bottom: the guard-rails as they stand (breaker, caps, where Slurm is), then one row of tabs (only the
open one drawn; ?tab=LABEL): the recommended actions with the one opened (?action=ID opens it; it never acts),
a request typed by hand, and the audit log.
"""

from urllib.parse import parse_qsl

import polars as pl
import streamlit as st

from dashboard import auth, lazy, state, table_view
from dashboard.format import fmt_gpu_hours
from dashboard.operations import acting, audit_view
from dashboard.text import code, md
from engine.act.recommend import recommend
from engine.act.records import Action, ActionState, Recommendation
from engine.act.service import Actions
from engine.analysis.definitions import definition
from engine.errors import GoodputError
from engine.report.visible_text import visible
from engine.store import RunInfo

RECOMMENDED_TAB = "Recommended"
BY_HAND_TAB = "By hand"
LOG_TAB = "Audit log"
ACTION_PARAMETER = "action"
OBSERVED = "ingest"  # a run read from a real cluster (ingest, `goodput watch`): its hosts are Slurm's nodes


def page(run_id: str) -> None:
    run = state.store().info(run_id)
    try:
        actions = Actions(state.store().root)
    except GoodputError as err:  # a broken settings.toml: say which key, act on nothing
        st.error(f"The action settings cannot be read: {md(err)}", icon=":material/error:")
        return
    may_act = auth.can(auth.Role.OPERATOR)
    guard_section(actions)
    lazy.tabs(
        {
            RECOMMENDED_TAB: lambda: recommended_section(run, actions, may_act),
            BY_HAND_TAB: lambda: by_hand_section(actions, may_act),
            LOG_TAB: lambda: audit_view.section(actions.log),
        }
    )


def guard_section(actions: Actions) -> None:
    """The breaker, the caps and where Slurm is, in one row: what stands between a click and the cluster."""
    s = actions.settings
    breaker = actions.breaker()
    cols = st.columns(4)
    cols[0].metric(
        "Circuit breaker",
        "open: acting stopped" if breaker.open else "closed",
        help=f"Opens after {s.breaker_errors} Slurm errors in a row; an operator resets it. "
        f"Errors in a row now: {breaker.errors_in_a_row}.",
    )
    cols[1].metric("Drains per hour (cap)", f"{s.max_drains_per_hour}", help="[actions] max_drains_per_hour")
    cols[2].metric("Drains per day (cap)", f"{s.max_drains_per_day}", help="[actions] max_drains_per_day")
    cols[3].metric(
        "Out of service at most",
        f"{s.max_drain_share:.0%} of nodes",
        help="[actions] max_drain_share: a drain that would leave more of Slurm's nodes drained or down is refused "
        "(never less than one node).",
    )
    where = code(s.slurm_conf) if s.slurm_conf else "Slurm's default configuration"
    st.caption(
        f"Slurm: {where}. Settings: `[actions]` in the store's `settings.toml`; the price of not acting counts "
        f"{s.horizon_hours:g} hours ahead (`horizon_hours`)."
    )
    if breaker.open:
        st.error(
            f"Acting is stopped: {breaker.errors_in_a_row} Slurm errors in a row. Last: {md(breaker.last_error)}",
            icon=":material/power_off:",
        )
        if auth.can(auth.Role.OPERATOR):
            why = st.text_input("Why it is safe to act again", key="ops_reset_why")
            st.button("Reset the breaker", on_click=reset_breaker, args=(actions,), disabled=not why.strip())


def reset_breaker(actions: Actions) -> None:
    try:
        auth.require(auth.Role.OPERATOR)
        actions.reset_breaker(auth.identity(), st.session_state.get("ops_reset_why", ""))
        st.toast("Circuit breaker reset.", icon=":material/power:")
    except GoodputError as err:
        st.toast(f"Not reset: {md(err)}", icon=":material/error:")


@st.cache_data(show_spinner=False, max_entries=16)
def _findings(root: str, run_id: str, version: int, horizon_hours: float) -> list[dict]:
    """The rules' findings on the run (as JSON: cached data must not be mutated), again for each file version."""
    actions = Actions(root)
    return [rec.as_json() for rec in recommend(actions.store, run_id, actions.settings)]


# ----- recommended ---------------------------------------------------------------------------------------------


def recommended_section(run: RunInfo, actions: Actions, may_act: bool) -> None:
    version = state.file_version(state.store(), run.run_id)
    st.subheader("What the rules recommend", anchor=False)
    try:
        found = [
            Recommendation.from_json(r)
            for r in _findings(str(actions.store.root), run.run_id, version, actions.settings.horizon_hours)
        ]
    except GoodputError as err:  # a run the rules do not read (a fault history): said, nothing found
        st.info(md(err), icon=":material/info:")
        return
    try:
        recs = actions.record(found, auth.identity())
    except GoodputError as err:
        st.error(md(err), icon=":material/error:")
        return
    observed = run.kind == OBSERVED
    if not observed:
        st.info(
            f"This run is a {run.kind} run: its hosts are not a live cluster's nodes, so its findings show what the "
            "rules would recommend, and acting on them is off. Acting works on a run read from the cluster "
            "(`goodput watch --prometheus URL --slurm`).",
            icon=":material/info:",
        )
    if not recs:
        st.success(
            "Nothing to recommend: no host to drain or resume, no job to requeue.", icon=":material/check:"
        )
        return
    table_view.dataframe(recommendation_table(recs), hide_index=True, width="stretch", column_config=_COLUMNS)
    chosen = choose(recs)
    if chosen is not None:
        opened_section(actions, chosen, may_act and observed)


_COLUMNS = {
    "id": "Action",
    "action": "Do",
    "nodes": "Nodes",
    "reason": st.column_config.TextColumn("Why", width="medium"),  # at 1280 px the costs stay in view
    "cost_if_acting": st.column_config.NumberColumn(
        "Cost if acting (GPU-h)", format="%,.1f", help=definition("action_cost_if_acting").means
    ),
    "cost_if_not": st.column_config.NumberColumn(
        "Cost if not acting (GPU-h)", format="%,.1f", help=definition("action_cost_if_not").means
    ),
    "state": "State",
}


def recommendation_table(recs: list[Recommendation]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [r.id for r in recs],
            "action": [str(r.action) for r in recs],
            "nodes": [", ".join(r.nodes) + (f" (job {r.job_id})" if r.job_id else "") for r in recs],
            "reason": [r.reason for r in recs],
            "cost_if_acting": [r.cost_if_acting_gpu_hours for r in recs],
            "cost_if_not": [r.cost_if_not_gpu_hours for r in recs],
            "state": [str(r.state) for r in recs],
        }
    )


def choose(recs: list[Recommendation]) -> Recommendation | None:
    """The action opened: chosen here, or the URL's ?action= (a link shows it; it never acts)."""
    ids = [r.id for r in recs]
    wanted = st.query_params.get(ACTION_PARAMETER)
    index = ids.index(wanted) if wanted in ids else 0
    picked = st.selectbox(
        "Open an action",
        ids,
        index=index,
        # no state in the label: it changes under the widget when an action is carried out; node names are data,
        # shown as the table beside it shows them (a U+202E in a name must not reverse the label)
        format_func=lambda i: visible(
            next(f"{r.id}: {r.action} {', '.join(r.nodes)}" for r in recs if r.id == i)
        ),
        key="ops_pick",
    )
    state.set_url(ACTION_PARAMETER, picked or "")
    return next((r for r in recs if r.id == picked), None)


def opened_section(actions: Actions, rec: Recommendation, may_act: bool) -> None:
    st.subheader(f"{rec.action.capitalize()} {md(', '.join(rec.nodes))}", anchor=False)  # node names are data
    st.markdown(f"{acting.target_words(rec)}: {md(rec.reason)}")
    cols = st.columns(4)
    figures = (
        ("action_cost_if_acting", fmt_gpu_hours(rec.cost_if_acting_gpu_hours)),
        ("action_cost_if_not", fmt_gpu_hours(rec.cost_if_not_gpu_hours)),
        ("action_jobs_hit", f"{len(rec.jobs_hit):,}"),
        ("action_gpus_hit", f"{rec.gpus_hit:,}"),
    )
    for column, (key, value) in zip(cols, figures, strict=True):
        d = definition(key)
        column.metric(d.label, value, help=d.help)
    if rec.jobs_hit:
        st.caption("Jobs hit now: " + ", ".join(code(j) for j in rec.jobs_hit[:20]))
    if rec.pricing:
        st.caption(f"How the twin priced it: {md(rec.pricing)}")
    st.markdown("**Evidence**")
    for ev in rec.evidence:
        evidence_line(ev)
    acting.last_result()  # what Slurm said to the last click, here where it was clicked
    if rec.state in (ActionState.DONE, ActionState.REJECTED, ActionState.APPROVED):
        st.info(f"This action is {rec.state}: see the audit log for who decided and what Slurm said.")
        return
    request = acting.Request(key=rec.id, action_id=rec.id)
    acting.controls(actions, request, may_act)
    if may_act:
        with st.expander("Reject it"):
            why = st.text_input("Why not", key=f"ops_why:{rec.id}")
            st.button(
                "Reject",
                key=f"ops_reject:{rec.id}",
                on_click=acting.reject,
                args=(actions, rec),
                disabled=not why.strip(),
            )


def evidence_line(ev) -> None:
    """One fact, as text, with a link to the page that shows it."""
    page, _, query = ev.link.partition("?")
    if page:
        st.page_link(
            f"app_pages/{page}.py",
            label=md(ev.text),
            icon=":material/open_in_new:",
            query_params=dict(parse_qsl(query)),
        )
    else:
        st.markdown(f"- {md(ev.text)}")


# ----- by hand -------------------------------------------------------------------------------------------------


def by_hand_section(actions: Actions, may_act: bool) -> None:
    st.caption(
        "A drain, resume or requeue typed by hand takes the same path as a recommended one: the names are checked "
        "against Slurm's own lists, then the caps and the breaker, a dry run first, and the audit log."
    )
    if not may_act:
        auth.missing(auth.Role.OPERATOR, "Carrying out actions")
        return
    cols = st.columns([1, 2, 3])
    action = Action(
        cols[0].selectbox("Do", [str(a) for a in Action], key="ops_hand_action", format_func=visible)
    )
    if action is Action.REQUEUE:
        target = cols[1].text_input("Slurm job id", key="ops_hand_job")
    else:
        target = cols[1].text_input("Nodes (comma-separated)", key="ops_hand_nodes")
    reason = cols[2].text_input("Reason (goes to Slurm and the log)", key="ops_hand_reason")
    acting.last_result()
    names = tuple(n.strip() for n in target.split(",") if n.strip())
    if not names or not reason.strip():
        st.caption("Give the target and a reason to see the dry run.")
        return
    request = acting.Request(
        key=f"by-hand:{action}:{','.join(names)}:{reason.strip()}",
        action=action,
        nodes=() if action is Action.REQUEUE else names,
        job_id=names[0] if action is Action.REQUEUE else None,
        reason=reason,
    )
    acting.controls(actions, request, may_act)


st.title("Operations")
state.render_run_page(page, state.run_or_stop())
