"""What interrupts a training job: the cause taxonomy, its scope and XIDs, and the arrivals drawn up front.

Every cause of the Llama 3 table (reference `llama3_interruptions.csv`) has a category (from the table), a
component and a scope (Goodput's reading of the cause), and for GPU causes the XIDs the driver logs
(`xid_catalog.csv`), the first listed being the most likely. Arrivals are drawn for every host over the whole
run at once, vectorised: a superposition of one process per host at `failures.rate_per_1000_node_days`
(times `failures.scale`), exponential by default or a Weibull renewal process (shape < 1: infant mortality,
as Meta sees for GPUs falling off the bus and cables). The simulation thins them: an arrival on a host that
is not in service (being repaired) is dropped, and a job-level cause on a host with no job is dropped.

Bad hosts (failures.bad_host_fraction, engine.sim.bad_hosts) fail at failures.bad_host_multiplier times the rate:
their extra arrivals, at (multiplier - 1) times the rate, are drawn the same way from a generator of their own,
with the causes of the host's own hardware (GPU and host scopes), and merged in marked `systematic`; the
simulation drops a systematic arrival once a repair has cured its host, so a bad host's extra failures stop
when it is fixed and go on while it is not (AIReSim, arXiv 2603.07041: a successful repair makes a bad server
good).

Bursts (failures.burst_per_day, draw_bursts): correlated failures of several hosts at one instant (a rack's PDU,
a leaf switch, a bad batch of parts), on top of the per-host rate, from the run's BURSTS stream
(engine.sim.streams), so that with bursts off nothing else draws differently. A burst strikes 2 + k hosts, k
geometric with mean failures.burst_size_mean - 2 (capped at the cluster's hosts): consecutive hosts in host order
(burst_hosts = rack, host ids being rack-contiguous) or distinct hosts drawn uniformly (any). Its cause is drawn
once from the causes of BURST_SCOPES, weighted as the mix, and every host struck gets it (a GPU cause on one GPU
of each host, its XID drawn as for a single-host failure; a network cause on each host's own cable: the burst is
already the switch's fault). Its arrivals share their fault and detection times, which is how the simulation
knows them (engine.sim.simulate.simultaneous_groups): each host struck is an incident of its own, and a job hit on
several hosts is interrupted once.
"""

from dataclasses import dataclass
from math import gamma

import numpy as np

from engine.reference import CAUSES
from engine.scenario import Scenario
from engine.units import SECONDS_PER_DAY

# scope: gpu (one GPU, the host goes to repair), host (the host goes to repair), network (a cable: one host
# unreachable; or a rack switch: every host of the rack), job (the job restarts on the same hosts: no repair,
# a reboot at most)
SCOPE = {
    "faulty_gpu": "gpu",
    "gpu_hbm3": "gpu",
    "gpu_sram": "gpu",
    "gpu_system_processor": "gpu",
    "silent_data_corruption": "gpu",
    "gpu_thermal": "gpu",
    "software_bug": "job",
    "dependency": "job",
    "nccl_watchdog_timeout": "job",
    "network_switch_cable": "network",
    "host_maintenance": "host",
    "nic": "host",
    "ssd": "host",
    "power_supply": "host",
    "server_chassis": "host",
    "io_expansion_board": "host",
    "cpu": "host",
    "system_memory": "host",
}
# The component each cause hits. A network fault hits a cable (the GPU NIC's link to its rack switch) or, for a
# share failures.network_rack_share, the rack switch itself: the incident's link_id is then the rack's first
# uplink (tier rtsw_ctsw) rather than a NIC cable (tier gpu_rtsw).
COMPONENT = {
    **{cause: "GPU" for cause, scope in SCOPE.items() if scope == "gpu"},
    **{cause: "host" for cause, scope in SCOPE.items() if scope == "host"},
    **{cause: "software" for cause, scope in SCOPE.items() if scope == "job"},
    "nic": "NIC",
    "network_switch_cable": "cable or switch",
}

