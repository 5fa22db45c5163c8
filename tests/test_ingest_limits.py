"""Ingestion bounds: compression bombs, long lines, too many hosts or GPUs, clocks out of range, values no
column can hold. Each is a one-line GoodputError naming the file (and line) or a counted skip, never a
traceback and never an allocation the input only asks for."""

import gzip
import os
import subprocess
import sys
import zlib
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard import uploads
from engine import limits
from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import bounds, ingest_dcgm, ingest_kernel_logs
from engine.ingest.dcgm import parse_dcgm
from engine.ingest.observed import Observer
from engine.ingest.sources import Source
from engine.store import Store
from tests.fixtures.ingest.samples import T0_MS, labels

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024


def sample(
    metric: str, value, t_ms: int | None = T0_MS, h: int = 0, g: int = 0, label_text: str | None = None
) -> str:
    stamp = f" {t_ms}" if t_ms is not None else ""
    return f"{metric}{{{label_text or labels(h, g)}}} {value}{stamp}\n"


def good_text() -> str:
    return sample("DCGM_FI_DEV_GPU_TEMP", 50) + sample("DCGM_FI_DEV_GPU_TEMP", 51, T0_MS + 30_000)


def zstd_zeros(path: Path, total: int) -> None:
    """`total` zero bytes zstd-compressed, streamed a MiB at a time: neither side holds them whole."""
    with pa.OSFile(str(path), "wb") as file, pa.CompressedOutputStream(file, "zstd") as out:
        chunk = bytes(MiB)
        for _ in range(total // MiB):
            out.write(chunk)


def gzip_members(count: int) -> bytes:
    """`count` gzip members of a MiB of zeros each (~1 KB apiece): `count` MiB once inflated."""
    return gzip.compress(bytes(MiB), compresslevel=9) * count


# Runs the CLI and, as the interpreter exits, writes the process's own peak RSS (VmHWM, kB) to a file. Not
# wait4's ru_maxrss: Linux carries the forking process's peak into the child at exec, so a child of a pytest
# worker that had grown to 570 MiB reported 570 MiB whatever it did itself.
_PEAK_WRAPPER = """
import atexit, os, re, runpy, sys
def _write_peak():
    status = open("/proc/self/status").read()
    with open(os.environ["GOODPUT_TEST_PEAK_FILE"], "w") as out:
        out.write(re.search(r"VmHWM:\\s+(\\d+)", status).group(1))
atexit.register(_write_peak)
sys.argv = ["goodput", *sys.argv[1:]]
runpy.run_module("engine.cli", run_name="__main__")
"""


def peak_rss_mib(argv: list[str], tmp_path: Path) -> tuple[int, str, float]:
    """Run the CLI in a child; its exit status, stderr and its own peak resident memory in MiB."""
    peak_file = tmp_path / "peak_kib"
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_WRAPPER, *argv],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GOODPUT_TEST_PEAK_FILE": str(peak_file)},
    )
    return done.returncode, done.stderr.decode(), int(peak_file.read_text()) / 1024


# ----- compression ---------------------------------------------------------------------------------------------


def test_a_zstd_bomb_is_refused_by_the_cli_without_inflating_it(tmp_path, store_dir):
    bomb = tmp_path / "node001.prom.zst"
    zstd_zeros(bomb, 2048 * MiB)  # 2 GiB of zeros: ~65 KB on disk
    assert bomb.stat().st_size < 200_000
    code, err, peak = peak_rss_mib(["ingest", "dcgm", str(bomb), "--store", str(store_dir)], tmp_path)
    assert code == 2 and err.count("\n") == 1, err
    assert err == (
        f"goodput: error: {bomb}: zstd data inflates past {limits.MAX_INPUT_BYTES:,} bytes, over"
        " Goodput's limit (engine/limits.py MAX_INPUT_BYTES); nothing was read\n"
    )
    assert peak < 400, f"peak {peak:.0f} MiB: the bomb was held in memory"  # the CLI alone: ~130 MiB
    assert not (store_dir / "runs").exists() or not list((store_dir / "runs").iterdir())


