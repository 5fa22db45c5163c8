"""Size-bounded is memory-bounded (issue 27, item 7): big valid inputs are read in bounded blocks, or refused
early with one line, and each case here runs in a child process under an address-space cap (RLIMIT_AS).

The address-space cap is the child's own baseline (its virtual size after ingesting a tiny file: Python, Polars'
threads and arenas, ~2.7 GiB) plus a margin: a child past it aborts (exit 134, as in the issue). Virtual size is
elastic, though (under a cap, allocators reserve less: the old whole-text reader still fit 300 MiB under a cap of
+0.7 GiB), so each case also checks its peak resident memory (VmHWM) over the baseline's, which the old readers
passed: a 300 MiB DCGM scrape took them 1,111 MB RSS (927 MB over the baseline), read in blocks it takes 442 MB
(258 over).
The full-size figures (1,000 MiB inflated, a 700 MB sacct answer) are bench/bench_memory.py's.
"""

import os
import re
import resource
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from dashboard import uploads
from engine import limits
from engine.errors import GoodputError
from engine.ingest.slurm import SACCT_FIELDS, SlurmError, SlurmSource, read_jobs, read_nodes
from engine.replay.run import replay_file
from tests.fixtures.ingest.bulk import write_dcgm

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024
# What a child may take above its baseline: address space (a backstop: Polars' allocator reserves 0.3-0.8 GiB
# more or less from run to run), and resident memory, the check that tells the readers apart (the block-wise
# ones take ~0.26 GiB more RSS than the baseline for the 300 MiB scrape, the old whole-text one 0.9 GiB).
MARGIN = 1024 * MiB
RSS_MARGIN = 550 * MiB
SACCT_HEADER = "\x1f".join(SACCT_FIELDS)

# Runs `python -c` code in a child; prints the child's peak virtual size and peak RSS (KiB) on stderr at exit.
_CHILD = """
import atexit, re, sys
def _peak():
    status = open("/proc/self/status").read()
    print("VmPeak", *re.search(r"VmPeak:\\s+(\\d+).*VmHWM:\\s+(\\d+)", status, re.S).groups(), file=sys.stderr)
atexit.register(_peak)
"""
PEAKS: dict[str, int] = {}  # the last child's peak RSS (VmHWM, bytes)


