"""Trace parsers: real samples (skipped when absent), hand-made fixtures, line-numbered errors, and
Hypothesis: any input gives a valid frame or a clear GoodputError, never a crash."""

from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import GoodputError
from engine.replay import parse_trace
from engine.replay.formats import JOB_COLUMNS, detect_format
from engine.replay.sacct import expand_hostlist

FIXTURES = Path(__file__).parent / "fixtures" / "replay"


def check_frame(frame: pl.DataFrame) -> None:
    """Every parser's promise: the job columns, typed; ids unique; times ordered; demands non-negative."""
    assert dict(frame.schema) == JOB_COLUMNS
    assert frame["job_id"].null_count() == 0 and not frame["job_id"].is_duplicated().any()
    assert (frame["gpus"] >= 0).all() and frame["submit_s"].null_count() == 0
    started = frame.filter(pl.col("start_s").is_not_null())
    assert (started["start_s"] >= started["submit_s"]).all()
    ended = started.filter(pl.col("end_s").is_not_null())
    assert (ended["end_s"] >= ended["start_s"]).all()


# ----- real samples -----------------------------------------------------------------------------------------


def test_alibaba_openb_pod_list_and_its_cluster(shared_data):
    trace = parse_trace(shared_data / "alibaba-openb" / "openb_pod_list_default.csv")
    check_frame(trace.jobs)
    jobs = trace.jobs
    assert trace.fmt == "openb" and jobs.height == 8152
    raw = pl.read_csv(shared_data / "alibaba-openb" / "openb_pod_list_default.csv")
    # GPU demand kept exactly: num_gpu x gpu_milli / 1000, fractional for shared GPUs
    assert jobs["gpus"].sum() == pytest.approx((raw["num_gpu"] * raw["gpu_milli"]).sum() / 1000)
    assert (
        jobs.filter(pl.col("gpus") < 1)["gpus"].gt(0).sum()
        == raw.filter((pl.col("gpu_milli") < 1000) & (pl.col("gpu_milli") > 0)).height
    )
    assert jobs["start_s"].null_count() == raw["scheduled_time"].null_count() == 897
    assert trace.cluster.height == 1213 and trace.cluster["gpus"].sum() == 6212
    assert set(jobs["priority"].unique()) == {0, 1, 2, 3}


def test_swf_nasa_ipsc_head(shared_data):
    trace = parse_trace(shared_data / "swf" / "NASA-iPSC-1993-head500.swf")
    check_frame(trace.jobs)
    assert trace.fmt == "swf" and trace.jobs.height == 500
    assert trace.notes["header"]["MaxProcs"] == "128"
    assert trace.started_at.timestamp() == 749458803
    first = trace.jobs.row(0, named=True)
    assert (first["job_id"], first["submit_s"], first["gpus"], first["duration_s"]) == (
        "1",
        0.0,
        128.0,
        1451.0,
    )
    assert first["start_s"] == 0.0  # the log has no waits: its submit times are start times


def test_slurm_samples_are_not_sacct(shared_data):
    # sinfo/squeue dumps (node,state / jobid,state) are not accounting traces: a clear error, line 1
    for name in ("sinfo.txt", "squeue.txt"):
        with pytest.raises(GoodputError, match=rf"{name}, line 1: cannot tell the trace format"):
            parse_trace(shared_data / "slurm" / name)


# ----- fixtures ---------------------------------------------------------------------------------------------


def test_goodput_csv_fixture():
    trace = parse_trace(FIXTURES / "small.csv")
    check_frame(trace.jobs)
    rows = trace.jobs.select(
        "job_id", "gpus", "priority", "submit_s", "duration_s", "start_s", "end_s"
    ).rows()
    assert rows == [
        ("a", 16.0, 10, 0.0, 7200.0, 0.0, 7200.0),
        ("b", 8.0, 0, 600.0, 3600.0, 7200.0, 10800.0),
        ("c", 0.5, 5, 1800.0, 2700.0, 1800.0, 4500.0),
        ("d", 4.0, 0, 3600.0, 1800.0, 4500.0, 6300.0),
    ]