def test_a_gzip_bomb_upload_shows_the_cli_line(tmp_path, store_dir, monkeypatch, capsys):
    # a lower limit keeps this cheap; the zstd test above holds the real one
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 64 * MiB)
    data = gzip_members(100)  # 100 MiB inflated from ~100 KB
    monkeypatch.chdir(tmp_path)
    Path("bomb.prom").write_bytes(data)
    assert main(["ingest", "dcgm", "bomb.prom", "--store", str(store_dir)]) == 2
    line = capsys.readouterr().err
    with pytest.raises(GoodputError) as caught:
        uploads.import_telemetry(Store(store_dir), dcgm=[("bomb.prom", data)])
    assert line == f"goodput: error: {caught.value}\n"
    assert "bomb.prom: gzip data inflates past 67,108,864 bytes" in line
    assert Store(store_dir).run_ids() == []


@pytest.mark.parametrize(
    "pack",
    [
        pytest.param(lambda b: gzip.compress(b), id="gzip"),
        pytest.param(lambda b: zlib.compress(b, 9), id="zlib"),
        pytest.param(lambda b: pa.compress(b, "zstd", asbytes=True), id="zstd"),
        pytest.param(
            lambda b: pa.compress(b[:40], "zstd", asbytes=True) + pa.compress(b[40:], "zstd", asbytes=True),
            id="zstd-two-frames",
        ),
    ],
)
def test_compressed_files_and_uploads_read_as_the_plain_text(tmp_path, pack):
    plain = ingest_dcgm([("n.prom", good_text().encode())])
    path = tmp_path / "n.prom"
    path.write_bytes(pack(good_text().encode()))
    for item in (path, ("n.prom", pack(good_text().encode()))):
        run = ingest_dcgm([item])
        assert run.tables["gpu_samples"].equals(plain.tables["gpu_samples"])


def test_compressed_inputs_are_bounded_by_the_limit(monkeypatch):
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 5 * MiB)
    with pytest.raises(GoodputError, match=r"^z\.prom: zlib data inflates past 5,242,880 bytes"):
        ingest_dcgm([("z.prom", zlib.compress(bytes(6 * MiB)))])
    with pytest.raises(GoodputError, match=r"^k\.log: gzip data inflates past 5,242,880 bytes"):
        ingest_kernel_logs([("k.log", gzip_members(6))])
    # exactly at the limit is allowed: the text is then read (and found empty of samples)
    with pytest.raises(GoodputError, match=r"^e\.prom: (nothing to ingest|.*line)"):
        ingest_dcgm([("e.prom", gzip.compress(b"\n" * (5 * MiB)))])


def test_compression_inside_compression_and_corrupt_data_are_refused():
    inner = pa.compress(good_text().encode(), "zstd", asbytes=True)
    with pytest.raises(GoodputError, match=r"^x\.prom: zstd data inside gzip data; inflate the outer layer"):
        ingest_dcgm([("x.prom", gzip.compress(inner))])
    with pytest.raises(GoodputError, match=r"^t\.prom: corrupt or truncated gzip data"):
        ingest_dcgm([("t.prom", gzip.compress(good_text().encode())[:-12])])
    with pytest.raises(GoodputError, match=r"^c\.prom: corrupt or truncated zstd data"):
        ingest_dcgm([("c.prom", b"\x28\xb5\x2f\xfd" + b"\xff" * 40)])
    with pytest.raises(GoodputError, match=r"^y\.prom: corrupt or truncated zlib data"):
        ingest_dcgm([("y.prom", zlib.compress(good_text().encode())[:-6])])


def test_plain_inputs_past_the_limit_are_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 1000)
    big = tmp_path / "big.prom"
    big.write_bytes(good_text().encode() * 20)
    for item, name in (
        (big, str(big)),
        (("up.prom", big.read_bytes()), "up.prom"),
        (Path("/dev/zero"), "/dev/zero"),
    ):
        with pytest.raises(GoodputError, match=rf"^{name}: more than 1,000 bytes, over Goodput's limit"):
            ingest_dcgm([item])


# ----- lines, hosts, GPUs -------------------------------------------------------------------------------------


def test_a_long_line_is_an_error_naming_it(monkeypatch):
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", 400)
    long_label = labels(0, 0) + ',note="' + "x" * 400 + '"'
    text = good_text() + sample("DCGM_FI_DEV_GPU_TEMP", 52, T0_MS + 60_000, label_text=long_label)
    with pytest.raises(
        GoodputError, match=r"^l\.prom, line 3: 6\d\d bytes in one line, over Goodput's limit of 400"
    ):
        ingest_dcgm([("l.prom", text.encode())])
    exact = text.replace("} 5", "}\t5")  # tabs: the exact reader
    with pytest.raises(GoodputError, match=r"^l\.prom, line 3: \d+ bytes in one line"):
        ingest_dcgm([("l.prom", exact.encode())])
    log = "[  10.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, " + "y" * 500 + "\n"
    with pytest.raises(GoodputError, match=r"^k\.log, line 2: \d+ bytes in one line"):
        ingest_kernel_logs([("k.log", ("[  1.0] boot\n" + log).encode())])


