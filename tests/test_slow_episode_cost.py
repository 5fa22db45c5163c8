"""What each fail-slow episode cost the flagship job (engine.sim.slow.episode_costs, the slow_episodes table's
cost_gpu_hours): exact values on hand-traced cases, ties to the earliest, and costs that add up to the ledger's
slowdown bucket on whole runs."""

from dataclasses import replace

import duckdb
import polars as pl
import pytest
import simpy

from engine.fabric.topology import FLAGSHIP, build_topology
from engine.scenario import build
from engine.sim import simulate as simulate_module
from engine.sim.records import FlagshipRecord, SlowEpisode
from engine.sim.recovery import STRATEGIES
from engine.sim.simulate import run_model
from engine.sim.slow import SLOW_CAUSES, FailSlow, episode_costs
from engine.sim.streams import Stream, generator
from engine.sim.tables import slow_episodes_frame
from engine.sim.training import FlagshipJob
from engine.store import Store
from engine.store.schema import polars_schema
from engine.units import SECONDS_PER_HOUR
from tests.test_store import small_run

DT, W, U0 = (
    100.0,
    10.0,
    50.0,
)  # as tests/test_fail_slow.py: checkpoint k completes at 110 k, written over the last 10 s


def _job(env, hosts, spares=()):
    pool = list(spares)
    return FlagshipJob(
        env,
        "j",
        hosts,
        checkpoint_interval_s=DT,
        checkpoint_write_s=W,
        restart_overhead_s=U0,
        take_spare=lambda: pool.pop(0) if pool else None,
        on_hosts_changed=lambda added, removed: None,
    )


def _costs(episodes, policy="ignore", hosts=(0, 1, 2), spares=(3,), until=500.0, between=None):
    """Play `episodes` against a bare job (wired as tests/test_fail_slow.py wires it) and return each episode's cost
    in job-seconds (a job of 3,600 GPUs: a GPU-hour is a second) and the ledger's slowdown."""
    env = simpy.Environment()
    job = _job(env, list(hosts), spares)
    scenario = build("demo", sets=[f"slow.policy={policy}", "slow.detect_after=100s"])

    def swap_out(hosts_out, reason):
        job.interrupt(reason, hosts_out)
        for h in hosts_out:
            job.slow_changed(h, None)
            slow.repaired(h)

    slow = FailSlow(
        env,
        scenario,
        episodes,
        in_job=lambda h: h in job.slot_of,
        slow_changed=job.slow_changed,
        swap_out=swap_out,
    )
    env.process(slow.process())
    if between is not None:
        between(env, job, slow)
    env.run(until=until)
    job.finish(until)
    costs = episode_costs(episodes, FlagshipRecord("j", int(SECONDS_PER_HOUR), W, job.ledger))
    return costs, job.ledger.slowdown_s


def test_the_binding_episode_pays_for_its_stretch():
    # the job at 1/2 over [150, 400) (host 0), at 1/4 over [300, 350) (host 2); writes over [210, 220), [320, 330)
    episodes = [SlowEpisode(0, 150.0, 400.0, "network", 2.0), SlowEpisode(2, 300.0, 350.0, "host", 4.0)]
    costs, total = _costs(episodes)
    assert costs == [pytest.approx(0.5 * 190.0), pytest.approx(0.75 * 40.0)]
    assert sum(costs) == pytest.approx(total)


def test_ties_between_hosts_go_to_the_host_slow_the_longest():
    # equal factors: host 0 binds while it is slow [100, 300), then host 1 until 500 (writes at 100, 210, 320, 430)
    episodes = [SlowEpisode(0, 100.0, 300.0, "host", 2.0), SlowEpisode(1, 150.0, 500.0, "host", 2.0)]
    costs, total = _costs(episodes, until=600.0)
    assert costs == [pytest.approx(0.5 * 180.0), pytest.approx(0.5 * 180.0)]
    assert sum(costs) == pytest.approx(total)


def test_on_one_host_the_larger_factor_binds_then_the_earlier():
    # host 1: A at 1/2 over [100, 300), B at 1/3 over [200, 400): A binds [100, 200) (a write over [100, 110)), B
    # [200, 400) (writes over [210, 220) and [320, 330)). C, equal to B and later, never binds: no cost.
    episodes = [
        SlowEpisode(1, 100.0, 300.0, "gpu_thermal", 2.0),
        SlowEpisode(1, 200.0, 400.0, "gpu_power", 3.0),
        SlowEpisode(1, 250.0, 350.0, "host", 3.0),
    ]
    costs, total = _costs(episodes)
    assert costs[:2] == [pytest.approx(0.5 * 90.0), pytest.approx(2 / 3 * 180.0)] and costs[2] is None
    assert sum(c for c in costs if c is not None) == pytest.approx(total)


