"""Per-GPU telemetry (engine.telemetry): samples follow host states, precursors, the day; XID events and counts.

Small hand-made host_states / incidents / checkpoints frames; exact traces where the model is deterministic
(which samples exist, ECC resets, XID sequences), fixed seeds and stated bounds where it is noisy.
"""

import re

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import telemetry
from engine.errors import GoodputError
from engine.ingest import kernel_log
from engine.ingest.sources import Source
from engine.scenario import build
from engine.store.schema import HOST_STATES, polars_schema
from engine.telemetry import gpu_samples, pci_bus_id, precursors, sample_times, xid_counts, xid_events
from engine.telemetry.model import DIURNAL_PEAK_HOUR, SBE_AT_FAILURE
from engine.twin.simulate import simulate

HOUR, DAY = 3600.0, 86400.0
SILENT = {
    "down",
    "diagnosing",
    "repair",
}  # hosts off the fleet's telemetry; burn_in and draining still report


def scenario(days: float = 1, resolution: str = "1h", *sets: str):
    return build(
        "demo", sets=[f"simulation.days={days}", f"simulation.telemetry_resolution={resolution}", *sets]
    )


def fleet(hosts: int, per_host: int = 8) -> pl.DataFrame:
    n = hosts * per_host
    return pl.DataFrame(
        {
            "gpu_id": np.arange(n, dtype=np.int32),
            "host_id": np.arange(n, dtype=np.int32) // per_host,
            "index": np.arange(n) % per_host,
            "uuid": [f"GPU-{i:08x}" for i in range(n)],
            "model": "H100-SXM5-80GB",
        }
    )


