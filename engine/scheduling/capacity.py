"""Free GPU capacity of a cluster for the scheduler: what is free on every GPU, the ledger of what running
jobs hold until when, where a job would go (pack or spread), and when a blocked job could start.

Capacity is counted in thousandths of a GPU (FULL = a whole GPU), so Alibaba's shared GPUs (gpu_milli) and
whole GPUs use one arithmetic. Everything a scheduling pass asks is a NumPy operation over hosts or slots.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

FULL = 1000  # thousandths of a GPU


@dataclass
class Cluster:
    host_gpus: np.ndarray  # GPUs of each host
    host_rack: np.ndarray
    host_pod: np.ndarray

    @property
    def n_hosts(self) -> int:
        return len(self.host_gpus)


class Capacity:
    """Free capacity: `free[h, g]` thousandths free on GPU g of host h (-1: no such GPU); `avail` is each
    host's free values sorted high to low, all -1 while the host is down."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        width = max(int(cluster.host_gpus.max()) if cluster.n_hosts else 1, 1)
        slots = np.arange(width)[None, :] < cluster.host_gpus[:, None]
        self.free = np.where(slots, FULL, -1).astype(np.int32)
        self.avail = self.free.copy()
        self.down = np.zeros(cluster.n_hosts, dtype=bool)
        self.size = cluster.host_gpus.astype(np.int64)
        self.host_free = (self.free.clip(min=0)).sum(axis=1).astype(np.int64)
        # free thousandths per rack and pod, kept up to date host by host (placement ranks by them)
        self.rack_free = np.bincount(cluster.host_rack, weights=self.host_free).astype(np.int64)
        self.pod_free = np.bincount(cluster.host_pod, weights=self.host_free).astype(np.int64)
        self.colmax = self.avail.max(axis=0) if cluster.n_hosts else np.zeros(1, dtype=np.int32)
        self.idle = (self.host_free == self.size * FULL) & (self.size > 0)
        self.dirty = False

    def refresh(self) -> None:
        """Recompute the best free value per rank only when a host that held it lost room."""
        if self.dirty:
            self.colmax = self.avail.max(axis=0)
            self.dirty = False

    def touch(self, host: int) -> None:
        row = self.free[host]
        total = int(row[row > 0].sum())
        delta = total - int(self.host_free[host])
        self.host_free[host] = total
        self.rack_free[self.cluster.host_rack[host]] += delta
        self.pod_free[self.cluster.host_pod[host]] += delta
        old = self.avail[host].copy()
        new = np.full_like(row, -1) if self.down[host] else -np.sort(-row)
        self.avail[host] = new
        self.idle[host] = (not self.down[host]) and total == self.size[host] * FULL and self.size[host] > 0
        if np.any((old == self.colmax) & (new < old)):
            self.dirty = True
        else:
            np.maximum(self.colmax, new, out=self.colmax)

    def placement_key(self) -> np.ndarray:
        """One int64 per host ordering by (free on the host, free in its rack, free in its pod): 17, 23 and
        23 bits (racks and pods past 8,388 free GPUs tie, which only matters as a tie-break)."""
        cap = (1 << 23) - 1
        rack = np.minimum(self.rack_free[self.cluster.host_rack], cap)
        pod = np.minimum(self.pod_free[self.cluster.host_pod], cap)
        return (self.host_free << 46) | (rack << 23) | pod

    def fits(self, h: int, n: int, m: int) -> bool:
        if h == 0:
            return True
        if h == 1:
            return n <= len(self.colmax) and self.colmax[n - 1] >= m
        return int(np.count_nonzero(self.idle & (self.size >= n))) >= h


class HostShare(NamedTuple):
    """What a job holds on one host: the GPUs (indices on the host) and the thousandths it holds on each."""

    host: int
    gpus: np.ndarray
    milli: int


# An allocation: a job's shares, one per host it runs on (the hosts of a gang job, the one host of a small job).
Allocation = list[HostShare]


@dataclass
class LedgerSpan:
    """Where a running job's entries sit in the Ledger's arrays; moved in place when the Ledger sweeps."""

    first: int
    count: int


_LEDGER_COLUMNS = ("slot", "milli", "end", "start", "job", "alive")


class Ledger:
    """Every running job's GPU slots (host * width + GPU), thousandths held and expected end, as flat
    arrays, so the backfill reservation reads them without a loop over jobs. Ended entries are marked dead
    and swept out when they outnumber the living."""

    def __init__(self) -> None:
        self.slot = np.zeros(1024, dtype=np.int64)
        self.milli = np.zeros(1024, dtype=np.int64)
        self.end = np.zeros(1024)
        self.start = np.zeros(1024)
        self.job = np.zeros(1024, dtype=np.int64)
        self.alive = np.zeros(1024, dtype=bool)
        self.size = 0
        self.dead = 0

    def add(
        self, job: int, allocation: Allocation, width: int, start: float, end: float, spans: list[LedgerSpan]
    ) -> LedgerSpan:
        """Enter `allocation` of `job` until `end`; `spans` are the running jobs' (moved if this sweeps)."""
        count = sum(len(share.gpus) for share in allocation)
        if self.dead > max(1024, self.size - self.dead):
            self._sweep(spans)
        if self.size + count > len(self.slot):
            grow = max(2 * len(self.slot), self.size + count)
            for name in _LEDGER_COLUMNS:
                old = getattr(self, name)
                new = np.zeros(grow, dtype=old.dtype)
                new[: self.size] = old[: self.size]
                setattr(self, name, new)
        first = self.size
        at = first
        for share in allocation:
            k = len(share.gpus)
            self.slot[at : at + k] = share.host * width + share.gpus
            self.milli[at : at + k] = share.milli
            at += k
        self.end[first:at] = end
        self.start[first:at] = start
        self.job[first:at] = job
        self.alive[first:at] = True
        self.size = at
        return LedgerSpan(first, count)

    def drop(self, span: LedgerSpan) -> None:
        self.alive[span.first : span.first + span.count] = False
        self.dead += span.count

    def _sweep(self, spans: list[LedgerSpan]) -> None:
        """Keep the living entries only; the running jobs' spans are moved in place."""
        keep = np.flatnonzero(self.alive[: self.size])
        new_index = np.full(self.size, -1, dtype=np.int64)
        new_index[keep] = np.arange(len(keep))
        for name in _LEDGER_COLUMNS:
            arr = getattr(self, name)
            arr[: len(keep)] = arr[keep]
        self.alive[len(keep) : self.size] = False
        for span in spans:
            if span.count:
                span.first = int(new_index[span.first])
        self.size = len(keep)
        self.dead = 0


