"""The fabric model: hand-made flows with exactly known link loads, conservation at every switch, ECMP
re-spread around a failed uplink, the oversubscribed core and the InfiniBand variant."""

import numpy as np
import pytest

from engine.fabric.network import Fabric, route, slowdown
from engine.fabric.topology import build_topology
from engine.scenario import build

# 16 hosts of 8 GPUs, 2 hosts a rack, 2 racks a pod: 8 racks in 4 pods
SMALL = ["cluster.gpus=128", "cluster.racks_per_pod=2", "training.gpus=64", "spares.hosts=0"]


def small_fabric(fabric: str = "roce") -> Fabric:
    scenario = build("demo", sets=[*SMALL, f"cluster.fabric={fabric}"])
    return Fabric.of(build_topology(scenario, np.random.default_rng(0)), fabric)


@pytest.fixture(scope="module")
def fab() -> Fabric:
    return small_fabric()


def test_capacities_follow_the_reference_shape(fab):
    assert (fab.nic_gbps, fab.uplink_gbps) == (400.0, 400.0)  # 16 NICs of a rack over 16 spines
    # a pod of 2 racks has 2 x 16 x 400 Gbps below it and 1/7 of that above (Llama 3 paper: 1:7)
    assert fab.core_gbps * 16 * 16 == pytest.approx(np.full(4, 2 * 16 * 400 / 7))
    assert fab.n_links == 128 + 8 * 16 + 4 * 16 * 16
    ib = small_fabric("infiniband")
    assert ib.tiers == ("gpu_leaf", "leaf_spine", "spine_core")
    assert ib.core_gbps * 16 * 16 == pytest.approx(np.full(4, 2 * 16 * 400.0))  # no oversubscription


def test_flows_inside_a_rack_use_only_the_nic_cables(fab):
    loads = route(fab, [0], [0], [1], 100.0, 1)
    util = loads.utilisation(fab)[0]
    assert util[:8].tolist() == [0.25] * 8 and util[8:16].tolist() == [0.25] * 8  # hosts 0 and 1
    assert util[16:].sum() == 0.0 and loads.bottleneck.tolist() == [0.25]


def test_a_flow_between_racks_of_a_pod_spreads_over_every_spine(fab):
    loads = route(fab, [0], [0], [2], 100.0, 1)  # rack 0 -> rack 1: 8 rails x 100 Gbps
    assert loads.rack_up[0, 0].tolist() == [50.0] * 16 and loads.rack_down[0, 1].tolist() == [50.0] * 16
    assert loads.rack_up.sum() == 800.0 and loads.core_up.sum() == 0.0
    util = loads.utilisation(fab)[0]
    base = fab.rack_link_base
    assert util[base : base + 32].tolist() == [0.125] * 32 and util[fab.core_link_base :].sum() == 0.0


def test_a_flow_between_pods_crosses_the_core_evenly(fab):
    loads = route(fab, [0], [0], [4], 100.0, 1)  # pod 0 -> pod 1
    assert loads.core_up[0, 0].tolist() == [50.0] * 16 and loads.core_down[0, 1].tolist() == [50.0] * 16
    util = loads.utilisation(fab)[0]
    core = util[fab.core_link_base :].reshape(4, 16, 16)
    per_link = 50.0 / 16 / fab.core_gbps[0]  # 3.125 Gbps on each of 256 links of 7.14 Gbps
    assert np.allclose(core[0], per_link) and np.allclose(core[1], per_link) and core[2:].sum() == 0.0
    # the core is the busiest: 800 Gbps through 2 racks x 6.4 Tbps / 7
    assert loads.bottleneck[0] == pytest.approx(800 / (2 * 16 * 400 / 7)) == pytest.approx(0.4375)


def _conservation(fab: Fabric, loads) -> None:
    g = fab.gpus_per_host
    for rack in range(fab.n_racks):
        hosts = np.flatnonzero(fab.host_rack == rack)
        into = loads.nic_up[:, hosts].sum(axis=1) * g + loads.rack_down[:, rack].sum(axis=1)
        out = loads.nic_down[:, hosts].sum(axis=1) * g + loads.rack_up[:, rack].sum(axis=1)
        assert into == pytest.approx(out)
    for pod in range(fab.n_pods):
        racks = np.flatnonzero(fab.rack_pod == pod)
        into = loads.rack_up[:, racks].sum(axis=1) + loads.core_down[:, pod]
        out = loads.rack_down[:, racks].sum(axis=1) + loads.core_up[:, pod]
        assert into == pytest.approx(out)  # spine by spine
    assert loads.core_up.sum(axis=(1, 2)) == pytest.approx(loads.core_down.sum(axis=(1, 2)))  # the core


