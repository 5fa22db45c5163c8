"""DCGM exporter scrapes -> observed runs: exact values on hand-made files, the real sample, bad input."""

import io
import json
import os
from datetime import UTC, datetime

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import ingest_dcgm
from engine.ingest.dcgm import parse_dcgm
from engine.ingest.sources import Source
from engine.store import Store
from tests.fixtures.ingest.samples import T0, T0_MS, labels, scrape_text, uuid

L = (
    'gpu="{g}",UUID="GPU-{h}-{g}",pci_bus_id="00000000:{b}:00.0",device="nvidia{g}",'
    'modelName="NVIDIA H100",Hostname="{h}"'
)


def line(metric: str, h: str, g: int, value, t_ms: int | None = None, bus: str = "18") -> str:
    stamp = f" {t_ms}" if t_ms is not None else ""
    return f"{metric}{{{L.format(h=h, g=g, b=bus)}}} {value}{stamp}"


def small_file() -> str:
    """Two hosts (given out of order), two GPUs on one and one on the other, three scrapes 30 s apart."""
    rows = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for s in range(3):
        t = T0_MS + 30_000 * s
        rows += [
            line("DCGM_FI_DEV_GPU_TEMP", "b-host", 0, 60 + s, t),
            line("DCGM_FI_DEV_POWER_USAGE", "b-host", 0, 650.5, t),
            line("DCGM_FI_DEV_GPU_TEMP", "a-host", 1, 40 + s, t, bus="2A"),
            line("DCGM_FI_DEV_GPU_TEMP", "a-host", 0, 50 + s, t),
            line("DCGM_FI_DEV_GPU_UTIL", "a-host", 0, 100, t),
            line("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "a-host", 0, s * 2, t),
        ]
    return "\n".join(rows) + "\n"


def test_small_file_gives_exact_tables():
    run = ingest_dcgm([("small.prom", small_file().encode())])
    assert run.kind == "ingest" and run.started_at == T0 and run.duration_s == 60.0
    assert run.tables["hosts"]["hostname"].to_list() == ["a-host", "b-host"]
    assert run.tables["hosts"]["rack_id"].to_list() == [0, 1]
    gpus = run.tables["gpus"]
    assert gpus.select("gpu_id", "host_id", "index").rows() == [(0, 0, 0), (1, 0, 1), (2, 1, 0)]
    assert gpus["uuid"].to_list() == ["GPU-a-host-0", "GPU-a-host-1", "GPU-b-host-0"]
    assert set(gpus["model"]) == {"NVIDIA H100"}
    samples = run.tables["gpu_samples"]
    assert samples.select("t_s", "gpu_id", "temp_c").rows() == [
        (0.0, 0, 50.0),
        (0.0, 1, 40.0),
        (0.0, 2, 60.0),
        (30.0, 0, 51.0),
        (30.0, 1, 41.0),
        (30.0, 2, 61.0),
        (60.0, 0, 52.0),
        (60.0, 1, 42.0),
        (60.0, 2, 62.0),
    ]
    assert samples.filter(pl.col("gpu_id") == 0)["ecc_sbe"].to_list() == [0, 2, 4]
    assert samples.filter(pl.col("gpu_id") == 0)["util_pct"].to_list() == [100.0] * 3
    assert samples.filter(pl.col("gpu_id") == 2)["power_w"].to_list() == [650.5] * 3
    # metrics the file does not carry are null, never zero
    assert samples["mem_util_pct"].null_count() == 9 and samples["ecc_dbe"].null_count() == 9
    assert samples.filter(pl.col("gpu_id") == 1)["util_pct"].null_count() == 3
    assert run.summary["samples"] == 18 and run.summary["hosts"] == 2 and run.summary["gpus"] == 3
    assert run.tables["xid_events"].height == 0 and run.tables["incidents"].height == 0
    states = run.tables["host_states"]
    assert states.select("host_id", "state", "start_s", "end_s").rows() == [
        (0, "healthy", 0.0, 60.0),
        (1, "healthy", 0.0, 60.0),
    ]


def test_xid_gauge_counts_changes_only():
    # The gauge holds the last XID and never resets: 0, 0, 79, 79, 13, 13 over six scrapes is two events;
    # a value already there at the first scrape happened before we looked and is not an event.
    values = {"h0": [0, 0, 79, 79, 13, 13], "h1": [31, 31, 31, 31, 31, 31]}
    text = "\n".join(
        line("DCGM_FI_DEV_XID_ERRORS", h, 0, v, T0_MS + 10_000 * s)
        for h, series in values.items()
        for s, v in enumerate(series)
    )
    run = ingest_dcgm([("x.prom", text.encode())])
    events = run.tables["xid_events"]
    assert events.select("t_s", "gpu_id", "host_id", "xid").rows() == [(20.0, 0, 0, 79), (40.0, 0, 0, 13)]
    assert events["message"][0] == "DCGM_FI_DEV_XID_ERRORS changed from 0 to 79"
    incidents = run.tables["incidents"]  # 79 is fatal (engine.reference.XIDS), 13 is not
    assert incidents.select("incident_id", "t_s", "cause", "category", "xid", "host_id", "gpu_id").rows() == [
        (0, 20.0, "faulty_gpu", "GPU", 79, 0, 0)
    ]
    assert events["incident_id"].to_list() == [0, None]
    states = run.tables["host_states"].select("host_id", "state", "start_s", "end_s").rows()
    assert states == [(0, "healthy", 0.0, 20.0), (0, "down", 20.0, 50.0), (1, "healthy", 0.0, 50.0)]
    assert run.summary["xid_events"] == 2 and run.summary["xid_counts"] == {"79": 1, "13": 1}


def test_many_hosts_many_scrapes_across_files(tmp_path):
    xid = {(1, 3, 4): 79, (5, 0, 9): 48, (6, 7, 2): 13, (6, 7, 8): 94}
    paths = []
    for part in range(2):  # hosts 0-7 in one file, 8-15 in the other
        path = tmp_path / f"part{part}.prom"
        path.write_text(scrape_text(8, 8, 12, xid=xid, first_host=8 * part))
        paths.append(path)
    run = ingest_dcgm(paths)
    s = run.summary
    assert (s["hosts"], s["gpus"]) == (16, 128)
    assert s["samples"] == 16 * 8 * 12 * 11  # 11 metrics a GPU a scrape, every value counted
    samples = run.tables["gpu_samples"]
    assert samples.height == 16 * 8 * 12 and samples["t_s"].unique().sort().to_list() == [
        30.0 * i for i in range(12)
    ]
    assert samples["temp_c"].min() == 50 and samples["temp_c"].max() == 50 + 7 + 4
    assert run.tables["gpus"]["gpu_id"].to_list() == list(range(128))
    assert run.tables["gpus"]["uuid"][8 * 5 + 3] == uuid(5, 3)
    assert sorted(run.tables["xid_events"]["xid"].to_list()) == [13, 48, 79, 94]
    assert run.tables["incidents"]["xid"].sort().to_list() == [48, 79]  # 13 and 94 are not fatal
    assert run.tables["incidents"]["cause"].sort().to_list() == ["faulty_gpu", "gpu_hbm3"]
    assert run.tables["gpu_samples"]["memory_temp_c"].null_count() == 0


def test_real_scrape(shared_data):
    path = shared_data / "dcgm" / "kops_L4_scrape.prom"
    run = ingest_dcgm([path])
    assert run.started_at == datetime.fromtimestamp(round(path.stat().st_mtime * 1000) / 1000, UTC)
    assert run.summary["samples"] == 23 and run.summary["skipped"] == {}
    assert run.tables["hosts"]["hostname"].to_list() == ["i-030791dc5a37cd257"]
    gpu = run.tables["gpus"].row(0, named=True)
    assert gpu == {
        "gpu_id": 0,
        "host_id": 0,
        "index": 0,
        "uuid": "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c",
        "model": "NVIDIA L4",
    }
    sample = run.tables["gpu_samples"].row(0, named=True)
    assert sample["temp_c"] == 31 and sample["power_w"] == pytest.approx(16.365)
    assert sample["util_pct"] == 0 and sample["fb_used_mib"] == 0 and sample["ecc_sbe"] is None


def test_no_timestamps_take_the_files_modification_time(tmp_path):
    path = tmp_path / "node9.prom"
    path.write_text(line("DCGM_FI_DEV_GPU_TEMP", "node9", 0, 33) + "\n")
    os.utime(path, (1_700_000_000.25, 1_700_000_000.25))
    run = ingest_dcgm([path])
    assert run.started_at == datetime.fromtimestamp(1_700_000_000.25, UTC)


def test_a_host_without_a_hostname_label_is_named_after_its_file():
    text = f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-x"}} 41 {T0_MS}\nDCGM_FI_DEV_GPU_TEMP{{gpu="1"}} 42 {T0_MS}\n'
    run = ingest_dcgm([("rack7-node3.prom", text.encode())])
    assert run.tables["hosts"]["hostname"].to_list() == ["rack7-node3"]
    assert run.tables["gpu_samples"]["temp_c"].to_list() == [41.0, 42.0]


def test_tolerated_oddities_are_counted_skips():
    text = "\n".join(
        [
            "# a comment of our own",
            "# EOF-ish note",
            "go_gc_duration_seconds 0.001",
            'dcgm_exporter_build_info{version="3.3"} 1',
            line("DCGM_FI_DEV_GPU_TEMP", "h", 0, "NaN", T0_MS),
            line("DCGM_FI_DEV_POWER_USAGE", "h", 0, "+Inf", T0_MS),
            f'DCGM_FI_DEV_NVSWITCH_TEMPERATURE{{nvswitch="0",Hostname="h"}} 40 {T0_MS}',
            line("DCGM_FI_DEV_GPU_UTIL", "h", 0, 97, T0_MS),
            "",
        ]
    )
    run = ingest_dcgm([("odd.prom", text.encode())])
    assert run.summary["skipped"] == {
        "comment lines other than HELP and TYPE": 2,
        "metrics other than DCGM_FI_*": 2,
        "NaN or infinite values": 2,
        "series without a gpu or UUID label": 1,
    }
    assert run.summary["samples"] == 1
    assert run.tables["gpu_samples"].select("util_pct", "temp_c").rows() == [(97.0, None)]


def test_odd_but_valid_lines_take_the_exact_path_and_agree_with_the_fast_one():
    fast = small_file()
    # a `}` inside a label value, tabs, and a metric without labels force the exact reader for the whole file
    odd = fast.replace('modelName="NVIDIA H100"', 'modelName="NVIDIA H100 {SXM}"').replace("} 6", "}\t6")
    odd += "DCGM_FI_DEV_COUNT 2\n"
    a, b = ingest_dcgm([("f.prom", fast.encode())]), ingest_dcgm([("f.prom", odd.encode())])
    assert a.tables["gpu_samples"].equals(b.tables["gpu_samples"])
    assert set(b.tables["gpus"]["model"]) == {"NVIDIA H100 {SXM}"}
    assert b.summary["skipped"] == {"series without a gpu or UUID label": 1}


@pytest.mark.parametrize(
    ("text", "line_no", "words"),
    [
        (
            'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="G",Hostname="h"} 40 1\nDCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="G',
            2,
            "not a Prometheus sample",
        ),
        (
            'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="G"} 40 1\nDCGM_FI_DEV_GPU_TEMP{gpu="1" UUID="H"} 41 1\n',
            2,
            "garbled",
        ),
        ('DCGM_FI_DEV_GPU_TEMP{gpu="0"} hot 1\n', 1, "'hot' is not a number"),
        ('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40 12:00\n', 1, "timestamp"),
        ('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40 1 2\n', 1, "not a Prometheus sample"),
        ('# TYPE DCGM_FI_DEV_GPU_TEMP\nDCGM_FI_DEV_GPU_TEMP{gpu="0"} 40 1\n', 1, "malformed # TYPE"),
        ('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40\nDCGM_FI_DEV_GPU_TEMP{gpu="0"} 41\n', 2, "second value"),
        ('\n\nDCGM_FI_DEV_GPU_TEMP{gpu="0"} 40 1\n}\n', 4, ""),
        ('3DCGM{gpu="0"} 1\n', 1, ""),
    ],
)
def test_garbled_lines_name_file_and_line(text, line_no, words):
    with pytest.raises(GoodputError, match=rf"bad\.prom, line {line_no}: .*{words}"):
        ingest_dcgm([("bad.prom", text.encode())])


def test_bad_bytes_name_their_line():
    data = b'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40 1\nDCGM_FI_DEV_GPU_TEMP{gpu="1",modelName="\xff"} 40 1\n'
    with pytest.raises(GoodputError, match=r"bytes\.prom, line 2: not UTF-8"):
        ingest_dcgm([("bytes.prom", data)])


def test_bad_bytes_in_a_file_name_their_line(tmp_path):
    path = tmp_path / "b[1].prom"  # brackets: a file name, not a pattern
    path.write_bytes(b'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40 1\n\nDCGM_FI_DEV_GPU_TEMP{gpu="1",x="\xc3"} 40 1\n')
    with pytest.raises(GoodputError, match=r"b\[1\]\.prom, line 3: not UTF-8"):
        ingest_dcgm([path])


def test_the_same_scrape_given_twice_is_refused():
    data = small_file().encode()
    with pytest.raises(GoodputError, match=r"two\.prom, line 3: a second value"):
        ingest_dcgm([("one.prom", data), ("two.prom", data)])


def test_a_file_with_nothing_to_ingest_says_so():
    with pytest.raises(
        GoodputError, match=r"empty\.prom: nothing to ingest.*skipped 1 NaN or infinite values"
    ):
        ingest_dcgm([("empty.prom", b"# HELP x y\n" + line("DCGM_FI_DEV_GPU_TEMP", "h", 0, "NaN").encode())])


def test_windows_line_ends_read_the_same():
    crlf = small_file().replace("\n", "\r\n").encode()
    assert (
        ingest_dcgm([("w.prom", crlf)])
        .tables["gpu_samples"]
        .equals(ingest_dcgm([("w.prom", small_file().encode())]).tables["gpu_samples"])
    )


def test_uploads_text_and_paths_give_the_same_run(tmp_path):
    class Upload(io.BytesIO):  # what Streamlit's file_uploader hands the Data page
        name = "up.prom"

    path = tmp_path / "up.prom"
    path.write_text(small_file())
    runs = [
        ingest_dcgm([item])
        for item in (
            path,
            ("up.prom", small_file()),
            ("up.prom", small_file().encode()),
            Upload(small_file().encode()),
        )
    ]
    for run in runs[1:]:
        assert run.tables["gpu_samples"].equals(runs[0].tables["gpu_samples"])
        assert run.summary == runs[0].summary and run.name == "dcgm: up.prom"


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(GoodputError, match="nope.prom: cannot read"):
        ingest_dcgm([tmp_path / "nope.prom"])


# ----- Hypothesis: any text is a clear error or a valid parse -------------------------------------------------

SAMPLE_BITS = st.sampled_from(
    [
        "DCGM_FI_DEV_GPU_TEMP",
        "{",
        "}",
        'gpu="0"',
        ",",
        'UUID="G-1"',
        '"',
        "=",
        " ",
        "\t",
        "\n",
        "#",
        " HELP ",
        " TYPE ",
        "gauge",
        "1",
        "-2.5",
        "NaN",
        "1733133600000",
        "\\",
        'Hostname="h"',
        "x",
        "\r",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), st.lists(SAMPLE_BITS, max_size=40).map("".join)))
