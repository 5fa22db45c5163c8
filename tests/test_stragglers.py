"""Straggler analysis (issue 24 item 3): the what-if slowdown S of ByteDance's OSDI'25 study, its attribution,
the persistent straggler and the kind of slowness; `goodput ingest step-times` and `goodput stragglers`.

Exact figures come from tiny pipelines made by hand (tests/fixtures/step_times.py), worked out on paper in
the comments; the published S of ByteDance's trace ST (1.179) is reproduced from ../shared/data.
"""

import io
import json

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import limits
from engine.analysis.pipeline_sim import schedule
from engine.analysis.step_timeline import layout
from engine.analysis.stragglers import analyse
from engine.cli import main
from engine.errors import GoodputError
from engine.ingest.sources import Source
from engine.ingest.step_times import ingest_step_times, read_step_times
from tests.fixtures.step_times import GATHER_S, OPTIMIZER_S, REDUCE_S, pipeline_ops, to_csv

PUBLISHED_ST_SLOWDOWN = 1.179  # github.com/ByteDance-Seed/StragglerAnalysis data/result-ST.json, 1.1787


def _analyse(frame: pl.DataFrame):
    return analyse(layout(frame))


# ----- exact results on hand-made pipelines --------------------------------------------------------------------


def test_no_slowness_is_a_slowdown_of_exactly_one():
    r = _analyse(pipeline_ops())
    assert r.slowdown == 1.0
    assert r.waste == 0.0
    assert r.persistent_straggler is None
    assert r.kind == "none"
    # 2 stages, 2 microbatches, f = 1, b = 2: the 1F1B pipeline ends at 3f + 3b = 9 (stage 0's last backward)
    assert r.step_time_s == pytest.approx(GATHER_S + 9.0 + REDUCE_S + OPTIMIZER_S)


def test_one_slow_worker_in_every_step_is_the_persistent_straggler():
    r = _analyse(pipeline_ops(slow={(1, 1): 2.0}))
    # recorded: rank 1's stage 1 runs f = 2, b = 4: its stage 0 ends at 15 (worked out in the 1F1B order:
    # s0 F0 [0,1], s1 F0 [1,3], s0 F1 [1,2], s1 B0 [3,7], s0 B0 [7,9], s1 F1 [7,9], s1 B1 [9,13], s0 B1 [13,15]).
    # typical: f = (6 x 1 + 2 x 2) / 8 = 1.25, b = 2.5, so 3f + 3b = 11.25.
    head_tail = GATHER_S + REDUCE_S + OPTIMIZER_S
    assert r.slowdown == pytest.approx((15.0 + head_tail) / (11.25 + head_tail), rel=1e-12)
    assert r.waste == pytest.approx(1 - 1 / r.slowdown)
    assert r.persistent_straggler is not None
    assert (r.persistent_straggler.dp_rank, r.persistent_straggler.stage) == (1, 1)
    assert r.persistent_straggler.share_of_steps == 1.0
    assert r.kind == "worker" and r.hardware_fault_suspected
    worst = max(((d, s) for d in range(2) for s in range(2)), key=lambda w: r.by_worker[w[0]][w[1]])
    assert worst == (1, 1)
    # a rank alone among typical ones cannot finish before them (they meet at the reduce-scatter)
    assert r.by_dp_rank[1] > 1.0 and r.by_dp_rank[0] == pytest.approx(1.0)


def test_a_uniformly_slower_stage_is_a_stage_imbalance_not_a_straggler():
    r = _analyse(pipeline_ops(stage_factor={1: 2.0}))
    # both ranks as rank 1 above (stage 0 ends at 15); typical f = 1.5, b = 3: 3f + 3b = 13.5
    head_tail = GATHER_S + REDUCE_S + OPTIMIZER_S
    assert r.slowdown == pytest.approx((15.0 + head_tail) / (13.5 + head_tail), rel=1e-12)
    assert r.persistent_straggler is None
    assert r.kind == "stage_imbalance" and not r.hardware_fault_suspected
    assert r.by_stage[1] > 1.0 > r.by_stage[0]
    assert r.by_dp_rank[0] == pytest.approx(r.by_dp_rank[1])
    assert r.by_optype["optimizer"] == 1.0  # every optimizer as typical: recorded is the same
    assert r.by_optype["forward-compute"] > 1.0 and r.by_optype["backward-compute"] > 1.0


