"""The Twin page's history (issue 46): `fault_history`, a fault history built by hand (hosts, GPUs, host states and
incidents only, no job, as an ingested ticket history is) whose failure rate steps up halfway; what the page's
queries make of its fit (the weekly series, the fitted levels, the test in words) and the charts drawn of it and
of a time split's backtest."""

from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest

from dashboard.charts import twin as charts
from dashboard.queries import twin as queries
from engine.store import Store
from engine.store.run import UNKNOWN_START, Run
from engine.twin.calibrate import calibrate
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

STARTED = datetime(2024, 1, 1, tzinfo=UTC)
CAUSES = ("faulty_gpu", "nic", "power_supply")


def fault_history(
    *,
    hosts: int = 200,
    weeks: int = 20,
    rates: tuple[float, float] = (5.0, 10.0),
    repair_h: tuple[float, float] = (6.0, 6.0),
    unknown_share: float = 0.1,
    seed: int = 7,
    started_at: datetime = STARTED,
) -> Run:
    """`weeks` of `hosts` hosts failing at rates[0] per 1,000 host-days in the first half and rates[1] after, each
    fault repaired in a lognormal time of median repair_h[0] (first half) or [1] hours; a share of faults of a
    cause no rule named (`unknown`). A host fails only while in service, as the simulator's do."""
    rng = np.random.default_rng(seed)
    end = weeks * 7 * SECONDS_PER_DAY
    half = end / 2
    peak = max(rates) * hosts / 1000.0 / SECONDS_PER_DAY
    free = np.zeros(hosts)  # when each host is back in service
    incidents, states = [], []
    t = 0.0
    while (t := t + rng.exponential(1 / peak)) < end:
        early = t < half
        if rng.random() > (rates[0] if early else rates[1]) / max(rates):
            continue  # thinning: the rate of this half
        host = int(rng.integers(hosts))
        if t < free[host]:
            continue
        repaired = t + float(
            rng.lognormal(np.log((repair_h[0] if early else repair_h[1]) * SECONDS_PER_HOUR), 0.8)
        )
        cause = "unknown" if rng.random() < unknown_share else CAUSES[int(rng.integers(len(CAUSES)))]
        incidents.append((len(incidents), t, t, repaired if repaired < end else None, cause, False, host))
        states += [(host, "healthy", free[host], t), (host, "repair", t, min(repaired, end))]
        free[host] = repaired
    states += [(h, "healthy", free[h], end) for h in range(hosts) if free[h] < end]
    host_ids = np.arange(hosts, dtype=np.int32)
    gpu_ids = np.arange(hosts * 8, dtype=np.int32)
    tables = {
        "hosts": pl.DataFrame(
            {
                "host_id": host_ids,
                "hostname": [f"node{h:04d}" for h in host_ids],
                "rack_id": host_ids // 8,
                "pod_id": host_ids // 64,
            }
        ),
        "gpus": pl.DataFrame(
            {"gpu_id": gpu_ids, "host_id": gpu_ids // 8, "index": (gpu_ids % 8).astype(np.int16)}
        ),
        "host_states": pl.DataFrame(
            states, schema=["host_id", "state", "start_s", "end_s"], orient="row"
        ).with_columns(pl.col("host_id").cast(pl.Int32)),
        "incidents": pl.DataFrame(
            incidents,
            schema=["incident_id", "t_s", "detected_s", "repaired_s", "cause", "planned", "host_id"],
            orient="row",
        ).with_columns(pl.col("host_id").cast(pl.Int32), pl.lit("Hardware").alias("category")),
    }
    return Run(kind="ingest", name="fault history", started_at=started_at, duration_s=end, tables=tables)


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("history") / "store")
    return store, store.write_run(fault_history())


def test_the_weekly_series_and_the_change_the_twin_takes(stepped):
    store, run_id = stepped
    fitted = calibrate(store, run_id)
    weeks = queries.history(fitted)
    assert weeks.height == 20 and weeks["week"][0] == "2024-01-01" and weeks["week"][1] == "2024-01-08"
    assert weeks["end_s"][-1] == fitted.window.end_s and weeks["faults"].sum() > 100
    levels = queries.rate_levels(fitted)
    assert len(levels) == 2 and levels[0]["level"] < levels[1]["level"]  # the rate doubled
    assert levels[1]["name"].startswith("level since ") and levels[1]["end_s"] == fitted.window.end_s
    words = queries.rate_words(fitted)
    assert words.startswith("The rate changed about 2024-0") and "the twin takes the recent level" in words
    assert "p ≤ 0.001" in words or "p = 0.00" in words
    assert queries.repair_words(fitted).startswith("The repair time stayed one level (p = ")
    assert [r["name"] for r in queries.repair_levels(fitted)] == ["the twin's median (Kaplan-Meier)"]
    fig = charts.failure_history(weeks, levels, queries.repair_levels(fitted), fitted.started_at)
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    assert len(bars) == 1 and len(bars[0].y) == 20 and "host-days" in bars[0].hovertemplate
    segments = [t for t in fig.data if isinstance(t, go.Scatter) and t.mode == "lines"]
    assert [t.y[0] for t in segments[:2]] == [lv["level"] for lv in levels]
    assert fig.layout.xaxis.type in (None, "date") and str(fig.data[0].x[0]).startswith("2024-01-04")