# The primary XID a GPU cause makes the driver log, with weights (Goodput's reading of xid_catalog.csv):
# a faulty GPU mostly falls off the bus (XID 79, Meta's most frequent failure mode, engineering blog
# 2024-06-12), else NVLink errors or a PMU halt; HBM3 faults are double-bit ECC errors, uncontained ECC errors
# or failed row remaps; SRAM faults are contained or uncontained ECC errors; the GPU system processor times out
# or errors (GSP); thermal interface/sensor faults halt the PMU (it runs thermal control) or drop the GPU.
# Silent data corruption logs nothing: that is what makes it silent.
XIDS_OF = {
    "faulty_gpu": ((79, 0.6), (74, 0.25), (62, 0.15)),
    "gpu_hbm3": ((48, 0.5), (95, 0.3), (64, 0.2)),
    "gpu_sram": ((94, 0.5), (95, 0.5)),
    "gpu_system_processor": ((119, 0.7), (120, 0.3)),
    "gpu_thermal": ((62, 0.6), (79, 0.4)),
}
CAUSE_KEYS = tuple(c.cause for c in CAUSES)
CATEGORY = {c.cause: c.category for c in CAUSES} | {"planned_maintenance": "Planned"}
SCOPE_CODE = {"gpu": 0, "host": 1, "network": 2, "job": 3}
NO_XID = -1


@dataclass
class Arrivals:
    """Unexpected failures in the order they are noticed (columns of equal length)."""

    fault_s: np.ndarray  # when the fault happens
    detected_s: np.ndarray  # when the job or the operator notices it (later for SDC and NCCL hangs)
    host: np.ndarray
    cause: np.ndarray  # index into CAUSE_KEYS
    gpu_index: np.ndarray  # the GPU (and its NIC) on the host
    xid: np.ndarray  # NO_XID where none
    rack_wide: np.ndarray  # network faults of the rack switch rather than one cable
    # True for a bad host's extra arrivals (dropped once its host is cured); None: every arrival is a base one
    systematic: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.fault_s)


def per_host_rate_per_s(scenario: Scenario) -> float:
    per_1000_node_days = scenario.failures.rate_per_1000_node_days * scenario.failures.scale
    return per_1000_node_days / 1000.0 / SECONDS_PER_DAY


def draw_arrivals(scenario: Scenario, n_hosts: int, rng: np.random.Generator) -> Arrivals:
    """Every unexpected failure of every host over the run, drawn at once."""
    host, fault = _arrival_times(scenario, np.arange(n_hosts), per_host_rate_per_s(scenario), rng)
    weights = np.array([scenario.mix[c] for c in CAUSE_KEYS], dtype=float)
    return _describe(scenario, host, fault, weights, rng)


# The scopes of a bad host's own faults: its GPUs and its host parts (a job-level cause is software, a network
# fault may be the rack switch's, neither is the host's)
HARDWARE_SCOPES = ("gpu", "host")


def draw_bad_host_arrivals(scenario: Scenario, bad_hosts: np.ndarray, rng: np.random.Generator) -> Arrivals:
    """The extra failures of the hosts `bad_hosts` (their ids) over the run, at (failures.bad_host_multiplier
    - 1) times the base rate, with the causes of the failure mix restricted to HARDWARE_SCOPES (uniform
    over them if the mix gives them no weight), marked systematic."""
    extra = per_host_rate_per_s(scenario) * (scenario.failures.bad_host_multiplier - 1.0)
    host, fault = _arrival_times(scenario, np.asarray(bad_hosts, dtype=np.int64), extra, rng)
    hardware = np.array([SCOPE[c] in HARDWARE_SCOPES for c in CAUSE_KEYS])
    weights = np.array([scenario.mix[c] for c in CAUSE_KEYS], dtype=float) * hardware
    if weights.sum() <= 0:
        weights = hardware.astype(float)
    arrivals = _describe(scenario, host, fault, weights, rng)
    arrivals.systematic = np.ones(len(arrivals), dtype=bool)
    return arrivals


# The scopes of a burst's cause: a host's hardware and the network's cables and switches (a job-level cause is
# the job's, not several hosts' at once)
BURST_SCOPES = (*HARDWARE_SCOPES, "network")


def burst_per_day(scenario: Scenario) -> float:
    """Bursts a day over the whole cluster: failures.burst_per_day times failures.scale."""
    return scenario.failures.burst_per_day * scenario.failures.scale


def burst_sizes(size_mean: float, count: int, n_hosts: int, rng: np.random.Generator) -> np.ndarray:
    """Hosts struck by each of `count` bursts: 2 + k, P(k) = (1 - p)^k p for k >= 0, p = 1 / (size_mean - 1) (so
    mean size_mean; size_mean 2: always 2), capped at `n_hosts`."""
    extra = rng.geometric(1.0 / (size_mean - 1.0), count) - 1  # numpy's geometric counts trials: 1, 2, ...
    return np.minimum(2 + extra, n_hosts).astype(np.int64)


