"""Which recovery strategy at which scale (engine.twin.scale): the study's scenarios, its horizon and sizes,
its runs through the sweep's executors (the same frame on one process, a pool and Ray), its bands, the break-even
of warm standbys, the command line and the charts.

Tests marked "needs the strategies" check what only the simulator's recovery strategies (engine/sim/recovery.py)
can make true: that they differ, as their papers say, at the sizes the chart shows.
"""

import json
import math

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest

from dashboard.charts.planner import break_even_chart, gpus_text, scale_chart
from engine import limits
from engine.analysis.planner import spare_cover
from engine.errors import GoodputError
from engine.report import scale_command
from engine.scenario import build
from engine.twin import scale, standby
from engine.twin.simulate import simulate
from engine.twin.sweep import LocalExecutor, RayExecutor, result_row

LLAMA3 = build("llama3-405b")
DEMO = build("demo")


# ----- the study's scenarios ----------------------------------------------------------------------------------


def test_the_horizon_holds_about_a_hundred_interruptions():
    # llama3-405b: 2,048 job hosts at 3.79 per 1,000 host-days + 47/54 planned a day = 8.63 a day
    per_day = 2048 * LLAMA3["failures.rate_per_1000_node_days"] / 1000 + LLAMA3["failures.planned_per_day"]
    assert scale.interruptions_per_day(LLAMA3) == pytest.approx(per_day)
    assert scale.horizon_days(LLAMA3) == math.ceil(100 / per_day * 100) / 100 == 11.59


def test_the_horizon_is_at_least_twice_a_failed_hosts_time_away_and_at_most_a_year():
    big = scale.point_scenario(LLAMA3, "restart", 256136)  # 32,017 hosts: 100 interruptions in 0.8 days
    floor = 2 * spare_cover(big).time_away_s / 86400
    assert scale.interruptions_per_day(big) * floor > 100
    assert big["simulation.days"] == math.ceil(floor * 100) / 100 == 1.53
    rare = LLAMA3.with_values({"failures.rate_per_1000_node_days": 0.0, "failures.planned_per_day": 0.0})
    assert scale.horizon_days(rare) == scale.MAX_DAYS


def test_sizes_are_whole_hosts_and_the_largest_fits_with_its_spares():
    sizes = scale.job_sizes(LLAMA3)
    assert sizes == [1024 * 2**i for i in range(9)]  # up to 262,144: it fits with its spares
    # a job as large as the largest cluster is cut to fit beside its spares
    top_hosts = scale.job_sizes(LLAMA3, [limits.MAX_CLUSTER_GPUS])[-1] // 8
    spares = scale.spares_for(LLAMA3, top_hosts)
    assert top_hosts + spares == limits.MAX_CLUSTER_GPUS // 8 == 65536
    assert (top_hosts + 1) + scale.spares_for(LLAMA3, top_hosts + 1) > 65536  # one host more would not fit
    assert scale.job_sizes(LLAMA3, [1000, 1001, 1024]) == [1000, 1008, 1024]  # rounded up to whole hosts


def test_a_point_is_the_job_alone_on_its_hosts_and_spares():
    s = scale.point_scenario(LLAMA3, "replica_drop", 65536)
    ratio = 48 / 2048  # llama3-405b's spares per job host
    assert s["training.recovery"] == "replica_drop" and s["training.gpus"] == 65536
    assert s["spares.hosts"] == math.ceil(ratio * 8192) == 192
    assert s["cluster.gpus"] == (8192 + 192) * 8
    assert s["research.utilization"] == 0.0 and s["simulation.telemetry"] is False
    assert s["simulation.days"] == scale.horizon_days(s)
    assert s["training.checkpoint_interval"] == LLAMA3["training.checkpoint_interval"]  # the rest as set
    small = scale.point_scenario(LLAMA3, "restart", 1024)  # 3 spares by the ratio, but 16 warm standbys
    assert small["spares.hosts"] == LLAMA3["recovery.hot_spares"] == 16
    many = LLAMA3.with_values({"recovery.replicas": 1024})  # a replica of 2 hosts at 16k GPUs
    assert scale.point_scenario(many, "replica_drop", 1024)["recovery.replicas"] == 128  # one a host at 1k