def test_one_slow_worker_without_data_parallel_peers_is_not_called_a_straggler():
    # with one dp rank a slow worker and a slow stage look the same: no persistent straggler is claimed
    r = _analyse(pipeline_ops(dp=1, slow={(0, 1): 2.0}))
    assert r.slowdown > 1.05
    assert r.persistent_straggler is None
    assert r.kind == "stage_imbalance"


def test_microbatches_of_unequal_length_are_a_sequence_imbalance():
    rng = np.random.default_rng(1)
    factors = rng.uniform(0.5, 1.5, (20, 2, 4, 8))
    r = _analyse(pipeline_ops(stages=4, microbatches=8, steps=20, microbatch_factor=factors))
    assert r.slowdown > 1.05
    assert r.persistent_straggler is None
    assert r.kind == "sequence_imbalance" and not r.hardware_fault_suspected


def test_a_slow_worker_that_moves_from_step_to_step_is_transient():
    steps, dp, stages = 12, 4, 2
    factors = np.ones((steps, dp, stages, 1))
    for n in range(steps):  # a different worker 2x slow each step
        factors[n, n % dp, (n // dp) % stages, 0] = 2.0
    r = _analyse(pipeline_ops(dp=dp, stages=stages, microbatches=1, steps=steps, microbatch_factor=factors))
    assert r.slowdown > 1.05
    assert r.persistent_straggler is None
    assert r.kind == "transient"


def test_schedule_is_megatron_1f1b():
    # the order each stage of ByteDance's trace ST ran (4 stages, 4 microbatches)
    order = schedule(4, 4, backward=True)
    by_stage = {s: [("FB"[kind], k) for kind, st_, k in order if st_ == s] for s in range(4)}
    assert by_stage[0] == [("F", 0), ("F", 1), ("F", 2), ("F", 3), ("B", 0), ("B", 1), ("B", 2), ("B", 3)]
    assert by_stage[1] == [("F", 0), ("F", 1), ("F", 2), ("B", 0), ("F", 3), ("B", 1), ("B", 2), ("B", 3)]
    assert by_stage[3] == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2), ("F", 3), ("B", 3)]


def test_microbatches_follow_start_order_where_mb_id_is_not_given():
    frame = pipeline_ops(slow={(1, 1): 2.0})
    assert (
        _analyse(frame.with_columns(pl.lit(None, pl.Int64).alias("mb_id"))).slowdown
        == _analyse(frame).slowdown
    )


# ----- the published trace ---------------------------------------------------------------------------------------


def test_trace_st_reproduces_the_published_slowdown(shared_data):
    path = shared_data / "step-traces" / "trace-ST.parquet"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    run = ingest_step_times([path])
    r = analyse(layout(run.tables["step_ops"]))
    assert r.slowdown == pytest.approx(PUBLISHED_ST_SLOWDOWN, rel=0.05)
    assert r.slowdown == pytest.approx(1.1787, rel=0.001)  # as close as it is today
    assert r.persistent_straggler is None
    assert r.kind == "stage_imbalance"
    assert max(range(4), key=lambda s: r.by_stage[s]) == 3  # the long last stage
    assert r.by_stage[3] == pytest.approx(1.2323, rel=0.001)  # result-ST.json blocking_decompose_by_stage
    assert r.by_optype["forward-compute"] == pytest.approx(1.0875, rel=0.001)  # ... _by_optype
    assert list(r.by_optype)[:2] == ["forward-compute", "backward-compute"]


# ----- the commands ----------------------------------------------------------------------------------------------


def _ingest(tmp_path, capsys, data: bytes, name: str = "ops.csv") -> tuple[int, str, str]:
    path = tmp_path / name
    path.write_bytes(data)
    code = main(["ingest", "step-times", str(path), "--store", str(tmp_path / "store"), "--json"])
    out, err = capsys.readouterr()
    return code, out, err


