"""Run files written before a table or a nullable column joined the schema (gpu_samples' clocks and throttle
counters, slow_episodes) stay readable at the same SCHEMA_VERSION: Store.table reads an absent column as NULL
and an absent table as empty, and appending to such a file (watch, live scrapes) first gives it what it lacks."""

from dataclasses import replace

import duckdb
import polars as pl

from engine.store import Store, file_columns
from engine.store.schema import SPARSE_COLUMNS, TABLES, polars_schema
from tests.test_store import small_run

ADDED = ("sm_clock_mhz", "clocks_event_reasons", "power_violation_ns", "thermal_violation_ns")


def older_file(tmp_path) -> tuple[Store, str]:
    """A run whose file looks as one written before the clock columns and slow_episodes existed."""
    store = Store(tmp_path)
    samples = pl.DataFrame(
        {"t_s": [0.0, 60.0], "gpu_id": [0, 0], "temp_c": [40.0, 41.0]},
        schema=polars_schema("gpu_samples", ("t_s", "gpu_id", "temp_c")),
    )
    run = small_run()
    run_id = store.write_run(replace(run, tables={**run.tables, "gpu_samples": samples}))
    con = duckdb.connect(str(store.run_file(run_id)))
    for column in ADDED:
        con.execute(f'ALTER TABLE gpu_samples DROP COLUMN IF EXISTS "{column}"')  # sparse ones are absent
    con.execute("DROP TABLE slow_episodes")
    con.close()
    return store, run_id


def test_an_older_file_reads_the_new_columns_as_null_and_the_new_table_empty(tmp_path):
    store, run_id = older_file(tmp_path)
    samples = store.table(run_id, "gpu_samples")
    assert samples.columns == list(TABLES["gpu_samples"])
    assert samples.schema == pl.Schema(polars_schema("gpu_samples"))
    assert samples["temp_c"].to_list() == [40.0, 41.0]
    assert all(samples[c].null_count() == 2 for c in ADDED)
    filtered = store.table(run_id, "gpu_samples", "t_s > ?", [30.0])
    assert filtered["t_s"].to_list() == [60.0]
    episodes = store.table(run_id, "slow_episodes")
    assert episodes.is_empty() and episodes.schema == pl.Schema(polars_schema("slow_episodes"))


def test_appending_to_an_older_file_gives_it_the_new_columns(tmp_path):
    store, run_id = older_file(tmp_path)
    new = pl.DataFrame(
        {"t_s": [120.0], "gpu_id": [0], "sm_clock_mhz": [990.0], "clocks_event_reasons": [0x8 | 0x40]},
        schema=polars_schema("gpu_samples", ("t_s", "gpu_id", "sm_clock_mhz", "clocks_event_reasons")),
    )
    store.append_to_run(run_id, {"gpu_samples": new})
    samples = store.table(run_id, "gpu_samples").sort("t_s")
    assert samples["sm_clock_mhz"].to_list() == [None, None, 990.0]
    assert samples["clocks_event_reasons"].to_list() == [None, None, 0x48]
    assert samples["temp_c"].to_list() == [40.0, 41.0, None]
    assert store.table(run_id, "slow_episodes").is_empty()


def test_a_new_file_has_every_column_but_the_sparse_ones_without_a_value(tmp_path):
    store = Store(tmp_path)
    run_id = store.write_run(small_run())
    with store.connect(run_id) as con:
        for table, columns in TABLES.items():
            got = [r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall()]  # noqa: S608
            assert got == [c for c in columns if c not in SPARSE_COLUMNS.get(table, ())], table


def columns_in_file(store: Store, run_id: str, table: str) -> set[str]:
    with store.connect(run_id) as con:
        return file_columns(con, table)


def test_a_sparse_column_is_in_the_file_only_once_a_row_has_a_value_in_it(tmp_path):
    store = Store(tmp_path)
    sparse = set(SPARSE_COLUMNS["gpu_samples"])
    nulls = pl.DataFrame(
        {"t_s": [0.0], "gpu_id": [0], "temp_c": [40.0], "fb_used_mib": [None]},
        schema=polars_schema("gpu_samples", ("t_s", "gpu_id", "temp_c", "fb_used_mib")),
    )
    run = small_run()
    run_id = store.write_run(replace(run, tables={**run.tables, "gpu_samples": nulls}))
    assert columns_in_file(store, run_id, "gpu_samples") == set(TABLES["gpu_samples"]) - sparse
    read = store.table(run_id, "gpu_samples")  # the whole schema all the same, the absent columns as NULL
    assert read.schema == pl.Schema(polars_schema("gpu_samples"))
    assert read["fb_used_mib"].to_list() == [None] and read["temp_c"].to_list() == [40.0]

    scraped = nulls.with_columns(t_s=pl.lit(60.0), fb_used_mib=pl.lit(1024.0, pl.Float32))
    store.append_to_run(run_id, {"gpu_samples": scraped})
    assert columns_in_file(store, run_id, "gpu_samples") == set(TABLES["gpu_samples"]) - sparse | {
        "fb_used_mib"
    }
    assert store.table(run_id, "gpu_samples").sort("t_s")["fb_used_mib"].to_list() == [None, 1024.0]


def test_a_run_written_with_a_sparse_value_in_a_later_block_keeps_every_row(tmp_path):
    store = Store(tmp_path)
    schema = polars_schema("gpu_samples", ("t_s", "gpu_id", "memory_temp_c"))
    blocks = [
        pl.DataFrame({"t_s": [0.0], "gpu_id": [0], "memory_temp_c": [None]}, schema=schema),
        pl.DataFrame({"t_s": [60.0], "gpu_id": [0], "memory_temp_c": [71.0]}, schema=schema),
    ]
    run = small_run()
    run_id = store.write_run(replace(run, tables={**run.tables, "gpu_samples": iter(blocks)}))
    assert "memory_temp_c" in columns_in_file(store, run_id, "gpu_samples")
    assert store.table(run_id, "gpu_samples").sort("t_s")["memory_temp_c"].to_list() == [None, 71.0]
