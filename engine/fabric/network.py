"""The fabric as arrays, and the load host-to-host flows put on each of its links (ECMP, fluid).

Shape (engine.fabric.topology; Llama 3 paper §3.3, Meta SIGCOMM 2024): every GPU NIC has a 400 Gbps cable to its rack
switch (leaf: RTSW on RoCE, `leaf` on InfiniBand); every rack switch has one uplink to each of the K spines of
its pod (CTSW / spine); every spine has one link to each of the A core switches (ATSW / core), oversubscribed
1:7 on RoCE and non-blocking on InfiniBand.

Routing is ECMP, modelled as a fluid: at each stage a flow is split evenly over the equal-cost next hops that
are up and still lead to its destination. Meta found plain per-flow ECMP hashing balanced badly and moved to
enhanced ECMP with more queue pairs (SIGCOMM 2024, reference README §1); an even split is what that aims for.
With core links never failing on their own (a spine switch fault takes its core links with it), the split is
exact and needs only per-rack masks:
- a flow between racks of one pod uses the spines k whose uplinks are up at both racks;
- a flow between pods leaves by the up uplinks of its source rack, spreads evenly over the A core switches,
  and enters the destination pod by the spines whose uplinks to the destination rack are up.
Switches pass on what they receive: traffic into a switch equals traffic out (tests/test_network.py).

A link's utilisation is its busier direction over its capacity. A flow's bottleneck is the highest
offered/capacity ratio on its path (directional); above 1, the flow (and the collective it belongs to) runs
that many times slower.
"""

from dataclasses import dataclass

import numpy as np

from engine.fabric.topology import ATSW_COUNT, CTSW_PER_POD, FABRIC_TIERS, Topology


@dataclass(frozen=True)
class Fabric:
    """Index arrays and capacities of the fabric (host h, rack r, pod p, spine k, core a)."""

    gpus_per_host: int
    host_rack: np.ndarray
    rack_pod: np.ndarray
    nic_gbps: float
    uplink_gbps: float
    core_gbps: np.ndarray  # per pod: one spine-to-core link
    tiers: tuple[str, str, str]
    rack_link_base: int  # uplink (r, k) is rack_link_base + r * spines + k
    spines: int = CTSW_PER_POD
    cores: int = ATSW_COUNT

    @classmethod
    def of(cls, topo: Topology, fabric: str = "roce") -> "Fabric":
        """The fabric of a built topology; capacities are read from its links table."""
        cap = topo.links["capacity_gbps"].to_numpy()
        n_racks = int(topo.host_rack.max()) + 1
        rack_pod = np.zeros(n_racks, dtype=np.int64)
        rack_pod[topo.host_rack] = topo.host_pod
        core_base = topo.rack_link_base + n_racks * CTSW_PER_POD
        n_pods = int(rack_pod.max()) + 1
        core = cap[core_base + np.arange(n_pods) * CTSW_PER_POD * ATSW_COUNT]
        return cls(
            topo.gpus_per_host,
            topo.host_rack.astype(np.int64),
            rack_pod,
            float(cap[topo.gpu_link_base]),
            float(cap[topo.rack_link_base]),
            core,
            FABRIC_TIERS[fabric],
            topo.rack_link_base,
        )

    @property
    def n_hosts(self) -> int:
        return len(self.host_rack)

    @property
    def n_racks(self) -> int:
        return len(self.rack_pod)

    @property
    def n_pods(self) -> int:
        return len(self.core_gbps)

    @property
    def core_link_base(self) -> int:
        return self.rack_link_base + self.n_racks * self.spines

    @property
    def n_links(self) -> int:
        return self.core_link_base + self.n_pods * self.spines * self.cores