def allocate(s: Capacity, h: int, n: int, m: int, avoid: np.ndarray | None, pack: bool) -> Allocation | None:
    """Where a job of demand (h hosts, n GPUs a host, m thousandths a GPU) would go, avoiding `avoid` hosts;
    None when it does not fit. Nothing is taken: the caller subtracts the shares from `s.free`. pack: best
    fit, whole pods and racks first; spread: the emptiest first."""
    if h == 0:
        return []
    if h == 1:
        ok = s.avail[:, n - 1] >= m if n <= s.avail.shape[1] else np.zeros(len(s.size), bool)
        if avoid is not None and len(avoid):
            ok = ok.copy()
            ok[avoid] = False
        if not ok.any():
            return None
        key = s.placement_key()
        # pack: best fit (the fullest host, rack, pod that fits); spread: the emptiest; ties: lowest host
        host = int(
            np.argmin(np.where(ok, key, np.iinfo(np.int64).max)) if pack else np.argmax(np.where(ok, key, -1))
        )
        row = s.free[host]
        gpus = np.flatnonzero(row >= m)
        # pack: the fullest GPUs that still fit (keeps whole GPUs whole); spread: the emptiest
        gpus = gpus[np.argsort(row[gpus] if pack else -row[gpus], kind="stable")][:n]
        return [HostShare(host, gpus, m)]
    ok = s.idle & (s.size >= n)
    if avoid is not None and len(avoid):
        ok = ok.copy()
        ok[avoid] = False
    hosts = np.flatnonzero(ok)
    if len(hosts) < h:
        return None
    pods = s.cluster.host_pod[hosts]
    pod_count = np.bincount(pods, minlength=int(pods.max()) + 1)
    rack_count = np.bincount(s.cluster.host_rack[hosts])
    if pack:
        # one pod when one can hold the job (the smallest that can), else the fullest pods first; inside,
        # the racks with most idle hosts first, so the job touches few racks and stays off the ATSW layer
        enough = np.flatnonzero(pod_count >= h)
        if len(enough):
            best = enough[np.argmin(pod_count[enough])]
            hosts = hosts[pods == best]
            pods = pods[pods == best]
        order = np.lexsort(
            (hosts, s.cluster.host_rack[hosts], -rack_count[s.cluster.host_rack[hosts]], -pod_count[pods])
        )
    else:
        # round-robin over pods: the i-th idle host of every pod before the (i+1)-th of any
        rank = np.zeros(len(hosts), dtype=np.int64)
        for p in np.unique(pods):
            rank[pods == p] = np.arange(np.count_nonzero(pods == p))
        order = np.lexsort((hosts, pods, rank))
    chosen = hosts[order[:h]]
    return [HostShare(int(host), np.arange(int(s.size[host])), FULL) for host in chosen]


def reservation(s: Capacity, ledger: Ledger, h: int, n: int, m: int, now: float) -> tuple[float, np.ndarray]:
    """(earliest start of a job of demand (h, n, m) if running jobs end as expected, hosts it would need
    then), vectorised:
    every running job's GPU slots in end order, a running sum per slot of the thousandths freed, the time
    each slot first has room, then per host the time it could take the job."""
    width = s.free.shape[1]
    flat = s.free.ravel()
    need = m if h == 1 else FULL
    ready = np.where(flat >= need, now, np.inf)
    live = np.flatnonzero(ledger.alive[: ledger.size])
    if len(live):
        slots, milli, times = ledger.slot[live], ledger.milli[live], ledger.end[live]
        by_slot = np.lexsort((times, slots))  # slot by slot, in end order inside a slot
        slots, milli, times = slots[by_slot], milli[by_slot], times[by_slot]
        total = np.cumsum(milli)
        first = np.r_[0, np.flatnonzero(np.diff(slots)) + 1]
        before = np.repeat(total[first] - milli[first], np.diff(np.r_[first, len(slots)]))
        level = flat[slots] + total - before
        room = level >= need
        np.minimum.at(ready, slots[room], times[room])
    ready = np.where(flat < 0, np.inf if h == 1 else -np.inf, ready).reshape(-1, width)
    unusable = s.down | (s.size < n)
    if h == 1:
        host_ready = np.partition(ready, n - 1, axis=1)[:, n - 1]
        host_ready[unusable] = np.inf
        best = int(np.argmin(host_ready))
        if not np.isfinite(host_ready[best]):
            return np.inf, np.zeros(0, dtype=np.int64)
        return float(host_ready[best]), np.array([best])
    host_ready = ready.max(axis=1)
    host_ready[unusable | (s.size == 0)] = np.inf
    chosen = np.argsort(host_ready, kind="stable")[:h]
    if len(chosen) < h or not np.isfinite(host_ready[chosen[-1]]):
        return np.inf, np.zeros(0, dtype=np.int64)
    return float(host_ready[chosen[-1]]), chosen