def test_a_short_window_is_too_short_to_test_and_one_level_reads_as_one(stepped):
    store, run_id = stepped
    short = calibrate(store, run_id, until="42d")
    assert queries.rate_words(short).startswith("Too short to test drift (fewer than 8 weeks)")
    assert [lv["name"] for lv in queries.rate_levels(short)] == ["one level (the twin's)"]
    first_half = calibrate(store, run_id, until="70d")  # ten weeks of one rate
    assert first_half.drift.rate_p_value is not None and not first_half.drift.rate_changes
    assert queries.rate_words(first_half).startswith("One level explains the weeks (p = ")


def test_a_repair_time_that_changed_and_a_run_of_unknown_date(tmp_path):
    store = Store(tmp_path / "store")
    run = fault_history(rates=(8.0, 8.0), repair_h=(4.0, 24.0), seed=3, started_at=UNKNOWN_START)
    fitted = calibrate(store, store.write_run(run))
    assert fitted.drift.repair_change is not None
    words = queries.repair_words(fitted)
    assert (
        words.startswith("The median repair time changed about day ")
        and "fitted to the repairs since" in words
    )
    before, after = queries.repair_levels(fitted)
    assert before["level"] < after["level"] and after["name"].startswith("repair level since day ")
    assert queries.history(fitted)["week"][:2].to_list() == ["day 1", "day 8"]
    fig = charts.failure_history(
        queries.history(fitted), queries.rate_levels(fitted), [before, after], UNKNOWN_START
    )
    assert fig.layout.xaxis.hoverformat.endswith("from start")  # no date invented (dashboard.charts.common)


def test_bursts_and_unknown_causes_in_words(stepped):
    store, run_id = stepped
    fitted = calibrate(store, run_id)
    unknown, faults = fitted.unknown_faults
    assert 0 < unknown < faults
    value, words = queries.bursts(fitted)
    assert value == "none" and words.startswith("no burst beyond chance · at most ")
    burst = replace(fitted.keys["failures.burst_per_day"], value=0.25, low=0.1, high=0.5, n=12)
    size = replace(burst, value=3.5, low=2.8, high=4.6)
    many = replace(
        fitted, keys={**fitted.keys, "failures.burst_per_day": burst, "failures.burst_size_mean": size}
    )
    value, words = queries.bursts(many)
    assert value == "0.25 a day"
    assert words == (
        "12 bursts beyond chance · 90 % interval 0.1 to 0.5 a day · about one every 4 days · 3.50 hosts each on"
        " average (90 % interval 2.8 to 4.6)"
    )


def test_faults_by_week_and_hosts_in_repair_on_dates():
    weeks = {
        "observed": [3, 9, 4],
        "low": [1.0, 2.0, 1.0],
        "median": [3.0, 4.0, 3.0],
        "high": [6.0, 7.0, 5.0],
        "inside": [True, False, True],
    }
    start = 70 * SECONDS_PER_DAY
    fig = charts.faults_by_week(weeks, STARTED, start, start + 17 * SECONDS_PER_DAY)
    band, median, observed = fig.data
    assert list(band.base) == [1.0, 2.0, 1.0] and list(band.y) == [5.0, 5.0, 4.0]
    assert list(observed.marker.color) == [charts.INSIDE, charts.OUTSIDE, charts.INSIDE]
    assert str(band.x[0]).startswith("2024-03-14") and band.width[2] < band.width[0]  # the last week: 3 days
    days = {"observed": [1.0, 2.0], "low": [0.0, 1.0], "median": [1.0, 1.5], "high": [2.0, 3.0]}
    dated = charts.repair_over_days(days, STARTED, start)
    assert str(dated.data[0].x[0]).startswith("2024-03-11T12:00")
    assert list(charts.repair_over_days(days).data[0].x) == [0, 1]
