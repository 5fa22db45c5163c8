"""Decompression, dictionary and grid bombs in `goodput ingest node-exporter` and `goodput ingest step-times`
(security issue, items 7 and 9): every size read from the input is bounded before anything is allocated for it,
and bad input is one line `goodput: error: ...` with exit status 2, never a traceback, and nothing written.

Bombs are made here, small (a 64 KB gzip of 64 MiB of newlines, a 0.9 MB Parquet file of 4,000,000 rows sharing
one 2 KB string), and the command line runs them in a child process under an address-space cap (RLIMIT_AS, as
tests/test_memory_bounds.py does): the old readers died under it (or took gigabytes), the new ones refuse or read
them within RSS_MARGIN of a tiny ingest's peak resident memory. The full-size figures are bench/bench_memory.py's.
"""

import gzip
import io
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import limits
from engine.analysis.step_timeline import layout
from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import node_exporter
from engine.ingest.node_exporter import ingest_node_exporter
from engine.ingest.sources import Source
from engine.ingest.step_times import ingest_step_times, read_step_times
from tests.fixtures.step_times import pipeline_ops, to_csv
from tests.test_memory_bounds import PEAKS, run_capped

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024 * 1024
MARGIN = 1024 * MiB  # address space a child may take above the baseline's (a backstop: the RSS check decides)
RSS_MARGIN = 400 * MiB  # resident memory a child may take above the baseline's
FIXTURE = ROOT / "tests" / "fixtures" / "ingest" / "node_exporter" / "node017.prom"
T0_MS = 1733133600000

# The CLI in a child (test_memory_bounds.run_capped prints its peaks on stderr at exit).
_CLI = """
import runpy, sys
sys.argv = ["goodput", *sys.argv[1:]]
runpy.run_module("engine.cli", run_name="__main__")
"""


def cli_capped(cap: int | None, *args: str, timeout: int = 300) -> tuple[int, str, int, int]:
    """(exit status, stderr less the peak line, peak virtual bytes, peak RSS bytes) of `goodput ARGS` in a
    child whose address space is capped at `cap`."""
    code, _, err, virtual_kib = run_capped(_CLI, cap, *args, timeout=timeout)
    return code, err, virtual_kib * 1024, PEAKS["rss"]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> tuple[int, int]:
    """Peak virtual size and RSS (bytes) of the CLI ingesting a tiny step timeline: Python, Polars, PyArrow,
    DuckDB, no data."""
    tmp = tmp_path_factory.mktemp("baseline")
    (tmp / "ops.csv").write_bytes(to_csv(pipeline_ops()))
    code, err, virtual, rss = cli_capped(
        None, "ingest", "step-times", str(tmp / "ops.csv"), "--store", str(tmp / "store")
    )
    assert code == 0, err
    return virtual, rss


def assert_refused(code: int, err: str, path: Path, store: Path, *, matching: str = "") -> None:
    """Exit status 2, one line `goodput: error: PATH...`, no traceback, nothing in the store."""
    assert code == 2, f"exit {code}: {err[-800:]}"
    assert err.count("\n") == 1 and err.startswith(f"goodput: error: {path}"), err
    assert re.search(matching, err), err
    assert not (store / "runs").exists() or not any((store / "runs").iterdir())


def assert_rss_bounded(rss: int, baseline: tuple[int, int]) -> None:
    over = rss - baseline[1]
    assert over < RSS_MARGIN, f"peak RSS {over / MiB:,.0f} MiB over a tiny ingest's"


# ----- node-exporter -------------------------------------------------------------------------------------------


def test_a_gzip_of_newlines_is_refused_in_bounded_memory(tmp_path, baseline):
    """64 MiB of newlines (64 KB gzipped): split whole, they took 2.75 GB (the issue's 256 MiB, 9 GiB)."""
    path = tmp_path / "node001.prom.gz"
    path.write_bytes(gzip.compress(b"\n" * (64 * MiB), compresslevel=6))
    store = tmp_path / "store"
    code, err, _, rss = cli_capped(
        baseline[0] + MARGIN, "ingest", "node-exporter", str(path), "--store", str(store)
    )
    assert_refused(code, err, path, store, matching="nothing to ingest")
    assert_rss_bounded(rss, baseline)


