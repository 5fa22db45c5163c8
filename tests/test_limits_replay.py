"""Bounds on every size a trace or incidents file states (engine/limits.py, engine/replay/bounds.py): a 56-byte
CSV asking for 100,000,000 GPUs, an SWF job of as many processors, a sacct gres count, an openb num_gpu, an
incidents JSON nested 200,000 deep or whose scenario asks for 100,000,000 GPUs. Each is refused before anything
the size of the request is made, with one line naming the file, line or key, the value and the limit: the CLI's
`goodput: error:` and exit 2 with nothing stored, and the Data page's upload with the same line."""

import json
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import uploads
from engine import limits
from engine.cli import main
from engine.errors import GoodputError
from engine.replay import parse_trace
from engine.replay.bounds import longest_line
from engine.replay.incidents import read_incidents_bytes
from engine.replay.run import replay_file
from engine.replay.sacct import expand_hostlist
from engine.store import Store

BIG = 100_000_000
SACCT_HEADER = "JobID|Submit|Start|End|State|AllocTRES|NNodes|NodeList\n"
OPENB_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time\n"
)


def goodput_csv(gpus, hosts="") -> str:
    return f"job_id,submit,gpus,duration,hosts\nj1,0,{gpus},1h,{hosts}\n"


def swf(procs) -> str:
    return f"1 0 0 3600 {procs} -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1 -1\n"


def sacct(gpus, nodes=1, node_list="n1") -> str:
    return (
        SACCT_HEADER + f"1|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T01:00:00|COMPLETED|"
        f"cpu=1,gres/gpu={gpus}|{nodes}|{node_list}\n"
    )


def openb(num_gpu) -> str:
    return OPENB_HEADER + f"p1,1000,1024,{num_gpu},1000,A100,BE,Succeeded,0,3600,0\n"


# (format, text of one job asking for n GPUs, the line that job is on)
FORMATS = {"goodput": (goodput_csv, 2), "swf": (swf, 1), "sacct": (sacct, 2), "openb": (openb, 2)}


def run_cli(capsys, *argv) -> tuple[int, list[str]]:
    code = main(list(argv))
    return code, capsys.readouterr().err.splitlines()


def refused(capsys, tmp_path, argv, *named) -> str:
    """Exit 2 with exactly one `goodput: error:` line naming each of `named`; the store is left empty."""
    store = tmp_path / "store"
    code, err = run_cli(capsys, *argv, "--store", str(store))
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("goodput: error: "), err
    for word in named:
        assert word in err[0], (word, err[0])
    assert not store.exists() or Store(store).run_ids() == []
    return err[0].removeprefix("goodput: error: ")


def peak_bytes(work) -> tuple[BaseException | None, int]:
    """(what `work()` raised, the peak Python/NumPy memory it took)."""
    tracemalloc.start()
    raised = None
    try:
        work()
    except Exception as err:  # noqa: BLE001 - the caller asserts what it expects
        raised = err
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return raised, peak


# ----- the CLI on each format --------------------------------------------------------------------------------

# A refusal comes while reading (well under a second here); building what these inputs ask for (10^8 GPUs,
# 300,000 hosts) would not. A bound with room for a busy machine: a limit, not a benchmark (bench/ times things).
REFUSED_WITHIN_S = 30

