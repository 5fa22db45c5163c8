"""The repair pipeline: its stages in order, limited technicians, vendor returns and lemons."""

import numpy as np
import pytest
import simpy

from engine.scenario import build
from engine.sim.repair import Repairs
from engine.store.schema import OUT_OF_SERVICE_STATES
from engine.units import SECONDS_PER_DAY


def _repairs(*sets, seed=0):
    env = simpy.Environment()
    returned = []
    scenario = build("demo", sets=list(sets))
    repairs = Repairs(env, scenario, np.random.default_rng(seed), lambda h: returned.append((env.now, h)))
    return env, repairs, returned


def _trace(repairs, host):
    return [(i.state, i.start_s, i.end_s) for i in repairs.intervals if i.host_id == host]


def test_stages_run_in_order_and_the_host_comes_back():
    env, repairs, returned = _repairs(
        "repair.drain=2m", "repair.diagnose=15m", "repair.burn_in=2h", "repair.rma_fraction=0"
    )
    repairs.start([5], incident_id=0)
    env.run()
    trace = _trace(repairs, 5)
    assert [s for s, _, _ in trace] == [
        "draining",
        "diagnosing",
        "repair",
        "burn_in",
    ]  # a technician was free
    assert trace[0][1:] == (0, 120) and trace[1][1:] == (120, 1020)
    assert trace[2][1] == 1020 and trace[3][2] - trace[3][1] == pytest.approx(7200)
    for (_, _, end), (_, start, _) in zip(trace, trace[1:], strict=False):
        assert end == start  # contiguous
    assert returned == [(trace[3][2], 5)] and repairs.repaired_at[0] == trace[3][2]
    # the repair layer of host_states: every stage is out of service and no job holds the host
    assert {i.state for i in repairs.intervals} <= set(OUT_OF_SERVICE_STATES)
    assert {i.job_id for i in repairs.intervals} == {None}


def test_technicians_are_a_limited_resource():
    env, repairs, returned = _repairs("repair.technicians=1", "repair.rma_fraction=0")
    repairs.start([1], incident_id=0)
    repairs.start([2], incident_id=1)
    env.run()
    first_fix = [iv for iv in _trace(repairs, 1) if iv[0] == "repair"][0]
    waiting = [iv for iv in _trace(repairs, 2) if iv[0] == "down"]
    # host 2 waits, diagnosed, while the one technician repairs host 1
    assert waiting == [("down", first_fix[1], first_fix[2])]
    assert [h for _, h in returned] == [1, 2]


def test_a_rack_switch_repair_takes_its_hosts_together():
    env, repairs, returned = _repairs()
    repairs.start([10, 11], incident_id=3)
    env.run()
    assert _trace(repairs, 10) == _trace(repairs, 11)
    assert sorted(h for _, h in returned) == [10, 11] and returned[0][0] == returned[1][0]


def test_vendor_returns_take_days_without_holding_a_technician():
    env, repairs, _ = _repairs(
        "repair.rma_fraction=1", "repair.rma_time=5d", "repair.fix=1h", "repair.technicians=1"
    )
    for i in range(40):
        repairs.start([i], incident_id=i)
    env.run()
    hands_on = [i.end_s - i.start_s for i in repairs.intervals if i.state == "repair"]
    # two repair stretches per host: the hands-on fix (mean 1 h) and the vendor's turnaround (mean 5 d)
    assert len(hands_on) == 80
    back = np.array(sorted(repairs.repaired_at.values()))
    # one technician, 40 fixes of ~1 h: had it waited for the vendor too, the last host would be back in ~200 d
    assert back.max() < 40 * SECONDS_PER_DAY


def test_lemons_are_flagged_after_repeated_failures_in_the_window():
    env, repairs, _ = _repairs(
        "repair.lemon_failures=3", "repair.lemon_window=14d", "repair.rma_fraction=0", "repair.rma_time=30d"
    )
    day = SECONDS_PER_DAY
    times = {0: 0.0, 1: day, 2: 2 * day, 3: 40 * day}  # the third within 14 days is a lemon
    for incident, t in times.items():
        timer = env.timeout(t - env.now)
        env.run(until=timer)
        repairs.start([7], incident_id=incident)
    env.run()
    assert repairs.lemon_incidents == {2}
    lemon_repair = [
        i.end_s - i.start_s
        for i in repairs.intervals
        if i.state == "repair" and 2 * day <= i.start_s < 40 * day
    ]
    assert sum(lemon_repair) > day  # the lemon's part went back to the vendor (mean 30 d)


@pytest.mark.parametrize("seed", [0, 1])
def test_same_seed_same_repairs(seed):
    runs = []
    for _ in range(2):
        env, repairs, _ = _repairs(seed=seed)
        for i in range(5):
            repairs.start([i], incident_id=i)
        env.run()
        runs.append(repairs.intervals)
    assert runs[0] == runs[1]


def test_a_host_still_waiting_for_a_technician_at_the_end_is_down_until_then():
    """Issue 44: a host diagnosed and waiting for hands when the run ends is out of service to the end, not a gap
    that host_states fills as healthy."""
    env, repairs, _ = _repairs("repair.technicians=1", "repair.rma_fraction=0", "repair.fix=10d")
    repairs.start([1], incident_id=0)
    repairs.start([2], incident_id=1)
    env.run(until=SECONDS_PER_DAY)
    repairs.finish(SECONDS_PER_DAY)
    diagnosed = [iv for iv in _trace(repairs, 2) if iv[0] == "diagnosing"][0][2]
    assert [iv for iv in _trace(repairs, 2) if iv[0] == "down"] == [("down", diagnosed, SECONDS_PER_DAY)]


def test_hosts_in_repair_at_the_end_agree_with_host_states():
    """The summary's hosts in repair at the end are the hosts host_states shows out of service then (retired
    hosts left aside: they are out for good, not in repair), with a repair queue that holds many."""
    from engine.twin.simulate import simulate

    run = simulate(
        build(
            "demo",
            sets=[
                "simulation.days=10",
                "simulation.telemetry=false",
                "repair.technicians=1",
                "failures.rate_per_1000_node_days=150",
            ],
        )
    )
    states = run.tables["host_states"]
    last = states.filter(states["end_s"] == run.duration_s)
    out = last.filter(last["state"].is_in([s for s in OUT_OF_SERVICE_STATES if s != "retired"]))
    assert run.summary["cluster"]["hosts_in_repair_at_end"] > 5  # the queue is long: the case of the issue
    assert out.height == run.summary["cluster"]["hosts_in_repair_at_end"]
    assert last.height == 64  # every host has a state at the end