def states(rows: list[tuple[int, str, float, float, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "host_id": pl.Int32,
            "state": pl.String,
            "start_s": pl.Float64,
            "end_s": pl.Float64,
            "job_id": pl.String,
        },
        orient="row",
    )


def incidents(rows: list[tuple]) -> pl.DataFrame:
    """rows of (incident_id, t_s, repaired_s, cause, host_id, gpu_id, xid)."""
    return pl.DataFrame(
        rows,
        schema={
            "incident_id": pl.Int32,
            "t_s": pl.Float64,
            "repaired_s": pl.Float64,
            "cause": pl.String,
            "host_id": pl.Int32,
            "gpu_id": pl.Int32,
            "xid": pl.Int32,
        },
        orient="row",
    )


NO_INCIDENTS = incidents([])
NO_CHECKPOINTS = pl.DataFrame(schema={"job_id": pl.String, "start_s": pl.Float64, "end_s": pl.Float64})


def samples(sc, gpus, host_states, incs=NO_INCIDENTS, ckpts=NO_CHECKPOINTS, seed=1, **kw) -> pl.DataFrame:
    chunks = list(gpu_samples(sc, gpus, host_states, incs, ckpts, np.random.default_rng(seed), **kw))
    # chunks are time-major inside; tests read the table GPU by GPU
    return pl.concat(chunks).sort("gpu_id", "t_s") if chunks else pl.DataFrame(schema=samples_schema())


def samples_schema() -> dict:
    return polars_schema("gpu_samples")


def whole_run(hosts: int, state: str, days: float, job: str | None = None) -> pl.DataFrame:
    return states([(h, state, 0.0, days * DAY, job) for h in range(hosts)])


# ----- the sample grid ------------------------------------------------------------------------------------


def test_sample_times_cover_the_run_at_the_resolution():
    assert sample_times(DAY, HOUR).tolist() == [k * HOUR for k in range(24)]
    assert sample_times(DAY + 1, HOUR).size == 25
    assert sample_times(90.0, 60.0).tolist() == [0.0, 60.0]


def test_columns_and_types_are_exactly_the_schema():
    df = samples(scenario(), fleet(2), whole_run(2, "running", 1, "j"))
    assert df.schema == samples_schema()
    simulated = {"t_s", "gpu_id", "temp_c", "power_w", "util_pct", "mem_util_pct", "ecc_sbe", "ecc_dbe"}
    simulated |= {"sm_clock_mhz", "clocks_event_reasons"}  # engine.telemetry.clocks
    assert df.select(pl.exclude(*simulated).is_null().all()).row(0) == (True,) * (df.width - len(simulated))
    assert df.select(pl.col(*simulated).is_null().any()).row(0) == (False,) * len(simulated)
    # whole degrees and percents, tenths of a watt, as DCGM reports them
    for column, step in (("temp_c", 1), ("util_pct", 1), ("mem_util_pct", 1), ("power_w", 0.1)):
        values = df[column].cast(pl.Float64).to_numpy() / step
        assert np.abs(values - np.rint(values)).max() < 1e-3, column


def test_sample_count_is_gpus_times_samples_minus_the_gaps_exactly():
    # host 0: down 05:00-06:30, diagnosing to 07:30, repair to 09:00, burn_in to 11:00, spare after.
    # host 1: running, draining 20:00-20:30, down from 20:30. host 2: healthy all day.
    hs = states(
        [
            (0, "running", 0, 5 * HOUR, "j"),
            (0, "down", 5 * HOUR, 6.5 * HOUR, None),
            (0, "diagnosing", 6.5 * HOUR, 7.5 * HOUR, None),
            (0, "repair", 7.5 * HOUR, 9 * HOUR, None),
            (0, "burn_in", 9 * HOUR, 11 * HOUR, None),
            (0, "spare", 11 * HOUR, DAY, None),
            (1, "running", 0, 20 * HOUR, "j"),
            (1, "draining", 20 * HOUR, 20.5 * HOUR, "j"),
            (1, "down", 20.5 * HOUR, DAY, None),
            (2, "healthy", 0, DAY, None),
        ]
    )
    df = samples(scenario(), fleet(3), hs)
    silent_hours = {0: {5, 6, 7, 8}, 1: set(range(21, 24)), 2: set()}
    assert df.height == 3 * 8 * 24 - 8 * sum(len(h) for h in silent_hours.values())
    present = set(zip(df["gpu_id"].to_list(), (df["t_s"] / HOUR).cast(pl.Int64).to_list(), strict=True))
    expected = {(g, k) for g in range(24) for k in range(24) if k not in silent_hours[g // 8]}
    assert present == expected
    assert df.select(pl.len().over("gpu_id", "t_s").max()).item() == 1  # one sample per GPU and time


def test_gpu_fallen_off_the_bus_reports_nothing_until_repaired():
    hs = whole_run(1, "running", 1, "j")
    incs = incidents([(1, 3 * HOUR, 10 * HOUR, "faulty_gpu", 0, 5, 79)])
    df = samples(scenario(), fleet(1), hs, incs)
    gpu5 = (df.filter(pl.col("gpu_id") == 5)["t_s"] / HOUR).cast(pl.Int64).to_list()
    assert gpu5 == [0, 1, 2, *range(10, 24)]
    assert df.height == 8 * 24 - 7


def test_gpu_off_the_bus_is_back_when_its_host_returns_from_repair_even_before_repaired_s():
    hs = states(
        [
            (0, "running", 0, 3 * HOUR, "j"),
            (0, "down", 3 * HOUR, 5 * HOUR, None),
            (0, "repair", 5 * HOUR, 8 * HOUR, None),
            (0, "burn_in", 8 * HOUR, 12 * HOUR, None),
            (0, "spare", 12 * HOUR, DAY, None),
            (1, "running", 0, DAY, "j"),
        ]
    )
    incs = incidents(
        [(1, 2 * HOUR, 12 * HOUR, "faulty_gpu", 0, 5, 79), (2, 4 * HOUR, 20 * HOUR, "faulty_gpu", 1, 9, 79)]
    )  # host 1 never goes silent
    df = samples(scenario(), fleet(2), hs, incs)
    hours = {g: (df.filter(pl.col("gpu_id") == g)["t_s"] / HOUR).cast(pl.Int64).to_list() for g in (4, 5, 9)}
    assert hours[5] == [0, 1, *range(8, 24)]
    assert hours[4] == [0, 1, 2, *range(8, 24)]
    assert hours[9] == [0, 1, 2, 3, 20, 21, 22, 23]


def test_a_gap_between_intervals_reads_as_healthy():
    hs = states([(0, "running", 0, 2 * HOUR, "j"), (0, "running", 4 * HOUR, DAY, "j")])
    df = samples(scenario(), fleet(1), hs).filter(pl.col("gpu_id") == 0).sort("t_s")
    util = df["util_pct"].to_list()
    assert df.height == 24 and util[2] == util[3] == 0.0 and min(util[:2] + util[4:]) >= 95.0


# ----- what the values follow ---------------------------------------------------------------------------


@st.composite
def random_run(draw):
    """A few hosts whose state intervals tile [0, days) in random order and lengths."""
    hosts = draw(st.integers(1, 3))
    days = draw(st.sampled_from([0.5, 1.0, 2.0]))
    resolution = draw(st.sampled_from(["10m", "30m", "1h", "7m"]))
    tdp = draw(st.sampled_from([300.0, 400.0, 700.0, 1000.0]))
    rows = []
    for host in range(hosts):
        cuts = sorted(draw(st.lists(st.floats(0.0, 1.0), max_size=6)))
        edges = [0.0, *(c * days * DAY for c in cuts), days * DAY]
        for start, end in zip(edges[:-1], edges[1:], strict=True):
            state = draw(st.sampled_from(HOST_STATES))
            rows.append((host, state, start, end, "j" if state in ("running", "draining") else None))
    return hosts, days, resolution, tdp, states(rows)


@given(random_run(), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invariants_hold_for_any_host_history(run, seed):
    hosts, days, resolution, tdp, hs = run
    sc = scenario(days, resolution, f"cluster.gpu_tdp_w={tdp}")
    df = samples(sc, fleet(hosts), hs, seed=seed)
    assert (df["power_w"] > 0).all() and (df["power_w"] <= tdp).all()
    assert df["util_pct"].is_between(0, 100).all() and df["mem_util_pct"].is_between(0, 100).all()
    assert (df["ecc_sbe"] >= 0).all() and (df["ecc_dbe"] == 0).all()
    # every sample sits in a reporting state of its host, and every reporting (host, time) has all 8 GPUs
    t = sample_times(days * DAY, sc["simulation.telemetry_resolution"])
    hs_rows = hs.filter(pl.col("end_s") > pl.col("start_s")).rows(named=True)
    expected = set()
    for host in range(hosts):  # test oracle: a plain loop over a handful of intervals
        for k, moment in enumerate(t):
            state = next(
                r["state"] for r in hs_rows if r["host_id"] == host and r["start_s"] <= moment < r["end_s"]
            )
            if state not in SILENT:
                expected |= {(host * 8 + g, k) for g in range(8)}
    resolution_s = sc["simulation.telemetry_resolution"]
    got = set(
        zip(
            df["gpu_id"].to_list(),
            np.rint(df["t_s"].to_numpy() / resolution_s).astype(int).tolist(),
            strict=True,
        )
    )
    assert got == expected and df.height == len(expected)


def test_idle_gpus_are_cooler_and_draw_less_than_busy_ones():
    hs = states(
        [(h, "running", 0, 7 * DAY, "j") for h in range(8)]
        + [
            (h, state, 0, 7 * DAY, None)
            for h, state in zip(range(8, 16), ["healthy", "spare"] * 4, strict=True)
        ]
    )
    df = samples(scenario(7, "30m"), fleet(16), hs, seed=3).with_columns(busy=pl.col("gpu_id") < 64)
    busy, idle = df.filter(pl.col("busy")), df.filter(~pl.col("busy"))
    assert idle["temp_c"].max() < busy["temp_c"].min()
    assert idle["power_w"].max() < busy["power_w"].min()
    assert 30 <= idle["temp_c"].mean() <= 40 and 65 <= busy["temp_c"].mean() <= 80
    assert 60 <= idle["power_w"].min() and idle["power_w"].max() <= 90
    assert (idle["util_pct"] == 0).all() and busy["util_pct"].min() >= 95
    # persistent per-GPU offsets: the hottest busy GPU runs clearly above the coolest, day in, day out
    per_gpu = busy.group_by("gpu_id").agg(pl.col("temp_c").mean())["temp_c"]
    assert per_gpu.max() - per_gpu.min() > 3


def test_checkpoint_writes_idle_the_job_and_drains_fall_and_burn_in_runs_hot():
    hs = states(
        [
            (0, "running", 0, 10 * HOUR, "j"),
            (0, "draining", 10 * HOUR, 14 * HOUR, "j"),
            (0, "down", 14 * HOUR, 15 * HOUR, None),
            (0, "burn_in", 15 * HOUR, DAY, None),
            (1, "running", 0, DAY, "other"),
        ]
    )
    ckpts = pl.DataFrame(
        {"job_id": ["j", "j"], "start_s": [2 * HOUR - 5, 6 * HOUR], "end_s": [2 * HOUR + 5, 6 * HOUR + 30]}
    )
    df = samples(scenario(), fleet(2), hs, ckpts=ckpts).with_columns(k=(pl.col("t_s") / HOUR).cast(pl.Int64))
    host0 = df.filter(pl.col("gpu_id") < 8).group_by("k").agg(pl.col("util_pct", "power_w", "temp_c").mean())
    by_k = {row["k"]: row for row in host0.rows(named=True)}
    for k in (2, 6):  # writing a checkpoint: little compute, much less power
        assert by_k[k]["util_pct"] < 40 and by_k[k]["power_w"] < 0.6 * by_k[k - 1]["power_w"]
    drain = [by_k[k]["util_pct"] for k in range(10, 14)]
    assert drain == sorted(drain, reverse=True) and drain[0] > 90 and drain[-1] < 30
    assert min(by_k[k]["power_w"] for k in range(15, 24)) > max(by_k[k]["power_w"] for k in (0, 1, 3))
    # the other job's checkpoints are not "j"'s: host 1 never idles
    assert df.filter(pl.col("gpu_id") >= 8)["util_pct"].min() >= 95


def test_a_drain_winds_down_only_what_was_running():
    hs = states(
        [
            (0, "spare", 0, 10 * HOUR, None),
            (0, "draining", 10 * HOUR, 14 * HOUR, None),
            (0, "down", 14 * HOUR, DAY, None),
        ]
    )
    df = samples(scenario(), fleet(1), hs)
    assert (df["util_pct"] == 0).all() and df["power_w"].max() < 90 and df.height == 8 * 14


def test_diurnal_swing_of_running_power_is_between_1_and_2_percent():
    sc = scenario(7, "15m")
    df = samples(sc, fleet(8), whole_run(8, "running", 7, "j"), seed=5)
    hourly = (
        df.with_columns(hour=((pl.col("t_s") / HOUR) % 24).floor())
        .group_by("hour")
        .agg(pl.col("power_w", "temp_c").mean())
        .sort("hour")
    )
    power = hourly["power_w"].to_numpy()
    swing = (power.max() - power.min()) / power.mean()
    assert 0.01 <= swing <= 0.02
    # clocks dip (power trough) and temperatures peak at the hottest hour of the day
    assert abs(hourly["hour"][int(power.argmin())] - DIURNAL_PEAK_HOUR) <= 1
    assert abs(hourly["hour"][int(hourly["temp_c"].to_numpy().argmax())] - DIURNAL_PEAK_HOUR) <= 1


def test_diurnal_phase_follows_the_sites_clock():
    sc = scenario(7, "15m", 'simulation.start="2024-03-01T00:00:00-07:00"')  # same local clock, other zone
    base = samples(scenario(7, "15m"), fleet(4), whole_run(4, "running", 7, "j"), seed=5)
    local = samples(sc, fleet(4), whole_run(4, "running", 7, "j"), seed=5)
    assert base.equals(local)
    shifted = samples(
        scenario(7, "15m", 'simulation.start="2024-03-01T06:00:00Z"'),
        fleet(4),
        whole_run(4, "running", 7, "j"),
        seed=5,
    )
    trough = shifted.group_by(((pl.col("t_s") / HOUR) % 24).floor().alias("h")).agg(pl.col("power_w").mean())
    assert abs(trough.sort("power_w")["h"][0] - (DIURNAL_PEAK_HOUR - 6)) <= 1


# ----- precursors and ECC counters ----------------------------------------------------------------------


def test_single_bit_errors_rise_before_an_hbm3_failure_and_reset_after_repair():
    t_fail, back, repaired = 4 * DAY + 0.5 * HOUR, 4 * DAY + 7 * HOUR, 4 * DAY + 9 * HOUR
    hs = states(
        [
            (0, "running", 0, t_fail, "j"),
            (0, "running", t_fail, 4 * DAY + 2 * HOUR, "j"),
            (0, "down", 4 * DAY + 2 * HOUR, 4 * DAY + 3 * HOUR, None),
            (0, "repair", 4 * DAY + 3 * HOUR, back, None),
            (0, "burn_in", back, repaired, None),
            (0, "spare", repaired, 6 * DAY, None),
        ]
    )
    incs = incidents([(7, t_fail, repaired, "gpu_hbm3", 0, 2, 48)])
    df = samples(scenario(6), fleet(1), hs, incs, seed=11)
    gpu = df.filter(pl.col("gpu_id") == 2).sort("t_s")
    before = gpu.filter(pl.col("t_s") < t_fail)
    sbe = before["ecc_sbe"].to_numpy()
    assert (np.diff(sbe) >= 0).all()  # cumulative
    assert (
        sbe[before["t_s"] < t_fail - 3 * DAY].max() <= 60
    )  # quiet before the 3-day ramp (background at most)
    assert before.filter(pl.col("t_s") == t_fail - 0.5 * HOUR)["ecc_sbe"].item() >= 0.95 * SBE_AT_FAILURE[0]
    assert (before["ecc_dbe"] == 0).all()
    after_fail = gpu.filter((pl.col("t_s") >= t_fail) & (pl.col("t_s") < back))
    # the host keeps reporting until it goes down at 02:00: one sample (01:00) shows the double-bit error
    assert after_fail["t_s"].to_list() == [4 * DAY + HOUR] and after_fail["ecc_dbe"].to_list() == [1]
    assert after_fail["ecc_sbe"].item() >= before["ecc_sbe"].max()
    # the driver reloads when the host leaves repair: the burn-in already counts from zero
    fresh = gpu.filter(pl.col("t_s") >= back)
    assert fresh["t_s"][0] == back and fresh["ecc_sbe"][0] == 0 and (fresh["ecc_dbe"] == 0).all()
    assert fresh["ecc_sbe"].max() <= 2 * 20  # at most the background trickle (<= 20 a day) in 2 days
    others = df.filter((pl.col("gpu_id") != 2) & (pl.col("t_s") < repaired))
    assert others["ecc_sbe"].max() <= 20 * 5 and (others["ecc_dbe"] == 0).all()


def test_about_two_percent_of_gpus_trickle_single_bit_errors_without_any_incident():
    hosts = 512
    df = samples(scenario(10, "6h"), fleet(hosts), whole_run(hosts, "healthy", 10), seed=8)
    last = df.filter(pl.col("t_s") == df["t_s"].max())
    share = (last["ecc_sbe"] > 0).mean()
    # SBE_PRONE_SHARE = 2% of 4,096 GPUs: binomial sd 0.22 points; each prone GPU counts >= 0.5 a day
    assert 0.012 <= share <= 0.03
    assert (last["ecc_sbe"] <= 20 * 10).all() and (df["ecc_dbe"] == 0).all()
    per_gpu = df.sort("t_s").group_by("gpu_id", maintain_order=True).agg(pl.col("ecc_sbe").diff().min())
    assert per_gpu["ecc_sbe"].min() >= 0  # cumulative: never falls without a reset


def test_heat_rises_in_the_hours_before_a_thermal_fault():
    t_fault = DAY + 12 * HOUR
    hs = whole_run(1, "running", 2, "j")
    incs = incidents([(3, t_fault, None, "gpu_thermal", 0, 6, None)])
    df = samples(scenario(2, "30m"), fleet(1), hs, incs, seed=2)
    temp = df.pivot(on="gpu_id", index="t_s", values="temp_c").sort("t_s")
    delta = (temp["6"] - temp["5"]).to_numpy()  # GPU 6 against its neighbour, same load and same air
    t = temp["t_s"].to_numpy()
    baseline = delta[t < t_fault - 12 * HOUR].mean()
    early = delta[(t >= t_fault - 4 * HOUR) & (t < t_fault - 2 * HOUR)].mean() - baseline
    late = delta[(t >= t_fault - 2 * HOUR) & (t < t_fault)].mean() - baseline
    assert 1 < early < late and late > 5  # rising toward the fault (12 C at it, 2 h time constant)
    assert (delta[t >= t_fault] - baseline > 8).all()  # stays hot until repaired (never, here)


@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20)), max_size=12),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20)), max_size=12),
)
def test_next_reset_is_the_hosts_first_return_strictly_after_the_incident(incident_list, reset_list):
    resets = sorted(set(reset_list))
    host, t_s = (np.array([i[k] for i in incident_list], dtype=np.int64) for k in (0, 1))
    got = precursors._next_reset(
        host,
        t_s.astype(float),
        np.array([r[0] for r in resets], dtype=np.int64),
        np.array([r[1] for r in resets], dtype=float),
    )
    want = [min((r[1] for r in resets if r[0] == h and r[1] > t), default=np.inf) for h, t in incident_list]
    assert got.tolist() == want