def test_node_exporter_reads_in_blocks_with_the_same_result(monkeypatch):
    """The file is read a block of lines at a time: lines cut across blocks, errors named by their line in the
    file and a series repeated in a later block read as one read would."""
    whole = ingest_node_exporter([FIXTURE])
    monkeypatch.setattr(node_exporter, "BLOCK_BYTES", 300)  # the fixture's lines are ~60-120 bytes
    blocks = ingest_node_exporter([FIXTURE])
    for table in ("hosts", "nic_samples"):
        assert blocks.tables[table].equals(whole.tables[table]), table
    assert blocks.summary == whole.summary
    sample = f'node_infiniband_link_downed_total{{device="mlx5_0",port="1"}} 0 {T0_MS}\n'
    filler = "# a comment line of forty bytes or so ..\n" * 30
    with pytest.raises(
        GoodputError, match=r"^twice.prom, line 32: node_infiniband_link_downed_total of mlx5_0"
    ):
        ingest_node_exporter([("twice.prom", (sample + filler + sample).encode())])
    with pytest.raises(GoodputError, match=r"^bad.prom, line 32: not UTF-8 text"):
        ingest_node_exporter([("bad.prom", (sample + filler).encode() + b"\xff\n")])
    with pytest.raises(GoodputError, match=r"^bad.prom, line 33: not a sample line"):
        ingest_node_exporter(
            [("bad.prom", (sample + filler + sample.replace("0 ", "1 ") + "junk\n").encode())]
        )


# ----- step times: Parquet -------------------------------------------------------------------------------------


def _bomb_parquet(rows: int, optype: str, *, extra: dict | None = None) -> bytes:
    """`rows` rows of worker 0 whose optype is one dictionary entry (the file holds it once)."""
    zeros = pa.array(np.zeros(rows, np.int8))
    table = pa.table(
        {
            "dp_rank": zeros,
            "stage": zeros,
            "step": zeros,
            "optype": pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int8)), pa.array([optype])),
            "start_ts": pa.array(np.zeros(rows, np.float32)),
            "duration": pa.array(np.zeros(rows, np.float32)),
            **(extra or {}),
        }
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


def test_a_long_name_in_a_parquet_dictionary_is_refused_before_it_is_expanded():
    data = _bomb_parquet(100_000, "x" * 2048)
    with pytest.raises(GoodputError) as caught:
        read_step_times(Source("ops.parquet", data))
    assert re.fullmatch(
        r"ops.parquet: row 1: column 'optype': a value of 2,048 bytes, over Goodput's limit of"
        rf" {limits.MAX_STEP_NAME_BYTES:,} \(engine/limits.py MAX_STEP_NAME_BYTES\)",
        str(caught.value),
    ), caught.value


def test_the_issues_parquet_bomb_is_one_line_in_bounded_memory(tmp_path, baseline):
    """4,000,000 rows sharing one 2 KB optype, 0.9 MB on disk (the issue's was 2.2 MB): it took 9 GiB."""
    path = tmp_path / "ops.parquet"
    path.write_bytes(_bomb_parquet(4_000_000, "x" * 2048))
    store = tmp_path / "store"
    code, err, _, rss = cli_capped(
        baseline[0] + MARGIN, "ingest", "step-times", str(path), "--store", str(store)
    )
    assert_refused(code, err, path, store, matching="column 'optype': a value of 2,048 bytes")
    assert_rss_bounded(rss, baseline)


def _timeline(steps: int, dp: int, stages: int, microbatches: int) -> pl.DataFrame:
    """A complete timeline made without a loop: every worker runs its forwards, then its backwards, between an
    all-gather and an optimizer step (2 x microbatches + 2 ops a worker and step)."""
    per = 2 * microbatches + 2
    slot = pl.col("i") % per
    worker = pl.col("i") // per
    return pl.DataFrame(
        pl.int_range(0, steps * dp * stages * per, eager=True, dtype=pl.Int64).alias("i")
    ).select(
        dp_rank=(worker // stages) % dp,
        stage=worker % stages,
        step=worker // (dp * stages),
        optype=pl.when(slot == 0)
        .then(pl.lit("params-all-gather"))
        .when(slot == per - 1)
        .then(pl.lit("optimizer"))
        .when(slot <= microbatches)
        .then(pl.lit("forward-compute"))
        .otherwise(pl.lit("backward-compute")),
        start_ts=(worker // (dp * stages)) * 100.0 + slot.cast(pl.Float64),
        duration=pl.when(slot <= microbatches).then(0.5).otherwise(0.75),
    )


def test_columns_the_timeline_does_not_use_are_never_read(tmp_path, baseline):
    """A valid timeline of 400,000 ops with a `gmc` column of 400 zeros a row (1.3 GB read, 220 KB on disk)."""
    frame = _timeline(100, 100, 4, 4).to_arrow()
    batch = 4_000
    zeros = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(batch * 400)), 400)
    path = tmp_path / "ops.parquet"
    schema = frame.schema.append(pa.field("gmc", zeros.type))
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:  # a batch at a time: no GB here either
        for offset in range(0, frame.num_rows, batch):
            writer.write_table(frame.slice(offset, batch).append_column("gmc", zeros))
    store = tmp_path / "store"
    code, err, _, rss = cli_capped(
        baseline[0] + MARGIN, "ingest", "step-times", str(path), "--store", str(store), "--json"
    )
    assert code == 0, err[-800:]
    assert_rss_bounded(rss, baseline)


