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
- sinfo --json of 262,144 nodes as Slurm 22.05 prints them (~0.5 GB), and one nested 1,000,000 deep.
Budget: every case under 3.5 GB peak RSS (the issue: well under 4 GB), refusals as one line.
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
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cases = []
        big = tmp / "scrapes.prom.gz"
        write_dcgm(big, 1000 * MiB, compress=True)
        cases.append(("DCGM 1,000 MiB (gzip, dcgm-exporter labels)", {"kind": "dcgm", "path": str(big)}))
        worst = tmp / "short.prom.gz"
        short_dcgm(worst, limits.MAX_INGEST_SAMPLES)
        cases.append(
            (f"DCGM {limits.MAX_INGEST_SAMPLES:,} 46-byte lines", {"kind": "dcgm", "path": str(worst)})
        )
        bomb = tmp / "short1000.prom.gz"
        short_dcgm(bomb, 1000 * MiB // 46)
        cases.append(("DCGM 1,000 MiB of 46-byte lines", {"kind": "dcgm", "path": str(bomb)}))
        python = sys.executable
        for label, jobs, width in (
            ("sacct 700 MB: 2,000,000 jobs of 350 bytes", limits.MAX_TRACE_JOBS, 350),
            ("sacct 700 MB: 4,700,000 records of 150 bytes", 4_700_000, 150),
        ):
            folder = tmp / f"sacct{jobs}"
            body = SACCT_WRITER.format(python=python, jobs=jobs, width=width, header=header)
            cases.append((label, {"kind": "sacct", "bin": fake(folder, "sacct", body)}))
        big_sinfo = tmp / "sinfo.json"
        sinfo_file(big_sinfo, limits.MAX_HOSTS)
        cat = f"#!{python}\nimport shutil, sys\nshutil.copyfileobj(open({str(big_sinfo)!r}, 'rb'), sys.stdout.buffer)\n"
        size = big_sinfo.stat().st_size / 1e6
        cases.append(
            (
                f"sinfo --json 262,144 nodes ({size:,.0f} MB)",
                {"kind": "sinfo", "bin": fake(tmp / "s1", "sinfo", cat)},
            )
        )
        deep = (
            f"#!{python}\nimport sys\nsys.stdout.write('{{\"nodes\": ' + '[' * 10**6 + ']' * 10**6 + '}}')\n"
        )
        cases.append(
            ("sinfo --json nested 1,000,000 deep", {"kind": "sinfo", "bin": fake(tmp / "s2", "sinfo", deep)})
        )
        for label, spec in cases:
            result = run_in_child(__file__, {**spec, "tmp": tmp_name})
            rows.append((label, result))
            print(
                f"{label:46} {result['peak_mb']:>7,.0f} MB {result['wall_s']:>6.1f} s {result['cpu_s']:>6.1f} cpu-s"
                f"  {result['outcome']}",
                flush=True,
            )
    worst_mb = max(r["peak_mb"] for _, r in rows)
    print(f"{'largest peak RSS':46} {worst_mb:>7,.0f} MB  (budget {BUDGET_MB:,} MB)")
    return 0 if worst_mb < BUDGET_MB else 1


if __name__ == "__main__":
    main_or_worker(worker, main)