def draw_bursts(scenario: Scenario, n_hosts: int, rng: np.random.Generator) -> Arrivals:
    """Every burst over the run, drawn at once: a Poisson count at burst_per_day (times failures.scale) over
    simulation.days, uniform times, sizes (burst_sizes), the hosts (failures.burst_hosts) and one cause a burst
    (BURST_SCOPES, weighted as the mix; uniform over them if the mix gives them no weight), then each host's GPU
    and XID (never rack-wide: the burst names its hosts). A burst's arrivals share their fault and detection
    times; in the order they are noticed (time, then host)."""
    per_day = burst_per_day(scenario)
    count = int(rng.poisson(per_day * scenario.simulation.days)) if per_day > 0 and n_hosts > 0 else 0
    times = rng.uniform(0.0, scenario.duration_s, count)
    sizes = burst_sizes(scenario.failures.burst_size_mean, count, n_hosts, rng)
    scoped = np.array([SCOPE[c] in BURST_SCOPES for c in CAUSE_KEYS])
    weights = np.array([scenario.mix[c] for c in CAUSE_KEYS], dtype=float) * scoped
    if weights.sum() <= 0:
        weights = scoped.astype(float)
    cause = rng.choice(len(CAUSE_KEYS), size=count, p=weights / weights.sum())
    if scenario.failures.burst_hosts == "rack":  # consecutive hosts from a uniform first one, wrapping around
        first = rng.integers(0, n_hosts, count) if count else np.zeros(0, dtype=np.int64)
        within = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        host = (np.repeat(first, sizes) + within) % max(n_hosts, 1)
    else:  # distinct hosts, uniform over the cluster
        host = _distinct_hosts(sizes, n_hosts, rng)
    return _describe(
        scenario,
        host.astype(np.int64),
        np.repeat(times, sizes),
        weights,
        rng,
        cause=np.repeat(cause, sizes),
        rack_share=0.0,
    )


def _distinct_hosts(sizes: np.ndarray, n_hosts: int, rng: np.random.Generator) -> np.ndarray:
    """sizes[b] distinct hosts for each burst b, uniform over the cluster, burst after burst. Drawn with
    replacement, a host drawn twice in a burst drawn again until none is (a rule blind to host ids, so each set of
    hosts is as likely as any other), vectorised; a burst of more than half the cluster draws its own."""
    big = 2 * sizes > n_hosts
    small = np.where(big, 0, sizes)
    owner = np.repeat(np.arange(sizes.size, dtype=np.int64), small)
    host = rng.integers(0, n_hosts, owner.size)
    check = np.arange(owner.size)  # the draws to check: at first all, then those of bursts that drew again
    while check.size:
        key = owner[check] * n_hosts + host[check]  # burst, then host
        order = np.argsort(key, kind="stable")
        twice = key[order][1:] == key[order][:-1]
        again = check[order[1:][twice]]
        host[again] = rng.integers(0, n_hosts, again.size)
        check = check[np.isin(owner[check], owner[again])]
    if not big.any():
        return host.astype(np.int64)
    out = np.empty(int(sizes.sum()), dtype=np.int64)
    out[~np.repeat(big, sizes)] = host
    starts = np.cumsum(sizes) - sizes
    for b in np.flatnonzero(big).tolist():
        out[starts[b] : starts[b] + sizes[b]] = rng.choice(n_hosts, int(sizes[b]), replace=False)
    return out


def merge_arrivals(base: Arrivals, extra: Arrivals) -> Arrivals:
    """`base` and `extra` in one stream, in the order they are noticed (detection time, then host; base first
    on a tie), with `systematic` set for every arrival."""

    def flags(a: Arrivals) -> np.ndarray:
        return a.systematic if a.systematic is not None else np.zeros(len(a), dtype=bool)

    columns = {
        name: np.concatenate([getattr(base, name), getattr(extra, name)])
        for name in ("fault_s", "detected_s", "host", "cause", "gpu_index", "xid", "rack_wide")
    }
    columns["systematic"] = np.concatenate([flags(base), flags(extra)])
    order = np.lexsort((columns["host"], columns["detected_s"]))  # stable: base before extra on a tie
    return Arrivals(**{name: values[order] for name, values in columns.items()})


