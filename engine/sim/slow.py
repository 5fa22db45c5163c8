"""Fail-slow episodes: hosts that keep working, slowly (`slow.*` keys).

Each cause (SLOW_CAUSES: GPU thermal throttling, GPU power capping, a slow host, a degraded NIC or cable) strikes
every host as a Poisson process of `slow.<cause>_rate` per 1,000 host-days; thermal throttling is likelier in
the day's warm hours (`slow.gpu_thermal_daily_swing`, drawn by thinning against simulation.start's clock). An
episode lasts a log-normal time of mean `slow.<cause>_duration` and sigma DURATION_SIGMA (FALCON, arXiv
2410.12588: tens of seconds to nearly ten hours), during which its host runs at 1/`slow.<cause>_factor` of its
speed. Episodes are drawn up front, each cause from its own child of the run's Stream.SLOW, so no other draw
shifts and a cause's rate moves no other cause's episodes.

The flagship job trains at the pace of its slowest host (engine.sim.training.FlagshipJob.slow_changed); research
jobs are not modelled as slowed. `slow.policy` says what happens once an episode is detected, `slow.detect_after`
into it, on a host of the flagship job: ignore (nothing), swap (the job stops gracefully, the host is swapped
for a spare and goes to repair: one restart, no work lost) or drain (the host leaves at the job's next
interruption). A repair ends the host's episode: the part is fixed.

What an episode cost (`episode_costs`, the slow_episodes table's cost_gpu_hours): the flagship job's slowdown
(JobLedger.slowdown_s) over the stretches in which the episode's factor was the binding one, the largest among
the job's hosts, in GPU-hours (the job's GPUs x hours). Ties go to the earliest: among hosts, to the host slow the
longest without a break (the job keeps its binding host until another is strictly slower); on a host, to the
episode that started first. So every second of slowdown is blamed on exactly one episode and the costs sum to the
ledger's slowdown bucket. An episode that never bound the job while it trained has no cost (None).
"""

import bisect
import math
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import simpy

from engine.scenario import Scenario
from engine.sim.records import SlowEpisode
from engine.sim.streams import Stream
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

if TYPE_CHECKING:
    from engine.sim.records import FlagshipRecord

SLOW_CAUSES: tuple[str, ...] = ("gpu_thermal", "gpu_power", "host", "network")
GPU_CAUSES: tuple[str, ...] = ("gpu_thermal", "gpu_power")  # the causes that hold one GPU down (gpu_index)
DURATION_SIGMA = 1.5  # log-normal sigma of a length: a 1 h mean spans ~40 s to ~10 h (1st-99th pct)
WARMEST_HOUR = 15.0  # thermal throttling's daily peak, local time (Goodput's assumption)
START, DETECT, END = 0, 1, 2  # the events of an episode, in the order they are played at the same instant


def slowness_on(scenario: Scenario) -> bool:
    """Whether the scenario draws any fail-slow episode (a cause with a rate above 0)."""
    return any(getattr(scenario.slow, f"{cause}_rate") > 0 for cause in SLOW_CAUSES)


def cause_generator(seed: int, index: int) -> np.random.Generator:
    """The cause's own child of the run's Stream.SLOW (SLOW_CAUSES order)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(int(Stream.SLOW), index)))


def draw_episodes(scenario: Scenario, n_hosts: int) -> list[SlowEpisode]:
    """Every fail-slow episode of the run, by start time (ties in cause order)."""
    episodes: list[SlowEpisode] = []
    for index, cause in enumerate(SLOW_CAUSES):
        episodes += _draw_cause(scenario, cause, n_hosts, cause_generator(scenario.simulation.seed, index))
    episodes.sort(key=lambda e: e.start_s)
    return episodes


def _draw_cause(scenario: Scenario, cause: str, n_hosts: int, rng: np.random.Generator) -> list[SlowEpisode]:
    slow = scenario.slow
    rate, mean, factor = (getattr(slow, f"{cause}_{part}") for part in ("rate", "duration", "factor"))
    horizon = scenario.duration_s
    swing = slow.gpu_thermal_daily_swing if cause == "gpu_thermal" else 0.0
    expected = rate / 1000.0 * n_hosts * horizon / SECONDS_PER_DAY * (1.0 + swing)  # the thinning's envelope
    count = int(rng.poisson(expected)) if expected > 0 else 0
    starts = rng.uniform(0.0, horizon, count)
    hosts = rng.integers(0, max(n_hosts, 1), count)
    mu = math.log(mean) - DURATION_SIGMA**2 / 2  # a log-normal of mean `mean`
    lengths = rng.lognormal(mu, DURATION_SIGMA, count)
    keep = rng.random(count) * (1.0 + swing) < 1.0 + swing * _warmth(starts, scenario.simulation.start)
    gpu = rng.integers(0, scenario.cluster.gpus_per_host, count)  # the GPU a GPU cause holds down
    return [
        SlowEpisode(int(h), float(t), float(t + d), cause, float(factor), int(g))
        for h, t, d, g in zip(hosts[keep], starts[keep], lengths[keep], gpu[keep], strict=True)
    ]


def _warmth(t: np.ndarray, start: datetime) -> np.ndarray:
    """cos(2 pi (hour - 15) / 24) at run times t: 1 at the day's warmest hour, -1 twelve hours off."""
    hour0 = start.hour + start.minute / 60 + start.second / SECONDS_PER_HOUR
    hour = (hour0 + t / SECONDS_PER_HOUR) % 24.0
    return np.cos(2 * np.pi * (hour - WARMEST_HOUR) / 24.0)