def test_every_strategy_holds_the_same_hosts_for_the_same_days():
    study = scale.plan_study(LLAMA3, sizes_gpus=[1024, 16384, 262144], seeds=2)
    assert study.runs == 4 * 3 * 2 and study.seeds == (7, 8)
    by_size: dict[int, set] = {}
    for p in study.points:
        by_size.setdefault(p.job_gpus, set()).add(
            (p.spare_hosts, p.days, p.scenario["cluster.gpus"], p.scenario["training.gpus"])
        )
    assert all(len(shapes) == 1 for shapes in by_size.values())
    assert [p.strategy for p in study.points[::3]] == list(scale.STRATEGIES)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"strategies": ["restart", "retry"]}, "--strategies: unknown strategy retry"),
        ({"strategies": []}, "--strategies"),
        ({"sizes_gpus": [0]}, "--sizes: a job size must be at least 1 GPU"),
        ({"sizes_gpus": [600_000]}, "--sizes: 600,000 is over Goodput's limit"),
        ({"seeds": 0}, "--seeds: must be at least 1"),
        ({"seeds": 300}, "the scale study's runs: 10,800 is over Goodput's limit"),
    ],
)
def test_a_bad_study_is_one_clear_error_before_anything_runs(kwargs, words):
    with pytest.raises(GoodputError, match=words):
        scale.plan_study(LLAMA3, **kwargs)


def test_a_study_needs_a_flagship_job():
    with pytest.raises(GoodputError, match="training.gpus: the scale study needs a flagship job"):
        scale.plan_study(DEMO.with_values({"training.gpus": 0}))


# ----- running it ----------------------------------------------------------------------------------------------

TINY = {"strategies": ["restart", "hot_spare"], "sizes_gpus": [1024, 2048], "seeds": 2}


def test_each_row_is_the_summary_only_simulation_of_its_point_and_seed():
    study = scale.plan_study(DEMO, **TINY)
    seen: list[float] = []
    frame = scale.run_study(study, executor=LocalExecutor(1), progress=seen.append)
    assert frame.schema == pl.Schema(scale.RUN_SCHEMA)
    assert frame["strategy"].to_list() == ["restart"] * 4 + ["hot_spare"] * 4
    assert frame["job_gpus"].to_list() == [1024, 1024, 2048, 2048] * 2
    assert frame["seed"].to_list() == [7, 8] * 4
    assert seen[-1] == 1.0 and len(seen) == 8
    point = study.points[3]  # hot_spare, 2,048 GPUs
    run = simulate(point.scenario.with_values({"simulation.seed": 8}), summary_only=True)
    expected = result_row(run.summary)
    row = frame.row(7, named=True)
    assert (row["ettr"], row["interruptions"], row["lost_usd"]) == (
        expected["ettr"],
        expected["interruptions"],
        expected["lost_usd"],
    )
    assert row["days"] == point.days and row["spare_hosts"] == point.spare_hosts


def test_local_processes_and_ray_give_the_same_frame():
    ray = pytest.importorskip("ray")  # installed by `make test` (goodput[ray])
    assert not ray.is_initialized()
    study = scale.plan_study(DEMO, **TINY)
    one = scale.run_study(study, executor=LocalExecutor(1))
    pool = scale.run_study(study, executor=LocalExecutor(2))
    remote = scale.run_study(study, executor=RayExecutor(workers=2, quiet=True))
    assert one.equals(pool) and one.equals(remote)
    assert not ray.is_initialized()  # the session the executor started is shut down


