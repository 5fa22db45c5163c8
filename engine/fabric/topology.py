"""The datacenter: pods of racks of hosts of GPUs, their floor positions, the fabric's links, and the order
the flagship job takes its hosts in (its placement, pack or spread: `allocation_order`).

Shape (Llama 3 paper §3.3; reference README §1): hosts of 8 GPUs (Grand Teton), racks of 2 hosts behind one
rack switch (RTSW), pods ("AI zones") of 192 racks with full bisection bandwidth inside, 8 pods for 24,576
GPUs with 1:7 oversubscription at the aggregation layer (ATSW) between pods. Every GPU has its own 400 Gbps
NIC to the RTSW. Hosts are numbered pod by pod, rack by rack, so host order is physical order.

Everything is built with NumPy/Polars column operations: a 131,072-GPU cluster is a few hundred thousand rows.
"""

from dataclasses import dataclass

import numpy as np
import polars as pl

from engine.scenario import Scenario

NIC_GBPS = 400.0  # per GPU NIC (Llama 3 paper; reference README §1)
CTSW_PER_POD = 16  # spine switches per pod: Goodput's choice, so 16 x 400 Gbps uplinks match 16 GPUs a rack
ATSW_COUNT = 16  # aggregation switches between pods: Goodput's choice
ATSW_OVERSUBSCRIPTION = 7.0  # 1:7 at the aggregation layer (Llama 3 paper §3.3)
# Tier names from the GPU up, per cluster.fabric. RoCE: Meta's RTSW/CTSW/ATSW (Llama 3 paper; SIGCOMM 2024).
# InfiniBand (the twin cluster on NVIDIA Quantum-2, Meta blog 2024-03-12): the same three stages named
# leaf/spine/core, and no oversubscription at the core (Goodput's choice: a non-blocking fat tree is how
# Quantum-2 clusters are usually built). A row of `links` between switches stands for a bundle of 400G cables.
FABRIC_TIERS = {
    "roce": ("gpu_rtsw", "rtsw_ctsw", "ctsw_atsw"),
    "infiniband": ("gpu_leaf", "leaf_spine", "spine_core"),
}
SWITCH_PREFIX = {"roce": ("rtsw", "ctsw", "atsw"), "infiniband": ("leaf", "spine", "core")}
CORE_OVERSUBSCRIPTION = {"roce": ATSW_OVERSUBSCRIPTION, "infiniband": 1.0}

# who holds a host (Topology.role: at the start of a run; the simulation also marks hosts IN_REPAIR)
FLAGSHIP, SPARE, RESEARCH, IN_REPAIR = 0, 1, 2, 3


@dataclass
class Topology:
    """Index arrays of the cluster (host i is row i) plus the store frames hosts, gpus and links."""

    gpus_per_host: int
    hosts_per_rack: int
    host_rack: np.ndarray
    host_pod: np.ndarray
    role: np.ndarray  # FLAGSHIP, SPARE or RESEARCH at t = 0
    hosts: pl.DataFrame
    gpus: pl.DataFrame
    links: pl.DataFrame
    gpu_link_base: int  # link_id of GPU g's NIC cable is gpu_link_base + g
    rack_link_base: int  # link_id of rack r's first RTSW uplink is rack_link_base + r * CTSW_PER_POD
    # The hosts in the order a job's launcher ranks them (a ring's neighbours are consecutive ranks), first rank
    # first. None (pack): host order, topology-aware; spread: the order the hosts were dealt out.
    rank_order: np.ndarray | None = None

    @property
    def n_hosts(self) -> int:
        return len(self.host_rack)

    def rack_hosts(self, rack: int) -> range:
        first = rack * self.hosts_per_rack
        return range(first, min(first + self.hosts_per_rack, self.n_hosts))

    def hosts_with(self, role: int) -> np.ndarray:
        return np.flatnonzero(self.role == role)


