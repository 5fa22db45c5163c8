"""Research lanes: sizes, utilisation, and what a failure does to the job on a lane."""

import numpy as np
import pytest
import simpy

from engine.scenario import build
from engine.sim.research import ResearchLanes


def _lanes(*sets, hosts=256, seed=0):
    env = simpy.Environment()
    scenario = build("llama3-405b", sets=list(sets))
    return env, ResearchLanes(env, scenario, np.random.default_rng(seed), np.arange(hosts))


def test_lanes_partition_the_hosts_in_powers_of_two():
    _, lanes = _lanes("research.max_hosts=16")
    sizes = [ln.hosts.size for ln in lanes.lanes]
    assert sum(sizes) == 256 and all(s <= 16 for s in sizes)
    assert all(s & (s - 1) == 0 for s in sizes[:-1])  # the last lane takes what is left
    assert sorted(np.concatenate([ln.hosts for ln in lanes.lanes]).tolist()) == list(range(256))


def test_lanes_keep_the_target_utilisation():
    env, lanes = _lanes("research.utilization=0.6", "simulation.days=200")
    env.run(until=lanes.horizon)
    lanes.finish(lanes.horizon)
    busy = sum(
        (iv.end_s - iv.start_s) * lanes.lanes[iv.lane].hosts.size
        for iv in lanes.intervals
        if iv.state == "running"
    )
    assert busy / (256 * lanes.horizon) == pytest.approx(0.6, abs=0.06)
    durations = np.array([j.end_s - j.start_s for j in lanes.jobs if j.state == "completed"])
    assert np.median(durations) == pytest.approx(6 * 3600, rel=0.1)


def test_a_failure_ends_the_job_and_the_lane_waits_for_its_host():
    env, lanes = _lanes("research.utilization=1", hosts=4, seed=3)  # always busy: a job runs at t = 0
    host = int(lanes.lanes[0].hosts[0])
    env.run(until=60)
    assert lanes.running_on(host)
    hit = lanes.failure(host, "faulty_gpu", takes_host=True)
    assert hit is lanes.jobs[0] and hit.job_id == "research-00000"
    assert (hit.state, hit.end_reason, hit.end_s, hit.lost_work_s) == ("failed", "faulty_gpu", 60, 60)
    assert (hit.lane, hit.hosts) == (0, lanes.lanes[0].hosts.size)
    env.run(until=7200)
    assert not lanes.running_on(host)  # held back: a host of the lane is in repair
    lanes.host_returned(host)
    assert lanes.running_on(host) and lanes.jobs[-1].submit_s == 60 and lanes.jobs[-1].start_s == 7200
    # a software fault restarts work on the same hosts at once
    lanes.failure(host, "software_bug", takes_host=False)
    assert lanes.running_on(host)