def test_bands_are_the_mean_and_the_10th_and_90th_percentiles_over_seeds():
    runs = pl.DataFrame(
        {
            "strategy": ["restart"] * 10 + ["hot_spare"] * 10,
            "job_gpus": [1024] * 20,
            "spare_hosts": [16] * 20,
            "days": [73.79] * 20,
            "seed": list(range(10)) * 2,
            "ettr": [i / 10 for i in range(10)] + [0.5] * 10,
            "interruptions": [100] * 20,
            "lost_usd": [0.0] * 20,
        },
        schema=scale.RUN_SCHEMA,
    )
    bands = scale.scale_bands(runs)
    assert bands.schema == pl.Schema(scale.BAND_SCHEMA)
    restart = bands.row(0, named=True)
    # linear between order statistics: 0.1 x 9 = 0.9 of the way from 0.0 to 0.1; 0.9 x 9 = 8.1: 0.8 to 0.9
    assert restart["ettr_mean"] == pytest.approx(0.45) and restart["runs"] == 10
    assert restart["ettr_p10"] == pytest.approx(0.09) and restart["ettr_p90"] == pytest.approx(0.81)
    assert scale.best_strategy(bands).row(0) == (1024, "hot_spare", 0.5)


# ----- what the strategies change (needs the strategies) --------------------------------------------------------


@pytest.fixture(scope="module")
def llama3_at_scale() -> pl.DataFrame:
    study = scale.plan_study(LLAMA3, sizes_gpus=[1024, 131072], seeds=4)
    return scale.scale_bands(scale.run_study(study, executor=LocalExecutor(1)))


def _mean(bands: pl.DataFrame, strategy: str, gpus: int) -> float:
    return bands.filter((pl.col("strategy") == strategy) & (pl.col("job_gpus") == gpus))["ettr_mean"][0]


def test_needs_the_strategies_dropping_a_replica_wins_at_scale(llama3_at_scale):
    # Meta's FT-HSDP at ~100k GPUs: 80 % ETTR against 44 % for synchronous restart (arXiv 2602.00277). At 128k
    # GPUs on Llama 3's failure rate the gap should be at least 15 points; 4 seeds of ~100 interruptions each
    # put a mean within ~2 points of its expectation.
    assert _mean(llama3_at_scale, "replica_drop", 131072) > _mean(llama3_at_scale, "restart", 131072) + 0.15


def test_needs_the_strategies_they_hardly_differ_on_a_small_job(llama3_at_scale):
    # A 1k-GPU job fails every ~2 days: restart loses ~1 % of its time, so no strategy can win more than that.
    means = [_mean(llama3_at_scale, s, 1024) for s in scale.STRATEGIES]
    assert max(means) - min(means) < 0.02


def test_needs_the_strategies_warm_standbys_never_lose_to_restart(llama3_at_scale):
    # the same seeds see the same failures: a swap of 3 min instead of a 10 min restart only saves time
    for gpus in (1024, 131072):
        assert _mean(llama3_at_scale, "hot_spare", gpus) >= _mean(llama3_at_scale, "restart", gpus)


# ----- the break-even of warm standbys ------------------------------------------------------------------------


def test_standby_counts_double_up_to_twice_the_first_order_break_even():
    # llama3-405b: 2,048 hosts x 3.79 / 1,000 a day x 85 % that take a host x (10 - 3) min x 16,384 GPUs saved,
    # against 8 GPUs idle a standby: about 66 standbys
    assert standby.standby_estimate(LLAMA3) == pytest.approx(65.63, abs=0.01)
    assert standby.standby_counts(LLAMA3) == (0, 1, 2, 4, 8, 16, 32, 64, 128)
    assert standby.standby_counts(DEMO.with_values({"recovery.hot_spares": 3})) == (0, 1, 2, 3, 4)


def test_every_count_runs_against_restart_on_the_same_hosts():
    study = standby.plan_break_even(
        LLAMA3.with_values({"training.recovery": "hot_spare"}), counts=[0, 16, 64]
    )
    shape = [(p.strategy, p.standbys, p.spare_hosts, p.scenario["cluster.gpus"]) for p in study.points]
    assert shape == [
        ("restart", 0, 48, 24576),
        ("hot_spare", 0, 48, 24576),
        ("hot_spare", 16, 48, 24576),
        ("restart", 0, 64, 24576),  # 64 standbys need 64 spares: restart gets the same pool
        ("hot_spare", 64, 64, 24576),
    ]
    assert study.job_gpu_hours == 16384 * 54 * 24 and study.gpu_hour_usd == 2.5 and study.runs == 25
    assert all(p.scenario["simulation.telemetry"] is False for p in study.points)
    demo = DEMO.with_values({"training.recovery": "hot_spare", "recovery.hot_spares": 2})
    grown = standby.plan_break_even(demo, counts=[20])
    assert [p.scenario["cluster.gpus"] for p in grown.points] == [(48 + 20) * 8] * 2  # the cluster holds them


