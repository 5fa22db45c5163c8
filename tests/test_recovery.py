"""The recovery strategies of the flagship job (engine.sim.recovery): exact event traces on tiny jobs, the same
through the whole simulation with failures fed by hand, and the goodput ledger's identity under each."""

import numpy as np
import polars as pl
import pytest
import simpy

from engine.analysis.ledger import BUCKETS, GoodputLedger
from engine.fabric.topology import FLAGSHIP, build_topology
from engine.scenario import ScenarioError, build
from engine.sim.failures import CAUSE_KEYS, Arrivals
from engine.sim.recovery import HotSpareJob, InMemoryCheckpointJob, ReplicaDropJob
from engine.sim.training import RESTARTING, RUNNING, WAITING
from engine.twin.simulate import simulate
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

STRATEGIES = ("restart", "in_memory_checkpoint", "replica_drop", "hot_spare")
COST_KEYS = {"standby_gpu_hours", "standby_usd", "degraded_gpu_hours", "degraded_usd", "memory_gb_per_host"}


def _at(env, t, action):
    timer = env.timeout(t - env.now)
    timer.callbacks.append(lambda _e: action())


def _common(pool, changes, env):
    return {
        "checkpoint_interval_s": 100.0,
        "checkpoint_write_s": 10.0,
        "restart_overhead_s": 50.0,
        "take_spare": lambda: pool.pop(0) if pool else None,
        "on_hosts_changed": lambda added, removed: changes.append((env.now, added, removed)),
    }


def _attempts(job):
    return [(a.attempt, a.start_s, a.end_s, a.end_reason, a.lost_work_s) for a in job.ledger.attempts]


def _balances(job, horizon):
    ledger = job.ledger
    total = (
        ledger.productive_s
        + ledger.lost_work_s
        + ledger.restart_s
        + ledger.waiting_s
        + ledger.checkpoint_s
        + ledger.degraded_s
    )
    assert total == pytest.approx(horizon)


# ----- in_memory_checkpoint -----------------------------------------------------------------------------------


def test_in_memory_checkpoint_resumes_from_the_last_copy_unless_it_is_lost_or_suspect():
    env, changes = simpy.Environment(), []
    job = InMemoryCheckpointJob(
        env, "j", [0, 1, 2, 3], memory_interval_s=30.0, memory_copies=1, **_common([4, 5, 6], changes, env)
    )
    # storage checkpoints complete at 110, 220; copies at 30, 60, ..., 240: host 1's copy on host 2 survives
    _at(env, 255, lambda: job.interrupt("faulty_gpu", [1], 255.0))
    # attempt 2 from 305: a rack takes host 2 and its peer 3, so host 2's only copy is gone: back to the
    # attempt's start (no storage checkpoint yet), 75 s lost
    _at(env, 380, lambda: job.interrupt("network_switch_cable", [2, 3], 380.0))
    # attempt 3 from 430: corruption at 545 noticed at 600; the copy of 580 is suspect, the storage checkpoint
    # of 540 is the last good state
    _at(env, 600, lambda: job.interrupt("silent_data_corruption", [], 545.0))
    # attempt 4 from 650: a software bug keeps every host, and the copy of 680
    _at(env, 700, lambda: job.interrupt("software_bug", [], 700.0))
    env.run(until=800)
    job.finish(800)
    assert _attempts(job) == [
        (1, 0.0, 255, "faulty_gpu", 15.0),
        (2, 305, 380, "network_switch_cable", 75.0),
        (3, 430, 600, "silent_data_corruption", 60.0),
        (4, 650, 700, "software_bug", 20.0),
        (5, 750, 800, "end_of_run", 0.0),
    ]
    ledger = job.ledger
    assert (ledger.memory_restores, ledger.storage_fallbacks) == (2, 2)
    assert ledger.lost_work_s == 170 and ledger.restart_s == 200 and ledger.checkpoint_s == 30
    assert ledger.productive_s == 400 and ledger.degraded_s == 0
    assert changes == [(255, [4], [1]), (380, [5, 6], [2, 3])]
    _balances(job, 800)