def _arrival_times(
    scenario: Scenario, hosts: np.ndarray, rate: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(host, fault time) of every failure of `hosts`, each failing at `rate` per second over the run."""
    horizon = scenario.duration_s
    if rate <= 0 or hosts.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    if scenario.failures.distribution == "weibull":
        index, fault = _weibull_renewals(hosts.size, rate, scenario.failures.weibull_shape, horizon, rng)
        return hosts[index], fault
    # Poisson per host: the count is Poisson(rate x horizon), the times uniform over the run
    counts = rng.poisson(rate * horizon, hosts.size)
    return np.repeat(hosts, counts), rng.uniform(0.0, horizon, int(counts.sum()))


def _describe(
    scenario: Scenario,
    host: np.ndarray,
    fault: np.ndarray,
    weights: np.ndarray,
    rng: np.random.Generator,
    *,
    cause: np.ndarray | None = None,
    rack_share: float | None = None,
) -> Arrivals:
    """The failures at (`host`, `fault`): cause (by `weights`, unless `cause` gives it), GPU, XID, rack-wide or
    not (a network fault's chance `rack_share`, failures.network_rack_share unless given), detection time; in
    the order they are noticed."""
    horizon = scenario.duration_s
    n = host.size
    if cause is None:
        probabilities = (
            weights / weights.sum() if weights.sum() > 0 else np.full(len(weights), 1 / len(weights))
        )
        cause = rng.choice(len(CAUSE_KEYS), size=n, p=probabilities)
    if rack_share is None:
        rack_share = scenario.failures.network_rack_share
    gpu_index = rng.integers(0, scenario.cluster.gpus_per_host, n)
    xid = np.full(n, NO_XID)
    pick = rng.random(n)  # one uniform per arrival picks its XID among its cause's
    for key, options in XIDS_OF.items():
        mine = cause == CAUSE_KEYS.index(key)
        codes = np.array([code for code, _ in options])
        edges = np.cumsum([weight for _, weight in options])
        xid[mine] = codes[
            np.minimum(np.searchsorted(edges, pick[mine] * edges[-1], side="right"), len(codes) - 1)
        ]
    rack_wide = (cause == CAUSE_KEYS.index("network_switch_cable")) & (rng.random(n) < rack_share)
    delay = np.zeros(n)
    delay[cause == CAUSE_KEYS.index("silent_data_corruption")] = scenario.failures.sdc_detection_delay
    delay[cause == CAUSE_KEYS.index("nccl_watchdog_timeout")] = scenario.failures.nccl_timeout_detection
    detected = fault + delay
    keep = detected < horizon
    order = np.lexsort((host[keep], detected[keep]))
    pick_ = np.flatnonzero(keep)[order]
    return Arrivals(
        fault[pick_],
        detected[pick_],
        host[pick_].astype(np.int64),
        cause[pick_],
        gpu_index[pick_],
        xid[pick_],
        rack_wide[pick_],
    )


def _weibull_renewals(
    n_hosts: int, rate: float, shape: float, horizon: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A renewal process per host with Weibull gaps of mean 1/rate, every host new at t = 0.

    Gaps are drawn in blocks (hosts x k) and summed; the few hosts whose block ends before the horizon get
    another block, so the cost stays proportional to the number of failures.
    """
    scale = 1.0 / (rate * gamma(1.0 + 1.0 / shape))
    hosts_out, times_out = [], []
    active = np.arange(n_hosts)
    offset = np.zeros(n_hosts)
    block = max(2, int(rate * horizon * 3) + 2)
    while active.size:
        gaps = scale * rng.weibull(shape, (active.size, block))
        times = offset[active, None] + np.cumsum(gaps, axis=1)
        inside = times < horizon
        rows, cols = np.nonzero(inside)
        hosts_out.append(active[rows])
        times_out.append(times[rows, cols])
        offset[active] = times[:, -1]
        active = active[inside[:, -1]]
    return np.concatenate(hosts_out), np.concatenate(times_out)


def draw_planned(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """Planned interruptions of the flagship job (firmware, config and dataset updates): a Poisson process at
    `failures.planned_per_day` (Llama 3: 47 in 54 days)."""
    horizon = scenario.duration_s
    count = rng.poisson(scenario.failures.planned_per_day * scenario.simulation.days)
    return np.sort(rng.uniform(0.0, horizon, count))
