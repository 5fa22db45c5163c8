"""Peak memory of big valid inputs (issue 27, item 7): `python bench/bench_memory.py` prints a table, exits 1 when
a case passes the budget.

Each case runs in a child process of its own (bench/harness.py), and its figure is that child's own peak RSS
(VmHWM):
- a DCGM scrape of 64 hosts x 8 GPUs with dcgm-exporter's labels, 1,000 MiB of text gzipped to ~47 MB, through
  `goodput ingest dcgm` (the Data page's upload reads it the same way, engine/ingest/inflate.py text_blocks);
  reading the text whole took 3.1 GB here (the issue measured 4.4 GiB, exit 134 under a 4 GB cap);
- the worst DCGM text for memory: 46-byte lines of one metric a GPU (each sample its own gpu_samples row), at
  engine/limits.py MAX_INGEST_SAMPLES, then 1,000 MiB of them (refused as the limit passes);
- a 700 MB sacct answer through the watch's read (engine/ingest/slurm.py read_jobs, a fake `sacct` on PATH):
  2,000,000 jobs of 350 bytes (MAX_TRACE_JOBS, read), and 700 MB of 150-byte records (refused at
  MAX_TRACE_JOBS as they stream); reading the answer whole took 2.4 GB for 390 MB;
- sinfo --json of 262,144 nodes as Slurm 22.05 prints them (~0.5 GB), and one nested 1,000,000 deep;
- `goodput ingest node-exporter`: MAX_INGEST_SAMPLES samples of one metric a port and time (each its own
  nic_samples row, 912 MB of text gzipped), and 1,000 MiB of newlines gzipped to ~1 MB (split whole, 256 MiB of
  them took 9 GiB);
- `goodput ingest step-times` at MAX_STEP_OPS, the worst shape measured (a forward, a backward and eight kinds of op
  around them a worker and step, named in MAX_STEP_NAME_BYTES) as CSV and as Parquet; 4,000,000 rows sharing one
  2 KB optype in 0.9 MB of Parquet (the issue's 2.2 MB took 9 GiB); the three-line CSV naming microbatch
  99,999,999 (a 2.1 GB grid).
Budget: every case under 3.5 GB peak RSS (the issue: well under 4 GB), refusals as one line.
`python bench/bench_memory.py WORD...` runs only the cases whose label holds one of the words (`step-times`).
"""

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import cpu_seconds, main_or_worker, run_in_child  # noqa: E402

BUDGET_MB = 3500
MiB = 1024 * 1024
SACCT_WRITER = """#!{python}
import sys
N, width = {jobs}, {width}
name = "job-" + "x" * max(0, width - 178)
out = sys.stdout
out.write({header!r} + "\\n")
for start in range(0, N, 20_000):
    out.write("".join(
        f"{{j}}\\x1f{{name}}\\x1falice\\x1fgpu\\x1f2024-12-02T10:00:00\\x1f2024-12-02T10:00:05\\x1f"
        f"2024-12-02T11:00:00\\x1fCOMPLETED\\x1f0:0\\x1fbilling=8,cpu=8,gres/gpu=8,node=1\\x1f"
        f"billing=8,cpu=8,gres/gpu=8,node=1\\x1fgpu{{j % 4096:04d}}\\n"
        for j in range(start + 1, min(start + 20_000, N) + 1)
    ))
"""