def test_traffic_into_every_switch_equals_traffic_out(fab):
    rng = np.random.default_rng(5)
    n = 400
    src, dst = rng.integers(0, 16, n), rng.integers(0, 16, n)
    keep = src != dst
    sample = rng.integers(0, 3, n)
    up = rng.random((3, fab.n_racks, fab.spines)) > 0.2  # a fifth of the uplinks down
    loads = route(fab, sample[keep], src[keep], dst[keep], rng.uniform(1, 50, n)[keep], 3, up)
    assert np.isfinite(loads.bottleneck).all()
    assert (loads.rack_up[~up] == 0).all() and (loads.rack_down[~up] == 0).all()  # nothing on a dead link
    _conservation(fab, loads)


def test_a_failed_uplink_shifts_its_share_onto_its_siblings(fab):
    up = np.ones((1, fab.n_racks, fab.spines), dtype=bool)
    up[0, 0, 3] = False
    loads = route(fab, [0], [0], [2], 100.0, 1, up)
    expected = 800.0 / 15  # 16/15 of the 50 Gbps each carried before
    assert loads.rack_up[0, 0, 3] == 0.0 and np.allclose(np.delete(loads.rack_up[0, 0], 3), expected)
    # inside the pod the destination rack avoids spine 3 too: nothing reaches it there
    assert loads.rack_down[0, 1, 3] == 0.0 and np.allclose(np.delete(loads.rack_down[0, 1], 3), expected)
    # between pods only the source side loses spine 3; the destination pod still receives over all 16
    loads = route(fab, [0], [0], [4], 100.0, 1, up)
    assert np.allclose(np.delete(loads.core_up[0, 0], 3), expected) and loads.core_up[0, 0, 3] == 0.0
    assert np.allclose(loads.rack_down[0, 2], 50.0)


def test_a_rack_cut_off_gets_an_infinite_bottleneck(fab):
    up = np.ones((1, fab.n_racks, fab.spines), dtype=bool)
    up[0, 1] = False
    loads = route(fab, [0, 0], [0, 0], [2, 1], 100.0, 1, up)
    assert loads.bottleneck[0] == np.inf and loads.bottleneck[1] == 0.25
    assert loads.rack_up.sum() == 0.0 and loads.nic_up[0, 0] == 100.0  # only the flow inside rack 0 runs


def test_crossing_pods_loads_the_oversubscribed_core_and_sets_the_slowdown(fab):
    # a ring of 4 hosts at 300 Gbps a GPU inside pod 0 (racks 0, 1) and the same ring across pods 0 and 1
    inside = route(fab, [0] * 4, [0, 1, 2, 3], [1, 2, 3, 0], 300.0, 1)
    across = route(fab, [0] * 4, [0, 1, 4, 5], [1, 4, 5, 0], 300.0, 1)
    assert inside.core_up.sum() == 0.0 and slowdown(inside.bottleneck).max() == 1.0
    # 2 of the 4 edges leave a pod: 8 rails x 300 Gbps each way through 2 racks x 6.4 Tbps / 7 of core
    assert across.core_up[0, 0].sum() == 2400.0 and across.core_down[0, 1].sum() == 2400.0
    expected = 2400.0 / (2 * 16 * 400 / 7)
    assert slowdown(across.bottleneck).max() == pytest.approx(expected) == pytest.approx(1.3125)
    # on InfiniBand the same placement is non-blocking
    ib = small_fabric("infiniband")
    assert slowdown(route(ib, [0] * 4, [0, 1, 4, 5], [1, 4, 5, 0], 300.0, 1).bottleneck).max() == 1.0


def test_bottleneck_is_the_busiest_link_on_each_flows_path(fab):
    """Against a flow-by-flow reading of the loads: the links each flow's traffic crosses, in its direction."""
    rng = np.random.default_rng(11)
    n = 300
    src, dst = rng.integers(0, 16, n), rng.integers(0, 16, n)
    keep = src != dst
    src, dst, sample = src[keep], dst[keep], rng.integers(0, 2, n)[keep]
    up = rng.random((2, fab.n_racks, fab.spines)) > 0.1
    loads = route(fab, sample, src, dst, rng.uniform(1, 80, n)[keep], 2, up)
    for i in range(len(src)):  # a loop over a few hundred flows: the reference, not the model
        c, rs, rd = sample[i], fab.host_rack[src[i]], fab.host_rack[dst[i]]
        ps, pd = fab.rack_pod[rs], fab.rack_pod[rd]
        ratios = [loads.nic_up[c, src[i]] / fab.nic_gbps, loads.nic_down[c, dst[i]] / fab.nic_gbps]
        if rs != rd:
            m_up = up[c, rs] & up[c, rd] if ps == pd else up[c, rs]
            m_down = up[c, rs] & up[c, rd] if ps == pd else up[c, rd]
            ratios += list(loads.rack_up[c, rs][m_up] / fab.uplink_gbps)
            ratios += list(loads.rack_down[c, rd][m_down] / fab.uplink_gbps)
            if ps != pd:
                ratios += list(loads.core_up[c, ps][m_up] / fab.cores / fab.core_gbps[ps])
                ratios += list(loads.core_down[c, pd][m_down] / fab.cores / fab.core_gbps[pd])
        assert loads.bottleneck[i] == pytest.approx(max(ratios)), i