def test_sacct_fixture_reads_the_documented_fields_and_skips_steps():
    trace = parse_trace(FIXTURES / "sacct.txt")
    check_frame(trace.jobs)
    jobs = trace.jobs
    assert trace.fmt == "sacct" and trace.notes["steps_skipped"] == 2
    assert jobs["job_id"].to_list() == ["1001", "1002", "1003_1", "1003_2", "1004", "1005"]
    assert jobs["gpus"].to_list() == [16.0, 8.0, 2.0, 2.0, 1.0, 0.0]  # typed gres when no untyped; ReqTRES
    assert jobs["state"].to_list() == ["completed", "failed", "cancelled", "running", "pending", "timeout"]
    assert jobs["nodes"].to_list() == [
        ["gpu001", "gpu002"],
        ["gpu003"],
        ["gpu004"],
        ["gpu004"],
        None,
        ["cpu01"],
    ]
    assert jobs["duration_s"].to_list() == [7200.0, 3600.0, 1800.0, 90000.0, 5400.0, 600.0]
    assert jobs["memory_mb"].to_list()[:3] == [1024000.0, 204800.0, 64000.0]
    assert trace.started_at.isoformat() == "2024-03-01T00:00:00+00:00"


def test_swf_fixture():
    trace = parse_trace(FIXTURES / "small.swf")
    check_frame(trace.jobs)
    assert trace.jobs.select("start_s", "end_s", "state", "gpus").rows() == [
        (10.0, 110.0, "completed", 16.0),
        (5.0, 55.0, "completed", 8.0),
        (20.0, 50.0, "failed", 4.0),
        (None, None, "cancelled", 8.0),
    ]


def test_openb_fixture_with_its_node_list():
    trace = parse_trace(FIXTURES / "openb" / "pods.csv")
    check_frame(trace.jobs)
    assert trace.jobs.select("gpus", "gpu_share", "priority", "state").rows() == [
        (0.5, 500, 2, "running"),
        (0.5, 500, 0, "completed"),
        (8.0, 1000, 3, "failed"),
        (0.0, 1000, 1, "running"),
        (2.0, 1000, 0, "pending"),
    ]
    assert trace.cluster.rows() == [("node-a", 8, "V100M32"), ("node-b", 2, "T4")]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("small.csv", "goodput"), ("sacct.txt", "sacct"), ("small.swf", "swf"), ("openb/pods.csv", "openb")],
)
def test_auto_detection(name, fmt):
    text = (FIXTURES / name).read_text()
    assert detect_format(name, text) == fmt
    assert parse_trace((FIXTURES / name).read_bytes(), name=name).fmt == fmt


def test_an_incidents_file_is_not_a_job_trace():
    # incidents exports are detected, but replayed through the simulator (replay_file), not parsed as jobs
    assert detect_format("x.csv", "incident_id,t_s,cause\n1,0,faulty_gpu\n") == "incidents"
    with pytest.raises(GoodputError, match="replayed by engine.replay.run.replay_file"):
        parse_trace(b"incident_id,t_s,cause\n1,0,faulty_gpu\n", fmt="incidents")


def test_hostlists():
    assert expand_hostlist("gpu[001-003,007],login1") == ["gpu001", "gpu002", "gpu003", "gpu007", "login1"]
    assert expand_hostlist("a[9-10]-ib") == ["a9-ib", "a10-ib"]