def short_dcgm(path: Path, lines: int) -> None:
    """46-byte lines, 8 GPUs of one host, a new timestamp every 8 lines, gzipped."""
    import gzip

    import polars as pl

    with gzip.open(path, "wb", compresslevel=1) as out:
        for start in range(0, lines, 1_000_000):
            i = pl.int_range(start, min(start + 1_000_000, lines), eager=True)
            line = pl.concat_str(
                pl.lit('DCGM_FI_DEV_GPU_TEMP{gpu="'),
                (i % 8).cast(pl.String),
                pl.lit('"} 5 '),
                (1_733_133_600_000 + i // 8 * 1000).cast(pl.String),
            )
            out.write((pl.select(line.str.join("\n")).item() + "\n").encode())


def node_exporter_file(path: Path, lines: int) -> None:
    """`lines` samples of node_infiniband_link_downed_total, 16 ports of one host (the file's name), a new
    timestamp every 16 lines: each sample its own nic_samples row. Gzipped."""
    import gzip

    import polars as pl

    with gzip.open(path, "wb", compresslevel=1) as out:
        for start in range(0, lines, 1_000_000):
            i = pl.int_range(start, min(start + 1_000_000, lines), eager=True)
            line = pl.concat_str(
                pl.lit('node_infiniband_link_downed_total{device="mlx5_'),
                (i % 8).cast(pl.String),
                pl.lit('",port="'),
                (i // 8 % 2 + 1).cast(pl.String),
                pl.lit('"} 3 '),
                (1_733_133_600_000 + i // 16 * 1000).cast(pl.String),
            )
            out.write((pl.select(line.str.join("\n")).item() + "\n").encode())


def newlines_file(path: Path, nbytes: int) -> None:
    import gzip

    with gzip.open(path, "wb", compresslevel=6) as out:
        for _ in range(nbytes // MiB):
            out.write(b"\n" * MiB)


def step_times_frame(rows: int, kinds: int = 4):
    """A complete timeline of `rows` ops: 100 dp ranks x 4 stages, each worker a forward and a backward a step
    and `kinds` kinds of op before them and `kinds` after, named in MAX_STEP_NAME_BYTES (the shape that took the
    most memory of those measured: 8 of 10 ops are laid out around the computes)."""
    import polars as pl

    from engine import limits

    per, workers = 2 + 2 * kinds, 400
    slot, worker = pl.col("i") % per, pl.col("i") // per
    name = (pl.lit("op-") + slot.cast(pl.String) + "-").str.pad_end(limits.MAX_STEP_NAME_BYTES, "x")
    return pl.DataFrame(pl.int_range(0, rows // per * per, eager=True, dtype=pl.Int64).alias("i")).select(
        dp_rank=worker // 4 % 100,
        stage=worker % 4,
        rank=worker % workers,
        step=worker // workers,
        optype=pl.when(slot == kinds)
        .then(pl.lit("forward-compute"))
        .when(slot == kinds + 1)
        .then(pl.lit("backward-compute"))
        .otherwise(name),
        start_ts=worker // workers * 100.0 + slot.cast(pl.Float64),
        duration=pl.lit(0.5),
        mb_id=pl.when((slot == kinds) | (slot == kinds + 1)).then(0).otherwise(-1),
    )


def parquet_bomb(path: Path, rows: int = 4_000_000) -> None:
    """`rows` rows of one worker whose optype is one 2 KB dictionary entry: 0.9 MB on disk."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    zeros = pa.array(np.zeros(rows, np.int8))
    optype = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int8)), pa.array(["x" * 2048]))
    times = pa.array(np.zeros(rows, np.float32))
    table = pa.table(
        {
            "dp_rank": zeros,
            "stage": zeros,
            "step": zeros,
            "optype": optype,
            "start_ts": times,
            "duration": times,
        }
    )
    pq.write_table(table, path, compression="zstd")


def worker(spec: dict) -> dict:
    from engine.errors import GoodputError

    tmp = Path(spec["tmp"])
    started, started_cpu = time.perf_counter(), cpu_seconds()
    outcome = "read"
    try:
        if spec["kind"] == "dcgm":
            from engine.ingest import ingest_dcgm
            from engine.store import Store

            run = ingest_dcgm([spec["path"]])
            Store(tmp / "store").write_run(run)
            outcome = f"{run.summary['samples']:,} samples"
        elif spec["kind"] in ("node-exporter", "step-times"):
            from engine.ingest.node_exporter import ingest_node_exporter
            from engine.ingest.step_times import ingest_step_times
            from engine.store import Store

            ingest = ingest_node_exporter if spec["kind"] == "node-exporter" else ingest_step_times
            run = ingest([spec["path"]])
            Store(tmp / "store").write_run(run)
            outcome = f"{run.summary['samples']:,} samples"
        elif spec["kind"] == "sacct":
            from engine.ingest.slurm import SlurmSource, read_jobs

            jobs = read_jobs(SlurmSource(bin_dir=spec["bin"]))
            outcome = f"{jobs.jobs.height:,} jobs"
        else:
            from engine.ingest.slurm import SlurmSource, read_nodes

            outcome = f"{read_nodes(SlurmSource(bin_dir=spec['bin'])).height:,} nodes"
    except GoodputError as err:
        text = str(err)
        outcome = "refused: " + (text if len(text) < 100 else text[:45] + " ... " + text[-50:])
    return {
        "outcome": outcome,
        "wall_s": time.perf_counter() - started,
        "cpu_s": cpu_seconds() - started_cpu,
        "peak_mb": own_peak_mb(),
    }


def own_peak_mb() -> float:
    """This process's own peak RSS (VmHWM, MB). Not ru_maxrss: Linux carries the parent's resident size at
    fork over exec into it, so a child of a parent that had just written gigabytes of input reports that."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


def fake(folder: Path, name: str, body: str) -> str:
    """`folder` with an executable `name` running `body`, and a scontrol that answers (read_nodes asks it
    whether slurmctld is up when sinfo's answer is refused)."""
    folder.mkdir(exist_ok=True)
    for file, text in ((name, body), ("scontrol", f"#!{sys.executable}\nprint('SLURM_VERSION = 22.05.8')\n")):
        (folder / file).write_text(text)
        (folder / file).chmod(0o755)
    return str(folder)


def sinfo_file(path: Path, nodes: int) -> None:
    from bench.bench_slurm import SINFO_NODE

    with path.open("w") as out:
        out.write('{"meta": {}, "errors": [], "nodes": [')
        for n in range(nodes):
            node = dict(SINFO_NODE, name=f"gpu{n:06d}", hostname=f"gpu{n:06d}", address=f"gpu{n:06d}")
            out.write(("," if n else "") + json.dumps(node))
        out.write("]}")


def main() -> int:
    from engine import limits
    from engine.ingest.slurm import SACCT_FIELDS
    from tests.fixtures.ingest.bulk import write_dcgm

    header = "\x1f".join(SACCT_FIELDS)
    python = sys.executable
    words = [w.lower() for w in sys.argv[1:]]

    def file_case(kind: str, name: str, write) -> callable:
        def prepare(tmp: Path) -> dict:
            write(tmp / name)
            return {"kind": kind, "path": str(tmp / name)}

        return prepare

    def sacct_case(jobs: int, width: int) -> callable:
        def prepare(tmp: Path) -> dict:
            body = SACCT_WRITER.format(python=python, jobs=jobs, width=width, header=header)
            return {"kind": "sacct", "bin": fake(tmp / f"sacct{jobs}", "sacct", body)}

        return prepare

    def big_sinfo(tmp: Path) -> dict:
        path = tmp / "sinfo.json"
        sinfo_file(path, limits.MAX_HOSTS)
        cat = f"#!{python}\nimport shutil, sys\nshutil.copyfileobj(open({str(path)!r}, 'rb'), sys.stdout.buffer)\n"
        label = f"sinfo --json 262,144 nodes ({path.stat().st_size / 1e6:,.0f} MB)"
        return {"kind": "sinfo", "bin": fake(tmp / "s1", "sinfo", cat), "label": label}

    def deep_sinfo(tmp: Path) -> dict:
        deep = (
            f"#!{python}\nimport sys\nsys.stdout.write('{{\"nodes\": ' + '[' * 10**6 + ']' * 10**6 + '}}')\n"
        )
        return {"kind": "sinfo", "bin": fake(tmp / "s2", "sinfo", deep)}

    def three_lines(path: Path) -> None:
        path.write_text(
            "dp_rank,stage,step,optype,start_ts,duration,mb_id\n"
            "0,0,0,forward-compute,0,1,0\n0,0,0,forward-compute,1,1,99999999\n"
        )

    samples, ops = limits.MAX_INGEST_SAMPLES, limits.MAX_STEP_OPS
    cases = [
        (
            "DCGM 1,000 MiB (gzip, dcgm-exporter labels)",
            file_case("dcgm", "scrapes.prom.gz", lambda p: write_dcgm(p, 1000 * MiB, compress=True)),
        ),
        (
            f"DCGM {samples:,} 46-byte lines",
            file_case("dcgm", "short.prom.gz", lambda p: short_dcgm(p, samples)),
        ),
        (
            "DCGM 1,000 MiB of 46-byte lines",
            file_case("dcgm", "short1000.prom.gz", lambda p: short_dcgm(p, 1000 * MiB // 46)),
        ),
        ("sacct 700 MB: 2,000,000 jobs of 350 bytes", sacct_case(limits.MAX_TRACE_JOBS, 350)),
        ("sacct 700 MB: 4,700,000 records of 150 bytes", sacct_case(4_700_000, 150)),
        ("sinfo --json 262,144 nodes", big_sinfo),
        ("sinfo --json nested 1,000,000 deep", deep_sinfo),
        (
            f"node-exporter {samples:,} samples (gzip)",
            file_case("node-exporter", "node001.prom.gz", lambda p: node_exporter_file(p, samples)),
        ),
        (
            "node-exporter 1,000 MiB of newlines (gzip)",
            file_case("node-exporter", "node002.prom.gz", lambda p: newlines_file(p, 1000 * MiB)),
        ),
        (
            f"step-times {ops:,} ops (CSV)",
            file_case("step-times", "ops.csv", lambda p: step_times_frame(ops).write_csv(p)),
        ),
        (
            f"step-times {ops:,} ops (Parquet)",
            file_case("step-times", "ops.parquet", lambda p: step_times_frame(ops).write_parquet(p)),
        ),
        (
            "step-times 4,000,000 x one 2 KB optype (Parquet)",
            file_case("step-times", "bomb.parquet", parquet_bomb),
        ),
        ("step-times 3 lines, microbatch 99,999,999 (CSV)", file_case("step-times", "grid.csv", three_lines)),
    ]
    rows = []
    for label, prepare in cases:
        if words and not any(w in label.lower() for w in words):
            continue
        with tempfile.TemporaryDirectory() as tmp_name:  # a case's input is deleted before the next is made
            spec = prepare(Path(tmp_name))
            label = spec.pop("label", label)
            result = run_in_child(__file__, {**spec, "tmp": tmp_name})
        rows.append((label, result))
        print(
            f"{label:50} {result['peak_mb']:>7,.0f} MB {result['wall_s']:>6.1f} s {result['cpu_s']:>6.1f} cpu-s"
            f"  {result['outcome']}",
            flush=True,
        )
    worst_mb = max(r["peak_mb"] for _, r in rows)
    print(f"{'largest peak RSS':50} {worst_mb:>7,.0f} MB  (budget {BUDGET_MB:,} MB)")
    return 0 if worst_mb < BUDGET_MB else 1


if __name__ == "__main__":
    main_or_worker(worker, main)
