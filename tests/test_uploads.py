"""Uploads on the Data page as plain functions (dashboard/uploads.py): DCGM scrapes and kernel logs ingested,
job traces replayed, each into one new run; bad files named with their line and nothing written; the cap."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard import uploads
from engine.errors import GoodputError
from engine.store import Store
from tests.fixtures.ingest.samples import kernel_log, scrape_text, xid_body

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "replay"
SCRAPES = scrape_text(2, 8, 3).encode()  # 2 hosts x 8 GPUs x 3 scrapes x 11 metrics
LOG = kernel_log("dmesg-T", [(10.0, xid_body(3, 79))], host="node001").encode()  # GPU 3 of node001 falls off


class Uploaded:
    """What st.file_uploader hands the page: a name and getvalue()."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self._data = name, data

    def getvalue(self) -> bytes:
        return self._data


def runs_in(store: Store) -> list[str]:
    return store.run_ids()


def test_dcgm_scrapes_become_an_observed_run(tmp_path):
    store = Store(tmp_path / "store")
    imported = uploads.import_telemetry(store, [Uploaded("node000-001.prom", SCRAPES)])
    assert runs_in(store) == [imported.run_id] and imported.kind == "ingest"
    assert imported.name == "dcgm: node000-001.prom"
    assert (imported.summary["hosts"], imported.summary["gpus"], imported.summary["samples"]) == (2, 16, 528)
    assert store.table(imported.run_id, "gpus").height == 16
    assert store.table(imported.run_id, "gpu_samples").height == 2 * 8 * 3  # one row a GPU and scrape


def test_kernel_logs_alone_and_mapped_to_the_scraped_gpus(tmp_path):
    store = Store(tmp_path / "store")
    alone = uploads.import_telemetry(store, [], [("node001.log", LOG)], name="kernel only")
    assert alone.name == "kernel only" and alone.summary["xid_events"] == 1 and alone.summary["gpus"] == 1
    both = uploads.import_telemetry(store, [("scrape.prom", SCRAPES)], [("node001.log", LOG)])
    xids = store.table(both.run_id, "xid_events")
    gpus = store.table(both.run_id, "gpus")
    hosts = store.table(both.run_id, "hosts")
    [(gpu_id, xid)] = xids.select("gpu_id", "xid").rows()
    host_id = gpus.filter(gpus["gpu_id"] == gpu_id)["host_id"][0]
    assert xid == 79 and gpus.filter(gpus["gpu_id"] == gpu_id)["index"][0] == 3
    assert hosts.filter(hosts["host_id"] == host_id)["hostname"][0] == "node001"
    assert len(runs_in(store)) == 2


def test_a_garbled_scrape_names_file_and_line_and_writes_nothing(tmp_path):
    store = Store(tmp_path / "store")
    bad = SCRAPES.replace(b"DCGM_FI_DEV_GPU_TEMP{", b"DCGM_FI_DEV_GPU_TEMP{{", 1)
    with pytest.raises(GoodputError, match=r"^bad\.prom, line 39: garbled metric name"):
        uploads.import_telemetry(store, [("good.prom", SCRAPES), ("bad.prom", bad)])
    assert runs_in(store) == []


def test_a_trace_is_replayed_into_a_new_run(tmp_path):
    store = Store(tmp_path / "store")
    data = (FIXTURES / "small.csv").read_bytes()
    imported = uploads.import_trace(store, Uploaded("small.csv", data))
    assert imported.kind == "replay" and imported.name == "small.csv"
    assert (imported.summary["jobs"], imported.summary["format"], imported.summary["mode"]) == (
        4,
        "goodput",
        "rescheduled",
    )
    assert store.table(imported.run_id, "jobs").height == 4
    recorded = uploads.import_trace(store, ("small.csv", data), fmt="goodput", mode="recorded", name="as run")
    assert recorded.name == "as run" and recorded.summary["mode"] == "recorded"
    assert len(runs_in(store)) == 2


