"""Figures of the Operations page and `goodput act` (engine.act): what a recommended action costs by the twin if
taken and if left, and who and what it touches now."""

from engine.analysis.definitions import Definition, section

SECTION = "Actions"
RULES = "engine.act.recommend"

_d = section(SECTION, default_scope="view")


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "action_cost_if_acting",
        "Cost if acting",
        "GPU-hours",
        "The twin's price of carrying the action out now: for a drain, a restart of each job running on the node "
        "(its GPUs times the restart overhead plus half a checkpoint interval of lost work, from the run's "
        "scenario); for a resume, the chance the host fails again before the next maintenance window times a "
        "restart of the largest job; for a requeue, a restart of the job. 0 on an idle node.",
        f"{RULES} (cost_if_acting_gpu_hours)",
        "action_cost_if_not",
    ),
    _d(
        "action_cost_if_not",
        "Cost if not acting",
        "GPU-hours",
        "The twin's price of leaving it until the next maintenance window (settings horizon_hours, 24 h by default): "
        "for a fatal XID, the chance it recurs (measured on the run's hosts where five or more had one, else taken "
        "as certain) times a restart of the jobs there; for a lemon, its own failure rate over the horizon (at "
        "most one failure) times that restart; for a slow host, the jobs' GPUs times 1 - 1/slowdown over the "
        "horizon; for a repaired host, its GPUs kept idle; for a stuck job, its GPUs held while it hangs.",
        f"{RULES} (cost_if_not_gpu_hours)",
        "action_cost_if_acting",
    ),
    _d(
        "action_jobs_hit",
        "Jobs hit now",
        "count",
        "Jobs running on the action's nodes at the moment looked at (the run's end, for a watched run its latest "
        "data): a drain interrupts them.",
        f"{RULES} (jobs_hit)",
        "jobs_hit",
    ),
    _d(
        "action_gpus_hit",
        "GPUs hit now",
        "count",
        "GPUs of the jobs hit now: every GPU of each job, on every host it runs on, since a synchronous job stops "
        "whole.",
        f"{RULES} (gpus_hit)",
    ),
)
