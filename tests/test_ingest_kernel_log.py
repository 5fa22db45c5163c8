"""Kernel logs -> XID events: every timestamp format, mapping to GPUs, incidents, the real logs, bad input."""

import json
import os
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import ingest_dcgm, ingest_kernel_logs
from engine.ingest.kernel_log import parse_kernel_logs
from engine.ingest.sources import Source
from engine.reference import XID_BY_CODE
from engine.store import Store
from tests.fixtures.ingest.samples import (
    ALL_XIDS,
    T0,
    kernel_line,
    kernel_log,
    scrape_text,
    sxid_body,
    uuid,
    xid_body,
)

FORMATS = ["dmesg", "dmesg-T", "iso", "syslog", "journal", "kmsg"]
WALL_CLOCK = {"dmesg-T", "iso", "syslog", "journal"}
NAMES_HOST = {"syslog", "journal"}


def events_of(fmt: str) -> list[tuple[float, str]]:
    return [(0.0, xid_body(2, 79)), (12.0, xid_body(2, 45)), (30.0, sxid_body(1)), (600.0, xid_body(5, 13))]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_gives_the_same_events(fmt):
    text = kernel_log(fmt, events_of(fmt), host="node004", noise=2)
    run = ingest_kernel_logs([("node004.log", text.encode())], year=2024)
    events = run.tables["xid_events"]
    assert events["xid"].to_list() == [79, 45, 20034, 13]
    # wall-clock formats count from the earliest line (an XID line here); since-boot ones from the first line,
    # which is a noise line 2 s before the first XID.
    offset = 0.0 if fmt in WALL_CLOCK else 2.0
    assert events["t_s"].to_list() == pytest.approx([offset, offset + 12.0, offset + 30.0, offset + 600.0])
    assert run.tables["hosts"]["hostname"].to_list() == ["node004"]
    assert events["gpu_id"].to_list()[:2] == [0, 0] and events["gpu_id"][2] is None
    gpus = run.tables["gpus"]
    assert gpus.select("gpu_id", "index").rows() == [(0, 0), (1, 1)]  # ranked by bus id: 3a before ab
    assert run.summary["other_lines"] == 8 and run.summary["xid_events"] == 4
    assert events["message"][2].startswith("SXid nvidia-nvswitch1 (PCI:0000:06:00): Fatal, Link 48")
    if fmt in WALL_CLOCK:
        assert run.started_at == T0 + timedelta(hours=1)
    incidents = run.tables["incidents"]
    assert incidents.select("t_s", "xid", "cause", "gpu_id").rows() == [(offset, 79, "faulty_gpu", 0)]


def test_all_xids_and_their_incidents():
    # XIDs of the catalogue, one GPU each (wrapping over 8), 10 minutes apart on two hosts
    body = [(600.0 * i, xid_body(i % 8, x)) for i, x in enumerate(ALL_XIDS)]
    logs = [(f"node{h}.log", kernel_log("journal", body, host=f"node{h}", noise=1).encode()) for h in (1, 2)]
    run = ingest_kernel_logs(logs)
    events = run.tables["xid_events"]
    assert events.height == 2 * len(ALL_XIDS)
    assert run.summary["xid_counts"] == {str(x): 2 for x in ALL_XIDS}
    fatal = [x for x in ALL_XIDS if XID_BY_CODE[x].fatal]
    incidents = run.tables["incidents"]
    assert sorted(incidents["xid"].to_list()) == sorted(fatal * 2)
    causes = dict(zip(incidents["xid"], incidents["cause"], strict=True))
    assert causes == {
        48: "gpu_hbm3",
        64: "gpu_hbm3",
        95: "gpu_hbm3",
        119: "gpu_system_processor",
        120: "gpu_system_processor",
        74: "faulty_gpu",
        79: "faulty_gpu",
    }
    assert incidents["category"].unique().to_list() == ["GPU"] and not incidents["planned"].any()
    linked = events.filter(pl.col("incident_id").is_not_null())
    assert sorted(linked["xid"].to_list()) == sorted(fatal * 2)
    # each host is down from its first fatal XID (48, the 5th code, at 2400 s) to the end
    down = run.tables["host_states"].filter(pl.col("state") == "down")
    assert down["start_s"].to_list() == [2400.0, 2400.0] and down["end_s"].to_list() == [600.0 * 13] * 2