def test_too_many_hosts_or_gpus_name_the_line_that_passes_the_limit(monkeypatch):
    monkeypatch.setattr(limits, "MAX_HOSTS", 2)
    text = "".join(sample("DCGM_FI_DEV_GPU_TEMP", 50, h=h) for h in range(3))
    with pytest.raises(GoodputError, match=r"^h\.prom, line 3: more than 2 hosts, over Goodput's limit"):
        ingest_dcgm([("h.prom", text.encode())])
    monkeypatch.setattr(limits, "MAX_HOSTS", 100)
    crowded = "".join(
        sample("DCGM_FI_DEV_GPU_TEMP", 50, label_text=f'UUID="GPU-{u}",Hostname="big"')
        for u in range(limits.MAX_GPUS_PER_HOST + 1)
    )
    with pytest.raises(GoodputError, match=r"^g\.prom, line 73: host 'big' has more than 72 GPUs"):
        ingest_dcgm([("g.prom", crowded.encode())])
    monkeypatch.setattr(limits, "MAX_CLUSTER_GPUS", 3)
    text = "".join(sample("DCGM_FI_DEV_GPU_TEMP", 50, h=h, g=g) for h in range(2) for g in range(2))
    with pytest.raises(GoodputError, match=r"^c\.prom, line 4: more than 3 GPUs"):
        ingest_dcgm([("c.prom", text.encode())])


def test_hosts_and_gpus_are_bounded_across_files_and_batches(monkeypatch):
    monkeypatch.setattr(limits, "MAX_CLUSTER_GPUS", 3)
    two = "".join(sample("DCGM_FI_DEV_GPU_TEMP", 50, h=0, g=g) for g in range(2))
    other = "".join(sample("DCGM_FI_DEV_GPU_TEMP", 50, h=1, g=g, t_ms=T0_MS + 1) for g in range(2))
    observer = Observer()
    observer.add(parse_dcgm([Source("a.prom", two.encode())]))
    before = dict(vars(observer))
    with pytest.raises(GoodputError, match=r"^the inputs name 4 GPUs, over Goodput's limit of 3"):
        observer.add(parse_dcgm([Source("b.prom", other.encode())]))
    # refused whole: nothing of the refused batch stays behind
    assert all(vars(observer)[k] is before[k] or vars(observer)[k] == before[k] for k in before)
    assert observer.hosts["hostname"].to_list() == ["node000"]


def test_kernel_log_gpus_per_host_are_bounded():
    lines = "".join(f"[  {i + 1}.0] NVRM: Xid (PCI:0000:{i:02x}:00): 79, pid=1\n" for i in range(73))
    with pytest.raises(GoodputError, match=r"^node9\.log, line 73: host 'node9' has more than 72 GPUs"):
        ingest_kernel_logs([("node9.log", lines.encode())])


# ----- clocks --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stamp", "words"),
    [
        (-5, r"timestamp -5 ms \(1969-12-31\) is before 2000-01-01"),
        (0, r"timestamp 0 ms \(1970-01-01\) is before 2000-01-01"),
        (
            915_148_800_000,
            r"timestamp 915148800000 ms \(1999-01-01\) is before 2000-01-01 \(engine/limits.py EARLIEST_TIMESTAMP_S\)",
        ),
        (
            10**17,
            r"timestamp 100000000000000000 ms \(year 3,170,844\) is more than 86,400 s ahead of this"
            r" machine's clock \(engine/limits.py MAX_CLOCK_AHEAD_S\)",
        ),
        (2**63 - 1, r"timestamp 9223372036854775807 ms \(year 292,278,995\) is more than 86,400 s ahead"),
    ],
)
def test_dcgm_timestamps_out_of_range_name_file_and_line(stamp, words):
    text = good_text() + sample("DCGM_FI_DEV_GPU_TEMP", 52, stamp)
    with pytest.raises(GoodputError, match=rf"^t\.prom, line 3: {words}"):
        ingest_dcgm([("t.prom", text.encode())])


