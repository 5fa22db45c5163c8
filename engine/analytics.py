"""Goodput's arithmetic: ETTR, MTTF, the closed-form estimate and the Young-Daly interval.

References (../shared/reference/README.md §3):
- ETTR = productive training time / wall-clock time from the job's start (Kokolis et al., HPCA 2025).
- E[ETTR] ~= (1 - N r_f (u0 + dt/2)) / (1 + w/dt): N hosts, r_f failures per host per second, u0 restart
  overhead, dt checkpoint interval, w the time a checkpoint write blocks training (Kokolis et al.).
- Job MTTF = 1 / (N r_f).
- Young (1974) / Daly (2006): the interval that maximises useful work is about sqrt(2 w MTBF).
"""

import math
from dataclasses import dataclass

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class ClosedForm:
    ettr: float
    mttf_s: float
    failures_per_s: float  # of the whole job


def job_failure_rate(hosts: int, rate_per_1000_node_days: float) -> float:
    """Failures per second of a job on `hosts` hosts: N x r_f."""
    return hosts * rate_per_1000_node_days / 1000.0 / SECONDS_PER_DAY


def closed_form_ettr(*, gpus: int, rate_per_1000_node_days: float, checkpoint_interval_s: float,
                     checkpoint_write_s: float, restart_overhead_s: float, gpus_per_host: int = 8) -> ClosedForm:
    """Kokolis et al.'s first-order estimate, clipped at 0 where failures outrun progress."""
    hosts = math.ceil(gpus / gpus_per_host)
    rate = job_failure_rate(hosts, rate_per_1000_node_days)
    mttf = math.inf if rate == 0 else 1.0 / rate
    numerator = 1.0 - rate * (restart_overhead_s + checkpoint_interval_s / 2.0)
    ettr = max(0.0, numerator) / (1.0 + checkpoint_write_s / checkpoint_interval_s)
    return ClosedForm(ettr=ettr, mttf_s=mttf, failures_per_s=rate)


def young_daly_interval(checkpoint_write_s: float, mttf_s: float) -> float:
    """First-order optimum checkpoint interval sqrt(2 w MTBF) (Young 1974; Daly 2006)."""
    if math.isinf(mttf_s):
        return math.inf
    return math.sqrt(2.0 * checkpoint_write_s * mttf_s)
