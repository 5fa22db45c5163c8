"""Collective traffic: occupancy from host states, ring edges, link samples with faults and flaps,
slowdowns."""

import numpy as np
import polars as pl
import pytest

from engine.fabric.network import Fabric
from engine.fabric.topology import build_topology
from engine.fabric.traffic import NetworkTraffic, occupancy, ring_flows
from engine.scenario import build

# 16 hosts of 8 GPUs, 2 hosts a rack, 2 racks a pod (4 pods); no fabric faults of its own unless asked
SETS = [
    "cluster.gpus=128",
    "cluster.racks_per_pod=2",
    "training.gpus=64",
    "spares.hosts=0",
    "network.fabric_faults_per_day=0",
    "network.gbps_per_gpu=300",
    "network.flap_window=3h",
]
HOUR = 3600.0
TIMES = np.arange(6) * HOUR


def setup(sets=()):
    scenario = build("demo", sets=[*SETS, *sets])
    return scenario, Fabric.of(build_topology(scenario, np.random.default_rng(0)))


def states(rows) -> pl.DataFrame:
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


def incidents(rows=()) -> pl.DataFrame:
    return pl.DataFrame(
        list(rows),
        schema={"t_s": pl.Float64, "repaired_s": pl.Float64, "cause": pl.String, "link_id": pl.Int32},
        orient="row",
    )


# job a: hosts 0-3 (pod 0) all along; job b: hosts 4 and 8 (pods 1 and 2) from 2 h; host 10 alone (job c)
HOST_STATES = states(
    [(h, "running", 0.0, 6 * HOUR, "a") for h in range(4)]
    + [
        (4, "running", 2 * HOUR, 6 * HOUR, "b"),
        (8, "running", 2 * HOUR, 6 * HOUR, "b"),
        (10, "running", 0.0, 6 * HOUR, "c"),
        (5, "healthy", 0.0, 6 * HOUR, None),
    ]
)


def test_occupancy_and_ring_edges_are_exact():
    grid, jobs = occupancy(HOST_STATES, TIMES, 16)
    assert jobs == ["a", "b", "c"]
    assert grid[0].tolist() == [0, 0, 0, 0, -1, -1, -1, -1, -1, -1, 2, -1, -1, -1, -1, -1]
    assert grid[2, [4, 8]].tolist() == [1, 1] and grid[1, 4] == -1
    sample, src, dst, job = ring_flows(grid[1:3])
    # sample 0 (1 h): ring of a only (c has one host); sample 1 (2 h): a, then b both ways
    assert list(zip(sample.tolist(), src.tolist(), dst.tolist(), job.tolist(), strict=True)) == [
        (0, 0, 1, 0),
        (0, 1, 2, 0),
        (0, 2, 3, 0),
        (0, 3, 0, 0),
        (1, 0, 1, 0),
        (1, 1, 2, 0),
        (1, 2, 3, 0),
        (1, 3, 0, 0),
        (1, 4, 8, 1),
        (1, 8, 4, 1),
    ]


def test_an_idle_block_has_no_flows_and_no_load():
    scenario, fab = setup()
    assert all(len(x) == 0 for x in ring_flows(np.full((3, 16), -1, dtype=np.int32)))
    idle = states([(5, "healthy", 0.0, 6 * HOUR, None)])
    traffic = NetworkTraffic(scenario, fab, idle, incidents(), TIMES, 6 * HOUR, np.random.default_rng(1))
    assert pl.concat(traffic.samples())["util_pct"].sum() == 0.0 and traffic.slowdown().is_empty()


def test_link_samples_have_every_link_at_every_sample_with_exact_utilisation():
    scenario, fab = setup()
    traffic = NetworkTraffic(
        scenario, fab, HOST_STATES, incidents(), TIMES, 6 * HOUR, np.random.default_rng(1)
    )
    frame = pl.concat(traffic.samples())
    assert frame.height == 6 * fab.n_links and frame["util_pct"].null_count() == 0
    at0 = frame.filter(pl.col("t_s") == 0.0)
    util = at0["util_pct"].to_numpy()
    assert util[:32].tolist() == [75.0] * 32 and util[32:128].sum() == 0.0  # 300 of 400 Gbps on job a's NICs
    # job a's ring crosses racks 0 and 1 twice: 2400 Gbps each way over 16 uplinks of 400 Gbps
    base = fab.rack_link_base
    assert util[base : base + 32].tolist() == [37.5] * 32 and util[base + 32 :].sum() == 0.0
    later = frame.filter(pl.col("t_s") == 2 * HOUR)["util_pct"].to_numpy()
    core = later[fab.core_link_base :].reshape(4, 16, 16)
    # job b: 2400 Gbps from pod 1 to pod 2 and back, over 256 links of 2 x 400 / 7 / 16 Gbps each
    assert np.allclose(core[1], 100.0) and np.allclose(core[2], 100.0) and core[0].sum() == 0.0


