"""The whole simulation on the demo preset: the tables' contract, their consistency, determinism, the CLI."""

import json

import numpy as np
import polars as pl
import pytest

from engine.cli import main
from engine.reference import XID_BY_CODE
from engine.scenario import build
from engine.sim.failures import CAUSE_KEYS, SCOPE, XIDS_OF
from engine.store import Store, query_frame
from engine.store.schema import HOST_STATES, TABLES
from engine.twin.simulate import simulate
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

TELEMETRY_OFF = "simulation.telemetry=false"


@pytest.fixture(scope="module")
def demo():
    return simulate(build("demo", sets=[TELEMETRY_OFF, "failures.rate_per_1000_node_days=80"]))


def test_tables_have_the_schema_columns(demo):
    for table in (
        "hosts",
        "gpus",
        "links",
        "jobs",
        "job_attempts",
        "checkpoints",
        "incidents",
        "host_states",
    ):
        frame = demo.tables[table]
        assert set(frame.columns) <= set(TABLES[table]), table
        assert frame.height > 0, table
    assert demo.kind == "simulate" and demo.seed == 7 and demo.duration_s == 7 * SECONDS_PER_DAY
    assert demo.scenario["preset"] == "demo"


def test_host_states_cover_every_host_for_the_whole_run(demo):
    states = demo.tables["host_states"].sort("host_id", "start_s")
    assert set(states["state"].unique()) <= set(HOST_STATES)
    assert states["host_id"].n_unique() == 64
    ends = states.group_by("host_id").agg(
        pl.col("start_s").first(),
        pl.col("end_s").last(),
        gaps=(pl.col("start_s").shift(-1) - pl.col("end_s")).abs().max(),
    )
    assert (ends["start_s"] == 0).all() and (ends["end_s"] == demo.duration_s).all()
    assert ends["gaps"].fill_null(0).max() < 1e-6  # contiguous: each interval starts where the last ended
    running = states.filter(pl.col("state") == "running")
    assert running["job_id"].null_count() == 0
    assert (
        states.filter(pl.col("state") != "running")["job_id"].null_count() == states.height - running.height
    )
    # the flagship job holds job_hosts hosts whenever it is not short of spares
    flagship = running.filter(pl.col("job_id") == "demo-pretrain")
    assert (flagship["end_s"] - flagship["start_s"]).sum() <= 48 * demo.duration_s + 1e-6


def test_without_spares_the_flagship_preempts_research_jobs():
    """spares.preempt_research (default on): a failed flagship host is replaced by a research host, which the
    job can use once the research job on it has handed it over (spares.preempt_handover, 20 min)."""
    sets = ["spares.hosts=0", "simulation.telemetry=false", "failures.scale=2"]
    run = simulate(build("demo", sets=sets))
    preempted = run.tables["jobs"].filter(pl.col("state") == "preempted")
    assert preempted.height > 0 and (preempted["kind"] == "research").all()
    assert run.summary["cluster"]["research_preemptions"] >= preempted.height  # idle research hosts too
    # each preemption's hand-over is time the job waits for its host, at most 20 min a preemption
    waited_h = run.summary["job"]["losses_gpu_hours"]["waiting_for_spares"] / run.summary["job"]["gpus"]
    assert 0 < waited_h <= run.summary["cluster"]["research_preemptions"] * 20 / 60 + 1e-9
    assert run.summary["cluster"]["research_lost_gpu_hours"] > 0  # the preempted research jobs' work
    states = run.tables["host_states"].sort("host_id", "start_s")
    gaps = states.group_by("host_id").agg(gap=(pl.col("start_s").shift(-1) - pl.col("end_s")).abs().max())
    assert gaps["gap"].fill_null(0).max() < 1e-6  # still one contiguous cover a host, no overlaps
    flagship_hosts = set(
        range(48)
    )  # the demo job packs into the first 48 hosts; with no spares research follows
    lent = states.filter(
        (pl.col("job_id") == "demo-pretrain") & ~pl.col("host_id").is_in(list(flagship_hosts))
    )
    assert lent.height > 0 and lent["host_id"].min() >= 48
    waiting = simulate(build("demo", sets=[*sets, "spares.preempt_research=false"]))
    assert waiting.summary["job"]["losses_gpu_hours"]["waiting_for_spares"] > 0
    assert waiting.summary["job"]["ettr"] < run.summary["job"]["ettr"]


