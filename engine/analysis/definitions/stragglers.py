"""Figures of the straggler analysis of one job's op-level timeline (`goodput stragglers`,
engine.analysis.stragglers): the what-if slowdown of ByteDance's OSDI'25 study, its waste, who is to blame and
what kind of slowness it is."""

from engine.analysis.definitions import Definition, section

SECTION = "Stragglers"
ANALYSE = "engine.analysis.stragglers.analyse"

_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "straggler_slowdown",
        "Straggler slowdown (S)",
        "ratio",
        "The mean step time of the job simulated with its recorded op durations over the mean step time "
        "simulated with every op at its job-wide typical duration (the mean for computes, the median transfer "
        "time for communication, one per kind of op), the 1F1B pipeline's and the collectives' dependencies "
        "respected and launch gaps left out on both sides (ByteDance's what-if analysis, OSDI'25). 1 is a job "
        "that no straggler slows; a stage that does more work than the others counts as slowdown too.",
        ANALYSE,
        "straggler_waste",
        "slowdown_fail_slow",
    ),
    _d(
        "straggler_waste",
        "Straggler waste",
        "ratio",
        "1 - 1/S: the share of the job's time lost to stragglers (S is the Straggler slowdown). A job with "
        "S = 1.18 wastes 15 % of its GPU-hours.",
        ANALYSE,
        "straggler_slowdown",
        "slowdown_fail_slow",
    ),
    _d(
        "straggler_attribution",
        "Straggler attribution (worker, DP rank, stage, kind of op)",
        "ratio",
        "For one worker (dp rank x pipeline stage), one data-parallel rank, one stage or one kind of op: the S "
        "of a what-if in which only it keeps its recorded durations and everything else runs at the typical "
        "pace (the study's Eq. 4 and Eq. 2; send and recv counted as forward-pp-comm and backward-pp-comm). "
        "Above 1 it slows the job; below 1 it is faster than typical. A rank alone among typical ones cannot "
        "be below 1 (it waits for them at the collectives).",
        ANALYSE,
        "straggler_slowdown",
    ),
    _d(
        "persistent_straggler",
        "Persistent straggler",
        "worker",
        "The worker (dp rank, stage) that is the largest single cause of the slowdown in at least half of the "
        "steps, explains at least half of S - 1 alone and at least twice what its stage's other workers do; "
        "none otherwise, and none for a job with one data-parallel rank (a slow worker and a slow stage look "
        "the same there). The host to look at first.",
        ANALYSE,
        "straggler_kind",
    ),
    _d(
        "straggler_kind",
        "Kind of slowness",
        "category",
        "none (waste under 1 %), worker (a persistent straggler: a hardware or host fault is likely), "
        "stage_imbalance (each stage's computes at that stage's own typical duration explain at least half "
        "of S - 1: an unbalanced partition of the model, not hardware), sequence_imbalance (computes vary more "
        "from microbatch to microbatch inside a worker's step than from worker to worker: unequal sequence "
        "lengths, not hardware) or transient (slow workers that change from step to step: fail-slow episodes "
        "or contention).",
        ANALYSE,
        "persistent_straggler",
        "stage_imbalance_slowdown",
    ),
    _d(
        "stage_imbalance_slowdown",
        "Stage imbalance slowdown",
        "ratio",
        "The S of a what-if in which each stage's computes run at that stage's own typical (mean) duration and "
        "everything else at the job-wide typical one: the part of the Straggler slowdown that the stages' "
        "unequal work alone explains.",
        ANALYSE,
        "straggler_slowdown",
    ),
)