def test_two_copies_survive_a_rack_of_two():
    env = simpy.Environment()
    job = InMemoryCheckpointJob(
        env, "j", [0, 1, 2, 3], memory_interval_s=30.0, memory_copies=2, **_common([4, 5], [], env)
    )
    _at(env, 95, lambda: job.interrupt("network_switch_cable", [0, 1], 95.0))  # host 0's copy also on host 2
    env.run(until=100)
    assert job.ledger.attempts[0].lost_work_s == 5.0 and job.ledger.memory_restores == 1


# ----- replica_drop -----------------------------------------------------------------------------------------


def test_replica_drop_stalls_trains_degraded_and_restarts_the_whole_job_only_when_it_must():
    env, changes = simpy.Environment(), []
    # 8 hosts in 4 replicas of 2 (slots 0-1, 2-3, 4-5, 6-7); one spare
    job = ReplicaDropJob(
        env, "j", list(range(8)), replicas=4, drop_stall_s=20.0, rejoin_s=40.0, **_common([8], changes, env)
    )
    hits = []
    # host 3 (replica 1) fails: nothing lost, a 20 s stall; the spare makes replica 1 whole, it rejoins at 190
    _at(env, 150, lambda: hits.append(job.interrupt("faulty_gpu", [3], 150.0)))
    # host 5 (replica 2) fails with no spare left: replica 2 is out until a host comes back (400) and rejoins
    # 40 s later (440); the job trains at 3/4 meanwhile
    _at(env, 300, lambda: hits.append(job.interrupt("nic", [5], 300.0)))
    _at(env, 400, lambda: hits.append(job.host_returned(9)))
    # a software bug is not confined to a replica: the whole job restarts from the checkpoint of 430
    _at(env, 500, lambda: hits.append(job.interrupt("software_bug", [], 500.0)))
    _at(env, 600, lambda: hits.append(job.interrupt("planned_maintenance", [])))  # graceful: nothing lost
    env.run(until=700)
    job.finish(700)
    assert hits == [True, True, True, True, True]
    assert _attempts(job) == [
        (1, 0.0, 150, "faulty_gpu", 0.0),
        (2, 170, 300, "nic", 0.0),
        (3, 320, 500, "software_bug", 70.0),
        (4, 550, 600, "planned_maintenance", 0.0),
        (5, 650, 700, "end_of_run", 0.0),
    ]
    assert job.ledger.attempts[2].hosts.tolist() == [0, 1, 2, 8, 4, 9, 6, 7]
    assert changes == [(150, [8], [3]), (300, [], [5]), (400, [9], [])]
    ledger = job.ledger
    # degraded: a quarter of [170, 190) and of the kept training of [320, 430) (its write of [420, 430) aside)
    assert ledger.degraded_s == 5 + 25
    assert ledger.restart_s == 20 + 20 + 50 + 50 and ledger.lost_work_s == 70 and ledger.checkpoint_s == 30
    assert ledger.productive_s == 430
    assert (ledger.replica_drops, ledger.rejoins) == (2, 2)
    _balances(job, 700)


def test_when_every_replica_is_out_the_job_waits_and_comes_back_from_storage():
    env = simpy.Environment()
    job = ReplicaDropJob(
        env, "j", [0, 1, 2, 3], replicas=2, drop_stall_s=20.0, rejoin_s=40.0, **_common([], [], env)
    )
    hits = []
    _at(env, 100, lambda: hits.append(job.interrupt("faulty_gpu", [0], 100.0)))  # replica 0 out
    _at(env, 130, lambda: hits.append(job.interrupt("faulty_gpu", [1], 130.0)))  # replica 0 again: no hit
    # the last replica: its state since the attempt began (120) is gone with it
    _at(env, 150, lambda: hits.append(job.interrupt("faulty_gpu", [2], 150.0)))
    env.run(until=200)
    assert hits == [True, False, True] and job.phase == WAITING and job.out == {0, 1}
    assert job.host_returned(10)  # replica 1 (one slot short) before replica 0 (two)
    env.run(until=260)
    assert job.phase == RESTARTING and job.out == {0}  # replica 1 rejoined at 240; restart from storage
    env.run(until=400)
    assert job.phase == RUNNING
    job.finish(400)
    assert _attempts(job) == [
        (1, 0.0, 100, "faulty_gpu", 0.0),
        (2, 120, 150, "faulty_gpu", 30.0),
        (3, 290, 400, "end_of_run", 0.0),
    ]
    assert job.ledger.attempts[1].hosts.tolist() == [2, 3]  # the empty slots are no hosts of the attempt
    ledger = job.ledger
    assert ledger.waiting_s == 90 and ledger.restart_s == 20 + 50 and ledger.lost_work_s == 30
    assert ledger.degraded_s == 50  # half of [290, 400) less its write
    assert ledger.productive_s == 150 and ledger.checkpoint_s == 10
    _balances(job, 400)


