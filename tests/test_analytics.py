"""ETTR arithmetic: closed form, Young-Daly, ETTR over time, the loss breakdown."""

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.analysis.analytics import (
    LOSS_CATEGORIES,
    _coverage,
    closed_form_ettr,
    ettr_timeline,
    loss_breakdown,
    young_daly_interval,
)


def _attempts(rows):
    return pl.DataFrame(
        rows,
        schema={
            "job_id": pl.String,
            "attempt": pl.Int32,
            "start_s": pl.Float64,
            "end_s": pl.Float64,
            "end_reason": pl.String,
            "lost_work_s": pl.Float64,
        },
        orient="row",
    )


def _checkpoints(rows):
    return pl.DataFrame(
        rows, schema={"job_id": pl.String, "start_s": pl.Float64, "end_s": pl.Float64}, orient="row"
    )


def test_closed_form_and_young_daly_match_hand_arithmetic():
    est = closed_form_ettr(
        gpus=16384,
        rate_per_1000_node_days=419 / 54 / 2048 * 1000,
        checkpoint_interval_s=300,
        checkpoint_write_s=3.3,
        restart_overhead_s=600,
    )
    rate = 419 / 54 / 86400
    assert est.mttf_s == pytest.approx(1 / rate)
    assert est.ettr == pytest.approx((1 - rate * (600 + 150)) / (1 + 3.3 / 300))
    # Daly's worked example (reference README §3): w = 5 min, MTBF 24 h -> about 120 min (first order)
    assert young_daly_interval(300, 86400) / 60 == pytest.approx(120, rel=0.03)
    assert math.isinf(young_daly_interval(10, math.inf))


def test_ettr_timeline_exact_small_trace():
    attempts = _attempts(
        [
            ("j", 1, 0.0, 40.0, "faulty_gpu", 10.0),
            ("j", 2, 50.0, 100.0, "end_of_run", 0.0),
            ("other", 1, 0.0, 100.0, "end_of_run", 0.0),
        ]
    )
    ckpts = _checkpoints([("j", 10.0, 12.0), ("j", 22.0, 24.0), ("j", 60.0, 62.0), ("other", 0.0, 50.0)])
    tl = ettr_timeline(attempts, ckpts, "j", 50.0, 100.0)
    assert tl["t_s"].to_list() == [0.0, 50.0]
    # bucket 1: 40 s held, minus 4 s of checkpoints, minus the 10 s lost tail -> 26 of 50
    assert tl["ettr"].to_list() == pytest.approx([0.52, 0.96])
    assert tl["ettr_cumulative"].to_list() == pytest.approx([0.52, 0.74])


def test_ettr_timeline_before_the_job_starts_is_null():
    attempts = _attempts([("j", 1, 30.0, 60.0, "end_of_run", 0.0)])
    tl = ettr_timeline(attempts, _checkpoints([]), "j", 20.0, 60.0)
    # the first bucket ends before the start; the second holds 10 s of the job, all productive
    assert tl["ettr"].to_list() == [None, 1.0, 1.0]
    assert tl["ettr_cumulative"].to_list() == [None, 1.0, 1.0]
    tl = ettr_timeline(attempts, _checkpoints([]), "missing", 20.0, 60.0)
    assert tl["ettr"].null_count() == 3


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1000), st.floats(0, 200)), max_size=30),
    st.lists(st.floats(0, 1300), min_size=1, max_size=20),
)
def test_coverage_equals_the_measure_of_the_union(intervals, times):
    starts = np.array([a for a, _ in intervals])
    ends = np.array([a + length for a, length in intervals])
    at = np.array(times)
    got = _coverage(starts, ends, at)
    grid = np.linspace(0, 1300, 130001)  # brute force on a fine grid (10 ms steps)
    covered = np.zeros_like(grid, dtype=bool)
    for a, b in zip(starts, ends, strict=True):
        covered |= (grid >= a) & (grid < b)
    expected = np.array([covered[grid < t].sum() * 0.01 for t in at])
    assert got == pytest.approx(expected, abs=0.02 * (len(intervals) + 1))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(1, 500), st.floats(0, 1), st.floats(0, 100)), min_size=1, max_size=15))
def test_ettr_timeline_stays_in_0_1_and_ends_at_total_productive_share(parts):
    rows, ckpts, t = [], [], 0.0
    productive = 0.0
    for i, (length, lost_share, gap) in enumerate(parts):
        lost = length * lost_share
        rows.append(("j", i + 1, t, t + length, "x", lost))
        productive += length - lost
        t += length + gap
    tl = ettr_timeline(_attempts(rows), _checkpoints(ckpts), "j", 37.0, t)
    values = tl["ettr"].drop_nulls().to_numpy()
    assert ((values >= -1e-9) & (values <= 1 + 1e-9)).all()
    assert tl["ettr_cumulative"][-1] == pytest.approx(productive / t, abs=1e-6)


def test_loss_breakdown_reads_the_summary():
    summary = {
        "job": {
            "losses_gpu_hours": {
                "lost_work": 10.0,
                "restart": 5.0,
                "checkpoint": 2.0,
                "waiting_for_spares": 0.0,
            },
            "losses_usd": {"lost_work": 25.0, "restart": 12.5, "checkpoint": 5.0, "waiting_for_spares": 0.0},
        }
    }
    frame = loss_breakdown(summary)
    assert frame["category"].to_list() == list(LOSS_CATEGORIES)
    # a summary stored before the degraded and slowdown buckets existed (or of a run without fail-slow episodes)
    # reads them as zero
    assert frame["gpu_hours"].to_list() == [10.0, 5.0, 2.0, 0.0, 0.0, 0.0]
    assert frame["usd"].to_list() == [25.0, 12.5, 5.0, 0.0, 0.0, 0.0]
    assert loss_breakdown({})["gpu_hours"].sum() == 0.0


@pytest.mark.parametrize(
    ("statistic", "df", "p"),
    [(3.841459, 1, 0.05), (18.307038, 10, 0.05), (33.408664, 17, 0.01), (0.0, 5, 1.0), (2.0, 3, 0.5724067)],
)
def test_chi_square_pvalue_matches_tables(statistic, df, p):
    from engine.analysis.analytics import _upper_regularized_gamma

    assert _upper_regularized_gamma(df / 2, statistic / 2) == pytest.approx(p, abs=1e-6)


def test_chi_square_pvalue_of_counts():
    from engine.analysis.analytics import chi_square_pvalue

    assert chi_square_pvalue([10, 10, 10], [10, 10, 10]) == pytest.approx(1.0)
    assert chi_square_pvalue([30, 0, 0], [10, 10, 10]) < 1e-10
