"""Collective traffic of each job, routed over the fabric: link_samples and a slowdown per job and time.

Traffic model (flow level): a multi-host job runs its data-parallel AllReduce and its FSDP AllGather /
ReduceScatter as NCCL rings. Rings are rail-aligned (GPU j of each host talks to GPU j of the next, as on
Meta's rail-optimised hosts) and ranked in host order (the launcher ranks hosts topology-aware, so a ring
leaves a rack, a pod, only where the job's hosts do). In a ring every GPU sends to its successor and receives
from its predecessor at the job's per-GPU demand (`network.gbps_per_gpu`), so the flows of a job are the
edges host -> next host of its ring, one rail a GPU. A one-host job talks over NVLink only.

Vectorised: the occupancy (which job each host runs at each sample) is one (samples x hosts) array filled from
host_states; a block of samples at once becomes its ring edges by one stable sort, and engine.fabric.network.route
turns all their flows into link loads with bincounts (the job-to-link incidence times the demand). No Python
loop runs per sample, host or flow; the loops are over blocks of samples and over link faults.

Faults: a network_switch_cable incident takes its link down from the fault until the repair (a NIC cable, or
for a rack switch every link of the rack); the fabric above the racks fails too, at
`network.fabric_faults_per_day` (rack-to-spine cables, 1 in 10 a whole spine switch), without interrupting
anyone: ECMP spreads the load over the sibling links. Cables flap before they fail: their error counters rise
over `network.flap_window`. A link that is down has no utilisation reading (util_pct null).
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import polars as pl

from engine.fabric.link_stats import LinkTotals, TierStats
from engine.fabric.network import Fabric, route, slowdown
from engine.fabric.topology import FLAGSHIP, Topology
from engine.scenario import Scenario
from engine.store.prefetch import ahead
from engine.store.schema import polars_schema
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

NETWORK_CAUSE = "network_switch_cable"
SPINE_SWITCH_SHARE = (
    0.1  # of fabric faults, a whole spine switch rather than one cable (Goodput's assumption)
)
# symbol errors an hour a flapping cable logs just before it fails, rising linearly from 0 over the flap
# window (Goodput's assumption; a healthy 400G link logs none at the counter's resolution)
FLAP_PEAK_ERRORS_PER_HOUR = 600.0
BLOCK_ROWS = 2_000_000  # link samples computed at once (~40 MB of working arrays)
SAMPLE_SCHEMA = polars_schema("link_samples")


@dataclass(frozen=True)
class LinkFaults:
    """Links out of service: fault f takes links link_ids[first[f]:first[f + 1]] down over [start, end)."""

    start_s: np.ndarray
    end_s: np.ndarray
    kind: np.ndarray  # cable, rack_switch, spine_switch
    first: np.ndarray
    link_ids: np.ndarray
    incident_faults: int = 0  # the first this many faults are network incidents; the rest the fabric's own

    def links_of(self, f: int) -> np.ndarray:
        return self.link_ids[self.first[f] : self.first[f + 1]]

    def frame(self) -> pl.DataFrame:
        counts = np.diff(self.first)
        return pl.DataFrame(
            {
                "link_id": self.link_ids.astype(np.int32),
                "start_s": np.repeat(self.start_s, counts),
                "end_s": np.repeat(self.end_s, counts),
                "kind": np.repeat(self.kind, counts).astype(str),
            }
        )


def link_faults(
    scenario: Scenario, fabric: Fabric, incidents: pl.DataFrame, horizon_s: float, rng: np.random.Generator
) -> LinkFaults:
    """The network incidents' links and the fabric's own faults, drawn from `rng`."""
    net = incidents.filter((pl.col("cause") == NETWORK_CAUSE) & pl.col("link_id").is_not_null())
    link = net["link_id"].to_numpy().astype(np.int64)
    start = net["t_s"].to_numpy().astype(float)
    end = net["repaired_s"].fill_null(horizon_s).to_numpy().astype(float)
    groups: list[np.ndarray] = []
    kinds: list[str] = []
    for lk in link.tolist():  # one entry per incident: a few dozen
        if lk < fabric.rack_link_base:
            groups.append(np.array([lk]))
            kinds.append("cable")
        else:  # a rack switch: the rack's NIC cables and its uplinks
            rack = (lk - fabric.rack_link_base) // fabric.spines
            hosts = np.flatnonzero(fabric.host_rack == rack)
            nics = (hosts[:, None] * fabric.gpus_per_host + np.arange(fabric.gpus_per_host)).ravel()
            groups.append(
                np.concatenate(
                    [nics, fabric.rack_link_base + rack * fabric.spines + np.arange(fabric.spines)]
                )
            )
            kinds.append("rack_switch")
    count = rng.poisson(scenario.network.fabric_faults_per_day * horizon_s / SECONDS_PER_DAY)
    f_start = np.sort(rng.uniform(0.0, horizon_s, count))
    f_end = np.minimum(f_start + rng.exponential(scenario.repair.fix, count), horizon_s)
    spine_fault = rng.random(count) < SPINE_SWITCH_SHARE
    racks = rng.integers(0, fabric.n_racks, count)
    spines = rng.integers(0, fabric.spines, count)
    for is_spine, rack, k in zip(spine_fault.tolist(), racks.tolist(), spines.tolist(), strict=True):
        if is_spine:  # the spine switch of rack's pod: every rack's uplink to it, and its core links
            pod = fabric.rack_pod[rack]
            pod_racks = np.flatnonzero(fabric.rack_pod == pod)
            core = fabric.core_link_base + (pod * fabric.spines + k) * fabric.cores + np.arange(fabric.cores)
            groups.append(np.concatenate([fabric.rack_link_base + pod_racks * fabric.spines + k, core]))
            kinds.append("spine_switch")
        else:
            groups.append(np.array([fabric.rack_link_base + rack * fabric.spines + k]))
            kinds.append("cable")
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    return LinkFaults(
        np.concatenate([start, f_start]),
        np.concatenate([end, f_end]),
        np.array(kinds, dtype=object),
        np.concatenate([[0], np.cumsum(sizes)]),
        np.concatenate(groups).astype(np.int64) if groups else np.empty(0, np.int64),
        len(link),
    )


def occupancy(host_states: pl.DataFrame, times: np.ndarray, n_hosts: int) -> tuple[np.ndarray, list[str]]:
    """(samples x hosts) index of the job each host runs at each sample time (-1: none), and the job ids."""
    running = host_states.filter((pl.col("state") == "running") & pl.col("job_id").is_not_null())
    job_ids = running["job_id"].unique().sort().to_list()
    job = running["job_id"].cast(pl.Enum(job_ids)).to_physical().to_numpy().astype(np.int32)
    host = running["host_id"].to_numpy().astype(np.int64)
    first = np.searchsorted(times, running["start_s"].to_numpy(), side="left")
    stop = np.searchsorted(times, running["end_s"].to_numpy(), side="left")
    count = np.maximum(stop - first, 0)
    grid = np.full((len(times), n_hosts), -1, dtype=np.int32)
    total = int(count.sum())
    offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    grid[np.repeat(first, count) + offset, np.repeat(host, count)] = np.repeat(job, count)
    return grid, job_ids


def ring_flows(
    grid: np.ndarray, rank_order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ring edges of every multi-host job in a block of samples: (sample, src host, dst host, job).

    Hosts are ranked in host order, or in `rank_order` (every host once, first rank first) when given."""
    if rank_order is not None:  # rank the columns, then name each column's host
        sample, src, dst, job = ring_flows(grid[:, rank_order])
        return sample, rank_order[src], rank_order[dst], job
    n_jobs = int(grid.max()) + 1 if grid.size else 0
    sample, host = np.nonzero(grid >= 0)  # row-major: hosts ascending within a sample
    if not len(sample):
        return sample, host, host, host.copy()
    job = grid[sample, host].astype(np.int64)
    order = np.argsort(sample * n_jobs + job, kind="stable")
    sample, host, job = sample[order], host[order], job[order]
    key = sample * n_jobs + job
    new = np.ones(len(key), dtype=bool)
    new[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, len(key)))
    nxt = np.arange(1, len(key) + 1)
    last = np.append(starts[1:], len(key)) - 1
    nxt[last] = starts  # the last host of a ring sends to its first
    keep = np.repeat(sizes, sizes) > 1
    return sample[keep], host[keep], host[nxt][keep], job[keep]


