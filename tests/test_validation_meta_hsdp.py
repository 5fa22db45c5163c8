"""The meta-100k-hsdp preset against Salpekar et al., "Training LLMs with Fault Tolerant HSDP on 100,000 GPUs"
(Meta, arXiv 2602.00277): at ~100K GPUs fully synchronous training reached 44 % effective training time and
FT-HSDP, dropping the failed data-parallel replica instead, 80 %. Both within 5 points (issue 14's tolerance),
with fixed seeds: every seed and their mean. The preset's comments say which settings are the paper's and which
are calibrated to these two figures.
"""

import statistics

import pytest

from engine.scenario import build
from engine.twin.simulate import simulate

SEEDS = (1, 2, 3)
TOLERANCE = 0.05  # 5 points of ETTR
PAPER = {"replica_drop": 0.80, "restart": 0.44}


def _ettr(recovery: str, seed: int) -> float:
    scenario = build("meta-100k-hsdp", sets=[f"training.recovery={recovery}", f"simulation.seed={seed}"])
    return simulate(scenario, summary_only=True).summary["job"]["ettr"]


def test_the_preset_is_the_papers_job():
    s = build("meta-100k-hsdp")
    assert s["training.gpus"] == 98304 and s.job_hosts == 12288 and s["training.recovery"] == "replica_drop"
    assert s["training.restart_overhead"] == 600 and s["recovery.drop_stall"] == 180  # 10 min against 3
    assert s["research.utilization"] == 0 and not s["simulation.telemetry"]


@pytest.mark.slow
@pytest.mark.parametrize("recovery", sorted(PAPER))
def test_ettr_matches_the_paper(recovery):
    ettrs = [_ettr(recovery, seed) for seed in SEEDS]
    assert statistics.mean(ettrs) == pytest.approx(PAPER[recovery], abs=TOLERANCE)
    assert ettrs == pytest.approx([PAPER[recovery]] * len(SEEDS), abs=TOLERANCE)
