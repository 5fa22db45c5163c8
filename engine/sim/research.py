"""Research jobs on the hosts outside the flagship job and its spares, modelled coarsely on purpose.

The research hosts are cut once into lanes of 1, 2, 4, ... `research.max_hosts` hosts (sizes drawn uniformly
over the powers of two, the way research job sizes spread over orders of magnitude). Each lane runs one job at a
time: log-normal durations of median `research.median_duration` (sigma 1, Goodput's choice), separated by
exponential idle gaps sized so each lane is busy `research.utilization` of the time. A failure on a lane host
ends its job (research jobs keep no checkpoints here: the attempt's work is lost) and the lane's next job waits
until every host of the lane is back from repair. This keeps a 54-day llama3-405b run to a few thousand jobs
(the issue's speed budget) while failures still hit research work where they land. The scheduler issue
replaces lanes with a real queue and gang placement.

Lanes keep their own timers (a heap) instead of SimPy timeouts, and run them lazily: nothing outside reads a
lane between the calls below, so each call (and `finish`) first plays the timers due by then, in the same time
order SimPy would (a timer at exactly the time of an outside event counts as earlier: SimPy breaks such ties
by scheduling order, and lane timers are set long before). This keeps the random draws and so every result
identical to a SimPy-driven lane, at a fraction of the cost (thousands of jobs a run: the sweep's budget).
"""

import heapq
import math
from dataclasses import dataclass, field

import numpy as np
import simpy

from engine.scenario import Scenario
from engine.sim.records import NONE, LaneInterval, ResearchJob

DURATION_SIGMA = 1.0  # log-normal shape of research job durations (Goodput's choice)


@dataclass
class Lane:
    hosts: np.ndarray
    phase: str = "idle"  # idle (gap or waiting for hosts), running
    blocked: int = 0  # hosts of the lane in repair
    pending: bool = False  # a job is due but hosts are missing
    due_at: float = 0.0  # since when it is due
    job: int = NONE  # index into ResearchLanes.jobs while running
    generation: int = 0
    since: float = 0.0


