"""The goodput ledger (engine.analysis.ledger): its buckets add up to the wall clock, and the summary, the stored run
and the ledger read back from it say the same."""

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.analysis.ledger import BUCKETS, LOSSES, GoodputLedger
from engine.sim.training import JobLedger


def training(productive=900.0, lost=40.0, restart=50.0, checkpoint=6.0, waiting=4.0) -> JobLedger:
    return JobLedger(
        productive_s=productive,
        lost_work_s=lost,
        restart_s=restart,
        checkpoint_s=checkpoint,
        waiting_s=waiting,
    )


def test_buckets_of_a_small_job_exactly():
    ledger = GoodputLedger.from_training(training(), gpus=16, wall_clock_s=1000.0)
    assert ledger.seconds() == {
        "productive": 900.0,
        "lost_work": 40.0,
        "restart": 50.0,
        "checkpoint": 6.0,
        "waiting_for_spares": 4.0,
        "degraded": 0.0,
        "slowdown": 0.0,
        "network_slowdown": 0.0,
    }
    assert ledger.ettr == ledger.goodput_with_network == 0.9
    assert ledger.lost_s == 100.0 and ledger.lost_gpu_hours == pytest.approx(100.0 * 16 / 3600)
    assert ledger.gpu_hours()["restart"] == pytest.approx(50.0 * 16 / 3600)


def test_a_slowed_job_keeps_its_time_as_ettr_and_loses_progress_to_the_network():
    # 900 s of training at 1.5x the step time is 600 s of progress: 300 s go to the network
    ledger = GoodputLedger.from_training(training(), gpus=8, wall_clock_s=1000.0, slowdown=1.5)
    assert (ledger.productive_s, ledger.network_slowdown_s) == pytest.approx((600.0, 300.0))
    assert ledger.ettr == pytest.approx(0.9) and ledger.goodput_with_network == pytest.approx(0.6)
    assert sum(ledger.seconds().values()) == pytest.approx(1000.0)
    # a job that cannot run where it sits (no finite slowdown) made no progress at all
    stuck = GoodputLedger.from_training(training(), gpus=8, wall_clock_s=1000.0, slowdown=float("inf"))
    assert stuck.goodput_with_network == 0.0 and stuck.ettr == pytest.approx(0.9)


@given(parts=st.lists(st.floats(0, 1e7), min_size=5, max_size=5), slowdown=st.floats(1.0, 10.0))
def test_the_buckets_always_add_up_to_the_wall_clock(parts, slowdown):
    wall = sum(parts)
    ledger = GoodputLedger.from_training(training(*parts), gpus=8, wall_clock_s=wall, slowdown=slowdown)
    assert sum(ledger.seconds().values()) == pytest.approx(wall, rel=1e-9, abs=1e-6)
    assert GoodputLedger.from_summary({"job": {"gpus": 8, "ledger_s": ledger.to_json()}}) == ledger


def test_a_summary_without_a_ledger_has_none():
    assert GoodputLedger.from_summary({}) is None
    assert GoodputLedger.from_summary({"job": {"gpus": 8}}) is None
    assert GoodputLedger.from_summary({"job": {"gpus": 8, "ledger_s": {"productive": "x"}}}) is None


def test_the_simulated_summary_is_its_ledger(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "simulate",
            "--preset",
            "demo",
            "--store",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    summary = json.loads(out.stdout)
    ledger = GoodputLedger.from_summary(summary)
    job = summary["job"]
    assert ledger.wall_clock_s == summary["days"] * 86400
    assert sum(ledger.seconds().values()) == pytest.approx(ledger.wall_clock_s, rel=1e-9)
    assert job["ettr"] == pytest.approx(ledger.ettr) and job["ettr_with_network"] == pytest.approx(
        ledger.goodput_with_network
    )
    assert job["lost_gpu_hours"] == pytest.approx(ledger.lost_gpu_hours)
    # the demo has no fail-slow episodes (slow.* rates 0): its summary leaves the slowdown bucket out
    kept = [b for b in LOSSES if b != "slowdown"]
    assert job["losses_gpu_hours"] == pytest.approx({b: ledger.gpu_hours()[b] for b in kept})
    assert job["productive_hours"] * 3600 == pytest.approx(ledger.productive_s + ledger.network_slowdown_s)
    assert set(job["ledger_s"]) == {*BUCKETS, "wall_clock"} - {"slowdown"}
    # the cluster by allocation and by progress: progress is the smaller share
    cluster = summary["cluster"]
    assert 0 < cluster["utilization_progress"] <= cluster["utilization"] <= 1
