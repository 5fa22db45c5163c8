"""The flagship job: trains, checkpoints, fails, restarts, waits for spares.

An attempt is a stretch of time the job trains on a full set of hosts. Within it the job alternates
`training.checkpoint_interval` of compute with a checkpoint write that blocks for `checkpoint_write_s`
(given outright, or size per GPU x GPUs / shared storage bandwidth: Tectonic, Llama 3 paper §3.3), so
checkpoint k of an attempt starting at `start` completes at start + k (interval + write). Checkpoints are
therefore computed, not simulated one event each: a 54-day run has ~15,000 of them and the event loop only
sees failures.

A failure detected at t whose fault happened at f <= t loses the work since the last checkpoint completed
before f (for a late-detected fault, silent data corruption or a hung collective, the checkpoints written in
between are suspect and the job "ran" for nothing). The failed hosts are swapped for hot spares; with too few
spares the job waits for repaired hosts. Then it pays `training.restart_overhead` (detection, rescheduling,
initialisation, restore) and a new attempt begins. A failure during a restart restarts the restart.
Planned interruptions stop the job gracefully (no lost work) and restart it, as does swapping out a fail-slow host
(slow.policy = swap or drain, engine.sim.slow).

A synchronous job runs at the pace of its slowest host: while hosts of the job have fail-slow episodes
(`slow_changed`), it trains at 1/f of full speed, f the largest factor among them. The training lost to that is
counted analytically like the checkpoints: (1 - 1/f) of the training time of each stretch at f (JobLedger.slowdown_s),
and stretch by stretch against the binding host, the slowest (ties: the one slow the longest), in
JobLedger.slowdown_blame, from which engine.sim.slow.episode_costs gives each episode its cost.

State changes are callbacks on SimPy timeouts tagged with a generation number, so an interrupted restart's
timer is simply ignored when it fires.

This is the `restart` strategy (training.recovery). The others (engine.sim.recovery) subclass it and change
where a failure resumes from (`_resume_point`), how failed hosts are replaced (`_swap`), how long the
recovery takes (`_overhead_after`) and what share of a running attempt trains (`_degraded_s`).
"""

import math
from collections.abc import Callable

import numpy as np
import simpy

from engine.sim.records import Attempt, JobLedger  # the job's books: records the simulator hands on

RUNNING, RESTARTING, WAITING, DONE = "running", "restarting", "waiting", "done"
PLANNED = "planned_maintenance"  # a graceful stop: the job saves its state first and loses no work
SLOW_SWAP = "fail_slow_swap"  # a detected fail-slow host is swapped out (slow.policy = swap): a graceful stop
SLOW_DRAIN = "fail_slow_drain"  # a detected fail-slow host leaves at the job's next interruption (drain)
GRACEFUL = (PLANNED, SLOW_SWAP, SLOW_DRAIN)  # stops that lose no work
WORK_TOLERANCE_S = 1e-6  # training.work counts as done within this (float sums of attempts)