def test_parquet_pages_may_not_inflate_past_the_input_limit(monkeypatch):
    """Compression inside Parquet is compression all the same: the kept columns' pages, inflated, are bounded
    by MAX_INPUT_BYTES as a gzip file is (read from the file's metadata, before a page is read)."""
    frame = pipeline_ops(steps=200).with_columns(
        pl.col("optype") + "-" + pl.int_range(pl.len()).cast(pl.String)
    )
    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression="zstd")
    data = buffer.getvalue()
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", len(data) * 2)
    with pytest.raises(
        GoodputError,
        match=r"^ops.parquet: its text columns \(optype\) inflate to [0-9,]+ bytes, over Goodput's",
    ):
        read_step_times(Source("ops.parquet", data))


def test_a_nested_parquet_column_is_refused_before_it_is_read():
    rows = 1000
    nested = pa.array([[0.5] * 100] * rows)  # a list of durations per row: lists expand without bound
    data = _bomb_parquet(rows, "forward-compute")
    table = pq.read_table(io.BytesIO(data)).set_column(5, "duration", nested)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    with pytest.raises(GoodputError, match=r"^ops.parquet: column 'duration': .*list.* is not a number"):
        read_step_times(Source("ops.parquet", buffer.getvalue()))


# ----- step times: CSV -----------------------------------------------------------------------------------------


def test_the_three_line_csv_grid_bomb_is_one_line_in_bounded_memory(tmp_path, baseline):
    """Two forwards of one worker, microbatches 0 and 99,999,999: a grid of 10^8 cells was counted (2.1 GB)
    before the missing microbatches were found."""
    path = tmp_path / "ops.csv"
    path.write_text(
        "dp_rank,stage,step,optype,start_ts,duration,mb_id\n"
        "0,0,0,forward-compute,0,1,0\n"
        "0,0,0,forward-compute,1,1,99999999\n"
    )
    store = tmp_path / "store"
    code, err, _, rss = cli_capped(
        baseline[0] + MARGIN, "ingest", "step-times", str(path), "--store", str(store)
    )
    assert_refused(
        code,
        err,
        path,
        store,
        matching=r"forward-compute of microbatch 1 is missing at step index 0, dp_rank 0, stage 0 \(every worker"
        r" runs each of the 100000000 microbatches once a step\)",
    )
    assert_rss_bounded(rss, baseline)