def test_a_burst_of_fatal_xids_is_one_incident():
    body = [
        (0, xid_body(0, 48)),
        (60, xid_body(0, 48)),
        (200, xid_body(0, 95)),
        (900, xid_body(0, 79)),
        (100, xid_body(1, 79)),
    ]
    run = ingest_kernel_logs([("n.log", kernel_log("iso", sorted(body), noise=0).encode())])
    assert run.tables["incidents"].select("incident_id", "t_s", "xid", "gpu_id").rows() == [
        (0, 0.0, 48, 0),
        (1, 100.0, 79, 1),
        (2, 900.0, 79, 0),
    ]
    assert run.tables["xid_events"].select("t_s", "incident_id").rows() == [
        (0.0, 0),
        (60.0, 0),
        (100.0, 1),
        (200.0, 0),
        (900.0, 2),
    ]


def test_xids_map_to_scraped_gpus_by_bus_id_and_by_uuid():
    scrape = ("scrape.prom", scrape_text(3, 8, 2).encode())
    # node001 names its host (journal); the dmesg log names none but announces GPU 5's UUID of node002
    journal = kernel_log("journal", [(0, xid_body(3, 79))], host="node001").encode()
    dmesg = (
        kernel_line("dmesg", T0, f"NVRM: GPU at PCI:0000:ab:00: {uuid(2, 5)}")
        + "\n"
        + kernel_line("dmesg", T0 + timedelta(seconds=5), xid_body(5, 48))
        + "\n"
    ).encode()
    run = ingest_dcgm([scrape], kernel_logs=[("j.log", journal), ("mystery.log", dmesg)])
    assert run.summary["gpus"] == 24 and run.summary["hosts"] == 3  # no GPU or host invented
    gpus = run.tables["gpus"]
    ev = run.tables["xid_events"].join(gpus, on="gpu_id").sort("xid")
    assert ev.select("xid", "index", "uuid").rows() == [(48, 5, uuid(2, 5)), (79, 3, uuid(1, 3))]
    # the same through `ingest_kernel_logs(..., dcgm=...)`
    again = ingest_kernel_logs([("j.log", journal), ("mystery.log", dmesg)], dcgm=[scrape])
    assert (
        again.tables["xid_events"].select("gpu_id", "xid").sort("xid").rows()
        == ev.select("gpu_id", "xid").rows()
    )


def test_a_dmesg_log_beside_a_single_scraped_host_is_that_host():
    scrape = ("s.prom", scrape_text(1, 8, 1).encode())
    log = kernel_log("dmesg", [(0, xid_body(7, 119))]).encode()
    run = ingest_kernel_logs([("dmesg.txt", log)], dcgm=[scrape])
    assert run.tables["hosts"]["hostname"].to_list() == ["node000"]
    assert run.tables["xid_events"].join(run.tables["gpus"], on="gpu_id")["index"].to_list() == [7]


def test_real_logs(shared_data):
    logs = shared_data / "kernel-logs"
    run = ingest_kernel_logs([logs / "dmesg-xid13-sm-exceptions.log", logs / "sxid20034_xid79.log"])
    assert run.summary["xid_counts"] == {"13": 16, "20034": 8, "79": 1, "43": 1}
    assert run.summary["xid_events"] == 26 and run.summary["other_lines"] == 4
    gpus = run.tables["gpus"].join(run.tables["hosts"], on="host_id")
    assert gpus.select("hostname", "uuid").sort("hostname").rows() == [
        ("dmesg-xid13-sm-exceptions", None),
        ("sxid20034_xid79", "GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b"),
    ]
    xid13 = run.tables["xid_events"].filter(pl.col("xid") == 43)
    assert xid13["t_s"][0] == pytest.approx(0.287197 - 0.283302, abs=1e-6)  # 04:41:44,287197 after ,283302
    incidents = run.tables["incidents"]
    assert incidents.select("xid", "cause").rows() == [(79, "faulty_gpu")]


def test_garbled_xid_line_names_file_and_line():
    good = kernel_log("dmesg", [(0, xid_body(0, 13))], noise=1)
    for broken in (
        "[ 3700.000000] NVRM: Xid (PCI:0000:18:00): ",
        "[ 3700.000000] NVRM: Xid (PCI:0000:18",
        "[ 3700.0] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): , Fatal",
    ):
        with pytest.raises(GoodputError, match=r"k\.log, line 3: truncated or garbled"):
            ingest_kernel_logs([("k.log", (good + broken + "\n").encode())])


def test_xid_line_without_a_timestamp_is_an_error():
    with pytest.raises(GoodputError, match=r"k\.log, line 2: XID line without a timestamp"):
        ingest_kernel_logs([("k.log", b"hello\n" + xid_body(0, 79).encode() + b"\n")])


def test_other_lines_are_not_errors():
    text = b"\xff\xfe garbage\n[  1.0] usb 1-1: new device\nrandom words Xid\n\n"
    parsed = parse_kernel_logs([Source("k.log", text)])
    assert parsed.events.height == 0 and parsed.other_lines == 4