@dataclass
class Loads:
    """Offered load in Gbps, per direction, for C samples. `up` is towards the core, `down` towards the GPUs."""

    nic_up: np.ndarray  # (C, hosts): each GPU NIC of the host sends this (one rail a GPU)
    nic_down: np.ndarray  # (C, hosts)
    rack_up: np.ndarray  # (C, racks, spines)
    rack_down: np.ndarray  # (C, racks, spines)
    core_up: np.ndarray  # (C, pods, spines): summed over the core switches (each link carries 1/cores of it)
    core_down: np.ndarray  # (C, pods, spines)
    bottleneck: np.ndarray  # per flow: the highest offered/capacity ratio on its path (inf: no path)

    def utilisation(self, fabric: Fabric, out: np.ndarray | None = None) -> np.ndarray:
        """(C, links) busier-direction load over capacity, in link_id order (NIC links in GPU order), written
        into `out` (float32) when given."""
        c, fab = self.nic_up.shape[0], fabric
        if out is None:
            out = np.empty((c, fab.n_links), dtype=np.float32)
        nic = (np.maximum(self.nic_up, self.nic_down) / fab.nic_gbps).astype(np.float32)
        out[:, : fab.rack_link_base].reshape(c, -1, fab.gpus_per_host)[:] = nic[:, :, None]
        np.divide(
            np.maximum(self.rack_up, self.rack_down).reshape(c, -1),
            fab.uplink_gbps,
            out=out[:, fab.rack_link_base : fab.core_link_base],
            casting="unsafe",
        )
        core = np.maximum(self.core_up, self.core_down) / fab.cores / fab.core_gbps[None, :, None]
        out[:, fab.core_link_base :].reshape(c, -1, fab.cores)[:] = core.reshape(c, -1, 1)
        return out