# ----- determinism and chunking -------------------------------------------------------------------------


def _mixed_inputs():
    hs = states(
        [
            (0, "running", 0, DAY, "j"),
            (0, "draining", DAY, DAY + 600, "j"),
            (0, "down", DAY + 600, DAY + HOUR, None),
            (0, "repair", DAY + HOUR, 2 * DAY, None),
            (0, "burn_in", 2 * DAY, 3 * DAY, None),
            (1, "spare", 0, 3 * DAY, None),
            (2, "running", 0, 3 * DAY, "j"),
            (3, "healthy", 0, 3 * DAY, None),
            (4, "running", 0, 3 * DAY, "r"),
        ]
    )
    incs = incidents(
        [
            (1, DAY, 2 * DAY, "gpu_hbm3", 0, 1, 48),
            (2, 2.5 * DAY, None, "gpu_thermal", 2, 17, None),
            (3, 1.5 * DAY, 2.25 * DAY, "faulty_gpu", 4, 33, 79),
        ]
    )
    ckpts = pl.DataFrame(
        {
            "job_id": "j",
            "start_s": np.arange(0, 3 * DAY, 1800.0),
            "end_s": np.arange(0, 3 * DAY, 1800.0) + 120,
        }
    )
    return fleet(5), hs, incs, ckpts