def test_any_text_parses_or_fails_clearly(text):
    try:
        parsed = parse_dcgm([Source("h.prom", text.encode(), mtime=0.0)])
    except GoodputError as err:
        assert "h.prom" in str(err)
        return
    assert parsed.samples["value"].is_finite().all()
    assert parsed.samples.height + sum(parsed.skipped.values()) <= text.count("\n") + 1
    assert set(parsed.samples["series"]) <= set(parsed.series["series"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(0, 7),
            st.floats(-1e6, 1e6, allow_nan=False),
            st.integers(T0_MS, T0_MS + 10**10),
        ),
        min_size=1,
        max_size=30,
        unique_by=lambda r: (r[0], r[1], r[3]),
    )
)
def test_generated_scrapes_round_trip(rows):
    text = "\n".join(f"DCGM_FI_DEV_POWER_USAGE{{{labels(h, g)}}} {v!r} {t}" for h, g, v, t in rows)
    run = ingest_dcgm([("gen.prom", text.encode())])
    assert run.summary["samples"] == len(rows)
    got = sorted(
        run.tables["gpu_samples"]
        .join(run.tables["gpus"], on="gpu_id")
        .join(run.tables["hosts"], on="host_id")
        .select("hostname", "index", "t_s", "power_w")
        .rows()
    )
    t0 = min(r[3] for r in rows)
    want = sorted(
        (f"node{h:03d}", g, (t - t0) / 1000, pl.Series([v], dtype=pl.Float32)[0]) for h, g, v, t in rows
    )
    assert [(h, g, v) for h, g, _, v in got] == [(h, g, v) for h, g, _, v in want]
    assert [t for *_, t, _ in got] == pytest.approx([t for *_, t, _ in want], rel=1e-12, abs=1e-9)


