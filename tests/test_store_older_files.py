"""Run files written before a table or a nullable column joined the schema (gpu_samples' clocks and throttle
counters, slow_episodes) stay readable at the same SCHEMA_VERSION: Store.table reads an absent column as NULL
and an absent table as empty, and appending to such a file (watch, live scrapes) first gives it what it lacks."""

from dataclasses import replace

import duckdb
import polars as pl

from engine.store import Store
from engine.store.schema import TABLES, polars_schema
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
        con.execute(f'ALTER TABLE gpu_samples DROP COLUMN "{column}"')
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


def test_a_new_file_has_every_column(tmp_path):
    store = Store(tmp_path)
    run_id = store.write_run(small_run())
    with store.connect(run_id) as con:
        for table, columns in TABLES.items():
            got = [r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall()]  # noqa: S608
            assert got == list(columns), table
