"""The flagship job's checkpoint/restart arithmetic, as exact event traces on tiny cases."""

import pytest
import simpy

from engine.sim.training import RESTARTING, RUNNING, WAITING, FlagshipJob


def _job(env, hosts, spares, dt=100.0, w=10.0, u0=50.0):
    pool = list(spares)
    changes = []
    job = FlagshipJob(
        env,
        "j",
        hosts,
        checkpoint_interval_s=dt,
        checkpoint_write_s=w,
        restart_overhead_s=u0,
        take_spare=lambda: pool.pop(0) if pool else None,
        on_hosts_changed=lambda added, removed: changes.append((env.now, added, removed)),
    )
    return job, changes


def _at(env, t, action):
    timer = env.timeout(t - env.now)
    timer.callbacks.append(lambda _e: action())


def _balances(job, horizon):
    ledger = job.ledger
    total = (
        ledger.productive_s + ledger.lost_work_s + ledger.restart_s + ledger.waiting_s + ledger.checkpoint_s
    )
    assert total == pytest.approx(horizon)


def test_failure_late_detection_planned_stop_and_end_of_run_exact_trace():
    env = simpy.Environment()
    job, changes = _job(env, [0, 1, 2], [3])
    _at(env, 235, lambda: job.interrupt("faulty_gpu", [1]))  # checkpoints done at 110, 220: loses 15 s
    # silent data corruption at 400 noticed at 500: attempt 2 began at 285, its checkpoint at 395 is the last
    # good one; the one due at 505 never completes, so 105 s are lost
    _at(env, 500, lambda: job.interrupt("silent_data_corruption", [], fault_s=400))
    _at(env, 600, lambda: job.interrupt("planned_maintenance", []))  # graceful: nothing lost
    env.run(until=700)
    job.finish(700)
    assert [(a.attempt, a.start_s, a.end_s, a.end_reason, a.lost_work_s) for a in job.ledger.attempts] == [
        (1, 0.0, 235, "faulty_gpu", 15.0),
        (2, 285, 500, "silent_data_corruption", 105.0),
        (3, 550, 600, "planned_maintenance", 0.0),
        (4, 650, 700, "end_of_run", 0.0),
    ]
    # the spare takes the failed host's slot (its ranks)
    first, second = job.ledger.attempts[:2]
    assert first.hosts.tolist() == [0, 1, 2] and second.hosts.tolist() == [0, 3, 2]
    assert changes == [(235, [3], [1])]
    starts = [list(c) for c in job.ledger.checkpoint_starts]
    assert starts == [[100.0, 210.0], [385.0]]
    assert job.ledger.resumed_at == [285, 550, 650]
    assert job.ledger.restart_s == 150 and job.ledger.lost_work_s == 120 and job.ledger.waiting_s == 0
    assert job.ledger.checkpoint_s == 30  # three checkpoints kept, 10 s each
    _balances(job, 700)


def test_failure_during_restart_restarts_the_restart():
    env = simpy.Environment()
    job, _ = _job(env, [0, 1], [2, 3])
    _at(env, 50, lambda: job.interrupt("nic", [0]))
    _at(env, 80, lambda: job.interrupt("software_bug", []))  # 30 s into the 50 s restart
    env.run(until=200)
    assert job.phase == RUNNING and job.attempt_start == 130
    assert job.ledger.resumed_at == [130]
    job.finish(200)
    assert job.ledger.restart_s == 80
    assert [a.end_reason for a in job.ledger.attempts] == ["nic", "end_of_run"]
    _balances(job, 200)


def test_without_spares_the_job_waits_for_a_repaired_host():
    env = simpy.Environment()
    job, _ = _job(env, [0, 1], [])
    _at(env, 100, lambda: job.interrupt("faulty_gpu", [0]))
    env.run(until=150)
    assert job.phase == WAITING and job.missing == 1
    assert job.host_returned(7)
    assert job.phase == RESTARTING and sorted(job.hosts) == [1, 7]
    assert not job.host_returned(8)  # no longer waiting: the host goes to the pool
    env.run(until=400)
    job.finish(400)
    assert job.ledger.waiting_s == 50 and job.ledger.restart_s == 50
    _balances(job, 400)


def test_a_failure_while_waiting_is_not_an_interruption():
    env = simpy.Environment()
    job, _ = _job(env, [0, 1], [])
    _at(env, 100, lambda: job.interrupt("faulty_gpu", [0]))
    hits = []
    _at(env, 120, lambda: hits.append(job.interrupt("faulty_gpu", [1])))
    env.run(until=130)
    assert hits == [False] and job.missing == 2