def test_the_break_even_is_where_the_mean_net_falls_through_zero():
    bands = pl.DataFrame({"standbys": [0, 1, 2, 4, 8], "net_usd_mean": [0.0, 50.0, 60.0, 20.0, -20.0]})
    verdict = standby.break_even_of(bands)
    assert (verdict.best, verdict.best_net_usd) == (2, 60.0)
    assert verdict.break_even == pytest.approx(6.0)  # 20 at 4, -20 at 8: zero half-way
    never = standby.break_even_of(pl.DataFrame({"standbys": [0, 1, 2], "net_usd_mean": [0.0, -5.0, -9.0]}))
    assert (never.best, never.break_even) == (0, None)
    still = standby.break_even_of(pl.DataFrame({"standbys": [0, 1, 2], "net_usd_mean": [0.0, 5.0, 9.0]}))
    assert (still.best, still.break_even) == (2, None)
    unknown = pl.DataFrame({"standbys": [0, 1]}).with_columns(net_usd_mean=pl.lit(None, pl.Float64))
    assert standby.break_even_of(unknown) is None


def test_goodput_won_is_the_ettr_difference_at_the_jobs_price():
    base = DEMO.with_values({"training.recovery": "hot_spare", "recovery.hot_spares": 2})
    study = standby.plan_break_even(base, counts=[0, 2], seeds=2)
    frame = standby.run_break_even(study, executor=LocalExecutor(1))
    assert frame.schema == pl.Schema(standby.BREAK_EVEN_SCHEMA)
    assert frame["standbys"].to_list() == [0, 0, 2, 2] and frame["seed"].to_list() == [7, 8, 7, 8]
    restart = [
        simulate(p.scenario.with_values({"simulation.seed": s}), summary_only=True).summary["job"]["ettr"]
        for p in study.points[:1]
        for s in (7, 8)
    ]
    assert frame["restart_ettr"].to_list() == restart * 2
    won = (frame["ettr"] - frame["restart_ettr"]) * 384 * 7 * 24 * 2.5
    assert frame["won_usd"].to_list() == pytest.approx(won.to_list())
    bands = standby.break_even_bands(frame)
    assert bands["standbys"].to_list() == [0, 2] and bands["runs"].to_list() == [2, 2]


def test_needs_the_strategies_no_standby_wins_nothing_and_standbys_cost_their_hours():
    # hot_spare with 0 standbys falls back to restart: the same seed gives the same ETTR. 2 standbys cost at
    # most their GPUs idle the whole week; less by the time one is swapped in until its replacement is warm, which
    # the demo's small spare pool (4 hosts, 2 of them the standbys, at 10x Llama 3's failure rate) can stretch:
    # at least 85 % of the week. Also needs engine.twin.sweep.result_row to report the summary's
    # job.recovery_cost.standby_usd as `standby_usd`.
    base = DEMO.with_values({"training.recovery": "hot_spare", "recovery.hot_spares": 2})
    frame = standby.run_break_even(
        standby.plan_break_even(base, counts=[0, 2], seeds=2), executor=LocalExecutor(1)
    )
    none, two = frame.filter(pl.col("standbys") == 0), frame.filter(pl.col("standbys") == 2)
    assert none["won_usd"].to_list() == [0.0, 0.0] and none["standby_usd"].to_list() == [0.0, 0.0]
    idle_all_week = 2 * 8 * 7 * 24 * 2.5
    assert all(0.85 * idle_all_week <= cost <= idle_all_week for cost in two["standby_usd"])
    assert two["net_usd"].to_list() == pytest.approx((two["won_usd"] - two["standby_usd"]).to_list())


# ----- the command line ---------------------------------------------------------------------------------------