def test_same_seed_same_frames_other_seed_other_frames():
    args = (scenario(3, "10m"), *_mixed_inputs())
    first, again, other = (samples(*args, seed=s) for s in (4, 4, 5))
    assert first.equals(again) and not first.equals(other)
    assert first.select("t_s", "gpu_id").equals(other.select("t_s", "gpu_id"))  # only the values move


@given(st.integers(1, 4000))
@settings(max_examples=12, deadline=None)
def test_chunks_concatenate_to_the_same_frame_whatever_their_size(chunk_rows):
    args = (scenario(3, "30m"), *_mixed_inputs())
    whole = samples(*args, seed=9)
    chunks = list(gpu_samples(*args, np.random.default_rng(9), chunk_rows=chunk_rows))
    # the same rows and values whatever the chunking; rows are time-major within a chunk
    assert pl.concat(chunks).sort("gpu_id", "t_s").equals(whole.sort("gpu_id", "t_s"))
    assert all(c["t_s"].is_sorted() for c in chunks)
    assert all(c.height <= max(chunk_rows, 8 * 144) for c in chunks)  # whole hosts, at least one a chunk


def test_blocks_computed_inside_a_chunk_change_nothing(monkeypatch):
    args = (scenario(3, "30m"), *_mixed_inputs())
    whole = samples(*args, seed=9)
    monkeypatch.setattr(telemetry, "BLOCK_ROWS", 8 * 144)  # one host a block
    assert samples(*args, seed=9).equals(whole)