# ----- bad input: the file and line named ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            b"job_id,submit,gpus,duration\na,0,8,1h\nb,soon,8,1h\n",
            "line 3: submit must be seconds or a duration",
        ),
        (b"job_id,submit,gpus,duration\na,0,8,1h\na,0,8,1h\n", "line 2: job_id appears more than once"),
        (b"job_id,submit,gpus,duration\n\na,0,-8,1h\n", "line 3: gpus must be a number >= 0"),
        (b"job_id,submit,gpus,duration\na,0,8\n", "line 2: expected 4 ',"),
        (b"job_id,submit,gpus\na,0,8\n", "line 1: the goodput CSV header lacks column(s) duration"),
        (b"job_id,submit,gpus,duration,start,end\na,10,8,1h,5,20\n", "line 2: start is before submit"),
        (
            b"JobID|Submit|Start|End|State|AllocTRES\n1|2024-03-01T00:00:00|Unknown|Unknown|PENDING|\n"
            b"2|yesterday|Unknown|Unknown|PENDING|\n",
            "line 3: Submit is not a YYYY-MM-DDTHH:MM:SS time",
        ),
        (
            b"JobID|Submit|Start|End|State|AllocTRES|NodeList\n"
            b"1|2024-03-01T00:00:00|Unknown|Unknown|PENDING||a[1-\n",
            "line 2: NodeList is not Slurm hostlist syntax",
        ),
        (
            b"; Version: 2.2\n1 0 0 10 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n2 0 0 10 4\n",
            "line 3: an SWF job line has 18",
        ),
        (b"; c\n1 0 0 10 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 x\n", "line 2:"),
        (
            b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
            b"scheduled_time\np,1,1,1,2000,,LS,Running,0,10,0\n",
            "line 2: gpu_milli must be at most 1000",
        ),
        (b"\xff\xfe", "line 1: not UTF-8"),
        (b"", "the trace is empty"),
    ],
)
def test_bad_lines_are_named(text, message):
    with pytest.raises(GoodputError) as err:
        parse_trace(text, name="upload.txt")
    assert str(err.value).startswith("upload.txt") and message in str(err.value)


# ----- Hypothesis: never a crash ---------------------------------------------------------------------------

HEADERS = {
    "goodput": "job_id,submit,gpus,duration,priority,start,end\n",
    "sacct": "JobID|JobName|User|Submit|Start|End|State|AllocTRES|NNodes|NodeList|Priority|Elapsed\n",
    "swf": "; Version: 2.2\n",
    "openb": "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time\n",
}
FIELD = st.one_of(
    st.text(alphabet="0123456789-:.T[],|hmsd ", max_size=12),
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "1h",
            "2024-03-01T00:00:00",
            "Unknown",
            "gres/gpu=4",
            "gpu[1-2]",
            "LS",
            "Running",
            "1000",
            "COMPLETED",
            "00:10:00",
            "nan",
            "1e400",
        ]
    ),
    st.text(max_size=6),
)


@st.composite
def trace_text(draw, fmt):
    sep = {"goodput": ",", "sacct": "|", "swf": " ", "openb": ","}[fmt]
    width = {"goodput": 7, "sacct": 12, "swf": 18, "openb": 11}[fmt]
    rows = draw(st.lists(st.lists(FIELD, min_size=width - 1, max_size=width + 1), max_size=6))
    return HEADERS[fmt] + "\n".join(sep.join(r) for r in rows)


@pytest.mark.parametrize("fmt", list(HEADERS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_input_gives_a_frame_or_a_clear_error(fmt, data):
    text = data.draw(trace_text(fmt))
    try:
        trace = parse_trace(text.encode("utf-8", "surrogatepass"), fmt=fmt, name="fuzz")
    except GoodputError as err:
        assert str(err).startswith("fuzz")
    else:
        check_frame(trace.jobs)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_in_auto_mode(blob):
    try:
        trace = parse_trace(blob, name="blob")
    except GoodputError as err:
        assert str(err).startswith("blob")
    else:
        check_frame(trace.jobs)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["", "n1", "n2", "8", "2", "-1", "65", "x", "T4", "96000"]),
            min_size=4,
            max_size=6,
        ),
        max_size=5,
    )
)
def test_any_node_list_gives_a_cluster_or_a_clear_error(tmp_path_factory, rows):
    from engine.replay.openb import NODE_LIST, read_node_list

    path = tmp_path_factory.mktemp("nodes") / NODE_LIST
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\n" + "\n".join(",".join(r) for r in rows) + "\n")
    try:
        cluster = read_node_list(path)
    except GoodputError as err:
        assert str(err).startswith(str(path))
    else:
        assert cluster.height == len(rows) and cluster["gpus"].is_between(0, 64).all()
        assert not cluster["hostname"].is_duplicated().any() and (cluster["hostname"] != "").all()
