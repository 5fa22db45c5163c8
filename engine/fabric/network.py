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
    sample, src, dst = (np.asarray(x, dtype=np.int64) for x in (sample, src, dst))
    rail = np.broadcast_to(np.asarray(rail_gbps, dtype=np.float64), src.shape)
    if uplink_up is None:
        uplink_up = np.ones((n_samples, fabric.n_racks, fabric.spines), dtype=bool)
    flows = _flows(fabric, sample, src, dst, rail, n_samples, uplink_up)
    loads, even_up, even_down = _offered_loads(fabric, flows, n_samples)
    worst = _worst_ratio(fabric, flows, loads, even_up, even_down)
    loads.bottleneck = np.where(flows.routable, worst, np.inf)
    return loads


@dataclass
class _Flows:
    """The flows of one `route` call, sorted by the paths they may take. Even flows run between racks whose
    uplinks are all up and split evenly over every spine; uneven ones (indices `uneven`) use only the spines
    their masks allow."""

    sample: np.ndarray  # per flow: its sample
    src: np.ndarray  # per flow: its source host
    dst: np.ndarray  # per flow: its destination host
    src_rack: np.ndarray
    dst_rack: np.ndarray
    src_pod: np.ndarray
    dst_pod: np.ndarray
    even: np.ndarray  # per flow: between racks, every uplink of both up
    cross_even: np.ndarray  # per flow: even and between pods
    uneven: np.ndarray  # indices of the flows between racks with an uplink down
    uneven_sample: np.ndarray  # per uneven flow: its sample, source rack and destination rack
    uneven_src_rack: np.ndarray
    uneven_dst_rack: np.ndarray
    cross_uneven: np.ndarray  # per uneven flow: between pods
    up_mask: np.ndarray  # (uneven, spines): the spines an uneven flow may use on its way up
    down_mask: np.ndarray  # (uneven, spines): and on its way down
    routable: np.ndarray  # per flow: some path left
    rail_live: np.ndarray  # per flow: Gbps a rail (0 where unroutable)
    flow: np.ndarray  # per flow: Gbps host to host, every rail together
    share_up: np.ndarray  # (uneven, spines): Gbps an uneven flow sends up each spine
    share_down: np.ndarray  # (uneven, spines): and down each spine


def _flows(
    fab: Fabric,
    sample: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    rail: np.ndarray,
    n_samples: int,
    uplink_up: np.ndarray,
) -> _Flows:
    """Each flow's racks and pods, whether it splits evenly, and for the others the spines they may use."""
    rack_whole = np.ones((n_samples, fab.n_racks), dtype=bool)  # every uplink up (nonzero beats all(axis=2))
    dead_sample, dead_rack, _ = np.nonzero(~uplink_up)
    rack_whole[dead_sample, dead_rack] = False
    src_rack, dst_rack = fab.host_rack[src], fab.host_rack[dst]
    src_pod, dst_pod = fab.rack_pod[src_rack], fab.rack_pod[dst_rack]
    inter = src_rack != dst_rack
    even = inter & rack_whole[sample, src_rack] & rack_whole[sample, dst_rack]
    uneven = np.flatnonzero(inter & ~even)
    # spines an uneven flow may use on its way up (at its source rack) and down (at its destination rack)
    us, ur, vr = sample[uneven], src_rack[uneven], dst_rack[uneven]
    m_src, m_dst = uplink_up[us, ur], uplink_up[us, vr]
    same = (src_pod == dst_pod)[uneven][:, None]
    up_mask, down_mask = np.where(same, m_src & m_dst, m_src), np.where(same, m_src & m_dst, m_dst)
    n_up, n_down = up_mask.sum(axis=1), down_mask.sum(axis=1)
    routable = np.ones(len(src), dtype=bool)
    routable[uneven] = (n_up > 0) & (n_down > 0)
    rail_live = np.where(routable, rail, 0.0)
    flow = rail_live * fab.gpus_per_host  # host to host: every rail together
    with np.errstate(divide="ignore", invalid="ignore"):
        share_up = np.where(up_mask, (flow[uneven] / n_up)[:, None], 0.0)
        share_down = np.where(down_mask, (flow[uneven] / n_down)[:, None], 0.0)
    return _Flows(
        sample=sample,
        src=src,
        dst=dst,
        src_rack=src_rack,
        dst_rack=dst_rack,
        src_pod=src_pod,
        dst_pod=dst_pod,
        even=even,
        cross_even=even & (src_pod != dst_pod),
        uneven=uneven,
        uneven_sample=us,
        uneven_src_rack=ur,
        uneven_dst_rack=vr,
        cross_uneven=(src_pod != dst_pod)[uneven],
        up_mask=up_mask,
        down_mask=down_mask,
        routable=routable,
        rail_live=rail_live,
        flow=flow,
        share_up=share_up,
        share_down=share_down,
    )


def _summed(index: np.ndarray, weights: np.ndarray, n_samples: int, size: int) -> np.ndarray:
    """`weights` summed per `index` in [0, n_samples * size)."""
    return np.bincount(index.ravel(), weights=weights.ravel(), minlength=n_samples * size)