def episode_costs(episodes: Sequence[SlowEpisode], job: "FlagshipRecord | None") -> list[float | None]:
    """GPU-hours of the flagship job's slowdown each episode cost (module docstring), None for an episode that never
    bound the job while it trained: each stretch of JobLedger.slowdown_blame goes to the episode that was binding
    on its host when the stretch began (SlowEpisode.bound)."""
    costs: list[float | None] = [None] * len(episodes)
    if job is None or not job.ledger.slowdown_blame:
        return costs
    spans: dict[int, list[tuple[float, float, int]]] = {}
    for index, episode in enumerate(episodes):
        spans.setdefault(episode.host, []).extend((since, until, index) for since, until in episode.bound)
    for host_spans in spans.values():
        host_spans.sort()
    per_hour = job.gpus / SECONDS_PER_HOUR
    for host, begin, seconds in job.ledger.slowdown_blame:
        host_spans = spans.get(host, [])
        # a host's spans do not overlap, and an empty one sorts before the span that opened at the same instant
        at = bisect.bisect_right(host_spans, (begin, math.inf, math.inf)) - 1
        if at < 0 or not host_spans[at][0] <= begin < host_spans[at][1]:
            continue  # cannot happen: a job host is slow only under an episode
        index = host_spans[at][2]
        costs[index] = (costs[index] or 0.0) + seconds * per_hour
    return costs


class FailSlow:
    """Plays the episodes against the cluster: which hosts run slow now, and what slow.policy does about it.

    `in_job(host)` says whether a host trains in the flagship job; `slow_changed(host, factor)` tells the job;
    `swap_out(host, reason)` takes a job host out for repair with a graceful stop of the job."""

    def __init__(
        self,
        env: simpy.Environment,
        scenario: Scenario,
        episodes: list[SlowEpisode],
        *,
        in_job: Callable[[int], bool],
        slow_changed: Callable[[int, float | None], None],
        swap_out: Callable[[list[int], str], None],
    ) -> None:
        self.env, self.episodes = env, episodes
        self.policy, self.detect_after = scenario.slow.policy, scenario.slow.detect_after
        self.in_job, self.slow_changed, self.swap_out = in_job, slow_changed, swap_out
        self.active: dict[int, dict[int, float]] = {}  # host -> {episode index: factor} under way
        self.to_drain: dict[int, int] = {}  # job host -> the episode that marked it for draining
        self.binding: dict[int, int] = {}  # slow host -> its binding episode now (SlowEpisode.bound)

    def factor(self, host: int) -> float | None:
        """The host's slowdown now (its worst episode under way), None when it runs at full speed."""
        under_way = self.active.get(host)
        return max(under_way.values()) if under_way else None

    def process(self):
        """The SimPy process: each episode's start, detection (swap, drain) and end, in time order."""
        events = [(e.start_s, START, i) for i, e in enumerate(self.episodes)]
        events += [(e.end_s, END, i) for i, e in enumerate(self.episodes)]
        if self.policy != "ignore":
            events += [
                (e.start_s + self.detect_after, DETECT, i)
                for i, e in enumerate(self.episodes)
                if self.detect_after < e.end_s - e.start_s
            ]
        for t, kind, index in sorted(events):
            yield self.env.timeout(t - self.env.now)
            (self._started, self._detected, self._ended)[kind](index)

    def _started(self, index: int) -> None:
        episode = self.episodes[index]
        self.active.setdefault(episode.host, {})[index] = episode.factor
        self._rebind(episode.host)
        self._tell(episode.host)

    def _ended(self, index: int) -> None:
        host = self.episodes[index].host
        under_way = self.active.get(host)
        if under_way is None or under_way.pop(index, None) is None:
            return  # a repair ended it already
        if not under_way:
            del self.active[host]
        self._rebind(host)
        self._tell(host)

    def _detected(self, index: int) -> None:
        episode = self.episodes[index]
        if index not in self.active.get(episode.host, {}) or not self.in_job(episode.host):
            return  # repaired already, or not the flagship job's: nothing to do
        episode.detected_s = self.env.now
        if self.policy == "swap":
            episode.action, episode.left_s = "swap", self.env.now
            self.swap_out([episode.host], "fail_slow_swap")
        elif episode.host not in self.to_drain:
            self.to_drain[episode.host] = index

    def _rebind(self, host: int) -> None:
        """The host's binding episode (largest factor, then earliest start) may have changed: close the old one's
        span in SlowEpisode.bound and open the new one's."""
        under_way = self.active.get(host) or {}
        new = min(under_way, key=lambda i: (-under_way[i], i)) if under_way else None
        old = self.binding.get(host)
        if new == old:
            return
        now = self.env.now
        if old is not None:
            bound = self.episodes[old].bound
            bound[-1] = (bound[-1][0], now)
            del self.binding[host]
        if new is not None:
            self.binding[host] = new
            self.episodes[new].bound.append((now, math.inf))

    def _tell(self, host: int) -> None:
        if self.in_job(host):
            self.slow_changed(host, self.factor(host))

    def job_interrupted(self) -> None:
        """The flagship job was just interrupted: the hosts marked for draining leave it now (drain)."""
        hosts = [h for h in self.to_drain if self.in_job(h)]
        for host in hosts:
            episode = self.episodes[self.to_drain[host]]
            episode.action, episode.left_s = "drain", self.env.now
        self.to_drain.clear()
        if hosts:
            self.swap_out(hosts, "fail_slow_drain")

    def repaired(self, host: int) -> None:
        """`host` went to repair: the repair fixes what made it slow (its episodes end for good)."""
        self.active.pop(host, None)
        self.to_drain.pop(host, None)
        self._rebind(host)