CASES = {
    "goodput.csv": (goodput_csv(BIG), ["goodput.csv, line 2", "gpus 100,000,000", "524,288"]),
    "hosts.csv": (goodput_csv(8, BIG), ["hosts.csv, line 2", "hosts 100,000,000", "262,144"]),
    "late.csv": (
        "job_id,submit,gpus,duration\nj1,0,8,1h\nj2,99999999999999999,8,1h\n",
        ["late.csv, line 3", "submit", "315,360,000"],
    ),
    "long.csv": ("job_id,submit,gpus,duration\nj1,0,8,99999999999999d\n", ["long.csv, line 2", "duration"]),
    "jobs.swf": (swf(BIG), ["jobs.swf, line 1", "processors (field 5, or 8) 100,000,000", "524,288"]),
    "header.swf": (
        "; MaxProcs: 100000000000\n" + swf(8),
        ["header.swf", "MaxProcs: 100000000000", "524,288"],
    ),
    "gres.sacct": (sacct(BIG), ["gres.sacct, line 2", "AllocTRES gres/gpu 100,000,000", "524,288"]),
    "nnodes.sacct": (sacct(8, BIG), ["nnodes.sacct, line 2", "NNodes 100,000,000", "262,144"]),
    "nodelist.sacct": (
        sacct(8, 3, "a[0-99999],b[0-99999],c[0-99999]"),
        ["nodelist.sacct, line 2", "NodeList names more than", "262,144 hosts"],
    ),
    "pods.csv": (openb(BIG), ["pods.csv, line 2", "num_gpu 100,000,000", "524,288"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_replay_refuses_counts_over_the_limits(capsys, tmp_path, name):
    text, named = CASES[name]
    path = tmp_path / name
    path.write_text(text)
    started = time.perf_counter()
    refused(capsys, tmp_path, ["replay", str(path)], *named)
    # refused while reading, not after building what the input asks for
    assert time.perf_counter() - started < REFUSED_WITHIN_S


def test_the_56_byte_csv_and_its_upload_give_the_same_line(capsys, tmp_path):
    data = b"job_id,submit,gpus,duration\nj1,0,100000000,1h\n"
    path = tmp_path / "bomb.csv"
    path.write_bytes(data)
    line = refused(capsys, tmp_path, ["replay", str(path)])
    assert line == (
        f"{path}, line 2: gpus 100,000,000 is over Goodput's limit of 524,288 GPUs for one job "
        "(engine/limits.py): 'j1,0,100000000,1h'"
    )
    store = Store(tmp_path / "uploads")
    with pytest.raises(GoodputError) as upload:
        uploads.import_trace(store, ("bomb.csv", data))
    assert str(upload.value) == line.replace(str(path), "bomb.csv")
    assert store.run_ids() == []


def test_the_cluster_a_trace_implies_is_bounded(capsys, tmp_path):
    # two jobs of 400,000 GPUs at once: each within the limit, the cluster they need (800,000) is not
    both = tmp_path / "both.csv"
    both.write_text("job_id,submit,gpus,duration,start,end\na,0,400000,1h,0,1h\nb,0,400000,1h,0,1h\n")
    refused(
        capsys,
        tmp_path,
        ["replay", str(both), "--mode", "recorded"],
        "both.csv: the cluster from its peak use of GPUs",
        "800,000 GPUs",
        "524,288",
    )
    small = tmp_path / "small.csv"
    small.write_text(goodput_csv(8))
    refused(
        capsys,
        tmp_path,
        ["replay", str(small), "--set", f"replay.hosts={BIG}"],
        "replay.hosts: 100,000,000 is over Goodput's limit of 262,144",
    )
    refused(
        capsys,
        tmp_path,
        ["replay", str(small), "--set", "replay.hosts=262144"],
        "the cluster from replay.hosts has 2,097,152 GPUs",
        "524,288",
    )
    refused(
        capsys,
        tmp_path,
        ["replay", str(small), "--set", "replay.gpus_per_host=1000"],
        "replay.gpus_per_host: 1,000 is over Goodput's limit of 72",
    )
    one = tmp_path / "one.sacct"
    one.write_text(sacct(100_000, 1, "n1"))  # 100,000 GPUs on one named node
    refused(
        capsys, tmp_path, ["replay", str(one)], "the nodes its jobs name has 100,000 GPUs on one host", "72"
    )


def test_file_sizes_lines_and_jobs_are_bounded(capsys, tmp_path, monkeypatch):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit,gpus,duration\n" + "".join(f"j{i},0,8,1h\n" for i in range(5)))
    monkeypatch.setattr(limits, "MAX_TRACE_JOBS", 4)
    refused(capsys, tmp_path, ["replay", str(path)], "jobs.csv: 5 jobs", "limit of 4 jobs")
    monkeypatch.setattr(limits, "MAX_TRACE_LINES", 5)
    refused(capsys, tmp_path, ["replay", str(path)], "jobs.csv: 6 lines", "limit of 5 lines")
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", 20)
    wide = tmp_path / "wide.csv"
    wide.write_text("job_id,submit,gpus,duration\nj0,0,8,1h\n")
    refused(capsys, tmp_path, ["replay", str(wide)], "wide.csv, line 1: 27 bytes long", "limit of 20 bytes")
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 30)
    refused(capsys, tmp_path, ["replay", str(path)], "jobs.csv: the trace is larger than", "30 bytes")
    with pytest.raises(GoodputError, match="larger than Goodput's limit of 30 bytes"):
        uploads.import_trace(Store(tmp_path / "up"), ("jobs.csv", path.read_bytes()))


def test_node_list_pairs_are_bounded(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_TRACE_HOST_SLOTS", 10)
    rows = "".join(
        f"{j}|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T01:00:00|COMPLETED|gres/gpu=32|4|n[1-4]\n"
        for j in range(1, 4)
    )
    path = tmp_path / "pairs.sacct"
    path.write_text(SACCT_HEADER + rows)
    refused(capsys, tmp_path, ["replay", str(path)], "pairs.sacct, line 2", "10 job-host pairs")
    with pytest.raises(ValueError, match="more than Goodput's limit of 2 hosts"):
        expand_hostlist("a[1-2],b", most=2)
    assert expand_hostlist("a[1-2],b", most=3) == ["a1", "a2", "b"]


@pytest.mark.parametrize("data", [b"", b"\n", b"abc", b"ab\ncdef\n\ng", b"\n" * 5 + b"x" * 7])
def test_longest_line_matches_splitting(data):
    parts = data.split(b"\n")
    lengths = [len(p) for p in parts]
    best = max(lengths)
    assert longest_line(data) == (best, lengths.index(best) + 1)


@settings(deadline=None, max_examples=40)
@given(st.binary(max_size=300).map(lambda b: b.replace(b"\r", b"")))
def test_longest_line_of_any_bytes(data):
    lengths = [len(p) for p in data.split(b"\n")]
    assert longest_line(data) == (max(lengths), lengths.index(max(lengths)) + 1)


# ----- properties: any count over the limit, in any format ------------------------------------------------------


@settings(deadline=None, max_examples=60)
@given(
    fmt=st.sampled_from(list(FORMATS)), n=st.integers(min_value=limits.MAX_CLUSTER_GPUS + 1, max_value=10**15)
)
def test_any_gpu_count_over_the_limit_is_refused_quickly_and_small(fmt, n):
    text, line = FORMATS[fmt]
    raised, peak = peak_bytes(lambda: replay_file(text(n).encode(), fmt=fmt, name=f"t.{fmt}"))
    assert isinstance(raised, GoodputError), raised
    assert f"t.{fmt}, line {line}:" in str(raised) and "over Goodput's limit of 524,288" in str(raised)
    assert peak < 5_000_000  # bytes: nothing of the requested size was built


@settings(deadline=None, max_examples=40)
@given(fmt=st.sampled_from(list(FORMATS)), n=st.integers(min_value=0, max_value=limits.MAX_CLUSTER_GPUS))
def test_any_gpu_count_within_the_limit_parses(fmt, n):
    trace = parse_trace(FORMATS[fmt][0](n).encode(), fmt=fmt, name=f"t.{fmt}")
    assert trace.jobs["gpus"].to_list() == [float(n)]


@settings(deadline=None, max_examples=40)
@given(hosts=st.integers(min_value=limits.MAX_HOSTS + 1, max_value=10**30))
def test_any_host_count_over_the_limit_is_refused(hosts):
    raised, peak = peak_bytes(
        lambda: replay_file(goodput_csv(8).encode(), name="t.csv", sets=[f"replay.hosts={hosts}"])
    )
    assert isinstance(raised, GoodputError) and "replay.hosts" in str(raised), raised
    assert peak < 5_000_000


# ----- incidents files ------------------------------------------------------------------------------------------

RECORD = {"t_s": 3600, "cause": "faulty_gpu", "planned": False, "host_id": 1, "gpu_id": 9}


def incidents_json(scenario=None, incidents=None, **run) -> bytes:
    document = {
        "run": {"run_id": "sim-x", "scenario": scenario or {"preset": "demo"}, **run},
        "incidents": [RECORD] if incidents is None else incidents,
    }
    return json.dumps(document).encode()


def nested(depth: int) -> dict:
    node: dict = {"x": 1}
    for _ in range(depth):
        node = {"a": node}
    return node


JSON_CASES = {
    "deep.json": (b"[" * 200_000 + b"]" * 200_000, ["deep.json: nested deeper than Goodput's limit of 32"]),
    "deeper.json": (incidents_json(scenario=nested(40)), ["deeper.json: run.scenario.a.a", "limit of 32"]),
    "text.json": (incidents_json(scenario="llama3-405b"), ["text.json: run.scenario is not an object"]),
    "list.json": (incidents_json(scenario=[1, 2]), ["list.json: run.scenario is not an object"]),
    "gpus.json": (
        incidents_json(scenario={"preset": "demo", "cluster": {"gpus": BIG}}),
        ["gpus.json: run.scenario: cluster.gpus: must be at most 524,288, got 100000000"],
    ),
    "days.json": (
        incidents_json(
            scenario={"preset": "demo", "cluster": {"gpus": 262144}, "simulation": {"days": 3650}}
        ),
        ["days.json: run.scenario: cluster.gpus, simulation.days", "50,000,000"],
    ),
    "dict.json": (json.dumps({"incidents": {"0": RECORD}}).encode(), ["dict.json", "no `incidents` list"]),
    "record.json": (
        incidents_json(incidents=[RECORD, "x"]),
        ["record.json: incident record 2 is not an object"],
    ),
    "run.json": (
        json.dumps({"run": [1], "incidents": [RECORD]}).encode(),
        ["run.json: run is not an object"],
    ),
    "id.json": (incidents_json(run_id={"a": 1}), ["id.json: run.run_id is not text"]),
    "digits.json": (b'{"incidents": [], "n": ' + b"9" * 5000 + b"}", ["digits.json: not valid JSON"]),
    "type.json": (
        incidents_json(incidents=[{**RECORD, "t_s": {"a": 1}}]),
        ["type.json: incident record 1: t_s is not a number"],
    ),
}


@pytest.mark.parametrize("name", list(JSON_CASES))
def test_incidents_json_errors_are_one_line(capsys, tmp_path, name):
    data, named = JSON_CASES[name]
    path = tmp_path / name
    path.write_bytes(data)
    started = time.perf_counter()
    line = refused(
        capsys,
        tmp_path,
        ["replay", str(path)],
        *[f"{tmp_path}/{n}" if n.startswith(name) else n for n in named],
    )
    assert time.perf_counter() - started < REFUSED_WITHIN_S
    store = Store(tmp_path / "uploads")
    with pytest.raises(GoodputError) as upload:
        uploads.import_trace(store, (name, data))
    assert str(upload.value) == line.replace(str(path), name)  # the Data page's line is the CLI's
    assert store.run_ids() == []


def test_incident_counts_are_bounded(monkeypatch):
    monkeypatch.setattr(limits, "MAX_INCIDENTS", 2)
    with pytest.raises(GoodputError, match="x.json: incidents: 3 records, over Goodput's limit of 2"):
        read_incidents_bytes(incidents_json(incidents=[RECORD] * 3), "json", where="x.json")
    csv = b"t_s,cause,planned,host_id\n" + b"1,faulty_gpu,false,1\n" * 5
    with pytest.raises(
        GoodputError, match=r"x.csv: 6 lines, over Goodput's limit of 3 lines \(incidents and a header\)"
    ):
        read_incidents_bytes(csv, "csv", where="x.csv")


@settings(deadline=None, max_examples=30)
@given(depth=st.integers(min_value=limits.MAX_JSON_DEPTH + 1, max_value=300_000), kind=st.sampled_from("[{"))
def test_any_nesting_past_the_limit_is_refused(depth, kind):
    opening, closing = (b"[", b"]") if kind == "[" else (b'{"a":', b"}")
    data = opening * depth + (b"1" if kind == "{" else b"") + closing * depth
    raised, peak = peak_bytes(lambda: read_incidents_bytes(data, "json", where="n.json"))
    assert isinstance(raised, GoodputError) and "nested deeper than Goodput's limit of 32" in str(raised), (
        raised
    )
    assert peak < 20_000_000


@settings(deadline=None, max_examples=30)
@given(gpus=st.integers(min_value=limits.MAX_CLUSTER_GPUS // 8 + 1, max_value=10**12).map(lambda h: h * 8))
def test_any_incidents_scenario_over_the_limit_is_refused(gpus):
    data = incidents_json(scenario={"preset": "demo", "cluster": {"gpus": gpus}})
    raised, peak = peak_bytes(lambda: replay_file(data, name="s.json"))
    assert isinstance(raised, GoodputError), raised
    assert f"s.json: run.scenario: cluster.gpus: must be at most 524,288, got {gpus}" == str(raised)
    assert peak < 5_000_000
