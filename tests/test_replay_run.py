"""`goodput replay`: a trace becomes a replay Run in the store, as recorded or re-scheduled."""

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cli import main
from engine.errors import GoodputError
from engine.replay import parse_trace
from engine.replay.run import host_states, read_failures, replay, replay_file, settings_from
from engine.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "replay"


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def check_host_states(states: pl.DataFrame, n_hosts: int, horizon: float) -> None:
    """Every host covered from 0 to the horizon by back-to-back intervals."""
    assert states["host_id"].n_unique() == n_hosts
    per_host = (
        states.sort("host_id", "start_s")
        .group_by("host_id", maintain_order=True)
        .agg(
            pl.col("start_s").first().alias("first"),
            pl.col("end_s").last().alias("last"),
            ((pl.col("start_s").shift(-1) - pl.col("end_s")).abs().max()).alias("gap"),
        )
    )
    assert (per_host["first"] == 0).all() and (per_host["last"] == horizon).all()
    assert per_host["gap"].fill_null(0).max() < 1e-9


def test_replay_json_and_the_tables_it_writes(capsys, store_dir):
    code, out, err = run_cli(
        capsys, "replay", str(FIXTURES / "small.csv"), "--store", str(store_dir), "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert {"run_id", "jobs", "gpus", "days", "wait_mean_s", "wait_p95_s", "utilization"} <= set(result)
    assert result["jobs"] == 4 and result["format"] == "goodput" and result["mode"] == "rescheduled"
    store = Store(store_dir)
    info = store.info(result["run_id"])
    assert info.kind == "replay"
    jobs = store.table(result["run_id"], "jobs")
    assert jobs.height == 4 and set(jobs["state"]) == {"completed"}
    # peak recorded use is 24 GPUs (a:16 + c:0.5 + d:4 rounded to hosts) -> 3 hosts of 8
    assert result["gpus"] == 24 and result["hosts"] == 3
    attempts = store.table(result["run_id"], "job_attempts")
    assert attempts.height == 4 and attempts["hosts"].list.len().min() >= 1
    waits = store.table(result["run_id"], "job_waits")
    assert set(waits["reason"]) <= {"no_capacity", "fragmentation", "priority", "failed_hosts"}
    states = store.table(result["run_id"], "host_states")
    check_host_states(states, 3, info.duration_s)
    assert {"running", "healthy"} >= set(states["state"])


def test_rescheduled_small_trace_is_exact():
    trace = parse_trace(FIXTURES / "small.csv")
    run = replay(trace, settings_from(["replay.hosts=3"]))
    jobs = run.tables["jobs"].select("job_id", "start_s", "end_s", "wait_reason").rows()
    # 3 hosts of 8: a (16 GPUs) takes hosts 0-1 at 0; b (8) the third host at 10 min; c (0.5 GPU) and d (4)
    # find no free GPU at all until b ends at 4200 s, then share host 2
    assert jobs == [
        ("a", 0.0, 7200.0, None),
        ("b", 600.0, 4200.0, None),
        ("c", 4200.0, 6900.0, "no_capacity"),
        ("d", 4200.0, 6000.0, "no_capacity"),
    ]
    assert run.tables["job_waits"].rows() == [
        ("c", 1800.0, 4200.0, "no_capacity"),
        ("d", 3600.0, 4200.0, "no_capacity"),
    ]
    assert run.tables["job_attempts"]["hosts"].to_list() == [[0, 1], [2], [2], [2]]


def test_recorded_mode_keeps_the_trace_times():
    trace = parse_trace(FIXTURES / "small.csv")
    run = replay(trace, settings_from([], mode="recorded"))
    jobs = run.tables["jobs"]
    assert jobs.select("start_s", "end_s").rows() == trace.jobs.select("start_s", "end_s").rows()
    assert run.summary["wait_mean_s"] == pytest.approx((0 + 6600 + 0 + 900) / 4)


def test_sacct_recorded_replay_uses_the_node_lists():
    trace = parse_trace(FIXTURES / "sacct.txt")
    run = replay(trace, settings_from([], mode="recorded"))
    hosts = run.tables["hosts"]["hostname"].to_list()
    assert hosts == ["cpu01", "gpu001", "gpu002", "gpu003", "gpu004"]
    # GPU nodes get the trace's largest per-node count (16 GPUs on 2 nodes: 8); the CPU node none
    assert run.tables["gpus"].group_by("host_id").len().sort("host_id").rows() == [
        (1, 8),
        (2, 8),
        (3, 8),
        (4, 8),
    ]
    attempts = run.tables["job_attempts"]
    by_job = dict(zip(attempts["job_id"].to_list(), attempts["hosts"].to_list(), strict=True))
    assert by_job["1001"] == [1, 2] and by_job["1002"] == [3] and by_job["1005"] == [0]
    assert "1004" not in by_job  # never started
    assert dict(zip(attempts["job_id"], attempts["end_reason"], strict=True))["1003_2"] == "end_of_run"
    assert run.tables["jobs"].height == 6


def test_failures_requeue_jobs_and_show_as_down_hosts(tmp_path):
    failures = tmp_path / "failures.csv"
    failures.write_text("t,host,down_for,cause\n10m,0,1h,faulty_gpu\n")
    trace = parse_trace(FIXTURES / "small.csv")
    run = replay(trace, settings_from(["replay.hosts=3", f"replay.failures={failures}"]))
    attempts = run.tables["job_attempts"]
    hit = attempts.filter(pl.col("end_reason") == "faulty_gpu")
    assert hit["job_id"].to_list() == ["a"] and hit["lost_work_s"].to_list() == [600.0]
    states = run.tables["host_states"]
    assert states.filter(pl.col("state") == "down").select("host_id", "start_s", "end_s").rows() == [
        (0, 600.0, 4200.0)
    ]
    check_host_states(states, 3, run.duration_s)


def test_whole_alibaba_trace_keeps_every_job_and_its_gpu_demand(shared_data):
    path = shared_data / "alibaba-openb" / "openb_pod_list_default.csv"
    trace = parse_trace(path)
    run = replay(trace, settings_from([]))
    jobs = run.tables["jobs"]
    assert jobs.height == 8152 and jobs["job_id"].to_list() == trace.jobs["job_id"].to_list()
    assert jobs["gpus"].sum() == pytest.approx(trace.jobs["gpus"].sum())
    assert run.summary["jobs"] == 8152 and run.summary["gpus"] == 6212 and run.summary["hosts"] == 1213
    attempts = run.tables["job_attempts"]
    # every pod ran once, to its full length, on one node with the GPUs it asked for
    assert attempts.height == 8152 and set(attempts["end_reason"]) == {"completed"}
    with_gpus = attempts.join(jobs.select("job_id", "gpus"), on="job_id").filter(pl.col("gpus") > 0)
    assert (with_gpus["hosts"].list.len() == 1).all()
    lengths = attempts.join(trace.jobs.select("job_id", "duration_s"), on="job_id")
    assert ((lengths["end_s"] - lengths["start_s"]) - lengths["duration_s"]).abs().max() < 1e-6
    node_gpus = trace.cluster["gpus"].to_numpy()
    host_of = with_gpus["hosts"].list.first().to_numpy()
    assert (node_gpus[host_of] >= with_gpus["gpus"].to_numpy()).all()


def test_whole_alibaba_trace_as_recorded(shared_data):
    trace = parse_trace(shared_data / "alibaba-openb" / "openb_pod_list_default.csv")
    run = replay(trace, settings_from([], mode="recorded"))
    jobs = run.tables["jobs"]
    assert jobs.height == 8152 and jobs["start_s"].null_count() == 897
    assert run.tables["job_attempts"].height == 8152 - 897


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--set", "scheduler.placment=pack"], "unknown replay setting"),
        (["--set", "training.gpus=8"], "not a replay setting"),
        (["--set", "scheduler.backfill=maybe"], "scheduler.backfill: expected true or false"),
        (["--format", "incidents"], "not a readable incidents CSV"),
        (["--preset", "demo"], "only an incidents file is replayed under a preset"),
        (["--format", "sacct"], "lacks column(s)"),
    ],
)
def test_bad_replay_input_exits_2_and_writes_nothing(capsys, store_dir, argv, message):
    code, out, err = run_cli(capsys, "replay", str(FIXTURES / "small.csv"), *argv, "--store", str(store_dir))
    assert code == 2 and out == "" and message in err and err.count("\n") == 1
    assert not Store(store_dir).run_ids()


