"""The cluster's shape, floor plan, GPUs and links (Llama 3 paper §3.3 via ../shared/reference)."""

import numpy as np
import polars as pl
import pytest

from engine.fabric.topology import ATSW_OVERSUBSCRIPTION, FLAGSHIP, RESEARCH, SPARE, build_topology
from engine.scenario import build


@pytest.fixture(scope="module")
def llama():
    return build_topology(build("llama3-405b"), np.random.default_rng(3))


def test_llama3_cluster_has_the_papers_shape(llama):
    hosts = llama.hosts
    assert hosts.height == 3072 and llama.gpus.height == 24576
    assert hosts["rack_id"].n_unique() == 1536
    assert hosts.group_by("rack_id").len()["len"].unique().to_list() == [2]
    per_pod = hosts.group_by("pod_id").agg(pl.col("rack_id").n_unique().alias("racks"))
    assert per_pod.height == 8 and per_pod["racks"].unique().to_list() == [192]
    # every rack has one floor position, unique over the hall
    floor = hosts.select("rack_id", "row", "position").unique()
    assert floor.height == 1536 and floor.select("row", "position").unique().height == 1536
    assert hosts["position"].max() == 15 and hosts["row"].max() == 1535 // 16
    assert hosts["hostname"].n_unique() == 3072


def test_gpu_uuids_are_nvidia_shaped_unique_and_seeded(llama):
    uuids = llama.gpus["uuid"]
    assert uuids.str.contains(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$").all()
    assert uuids.n_unique() == uuids.len()
    again = build_topology(build("llama3-405b"), np.random.default_rng(3)).gpus
    other = build_topology(build("llama3-405b"), np.random.default_rng(4)).gpus
    assert again.equals(llama.gpus) and not other["uuid"].equals(uuids)
    assert llama.gpus.group_by("host_id").agg(pl.col("index").sort())["index"].to_list()[0] == list(range(8))


def test_links_have_three_tiers_with_the_reference_capacities(llama):
    links = llama.links
    by_tier = {t: frame for (t,), frame in links.group_by("tier")}
    assert by_tier["gpu_rtsw"].height == 24576
    assert by_tier["gpu_rtsw"]["capacity_gbps"].unique().to_list() == [400.0]  # 400 Gbps per GPU NIC
    # inside a pod: a rack's uplinks carry all 16 of its NICs (full bisection)
    rack_up = by_tier["rtsw_ctsw"].group_by("a").agg(pl.col("capacity_gbps").sum())
    assert rack_up.height == 1536 and rack_up["capacity_gbps"].unique().to_list() == [16 * 400.0]
    # between pods: 1:7 oversubscription at the aggregation layer
    pod_down = 192 * 16 * 400.0
    pod_up = by_tier["ctsw_atsw"].filter(pl.col("a").str.starts_with("ctsw-0-"))["capacity_gbps"].sum()
    assert pod_down / pod_up == pytest.approx(ATSW_OVERSUBSCRIPTION)
    assert links["link_id"].to_list() == list(range(links.height))
    # the NIC cable of GPU g is link g
    assert by_tier["gpu_rtsw"]["a"][9] == llama.hosts["hostname"][1] + ":gpu1"


def test_placement_fills_whole_pods_with_the_flagship_then_spares(llama):
    role = llama.role
    assert (
        (role == FLAGSHIP).sum() == 2048 and (role == SPARE).sum() == 48 and (role == RESEARCH).sum() == 976
    )
    pods_full = [p for p in range(8) if (role[llama.host_pod == p] == FLAGSHIP).all()]
    assert pods_full == [0, 1, 2, 3, 4]  # 2,048 hosts = 5 whole pods of 384 and a part of the sixth
    assert np.flatnonzero(role == SPARE).min() == 2048


def test_demo_cluster_is_small_and_consistent():
    topo = build_topology(build("demo"), np.random.default_rng(0))
    assert topo.hosts.height == 64 and topo.host_pod.max() == 3  # 8 racks of 2 hosts a pod
    assert list(topo.rack_hosts(5)) == [10, 11]


def test_infiniband_twin_has_leaf_spine_core_and_a_non_blocking_core():
    ib = build_topology(build("meta-24k-ib"), np.random.default_rng(3)).links
    assert ib["tier"].unique(maintain_order=True).to_list() == ["gpu_leaf", "leaf_spine", "spine_core"]
    assert ib["b"][0] == "leaf-0" and ib.filter(pl.col("tier") == "spine_core")["b"][0] == "core-0"
    pod_down = 192 * 16 * 400.0
    pod_up = ib.filter((pl.col("tier") == "spine_core") & pl.col("a").str.starts_with("spine-0-"))[
        "capacity_gbps"
    ]
    assert pod_up.sum() == pytest.approx(pod_down)  # 1:1, where RoCE's ATSW layer is 1:7


# 16 hosts of 8 GPUs, 2 hosts a rack, 2 racks a pod (4 pods): an 8-host job and 2 spares
SMALL = ["cluster.gpus=128", "cluster.racks_per_pod=2", "training.gpus=64", "spares.hosts=2"]


def test_pack_takes_hosts_in_order_and_ranks_them_so():
    topo = build_topology(build("demo", sets=SMALL), np.random.default_rng(0))
    assert topo.hosts_with(FLAGSHIP).tolist() == list(range(8)) and topo.hosts_with(SPARE).tolist() == [8, 9]
    assert topo.rank_order is None  # host order


def test_spread_deals_one_host_a_rack_round_robin_over_the_pods():
    topo = build_topology(build("demo", sets=[*SMALL, "training.placement=spread"]), np.random.default_rng(0))
    # slot 0 of rack 0 of pods 0..3 (hosts 0, 4, 8, 12), then rack 1 of each pod, then the racks' second hosts
    assert topo.rank_order.tolist() == [0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15]
    assert topo.hosts_with(FLAGSHIP).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    assert topo.hosts_with(SPARE).tolist() == [1, 5] and topo.hosts_with(RESEARCH).tolist() == [
        3,
        7,
        9,
        11,
        13,
        15,
    ]
    # the same hosts, racks and links as pack: only who holds what changes
    packed = build_topology(build("demo", sets=SMALL), np.random.default_rng(0))
    assert topo.hosts.equals(packed.hosts) and topo.links.equals(packed.links)
