"""Validation against AIReSim (Pattabiraman, Patel and Lin, arXiv 2603.07041, DSN'26): the airesim-table1 preset
reproduces AIReSim's published effective training ratio of 62.3 % within 2 points.

What AIReSim reports. Its effective training ratio (airesim/stats.py, StatsCollector.effective_training_ratio) is
total_compute_time / total_training_time: the minutes the job computed (its 256-day length: AIReSim loses no
work to a failure) over the wall clock it took to finish them (compute, plus the 20 min recovery every failure
costs, host selection and spare-pool waits). docs/SIMULATION_REPORT.md gives 0.6228 (62.3 %) as the mean of 30
replications of the Table 1 configuration, 61.8 % to 62.7 % (standard deviation 0.21 points), with 11,146
failures a replication (688.6 of them systematic: bad servers' failures beyond the random rate), 80.1 % of
automatic repairs escalated, 24.0 % of repairs failing silently, and 9,866 h of wall clock.

What Goodput compares. AIReSim runs the job to completion; Goodput runs a fixed horizon, set in the preset to
AIReSim's mean wall clock (411 days), and reports job.ettr, the flagship job's productive time over the wall
clock: the same ratio, compute over wall clock, measured over the same stretch of time (the bad hosts, which
repairs cure within the first weeks, weigh on both the same way). Summary-only runs with fixed seeds; the
tolerance is the issue's 2 points, ten times AIReSim's own run-to-run spread, which Goodput's runs share (its
seeds below land within 62.3 +- 0.7 %). The failure and repair counts check that the agreement is not a
coincidence of two errors: they match AIReSim's within a few times its own spread.
"""

import numpy as np
import pytest

import engine.twin.simulate as simulate_module
from engine.scenario import build
from engine.sim.bad_hosts import bad_host_summary
from engine.units import SECONDS_PER_HOUR

AIRESIM_ETR = 0.623  # docs/SIMULATION_REPORT.md: 0.6228, shown as 62.3 %
AIRESIM_FAILURES = 11_145.6
AIRESIM_SYSTEMATIC = 688.6
RECOVERY_S = 20 * 60
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def runs():
    """(summary, bad_host_summary) of each seed, summary only."""
    out = []
    real = simulate_module.summarize
    for seed in SEEDS:
        seen = {}

        def keep(scenario, result, incidents, seen=seen):
            seen["result"] = result
            return real(scenario, result, incidents)

        simulate_module.summarize = keep
        try:
            run = simulate_module.simulate(
                build("airesim-table1", sets=[f"simulation.seed={seed}"]), summary_only=True
            )
        finally:
            simulate_module.summarize = real
        out.append((run.summary, bad_host_summary(seen["result"])))
    return out


def test_the_effective_training_ratio_is_airesims_within_two_points(runs):
    ettr = [summary["job"]["ettr"] for summary, _ in runs]
    assert np.mean(ettr) == pytest.approx(AIRESIM_ETR, abs=0.02)
    assert all(abs(e - AIRESIM_ETR) < 0.02 for e in ettr)


def test_the_failures_and_repairs_are_airesims(runs):
    for summary, figures in runs:
        failures = summary["interruptions"]["unexpected"]
        assert failures == pytest.approx(AIRESIM_FAILURES, rel=0.03)  # AIReSim: 10,954 to 11,397
        assert summary["interruptions"]["planned"] == 0
        assert figures["systematic_failures"] == pytest.approx(AIRESIM_SYSTEMATIC, rel=0.1)  # 649 to 719
        assert figures["bad_hosts"] == 654  # 15 % of 4,360 servers
        assert figures["automatic_repairs"] == pytest.approx(
            failures, abs=10
        )  # every failure, bar the last few
        assert figures["escalated_repairs"] / figures["automatic_repairs"] == pytest.approx(0.80, abs=0.02)
        assert figures["silent_repair_failures"] / figures["automatic_repairs"] == pytest.approx(
            0.24, abs=0.02
        )


def test_every_failure_costs_one_recovery_and_no_work_is_lost_to_speak_of(runs):
    """AIReSim's model: a failure strikes only while the job computes, so every one costs exactly one 20 min
    recovery (the last one may be cut short by the end of the run); the preset's free 10 s checkpoints lose a
    few seconds a failure (AIReSim: none)."""
    for summary, _ in runs:
        ledger = summary["job"]["ledger_s"]
        assert ledger["restart"] == pytest.approx(
            summary["interruptions"]["unexpected"] * RECOVERY_S, abs=RECOVERY_S
        )
        # AIReSim's 20 min hand-over of a preempted spare-pool server (spares.preempt_handover): waiting for it
        handover = 20 * 60
        assert ledger["waiting_for_spares"] <= summary["cluster"]["research_preemptions"] * handover + 1e-6
        assert ledger["waiting_for_spares"] / ledger["wall_clock"] < 0.001  # AIReSim: ~5 h in 9,866 h
        assert ledger["lost_work"] / SECONDS_PER_HOUR < 0.003 * ledger["wall_clock"] / SECONDS_PER_HOUR


HALF_JOB = [
    "training.gpus=16384"
]  # 2,048 of AIReSim's 4,360 servers; the rest of its working pool stays idle
AIRESIM_HALF_ETR = 0.757  # AIReSim's own code, job_size=2048, seeds 42-44: 75.6, 75.6 and 75.8 %
AIRESIM_HALF_SYSTEMATIC = 648  # the same runs: 658, 664 and 623


def _half_job(selection: str, seed: int) -> tuple[float, int]:
    seen = {}
    real = simulate_module.summarize

    def keep(scenario, result, incidents):
        seen["result"] = result
        return real(scenario, result, incidents)

    simulate_module.summarize = keep
    try:
        sets = [*HALF_JOB, f"spares.selection={selection}", f"simulation.seed={seed}"]
        run = simulate_module.simulate(build("airesim-table1", sets=sets), summary_only=True)
    finally:
        simulate_module.summarize = real
    return run.summary["job"]["ettr"], bad_host_summary(seen["result"])["systematic_failures"]


def test_at_half_the_job_airesims_host_selection_is_spares_selection_any_idle():
    """Issue 44: with half AIReSim's job on its cluster, AIReSim's job meets twice the systematic failures
    Goodput's did: its host selection rebuilds the job from every idle server of its working pool, so servers
    that never ran it (bad ones among them) rotate in, where Goodput's job took only its reserved spares.
    spares.selection = any_idle is that policy: it lands within half a point of AIReSim's ETTR and near its
    systematic failures; reserved, the default, stays a point above with half of them."""
    reserved = [_half_job("reserved", seed) for seed in (0, 1)]
    any_idle = [_half_job("any_idle", seed) for seed in (0, 1)]
    assert np.mean([e for e, _ in any_idle]) == pytest.approx(AIRESIM_HALF_ETR, abs=0.005)
    assert np.mean([s for _, s in any_idle]) == pytest.approx(AIRESIM_HALF_SYSTEMATIC, rel=0.12)
    assert np.mean([e for e, _ in reserved]) > AIRESIM_HALF_ETR + 0.007
    assert np.mean([s for _, s in reserved]) < 0.6 * AIRESIM_HALF_SYSTEMATIC