def test_a_malformed_line_names_file_and_line(capsys, store_dir, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit,gpus,duration\na,0,8,1h\nb,0,eight,1h\n")
    code, out, err = run_cli(capsys, "replay", str(bad), "--store", str(store_dir))
    assert code == 2 and f"{bad}, line 3: gpus must be a number" in err
    assert not Store(store_dir).run_ids()


def test_text_output_and_policies(capsys, store_dir):
    for policy in ("pack", "spread"):
        code, out, _ = run_cli(
            capsys, "replay", str(FIXTURES / "small.swf"), "--policy", policy, "--store", str(store_dir)
        )
        assert code == 0 and f"(swf, rescheduled, {policy})" in out and "utilisation" in out
    assert len(Store(store_dir).run_ids()) == 2


def test_host_states_merge_overlapping_jobs():
    attempts = pl.DataFrame(
        {
            "job_id": ["x", "y", "z"],
            "start_s": [0.0, 5.0, 20.0],
            "end_s": [10.0, 15.0, 30.0],
            "hosts": [[0], [0], [0]],
        },
        schema_overrides={"hosts": pl.List(pl.Int32)},
    )
    outages = pl.DataFrame(schema={"host": pl.Int64, "start_s": pl.Float64, "end_s": pl.Float64})
    states = host_states(attempts, outages, 2, 40.0)
    assert states.rows() == [
        (0, "running", 0.0, 15.0, None),
        (0, "healthy", 15.0, 20.0, None),
        (0, "running", 20.0, 30.0, "z"),
        (0, "healthy", 30.0, 40.0, None),
        (1, "healthy", 0.0, 40.0, None),
    ]


def test_replay_file_takes_an_upload_and_names_it_in_errors():
    data = (FIXTURES / "small.csv").read_bytes()
    run = replay_file(data, sets=["replay.hosts=3"], name="upload.csv")
    assert run.name == "upload.csv" and run.kind == "replay" and run.tables["jobs"].height == 4
    with pytest.raises(GoodputError, match=r"^upload.csv, line 2: gpus"):
        replay_file(b"job_id,submit,gpus,duration\na,0,x,1h\n", name="upload.csv")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["", "0", "5m", "-1", "x", "2", "node-0001", "99", "1h", "faulty_gpu"]),
            min_size=3,
            max_size=5,
        ),
        max_size=5,
    )
)
def test_failure_lists_give_failures_or_a_clear_error(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("f") / "failures.csv"
    path.write_text("t,host,down_for,cause\n" + "\n".join(",".join(r) for r in rows) + "\n")
    hosts = pl.Series(["node-0000", "node-0001", "node-0002"])
    try:
        failures = read_failures(str(path), hosts)
    except GoodputError as err:
        assert str(err).startswith(str(path))
    else:
        assert len(failures.t) == len(rows) and ((failures.host >= 0) & (failures.host < 3)).all()
        assert (failures.t >= 0).all() and (failures.down_for >= 0).all()


def test_the_run_keeps_its_settings_like_a_scenario():
    run = replay_file(
        FIXTURES / "small.csv",
        sets=["replay.hosts=3", "cluster.hosts_per_rack=4", "scheduler.backfill=false"],
        placement="spread",
    )
    assert run.scenario == {
        "replay": {"hosts": 3, "format": "goodput", "file": "small.csv", "mode": "rescheduled"},
        "scheduler": {
            "backfill": False,
            "placement": "spread",
            "preemption": False,
            "backfill_depth": 500,
            "checkpoint_interval": "30m",
        },
        "cluster": {"hosts_per_rack": 4},
    }
    assert run.tables["hosts"]["rack_id"].to_list() == [0, 0, 0]


def test_failures_need_the_rescheduled_mode(tmp_path):
    failures = tmp_path / "failures.csv"
    failures.write_text("t,host,down_for\n0,0,1h\n")
    with pytest.raises(GoodputError, match="need --mode rescheduled"):
        replay_file(FIXTURES / "small.csv", sets=[f"replay.failures={failures}"], mode="recorded")


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3600),
            st.sampled_from([0, 0.25, 0.5, 1, 4, 8, 16, 24]),
            st.integers(1, 7200),
            st.integers(0, 3),
            st.sampled_from(["requeue", "restart"]),
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(["pack", "spread"]),
    st.booleans(),
)
def test_any_workload_replays_into_a_complete_run(tmp_path_factory, rows, placement, preemption):
    text = "job_id,submit,gpus,duration,priority,on_failure\n" + "\n".join(
        f"j{i},{s},{g},{d},{p},{f}" for i, (s, g, d, p, f) in enumerate(rows)
    )
    run = replay_file(
        text.encode(),
        sets=["replay.hosts=3", f"scheduler.preemption={str(preemption).lower()}"],
        placement=placement,
        name="w.csv",
    )
    jobs = run.tables["jobs"]
    assert jobs.height == len(rows) and jobs["gpus"].sum() == pytest.approx(sum(r[1] for r in rows))
    assert set(jobs["state"]) == {"completed"}  # nothing here is bigger than 3 hosts of 8
    check_host_states(run.tables["host_states"], 3, run.duration_s)
    store = Store(tmp_path_factory.mktemp("store"))
    run_id = store.write_run(run)
    assert store.table(run_id, "jobs").height == len(rows)