def test_incidents_are_consistent(demo):
    inc = demo.tables["incidents"]
    assert set(inc["cause"].unique()) <= set(CAUSE_KEYS) | {"planned_maintenance"}
    assert (inc["detected_s"] >= inc["t_s"]).all()
    flagship = inc.filter(pl.col("job_ids").list.contains("demo-pretrain"))
    assert (
        flagship.drop_nulls("mitigated_s")
        .select((pl.col("mitigated_s") >= pl.col("detected_s")).all())
        .item()
    )
    for row in inc.filter(~pl.col("planned")).iter_rows(named=True):
        if row["cause"] in XIDS_OF:
            assert row["xid"] in {c for c, _ in XIDS_OF[row["cause"]]} and row["xid"] in XID_BY_CODE
            assert row["gpu_id"] // 8 == row["host_id"]
        else:
            assert row["xid"] is None
        if SCOPE[row["cause"]] == "job":
            assert row["repaired_s"] == row["detected_s"] and row["jobs_hit"] >= 1
        assert row["jobs_hit"] == len(row["job_ids"])
    planned = inc.filter(pl.col("planned"))
    assert (planned["cause"] == "planned_maintenance").all() and planned[
        "host_id"
    ].null_count() == planned.height
    # incidents' flagship GPU-hours are the job's losses bar checkpoint overhead
    job = demo.summary["job"]
    charged = flagship["gpu_hours_lost"].sum()
    losses = job["losses_gpu_hours"]
    assert charged == pytest.approx(
        losses["lost_work"] + losses["restart"] + losses["waiting_for_spares"], rel=0.02
    )


def test_attempts_checkpoints_and_summary_agree(demo):
    job = demo.summary["job"]
    attempts = demo.tables["job_attempts"].filter(pl.col("job_id") == "demo-pretrain").sort("attempt")
    assert attempts["attempt"].to_list() == list(range(1, attempts.height + 1))
    assert (attempts["start_s"].shift(-1).drop_nulls() >= attempts["end_s"].head(-1)).all()  # no overlap
    # the last attempt runs to the end, unless the run ended while the job restarted or waited
    assert (attempts["end_reason"][-1] == "end_of_run") == (attempts["end_s"][-1] == demo.duration_s)
    assert attempts.height == job["attempts"]
    ckpt = demo.tables["checkpoints"]
    assert ckpt.height == job["checkpoints"] and (ckpt["job_id"] == "demo-pretrain").all()
    productive = job["productive_hours"] * job["gpus"]
    total = productive + sum(job["losses_gpu_hours"].values())
    assert total == pytest.approx(job["gpus"] * demo.duration_s / SECONDS_PER_HOUR)
    assert job["ettr"] == pytest.approx(job["productive_hours"] * SECONDS_PER_HOUR / demo.duration_s)
    usd = demo.summary["job"]["losses_usd"]
    assert usd["restart"] == pytest.approx(job["losses_gpu_hours"]["restart"] * 2.5)
    inter = demo.summary["interruptions"]
    assert set(inter["by_cause"]) == set(CAUSE_KEYS) | {"planned_maintenance"}
    assert sum(inter["by_cause"].values()) == inter["total"] == inter["planned"] + inter["unexpected"]
    # every interruption but the run's end closes an attempt or aborts a restart
    assert attempts.height - 1 <= inter["total"]
    from engine.analysis.analytics import ettr_timeline

    timeline = ettr_timeline(
        demo.tables["job_attempts"], ckpt, "demo-pretrain", SECONDS_PER_HOUR, demo.duration_s
    )
    assert timeline["ettr_cumulative"][-1] == pytest.approx(job["ettr"], abs=1e-3)


def test_research_jobs_fill_the_rest(demo):
    jobs = demo.tables["jobs"]
    research = jobs.filter(pl.col("kind") == "research")
    assert research.height > 10 and (research["gpus"] <= 4 * 8).all()
    assert set(research["state"].unique()) <= {"completed", "failed", "running", "preempted"}
    cluster = demo.summary["cluster"]
    assert 0.5 < cluster["utilization"] < 1.0
    assert cluster["gpu_hours"] == 512 * 7 * 24
    down = demo.tables["host_states"].filter(
        pl.col("state").is_in(["draining", "diagnosing", "down", "repair", "burn_in"])
    )
    down_s = (down["end_s"] - down["start_s"]).sum()
    assert cluster["gpu_hours_down"] == pytest.approx(down_s * 8 / SECONDS_PER_HOUR)
    running = demo.tables["host_states"].filter(pl.col("state") == "running")
    running_s = (running["end_s"] - running["start_s"]).sum()
    assert cluster["utilization"] == pytest.approx(running_s / (64 * 7 * SECONDS_PER_DAY))