def test_a_timestamp_past_int64_is_an_error_too():
    with pytest.raises(
        GoodputError, match=r"^t\.prom, line 1: timestamp '99999999999999999999' is not an integer"
    ):
        ingest_dcgm([("t.prom", sample("DCGM_FI_DEV_GPU_TEMP", 52, 99999999999999999999).encode())])


def test_a_span_longer_than_a_run_names_the_latest_sample(monkeypatch):
    late = T0_MS - 20 * 365 * bounds.DAY_MS  # twenty years before T0: both in range, the span is not
    text = sample("DCGM_FI_DEV_GPU_TEMP", 50) + sample("DCGM_FI_DEV_GPU_TEMP", 51, late)
    with pytest.raises(
        GoodputError,
        match=r"^s\.prom, line 1: timestamp \d+ ms \(2024-12-02\) is 7,300 days after"
        r" the earliest \(s\.prom, line 2\); a run may span at most 3,650 days",
    ):
        ingest_dcgm([("s.prom", text.encode())])


def test_the_cli_exits_2_with_one_line_for_a_bad_clock(tmp_path, store_dir, capsys):
    path = tmp_path / "clock.prom"
    path.write_text(good_text() + sample("DCGM_FI_DEV_GPU_TEMP", 52, 10**17))
    assert main(["ingest", "dcgm", str(path), "--store", str(store_dir)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"goodput: error: {path}, line 3: timestamp 100000000000000000 ms")
        and err.count("\n") == 1
    )


def test_a_file_mtime_out_of_range_gives_way_to_the_clock(tmp_path):
    path = tmp_path / "old.prom"
    path.write_text(sample("DCGM_FI_DEV_GPU_TEMP", 50, None))
    os.utime(path, (0, 0))  # what some archive tools leave
    run = ingest_dcgm([path])
    assert abs((datetime.now(UTC) - run.started_at).total_seconds()) < 60


@pytest.mark.parametrize(
    ("log", "words"),
    [
        (
            "[Fri Jan  1 10:00:00 1999] NVRM: Xid (PCI:0000:18:00): 79, pid=1\n",
            r"line 1: timestamp \d+ ms \(1999-01-01\)"
            r" is before 2000-01-01",
        ),
        (
            "2224-01-01T00:00:00+00:00 h kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1\n",
            r"line 1: timestamp \d+ ms \(2224-01-01\) is more than 86,400 s ahead",
        ),
        (
            "[    1.0] boot\n[99999999999.5] NVRM: Xid (PCI:0000:18:00): 79, pid=1\n",
            r"line 2: 99,999,999,998 s from the file's first since-boot stamp, more than a run may span \(3,650 days",
        ),
    ],
)
def test_kernel_log_clocks_out_of_range_name_the_line(log, words):
    with pytest.raises(GoodputError, match=rf"^k\.log, {words}"):
        ingest_kernel_logs([("k.log", log.encode())])


def test_logs_and_scrapes_together_may_not_span_more_than_a_run():
    log = "2001-01-01T00:00:00+00:00 node000 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1\n"
    with pytest.raises(
        GoodputError, match=r"^s\.prom, k\.log: together they span 8,736 days, over Goodput's limit"
    ):
        ingest_dcgm([("s.prom", good_text().encode())], kernel_logs=[("k.log", log.encode())])


# ----- values and labels ---------------------------------------------------------------------------------------