def run_capped(code: str, cap: int | None, *args: str, timeout: int = 120) -> tuple[int, str, str, int]:
    """(exit status, stdout, stderr less the peak line, peak virtual KiB) of `code` in a child capped at `cap`;
    its peak RSS is left in PEAKS["rss"]."""

    def limit() -> None:
        if cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    done = subprocess.run(
        [sys.executable, "-c", _CHILD + textwrap.dedent(code), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,  # noqa: PLW1509 (no threads to deadlock: the fork runs setrlimit only)
        env={**os.environ, "PYTHONPATH": str(ROOT), "POLARS_MAX_THREADS": "2"},
    )
    found = re.search(r"VmPeak (\d+) (\d+)\n", done.stderr)
    err = re.sub(r"VmPeak \d+ \d+\n", "", done.stderr)
    PEAKS["rss"] = int(found.group(2)) * 1024 if found else 0
    return done.returncode, done.stdout, err, int(found.group(1)) if found else 0


CLI = """
import runpy, sys
sys.argv = ["goodput", *sys.argv[1:]]
runpy.run_module("engine.cli", run_name="__main__")
"""


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> int:
    """The CLI's peak virtual size (bytes) ingesting a tiny DCGM file: Python, Polars, DuckDB, no data."""
    tmp = tmp_path_factory.mktemp("baseline")
    write_dcgm(tmp / "tiny.prom", 1, hosts=1)
    code, _, err, peak_kib = run_capped(
        CLI, None, "ingest", "dcgm", str(tmp / "tiny.prom"), "--store", str(tmp)
    )
    assert code == 0, err
    PEAKS["baseline_rss"] = PEAKS["rss"]
    return peak_kib * 1024


def assert_rss_bounded() -> None:
    """The last child's peak RSS is within RSS_MARGIN of the baseline's."""
    over = PEAKS["rss"] - PEAKS["baseline_rss"]
    assert over < RSS_MARGIN, f"peak RSS {over / MiB:.0f} MiB over the baseline"


@pytest.fixture(scope="module")
def big_gzip(tmp_path_factory) -> Path:
    """A valid DCGM scrape of 64 hosts x 8 GPUs, 300 MiB of text gzipped to ~15 MB (samples: its `.samples`)."""
    path = tmp_path_factory.mktemp("big") / "scrapes.prom.gz"
    BIG_SAMPLES.append(write_dcgm(path, 300 * MiB, compress=True))
    return path


BIG_SAMPLES: list[int] = []


def _no_runs(store: Path) -> bool:
    return not (store / "runs").exists() or not any((store / "runs").iterdir())


# ----- DCGM ----------------------------------------------------------------------------------------------------


def test_a_big_gzip_dcgm_file_ingests_under_a_memory_cap(big_gzip, baseline, tmp_path):
    store = tmp_path / "store"
    code, out, err, peak = run_capped(
        CLI, baseline + MARGIN, "ingest", "dcgm", str(big_gzip), "--store", str(store), "--json"
    )
    assert code == 0, f"exit {code}: {err[-500:]}"
    assert f'"samples": {BIG_SAMPLES[0]}' in out
    assert peak * 1024 - baseline < MARGIN
    assert_rss_bounded()


def test_a_big_gzip_upload_imports_under_a_memory_cap(big_gzip, baseline, tmp_path):
    """The Data page's path: the upload's bytes in memory, parsed by the same block-wise reader."""
    code, out, err, _ = run_capped(
        """
        import sys
        from pathlib import Path
        from dashboard.uploads import import_telemetry
        from engine.store import Store
        data = Path(sys.argv[1]).read_bytes()
        print(import_telemetry(Store(sys.argv[2]), dcgm=[("scrapes.prom.gz", data)]).summary["samples"])
        """,
        baseline + MARGIN,
        str(big_gzip),
        str(tmp_path / "store"),
    )
    assert code == 0, f"exit {code}: {err[-500:]}"
    assert out.strip() == str(BIG_SAMPLES[0])
    assert_rss_bounded()


def test_too_many_samples_are_refused_early_with_one_line(big_gzip, baseline, tmp_path):
    store = tmp_path / "store"
    code, _, err, _ = run_capped(
        """
        import runpy, sys
        from engine import limits
        limits.MAX_INGEST_SAMPLES = 100_000
        sys.argv = ["goodput", *sys.argv[1:]]
        runpy.run_module("engine.cli", run_name="__main__")
        """,
        baseline + MARGIN,
        "ingest",
        "dcgm",
        str(big_gzip),
        "--store",
        str(store),
    )
    assert code == 2
    assert re.fullmatch(
        rf"goodput: error: {re.escape(str(big_gzip))}, line \d+: more than 100,000 samples in one ingest, over"
        r" Goodput's limit \(engine/limits.py MAX_INGEST_SAMPLES\); split the input into several runs\n",
        err,
    ), err
    assert _no_runs(store)
    assert_rss_bounded()


def test_blocks_give_the_same_run_as_one_read(tmp_path, monkeypatch):
    """Lines split across blocks, a block boundary inside the exporter's HELP/TYPE lines: the same tables."""
    from engine.ingest import inflate, ingest_dcgm

    path = tmp_path / "s.prom"
    write_dcgm(path, 2 * MiB, hosts=4)
    whole = ingest_dcgm([path])
    monkeypatch.setattr(inflate.text_blocks, "__defaults__", (64 * 1024 + 17,))
    for item in (path, ("s.prom", path.read_bytes())):
        blocks = ingest_dcgm([item])
        for table in ("gpu_samples", "gpus", "hosts", "host_states"):
            assert blocks.tables[table].equals(whole.tables[table]), table
        assert blocks.summary == whole.summary


# ----- Slurm (the watch's sacct and sinfo) ---------------------------------------------------------------------


def fake_slurm(folder: Path, sacct: str | None = None, sinfo: str | None = None) -> SlurmSource:
    """Executables named like Slurm's commands in `folder`: each a Python script printing what it is given."""
    folder.mkdir(exist_ok=True)
    scripts = {
        "sacct": sacct,
        "sinfo": sinfo,
        "scontrol": "print('ClusterName = fake\\nSLURM_VERSION = 22.05.8')",
    }
    for name, body in scripts.items():
        if body is None:
            continue
        path = folder / name
        path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
        path.chmod(0o755)
    return SlurmSource(bin_dir=str(folder))


def sacct_record(job: int, name: str = "train", nodes: str = "gpu001") -> str:
    fields = [
        str(job),
        name,
        "alice",
        "gpu",
        "2024-12-02T10:00:00",
        "2024-12-02T10:00:05",
        "2024-12-02T11:00:00",
        "COMPLETED",
        "0:0",
        "billing=8,cpu=8,gres/gpu=8,node=1",
        "billing=8,cpu=8,gres/gpu=8,node=1",
        nodes,
    ]
    return "\x1f".join(fields)


# A sacct that prints a header and `sys.argv`-free N records of ~300 bytes, written block by block.
BIG_SACCT = """
N = {jobs}
name = "llama3-405b-pretrain-" + "x" * 200
out = sys.stdout
out.write({header!r} + "\\n")
for start in range(0, N, 10_000):
    out.write("".join(
        f"{{j}}\\x1f{{name}}\\x1falice\\x1fgpu\\x1f2024-12-02T10:00:00\\x1f2024-12-02T10:00:05\\x1f"
        f"2024-12-02T11:00:00\\x1fCOMPLETED\\x1f0:0\\x1fbilling=8,cpu=8,gres/gpu=8,node=1\\x1f"
        f"billing=8,cpu=8,gres/gpu=8,node=1\\x1fgpu{{j % 4096:04d}}\\n"
        for j in range(start + 1, min(start + 10_000, N) + 1)
    ))
"""

READ_JOBS = """
import sys
from engine.ingest.slurm import SlurmSource, read_jobs
from engine.errors import GoodputError
try:
    jobs = read_jobs(SlurmSource(bin_dir=sys.argv[1]))
except GoodputError as err:
    print(f"error: {err}", file=sys.stderr)
    raise SystemExit(2)
print(jobs.jobs.height, jobs.attempts.height)
"""


def test_a_big_sacct_answer_is_read_in_blocks_under_a_memory_cap(tmp_path, baseline):
    """390 MB of sacct text, a million jobs of 220-character names: the old whole-text read peaked at 2.4 GB
    RSS, read in blocks 0.9 GB (0.35 GB of it the jobs returned). Virtual size says little here (Polars' arenas
    reserve more or less as they please), so the cap is a safety and the peak RSS is what is checked."""
    jobs = 1_000_000
    fake_slurm(tmp_path / "bin", sacct=BIG_SACCT.format(jobs=jobs, header=SACCT_HEADER))
    code, out, err, _ = run_capped(READ_JOBS, baseline + 2048 * MiB, str(tmp_path / "bin"))
    assert code == 0, f"exit {code}: {err[-500:]}"
    assert out.split() == [str(jobs), str(jobs)]
    assert PEAKS["rss"] < 1300 * MiB, f"peak RSS {PEAKS['rss'] / MiB:.0f} MiB"


def test_sacct_read_in_small_blocks_gives_what_one_read_gives(monkeypatch):
    from engine.ingest import slurm_text as slurm

    lines = [SACCT_HEADER]
    for i in range(2000):
        job = 1 + (i * 7919) % 700  # repeated ids: requeued jobs, several records each
        record = sacct_record(job, f"n{i}", ("gpu[001-003]", "None assigned", "gpu002")[i % 3]).split("\x1f")
        record[4] = f"2024-12-02T10:{i % 60:02d}:00"
        record[5] = "Unknown" if i % 5 == 0 else f"2024-12-02T11:{i % 60:02d}:00"
        record[7] = ("COMPLETED", "PENDING", "REQUEUED", "FAILED")[i % 4]
        lines.append("\x1f".join(record) + ("\nnot\x1fa record" if i % 400 == 0 else ""))
    data = ("\n".join(lines) + "\n").encode()
    whole = slurm.parse_sacct(data)
    monkeypatch.setattr(slurm, "SACCT_BLOCK_BYTES", 4096)
    pieces = slurm.parse_sacct_stream([data[i : i + 1000] for i in range(0, len(data), 1000)])
    assert pieces.jobs.equals(whole.jobs) and pieces.attempts.equals(whole.attempts)
    assert pieces.skipped == whole.skipped == 5
    assert whole.attempts.height > whole.jobs.height > 600


def test_more_sacct_records_than_a_trace_may_hold_are_refused_early(tmp_path, baseline):
    code, _, err, _ = run_capped(
        "from engine import limits\nlimits.MAX_TRACE_JOBS = 50_000\n" + READ_JOBS,
        baseline + MARGIN,
        str(
            fake_slurm(tmp_path / "bin", sacct=BIG_SACCT.format(jobs=1_000_000, header=SACCT_HEADER)).bin_dir
        ),
    )
    assert code == 2
    assert err.startswith("error: sacct --allusers") and err.count("\n") == 1
    assert err.endswith(
        ": more than 50,000 job records, over Goodput's limit (engine/limits.py MAX_TRACE_JOBS)\n"
    )


def test_a_10_mb_sacct_line_is_refused_by_the_watch_as_by_replay(tmp_path, monkeypatch):
    from engine.ingest import slurm_text as slurm

    long_name = "n" * (10 * MiB)
    text = SACCT_HEADER + "\n" + sacct_record(1) + "\n" + sacct_record(2, long_name) + "\n"
    (tmp_path / "answer.txt").write_text(text)
    source = fake_slurm(
        tmp_path / "bin", sacct=f"sys.stdout.write(open({str(tmp_path / 'answer.txt')!r}).read())"
    )
    with pytest.raises(SlurmError) as watched:
        read_jobs(source)
    nbytes = len(sacct_record(2, long_name))
    assert str(watched.value).startswith("sacct --allusers")
    assert str(watched.value).endswith(
        f", line 3: {nbytes:,} bytes long, over Goodput's limit of {limits.MAX_LINE_BYTES:,} bytes a line"
        " (engine/limits.py)"
    )
    # read in blocks smaller than the line, it is refused before its end arrives, in the same words
    monkeypatch.setattr(slurm, "SACCT_BLOCK_BYTES", 64 * 1024)
    with pytest.raises(SlurmError) as early:
        read_jobs(source)
    assert str(early.value).endswith(
        f", line 3: more than {limits.MAX_LINE_BYTES:,} bytes long, over Goodput's limit of"
        f" {limits.MAX_LINE_BYTES:,} bytes a line (engine/limits.py)"
    )
    replay_text = text.replace("\x1f", "|")
    with pytest.raises(GoodputError) as replayed:
        replay_file(replay_text.encode(), fmt="sacct", name="jobs.txt")
    assert str(replayed.value) == (
        f"jobs.txt, line 3: {nbytes:,} bytes long, over Goodput's limit of {limits.MAX_LINE_BYTES:,} bytes a line"
        " (engine/limits.py)"
    )


def test_long_job_names_are_cut_the_same_by_the_watch_and_replay(tmp_path):
    name = "a" * 5000
    text = SACCT_HEADER + "\n" + sacct_record(1, name) + "\n"
    (tmp_path / "answer.txt").write_text(text)
    source = fake_slurm(
        tmp_path / "bin", sacct=f"sys.stdout.write(open({str(tmp_path / 'answer.txt')!r}).read())"
    )
    watched = read_jobs(source).jobs["name"][0]
    replayed = replay_file(text.replace("\x1f", "|").encode(), fmt="sacct", name="j.txt").tables["jobs"][
        "name"
    ][0]
    assert watched == replayed == "a" * (limits.MAX_NAME_CHARS - 1) + "…"


@pytest.mark.parametrize("depth", [limits.MAX_JSON_DEPTH + 1, 100_000])
def test_a_deeply_nested_sinfo_answer_is_one_line_not_a_traceback(tmp_path, depth):
    body = '{"errors": [], "nodes": [' + "[" * depth + "]" * depth + "]}"
    source = fake_slurm(tmp_path / "bin", sinfo=f"sys.stdout.write({body!r})")
    with pytest.raises(SlurmError) as err:
        read_nodes(source)
    assert str(err.value) == (
        f"sinfo --json: nested deeper than Goodput's limit of {limits.MAX_JSON_DEPTH} (engine/limits.py)"
    )


def test_a_deeply_nested_sinfo_answer_under_a_memory_cap(tmp_path, baseline):
    depth = 1_000_000
    fake_slurm(
        tmp_path / "bin", sinfo=f"sys.stdout.write('{{\"nodes\": ' + '[' * {depth} + ']' * {depth} + '}}')"
    )
    code, _, err, _ = run_capped(
        """
        import sys
        from engine.ingest.slurm import SlurmSource, read_nodes
        from engine.errors import GoodputError
        try:
            read_nodes(SlurmSource(bin_dir=sys.argv[1]))
        except GoodputError as err:
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2)
        """,
        baseline + MARGIN,
        str(tmp_path / "bin"),
    )
    assert (code, err) == (
        2,
        "error: sinfo --json: nested deeper than Goodput's limit of 32 (engine/limits.py)\n",
    )


def test_sinfo_keeps_only_the_keys_it_reads(tmp_path):
    node = {
        "name": "gpu001",
        "state": "idle",
        "state_flags": [],
        "gres": "gpu:8",
        "partitions": ["gpu"],
        "features": "x" * 1000,
        "extra": {"deep": {"er": [1, 2, 3]}},
    }
    import json

    body = json.dumps({"errors": [], "nodes": [node, {**node, "name": "gpu002"}]})
    source = fake_slurm(tmp_path / "bin", sinfo=f"sys.stdout.write({body!r})")
    nodes = read_nodes(source)
    assert nodes["node"].to_list() == ["gpu001", "gpu002"] and nodes["gpus"].to_list() == [8, 8]


# ----- the Data page: imports at once --------------------------------------------------------------------------


def test_a_third_import_at_once_is_refused_at_once(tmp_path, monkeypatch):
    from engine.ingest import ingest_dcgm
    from engine.store import Store

    release = threading.Event()
    started = threading.Barrier(uploads.MAX_IMPORTS_AT_ONCE + 1)

    def slow_ingest(*args, **kwargs):
        started.wait(timeout=10)
        release.wait(timeout=30)
        return ingest_dcgm(*args, **kwargs)

    monkeypatch.setattr(uploads, "ingest_dcgm", slow_ingest)
    write_dcgm(tmp_path / "s.prom", 64 * 1024, hosts=1)
    data = (tmp_path / "s.prom").read_bytes()
    store = Store(tmp_path / "store")
    results: list = []

    def one() -> None:
        try:
            results.append(uploads.import_telemetry(store, dcgm=[("s.prom", data)]))
        except GoodputError as err:
            results.append(err)

    threads = [threading.Thread(target=one) for _ in range(uploads.MAX_IMPORTS_AT_ONCE)]
    for thread in threads:
        thread.start()
    started.wait(timeout=10)  # both are parsing now
    with pytest.raises(uploads.ImportsBusy) as busy:
        uploads.import_telemetry(store, dcgm=[("s.prom", data)])
    assert str(busy.value).startswith("2 imports are running on this server already")
    with pytest.raises(uploads.ImportsBusy):
        uploads.import_trace(store, ("t.csv", b"job_id\n1\n"))
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    assert all(isinstance(r, uploads.Imported) for r in results), results
    monkeypatch.setattr(uploads, "ingest_dcgm", ingest_dcgm)
    assert uploads.import_telemetry(store, dcgm=[("s.prom", data)]).summary["samples"] > 0  # slots freed
    with pytest.raises(GoodputError):  # a failed import frees its slot too
        uploads.import_telemetry(store, dcgm=[("bad.prom", b"garbage line\n")])
    assert uploads._IMPORT_SLOTS._value == uploads.MAX_IMPORTS_AT_ONCE