def test_a_bad_trace_line_is_named_and_nothing_is_written(tmp_path):
    store = Store(tmp_path / "store")
    data = (FIXTURES / "small.csv").read_bytes().replace(b"a,0,16,2h", b"a,0,x16,2h")
    with pytest.raises(GoodputError, match=r"^small\.csv, line 3: gpus must be a number"):
        uploads.import_trace(store, ("small.csv", data))
    with pytest.raises(uploads.UploadError, match="empty"):
        uploads.import_trace(store, ("empty.csv", b"\n"))
    with pytest.raises(uploads.UploadError, match="unknown trace format 'xls'"):
        uploads.import_trace(store, ("small.csv", data), fmt="xls")
    with pytest.raises(uploads.UploadError, match="unknown replay mode"):
        uploads.import_trace(store, ("small.csv", data), mode="fast")
    assert runs_in(store) == []


def test_the_size_cap_counts_every_file_before_parsing(tmp_path):
    store = Store(tmp_path / "store")
    limit = len(SCRAPES) + len(LOG) - 1
    with pytest.raises(uploads.UploadError, match=r"over the .* MB limit \(the largest is scrape\.prom"):
        uploads.import_telemetry(store, [("scrape.prom", SCRAPES)], [("node001.log", LOG)], limit=limit)
    assert uploads.check_size([("a", SCRAPES), ("b", LOG)], limit + 1) == limit + 1
    assert uploads.MAX_UPLOAD_BYTES == 200 * 1024 * 1024
    with pytest.raises(uploads.UploadError, match="no file to ingest"):
        uploads.import_telemetry(store)
    assert runs_in(store) == []


def test_the_real_samples(tmp_path, shared_data):
    store = Store(tmp_path / "store")
    dcgm = shared_data / "dcgm" / "kops_L4_scrape.prom"
    imported = uploads.import_telemetry(store, [(dcgm.name, dcgm.read_bytes())])
    assert imported.summary["gpus"] >= 1 and imported.summary["samples"] > 0
    logs = sorted((shared_data / "kernel-logs").glob("*.log"))
    from_logs = uploads.import_telemetry(store, [], [(p.name, p.read_bytes()) for p in logs])
    assert from_logs.summary["xid_events"] > 0
    swf = shared_data / "swf" / "NASA-iPSC-1993-head500.swf"
    trace = uploads.import_trace(store, (swf.name, swf.read_bytes()))
    assert trace.summary["format"] == "swf" and trace.summary["jobs"] > 0
    assert len(runs_in(store)) == 3


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    data=st.binary(max_size=400) | st.text(max_size=400).map(str.encode),
    kind=st.sampled_from(["dcgm", "kernel-log", "trace"]),
)
def test_any_upload_makes_one_run_or_a_clear_error_and_nothing(tmp_path_factory, data, kind):
    store = Store(tmp_path_factory.mktemp("store"))
    try:
        if kind == "dcgm":
            imported = uploads.import_telemetry(store, [("x.prom", data)])
        elif kind == "kernel-log":
            imported = uploads.import_telemetry(store, [], [("x.log", data)])
        else:
            imported = uploads.import_trace(store, ("x.csv", data))
    except GoodputError as err:
        assert str(err)
        assert runs_in(store) == []
    else:
        assert runs_in(store) == [imported.run_id]


# ----- issue 13: an upload does what the command line does ------------------------------------------------------

OPENB = FIXTURES / "openb"  # a pod list and its node list, in the format of Alibaba's cluster-trace-gpu-v2023
PODS, NODES = (OPENB / "pods.csv").read_bytes(), (OPENB / "openb_node_list_gpu_node.csv").read_bytes()


