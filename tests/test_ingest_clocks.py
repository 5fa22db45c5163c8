"""SM clocks, clocks-event (throttle) reasons and violation counters read from DCGM exporter scrapes
(`goodput ingest dcgm`): field 112 under both its names fills clocks_event_reasons, decoded by
engine.telemetry.clocks against DCGM's documented bits; out-of-range values are counted skips."""

import polars as pl

from engine.ingest import ingest_dcgm
from engine.telemetry.clocks import decode_reasons
from tests.fixtures.ingest.samples import CLOCK_STORY, clock_scrape, labels


def readings(text: str, name: str = "c.prom") -> pl.DataFrame:
    run = ingest_dcgm([(name, text.encode())])
    return run.tables["gpu_samples"].sort("t_s", "gpu_id")


def test_clocks_reasons_and_violations_fill_their_columns():
    got = readings(clock_scrape(0))
    assert got["t_s"].to_list() == [0.0, 30.0, 60.0]
    assert got["sm_clock_mhz"].to_list() == [r["DCGM_FI_DEV_SM_CLOCK"] for r in CLOCK_STORY]
    assert got["clocks_event_reasons"].to_list() == [0x1, 0x0, 0x68]
    assert got["thermal_violation_ns"].to_list() == [0, 0, 29_500_000_000]
    assert got["power_violation_ns"].to_list() == [0, 0, 0]
    assert got.schema["clocks_event_reasons"] == pl.Int64 and got.schema["sm_clock_mhz"] == pl.Float32
    assert [decode_reasons(m) for m in got["clocks_event_reasons"]] == [
        ("gpu_idle",),
        (),
        ("hw_slowdown", "sw_thermal", "hw_thermal"),
    ]


def test_the_older_name_of_field_112_reads_the_same():
    new = readings(clock_scrape(0))
    old = readings(clock_scrape(0, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"))
    assert old.equals(new)


def test_one_run_of_hosts_on_old_and_new_exporters():
    text = clock_scrape(0) + clock_scrape(1, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
    got = readings(text)
    assert got.height == 6
    assert (
        got.group_by("gpu_id")
        .agg(pl.col("clocks_event_reasons").sort_by("t_s"))["clocks_event_reasons"]
        .to_list()
        == [[0x1, 0x0, 0x68]] * 2
    )


def test_a_reasons_value_that_is_no_bitmask_is_a_counted_skip():
    stamp = 1733133600000
    bad = [
        f"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{{labels(0, 0)}}} -1 {stamp}",
        f"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{{labels(0, 1)}}} 2.5 {stamp}",
        f"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{{labels(0, 2)}}} 1e300 {stamp}",
        f"DCGM_FI_DEV_GPU_TEMP{{{labels(0, 0)}}} 50 {stamp}",
        f"DCGM_FI_DEV_GPU_TEMP{{{labels(0, 1)}}} 50 {stamp}",
        f"DCGM_FI_DEV_GPU_TEMP{{{labels(0, 2)}}} 50 {stamp}",
    ]
    run = ingest_dcgm([("bad.prom", ("\n".join(bad) + "\n").encode())])
    assert run.tables["gpu_samples"]["clocks_event_reasons"].null_count() == 3
    assert sum(run.summary["skipped"].values()) == 3


def test_the_real_scrape_reads_its_clock(shared_data):
    run = ingest_dcgm([shared_data / "dcgm" / "kops_L4_scrape.prom"])
    assert run.tables["gpu_samples"]["sm_clock_mhz"].to_list() == [210.0]  # an idle L4
