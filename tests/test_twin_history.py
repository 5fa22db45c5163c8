"""What the twin learns from a fault history (issue 46, 2 and 3): bursts of several hosts at once, a rate that
changed, faults of unknown cause, and the time split that fits before a date and forecasts after it.

The histories are built here as an ingested fault history is (hosts, host states, incidents, no job): exact small
cases for the grouping, and Poisson histories with fixed seeds and stated tolerances for the tests."""

from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest

from engine.errors import GoodputError
from engine.ingest.observed import hosts_table
from engine.store import Store
from engine.store.run import Run
from engine.twin.backtest import backtest
from engine.twin.calibrate import RUN_KEY, calibrate
from engine.twin.drift import ALPHA, Week, rate_changes
from engine.twin.fit_bursts import find_bursts, fit_bursts, independent_share
from engine.twin.sweep import LocalExecutor
from engine.units import SECONDS_PER_DAY, SECONDS_PER_WEEK

START = datetime(2025, 1, 6, tzinfo=UTC)


def _incidents(t_s, host_id, repair_s, cause="faulty_gpu") -> pl.DataFrame:
    n = len(t_s)
    t = np.asarray(t_s, dtype=float)
    causes = [cause] * n if isinstance(cause, str) else list(cause)
    return pl.DataFrame(
        {
            "incident_id": np.arange(n, dtype=np.int32),
            "t_s": t,
            "detected_s": t,
            "mitigated_s": t,
            "repaired_s": t + np.asarray(repair_s, dtype=float),
            "cause": causes,
            "category": ["GPU"] * n,
            "planned": [False] * n,
            "xid": pl.Series([None] * n, dtype=pl.Int32),
            "host_id": np.asarray(host_id, dtype=np.int32),
            "gpu_id": pl.Series([None] * n, dtype=pl.Int32),
            "link_id": pl.Series([None] * n, dtype=pl.Int32),
            "jobs_hit": np.zeros(n, dtype=np.int32),
            "gpu_hours_lost": np.zeros(n),
            "job_ids": [[] for _ in range(n)],
        },
        schema_overrides={"job_ids": pl.List(pl.String)},
    )


def _history(incidents: pl.DataFrame, hosts: int, days: float) -> Run:
    """A fault history's run: every host healthy but while out for one of its incidents (merged per host)."""
    end = days * SECONDS_PER_DAY
    out = (
        incidents.select("host_id", start_s="t_s", end_s=pl.col("repaired_s").clip(upper_bound=end))
        .sort("host_id", "start_s")
        .with_columns(
            block=(pl.col("start_s") > pl.col("end_s").cum_max().shift(1).over("host_id").fill_null(-1.0))
            .cum_sum()
            .over("host_id")
        )
        .group_by("host_id", "block")
        .agg(pl.col("start_s").min(), pl.col("end_s").max())
        .drop("block")
    )
    rows = []
    for host in range(hosts):
        t = 0.0
        for a, b in sorted(out.filter(pl.col("host_id") == host).select("start_s", "end_s").iter_rows()):
            if a > t:
                rows.append((host, "healthy", t, a))
            rows.append((host, "down", a, b))
            t = b
        if t < end:
            rows.append((host, "healthy", t, end))
    states = pl.DataFrame(
        rows,
        schema={"host_id": pl.Int32, "state": pl.String, "start_s": pl.Float64, "end_s": pl.Float64},
        orient="row",
    ).with_columns(job_id=pl.lit(None, pl.String))
    names = pl.DataFrame(
        {"host_id": np.arange(hosts, dtype=np.int32), "hostname": [f"n{i:04d}" for i in range(hosts)]}
    )
    gpus = pl.DataFrame(
        {
            "gpu_id": np.arange(hosts * 8, dtype=np.int32),
            "host_id": np.repeat(np.arange(hosts, dtype=np.int32), 8),
            "index": np.tile(np.arange(8, dtype=np.int16), hosts),
            "uuid": [None] * (hosts * 8),
            "model": ["H100"] * (hosts * 8),
        },
        schema_overrides={"uuid": pl.String},
    )
    return Run(
        kind="ingest",
        name="fault history",
        started_at=START,
        duration_s=end,
        scenario={"source": "test"},
        summary={},
        tables={"hosts": hosts_table(names), "gpus": gpus, "host_states": states, "incidents": incidents},
    )


def _poisson_history(rng, hosts, days, rate_per_host_day, *, change_day=None, later_rate=None, repair_h=6.0):
    """Independent faults at a rate per host-day (another rate after change_day), exponential repairs."""
    times, host_ids = [], []
    segments = [(0.0, change_day or days, rate_per_host_day)]
    if change_day is not None:
        segments.append((change_day, days, later_rate))
    for a, b, rate in segments:
        n = rng.poisson(rate * hosts * (b - a))
        times.append(rng.uniform(a, b, n) * SECONDS_PER_DAY)
        host_ids.append(rng.integers(0, hosts, n))
    t, h = np.concatenate(times), np.concatenate(host_ids)
    order = np.argsort(t)
    return t[order], h[order], rng.exponential(repair_h * 3600.0, len(t))


