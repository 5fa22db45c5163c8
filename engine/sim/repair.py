"""The repair pipeline: drain, diagnose, wait for a technician, repair or return to the vendor, burn in, return.

A failed host is drained (`repair.drain`), diagnosed (`repair.diagnose`: DCGM `dcgmi diag -r 3`, about 15 min,
reference README §4), then waits for one of `repair.technicians` (a SimPy Resource). The hands-on repair takes
an exponential time of mean `repair.fix`; for a share `repair.rma_fraction` of repairs, and every lemon, the
part then goes back to the vendor and the host waits for it (exponential, mean `repair.rma_time`; no
technician). A lemon is a host with
`repair.lemon_failures` hardware failures within `repair.lemon_window` (Kokolis et al. detect and pull such
repeat offenders; Meta RMAs parts whose error rates pass vendor thresholds). Burn-in (`repair.burn_in`: DCGM
level 4 plus stress) comes last; then the host goes back where it came from (the flagship job's spare pool or
its research lane). A rack-switch failure takes every host of the rack through one repair together.
"""

from collections.abc import Callable, Sequence

import numpy as np
import simpy

from engine.scenario import Scenario
from engine.sim.records import HostInterval


class Repairs:
    def __init__(
        self,
        env: simpy.Environment,
        scenario: Scenario,
        rng: np.random.Generator,
        on_returned: Callable[[int], None],
    ) -> None:
        self.env, self.rng, self.on_returned = env, rng, on_returned
        self.technicians = simpy.Resource(env, capacity=scenario["repair.technicians"])
        self.drain = scenario["repair.drain"]
        self.diagnose = scenario["repair.diagnose"]
        self.fix = scenario["repair.fix"]
        self.rma_fraction = scenario["repair.rma_fraction"]
        self.rma_time = scenario["repair.rma_time"]
        self.burn_in = scenario["repair.burn_in"]
        self.lemon_failures = scenario["repair.lemon_failures"]
        self.lemon_window = scenario["repair.lemon_window"]
        self.history: dict[int, list[float]] = {}
        self.intervals: list[HostInterval] = []  # the repair layer of host_states (no job)
        self.repaired_at: dict[int, float] = {}  # incident_id -> when its hosts were back
        self.lemon_incidents: set[int] = set()

    def start(self, hosts: Sequence[int], incident_id: int) -> None:
        """Take `hosts` out of service now and repair them together."""
        lemon = any(self._is_lemon(h) for h in hosts)
        if lemon:
            self.lemon_incidents.add(incident_id)
        self.env.process(self._repair(list(hosts), incident_id, lemon))

    def _is_lemon(self, host: int) -> bool:
        now = self.env.now
        recent = [t for t in self.history.get(host, []) if now - t <= self.lemon_window] + [now]
        if len(recent) >= self.lemon_failures:
            self.history[host] = []  # the part is replaced: the count starts again
            return True
        self.history[host] = recent
        return False

    def _repair(self, hosts: list[int], incident_id: int, lemon: bool):
        t = self.env.now
        self._mark(hosts, "draining", t, t + self.drain)
        self._mark(hosts, "diagnosing", t + self.drain, t + self.drain + self.diagnose)
        yield self.env.timeout(self.drain + self.diagnose)
        with self.technicians.request() as turn:
            waited_from = self.env.now
            yield turn
            self._mark(hosts, "down", waited_from, self.env.now)  # diagnosed, waiting for hands
            vendor = lemon or self.rng.random() < self.rma_fraction
            hands_on = self.rng.exponential(self.fix)
            self._mark(hosts, "repair", self.env.now, self.env.now + hands_on)
            yield self.env.timeout(hands_on)
        if vendor:  # the part goes back to the vendor: the host waits, the technician does not
            turnaround = self.rng.exponential(self.rma_time)
            self._mark(hosts, "repair", self.env.now, self.env.now + turnaround)
            yield self.env.timeout(turnaround)
        self._mark(hosts, "burn_in", self.env.now, self.env.now + self.burn_in)
        yield self.env.timeout(self.burn_in)
        self.repaired_at[incident_id] = self.env.now
        for host in hosts:
            self.on_returned(host)

    def _mark(self, hosts: list[int], state: str, start: float, end: float) -> None:
        if end > start:
            self.intervals.extend(HostInterval(h, state, start, end) for h in hosts)