def _runs(tmp_path) -> list:
    runs = tmp_path / "store" / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def test_ingest_then_stragglers_json(tmp_path, capsys):
    code, out, _ = _ingest(tmp_path, capsys, to_csv(pipeline_ops(slow={(1, 1): 2.0})))
    assert code == 0
    ingested = json.loads(out)
    assert ingested["ops"] == pipeline_ops().height and ingested["workers"] == 4
    code = main(["stragglers", "--run", ingested["run_id"], "--store", str(tmp_path / "store"), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {"slowdown", "waste", "persistent_straggler"} <= set(result)
    assert result["persistent_straggler"]["dp_rank"] == 1 and result["persistent_straggler"]["stage"] == 1
    assert result["waste"] == pytest.approx(1 - 1 / result["slowdown"])
    assert main(["stragglers", "--run", ingested["run_id"], "--store", str(tmp_path / "store")]) == 0
    text = capsys.readouterr().out
    assert "persistent straggler: dp_rank 1, stage 1" in text and "kind: worker" in text


def test_ingest_parquet_and_null_straggler_in_json(tmp_path, capsys):
    buffer = io.BytesIO()
    pipeline_ops().write_parquet(buffer)
    code, out, _ = _ingest(tmp_path, capsys, buffer.getvalue(), "ops.parquet")
    assert code == 0
    run_id = json.loads(out)["run_id"]
    main(["stragglers", "--run", run_id, "--store", str(tmp_path / "store"), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["slowdown"] == 1.0 and result["waste"] == 0.0 and result["persistent_straggler"] is None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda f: f.drop("duration"), "no column 'duration'"),
        (
            lambda f: f.filter(~((pl.col("step") == 11) & (pl.col("dp_rank") == 1) & (pl.col("stage") == 0))),
            "step 11 has no operation of dp_rank 1, stage 0",
        ),
        (lambda f: pl.concat([f, f.head(2)]), "twice"),
        (
            lambda f: f.filter(
                ~(
                    (pl.col("optype") == "backward-compute")
                    & (pl.col("mb_id") == 1)
                    & (pl.col("step") == 10)
                    & (pl.col("dp_rank") == 0)
                    & (pl.col("stage") == 0)
                )
            ),
            "missing",
        ),
        (
            lambda f: f.with_columns(
                pl.when(pl.int_range(pl.len()) == 5)
                .then(-1.0)
                .otherwise(pl.col("duration"))
                .alias("duration")
            ),
            "column 'duration'",
        ),
    ],
)
def test_bad_timelines_are_refused_whole(tmp_path, capsys, edit, message):
    code, _, err = _ingest(tmp_path, capsys, to_csv(edit(pipeline_ops())))
    assert code == 2
    assert err.startswith("goodput: error: ") and message in err and "ops.csv" in err
    assert len(err.strip().splitlines()) == 1
    assert _runs(tmp_path) == []


def test_interleaved_pipeline_stages_are_refused_not_misread(tmp_path, capsys):
    frame = pipeline_ops().with_columns(mc=pl.when(pl.col("mb_id") == 1).then(1).otherwise(0))
    code, _, err = _ingest(tmp_path, capsys, to_csv(frame))
    assert code == 2 and "column 'mc'" in err and "interleaved" in err
    assert _runs(tmp_path) == []


def test_ingest_prints_what_it_read_for_people(tmp_path, capsys):
    path = tmp_path / "ops.csv"
    path.write_bytes(to_csv(pipeline_ops()))
    assert main(["ingest", "step-times", str(path), "--store", str(tmp_path / "store")]) == 0
    out = capsys.readouterr().out
    # 3 steps x 4 workers x (4 computes, an all-gather, a reduce-scatter, the optimizer)
    assert "84 operations of 4 workers (2 dp ranks x 2 stages), 3 steps of 2 microbatches" in out
    assert "goodput stragglers --run" in out


def test_a_value_that_is_not_a_number_is_named_by_line(tmp_path, capsys):
    lines = to_csv(pipeline_ops()).decode().splitlines()
    cells = lines[4].split(",")
    cells[6] = "fast"  # duration of the 4th row: line 5 of the file
    lines[4] = ",".join(cells)
    code, _, err = _ingest(tmp_path, capsys, ("\n".join(lines) + "\n").encode())
    assert code == 2 and "line 5" in err and "'duration'" in err and "'fast'" in err
    assert _runs(tmp_path) == []


def test_stragglers_of_a_run_without_a_timeline_is_a_clear_error(tmp_path, capsys):
    code = main(["stragglers", "--run", "sim-nope", "--store", str(tmp_path / "store")])
    assert code == 2 and "no run 'sim-nope'" in capsys.readouterr().err


# ----- bounds ----------------------------------------------------------------------------------------------------


def test_rows_are_counted_against_the_limit_before_they_are_parsed(monkeypatch):
    monkeypatch.setattr(limits, "MAX_STEP_OPS", 10)
    with pytest.raises(GoodputError, match="over Goodput's limit of 10"):
        read_step_times(Source("ops.csv", to_csv(pipeline_ops())))


def test_a_huge_stage_number_is_refused_before_anything_is_allocated():
    frame = pipeline_ops().with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(10**9).otherwise(pl.col("stage")).alias("stage")
    )
    with pytest.raises(GoodputError, match="column 'stage'.*over Goodput's limit"):
        layout(frame, "ops.csv")