def test_a_late_detected_fault_restarts_every_replica_from_before_it():
    env = simpy.Environment()
    job = ReplicaDropJob(
        env, "j", [0, 1, 2, 3], replicas=2, drop_stall_s=20.0, rejoin_s=40.0, **_common([7], [], env)
    )
    _at(env, 300, lambda: job.interrupt("silent_data_corruption", [0], 230.0))  # averaged into every replica
    env.run(until=400)
    assert _attempts(job)[0] == (1, 0.0, 300, "silent_data_corruption", 80.0)
    assert job.ledger.restart_s == 50 and job.out == set()  # replica 0 rejoined at 340 during the restart


# ----- hot_spare --------------------------------------------------------------------------------------------


def test_hot_spare_swaps_standbys_in_fast_replaces_them_and_falls_back_to_a_restart():
    env, changes, pool, held = simpy.Environment(), [], [20], []
    job = HotSpareJob(
        env,
        "j",
        [0, 1, 2],
        standbys=[10],
        hot_swap_s=5.0,
        take_standby=lambda: pool.pop(0) if pool else None,
        on_standby=held.append,
        **_common([30], changes, env),
    )
    hits = []
    # standby 10 goes in, 5 s; host 20 leaves the pool to warm up as the next standby (ready at 150)
    _at(env, 100, lambda: hits.append(job.interrupt("faulty_gpu", [1], 100.0)))
    _at(
        env, 120, lambda: hits.append(job.interrupt("nic", [2], 120.0))
    )  # none ready: a spare, a full restart
    _at(
        env, 200, lambda: hits.append(job.interrupt("software_bug", [], 200.0))
    )  # no host to swap: full restart
    _at(env, 300, lambda: hits.append(job.interrupt("faulty_gpu", [20], 300.0)))  # a standby fails: no hit
    _at(env, 350, lambda: hits.append(job.host_returned(40)))  # the empty pool's debt: 40 becomes a standby
    env.run(until=500)
    job.finish(500)
    assert hits == [True, True, True, False, True]
    assert _attempts(job) == [
        (1, 0.0, 100, "faulty_gpu", 100.0),
        (2, 105, 120, "nic", 15.0),
        (3, 170, 200, "software_bug", 30.0),
        (4, 250, 500, "end_of_run", 0.0),
    ]
    assert changes == [(100, [10], [1]), (120, [30], [2])] and held == [40]
    ledger = job.ledger
    assert ledger.hot_swaps == 1 and ledger.restart_s == 5 + 50 + 50
    assert ledger.standby_host_s == 100 + 200 + 150  # 10 until used, 20 until it failed, 40 since 350
    assert list(job.ready) == [40] and not job.warming
    _balances(job, 500)


def test_a_standby_warming_up_fills_the_slot_of_a_job_waiting_for_hosts():
    env, pool = simpy.Environment(), [20]
    job = HotSpareJob(
        env,
        "j",
        [0, 1],
        standbys=[10],
        hot_swap_s=5.0,
        take_standby=lambda: pool.pop(0) if pool else None,
        on_standby=lambda _h: None,
        **_common([], [], env),
    )
    _at(env, 100, lambda: job.interrupt("network_switch_cable", [0, 1], 100.0))  # 10 in; nothing for host 1
    env.run(until=149)
    assert job.phase == WAITING
    env.run(until=300)  # 20 warmed at 150 and went in; restart (a scheduling round) until 200
    assert job.phase == RUNNING and job.attempt_start == 200 and sorted(job.hosts) == [10, 20]
    job.finish(300)
    assert job.ledger.waiting_s == 50 and job.ledger.hot_swaps == 0
    assert job.ledger.standby_host_s == 100 + 50