@dataclass
class ResearchLanes:
    env: simpy.Environment
    scenario: Scenario
    rng: np.random.Generator
    research_hosts: np.ndarray
    lanes: list[Lane] = field(default_factory=list)
    lane_of: dict[int, int] = field(default_factory=dict)
    jobs: list[ResearchJob] = field(default_factory=list)
    intervals: list[LaneInterval] = field(default_factory=list)
    # pending lane timers: (time, order set, lane, lane generation when set, what to do then)
    timers: list[tuple] = field(default_factory=list)
    now: float = 0.0  # the lanes' clock: the time of the timer being played, else of the outside call

    def __post_init__(self) -> None:
        s = self.scenario
        self._order = 0
        self.now = self.env.now
        self.median = s.research.median_duration
        mean_duration = self.median * math.exp(DURATION_SIGMA**2 / 2)
        u = s.research.utilization
        self.mean_gap = mean_duration * (1 - u) / u if u > 0 else math.inf
        self.horizon = s.duration_s
        if u <= 0 or self.research_hosts.size == 0:
            return
        top = int(math.log2(max(1, s.research.max_hosts)))
        sizes = 2 ** self.rng.integers(0, top + 1, self.research_hosts.size)  # more than enough draws
        ends = np.cumsum(sizes)
        n_lanes = int(np.searchsorted(ends, self.research_hosts.size)) + 1
        cuts = np.minimum(ends[:n_lanes], self.research_hosts.size)
        for hosts in np.split(self.research_hosts, cuts[:-1]):
            if hosts.size == 0:
                continue
            lane = Lane(hosts)
            self.lanes.append(lane)
            for h in hosts.tolist():
                self.lane_of[h] = len(self.lanes) - 1
            # in steady state a lane is busy with probability u at t = 0
            if self.rng.random() < u:
                self._start(len(self.lanes) - 1, submit=0.0)
            else:
                self._after(len(self.lanes) - 1, self.rng.exponential(self.mean_gap), self._due)

    # ----- events from outside ------------------------------------------------------------------------
    def failure(self, host: int, reason: str, takes_host: bool) -> ResearchJob | None:
        """A failure on `host` now: the job it ends, if any. `takes_host`: the host goes to repair."""
        i = self.lane_of.get(host)
        if i is None:
            return None
        self._advance(self.env.now, inclusive=True)
        lane = self.lanes[i]
        hit = None
        if lane.phase == "running":
            hit = self.jobs[lane.job]
            self._end(i, reason, failed=True)
            lane.pending, lane.due_at = True, self.now  # the next job waits (a failed one is not retried)
        if takes_host:
            lane.blocked += 1
        elif lane.pending and lane.blocked == 0:
            self._start(i, submit=lane.due_at)
        return hit

    def running_on(self, host: int) -> bool:
        i = self.lane_of.get(host)
        if i is None:
            return False
        self._advance(self.env.now, inclusive=True)
        return self.lanes[i].phase == "running"

    def host_returned(self, host: int) -> None:
        i = self.lane_of.get(host)
        if i is None:  # no lanes at all (research.utilization = 0): the host just idles
            return
        self._advance(self.env.now, inclusive=True)
        lane = self.lanes[i]
        lane.blocked -= 1
        if lane.blocked == 0 and lane.pending:
            self._start(i, submit=lane.due_at)

    def finish(self, horizon: float) -> None:
        self._advance(
            horizon, inclusive=False
        )  # SimPy's run(until=horizon) leaves events at horizon unplayed
        for i, lane in enumerate(self.lanes):
            if lane.phase == "running":
                job = self.jobs[lane.job]
                job.end_s, job.state, job.end_reason = horizon, "running", "end_of_run"
            running = lane.phase == "running"
            self.intervals.append(
                LaneInterval(
                    i, "running" if running else "healthy", lane.since, horizon, lane.job if running else NONE
                )
            )

    # ----- inside ---------------------------------------------------------------------------------------
    def _advance(self, until: float, inclusive: bool) -> None:
        """Play the lane timers due before `until` (or at it, when `inclusive`), oldest first."""
        timers = self.timers
        while timers and (timers[0][0] < until or (inclusive and timers[0][0] == until)):
            when, _, i, generation, then = heapq.heappop(timers)
            if generation == self.lanes[i].generation:  # else a failure has cancelled it
                self.now = when
                then(i)
        self.now = until

    def _after(self, i: int, delay: float, then) -> None:
        lane = self.lanes[i]
        lane.generation += 1
        self._order += 1
        heapq.heappush(self.timers, (self.now + delay, self._order, i, lane.generation, then))

    def _due(self, i: int) -> None:
        lane = self.lanes[i]
        if lane.blocked:
            lane.pending, lane.due_at = True, self.now
        else:
            self._start(i, submit=self.now)

    def _start(self, i: int, submit: float) -> None:
        lane, now = self.lanes[i], self.now
        if now > lane.since:
            self.intervals.append(LaneInterval(i, "healthy", lane.since, now, NONE))
        lane.phase, lane.pending, lane.since, lane.job = "running", False, now, len(self.jobs)
        self.jobs.append(
            ResearchJob(index=lane.job, lane=i, hosts=lane.hosts.size, submit_s=submit, start_s=now)
        )
        self._after(i, self.median * math.exp(DURATION_SIGMA * self.rng.standard_normal()), self._completed)

    def _completed(self, i: int) -> None:
        self._end(i, "completed", failed=False)
        self._after(i, self.rng.exponential(self.mean_gap), self._due)

    def _end(self, i: int, reason: str, failed: bool) -> None:
        lane, now = self.lanes[i], self.now
        job = self.jobs[lane.job]
        job.end_s, job.end_reason = now, reason
        job.state = "preempted" if reason == "preempted" else "failed" if failed else "completed"
        job.lost_work_s = now - job.start_s if failed else 0.0
        self.intervals.append(LaneInterval(i, "running", lane.since, now, lane.job))
        lane.phase, lane.since = "idle", now
        lane.generation += 1  # the job's completion timer no longer applies