# ----- bursts -------------------------------------------------------------------------------------------------


def test_faults_within_a_minute_of_each_other_are_one_burst():
    # three hosts within 50 s (chained), two within 10 s, a lone fault, one host failing twice in a minute
    incidents = _incidents(
        [0.0, 30.0, 50.0, 1000.0, 1010.0, 5000.0, 9000.0, 9020.0],
        [1, 2, 3, 4, 5, 6, 7, 7],
        [3600.0] * 8,
    )
    found = find_bursts(incidents, 0.0, 1e9, 60.0)  # a long span: no chance pair expected
    assert found.groups == 2 and found.sizes == (3, 2) and found.faults == 8
    assert found.chance == pytest.approx(0.0, abs=1e-3)
    assert found.hosts_struck == pytest.approx(5.0, abs=1e-2) and found.chance_hosts == pytest.approx(
        0.0, abs=1e-2
    )
    assert independent_share(found) == pytest.approx(3 / 8, abs=1e-3)
    fitted = fit_bursts(found, 10.0, "test")
    assert fitted.keys["failures.burst_per_day"].value == pytest.approx(0.2, abs=1e-3)
    # the size law's maximum likelihood: 2 + mean(size - 2) = 2.5
    size = fitted.keys["failures.burst_size_mean"]
    assert size.value == pytest.approx(2.5, abs=1e-3) and size.low < 2.5 < size.high


def test_chance_coincidences_of_independent_faults_are_not_bursts():
    """A large fleet's independent faults fall within a minute of each other by chance (here about 5 % of them):
    the fitted burst rate stays near zero."""
    rng = np.random.default_rng(3)
    t, h, repair = _poisson_history(rng, 20_000, 365.0, 0.004)  # ~80 faults a day, 29,000 in all
    found = find_bursts(_incidents(t, h, repair), 0.0, 365.0 * SECONDS_PER_DAY, 60.0)
    assert found.groups > 1000  # chance pairs aplenty
    fitted = fit_bursts(found, 365.0, "test")
    # within 5 % of the pairs seen: sqrt(1,600) = 40 pairs of Poisson noise is 2.5 %
    assert fitted.keys["failures.burst_per_day"].value < 0.05 * found.groups / 365.0


# ----- drift --------------------------------------------------------------------------------------------------


def _weeks(counts, host_days=7000.0):
    return [Week(i * SECONDS_PER_WEEK, int(c), host_days, None) for i, c in enumerate(counts)]


def test_a_rate_that_doubles_is_found_where_it_changed():
    rng = np.random.default_rng(11)
    counts = np.concatenate([rng.poisson(20, 12), rng.poisson(40, 12)])
    p_value, changes = rate_changes(_weeks(counts))
    assert p_value < ALPHA and len(changes) == 1
    assert abs(changes[0].at_s / SECONDS_PER_WEEK - 12) <= 1
    assert changes[0].after == pytest.approx(1000 * 40 / 7000, rel=0.15)


def test_one_rate_is_seldom_called_a_change():
    """Under one rate the test calls a change in about ALPHA of histories: at most 4 of 100 (binomial, 1 %)."""
    rng = np.random.default_rng(5)
    false_alarms = sum(bool(rate_changes(_weeks(rng.poisson(25, 26)))[1]) for _ in range(100))
    assert false_alarms <= 4


def test_too_short_to_test():
    assert rate_changes(_weeks([3, 4, 5, 6, 7])) == (None, [])


# ----- calibrate and the time split ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def drifting(tmp_path_factory):
    """400 hosts over 26 weeks: 0.02 faults a host-day for 13 weeks, then 0.008; bursts of 4 hosts twice a
    week; a fifth of the faults of unknown cause."""
    rng = np.random.default_rng(46)
    hosts, days = 400, 182.0
    t, h, repair = _poisson_history(rng, hosts, days, 0.02, change_day=91.0, later_rate=0.008)
    bursts = np.sort(rng.uniform(0, days, int(days / 3.5))) * SECONDS_PER_DAY
    first = rng.integers(0, hosts - 4, bursts.size)
    t = np.concatenate([t, np.repeat(bursts, 4)])
    h = np.concatenate([h, (first[:, None] + np.arange(4)).ravel()])
    repair = np.concatenate([repair, rng.exponential(6 * 3600.0, bursts.size * 4)])
    order = np.argsort(t, kind="stable")
    causes = np.where(rng.random(t.size) < 0.2, "unknown", "faulty_gpu")
    incidents = _incidents(t[order], h[order], repair[order], causes[order].tolist())
    store = Store(tmp_path_factory.mktemp("history") / "store")
    return store, store.write_run(_history(incidents, hosts, days))