def test_an_episode_outside_the_job_has_no_cost():
    costs, total = _costs([SlowEpisode(3, 10.0, 400.0, "gpu_power", 3.0)])  # a spare's
    assert costs == [None] and total == 0


def test_slowdown_thrown_away_with_lost_work_is_not_its_cost():
    # host 1 slow from 150 until it is drained at a failure at 400; [330, 400) is lost work, not slowdown
    episode = SlowEpisode(1, 150.0, 5000.0, "host", 2.0)

    def failure_at_400(env, job, slow):
        def fail(_event):
            job.interrupt("software_bug", [])
            slow.job_interrupted()

        env.timeout(400.0).callbacks.append(fail)

    costs, total = _costs([episode], policy="drain", until=600.0, between=failure_at_400)
    assert costs == [pytest.approx(0.5 * 160.0)] and total == pytest.approx(0.5 * 160.0)
    assert episode.bound == [(150.0, 400.0)]  # its span closed when the drain repaired the host


def test_the_model_costs_one_episode_exactly(monkeypatch):
    scenario = build(
        "demo",
        sets=[
            "failures.rate_per_1000_node_days=0",
            "failures.planned_per_day=0",
            "research.utilization=0",
            "simulation.telemetry=false",
            "simulation.days=1",
            "slow.network_rate=1",
        ],
    )
    topology = build_topology(scenario, generator(scenario.simulation.seed, Stream.TOPOLOGY))
    host = int(topology.hosts_with(FLAGSHIP)[5])
    episode = SlowEpisode(host, 1000.0, 5000.0, "network", 2.0)
    monkeypatch.setattr(simulate_module, "draw_episodes", lambda scenario, n_hosts: [episode])
    result = run_model(scenario).result
    cycle = scenario.training.checkpoint_interval + scenario.checkpoint_write_s
    written = sum(
        max(0.0, min(5000.0, k * cycle) - max(1000.0, k * cycle - scenario.checkpoint_write_s))
        for k in range(1, 10)
    )
    frame = slow_episodes_frame(result)
    expected = 0.5 * (4000.0 - written) * scenario.training.gpus / SECONDS_PER_HOUR
    assert frame["cost_gpu_hours"].to_list() == [pytest.approx(expected)]


def _whole_run(seed: int, strategy: str, policy: str):
    sets = [
        "simulation.telemetry=false",
        "simulation.days=3",
        "failures.rate_per_1000_node_days=120",
        "spares.hosts=4",
        f"training.recovery={strategy}",
        "recovery.hot_spares=2",
        "recovery.replicas=6",
        *(f"slow.{cause}_rate=40" for cause in SLOW_CAUSES),
        f"slow.policy={policy}",
        "slow.detect_after=10m",
        f"simulation.seed={seed}",
    ]
    return run_model(build("demo", sets=sets)).result


@pytest.mark.parametrize(
    ("seed", "strategy", "policy"),
    [
        (1, "restart", "ignore"),
        (2, "restart", "drain"),
        (3, "restart", "swap"),
        *((4, strategy, "drain") for strategy in STRATEGIES if strategy != "restart"),
    ],
)
def test_the_costs_add_up_to_the_ledgers_slowdown_bucket(seed, strategy, policy):
    result = _whole_run(seed, strategy, policy)
    frame = slow_episodes_frame(result)
    bucket = result.job.ledger.slowdown_s * result.job.gpus / SECONDS_PER_HOUR
    assert bucket > 0 and frame["cost_gpu_hours"].null_count() < frame.height
    assert frame["cost_gpu_hours"].sum() == pytest.approx(bucket, rel=1e-9)
    assert frame["cost_gpu_hours"].drop_nulls().min() >= 0


def test_a_run_without_a_flagship_job_costs_nothing():
    episodes = [SlowEpisode(0, 0.0, 10.0, "host", 2.0)]
    assert episode_costs(episodes, None) == [None]


def test_a_file_written_before_the_cost_column_reads_it_as_null(tmp_path):
    store = Store(tmp_path)
    row = {
        "host_id": [1],
        "cause": ["host"],
        "start_s": [0.0],
        "end_s": [10.0],
        "factor": [2.0],
        "action": ["none"],
    }
    episodes = pl.DataFrame(row, schema=polars_schema("slow_episodes", tuple(row)))
    run = small_run()
    run_id = store.write_run(replace(run, tables={**run.tables, "slow_episodes": episodes}))
    con = duckdb.connect(str(store.run_file(run_id)))
    con.execute('ALTER TABLE slow_episodes DROP COLUMN "cost_gpu_hours"')
    con.close()
    read = store.table(run_id, "slow_episodes")
    assert read.schema == pl.Schema(polars_schema("slow_episodes")) and read["cost_gpu_hours"].to_list() == [
        None
    ]