@pytest.mark.parametrize(
    ("limit", "value", "message"),
    [
        ("MAX_TIMELINE_STEPS", 2, "ops.csv: steps: 3 is over"),
        ("MAX_PHASE_SLOTS", 1, "kinds of op before or after"),
    ],
)
def test_steps_and_kinds_of_op_are_bounded(monkeypatch, limit, value, message):
    monkeypatch.setattr(limits, limit, value)
    with pytest.raises(GoodputError, match=message):
        layout(pipeline_ops(), "ops.csv")


def test_a_sparse_timeline_that_would_need_huge_arrays_is_refused_before_they_are_made():
    # two rows naming dp rank 200,000 and stage 1,000 of 1,000 steps: 2e11 cells, never allocated
    frame = pipeline_ops(dp=1, stages=1, steps=1).head(2)
    frame = pl.concat(
        [
            frame,
            frame.with_columns(
                dp_rank=pl.lit(200_000, pl.Int64), stage=pl.lit(1_000, pl.Int64), step=pl.lit(1_010, pl.Int64)
            ),
        ]
    )
    with pytest.raises(GoodputError, match="steps x dp ranks x stages.*over Goodput's limit"):
        layout(frame, "ops.csv")


def test_stragglers_of_a_run_without_a_timeline_says_how_to_make_one(tmp_path, capsys):
    from engine.store import Store
    from engine.store.run import UNKNOWN_START, Run

    run_id = Store(tmp_path / "store").write_run(
        Run(kind="ingest", name="empty", started_at=UNKNOWN_START, duration_s=0.0)
    )
    assert main(["stragglers", "--run", run_id, "--store", str(tmp_path / "store")]) == 2
    assert "has no op-level timeline" in capsys.readouterr().err


# ----- parser invariants (Hypothesis) ----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_any_bytes_are_read_or_refused_with_a_one_line_error(data):
    try:
        frame = read_step_times(Source("junk.csv", data))
        layout(frame, "junk.csv")
    except GoodputError as err:
        assert "\n" not in str(err) and "junk.csv" in str(err)


@settings(max_examples=20, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(["csv", "parquet"]))
def test_row_order_and_format_do_not_change_the_result(rnd, fmt):
    frame = pipeline_ops(slow={(0, 1): 1.5})
    order = list(range(frame.height))
    rnd.shuffle(order)
    shuffled = frame[order]
    buffer = io.BytesIO()
    if fmt == "csv":
        data = to_csv(shuffled)
    else:
        shuffled.write_parquet(buffer)
        data = buffer.getvalue()
    read = read_step_times(Source(f"ops.{fmt}", data))
    assert read.height == frame.height
    assert _analyse(read).slowdown == pytest.approx(_analyse(frame).slowdown, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(1, 5),
    st.integers(1, 3),
    st.floats(0.25, 4.0),
    st.floats(0.25, 4.0),
)
def test_a_job_without_stragglers_has_a_slowdown_of_one(dp, stages, microbatches, steps, forward, backward):
    frame = pipeline_ops(dp, stages, microbatches, steps, forward=forward, backward=backward)
    r = _analyse(frame)
    assert r.slowdown == pytest.approx(1.0, abs=1e-12)
    assert r.persistent_straggler is None and r.kind == "none"


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.data())
def test_a_slower_op_never_makes_the_recorded_step_faster(dp, stages, microbatches, data):
    factors = np.ones((1, dp, stages, microbatches))
    base = _analyse(pipeline_ops(dp, stages, microbatches, 1, microbatch_factor=factors)).step_time_s
    cell = tuple(data.draw(st.integers(0, size - 1)) for size in (1, dp, stages, microbatches))
    factors[cell] = data.draw(st.floats(1.0, 5.0))
    slower = _analyse(pipeline_ops(dp, stages, microbatches, 1, microbatch_factor=factors)).step_time_s
    assert slower >= base - 1e-12