LOG_BITS = st.sampled_from(
    [
        "NVRM: Xid (PCI:0000:3b:00): ",
        "79",
        ", ",
        "SXid (PCI:0000:05:00.0): ",
        "20034",
        "nvidia-nvswitch0: ",
        "[ 12.5] ",
        "[Mon Dec  2 10:11:12 2024] ",
        "4,1,2,-;",
        "2024-12-02T10:11:12+0000 h kernel: ",
        "Dec  2 10:11:12 h kernel: ",
        "\n",
        " ",
        "x",
        "NVRM: GPU at PCI:0000:3b:00: GPU-1-2",
        "99999999999",
        "kern  :warn  : ",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), st.lists(LOG_BITS, max_size=30).map("".join)))
def test_any_text_parses_or_fails_clearly(text):
    try:
        parsed = parse_kernel_logs([Source("h.log", text.encode(), mtime=0.0)])
    except GoodputError as err:
        assert "h.log, line " in str(err)
        return
    events = parsed.events
    assert events["code"].null_count() == 0
    assert (events["t_abs_us"].is_not_null() | events["t_rel_s"].is_not_null()).all()
    assert events.height + parsed.other_lines == len(text.split("\n")) - text.endswith("\n")


def test_cli_kernel_log_with_dcgm(tmp_path, store_dir, capsys):
    scrape, log = tmp_path / "s.prom", tmp_path / "node001.log"
    scrape.write_text(scrape_text(2, 8, 3))
    log.write_text(kernel_log("journal", [(0, xid_body(1, 79)), (5, xid_body(1, 45))], host="node001"))
    code = main(
        ["ingest", "kernel-log", str(log), "--dcgm", str(scrape), "--store", str(store_dir), "--json"]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and (result["hosts"], result["gpus"], result["xid_events"], result["incidents"]) == (
        2,
        16,
        2,
        1,
    )
    assert result["samples"] == 2 * 8 * 3 * 11
    assert Store(store_dir).table(result["run_id"], "incidents")["gpu_id"].to_list() == [9]


def test_cli_garbled_kernel_log_exits_2_and_writes_nothing(tmp_path, store_dir, capsys):
    log = tmp_path / "bad.log"
    log.write_text("[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, ok\n[ 2.0] NVRM: Xid (PCI:0000:3b\n")
    assert main(["ingest", "kernel-log", str(log), "--store", str(store_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{log}, line 2" in err and err.count("\n") == 1
    assert not list(store_dir.glob("runs/*"))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 5000), st.sampled_from([13, 43, 48, 79, 95, 119])),
        min_size=1,
        max_size=40,
        unique_by=lambda e: (e[0], e[1]),
    )
)
def test_incidents_are_bursts_of_fatal_xids_per_gpu(events):
    """Against a plain reference: per GPU, a fatal XID more than 300 s after the previous fatal one opens one."""
    body = sorted((t, xid_body(g, x)) for g, t, x in events)
    run = ingest_kernel_logs([("n.log", kernel_log("journal", body, host="n", noise=0).encode())])
    t0 = min(t for _, t, _ in events)
    present = sorted({g for g, _, _ in events})  # GPUs known only by bus id are numbered in bus order
    expected = []
    for g in present:
        fatal = sorted(t for gg, t, x in events if gg == g and XID_BY_CODE[x].fatal)
        expected += [
            (present.index(g), float(t - t0)) for i, t in enumerate(fatal) if i == 0 or t - fatal[i - 1] > 300
        ]
    got = run.tables["incidents"].join(run.tables["gpus"], on="gpu_id").select("index", "t_s").rows()
    assert sorted(got) == sorted(expected)
    assert run.tables["incidents"]["incident_id"].to_list() == list(range(len(expected)))
    assert run.tables["incidents"]["t_s"].is_sorted()  # ids follow time
    down = run.tables["host_states"].filter(pl.col("state") == "down")["start_s"].to_list()
    first_down = min((t for _, t in expected), default=None)
    assert down == ([first_down] if first_down is not None and first_down < run.duration_s else [])


def test_syslog_stamps_take_the_year_of_the_file(tmp_path):
    path = tmp_path / "kern.log"
    path.write_text(kernel_log("syslog", [(0, xid_body(0, 79))], host="gpu-a", noise=0))
    os.utime(path, (datetime(2023, 12, 31, tzinfo=UTC).timestamp(),) * 2)
    run = ingest_kernel_logs([path])
    assert run.started_at == datetime(2023, 12, 2, 11, 0, tzinfo=UTC)  # the line says Dec  2 11:00:00
    assert run.tables["hosts"]["hostname"].to_list() == ["gpu-a"]
    assert ingest_kernel_logs([path], year=2024).started_at.year == 2024