def test_the_compute_grid_is_checked_against_the_rows_before_it_is_made():
    """In process, smaller: 10^7 cells named by two rows. The grid's size is the rows' (a complete timeline
    fills each cell once), so a grid larger than the rows is refused without being counted cell by cell."""
    import tracemalloc  # numpy's arrays are traced

    frame = pl.DataFrame(
        {
            "dp_rank": [0, 0],
            "stage": [0, 0],
            "step": [0, 0],
            "optype": ["forward-compute"] * 2,
            "start_ts": [0.0, 1.0],
            "duration": [1.0, 1.0],
            "mb_id": [0, 9_999_999],
        }
    )
    tracemalloc.start()
    try:
        with pytest.raises(GoodputError, match="forward-compute of microbatch 1 is missing"):
            layout(frame, "ops.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MiB, f"{peak / MiB:.0f} MiB traced"


def test_a_missing_worker_is_named_without_a_grid_of_every_worker():
    """The every-worker-in-every-step check names the first worker missing from the rows themselves."""
    frame = pipeline_ops(dp=1, stages=1, steps=2)
    far = frame.filter(pl.col("step") == 11).with_columns(dp_rank=pl.lit(99_999, pl.Int64))
    frame = pl.concat([frame.filter(pl.col("step") == 10), far])
    with pytest.raises(
        GoodputError, match=r"step 10 has no operation of dp_rank 1, stage 0 \(100000 dp ranks"
    ):
        layout(frame, "ops.csv")


def test_phase_arrays_are_bounded_by_the_ops_read():
    """One forward a worker and 64 kinds of op before it in one worker only: the head array would be 64 cells a
    row read. It is refused before it is made."""
    frame = _timeline(1000, 100, 1, 1).filter(pl.col("optype") == "forward-compute")
    head = pl.DataFrame(
        {
            "dp_rank": [0] * 64,
            "stage": [0] * 64,
            "step": [0] * 64,
            "optype": [f"kind-{k}" for k in range(64)],
            "start_ts": [k / 100 for k in range(64)],
            "duration": [0.001] * 64,
        }
    )
    with pytest.raises(
        GoodputError, match=r"^ops.csv: steps x workers x kinds of op before compute.*: 6,400,000 is over"
    ):
        layout(pl.concat([frame, head], how="diagonal_relaxed"), "ops.csv")


def test_a_long_optype_in_a_csv_is_refused_naming_its_line():
    frame = pipeline_ops()
    optype = pl.when(pl.int_range(pl.len()) == 6).then(pl.lit("y" * 100)).otherwise(pl.col("optype"))
    with pytest.raises(GoodputError, match=r"^ops.csv: line 8: column 'optype': a value of 100 bytes, over"):
        read_step_times(Source("ops.csv", to_csv(frame.with_columns(optype=optype))))


def test_a_csv_line_over_the_line_limit_is_refused_before_it_is_parsed(monkeypatch):
    monkeypatch.setattr(limits, "MAX_LINE_BYTES", 200)
    lines = to_csv(pipeline_ops()).decode().splitlines()
    lines[3] = lines[3] + "," * 300
    with pytest.raises(
        GoodputError, match=r"^ops.csv, line 4: 3[0-9]{2} bytes in one line, over Goodput's limit"
    ):
        read_step_times(Source("ops.csv", ("\n".join(lines) + "\n").encode()))


def test_numbers_with_spaces_around_them_are_read_as_numbers():
    plain = read_step_times(Source("ops.csv", to_csv(pipeline_ops())))
    lines = to_csv(pipeline_ops()).decode().splitlines()
    padded = [lines[0]] + [
        ",".join(f" {cell} " if cell and cell[0].isdigit() else cell for cell in line.split(","))
        for line in lines[1:]
    ]
    read = read_step_times(Source("ops.csv", ("\n".join(padded) + "\n").encode()))
    assert read.equals(plain)


# ----- step times: clocks and durations (item 9) ---------------------------------------------------------------


def _with(column: str, value: float) -> bytes:
    frame = pipeline_ops()
    return to_csv(
        frame.with_columns(
            pl.when(pl.int_range(pl.len()) == 4).then(value).otherwise(pl.col(column)).alias(column)
        )
    )


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        (
            "start_ts",
            1e12,
            r"line 6: column 'start_ts': 1000000000000.0 s \(year 33,658\) is more than 86,400 s ahead",
        ),
        ("start_ts", 1e300, r"line 6: column 'start_ts': 1e\+300 s \(year .*\) is more than 86,400 s ahead"),
        (
            "start_ts",
            4e9,
            r"line 6: column 'start_ts': 4000000000.0 s \(2096-10-02\) is more than 86,400 s ahead",
        ),
        ("start_ts", -1.0, r"line 6: column 'start_ts': -1.0 is negative"),
        ("start_ts", math.nan, r"line 6: column 'start_ts': nan is not a finite number"),
        ("start_ts", math.inf, r"line 6: column 'start_ts': inf is not a finite number"),
        ("start_ts", -math.inf, r"line 6: column 'start_ts': -inf is not a finite number"),
        ("duration", math.nan, r"line 6: column 'duration': nan is not a finite number"),
        ("duration", math.inf, r"line 6: column 'duration': inf is not a finite number"),
        ("duration", -0.5, r"line 6: column 'duration': -0.5 is negative"),
        (
            "duration",
            1e300,
            r"line 6: column 'duration': 1e\+300 s is longer than a run may span \(3,650 days",
        ),
        ("start_ts", 3_651 * 86_400.0, r"line 6: its op ends 3,651 days after the earliest start \(line 2\)"),
    ],
)
def test_times_no_clock_gives_are_one_line_and_exit_2(tmp_path, capsys, column, value, message):
    path = tmp_path / "ops.csv"
    path.write_bytes(_with(column, value))
    store = tmp_path / "store"
    code = main(["ingest", "step-times", str(path), "--store", str(store)])
    err = capsys.readouterr().err
    assert_refused(code, err, path, store, matching=message)


def test_a_wall_clock_timeline_keeps_its_start(tmp_path):
    start = 1_733_133_600.0
    frame = pipeline_ops().with_columns(pl.col("start_ts") + start)
    run = ingest_step_times([("ops.csv", to_csv(frame))])
    assert run.started_at.timestamp() == start


def test_a_csv_of_exactly_the_row_limit_is_read(monkeypatch):
    """Its header is no row: MAX_STEP_OPS rows take MAX_STEP_OPS + 1 lines."""
    frame = pipeline_ops()
    monkeypatch.setattr(limits, "MAX_STEP_OPS", frame.height)
    assert read_step_times(Source("ops.csv", to_csv(frame))).height == frame.height
    monkeypatch.setattr(limits, "MAX_STEP_OPS", frame.height - 1)
    with pytest.raises(GoodputError, match=f"^ops.csv: lines after the header: {frame.height} is over"):
        read_step_times(Source("ops.csv", to_csv(frame)))