def test_hosts_of_different_sizes_read_as_if_each_were_alone():
    gpus = pl.concat(
        [
            fleet(1, 8),
            fleet(1, 4).with_columns(pl.col("gpu_id") + 8, host_id=pl.lit(1, pl.Int32)),
            fleet(1, 2).with_columns(pl.col("gpu_id") + 12, host_id=pl.lit(2, pl.Int32)),
        ]
    )
    hs = states(
        [
            (0, "running", 0, DAY, "j"),
            (1, "burn_in", 0, DAY, None),
            (2, "running", 0, 0.5 * DAY, "j"),
            (2, "repair", 0.5 * DAY, DAY, None),
        ]
    )
    mixed = samples(scenario(), gpus, hs, seed=2)  # one block of unequal hosts
    one_by_one = samples(scenario(), gpus, hs, seed=2, chunk_rows=1)  # a block a host: equal sizes
    assert mixed.equals(one_by_one)
    assert mixed.group_by("gpu_id").len().sort("gpu_id")["len"].to_list() == [24] * 12 + [12] * 2


def test_worker_threads_change_nothing_and_an_abandoned_iterator_stops_cleanly():
    args = (scenario(3, "30m"), *_mixed_inputs())
    frames = {
        w: pl.concat(gpu_samples(*args, np.random.default_rng(9), chunk_rows=1500, workers=w)) for w in (1, 3)
    }
    assert frames[1].equals(frames[3])
    chunks = gpu_samples(*args, np.random.default_rng(9), chunk_rows=1500, workers=2)
    first = next(chunks)
    chunks.close()  # the store writer may stop early (an error elsewhere): no thread is left behind
    assert first.equals(frames[1].head(first.height))