def _offered_loads(fab: Fabric, f: _Flows, n_samples: int) -> tuple[Loads, np.ndarray, np.ndarray]:
    """The load every link is offered (its bottleneck still empty), and the even flows' part of each rack's
    uplinks up and down (n_samples, racks): a single spine's share, the same on every spine."""
    k_count, n_h, n_r, n_p = fab.spines, fab.n_hosts, fab.n_racks, fab.n_pods
    sample, us, even, cross_even = f.sample, f.uneven_sample, f.even, f.cross_even
    spine = np.arange(k_count)
    shape_r, shape_p = (n_samples, n_r, k_count), (n_samples, n_p, k_count)
    even_up = _summed(sample[even] * n_r + f.src_rack[even], f.flow[even] / k_count, n_samples, n_r)
    even_up = even_up.reshape(n_samples, n_r)
    even_down = _summed(sample[even] * n_r + f.dst_rack[even], f.flow[even] / k_count, n_samples, n_r)
    even_down = even_down.reshape(n_samples, n_r)
    rack_up = _summed(
        (us * n_r + f.uneven_src_rack)[:, None] * k_count + spine, f.share_up, n_samples, n_r * k_count
    )
    rack_down = _summed(
        (us * n_r + f.uneven_dst_rack)[:, None] * k_count + spine, f.share_down, n_samples, n_r * k_count
    )

    def core(pod: np.ndarray, share: np.ndarray) -> np.ndarray:
        """Into or out of the core at `pod` (the source's or the destination's): even and uneven flows."""
        even_part = _summed(
            sample[cross_even] * n_p + pod[cross_even], f.flow[cross_even] / k_count, n_samples, n_p
        )
        uneven_part = _summed(
            ((us * n_p + pod[f.uneven])[:, None] * k_count + spine)[f.cross_uneven],
            share[f.cross_uneven],
            n_samples,
            n_p * k_count,
        )
        return even_part.reshape(n_samples, n_p, 1) + uneven_part.reshape(shape_p)

    loads = Loads(
        _summed(sample * n_h + f.src, f.rail_live, n_samples, n_h).reshape(n_samples, n_h),
        _summed(sample * n_h + f.dst, f.rail_live, n_samples, n_h).reshape(n_samples, n_h),
        even_up[:, :, None] + rack_up.reshape(shape_r),
        even_down[:, :, None] + rack_down.reshape(shape_r),
        core(f.src_pod, f.share_up),
        core(f.dst_pod, f.share_down),
        np.empty(0),
    )
    return loads, even_up, even_down


def _busiest_spine(full: np.ndarray, even_part: np.ndarray, touched: np.ndarray, spines: int) -> np.ndarray:
    """max over spines of `full`: its even part where no uneven flow added to the rack (a row of equal
    values), the row's maximum where one did (a reduction over every row would cost more than routing)."""
    out = even_part.ravel().copy()
    touched = np.unique(touched)
    out[touched] = full.reshape(-1, spines)[touched].max(axis=1)
    return out.reshape(even_part.shape)


def _masked_max(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.where(mask, values, 0.0).max(axis=1, initial=0.0)


def _worst_ratio(
    fab: Fabric, f: _Flows, loads: Loads, even_up: np.ndarray, even_down: np.ndarray
) -> np.ndarray:
    """Per flow, the highest offered/capacity ratio on its path (routable or not)."""
    sample, even, cross_even, uneven = f.sample, f.even, f.cross_even, f.uneven
    us, ur, vr, n_r = f.uneven_sample, f.uneven_src_rack, f.uneven_dst_rack, fab.n_racks
    worst = np.maximum(loads.nic_up[sample, f.src], loads.nic_down[sample, f.dst]) / fab.nic_gbps
    # even flows cross every spine of their racks: the busiest one is theirs
    core_cap = fab.core_gbps[None, :] * fab.cores
    rack_up_max = _busiest_spine(loads.rack_up, even_up, us * n_r + ur, fab.spines)
    rack_down_max = _busiest_spine(loads.rack_down, even_down, us * n_r + vr, fab.spines)
    worst = np.maximum.reduce(
        [
            worst,
            np.where(even, rack_up_max[sample, f.src_rack] / fab.uplink_gbps, 0.0),
            np.where(even, rack_down_max[sample, f.dst_rack] / fab.uplink_gbps, 0.0),
            np.where(cross_even, (loads.core_up.max(axis=2) / core_cap)[sample, f.src_pod], 0.0),
            np.where(cross_even, (loads.core_down.max(axis=2) / core_cap)[sample, f.dst_pod], 0.0),
        ]
    )
    if len(uneven):
        src_pod, dst_pod = f.src_pod[uneven], f.dst_pod[uneven]
        up_core = loads.core_up[us, src_pod] / (fab.core_gbps[src_pod, None] * fab.cores)
        down_core = loads.core_down[us, dst_pod] / (fab.core_gbps[dst_pod, None] * fab.cores)
        worst[uneven] = np.maximum.reduce(
            [
                worst[uneven],
                _masked_max(loads.rack_up[us, ur], f.up_mask) / fab.uplink_gbps,
                _masked_max(loads.rack_down[us, vr], f.down_mask) / fab.uplink_gbps,
                np.where(f.cross_uneven, _masked_max(up_core, f.up_mask), 0.0),
                np.where(f.cross_uneven, _masked_max(down_core, f.down_mask), 0.0),
            ]
        )
    return worst


def slowdown(bottleneck: np.ndarray) -> np.ndarray:
    """How many times longer a step takes when its most loaded path is offered `bottleneck` x its capacity.

    A collective moves as fast as its slowest link allows (a ring waits for its slowest hop); below
    capacity the network is not the limit and the step time is unchanged (factor 1). Goodput's simplification:
    the whole step is treated as communication-bound once a link saturates, an upper bound on the slowdown.
    """
    return np.maximum(bottleneck, 1.0)