def test_summary_only_gives_the_same_summary_and_only_incidents():
    scenario = build("demo", sets=[TELEMETRY_OFF])
    full, quick = simulate(scenario), simulate(scenario, summary_only=True)
    assert quick.summary == full.summary
    assert list(quick.tables) == ["incidents"] and quick.tables["incidents"].equals(full.tables["incidents"])


def test_same_seed_same_tables_other_seed_other_tables():
    scenario = build("demo", sets=[TELEMETRY_OFF])
    a, b = simulate(scenario), simulate(scenario)
    other = simulate(build("demo", sets=[TELEMETRY_OFF, "simulation.seed=8"]))
    for table in a.tables:
        assert a.tables[table].equals(b.tables[table]), table
    assert a.summary == b.summary
    assert not a.tables["incidents"].equals(other.tables["incidents"])
    assert not a.tables["gpus"].equals(other.tables["gpus"])


def test_progress_is_reported_up_to_one():
    seen = []
    simulate(build("demo", sets=[TELEMETRY_OFF, "simulation.days=1"]), progress=seen.append)
    assert seen[-1] == 1.0 and seen == sorted(seen) and len(seen) >= 10


def test_no_failures_means_full_goodput_but_checkpoints():
    run = simulate(
        build(
            "demo",
            sets=[
                TELEMETRY_OFF,
                "failures.rate_per_1000_node_days=0",
                "failures.planned_per_day=0",
                "training.checkpoint_write=60s",
            ],
        )
    )
    job = run.summary["job"]
    assert run.tables["incidents"].height == 0 and job["mttf_hours"] is None
    cycle = 20 * 60 + 60
    assert job["checkpoints"] == 7 * SECONDS_PER_DAY // cycle
    assert job["ettr"] == pytest.approx(1 - job["checkpoints"] * 60 / (7 * SECONDS_PER_DAY))


def test_telemetry_tables():
    run = simulate(build("demo", sets=["simulation.days=1", "simulation.telemetry_resolution=6h"]))
    samples = run.tables["gpu_samples"]
    frames = [samples] if isinstance(samples, pl.DataFrame) else list(samples)
    assert sum(f.height for f in frames) > 0
    assert "xid_events" in run.tables