def build_topology(scenario: Scenario, rng: np.random.Generator) -> Topology:
    """The cluster of `scenario`; `rng` only draws the GPU UUIDs (give it a child generator of its own)."""
    per_host = scenario.cluster.gpus_per_host
    per_rack = scenario.cluster.hosts_per_rack
    racks_per_pod = scenario.cluster.racks_per_pod
    racks_per_row = scenario.cluster.racks_per_row
    n_hosts = scenario.hosts
    host = np.arange(n_hosts)
    rack = host // per_rack
    pod = rack // racks_per_pod
    hosts = (
        pl.DataFrame(
            {
                "host_id": host.astype(np.int32),
                "rack_id": rack.astype(np.int32),
                "pod_id": pod.astype(np.int32),
                # the floor plan: racks in rows of racks_per_row, numbered along the hall
                "row": (rack // racks_per_row).astype(np.int32),
                "position": (rack % racks_per_row).astype(np.int32),
                "slot": (host % per_rack).astype(np.int32),
            }
        )
        .with_columns(
            hostname=pl.format(
                "gt-p{}-r{}-h{}",
                pl.col("pod_id").cast(pl.String).str.zfill(2),
                pl.col("rack_id").cast(pl.String).str.zfill(5),
                pl.col("slot"),
            )
        )
        .select("host_id", "hostname", "rack_id", "pod_id", "row", "position", "slot")
    )

    gpus = _gpus(n_hosts, per_host, scenario.cluster.gpu_model, rng)
    links, rack_link_base = _links(hosts, gpus, per_host * per_rack, scenario.cluster.fabric)

    order = allocation_order(n_hosts, per_rack, racks_per_pod, scenario.training.placement)
    role = np.full(n_hosts, RESEARCH, dtype=np.int8)
    role[order[: scenario.job_hosts]] = FLAGSHIP
    role[order[scenario.job_hosts : scenario.job_hosts + scenario.spares.hosts]] = SPARE
    rank_order = order if scenario.training.placement == "spread" else None
    return Topology(per_host, per_rack, rack, pod, role, hosts, gpus, links, 0, rack_link_base, rank_order)


def allocation_order(n_hosts: int, hosts_per_rack: int, racks_per_pod: int, placement: str) -> np.ndarray:
    """The hosts in the order the flagship job, then its hot spares, take them (training.placement).

    pack: host order, so the job fills whole racks and whole pods first and its traffic stays off the
    oversubscribed aggregation layer as far as it can (Meta's placement, Llama 3 paper §3.3).
    spread: dealt out round-robin over the pods, one host of every rack before a second host of any (a
    scheduler that balances load and fault domains but is blind to the fabric): the job shares every rack,
    so a rack-switch fault anywhere interrupts it, and its ring's neighbours sit in different pods.
    """
    host = np.arange(n_hosts)
    if placement == "pack":
        return host
    rack = host // hosts_per_rack
    pod, rack_in_pod = rack // racks_per_pod, rack % racks_per_pod
    return np.lexsort((pod, rack_in_pod, host % hosts_per_rack))  # slot first, then rack within pod, then pod


def _gpus(n_hosts: int, per_host: int, model: str, rng: np.random.Generator) -> pl.DataFrame:
    n = n_hosts * per_host
    # UUIDs in NVIDIA's spelling GPU-8-4-4-4-12 hex digits, drawn from the seed so runs are reproducible
    digits = np.frombuffer(rng.bytes(16 * n).hex().encode(), dtype="S32").astype(str)
    uuid = pl.Series("hex", digits)
    return (
        pl.DataFrame(
            {
                "gpu_id": np.arange(n, dtype=np.int32),
                "host_id": np.repeat(np.arange(n_hosts, dtype=np.int32), per_host),
                "index": np.tile(np.arange(per_host, dtype=np.int16), n_hosts),
                "hex": uuid,
            }
        )
        .with_columns(
            uuid=pl.format(
                "GPU-{}-{}-{}-{}-{}",
                *(
                    pl.col("hex").str.slice(a, b - a)
                    for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32))
                ),
            ),
            model=pl.lit(model),
        )
        .select("gpu_id", "host_id", "index", "uuid", "model")
    )


def _links(
    hosts: pl.DataFrame, gpus: pl.DataFrame, gpus_per_rack: int, fabric: str = "roce"
) -> tuple[pl.DataFrame, int]:
    """Three tiers: a 400 Gbps cable per GPU NIC to its rack switch; each rack switch up to every spine (CTSW)
    of its pod (full bisection inside the pod); each spine up to every core switch (ATSW), with 1:7
    oversubscription on RoCE and none on InfiniBand. Link ids: NIC cables in GPU order, then uplinks rack by
    rack (spine k at rack_link_base + rack * CTSW_PER_POD + k), then core links (pod, spine, core) in order."""
    nic_tier, up_tier, core_tier = FABRIC_TIERS[fabric]
    leaf, spine_name, core = SWITCH_PREFIX[fabric]
    nic = gpus.join(hosts.select("host_id", "hostname", "rack_id"), on="host_id", how="left").select(
        tier=pl.lit(nic_tier),
        a=pl.format("{}:gpu{}", pl.col("hostname"), pl.col("index")),
        b=pl.format(leaf + "-{}", pl.col("rack_id")),
        capacity_gbps=pl.lit(NIC_GBPS),
    )
    racks = hosts.group_by("rack_id").agg(pl.col("pod_id").first()).sort("rack_id")
    spine = np.arange(CTSW_PER_POD)
    uplink = racks.join(pl.DataFrame({"k": spine}), how="cross").select(
        tier=pl.lit(up_tier),
        a=pl.format(leaf + "-{}", pl.col("rack_id")),
        b=pl.format(spine_name + "-{}-{}", pl.col("pod_id"), pl.col("k")),
        capacity_gbps=pl.lit(gpus_per_rack * NIC_GBPS / CTSW_PER_POD),
    )
    pods = racks.group_by("pod_id").agg(pl.len().alias("racks")).sort("pod_id")
    agg = (
        pods.join(pl.DataFrame({"k": spine}), how="cross")
        .join(pl.DataFrame({"atsw": np.arange(ATSW_COUNT)}), how="cross")
        .select(
            tier=pl.lit(core_tier),
            a=pl.format(spine_name + "-{}-{}", pl.col("pod_id"), pl.col("k")),
            b=pl.format(core + "-{}", pl.col("atsw")),
            # a spine carries its pod's racks' uplinks (racks x rack uplink); 1/oversubscription of that leaves
            capacity_gbps=pl.col("racks").cast(pl.Float64)
            * (gpus_per_rack * NIC_GBPS / CTSW_PER_POD)
            / CORE_OVERSUBSCRIPTION[fabric]
            / ATSW_COUNT,
        )
    )
    links = pl.concat([nic, uplink, agg])
    links = links.with_row_index("link_id").with_columns(pl.col("link_id").cast(pl.Int32))
    return links.select("link_id", "tier", "a", "b", "capacity_gbps"), nic.height