def test_slowdown_of_a_job_across_pods_is_its_core_overload():
    scenario, fab = setup()
    traffic = NetworkTraffic(
        scenario, fab, HOST_STATES, incidents(), TIMES, 6 * HOUR, np.random.default_rng(1)
    )
    slow = traffic.slowdown()
    assert slow.filter(pl.col("job_id") == "a")["slowdown"].to_list() == [1.0] * 6
    b = slow.filter(pl.col("job_id") == "b")
    assert b["t_s"].to_list() == [2 * HOUR, 3 * HOUR, 4 * HOUR, 5 * HOUR]
    assert b["slowdown"].to_list() == pytest.approx([2400 / (2 * 16 * 400 / 7)] * 4)  # 1.3125
    assert "c" not in slow["job_id"].to_list()  # one host: NVLink only
    _, ib = setup(["cluster.fabric=infiniband"])
    slow_ib = NetworkTraffic(
        build("demo", sets=[*SETS, "cluster.fabric=infiniband"]),
        ib,
        HOST_STATES,
        incidents(),
        TIMES,
        6 * HOUR,
        np.random.default_rng(1),
    ).slowdown()
    assert slow_ib["slowdown"].max() == 1.0


def test_a_cable_fault_takes_its_link_down_after_flapping():
    scenario, fab = setup()
    # the NIC cable of host 0 GPU 2 (link 2) fails at 4 h and is repaired at 5 h
    traffic = NetworkTraffic(
        scenario,
        fab,
        HOST_STATES,
        incidents([(4 * HOUR, 5 * HOUR, "network_switch_cable", 2)]),
        TIMES,
        6 * HOUR,
        np.random.default_rng(1),
    )
    link2 = pl.concat(traffic.samples()).filter(pl.col("link_id") == 2).sort("t_s")
    assert link2["util_pct"].to_list() == [75.0, 75.0, 75.0, 75.0, None, 75.0]
    errors = link2["errors"].to_list()
    # flapping over the 3 h before the fault: samples at 1, 2, 3 h, the rate rising towards it
    assert errors[0] == 0 and errors[4:] == [0, 0] and errors[3] > 0 and sum(errors[1:4]) > 0


def test_an_uplink_fault_re_spreads_the_rack_over_its_siblings():
    scenario, fab = setup()
    uplink = (
        fab.rack_link_base + 5
    )  # rack 0 to spine 5 (a rack switch fault would name rack 0's first uplink)
    faults = incidents(
        [(0.0, 6 * HOUR, "network_switch_cable", fab.rack_link_base + 16 * 3)]
    )  # rack 3's switch
    traffic = NetworkTraffic(scenario, fab, HOST_STATES, faults, TIMES, 6 * HOUR, np.random.default_rng(1))
    at0 = pl.concat(traffic.samples()).filter(pl.col("t_s") == 0.0)["util_pct"]
    down = np.flatnonzero(at0.is_null().to_numpy())
    rack3 = np.r_[np.arange(6 * 8, 8 * 8), fab.rack_link_base + 3 * 16 + np.arange(16)]
    assert down.tolist() == rack3.tolist()  # its 16 NIC cables and its 16 uplinks
    up = np.ones((6, fab.n_racks, fab.spines), dtype=bool)
    up[:, 0, 5] = False
    traffic._uplinks_up = lambda s0, s1: up[s0:s1]  # as if a cable fault had taken that uplink
    util = pl.concat(traffic.samples()).filter(pl.col("t_s") == 0.0)["util_pct"].to_numpy()
    siblings = np.delete(util[fab.rack_link_base : fab.rack_link_base + 16], 5)
    assert util[uplink] == 0.0 and siblings == pytest.approx(37.5 * 16 / 15)