def test_values_no_column_holds_and_bad_gpu_labels_are_counted_skips():
    text = good_text() + "".join(
        [
            sample("DCGM_FI_DEV_GPU_TEMP", "1e308", T0_MS + 60_000),  # inf as Float32
            sample("DCGM_FI_DEV_XID_ERRORS", "3e9", T0_MS + 60_000),  # past Int32
            sample("DCGM_FI_DEV_XID_ERRORS", "79.5", T0_MS + 90_000),  # no XID is a fraction
            sample("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "-1", T0_MS + 60_000),
            sample("DCGM_FI_DEV_POWER_USAGE", "-3e38", T0_MS + 60_000),  # fits Float32: kept
            sample("DCGM_FI_DEV_GPU_TEMP", 50, label_text='gpu="4000000000",UUID="GPU-x",Hostname="node000"'),
            sample("DCGM_FI_DEV_GPU_TEMP", 50, label_text='gpu="72",Hostname="node000"'),
            sample("DCGM_FI_DEV_GPU_TEMP", 50, label_text='gpu="zero",Hostname="node000"'),
        ]
    )
    run = ingest_dcgm([("v.prom", text.encode())])
    assert run.summary["skipped"] == {bounds.SKIP_VALUE: 4, bounds.SKIP_GPU_LABEL: 3}
    assert run.summary["samples"] == 3 and run.summary["gpus"] == 1 and run.tables["xid_events"].height == 0
    assert run.tables["gpu_samples"].select("temp_c", "power_w").rows() == [
        (50.0, None),
        (51.0, None),
        (None, pl.Series([-3e38], dtype=pl.Float32)[0]),
    ]


# ----- Hypothesis: any timestamp, value or label is an error naming the file or a counted skip ----------------

METRICS = st.sampled_from(
    [
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_SM_CLOCK",
    ]
)
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["1e308", "3e9", "-0", "+Inf", "NaN"]),
)
STAMPS = st.one_of(st.none(), st.integers(-(2**64), 2**64), st.integers(T0_MS - 10**12, T0_MS + 10**12))
GPUS = st.one_of(st.integers(-5, 2**40).map(str), st.sampled_from(["", "x", "1.5", "0x1", " 3"]))
ROWS = st.lists(st.tuples(METRICS, VALUES, STAMPS, GPUS, st.integers(0, 3)), min_size=1, max_size=12)


def _text(rows) -> str:
    return "".join(
        sample(m, v, t, label_text=f'gpu="{g}",UUID="GPU-{h}-{g}",Hostname="n{h}"') for m, v, t, g, h in rows
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROWS)
def test_any_stamp_value_or_label_is_an_error_or_a_counted_skip(rows):
    try:
        run = ingest_dcgm([("p.prom", _text(rows).encode())])
    except GoodputError as err:
        assert str(err).startswith("p.prom") and "\n" not in str(err)
        return
    counted = run.summary["samples"] + sum(run.summary["skipped"].values())
    assert counted == len(rows)
    samples = run.tables["gpu_samples"]
    for column in ("temp_c", "fb_used_mib"):
        assert samples[column].drop_nulls().is_finite().all()
    assert run.duration_s <= limits.MAX_RUN_DAYS * 86_400
    assert run.tables["gpus"]["index"].drop_nulls().is_between(0, limits.MAX_GPUS_PER_HOST - 1).all()


# One row a series (Prometheus refuses a series twice in one scrape), stamps that parse as int64 (it refuses
# others): what is left is what a live scrape must take, skipping the bad samples.
LIVE_ROWS = st.lists(
    st.tuples(
        METRICS,
        VALUES,
        st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), STAMPS),
        GPUS,
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=12,
    unique_by=lambda r: (r[0], r[3], r[4]),
).filter(lambda rows: all(t is None or -(2**63) <= t < 2**63 for _, _, t, _, _ in rows))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LIVE_ROWS)
def test_a_live_parse_skips_every_bad_sample_and_raises_for_none(rows):
    window = bounds.Window(T0_MS - 10**11, T0_MS + 10**11)
    parsed = parse_dcgm([Source("live", _text(rows).encode(), mtime=T0_MS / 1000)], live_window=window)
    assert parsed.samples.height + sum(parsed.skipped.values()) == len(rows)
    assert parsed.samples["t_ms"].is_between(window.lo_ms, window.hi_ms).all()
    Observer().add(parsed)  # and the tables build: no overflow on the way to the store


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["[{s}]", "{k}"]), st.floats(0, 1e25, allow_nan=False)),
        min_size=1,
        max_size=6,
    )
)
def test_any_since_boot_stamp_is_an_error_or_a_run_within_its_span(stamps):
    text = "".join(
        (form.format(s=f"{s:.6f}") + " NVRM: Xid (PCI:0000:18:00): 79, pid=1\n")
        if form == "[{s}]"
        else f"4,1,{int(s)},-;NVRM: Xid (PCI:0000:18:00): 79, pid=1\n"
        for form, s in stamps
    )
    try:
        run = ingest_kernel_logs([("b.log", text.encode())])
    except GoodputError as err:
        assert str(err).startswith("b.log") and "\n" not in str(err)
        return
    assert run.duration_s <= limits.MAX_RUN_DAYS * 86_400 and run.summary["xid_events"] == len(stamps)