# ----- the command line ---------------------------------------------------------------------------------------


def test_cli_ingest_dcgm_json(tmp_path, store_dir, capsys):
    path = tmp_path / "s.prom"
    path.write_text(small_file())
    assert main(["ingest", "dcgm", str(path), "--store", str(store_dir), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"run_id", "hosts", "gpus", "samples", "xid_events", "skipped"} <= set(result)
    assert (result["hosts"], result["gpus"], result["samples"], result["xid_events"]) == (2, 3, 18, 0)
    info = Store(store_dir).info(result["run_id"])
    assert info.kind == "ingest" and info.duration_s == 60.0 and info.started_at == T0
    assert Store(store_dir).table(result["run_id"], "gpu_samples").height == 9


def test_cli_garbled_line_exits_2_and_writes_nothing(tmp_path, store_dir, capsys):
    path = tmp_path / "g.prom"
    path.write_text(small_file() + 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="a-host"\n')
    assert main(["ingest", "dcgm", str(path), "--store", str(store_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("goodput: error: ") and f"{path}, line 21" in err and err.count("\n") == 1
    assert not list(store_dir.glob("runs/*"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ingest", "dcgm"], "give at least one FILE"),
        (["ingest", "kernel-log", "--scrape", "http://a:9400/metrics"], "only `goodput ingest dcgm` scrapes"),
        (["ingest", "dcgm", "x.prom", "--scrape", "http://a:9400/metrics"], "endpoints or files, not both"),
        (["ingest", "dcgm", "--scrape", "http://a:9400/metrics", "--every", "soon"], "--every"),
        (["ingest", "dcgm", "--scrape", "http://a:9400/metrics", "--scrapes", "0"], "--scrapes"),
    ],
)
def test_cli_usage_mistakes_exit_2(store_dir, capsys, argv, message):
    assert main([*argv, "--store", str(store_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("goodput: error: ") and message in err and err.count("\n") == 1