def test_bad_input_fails_at_the_call_not_at_the_first_chunk():
    with pytest.raises(GoodputError):
        gpu_samples(
            scenario(),
            fleet(1),
            states([(0, "asleep", 0, DAY, None)]),
            NO_INCIDENTS,
            NO_CHECKPOINTS,
            np.random.default_rng(0),
        )


def test_rows_of_a_chunk_do_not_depend_on_the_input_order_of_gpus():
    gpus, hs, incs, ckpts = _mixed_inputs()
    sc = scenario(3, "1h")
    a = samples(sc, gpus, hs, incs, ckpts, seed=3)
    b = samples(sc, gpus.reverse(), hs.reverse(), incs.reverse(), ckpts.reverse(), seed=3)
    assert a.equals(b)


# ----- bad input ----------------------------------------------------------------------------------------


def test_unknown_state_and_missing_columns_are_named():
    with pytest.raises(GoodputError, match="host_states: unknown state 'asleep' for host 0"):
        samples(scenario(), fleet(1), states([(0, "asleep", 0, DAY, None)]))
    with pytest.raises(GoodputError, match="host_states: missing column.*end_s"):
        samples(scenario(), fleet(1), states([(0, "running", 0, DAY, "j")]).drop("end_s"))
    with pytest.raises(GoodputError, match="incidents: missing column.*repaired_s"):
        samples(scenario(), fleet(1), whole_run(1, "running", 1), NO_INCIDENTS.drop("repaired_s"))