def route(
    fabric: Fabric,
    sample: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    rail_gbps: np.ndarray | float,
    n_samples: int,
    uplink_up: np.ndarray | None = None,
) -> Loads:
    """Loads of host-to-host flows: flow i runs at sample `sample[i]` from host `src[i]` to host `dst[i]`, one
    rail a GPU (GPU j of the source to GPU j of the destination) at `rail_gbps` each.

    `uplink_up` (n_samples, racks, spines), True where a rack's uplink is in service (default: all). A flow
    with no path left (every usable spine down) carries nothing and gets an infinite bottleneck.
    Flows between racks whose uplinks are all up (nearly all of them) split evenly over every spine and are
    summed per rack; only the others are spread spine by spine.
    """
    fab, k_count = fabric, fabric.spines
    sample, src, dst = (np.asarray(x, dtype=np.int64) for x in (sample, src, dst))
    rail = np.broadcast_to(np.asarray(rail_gbps, dtype=np.float64), src.shape)
    n_h, n_r, n_p = fab.n_hosts, fab.n_racks, fab.n_pods
    if uplink_up is None:
        uplink_up = np.ones((n_samples, n_r, k_count), dtype=bool)
    rack_whole = np.ones((n_samples, n_r), dtype=bool)  # every uplink up (a nonzero scan beats all(axis=2))
    dead_c, dead_r, _ = np.nonzero(~uplink_up)
    rack_whole[dead_c, dead_r] = False
    rs, rd = fab.host_rack[src], fab.host_rack[dst]
    ps, pd = fab.rack_pod[rs], fab.rack_pod[rd]
    inter = rs != rd
    even = inter & rack_whole[sample, rs] & rack_whole[sample, rd]
    uneven = np.flatnonzero(inter & ~even)
    # spines an uneven flow may use on its way up (at its source rack) and down (at its destination rack)
    us, ur, vr = sample[uneven], rs[uneven], rd[uneven]
    m_src, m_dst = uplink_up[us, ur], uplink_up[us, vr]
    same = (ps == pd)[uneven][:, None]
    up_mask, down_mask = np.where(same, m_src & m_dst, m_src), np.where(same, m_src & m_dst, m_dst)
    n_up, n_down = up_mask.sum(axis=1), down_mask.sum(axis=1)
    routable = np.ones(len(src), dtype=bool)
    routable[uneven] = (n_up > 0) & (n_down > 0)
    rail_live = np.where(routable, rail, 0.0)
    flow = rail_live * fab.gpus_per_host  # host to host: every rail together
    with np.errstate(divide="ignore", invalid="ignore"):
        share_up = np.where(up_mask, (flow[uneven] / n_up)[:, None], 0.0)
        share_down = np.where(down_mask, (flow[uneven] / n_down)[:, None], 0.0)

    def per(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
        return np.bincount(index.ravel(), weights=weights.ravel(), minlength=n_samples * size)

    spine = np.arange(k_count)
    cross_even = even & (ps != pd)
    cross_uneven = (ps != pd)[uneven]
    shape_r, shape_p = (n_samples, n_r, k_count), (n_samples, n_p, k_count)
    even_up = per(sample[even] * n_r + rs[even], flow[even] / k_count, n_r).reshape(n_samples, n_r)
    even_down = per(sample[even] * n_r + rd[even], flow[even] / k_count, n_r).reshape(n_samples, n_r)
    loads = Loads(
        per(sample * n_h + src, rail_live, n_h).reshape(n_samples, n_h),
        per(sample * n_h + dst, rail_live, n_h).reshape(n_samples, n_h),
        even_up[:, :, None]
        + per((us * n_r + ur)[:, None] * k_count + spine, share_up, n_r * k_count).reshape(shape_r),
        even_down[:, :, None]
        + per((us * n_r + vr)[:, None] * k_count + spine, share_down, n_r * k_count).reshape(shape_r),
        (
            per(sample[cross_even] * n_p + ps[cross_even], flow[cross_even] / k_count, n_p).reshape(
                n_samples, n_p, 1
            )
            + per(
                ((us * n_p + ps[uneven])[:, None] * k_count + spine)[cross_uneven],
                share_up[cross_uneven],
                n_p * k_count,
            ).reshape(shape_p)
        ),
        (
            per(sample[cross_even] * n_p + pd[cross_even], flow[cross_even] / k_count, n_p).reshape(
                n_samples, n_p, 1
            )
            + per(
                ((us * n_p + pd[uneven])[:, None] * k_count + spine)[cross_uneven],
                share_down[cross_uneven],
                n_p * k_count,
            ).reshape(shape_p)
        ),
        np.empty(0),
    )

    def busiest_spine(full: np.ndarray, even_part: np.ndarray, touched: np.ndarray) -> np.ndarray:
        """max over spines of `full`: its even part where no uneven flow added to the rack (a row of equal
        values), the row's maximum where one did (a reduction over every row would cost more than routing)."""
        out = even_part.ravel().copy()
        touched = np.unique(touched)
        out[touched] = full.reshape(-1, k_count)[touched].max(axis=1)
        return out.reshape(even_part.shape)

    worst = np.maximum(loads.nic_up[sample, src], loads.nic_down[sample, dst]) / fab.nic_gbps
    # even flows cross every spine of their racks: the busiest one is theirs
    core_cap = fab.core_gbps[None, :] * fab.cores
    rack_up_max = busiest_spine(loads.rack_up, even_up, us * n_r + ur)
    rack_down_max = busiest_spine(loads.rack_down, even_down, us * n_r + vr)
    worst = np.maximum.reduce(
        [
            worst,
            np.where(even, rack_up_max[sample, rs] / fab.uplink_gbps, 0.0),
            np.where(even, rack_down_max[sample, rd] / fab.uplink_gbps, 0.0),
            np.where(cross_even, (loads.core_up.max(axis=2) / core_cap)[sample, ps], 0.0),
            np.where(cross_even, (loads.core_down.max(axis=2) / core_cap)[sample, pd], 0.0),
        ]
    )
    if len(uneven):

        def masked_max(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
            return np.where(mask, values, 0.0).max(axis=1, initial=0.0)

        up_core = loads.core_up[us, ps[uneven]] / (fab.core_gbps[ps[uneven], None] * fab.cores)
        down_core = loads.core_down[us, pd[uneven]] / (fab.core_gbps[pd[uneven], None] * fab.cores)
        worst[uneven] = np.maximum.reduce(
            [
                worst[uneven],
                masked_max(loads.rack_up[us, ur], up_mask) / fab.uplink_gbps,
                masked_max(loads.rack_down[us, vr], down_mask) / fab.uplink_gbps,
                np.where(cross_uneven, masked_max(up_core, up_mask), 0.0),
                np.where(cross_uneven, masked_max(down_core, down_mask), 0.0),
            ]
        )
    loads.bottleneck = np.where(routable, worst, np.inf)
    return loads


def slowdown(bottleneck: np.ndarray) -> np.ndarray:
    """How many times longer a step takes when its most loaded path is offered `bottleneck` x its capacity.

    A collective moves as fast as its slowest link allows (a ring waits for its slowest hop); below
    capacity the network is not the limit and the step time is unchanged (factor 1). Goodput's simplification:
    the whole step is treated as communication-bound once a link saturates, an upper bound on the slowdown.
    """
    return np.maximum(bottleneck, 1.0)
