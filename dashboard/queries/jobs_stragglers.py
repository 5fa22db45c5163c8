"""The Jobs page's straggler analysis of a run's op-level timeline (`goodput ingest step-times`, the `step_ops`
table): whether the run has one, and engine.analysis.stragglers' report of it, cached per store, run and file
version like every other query (it takes seconds on a large timeline; the page shows a spinner the first time).
"""

from datetime import timedelta

import streamlit as st

from dashboard import state
from engine.analysis.step_timeline import layout
from engine.analysis.stragglers import StragglerReport, analyse
from engine.store import query_frame

# Whether the run has a timeline: the table is absent from files written before it, empty in every other run.
HAS_STEP_OPS = """
SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_name = 'step_ops') AS has
"""
ANY_STEP_OP = "SELECT EXISTS (SELECT 1 FROM step_ops) AS has"
STEP_OPS = "SELECT * FROM step_ops"


def has_step_ops(run_id: str) -> bool:
    """True when the run holds an op-level timeline (at least one row in `step_ops`)."""
    if not state.query(run_id, HAS_STEP_OPS)["has"][0]:
        return False
    return bool(state.query(run_id, ANY_STEP_OP)["has"][0])


def report(run_id: str) -> StragglerReport:
    """engine.analysis.stragglers.analyse of the run's timeline (a GoodputError when it cannot be laid out)."""
    s = state.store()
    return _report(str(s.root), run_id, state.file_version(s, run_id))


# few entries: a report is small, but each one cost seconds and the timelines it came from are large
@st.cache_data(max_entries=16, ttl=timedelta(hours=1), show_spinner=False)
def _report(root: str, run_id: str, version: int) -> StragglerReport:
    con = state.cursor(run_id)
    try:
        ops = query_frame(con, STEP_OPS)  # not state.query: the whole timeline is not kept in the cache
    finally:
        con.close()
    return analyse(layout(ops, f"run {run_id}"))