class FlagshipJob:
    strategy = "restart"

    def __init__(
        self,
        env: simpy.Environment,
        job_id: str,
        hosts: list[int],
        *,
        checkpoint_interval_s: float,
        checkpoint_write_s: float,
        restart_overhead_s: float,
        take_spare: Callable[[], int | None],
        on_hosts_changed: Callable[[list[int], list[int]], None],
        work_s: float | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        self.env, self.job_id = env, job_id
        # The job's host slots (a rank's place): a replacement takes the failed host's slot. An array, so an
        # attempt's host list is one copy even for a 12,288-host job; -1 marks a slot waiting for a host.
        self.slots = np.array(hosts, dtype=np.int32)
        self.slot_of = {h: i for i, h in enumerate(hosts)}
        self.free_slots: list[int] = []
        self.checkpoint_interval, self.checkpoint_write, self.restart_overhead = (
            checkpoint_interval_s,
            checkpoint_write_s,
            restart_overhead_s,
        )
        self.take_spare, self.on_hosts_changed = take_spare, on_hosts_changed
        self.ledger = JobLedger()
        self.phase = RUNNING
        self.attempt, self.attempt_start, self.phase_since = 1, 0.0, 0.0
        self.missing = 0
        self._generation = 0
        self._recovery_s = 0.0  # length of the recovery under way (while RESTARTING)
        self._handover_due = 0.0  # a taken host's hand-over, to add to the next recovery (hand_over)
        self._handover_s = 0.0  # the hand-over inside the recovery under way
        # fail-slow episodes (engine.sim.slow): job host -> its slowdown factor while slow; (since, the job's
        # factor) through the running attempt
        self.slow_hosts: dict[int, float] = {}
        self._slow_marks: list[tuple[float, float]] = [(0.0, 1.0)]
        # (since, the binding host) through the running attempt, for JobLedger.slowdown_blame
        self._blame_marks: list[tuple[float, int | None]] = [(0.0, None)]
        # training.work: the training the job needs; it is done (on_done) once it has trained that long
        self.work_s, self.on_done = work_s, on_done
        self._watch_work()

    # ----- events from outside ------------------------------------------------------------------------
    def interrupt(self, reason: str, failed_hosts: list[int], fault_s: float | None = None) -> bool:
        """A failure (or planned stop) now; returns whether it interrupted the job (running or restarting).

        `failed_hosts` leave the job (for repair); `fault_s` is when the fault happened, if before now."""
        now = self.env.now
        hit = self.phase in (RUNNING, RESTARTING)
        mine = [h for h in failed_hosts if h in self.slot_of]
        if self.phase == RUNNING:
            lost_from = (
                now if reason in GRACEFUL else self._resume_point(now if fault_s is None else fault_s, mine)
            )
            self._close_attempt(now, reason, lost_from)
        elif self.phase == RESTARTING:
            self.ledger.restart_s += now - self.phase_since
        if mine:
            self._swap(mine)
        if self.phase == WAITING:
            return hit
        if self.missing:
            self.phase, self.phase_since = WAITING, now
        else:
            self._begin_restart(self._overhead_after(mine))
        return hit

    def slow_changed(self, host: int, factor: float | None) -> None:
        """`host` of the job runs at 1/`factor` of its speed from now (None: at full speed again, or it left)."""
        if factor is None:
            self.slow_hosts.pop(host, None)
        else:
            self.slow_hosts[host] = factor
        pace = self._slow_factor()
        if self.phase == RUNNING and pace != self._slow_marks[-1][1]:
            self._slow_marks.append((self.env.now, pace))
        binding = self._binding_host()
        # a new stretch when the binding host changes, or when it is the one told (its episode may have changed)
        if self.phase == RUNNING and (binding == host or binding != self._blame_marks[-1][1]):
            self._blame_marks.append((self.env.now, binding))

    def _slow_factor(self) -> float:
        """The job's pace: that of its slowest host (1.0: none is slow)."""
        return max(self.slow_hosts.values(), default=1.0)

    def _binding_host(self) -> int | None:
        """The host that sets the job's pace: the slowest; of equals, the one slow the longest (the first in
        slow_hosts, which keeps a host's place while it stays slow). None: none is slow."""
        return max(self.slow_hosts, key=self.slow_hosts.__getitem__, default=None)

    def host_returned(self, host: int) -> bool:
        """A repaired host; taken (True) if the job is waiting for hosts."""
        if self.missing == 0:
            return False
        self._seat(host, self.free_slots.pop())
        self.on_hosts_changed([host], [])
        self.missing -= 1
        if self.missing == 0 and self.phase == WAITING:
            self.ledger.waiting_s += self.env.now - self.phase_since
            self._begin_restart(self.restart_overhead)
        return True

    def finish(self, horizon: float) -> None:
        """Close the books at the end of the run."""
        if self.phase == DONE:
            return
        if self.phase == RUNNING:
            self._close_attempt(horizon, "end_of_run", horizon)
        elif self.phase == RESTARTING:
            self.ledger.restart_s += horizon - self.phase_since
        else:
            self.ledger.waiting_s += horizon - self.phase_since

    # ----- what a strategy changes (engine.sim.recovery) ------------------------------------------------
    def _resume_point(self, fault_s: float, failed: list[int]) -> float:
        """Where training resumes after a fault at `fault_s` that took the job's hosts `failed`: the last
        storage checkpoint completed before the fault."""
        return self._last_good(fault_s)

    def _overhead_after(self, failed: list[int]) -> float:
        """How long the recovery from an interruption that took `failed` (after `_swap`) lasts."""
        return self.restart_overhead

    def _degraded_s(self, start: float, kept_until: float) -> float:
        """Full-job seconds of [start, kept_until) of the running attempt lost to missing replicas: none here."""
        return 0.0

    def _attempt_began(self, now: float) -> None:
        """A new attempt trains from `now`."""

    def _slowdown_s(self, start: float, kept_until: float) -> float:
        """Full-job seconds of [start, kept_until) of the running attempt lost to fail-slow hosts: (1 - 1/f) of the
        training time (checkpoint writes excluded) of each stretch the job ran at 1/f."""
        total = 0.0
        for i, (since, factor) in enumerate(self._slow_marks):
            until = self._slow_marks[i + 1][0] if i + 1 < len(self._slow_marks) else kept_until
            begin, end = max(since, start), min(until, kept_until)
            if factor > 1.0 and end > begin:
                total += (1.0 - 1.0 / factor) * self._training_between(begin, end)
        return total

    # ----- inside ---------------------------------------------------------------------------------------
    def _cycle(self) -> float:
        return self.checkpoint_interval + self.checkpoint_write

    def _written_by(self, t: float) -> float:
        """Seconds of the running attempt spent writing checkpoints before t (a write under way included)."""
        elapsed, cycle = t - self.attempt_start, self._cycle()
        completed = math.floor(elapsed / cycle)  # checkpoints completed
        writing_now = max(0.0, elapsed - completed * cycle - self.checkpoint_interval)  # a write under way
        return completed * self.checkpoint_write + writing_now

    def _training_between(self, begin: float, end: float) -> float:
        """Seconds of [begin, end) of the running attempt that trained (not writing checkpoints)."""
        return (end - begin) - (self._written_by(end) - self._written_by(begin))

    def _last_good(self, t: float) -> float:
        """Completion time of the last checkpoint finished by t in this attempt (its start if none)."""
        start = self.attempt_start
        return start + math.floor(max(t - start, 0.0) / self._cycle()) * self._cycle()

    def _close_attempt(self, end: float, reason: str, good_until: float) -> None:
        start, cycle = self.attempt_start, self._cycle()
        completed = math.floor((end - start) / cycle)  # checkpoints completed
        kept = (
            math.floor((good_until - start) / cycle + 1e-9) if good_until < end else completed
        )  # checkpoints kept (good_until is a completion)
        if completed:
            self.ledger.checkpoint_starts.append(
                start + np.arange(1, completed + 1) * cycle - self.checkpoint_write
            )
        lost = end - good_until if good_until < end else 0.0
        degraded = self._degraded_s(start, good_until if good_until < end else end)
        slowed = self._slowdown_s(start, good_until if good_until < end else end)
        self.ledger.lost_work_s += lost
        self.ledger.checkpoint_s += kept * self.checkpoint_write
        self.ledger.degraded_s += degraded
        self.ledger.slowdown_s += slowed
        self._blame(start, end, good_until if good_until < end else end)
        self.ledger.productive_s += (end - start) - lost - kept * self.checkpoint_write - degraded - slowed
        # a slot waiting for a host (-1; only a replica_drop job trains with one) is no host of the attempt
        hosts = self.slots.copy() if self.missing == 0 else self.slots[self.slots >= 0]
        self.ledger.attempts.append(Attempt(self.attempt, start, end, reason, lost, hosts))
        self.attempt += 1

    def _blame(self, start: float, end: float, kept_until: float) -> None:
        """JobLedger.slowdown_blame for the attempt [start, end): each stretch with a binding host, and the slowdown
        of its part up to `kept_until` (0 past it: that training was lost, and lost_work_s counts it)."""
        marks = self._blame_marks
        for i, (since, host) in enumerate(marks):
            until = marks[i + 1][0] if i + 1 < len(marks) else end
            begin, stop = max(since, start), min(until, end)
            if host is not None and stop > begin:
                seconds = self._slowdown_s(begin, min(stop, kept_until)) if kept_until > begin else 0.0
                self.ledger.slowdown_blame.append((host, begin, seconds))

    @property
    def hosts(self) -> list[int]:
        return [int(h) for h in self.slots if h >= 0]

    def _seat(self, host: int, slot: int) -> None:
        self.slots[slot] = host
        self.slot_of[host] = slot

    def _swap(self, failed: list[int]) -> None:
        added = []
        for host in failed:
            slot = self.slot_of.pop(host)
            spare = self._replacement()
            if spare is None:
                self._leave_empty(slot)
            else:
                self._seat(spare, slot)
                added.append(spare)
        self.on_hosts_changed(added, failed)

    def _replacement(self) -> int | None:
        """The host that takes a failed host's place: a spare from the pool (None: none is free)."""
        return self.take_spare()

    def _leave_empty(self, slot: int) -> None:
        """No host for `slot` now: it waits for a repaired one (host_returned)."""
        self.slots[slot] = -1
        self.free_slots.append(slot)
        self.missing += 1

    def hand_over(self, seconds: float) -> None:
        """A host taken for the job needs `seconds` before the job can use it (a preempted research job's hand
        over): the recovery being set up waits that long more, booked as waiting for spares."""
        self._handover_due = max(self._handover_due, seconds)

    def _begin_restart(self, overhead: float) -> None:
        """Recover for `overhead` seconds (plus any hand-over due); a recovery already under way starts again, at
        least as long."""
        handover, self._handover_due = self._handover_due, 0.0
        if self.phase == RESTARTING:
            overhead = max(overhead, self._recovery_s - self._handover_s)
            handover = max(handover, self._handover_s)
        self._handover_s = handover
        overhead += handover
        self.phase, self.phase_since = RESTARTING, self.env.now
        self._recovery_s = overhead
        self._generation += 1
        timer = self.env.timeout(overhead)
        timer.callbacks.append(lambda _event, generation=self._generation: self._restarted(generation))

    def _restarted(self, generation: int) -> None:
        if generation != self._generation or self.phase != RESTARTING:
            return  # a later failure restarted the restart
        now = self.env.now
        waited = min(self._handover_s, now - self.phase_since)  # a preempted host's hand-over: waiting for it
        self.ledger.waiting_s += waited
        self.ledger.restart_s += now - self.phase_since - waited
        self._handover_s = 0.0
        self.ledger.resumed_at.append(now)
        self.phase, self.attempt_start = RUNNING, now
        self._slow_marks = [(now, self._slow_factor())]
        self._blame_marks = [(now, self._binding_host())]
        self._attempt_began(now)
        self._watch_work()

    # ----- time to train (training.work) -----------------------------------------------------------------
    def _watch_work(self) -> None:
        """At the start of an attempt: a timer for when the job's work would be done if nothing stops it."""
        if self.work_s is None:
            return
        left = self.work_s - self.ledger.productive_s  # the attempt has trained nothing yet
        timer = self.env.timeout(self._time_to_train(left))
        timer.callbacks.append(lambda _event, attempt=self.attempt: self._maybe_done(attempt))

    def _maybe_done(self, attempt: int) -> None:
        if attempt != self.attempt or self.phase != RUNNING:
            return  # the attempt it was set for was interrupted: the next attempt sets its own
        left = self.work_s - self.ledger.productive_s - self._trained_so_far()
        if left > WORK_TOLERANCE_S:  # it trained slower than full speed (replicas out, fail-slow): not yet
            timer = self.env.timeout(self._time_to_train(left))
            timer.callbacks.append(lambda _event: self._maybe_done(attempt))
            return
        now = self.env.now
        self._close_attempt(now, "completed", now)
        self.phase, self.phase_since = DONE, now
        self.ledger.finished_s = now
        if self.on_done is not None:
            self.on_done()

    def _trained_so_far(self) -> float:
        """Training the running attempt has done by now (what closing it now would count as productive)."""
        if self.phase != RUNNING:
            return 0.0
        now, start = self.env.now, self.attempt_start
        completed = math.floor((now - start) / self._cycle())
        lost = self._degraded_s(start, now) + self._slowdown_s(start, now)
        return (now - start) - completed * self.checkpoint_write - lost

    def _time_to_train(self, seconds: float) -> float:
        """Wall clock from now in which a running attempt at full speed trains `seconds` more, its checkpoint
        writes included (an attempt's checkpoint k completes at start + k (interval + write))."""
        if seconds <= 0:
            return 0.0
        elapsed = self.env.now - self.attempt_start if self.phase == RUNNING else 0.0
        cycles, into = divmod(elapsed, self._cycle())
        done = cycles * self.checkpoint_interval + min(into, self.checkpoint_interval)  # trained this attempt
        target = done + seconds
        whole = (
            math.ceil(target / self.checkpoint_interval) - 1
        )  # checkpoints written before the work is done
        return max(target + whole * self.checkpoint_write - elapsed, 0.0)
