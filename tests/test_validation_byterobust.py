"""The byterobust-9600 preset against Wan et al., "Robust LLM Training Infrastructure at ByteDance" (ByteRobust,
SOSP 2025): 97 % ETTR for a three-month training job on 9,600 GPUs. Within 2 points (issue 14's tolerance),
with fixed seeds: every seed and their mean. The preset's comments say which settings are the paper's and which
are calibrated to this figure; the test also shows what the paper's mechanisms are worth here, against the same
job restarting the whole job from storage checkpoints that block.
"""

import statistics

import pytest

from engine.scenario import build
from engine.twin.simulate import simulate

SEEDS = (1, 2, 3)
TOLERANCE = 0.02  # 2 points of ETTR
PAPER_ETTR = 0.97


def _job(seed: int, *sets: str) -> dict:
    scenario = build("byterobust-9600", sets=[*sets, f"simulation.seed={seed}"])
    return simulate(scenario, summary_only=True).summary["job"]


def test_the_preset_is_the_papers_job():
    s = build("byterobust-9600")
    assert s["training.gpus"] == 9600 and s.job_hosts == 1200 and s["simulation.days"] == 90
    assert s["training.recovery"] == "hot_spare" and s["recovery.hot_spares"] <= s["spares.hosts"]
    assert s.checkpoint_write_s == 0


@pytest.mark.slow
def test_ettr_matches_the_paper():
    ettrs = [_job(seed)["ettr"] for seed in SEEDS]
    assert statistics.mean(ettrs) == pytest.approx(PAPER_ETTR, abs=TOLERANCE)
    assert ettrs == pytest.approx([PAPER_ETTR] * len(SEEDS), abs=TOLERANCE)


@pytest.mark.slow
def test_warm_standbys_and_non_blocking_checkpoints_are_what_wins():
    """The same failures with a full restart and checkpoints that block 30 s: several points lower."""
    for seed in SEEDS:
        robust = _job(seed)
        plain = _job(seed, "training.recovery=restart", "training.checkpoint_write=30s")
        assert plain["ettr"] < robust["ettr"] - 0.02
        assert (
            robust["recovery_cost"]["standby_gpu_hours"] > 0
            and plain["recovery_cost"]["standby_gpu_hours"] == 0
        )
