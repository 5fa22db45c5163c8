"""How the flagship job recovers from a failure (`training.recovery`): the strategies besides `restart`.

`restart` (engine.sim.training.FlagshipJob) stops every host, swaps in spares and reloads the last storage
checkpoint. The published systems that beat it at 100,000 GPUs are subclasses that change one part of that:

- in_memory_checkpoint (Gemini, Wang et al., SOSP'23): every `recovery.memory_checkpoint_interval` the job
  copies its state into the CPU memory of `recovery.memory_copies` peer hosts (the next hosts in slot order),
  interleaved with training traffic, so it never blocks. A failure resumes from the last copy, unless the
  failure took a host together with all of its peers, or the fault came before the last copy (a late-detected
  fault: the copies since are suspect); then it falls back to the last storage checkpoint before the fault.
  Cost: `storage.checkpoint_gb_per_gpu` x GPUs a host x copies of host memory.
- replica_drop (Meta FT-HSDP, Salpekar et al., arXiv 2602.00277): the job is `recovery.replicas` data-parallel
  replicas, its hosts split evenly in slot order. A failure confined to replicas drops them: every replica
  stalls `recovery.drop_stall`, nothing is lost, then the rest train at (R - k) / R of full speed while k are
  out. A dropped replica rejoins `recovery.rejoin` after its failed hosts are replaced. A failure that is not
  confined (a job-scope cause, a planned stop, a late-detected fault whose bad gradients every replica has
  averaged, or the last replica lost) restarts the whole job from storage as `restart` does. The training
  lost while replicas are out is its own ledger bucket (JobLedger.degraded_s).
- hot_spare (NVIDIA NVRx in-job restart; ByteRobust, SOSP'25, warm standbys): the job holds
  `recovery.hot_spares` hosts initialised and idle, taken from the spare pool at the start. A host failure
  swaps standbys in and restarts in `recovery.hot_swap` instead of `training.restart_overhead`, while
  standbys last; each used one is replaced from the pool and warmed for `training.restart_overhead`. A failure
  with no host to swap (a software bug, a planned stop) restarts as `restart` does, so with no standbys the
  strategy is `restart`. Cost: standby hosts x GPUs x the time they sat idle.
"""

import bisect
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import simpy

from engine.scenario import Scenario, ScenarioError
from engine.sim.training import GRACEFUL, RESTARTING, RUNNING, WAITING, FlagshipJob


@dataclass(frozen=True)
class JobWiring:
    """What the simulation hands the flagship job, whatever its strategy: where it runs and how it reaches the
    spare pool. `standbys` (hot_spare) are the warm standby hosts already taken from the pool; `take_standby`
    takes another (None: the pool is empty) and `on_standby` marks a repaired host the job keeps as a standby."""

    env: simpy.Environment
    job_id: str
    hosts: list[int]
    take_spare: Callable[[], int | None]
    on_hosts_changed: Callable[[list[int], list[int]], None]
    standbys: Sequence[int] = ()
    take_standby: Callable[[], int | None] = lambda: None
    on_standby: Callable[[int], None] = lambda _host: None
    on_done: Callable[[], None] | None = None  # the job's work (training.work) is done: the run ends


def common_settings(scenario: Scenario, wiring: JobWiring) -> dict:
    """The checkpoint and restart settings every strategy takes, and the spare pool's callbacks."""
    return {
        "checkpoint_interval_s": scenario.training.checkpoint_interval,
        "checkpoint_write_s": scenario.checkpoint_write_s,
        "restart_overhead_s": scenario.training.restart_overhead,
        "take_spare": wiring.take_spare,
        "on_hosts_changed": wiring.on_hosts_changed,
        "work_s": scenario.training.work,
        "on_done": wiring.on_done,
    }


