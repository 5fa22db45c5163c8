"""What detecting fail-slow hosts buys (issue 24, 5): each policy (slow.policy) and detection delay
(slow.detect_after) under the same fail-slow episodes, by Monte-Carlo.

Every point runs `seeds` summary-only simulations with the same seeds (engine.twin.sweep: common random numbers,
so two points differ by their policy, not by their luck); `ignore` is run once, its detection delay being moot.
Each row is a point's mean and 5-95 % band of the flagship's ETTR, the GPU-hours its slow hosts cost (the
ledger's slowdown bucket), the restarts swapping them in costs, and its gain over ignoring them.
"""

from collections.abc import Callable, Sequence

import polars as pl

from engine.errors import GoodputError
from engine.scenario import Scenario
from engine.scenario.durations import format_duration
from engine.sim.slow import SLOW_CAUSES
from engine.twin.sweep import Axis, Executor, bands, sweep

POLICIES = ("ignore", "swap", "drain")
DETECT_AFTER_S = (60.0, 600.0, 3600.0)  # a minute (an automatic detector), ten minutes, an hour (by hand)
# Episodes a cause per 1,000 host-days that delay a large job about 1.34x with the default lengths and factors
# (FALCON, arXiv 2410.12588; Goodput's calibration in tests/test_fail_slow.py).
FALCON_RATE = 4.0
FIGURES = ("ettr", "slowdown_gpu_hours", "restart_gpu_hours", "lost_gpu_hours")


def policy_study(
    base: Scenario,
    *,
    rate_per_cause: float = FALCON_RATE,
    policies: Sequence[str] = POLICIES,
    detect_after_s: Sequence[float] = DETECT_AFTER_S,
    seeds: int = 5,
    executor: Executor | None = None,
    progress: Callable[[float], None] | None = None,
) -> pl.DataFrame:
    """One row a (policy, detection delay): columns policy, detect_after (text), detect_after_s, runs, and
    `<figure>_mean/_p5/_p95` of FIGURES, then ettr_gain_pts (points of ETTR over ignore, the means')."""
    unknown = sorted(set(policies) - set(POLICIES))
    if unknown or not policies:
        raise GoodputError(
            f"policies: choose among {', '.join(POLICIES)} (got {', '.join(unknown) or 'none'})"
        )
    if "ignore" not in policies:
        policies = ("ignore", *policies)  # the baseline every gain is counted from
    if not detect_after_s:
        raise GoodputError("detection delays: give at least one")
    slowed = base.with_values({f"slow.{cause}_rate": rate_per_cause for cause in SLOW_CAUSES})
    acting = [p for p in policies if p != "ignore"]
    parts = [_points(slowed.with_values({"slow.policy": "ignore"}), [], seeds, executor, {})]
    if acting:
        delays = {format_duration(seconds): float(seconds) for seconds in detect_after_s}
        axes = [Axis("slow.policy", tuple(acting)), Axis("slow.detect_after", tuple(delays))]
        parts.append(_points(slowed, axes, seeds, executor, delays, progress))
    rows = pl.concat(parts, how="diagonal_relaxed")
    baseline = rows.filter(pl.col("policy") == "ignore")["ettr_mean"][0]
    return rows.with_columns(ettr_gain_pts=(pl.col("ettr_mean") - baseline) * 100)


def _points(
    scenario: Scenario,
    axes: list[Axis],
    seeds: int,
    executor: Executor | None,
    delays: dict[str, float],
    progress: Callable[[float], None] | None = None,
) -> pl.DataFrame:
    frame = sweep(scenario, axes, seeds, executor=executor, progress=progress)
    keys = [a.key for a in axes]
    summary = bands(frame, by=keys) if keys else bands(frame)
    kept = [c for c in summary.columns if c == "runs" or c.rsplit("_", 1)[0] in FIGURES]
    if not keys:
        return summary.select(
            pl.lit("ignore").alias("policy"),
            pl.lit("-").alias("detect_after"),
            pl.lit(None, pl.Float64).alias("detect_after_s"),
            *kept,
        )
    return summary.select(
        pl.col("slow.policy").alias("policy"),
        pl.col("slow.detect_after").alias("detect_after"),
        pl.col("slow.detect_after").replace_strict(delays, return_dtype=pl.Float64).alias("detect_after_s"),
        *kept,
    )
