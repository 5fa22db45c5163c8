"""The run summary as a typed record (engine.analysis.run_summary): every kind of run writes one, every figure is
read through its definition's place in it, and any stored summary reads back without an error."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.analysis.definitions import DEFINITIONS
from engine.analysis.run_summary import FlagshipJob, Interruptions, RunSummary
from engine.scenario import build
from engine.twin.simulate import simulate

SMALL = ["simulation.days=3", "cluster.gpus=128", "training.gpus=96"]


@pytest.fixture(scope="module")
def simulated() -> dict:
    """A small simulated run's stored summary, with telemetry (so it has a network part)."""
    return simulate(build("demo", sets=SMALL)).summary


def test_a_simulated_summary_round_trips_exactly(simulated):
    typed = RunSummary.from_json(simulated)
    assert typed.to_json() == simulated
    assert json.dumps(typed.to_json()) == json.dumps(simulated)  # same keys in the same order
    assert isinstance(typed.job, FlagshipJob) and isinstance(typed.interruptions, Interruptions)
    assert typed.network is not None and typed.details == {}


NEEDS_A_SETTING = (
    "job_mttf",
    "time_to_train",
    "slowdown_fail_slow",
    "slow_episodes",
    "slow_hosts_swapped",
    "bursts",
    "burst_hosts",
)


def test_every_figure_with_a_place_in_a_simulated_summary_is_there(simulated):
    typed = RunSummary.from_json(simulated)
    placed = [d for d in DEFINITIONS.values() if d.summary is not None]
    assert len(placed) >= 30
    # read from observed runs only: ingests' samples and XIDs, a replay's jobs, a fault history's unknown causes
    observed_only = {"samples_read", "xid_events", "unknown_cause_incidents"}
    observed_only |= {d.key for d in placed if d.summary.startswith("jobs_")}
    observed_only |= {d.key for d in placed if d.summary == "checkpoints"}
    for d in placed:
        if d.key in observed_only:
            continue
        value = typed.at(d.summary)
        # an MTTF needs an unexpected failure; a time to train needs training.work (tests/test_time_to_train.py);
        # the fail-slow figures need a slow.* rate (off by default: tests/test_fail_slow.py), the bursts'
        # failures.burst_per_day (off by default: tests/test_sim_bursts.py)
        assert value is not None or d.key in NEEDS_A_SETTING, f"{d.key}: nothing at {d.summary}"
        if not isinstance(value, str) and value is not None:
            assert typed.figure(d.key) == pytest.approx(float(value))
    assert typed.figure("ettr") == simulated["job"]["ettr"]
    assert typed.figure("interruptions") == simulated["interruptions"]["total"]


def test_a_figure_without_a_place_in_the_summary_is_a_key_error():
    with pytest.raises(KeyError, match="incidents_per_day"):
        RunSummary().figure("incidents_per_day")


def test_replay_and_ingest_keys_are_details_and_figures_read_them():
    ingest = {"gpus": 8, "hosts": 1, "samples": 23, "xid_events": 2, "days": 0.5, "skipped": {}}
    typed = RunSummary.from_json(ingest)
    assert (typed.gpus, typed.hosts, typed.days) == (8, 1, 0.5)
    assert typed.figure("samples_read") == 23 and typed.figure("xid_events") == 2
    assert typed.job is None and typed.figure("ettr") is None
    assert typed.to_json() == ingest  # the same keys (order aside) as written
    watch = {"jobs_ledger_gpu_hours": {"wall": 10.0, "lost_work": 2.5}, "jobs_goodput": 0.75}
    assert RunSummary.from_json(watch).figure("observed_lost_work") == 2.5


def test_an_old_or_damaged_summary_reads_missing_values_as_none():
    old = {"job": {"ettr": "n/a", "mttf_hours": True, "gpus": 8.0}, "interruptions": {"total": 3}}
    typed = RunSummary.from_json(old)
    assert typed.figure("ettr") is None and typed.figure("job_mttf") is None  # not numbers
    assert typed.job.gpus == 8 and isinstance(typed.job.gpus, int)
    assert typed.interruptions.by_cause == {} and typed.figure("interruptions") == 3
    assert typed.job.recovery_cost.standby_usd is None
    assert RunSummary.from_json(None) == RunSummary() == RunSummary.from_json("not a summary")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KEYS = st.sampled_from(["job", "interruptions", "cluster", "network", "gpus", "days", "seed", "samples"])


@given(st.dictionaries(KEYS | st.text(max_size=6), JSON, max_size=6))
def test_any_stored_json_reads_back_and_every_figure_is_a_number_or_none(summary):
    typed = RunSummary.from_json(summary)
    for d in DEFINITIONS.values():
        if d.summary is not None:
            value = typed.figure(d.key)
            assert value is None or isinstance(value, float)
    json.dumps(typed.to_json())  # what it writes is JSON again