# ----- XID events ---------------------------------------------------------------------------------------

XID_LINE = re.compile(
    r"^NVRM: Xid \(PCI:(?P<pci>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2})\): (?P<xid>\d+), "
    r"pid=(?P<pid>'<unknown>'|\d+), name=(?P<name>[^,]+), (?P<text>.+)$"
)


def _xid_incidents() -> pl.DataFrame:
    return incidents(
        [
            (1, 1000.0, 9000.0, "faulty_gpu", 1, 9, 79),
            (2, 3 * DAY, 3.5 * DAY, "gpu_hbm3", 0, 3, 48),
            (3, 5000.0, None, "silent_data_corruption", 0, 5, 13),
            (4, 7000.0, None, "gpu_system_processor", 1, 12, 119),
            (5, 2000.0, None, "power_supply", 0, None, None),  # not a GPU cause: no XID
            (
                6,
                0.5 * DAY,
                None,
                "gpu_hbm3",
                1,
                14,
                95,
            ),  # only its last precursor (6 h before) falls after t = 0
        ]
    )


def test_xid_events_are_exact_for_a_hand_made_incident_list():
    events = xid_events(_xid_incidents(), fleet(2), np.random.default_rng(1))
    assert events.schema == polars_schema("xid_events")
    expected = (
        [(1000.0, 9, 1, 79, 1)]
        + [(1000.2, g, 1, 45, 1) for g in (8, 10, 11, 12, 13, 14, 15)]
        + [
            (5000.0, 5, 0, 13, 3),
            (5000.0001, 5, 0, 13, 3),
            (5000.0002, 5, 0, 13, 3),
            (5000.0003, 5, 0, 13, 3),
            (5000.5, 5, 0, 43, 3),
        ]
        + [(7000.0, 12, 1, 119, 4), (7006.0, 12, 1, 119, 4), (7012.0, 12, 1, 120, 4)]
        + [(6 * HOUR, 14, 1, 92, 6)]
        + [(0.5 * DAY, 14, 1, 95, 6), (0.5 * DAY + 0.01, 14, 1, 63, 6), (0.5 * DAY + 0.1, 14, 1, 45, 6)]
        + [(DAY, 3, 0, 63, 2), (2 * DAY, 3, 0, 63, 2), (3 * DAY - 6 * HOUR, 3, 0, 92, 2)]
        + [(3 * DAY, 3, 0, 48, 2), (3 * DAY + 0.01, 3, 0, 63, 2), (3 * DAY + 0.1, 3, 0, 45, 2)]
    )
    got = events.select("t_s", "gpu_id", "host_id", "xid", "incident_id").rows()
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert row[0] == pytest.approx(want[0], abs=1e-6) and row[1:] == want[1:]
    messages = events["message"].to_list()
    assert (
        messages[0]
        == "NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    )
    for event, message in zip(events.rows(named=True), messages, strict=True):
        match = XID_LINE.match(message)
        assert match, message
        assert int(match["xid"]) == event["xid"] and match["pci"] == pci_bus_id(event["gpu_id"] % 8)
    # the 45s of one incident come from the ranks of one job: consecutive pids on one host
    pids = [int(XID_LINE.match(m)["pid"]) for m in messages[1:8]]
    assert np.diff(pids).tolist() == [2, 1, 1, 1, 1, 1]  # GPU 9 (slot 1) printed the 79 instead


def test_xid_events_are_deterministic_and_reject_unknown_codes():
    a = xid_events(_xid_incidents(), fleet(2), np.random.default_rng(3))
    assert a.equals(xid_events(_xid_incidents(), fleet(2), np.random.default_rng(3)))
    assert xid_events(incidents([]), fleet(2), np.random.default_rng(3)).height == 0
    with pytest.raises(GoodputError, match="incident 9 has XID 999"):
        xid_events(incidents([(9, 10.0, None, "faulty_gpu", 0, 1, 999)]), fleet(1), np.random.default_rng(3))


def test_generated_lines_read_like_the_real_kernel_logs(shared_data):
    real = [
        line.split("NVRM: ", 1)[1]
        for path in sorted((shared_data / "kernel-logs").glob("*.log"))
        for line in path.read_text().splitlines()
        if "NVRM: Xid" in line
    ]
    assert real and all(XID_LINE.match("NVRM: " + line) for line in real)
    real_codes = {int(XID_LINE.match("NVRM: " + line)["xid"]) for line in real}
    events = xid_events(_xid_incidents(), fleet(2), np.random.default_rng(1))
    for code in real_codes & set(events["xid"].to_list()):  # same wording as the real driver for shared codes
        ours = XID_LINE.match(events.filter(pl.col("xid") == code)["message"][0])["text"]
        theirs = [
            XID_LINE.match("NVRM: " + line)["text"]
            for line in real
            if int(XID_LINE.match("NVRM: " + line)["xid"]) == code
        ]
        shape = re.compile(r"\d+|0x[0-9a-f]+|[0-9a-f]{8}")
        assert shape.sub("#", ours) in {shape.sub("#", text) for text in theirs}


def test_the_kernel_log_parser_reads_back_what_the_simulator_writes():
    events = xid_events(_xid_incidents(), fleet(2), np.random.default_rng(1)).filter(pl.col("host_id") == 1)
    boot = 1_000_000.0  # dmesg stamps are seconds since boot
    text = "".join(f"[{boot + t:.6f}] {message}\n" for t, message in events.select("t_s", "message").rows())
    parsed = kernel_log.parse_kernel_logs([Source("node001.dmesg.log", text.encode())]).events.sort("line")
    assert parsed["code"].to_list() == events["xid"].to_list()
    assert parsed["pci"].to_list() == [pci_bus_id(g % 8) for g in events["gpu_id"].to_list()]
    assert parsed["t_rel_s"].to_numpy() == pytest.approx(
        events["t_s"].to_numpy() - events["t_s"][0], abs=1e-5
    )


def test_xid_counts_per_window_add_up_to_the_events():
    events = xid_events(_xid_incidents(), fleet(2), np.random.default_rng(1))
    counts = xid_counts(events, HOUR)
    assert counts.columns == ["t_s", "xid", "count"]
    assert counts["count"].sum() == events.height
    assert ((counts["t_s"] % HOUR) == 0).all()
    first_hour = {row[1]: row[2] for row in counts.filter(pl.col("t_s") == 0).rows()}
    assert first_hour == {45: 7, 79: 1}
    assert counts.filter(pl.col("t_s") == 3600)["count"].sum() == 5 + 3  # the 13 burst, its 43, the GSP lines
    with pytest.raises(GoodputError, match="window must be positive"):
        xid_counts(events, 0)


# ----- with the simulator -------------------------------------------------------------------------------


def test_a_simulated_demo_run_reports_only_from_live_hosts_and_logs_every_gpu_incident():
    run = simulate(build("demo"))
    samples_ = pl.concat(run.tables["gpu_samples"])
    hs, gpus, incs = run.tables["host_states"], run.tables["gpus"], run.tables["incidents"]
    t = sample_times(run.duration_s, build("demo")["simulation.telemetry_resolution"])
    assert samples_.height <= gpus.height * t.size and samples_.height > 0.8 * gpus.height * t.size
    placed = (
        samples_.join(gpus.select("gpu_id", "host_id"), on="gpu_id")
        .sort("t_s")
        .join_asof(
            hs.sort("start_s").select("host_id", "start_s", "end_s", "state"),
            left_on="t_s",
            right_on="start_s",
            by="host_id",
            strategy="backward",
            check_sortedness=False,
        )
    )
    assert placed["state"].null_count() == 0 and (placed["t_s"] < placed["end_s"]).all()
    assert not placed["state"].is_in(list(SILENT)).any()
    silent_time = hs.filter(pl.col("state").is_in(list(SILENT)))
    assert silent_time.height > 0  # the demo's failures do take hosts off line
    logged = run.tables["xid_events"].select("incident_id", "gpu_id", "xid")
    primaries = incs.filter(pl.col("xid").is_not_null()).select("incident_id", "gpu_id", "xid")
    assert primaries.height > 0
    assert primaries.join(logged, on=["incident_id", "gpu_id", "xid"], how="anti").height == 0