class NetworkTraffic:
    """The traffic of one run on its fabric: link samples in blocks, and every job's slowdown."""

    def __init__(
        self,
        scenario: Scenario,
        fabric: Fabric,
        host_states: pl.DataFrame,
        incidents: pl.DataFrame,
        times: np.ndarray,
        horizon_s: float,
        rng: np.random.Generator,
        rank_order: np.ndarray | None = None,
    ) -> None:
        """`rank_order` (Topology.rank_order): the order jobs rank their hosts in; None: host order."""
        self.fabric, self.times = fabric, times
        self.rank_order = rank_order
        self.rail_gbps = scenario.network.gbps_per_gpu
        self.grid, self.job_ids = occupancy(host_states, times, fabric.n_hosts)
        self.faults = link_faults(scenario, fabric, incidents, horizon_s, rng)
        self._errors = self._draw_errors(scenario.network.flap_window, rng)
        block = max(1, BLOCK_ROWS // max(fabric.n_links, 1))
        self.blocks = [(s, min(s + block, len(times))) for s in range(0, len(times), block)]
        self._routed: tuple[pl.DataFrame, LinkTotals] | None = None

    def _fault_samples(self, f: int, s0: int, s1: int) -> tuple[int, int]:
        """The samples of block [s0, s1) during which fault f holds its links down."""
        a = int(np.searchsorted(self.times, self.faults.start_s[f], side="left"))
        b = int(np.searchsorted(self.times, self.faults.end_s[f], side="left"))
        return max(a, s0) - s0, min(b, s1) - s0

    def _draw_errors(
        self, window_s: float, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sample, link, errors) of cables flapping before they fail: Poisson counts whose rate rises linearly
        to FLAP_PEAK_ERRORS_PER_HOUR at the fault, over `window_s`."""
        cable = np.flatnonzero(self.faults.kind == "cable")
        if not len(cable) or window_s <= 0 or len(self.times) < 2:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
        resolution = float(self.times[1] - self.times[0])
        start = self.faults.start_s[cable]
        a = np.searchsorted(self.times, start - window_s, side="left")
        b = np.searchsorted(self.times, start, side="left")
        count = b - a
        sample = np.repeat(a, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
        ramp = 1.0 - (np.repeat(start, count) - self.times[sample]) / window_s
        link = self.faults.link_ids[self.faults.first[cable]]
        errors = rng.poisson(FLAP_PEAK_ERRORS_PER_HOUR * resolution / SECONDS_PER_HOUR * ramp)
        return sample, np.repeat(link, count), errors

    def _uplinks_up(self, s0: int, s1: int) -> np.ndarray:
        fab = self.fabric
        up = np.ones((s1 - s0, fab.n_racks * fab.spines), dtype=bool)
        for f in range(len(self.faults.start_s)):
            a, b = self._fault_samples(f, s0, s1)
            if a < b:
                links = self.faults.links_of(f)
                links = links[(links >= fab.rack_link_base) & (links < fab.core_link_base)]
                up[a:b, links - fab.rack_link_base] = False
        return up.reshape(s1 - s0, fab.n_racks, fab.spines)

    def _block_loads(self, s0: int, s1: int):
        sample, src, dst, job = ring_flows(self.grid[s0:s1], self.rank_order)
        loads = route(self.fabric, sample, src, dst, self.rail_gbps, s1 - s0, self._uplinks_up(s0, s1))
        return loads, sample, job

    def _util(self, loads, s0: int, s1: int) -> np.ndarray:
        """(samples x links) utilisation of block [s0, s1) in percent, capped at 100 (what a link carries:
        offered load beyond capacity waits), NaN where a fault holds the link down."""
        util = loads.utilisation(self.fabric)
        np.multiply(util, 100.0, out=util)
        np.minimum(util, 100.0, out=util)
        for f in range(len(self.faults.start_s)):
            a, b = self._fault_samples(f, s0, s1)
            if a < b:
                util[a:b, self.faults.links_of(f)] = np.nan
        return util

    def slowdown(self) -> pl.DataFrame:
        """t_s, job_id, slowdown (>= 1; inf: no path left) of every multi-host job at every sample."""
        return self._route_all()[0]

    def tier_stats(self) -> list[TierStats]:
        """Each tier of the fabric (NIC cables, rack uplinks, core links) over every link and every sample."""
        fab, totals = self.fabric, self._route_all()[1]
        bounds = (0, fab.rack_link_base, fab.core_link_base, fab.n_links)
        return [
            totals.tier(name, a, b) for name, a, b in zip(fab.tiers, bounds[:-1], bounds[1:], strict=True)
        ]

    def _route_all(self) -> tuple[pl.DataFrame, LinkTotals]:
        """One pass over every block: the jobs' slowdowns and every link's readings summed (cached: the
        routing is the cost, and both come out of it)."""
        if self._routed is not None:
            return self._routed
        frames = []
        totals = LinkTotals(self.fabric.n_links)
        n_jobs = max(len(self.job_ids), 1)
        for s0, s1 in self.blocks:
            loads, sample, job = self._block_loads(s0, s1)
            totals.add(self._util(loads, s0, s1))
            if not len(sample):
                continue
            key = sample * n_jobs + job  # ring_flows returns flows sorted by (sample, job)
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            frames.append(
                pl.DataFrame(
                    {
                        "t_s": self.times[s0 + sample[starts]],
                        "job": job[starts].astype(np.int32),
                        "slowdown": np.maximum.reduceat(slowdown(loads.bottleneck), starts),
                    }
                )
            )
        frame = (
            pl.concat(frames)
            if frames
            else pl.DataFrame(schema={"t_s": pl.Float64, "job": pl.Int32, "slowdown": pl.Float64})
        )
        names = pl.Series("job_id", self.job_ids, dtype=pl.String)
        # a gather on the collected column, not a map_batches callback inside the plan (issue 12's deadlock)
        self._routed = frame.select("t_s", names.gather(frame["job"]), "slowdown"), totals
        return self._routed

    def samples(self, links: str = "all") -> Iterator[pl.DataFrame]:
        """The link_samples table in blocks of samples. `links` (network.link_samples): all, every link at
        every sample, rows ordered by (t_s, link_id); switches, the links between switches at every sample
        after the NIC cables' rows at the samples where they are down or log errors."""
        fab = self.fabric
        first = 0 if links == "all" else fab.rack_link_base
        err_sample, err_link, err_count = self._errors
        for s0, s1 in self.blocks:
            loads, _, _ = self._block_loads(s0, s1)
            util = self._util(loads, s0, s1)
            errors = np.zeros(util.shape, dtype=np.int32)
            mine = (err_sample >= s0) & (err_sample < s1)
            np.add.at(errors, (err_sample[mine] - s0, err_link[mine]), err_count[mine])
            c = s1 - s0
            if first:
                row, nic = np.nonzero(np.isnan(util[:, :first]) | (errors[:, :first] > 0))
                yield pl.DataFrame(
                    {
                        "t_s": self.times[s0 + row],
                        "link_id": nic.astype(np.int32),
                        "util_pct": pl.Series(util[row, nic], nan_to_null=True),
                        "errors": errors[row, nic],
                    },
                    schema=SAMPLE_SCHEMA,
                )
            yield pl.DataFrame(
                {
                    "t_s": np.repeat(self.times[s0:s1], fab.n_links - first),
                    "link_id": np.tile(np.arange(first, fab.n_links, dtype=np.int32), c),
                    "util_pct": pl.Series(util[:, first:].ravel(), nan_to_null=True),
                    "errors": errors[:, first:].ravel(),
                },
                schema=SAMPLE_SCHEMA,
            )


def network_run(
    scenario: Scenario,
    topo,
    host_states: pl.DataFrame,
    incidents: pl.DataFrame,
    horizon_s: float,
    rng: np.random.Generator,
) -> tuple[Iterator[pl.DataFrame], dict]:
    """link_samples at the telemetry resolution (an iterator of blocks) and the run summary's `network` part:
    the flagship job's mean and worst slowdown, the link faults and the episodes in which jobs ran slowed
    (the Network page lists them: the store has no table of slowdowns)."""
    from engine.telemetry import sample_times  # the GPU samples' grid, so both tables line up

    fabric = Fabric.of(topo, scenario.cluster.fabric)
    times = sample_times(horizon_s, scenario.simulation.telemetry_resolution)
    traffic = NetworkTraffic(scenario, fabric, host_states, incidents, times, horizon_s, rng, topo.rank_order)
    slow = traffic.slowdown()
    flagship = slow.filter(pl.col("job_id") == scenario.training.name)["slowdown"]
    summary = {
        "fabric": scenario.cluster.fabric,
        "gbps_per_gpu": scenario.network.gbps_per_gpu,
        "link_faults": len(traffic.faults.start_s),
        "fabric_faults": len(traffic.faults.start_s) - traffic.faults.incident_faults,
        "flagship_slowdown_mean": _finite(flagship.mean()),
        "flagship_slowdown_max": _finite(flagship.max()),
        # training progress a running hour makes, given the network (1: never slowed): the job's ETTR times this
        # is its ETTR with the network's slowdowns; the simulated ETTR itself leaves them out (calibrated to
        # the Llama 3 run, whose flagship sat on whole pods)
        "flagship_progress_rate": _finite((1.0 / flagship).mean()) if len(flagship) else None,
        "slowed": slowed_episodes(slow, float(times[1] - times[0]) if len(times) > 1 else horizon_s),
        # `slowed` keeps the worst episodes only: the count of jobs is taken over all of them
        "jobs_slowed": slow.filter(pl.col("slowdown") > 1.0)["job_id"].n_unique(),
        # every link at every sample, whichever links network.link_samples stores (engine.fabric.link_stats)
        "tiers": [t.record() for t in traffic.tier_stats()],
    }
    mode = scenario.network.link_samples
    # computed a block ahead of the store's writer, which inserts one block while the next is routed
    return (iter(()) if mode == "off" else ahead(traffic.samples(mode), name="link-samples")), summary


def placement_slowdown(scenario: Scenario, topo: Topology) -> float:
    """How many times slower the flagship job's collectives run on the hosts it starts on, alone on a fabric
    with every link up: the cost of its placement (training.placement) before failures and other jobs.

    One sample of engine.fabric.network.route over the job's ring; cheap enough for every summary-only run
    (a 12,288-host job is 12,288 flows). 1.0 where the fabric keeps up; inf where no path is left."""
    grid = np.where(topo.role == FLAGSHIP, 0, -1).astype(np.int32)[None, :]
    sample, src, dst, _ = ring_flows(grid, topo.rank_order)
    if not len(sample):
        return 1.0  # a one-host job talks over NVLink only
    fabric = Fabric.of(topo, scenario.cluster.fabric)
    loads = route(fabric, sample, src, dst, scenario.network.gbps_per_gpu, 1)
    return float(slowdown(loads.bottleneck).max())


def _finite(value) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), 4)


def slowed_episodes(slow: pl.DataFrame, resolution_s: float, limit: int = 50) -> list[dict]:
    """Runs of consecutive samples in which a job was slowed (slowdown > 1): job_id, start_s, end_s, worst
    (null: no path left), the `limit` worst first."""
    hit = slow.filter(pl.col("slowdown") > 1.0).sort("job_id", "t_s")
    if hit.is_empty():
        return []
    episodes = (
        hit.with_columns(
            episode=((pl.col("t_s").diff().over("job_id") != resolution_s).fill_null(True)).cum_sum()
        )
        .group_by("job_id", "episode")
        .agg(
            start_s=pl.col("t_s").min(),
            end_s=pl.col("t_s").max() + resolution_s,
            worst=pl.col("slowdown").max(),
        )
    )
    episodes = episodes.sort("worst", "job_id", "start_s", descending=[True, False, False]).head(limit)
    return [{**row, "worst": _finite(row["worst"])} for row in episodes.drop("episode").to_dicts()]