def test_fabric_faults_are_drawn_from_the_seed():
    scenario, fab = setup(["network.fabric_faults_per_day=20"])

    def faults(seed):
        return NetworkTraffic(
            scenario, fab, HOST_STATES, incidents(), TIMES, 6 * HOUR, np.random.default_rng(seed)
        ).faults.frame()

    one = faults(3)
    assert one.equals(faults(3)) and not one.equals(faults(4))
    assert set(one["kind"]) <= {"cable", "spine_switch"} and one.height > 0
    assert one["link_id"].min() >= fab.rack_link_base  # the fabric above the racks only


def test_switches_mode_keeps_nic_cables_only_while_down_or_erroring():
    scenario, fab = setup()
    traffic = NetworkTraffic(
        scenario,
        fab,
        HOST_STATES,
        incidents([(4 * HOUR, 5 * HOUR, "network_switch_cable", 2)]),
        TIMES,
        6 * HOUR,
        np.random.default_rng(1),
    )
    every = pl.concat(traffic.samples("all"))
    some = pl.concat(traffic.samples("switches"))
    nic = some.filter(pl.col("link_id") < fab.rack_link_base)
    assert nic["link_id"].unique().to_list() == [2]
    assert nic.sort("t_s").equals(
        every.filter((pl.col("link_id") == 2) & (pl.col("util_pct").is_null() | (pl.col("errors") > 0))).sort(
            "t_s"
        )
    )
    above = every.filter(pl.col("link_id") >= fab.rack_link_base)
    assert (
        some.filter(pl.col("link_id") >= fab.rack_link_base)
        .sort("t_s", "link_id")
        .equals(above.sort("t_s", "link_id"))
    )


def test_ring_flows_follow_a_rank_order():
    grid = np.full((1, 16), -1, dtype=np.int32)
    grid[0, [0, 4, 8, 12]] = 0
    order = np.array([0, 8, 4, 12, *[h for h in range(16) if h % 4]])
    sample, src, dst, job = ring_flows(grid, order)
    assert list(zip(src.tolist(), dst.tolist(), strict=True)) == [(0, 8), (8, 4), (4, 12), (12, 0)]
    assert sample.tolist() == [0] * 4 and job.tolist() == [0] * 4


@pytest.mark.parametrize(("placement", "expected"), [("pack", 1.3125), ("spread", 2.625)])
def test_placement_slowdown_is_the_rings_core_bottleneck(placement, expected):
    """8 hosts at 300 Gbps a rail: 2,400 Gbps host to host, split over 16 spines (150 each), against a spine's
    share of the 1:7 core, 2 racks x 400 / 7 = 114.3 Gbps. pack (hosts 0-7 in order) crosses pods twice, one
    flow out of each of its two pods: 150 / 114.3 = 1.3125; spread ranks one host of each pod in turn, so every
    hop crosses pods and each pod sends two flows: 2.625."""
    from engine.fabric.traffic import placement_slowdown

    scenario = build("demo", sets=[*SETS, f"training.placement={placement}"])
    topo = build_topology(scenario, np.random.default_rng(0))
    assert placement_slowdown(scenario, topo) == pytest.approx(expected)
    # at the default demand (25 Gbps a GPU) neither saturates the core
    light = build("demo", sets=[*SETS, f"training.placement={placement}", "network.gbps_per_gpu=25"])
    assert placement_slowdown(light, topo) == 1.0


def test_network_run_ranks_spread_jobs_in_their_dealt_order():
    """The time series agrees with the placement's own estimate when nothing fails and nothing else runs."""
    from engine.fabric.traffic import network_run, placement_slowdown

    scenario = build("demo", sets=[*SETS, "training.placement=spread", "network.link_samples=off"])
    topo = build_topology(scenario, np.random.default_rng(0))
    flagship = states(
        [(int(h), "running", 0.0, 6 * HOUR, scenario["training.name"]) for h in topo.hosts_with(0)]
    )
    _, summary = network_run(scenario, topo, flagship, incidents(), 6 * HOUR, np.random.default_rng(1))
    assert summary["flagship_slowdown_max"] == pytest.approx(placement_slowdown(scenario, topo)) == 2.625