class RestartJob(FlagshipJob):
    """`restart`: the base job as it is (engine.sim.training), with the strategy interface every other class here
    overrides: how it is made from a scenario, the standbys it holds and the host memory it takes."""

    @classmethod
    def from_scenario(cls, scenario: Scenario, wiring: JobWiring) -> FlagshipJob:
        settings = common_settings(scenario, wiring) | cls.own_settings(scenario, wiring)
        return cls(wiring.env, wiring.job_id, wiring.hosts, **settings)

    @classmethod
    def own_settings(cls, scenario: Scenario, wiring: JobWiring) -> dict:
        """The strategy's own constructor arguments, from its `recovery.*` keys."""
        return {}

    @classmethod
    def standbys_wanted(cls, scenario: Scenario, spares_available: int) -> int:
        """Warm standbys the job takes from the spare pool at the start."""
        return 0

    @classmethod
    def memory_gb_per_host(cls, scenario: Scenario) -> float:
        """Host memory the strategy's copies take on every host of the job."""
        return 0.0


def strategy_class(scenario: Scenario) -> type[RestartJob]:
    """The class of the scenario's `training.recovery` (validated against STRATEGIES when the scenario is built)."""
    name = scenario.training.recovery
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ScenarioError(
            f"training.recovery: {name!r} is no strategy (known: {', '.join(STRATEGIES)})"
        ) from None


def flagship_job(scenario: Scenario, wiring: JobWiring) -> FlagshipJob:
    """The flagship job under the scenario's `training.recovery`."""
    return strategy_class(scenario).from_scenario(scenario, wiring)


def standbys_wanted(scenario: Scenario, spares_available: int) -> int:
    """How many warm standbys the job takes from the spare pool at the start (recovery.hot_spares under
    hot_spare, else none); a ScenarioError if the pool (spares.hosts) holds fewer."""
    return strategy_class(scenario).standbys_wanted(scenario, spares_available)


def memory_gb_per_host(scenario: Scenario) -> float:
    """Host memory the in-memory copies take (in_memory_checkpoint; 0 otherwise)."""
    return strategy_class(scenario).memory_gb_per_host(scenario)


# ----- in_memory_checkpoint ------------------------------------------------------------------------------------


class InMemoryCheckpointJob(RestartJob):
    strategy = "in_memory_checkpoint"

    def __init__(self, env, job_id, hosts, *, memory_interval_s: float, memory_copies: int, **common) -> None:
        super().__init__(env, job_id, hosts, **common)
        self.memory_interval, self.copies = memory_interval_s, memory_copies

    @classmethod
    def own_settings(cls, scenario: Scenario, wiring: JobWiring) -> dict:
        return {
            "memory_interval_s": scenario.recovery.memory_checkpoint_interval,
            "memory_copies": scenario.recovery.memory_copies,
        }

    @classmethod
    def memory_gb_per_host(cls, scenario: Scenario) -> float:
        """Each host keeps the state of `recovery.memory_copies` peers, `storage.checkpoint_gb_per_gpu` a GPU."""
        return (
            scenario.storage.checkpoint_gb_per_gpu
            * scenario.cluster.gpus_per_host
            * scenario.recovery.memory_copies
        )

    def _resume_point(self, fault_s: float, failed: list[int]) -> float:
        storage = self._last_good(fault_s)
        now, start = self.env.now, self.attempt_start
        # copies are taken every memory_interval from the attempt's start (the state it resumed from is the
        # first); min: a float product must not land after now
        copy = min(start + math.floor((now - start) / self.memory_interval) * self.memory_interval, now)
        if copy > fault_s or self._copies_lost(failed):
            self.ledger.storage_fallbacks += 1
            return storage
        self.ledger.memory_restores += 1
        return max(copy, storage)

    def _copies_lost(self, failed: list[int]) -> bool:
        """Whether a failed host's peers (the next `copies` slots) all failed with it, taking its copy."""
        gone, n_slots = set(failed), len(self.slots)
        for host in failed:
            slot = self.slot_of[host]
            if all(int(self.slots[(slot + peer) % n_slots]) in gone for peer in range(1, self.copies + 1)):
                return True
        return False