def test_an_openb_pod_list_is_replayed_on_its_uploaded_node_list_as_the_cli_does(tmp_path):
    """`goodput replay pods.csv` reads the node list beside it; the upload takes it as a second file."""
    from engine.replay.run import replay_file

    store = Store(tmp_path / "store")
    imported = uploads.import_trace(
        store, Uploaded("pods.csv", PODS), node_list=Uploaded("openb_node_list_gpu_node.csv", NODES)
    )
    assert (imported.summary["hosts"], imported.summary["gpus"]) == (2, 10)  # node-a 8 GPUs + node-b 2
    assert imported.summary["cluster_from"] == "node list" and imported.summary["notes"] == []
    assert store.table(imported.run_id, "hosts")["hostname"].to_list() == ["node-a", "node-b"]
    cli = replay_file(OPENB / "pods.csv")  # the file path: the node list found beside it
    assert {k: cli.summary[k] for k in ("jobs", "hosts", "gpus", "utilization", "wait_mean_s")} == {
        k: imported.summary[k] for k in ("jobs", "hosts", "gpus", "utilization", "wait_mean_s")
    }


def test_an_openb_pod_list_without_its_node_list_says_what_is_missing(tmp_path):
    store = Store(tmp_path / "store")
    imported = uploads.import_trace(store, ("pods.csv", PODS))
    assert imported.summary["cluster_from"] == "inferred from peak use"
    [note] = imported.summary["notes"]
    assert note.startswith(
        "pods.csv came without its node list (openb_node_list_gpu_node.csv): the cluster was"
        " inferred from the pods' peak GPU use (2 hosts, 16 GPUs)."
    )
    assert "add it on the Data page" in note
    other = uploads.import_trace(store, ("small.csv", (FIXTURES / "small.csv").read_bytes()))
    assert other.summary["notes"] == []  # only openb has a node list to miss


def test_a_node_list_in_the_wrong_place_is_named_and_nothing_is_written(tmp_path):
    store = Store(tmp_path / "store")
    small = (FIXTURES / "small.csv").read_bytes()
    with pytest.raises(
        GoodputError,
        match=r"^nodes\.csv: a node list goes with an Alibaba openb pod list; "
        r"small\.csv is a goodput trace",
    ):
        uploads.import_trace(store, ("small.csv", small), node_list=("nodes.csv", NODES))
    with pytest.raises(
        GoodputError,
        match=r"^nodes\.csv: an Alibaba openb node list, not a job trace: give it"
        r" with its pod list",
    ):
        uploads.import_trace(store, ("nodes.csv", NODES))
    with pytest.raises(GoodputError, match=r"^nodes\.csv, line 3: gpu must be an integer from 0 to 64"):
        uploads.import_trace(
            store, ("pods.csv", PODS), node_list=("nodes.csv", NODES.replace(b",2,T4", b",x,T4"))
        )
    with pytest.raises(uploads.UploadError, match=r"^nodes\.csv: the node list is empty"):
        uploads.import_trace(store, ("pods.csv", PODS), node_list=("nodes.csv", b"\n"))
    assert runs_in(store) == []


def test_a_boot_relative_kernel_log_upload_keeps_its_dates_unknown(tmp_path):
    from engine.store.run import UNKNOWN_START

    store = Store(tmp_path / "store")
    log = kernel_log("dmesg", [(0.0, xid_body(3, 79)), (3 * 3600 + 25 * 60, xid_body(3, 79))], host="node001")
    imported = uploads.import_telemetry(store, [], [("node001.dmesg", log.encode())])
    info = store.info(imported.run_id)
    assert info.started_at == UNKNOWN_START and info.scenario["start"] == "unknown"
    assert imported.summary["start_known"] is False
    [note] = imported.summary["notes"]
    assert note.startswith("node001.dmesg: stamped in seconds since boot only, so its dates are unknown")
    # times count from the log's first line (a noise line 3 s before the first XID)
    assert store.table(imported.run_id, "xid_events")["t_s"].to_list() == pytest.approx([3.0, 3.0 + 12300])