# ----- through the whole simulation ------------------------------------------------------------------------

TINY = [
    "cluster.gpus=128",
    "cluster.racks_per_pod=2",
    "training.gpus=64",
    "spares.hosts=2",
    "simulation.days=1",
    "simulation.telemetry=false",
]


def _one_failure(scenario, t: float) -> Arrivals:
    """A faulty GPU at `t` on the flagship job's first host."""
    host = int(build_topology(scenario, np.random.default_rng(0)).hosts_with(FLAGSHIP)[0])
    return Arrivals(
        fault_s=np.array([t]),
        detected_s=np.array([t]),
        host=np.array([host]),
        cause=np.array([CAUSE_KEYS.index("faulty_gpu")]),
        gpu_index=np.array([0]),
        xid=np.array([79]),
        rack_wide=np.array([False]),
    )


def _run(sets, t=SECONDS_PER_HOUR, summary_only=True):
    scenario = build("demo", sets=TINY + sets)
    return simulate(
        scenario, arrivals=_one_failure(scenario, t), planned_times=np.empty(0), summary_only=summary_only
    )


def test_replica_drop_through_the_simulation():
    run = _run(["training.recovery=replica_drop", "recovery.replicas=4"])
    job = run.summary["job"]
    seconds = job["ledger_s"]
    # a 3 min stall; the replica rejoins 10 min after the spare replaced its host: a quarter of 7 min degraded
    assert seconds["restart"] == 180 and seconds["lost_work"] == 0 and seconds["degraded"] == 105
    assert job["recovery"] == "replica_drop" and run.summary["interruptions"]["unexpected"] == 1
    cost = job["recovery_cost"]
    assert cost["degraded_gpu_hours"] == pytest.approx(105 * 64 / SECONDS_PER_HOUR)
    assert cost["degraded_usd"] == pytest.approx(cost["degraded_gpu_hours"] * 2.5)
    assert job["losses_gpu_hours"]["degraded"] == cost["degraded_gpu_hours"]
    assert cost["standby_gpu_hours"] == cost["memory_gb_per_host"] == 0
    assert job["ettr"] == pytest.approx(
        (SECONDS_PER_DAY - 180 - 105 - seconds["checkpoint"]) / SECONDS_PER_DAY
    )


def test_hot_spare_through_the_simulation():
    run = _run(["training.recovery=hot_spare", "recovery.hot_spares=1"])
    job = run.summary["job"]
    assert job["ledger_s"]["restart"] == 180  # recovery.hot_swap, not the 10 min restart
    # the standby idled for an hour; the pool's last spare replaced it and idled the rest of the day
    assert job["recovery_cost"]["standby_gpu_hours"] == pytest.approx(24 * 8)
    assert job["recovery_cost"]["standby_usd"] == pytest.approx(24 * 8 * 2.5)


def test_in_memory_checkpoint_through_the_simulation():
    # copies every minute: the failure at 3,690 s loses the 30 s since the copy of 3,660 s (the storage
    # checkpoint of 3,600.04 s is older)
    run = _run(["training.recovery=in_memory_checkpoint"], t=3690.0)
    job = run.summary["job"]
    assert job["ledger_s"]["lost_work"] == 30
    assert job["recovery_cost"]["memory_gb_per_host"] == pytest.approx(0.4 * 8)  # a peer's state: 8 GPUs
    restart = _run([], t=3690.0).summary["job"]
    assert restart["ledger_s"]["lost_work"] == pytest.approx(3690 - 3 * (1200 + 0.4 * 64 / 2000))


