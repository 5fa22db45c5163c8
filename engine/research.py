"""Research jobs on the hosts outside the flagship job and its spares, modelled coarsely on purpose.

The research hosts are cut once into lanes of 1, 2, 4, ... `research.max_hosts` hosts (sizes drawn uniformly
over the powers of two, the way research job sizes spread over orders of magnitude). Each lane runs one job at a
time: log-normal durations of median `research.median_duration` (sigma 1, Goodput's choice), separated by
exponential idle gaps sized so each lane is busy `research.utilization` of the time. A failure on a lane host
ends its job (research jobs keep no checkpoints here: the attempt's work is lost) and the lane's next job waits
until every host of the lane is back from repair. This keeps a 54-day llama3-405b run to a few thousand jobs
(the issue's speed budget) while failures still hit research work where they land. The scheduler issue
replaces lanes with a real queue and gang placement.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import simpy

from engine.scenario import Scenario

DURATION_SIGMA = 1.0  # log-normal shape of research job durations (Goodput's choice)


@dataclass
class Lane:
    hosts: np.ndarray
    phase: str = "idle"  # idle (gap or waiting for hosts), running
    blocked: int = 0  # hosts of the lane in repair
    pending: bool = False  # a job is due but hosts are missing
    due_at: float = 0.0  # since when it is due
    job: int = -1  # index into ResearchLanes.jobs while running
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
    # jobs: [lane, submit, start, end, state, end_reason, lost]
    jobs: list[list] = field(default_factory=list)
    intervals: list[tuple[int, str, float, float, int]] = field(default_factory=list)  # lane, state, s, e, job

    def __post_init__(self) -> None:
        s = self.scenario
        self.median = s["research.median_duration"]
        mean_duration = self.median * math.exp(DURATION_SIGMA**2 / 2)
        u = s["research.utilization"]
        self.mean_gap = mean_duration * (1 - u) / u if u > 0 else math.inf
        self.horizon = s.duration_s
        if u <= 0 or self.research_hosts.size == 0:
            return
        top = int(math.log2(max(1, s["research.max_hosts"])))
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
    def failure(self, host: int, reason: str, takes_host: bool) -> int | None:
        """A failure on `host` now: the index of the job it ends, if any. `takes_host`: the host goes to repair."""
        i = self.lane_of.get(host)
        if i is None:
            return None
        lane = self.lanes[i]
        hit = None
        if lane.phase == "running":
            hit = lane.job
            self._end(i, reason, failed=True)
            lane.pending, lane.due_at = True, self.env.now  # the next job waits (a failed one is not retried)
        if takes_host:
            lane.blocked += 1
        elif lane.pending and lane.blocked == 0:
            self._start(i, submit=lane.due_at)
        return hit

    def running_on(self, host: int) -> bool:
        i = self.lane_of.get(host)
        return i is not None and self.lanes[i].phase == "running"

    def host_returned(self, host: int) -> None:
        i = self.lane_of.get(host)
        if i is None:  # no lanes at all (research.utilization = 0): the host just idles
            return
        lane = self.lanes[i]
        lane.blocked -= 1
        if lane.blocked == 0 and lane.pending:
            self._start(i, submit=lane.due_at)

    def finish(self, horizon: float) -> None:
        for i, lane in enumerate(self.lanes):
            if lane.phase == "running":
                job = self.jobs[lane.job]
                job[3], job[4], job[5] = horizon, "running", "end_of_run"
            self.intervals.append((i, "running" if lane.phase == "running" else "healthy", lane.since, horizon,
                                   lane.job if lane.phase == "running" else -1))

    # ----- inside ---------------------------------------------------------------------------------------
    def _after(self, i: int, delay: float, then) -> None:
        lane = self.lanes[i]
        lane.generation += 1
        timer = self.env.timeout(delay)
        timer.callbacks.append(lambda _e, g=lane.generation: then(i) if g == self.lanes[i].generation else None)

    def _due(self, i: int) -> None:
        lane = self.lanes[i]
        if lane.blocked:
            lane.pending, lane.due_at = True, self.env.now
        else:
            self._start(i, submit=self.env.now)

    def _start(self, i: int, submit: float) -> None:
        lane, now = self.lanes[i], self.env.now
        if now > lane.since:
            self.intervals.append((i, "healthy", lane.since, now, -1))
        lane.phase, lane.pending, lane.since, lane.job = "running", False, now, len(self.jobs)
        self.jobs.append([i, submit, now, math.nan, "running", "", 0.0])
        self._after(i, self.median * math.exp(DURATION_SIGMA * self.rng.standard_normal()), self._completed)

    def _completed(self, i: int) -> None:
        self._end(i, "completed", failed=False)
        self._after(i, self.rng.exponential(self.mean_gap), self._due)

    def _end(self, i: int, reason: str, failed: bool) -> None:
        lane, now = self.lanes[i], self.env.now
        job = self.jobs[lane.job]
        job[3], job[4], job[5] = now, "failed" if failed else "completed", reason
        job[6] = now - job[2] if failed else 0.0
        self.intervals.append((i, "running", lane.since, now, lane.job))
        lane.phase, lane.since = "idle", now
        lane.generation += 1  # the job's completion timer no longer applies