def test_cli_simulate_writes_a_run_and_prints_the_summary(capsys, store_dir):
    code = main(
        [
            "simulate",
            "--preset",
            "demo",
            "--set",
            TELEMETRY_OFF,
            "--set",
            "simulation.days=2",
            "--seed",
            "11",
            "--json",
            "--store",
            str(store_dir),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["seed"] == 11 and out["gpus"] == 512 and out["days"] == 2
    for key in (
        "ettr",
        "mttf_hours",
        "checkpoints",
        "lost_gpu_hours",
        "losses_gpu_hours",
        "losses_usd",
        "closed_form_ettr",
        "young_daly_interval_s",
        "checkpoint_write_s",
        "productive_hours",
    ):
        assert key in out["job"]
    store = Store(store_dir)
    with store.connect(out["run_id"]) as con:
        hosts = query_frame(con, "SELECT count(*) AS n FROM hosts")
        attempts = query_frame(
            con, "SELECT count(*) AS n FROM job_attempts WHERE job_id = ?", ["demo-pretrain"]
        )
    assert hosts["n"][0] == 64 and attempts["n"][0] >= 1


@pytest.mark.parametrize(
    ("sets", "key"),
    [
        (["bad=1"], "bad"),
        (["training.gpus=100000"], "training.gpus"),
        (["spares.hosts=40"], "spares.hosts"),
        (["failures.rate_per_1000_node_days=-1"], "failures.rate_per_1000_node_days"),
    ],
)
def test_cli_bad_input_exits_2_and_writes_nothing(capsys, store_dir, sets, key):
    argv = ["simulate", "--preset", "demo", "--json", "--store", str(store_dir)]
    for s in sets:
        argv += ["--set", s]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert key in err and err.count("\n") == 1
    assert not (store_dir / "runs").exists() or not any((store_dir / "runs").iterdir())


def test_summary_is_plain_json():
    run = simulate(build("demo", sets=[TELEMETRY_OFF, "simulation.days=1"]))
    assert json.loads(json.dumps(run.summary)) == run.summary
    assert np.isfinite(run.summary["job"]["ettr"])


def test_weibull_failures_come_early_and_lemons_are_counted():
    sets = [
        TELEMETRY_OFF,
        "failures.distribution=weibull",
        "failures.weibull_shape=0.5",
        "failures.rate_per_1000_node_days=200",
        "simulation.days=14",
        "repair.lemon_failures=2",
        "repair.lemon_window=14d",
    ]
    run = simulate(build("demo", sets=sets))
    t = run.tables["incidents"].filter(~pl.col("planned"))["t_s"].to_numpy()
    assert (t < 7 * SECONDS_PER_DAY).sum() > 1.3 * (t >= 7 * SECONDS_PER_DAY).sum()
    hosts = run.tables["incidents"].drop_nulls("host_id")
    repeat_hosts = hosts.group_by("host_id").len().filter(pl.col("len") >= 2).height
    assert run.summary["cluster"]["lemons"] >= 1 and repeat_hosts >= 1
    assert 0 <= run.summary["cluster"]["hosts_in_repair_at_end"] <= 64


@pytest.mark.parametrize(
    "sets",
    [
        ["research.utilization=0"],
        ["training.gpus=0"],
        ["spares.hosts=0"],
        ["cluster.gpus=8", "training.gpus=8", "spares.hosts=0", "cluster.racks_per_pod=1"],
    ],
)
def test_edge_shapes_run_and_keep_the_books(sets):
    run = simulate(build("demo", sets=[TELEMETRY_OFF, "failures.scale=3", *sets]))
    job, states = run.summary["job"], run.tables["host_states"]
    covered = states.group_by("host_id").agg((pl.col("end_s") - pl.col("start_s")).sum())["end_s"].to_numpy()
    assert covered.size == run.summary["hosts"] and np.allclose(covered, run.duration_s)
    if job["gpus"]:
        total = job["productive_hours"] * job["gpus"] + sum(job["losses_gpu_hours"].values())
        assert total == pytest.approx(job["gpus"] * run.duration_s / SECONDS_PER_HOUR)


def test_network_faults_name_a_cable_or_a_rack_switch_and_a_switch_takes_its_rack():
    mix = [f"failures.mix.{c}=0" for c in CAUSE_KEYS if c != "network_switch_cable"]
    run = simulate(
        build(
            "demo",
            sets=[
                TELEMETRY_OFF,
                *mix,
                "failures.network_rack_share=0.5",
                "failures.rate_per_1000_node_days=100",
                "failures.planned_per_day=0",
            ],
        )
    )
    inc = run.tables["incidents"].join(
        run.tables["links"].select("link_id", "tier"), on="link_id", how="left"
    )
    assert inc.height > 10 and set(inc["tier"].unique()) == {"gpu_rtsw", "rtsw_ctsw"}
    hosts = run.tables["hosts"]
    states = run.tables["host_states"]
    for row in inc.filter(pl.col("tier") == "rtsw_ctsw").iter_rows(named=True):
        rack = hosts.filter(pl.col("host_id") == row["host_id"])["rack_id"][0]
        mates = hosts.filter(pl.col("rack_id") == rack)["host_id"].to_list()
        drained = states.filter(pl.col("state") == "draining", pl.col("start_s") == row["detected_s"])
        # every host of the rack that was in service went down with the switch
        assert row["host_id"] in drained["host_id"].to_list()
        assert set(drained["host_id"].to_list()) <= set(mates)


@pytest.mark.parametrize(("placement", "hit"), [("pack", False), ("spread", True)])
def test_spread_puts_the_job_in_reach_of_a_rack_switch_fault_of_a_research_host(placement, hit):
    """One rack-switch fault at host 9 (rack 4: hosts 8 and 9). pack holds hosts 0-7, so only research stops;
    spread holds one host of every rack (host 8 among them), so the flagship job is interrupted too."""
    from engine.sim.failures import NO_XID, Arrivals

    sets = [
        "cluster.gpus=128",
        "cluster.racks_per_pod=2",
        "training.gpus=64",
        "spares.hosts=0",
        "simulation.days=1",
        TELEMETRY_OFF,
        f"training.placement={placement}",
    ]
    one = Arrivals(
        fault_s=np.array([SECONDS_PER_HOUR]),
        detected_s=np.array([SECONDS_PER_HOUR]),
        host=np.array([9]),
        cause=np.array([CAUSE_KEYS.index("network_switch_cable")]),
        gpu_index=np.array([0]),
        xid=np.array([NO_XID]),
        rack_wide=np.array([True]),
    )
    run = simulate(build("demo", sets=sets), arrivals=one, planned_times=np.empty(0))
    incident = run.tables["incidents"].row(0, named=True)
    assert ("demo-pretrain" in incident["job_ids"]) is hit
    assert run.summary["interruptions"]["unexpected"] == int(hit)
    assert run.summary["job"]["placement"] == placement
    assert run.summary["job"]["placement_slowdown"] == 1.0  # 25 Gbps a GPU: the core keeps up either way
    assert run.summary["job"]["ettr_with_network"] == run.summary["job"]["ettr"]