def test_calibrate_takes_the_recent_level_and_the_bursts(drifting):
    store, run_id = drifting
    fit = calibrate(store, run_id)
    assert fit.drift is not None and fit.drift.rate_changes
    assert abs(fit.drift.recent_rate_from_s / SECONDS_PER_DAY - 91.0) <= 7.0  # within a week of the change
    # the recent independent level: 8 per 1,000 host-days (Poisson over ~36,000 host-days: +-5 %; 10 % allowed)
    assert fit.keys[RUN_KEY].value == pytest.approx(8.0, rel=0.10)
    assert any("failure rate changed" in w for w in fit.warnings)
    bursts = fit.keys["failures.burst_per_day"]
    assert bursts.value == pytest.approx(1 / 3.5, rel=0.35)  # 26 bursts in the recent 13 weeks
    assert fit.keys["failures.burst_size_mean"].value == pytest.approx(4.0, abs=0.5)
    unknown, faults = fit.unknown_faults
    assert unknown / faults == pytest.approx(0.2, abs=0.03)
    assert any("cause the simulator does not model" in w for w in fit.warnings)


def test_the_time_split_forecasts_after_the_date(drifting):
    store, run_id = drifting
    fit = calibrate(store, run_id, until="140d")
    test = backtest(store, fit, 3, executor=LocalExecutor(1))
    assert test.split is not None and test.split.forecast_days == pytest.approx(42.0)
    assert test.days == pytest.approx(42.0)
    assert len(test.faults_by_week["observed"]) == 6
    assert sum(test.faults_by_week["observed"]) == test.observed.incidents
    # a fault history has no job: no interruptions, lost GPU-hours or ETTR to compare
    assert test.figures["ettr"].observed is None and test.figures["interruptions"].inside is None
    assert test.figures["repair_median_s"].observed == pytest.approx(6 * 3600 * np.log(2), rel=0.2)
    assert test.unknown_share is not None and test.unknown_share.observed == pytest.approx(0.2, abs=0.05)
    assert test.to_json()["split"]["forecast_days"] == pytest.approx(42.0)


def test_a_split_too_close_to_the_end_is_refused(drifting):
    store, run_id = drifting
    fit = calibrate(store, run_id, until=f"{182.0 - 0.5}d")
    with pytest.raises(GoodputError, match="at least 1 day after --until"):
        backtest(store, fit, 2, executor=LocalExecutor(1))


def test_a_backtests_runs_build_only_what_the_figures_read_and_give_the_same_figures():
    """simulate(figures_only=True) skips the base layer of host_states (the research jobs' rows) but its
    figures are those of the whole run, to the last bit that matters."""
    from dataclasses import asdict

    from engine.analysis.window_figures import window_figures
    from engine.scenario import build
    from engine.twin.simulate import simulate

    scenario = build("demo").with_values({"simulation.days": 20.0, "simulation.telemetry": False})
    whole, figures = simulate(scenario), simulate(scenario, figures_only=True)
    assert set(figures.tables) == {"incidents", "jobs", "job_attempts", "checkpoints", "host_states"}
    a = asdict(window_figures(whole.tables, 3 * SECONDS_PER_DAY, whole.duration_s))
    b = asdict(window_figures(figures.tables, 3 * SECONDS_PER_DAY, figures.duration_s))
    assert a.keys() == b.keys()
    for key in a:
        same = a[key] == b[key] if isinstance(a[key], str | dict | None) else a[key] == pytest.approx(b[key])
        assert same, key
    assert a["hosts_in_repair_mean"] > 0


def test_outages_seen_whole_get_no_fixed_steps_and_no_queue_on_top(drifting):
    """A fault history's outages hold any wait for hands: the twin takes each whole, with no fixed steps and
    technicians enough that none waits (twice the most hosts out at once)."""
    from engine.twin.fit_repair import _most_out_at_once

    store, run_id = drifting
    fit = calibrate(store, run_id)
    assert all(fit.keys[k].value == 0.0 for k in ("repair.drain", "repair.diagnose", "repair.burn_in"))
    hands = fit.keys["repair.technicians"]
    assert hands.source == "assumed" and hands.value >= 2
    episodes = pl.DataFrame({"t_s": [0.0, 1.0, 2.0, 10.0, 10.0], "took": [5.0, 5.0, 0.5, 1.0, 1.0]})
    assert _most_out_at_once(episodes) == 3  # [0,5) [1,6) [2,2.5) overlap; two at 10 make 2
    assert _most_out_at_once(episodes.slice(3)) == 2