def test_restart_is_what_it_was_and_degenerate_strategies_are_restart():
    base = simulate(build("demo", sets=["simulation.telemetry=false"]), summary_only=True).summary
    named = simulate(
        build("demo", sets=["simulation.telemetry=false", "training.recovery=restart"]), summary_only=True
    ).summary
    assert named == base and base["job"]["recovery"] == "restart"
    assert base["job"]["recovery_cost"] == dict.fromkeys(COST_KEYS, 0.0)
    # no standby, or in-memory copies rarer than the run: every failure recovers exactly as restart's
    for sets in (
        ["training.recovery=hot_spare", "recovery.hot_spares=0"],
        ["training.recovery=in_memory_checkpoint", "recovery.memory_checkpoint_interval=1000d"],
    ):
        other = simulate(build("demo", sets=["simulation.telemetry=false", *sets]), summary_only=True).summary
        assert {k: v for k, v in other["job"].items() if k not in ("recovery", "recovery_cost")} == {
            k: v for k, v in base["job"].items() if k not in ("recovery", "recovery_cost")
        }
        assert other["interruptions"] == base["interruptions"]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_ledger_adds_up_under_every_strategy(strategy, seed):
    sets = [
        "simulation.telemetry=false",
        "failures.rate_per_1000_node_days=120",
        "spares.hosts=4",
        "spares.preempt_research=false",  # spares run out: waits, empty slots, standbys short
        f"simulation.seed={seed}",
        f"training.recovery={strategy}",
        "recovery.hot_spares=2",
        "recovery.replicas=6",
    ]
    summary = simulate(build("demo", sets=sets), summary_only=True).summary
    job = summary["job"]
    ledger = GoodputLedger.from_summary(summary)
    assert sum(ledger.seconds().values()) == pytest.approx(ledger.wall_clock_s, rel=1e-9)
    # no fail-slow episodes (slow.* rates 0): the slowdown bucket is left out (tests/test_fail_slow.py has it)
    assert set(job["ledger_s"]) == {*BUCKETS, "wall_clock"} - {"slowdown"}
    assert set(job["recovery_cost"]) == COST_KEYS
    assert all(v >= 0 for v in ledger.seconds().values()) and 0 < job["ettr"] < 1
    cost = job["recovery_cost"]
    assert (cost["degraded_gpu_hours"] > 0) == (strategy == "replica_drop")
    assert (cost["standby_gpu_hours"] > 0) == (strategy == "hot_spare")
    assert (cost["memory_gb_per_host"] > 0) == (strategy == "in_memory_checkpoint")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_builds_the_tables(strategy):
    sets = [
        "simulation.telemetry=false",
        "failures.rate_per_1000_node_days=120",
        "spares.hosts=2",
        "spares.preempt_research=false",
        f"training.recovery={strategy}",
        "recovery.hot_spares=1",
        "recovery.replicas=6",
    ]
    run = simulate(build("demo", sets=sets))
    attempts = run.tables["job_attempts"].filter(run.tables["job_attempts"]["job_id"] == "demo-pretrain")
    assert attempts.height == run.summary["job"]["attempts"]
    assert attempts["hosts"].list.min().min() >= 0  # an empty slot is never listed as a host
    states = run.tables["host_states"].sort("host_id", "start_s")
    per_host = states.group_by("host_id").agg(total=(pl.col("end_s") - pl.col("start_s")).sum())
    assert per_host["total"].to_list() == pytest.approx([run.duration_s] * per_host.height)  # each host, once


def test_too_few_spares_for_the_standbys_or_hosts_for_the_replicas_is_a_scenario_error():
    """Refused when the scenario is built (the command line stops at once), naming the key and the bound."""
    with pytest.raises(
        ScenarioError, match=r"recovery\.hot_spares: 8 warm standbys .* holds 4 hosts \(spares\.hosts\)"
    ):
        build("demo", sets=["training.recovery=hot_spare", "recovery.hot_spares=8"])
    with pytest.raises(ScenarioError, match=r"recovery\.replicas: 64 data-parallel replicas .* job has 48"):
        build("demo", sets=["training.recovery=replica_drop", "recovery.replicas=64"])
    # the other strategies ignore those knobs
    assert (
        build("demo", sets=["recovery.hot_spares=8", "recovery.replicas=64"])["training.recovery"]
        == "restart"
    )


def test_every_strategy_the_scenario_offers_is_a_class_injected_by_name():
    from engine.scenario.keys import KEY_BY_NAME
    from engine.sim.recovery import STRATEGIES, RestartJob, strategy_class

    assert tuple(STRATEGIES) == tuple(KEY_BY_NAME["training.recovery"].choices)
    for name, cls in STRATEGIES.items():
        assert issubclass(cls, RestartJob) and cls.strategy == name
        sets = [f"training.recovery={name}", "spares.hosts=16"]
        assert strategy_class(build("demo", sets=sets)) is cls