def test_scale_json_has_a_row_a_run_and_a_band_a_point(capsys):
    argv = ["--preset", "demo", "--sizes", "1024", "--seeds", "2", "--strategies", "restart,hot_spare"]
    assert scale_command.main_scale([*argv, "--workers", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["strategy"], r["seed"]) for r in out["results"]] == [
        ("restart", 7),
        ("restart", 8),
        ("hot_spare", 7),
        ("hot_spare", 8),
    ]
    assert [b["strategy"] for b in out["bands"]] == ["restart", "hot_spare"]
    assert set(out["bands"][0]) == set(scale.BAND_SCHEMA)


def test_scale_text_is_a_line_a_size(capsys):
    argv = ["--preset", "demo", "--sizes", "1024,2048", "--seeds", "2", "--strategies", "restart"]
    assert scale_command.main_scale([*argv, "--workers", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "ETTR by job size and recovery strategy, 2 seeds: mean [10%, 90%]"
    assert lines[1].split() == ["job", "GPUs", "days", "restart"]
    assert [line.split()[0] for line in lines[2:]] == ["1,024", "2,048"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--strategies", "retry"], "--strategies: unknown strategy retry"),
        (["--sizes", "1k"], "--sizes: expected GPUs as whole numbers"),
        (["--set", "training.recovery=nope"], "training.recovery"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, words):
    assert scale_command.main_scale(["--preset", "demo", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("goodput: error: ") and words in err and err.count("\n") == 1


# ----- the charts ---------------------------------------------------------------------------------------------


def test_the_scale_chart_has_a_line_and_a_band_a_strategy_on_a_log_axis():
    runs = pl.DataFrame(
        {
            "strategy": ["restart"] * 4 + ["replica_drop"] * 4,
            "job_gpus": [1024, 1024, 262144, 262144] * 2,
            "spare_hosts": [16, 16, 751, 751] * 2,
            "days": [73.79, 73.79, 1.53, 1.53] * 2,
            "seed": [7, 8] * 4,
            "ettr": [0.99, 0.98, 0.3, 0.25, 0.99, 0.99, 0.8, 0.78],
            "interruptions": [100] * 8,
            "lost_usd": [0.0] * 8,
        },
        schema=scale.RUN_SCHEMA,
    )
    fig = scale_chart(scale.scale_bands(runs), scale.STRATEGY_LABELS, 2, current_gpus=16384)
    assert isinstance(fig, go.Figure) and fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == [1024, 262144] and list(fig.layout.xaxis.ticktext) == [
        "1k",
        "256k",
    ]
    assert "10th to 90th percentile over 2 seeds" in fig.layout.title.text
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == [
        "Restart from the last checkpoint",
        "Drop the failed replica (FT-HSDP)",
    ]
    assert list(lines[1].y) == pytest.approx([0.99, 0.79])
    bands = [t for t in fig.data if t.fill == "tonexty"]
    assert len(bands) == 2 and list(bands[1].y) == pytest.approx([0.99, 0.782])  # p10 of 0.8, 0.78


def test_the_break_even_chart_marks_zero_the_plan_and_the_crossing():
    bands = pl.DataFrame(
        {
            "standbys": [0, 4, 8],
            "runs": [2, 2, 2],
            "won_usd_mean": [0.0, 100.0, 100.0],
            "standby_usd_mean": [0.0, 80.0, 160.0],
            "net_usd_mean": [0.0, 20.0, -60.0],
            "net_usd_p10": [0.0, 10.0, -70.0],
            "net_usd_p90": [0.0, 30.0, -50.0],
        }
    )
    fig = break_even_chart(bands, current=4, break_even=5.0)
    [marker] = [t for t in fig.data if t.mode == "markers+text"]
    assert list(marker.x) == [5.0] and list(marker.y) == [0.0] and marker.name == "Standby break-even"
    assert [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1] == [4]


def test_gpus_text():
    assert [gpus_text(g) for g in (512, 1024, 16384, 256136, 262144)] == ["512", "1k", "16k", "250k", "256k"]
    assert np.isclose(float(gpus_text(1536)[:-1]), 1.5)