# ----- replica_drop ----------------------------------------------------------------------------------------------


class ReplicaDropJob(RestartJob):
    strategy = "replica_drop"

    @classmethod
    def own_settings(cls, scenario: Scenario, wiring: JobWiring) -> dict:
        return {
            "replicas": scenario.recovery.replicas,
            "drop_stall_s": scenario.recovery.drop_stall,
            "rejoin_s": scenario.recovery.rejoin,
        }

    def __init__(
        self, env, job_id, hosts, *, replicas: int, drop_stall_s: float, rejoin_s: float, **common
    ) -> None:
        super().__init__(env, job_id, hosts, **common)
        if replicas > len(hosts):
            raise ScenarioError(
                f"recovery.replicas: {replicas} data-parallel replicas need at least as many hosts; the flagship "
                f"job has {len(hosts)}"
            )
        self.replicas, self.stall, self.rejoin = replicas, drop_stall_s, rejoin_s
        n_slots = len(hosts)
        self.replica_of = [slot * replicas // n_slots for slot in range(n_slots)]  # even split in slot order
        self.out: set[int] = set()  # replicas not training: dropped, waiting for hosts or rejoining
        self.empty: dict[int, list[int]] = {}  # replica -> its slots waiting for a host
        self._rejoin_generation = [0] * replicas
        self._marks: list[tuple[float, int]] = [(0.0, 0)]  # (since, replicas out) through the running attempt

    # ----- events from outside ----------------------------------------------------------------------------
    def interrupt(self, reason: str, failed_hosts: list[int], fault_s: float | None = None) -> bool:
        now = self.env.now
        mine = [h for h in failed_hosts if h in self.slot_of]
        hit = {self.replica_of[self.slot_of[h]] for h in mine}
        late = fault_s is not None and fault_s < now  # its bad gradients reached every replica
        confined = bool(mine) and not late and reason not in GRACEFUL
        if self.phase == WAITING or (confined and hit <= self.out):
            self._swap(mine)  # nothing trains on these hosts: no interruption
            return False
        whole_job = not confined or len(self.out | hit) == self.replicas
        if self.phase == RUNNING:
            lost_from = now
            if whole_job and reason not in GRACEFUL:
                lost_from = self._last_good(now if fault_s is None else fault_s)
            self._close_attempt(now, reason, lost_from)
        elif self.phase == RESTARTING:
            self.ledger.restart_s += now - self.phase_since
        self.ledger.replica_drops += len(hit - self.out)
        self.out |= hit
        if mine:
            self._swap(mine)
        if len(self.out) == self.replicas:
            self.phase, self.phase_since = WAITING, now  # until a replica is whole again
        else:
            self._begin_restart(self.restart_overhead if whole_job else self.stall)
        return True

    def host_returned(self, host: int) -> bool:
        """A repaired host fills a slot of the replica closest to whole (the lowest such replica on a tie)."""
        if self.missing == 0:
            return False
        replica = min(self.empty, key=lambda r: (len(self.empty[r]), r))
        self._seat(host, self.empty[replica].pop())
        self.on_hosts_changed([host], [])
        self.missing -= 1
        if not self.empty[replica]:
            del self.empty[replica]
            self._schedule_rejoin(replica)
        return True

    # ----- inside ---------------------------------------------------------------------------------------
    def _swap(self, failed: list[int]) -> None:
        added, touched = [], set()
        for host in failed:
            slot = self.slot_of.pop(host)
            replica = self.replica_of[slot]
            touched.add(replica)
            spare = self.take_spare()
            if spare is None:
                self.slots[slot] = -1
                self.empty.setdefault(replica, []).append(slot)
                self.missing += 1
            else:
                self._seat(spare, slot)
                added.append(spare)
        if failed:
            self.on_hosts_changed(added, failed)
        for replica in sorted(touched):
            if replica not in self.empty:
                self._schedule_rejoin(replica)

    def _schedule_rejoin(self, replica: int) -> None:
        """The replica's hosts are whole: it catches up from its peers and rejoins after `rejoin` (a later
        failure in it starts the wait again)."""
        self._rejoin_generation[replica] += 1
        timer = self.env.timeout(self.rejoin)
        generation = self._rejoin_generation[replica]
        timer.callbacks.append(lambda _event, r=replica, g=generation: self._rejoined(r, g))

    def _rejoined(self, replica: int, generation: int) -> None:
        if generation != self._rejoin_generation[replica] or replica in self.empty:
            return
        now = self.env.now
        self.out.discard(replica)
        self.ledger.rejoins += 1
        if self.phase == RUNNING:
            self._marks.append((now, len(self.out)))
        elif self.phase == WAITING:  # every replica was out: the state comes back from storage
            self.ledger.waiting_s += now - self.phase_since
            self._begin_restart(self.restart_overhead)

    def _attempt_began(self, now: float) -> None:
        self._marks = [(now, len(self.out))]

    def _degraded_s(self, start: float, kept_until: float) -> float:
        """k/R of the training time (checkpoint writes excluded) of each stretch with k replicas out."""
        total = 0.0
        for i, (since, out) in enumerate(self._marks):
            until = self._marks[i + 1][0] if i + 1 < len(self._marks) else kept_until
            begin, end = max(since, start), min(until, kept_until)
            if out and end > begin:
                total += out / self.replicas * self._training_between(begin, end)
        return total

    def _slowdown_s(self, start: float, kept_until: float) -> float:
        """(1 - 1/f) of the training the replicas still in did at 1/f: (R - k)/R of the time with k of R out (the
        rest is degraded already)."""
        cuts = sorted({t for t, _ in self._marks} | {t for t, _ in self._slow_marks} | {start, kept_until})
        total = 0.0
        for begin, end in zip(cuts, cuts[1:], strict=False):
            begin, end = max(begin, start), min(end, kept_until)
            factor = _value_at(self._slow_marks, begin)
            if factor > 1.0 and end > begin:
                share = (self.replicas - _value_at(self._marks, begin)) / self.replicas
                total += (1.0 - 1.0 / factor) * share * self._training_between(begin, end)
        return total


def _value_at(marks: list[tuple[float, float]], t: float) -> float:
    """The value of a list of (since, value) marks, sorted by time, at t (the first one's before it)."""
    index = bisect.bisect_right(marks, t, key=lambda mark: mark[0]) - 1
    return marks[max(index, 0)][1]


# ----- hot_spare -------------------------------------------------------------------------------------------------


class HotSpareJob(RestartJob):
    strategy = "hot_spare"

    @classmethod
    def own_settings(cls, scenario: Scenario, wiring: JobWiring) -> dict:
        return {
            "standbys": wiring.standbys,
            "hot_swap_s": scenario.recovery.hot_swap,
            "take_standby": wiring.take_standby,
            "on_standby": wiring.on_standby,
        }

    @classmethod
    def standbys_wanted(cls, scenario: Scenario, spares_available: int) -> int:
        wanted = scenario.recovery.hot_spares
        if wanted > spares_available:
            raise ScenarioError(
                f"recovery.hot_spares: {wanted} warm standbys are taken from the spare pool, which holds "
                f"{spares_available} hosts (spares.hosts = {scenario['spares.hosts']}); raise spares.hosts to at "
                f"least {wanted}"
            )
        return wanted

    def __init__(
        self,
        env,
        job_id,
        hosts,
        *,
        standbys: Sequence[int],
        hot_swap_s: float,
        take_standby: Callable[[], int | None],
        on_standby: Callable[[int], None],
        **common,
    ) -> None:
        super().__init__(env, job_id, hosts, **common)
        self.hot_swap = hot_swap_s
        self.take_standby, self.on_standby = take_standby, on_standby
        self.ready: deque[int] = deque(standbys)  # initialised, idle, ready to swap in
        self.warming: set[int] = set()  # taken from the pool, initialising
        self.standby_since: dict[int, float] = dict.fromkeys(standbys, env.now)  # every standby: held since
        self.short = 0  # standbys to take once the spare pool has a host again
        self._all_hot = False  # whether the last swap found a ready standby for every failed host
        self._hot_taken = 0  # standbys the swap in progress has taken

    # ----- events from outside ----------------------------------------------------------------------------
    def interrupt(self, reason: str, failed_hosts: list[int], fault_s: float | None = None) -> bool:
        standbys = [h for h in failed_hosts if h in self.standby_since]
        for host in standbys:  # a standby failed: it goes to repair, the job trains on
            self._release(host)
            if host in self.warming:
                self.warming.discard(host)
            else:
                self.ready.remove(host)
        hit = False
        if not standbys or len(standbys) < len(failed_hosts):
            hit = super().interrupt(reason, [h for h in failed_hosts if h not in standbys], fault_s)
        self._replace_standbys(len(standbys))
        return hit

    def host_returned(self, host: int) -> bool:
        """A repaired host fills the job's empty slot first, then replaces a standby the pool could not."""
        if self.missing:
            return super().host_returned(host)
        if self.short:
            self.short -= 1
            self.on_standby(host)
            self._warm(host)
            return True
        return False

    def finish(self, horizon: float) -> None:
        super().finish(horizon)
        for since in self.standby_since.values():
            self.ledger.standby_host_s += horizon - since
        self.standby_since.clear()

    # ----- inside ---------------------------------------------------------------------------------------
    def _swap(self, failed: list[int]) -> None:
        self._hot_taken = 0
        super()._swap(failed)
        self._all_hot = self._hot_taken == len(failed)
        self._replace_standbys(self._hot_taken)

    def _replacement(self) -> int | None:
        """A warm standby when one is ready (counted: a swap of standbys only restarts in hot_swap), else a spare."""
        if self.ready:
            spare = self.ready.popleft()
            self._release(spare)
            self._hot_taken += 1
            return spare
        return self.take_spare()

    def _overhead_after(self, failed: list[int]) -> float:
        if failed and self._all_hot:
            self.ledger.hot_swaps += 1
            return self.hot_swap
        return self.restart_overhead

    def _release(self, host: int) -> None:
        """The host stops being a standby (swapped in, or failed): its idle time is counted."""
        self.ledger.standby_host_s += self.env.now - self.standby_since.pop(host)

    def _replace_standbys(self, count: int) -> None:
        for _ in range(count):
            host = self.take_standby()
            if host is None:
                self.short += 1
            else:
                self._warm(host)

    def _warm(self, host: int) -> None:
        """Initialise a new standby; it is ready after training.restart_overhead."""
        self.standby_since[host] = self.env.now
        self.warming.add(host)
        timer = self.env.timeout(self.restart_overhead)
        timer.callbacks.append(lambda _event, h=host: self._warmed(h))

    def _warmed(self, host: int) -> None:
        if host not in self.warming:
            return  # it failed while warming
        self.warming.discard(host)
        if self.missing:  # the job waits for a host: this one goes straight in
            self._release(host)
            super().host_returned(host)
        else:
            self.ready.append(host)


# Every strategy by its `training.recovery` name: a new one is a RestartJob subclass and a line here (its keys in
# engine/scenario/keys.py), as Ciw takes its routing and service disciplines by name.
STRATEGIES: dict[str, type[RestartJob]] = {
    cls.strategy: cls for cls in (RestartJob, InMemoryCheckpointJob, ReplicaDropJob, HotSpareJob)
}
