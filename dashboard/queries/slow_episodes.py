"""Fail-slow episodes of a run (engine.report.slow_episodes.load_slow_episodes, the loader the incidents export uses),
cached per file version like every other query, and whether the run drew any (slow.* rates above 0)."""

from datetime import timedelta

import polars as pl
import streamlit as st

from dashboard import state
from engine.report.slow_episodes import load_slow_episodes
from engine.sim.slow import SLOW_CAUSES
from engine.store import RunInfo


def slow_episodes(run_id: str) -> pl.DataFrame:
    """Every fail-slow episode of the run, worst first (engine.report.slow_episodes.SCHEMA)."""
    s = state.store()
    return _slow_episodes(str(s.root), run_id, state.file_version(s, run_id))


@st.cache_data(max_entries=64, ttl=timedelta(hours=1), show_spinner=False)
def _slow_episodes(root: str, run_id: str, version: int) -> pl.DataFrame:
    con = state.cursor(run_id)
    try:
        return load_slow_episodes(con)
    finally:
        con.close()


def slowness_on(run: RunInfo) -> bool:
    """Whether the run's scenario drew fail-slow episodes (a slow.<cause>_rate above 0), as engine.sim.slow says."""
    slow = (run.scenario or {}).get("slow") if isinstance(run.scenario, dict) else None
    if not isinstance(slow, dict):
        return False
    rates = (slow.get(f"{cause}_rate") for cause in SLOW_CAUSES)
    return any(isinstance(rate, int | float) and rate > 0 for rate in rates)
