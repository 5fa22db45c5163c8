"""The goodput ledger of the flagship job (engine.analysis.ledger): where its wall-clock time went.

Wall clock = productive + lost work + restart + checkpoint writes + waiting for spares + network slowdown,
the buckets of Google's ML goodput measurement where they apply (checkpoint save, checkpoint restore and
infrastructure recovery, wasted progress from disruption), each in seconds, GPU-hours and dollars.
"""

from engine.analysis.definitions import Definition, section

SECTION = "Goodput of the flagship job"


_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "ettr",
        "ETTR (goodput)",
        "ratio",
        "Effective training time ratio: the flagship job's productive training time divided by its wall-clock "
        "time from its start to the end of the run (Kokolis et al., HPCA 2025; Meta's measure for Llama 3). "
        "Time counts, not speed: a step slowed by the network still counts as productive time.",
        "engine.analysis.ledger.GoodputLedger.ettr (summary job.ettr)",
        "goodput_with_network",
        "closed_form_ettr",
    ),
    _d(
        "ettr_from_attempts",
        "ETTR (from attempts)",
        "ratio",
        "ETTR computed from a run's stored attempts and checkpoints of the flagship job (productive time of "
        "its attempts over its wall clock), for runs that have no simulator summary; on a simulated run it "
        "equals ETTR (goodput).",
        "engine.analysis.analytics.ettr_timeline",
        "ettr",
    ),
    _d(
        "goodput_with_network",
        "Goodput with network slowdown",
        "ratio",
        "The share of the flagship job's wall-clock time that became training progress at full speed: ETTR "
        "less the time the network's placement slowdown cost. Equal to ETTR when the job is not slowed.",
        "engine.analysis.ledger.GoodputLedger.goodput_with_network (summary job.ettr_with_network)",
        "ettr",
    ),
    _d(
        "closed_form_ettr",
        "Closed-form ETTR",
        "ratio",
        "The first-order estimate of ETTR from the scenario's settings alone (job size, failure rate, checkpoint "
        "interval and write time, restart overhead), as Kokolis et al. give it; no simulation.",
        "engine.analysis.analytics.closed_form_ettr (summary job.closed_form_ettr)",
        "ettr",
    ),
    _d(
        "job_mttf",
        "Job MTTF",
        "hours",
        "Mean time to failure of the flagship job: the run's wall-clock time divided by the job's unexpected "
        "interruptions (planned ones do not count).",
        "engine.sim.summary (summary job.mttf_hours)",
        "unexpected_interruptions",
    ),
    _d(
        "productive",
        "Productive training",
        "GPU-hours",
        "Time the flagship job trained at full speed and kept (its progress reached a checkpoint or the end of "
        "the run), times its GPUs.",
        "engine.analysis.ledger.GoodputLedger.productive_s",
        "ettr",
    ),
    _d(
        "lost_work",
        "Lost work",
        "GPU-hours",
        "Training done since the last checkpoint and thrown away by an interruption (Google's 'wasted progress "
        "from disruption'), times the job's GPUs. Planned stops lose none.",
        "engine.analysis.ledger.GoodputLedger.lost_work_s (job_attempts.lost_work_s)",
        "restart_overhead",
    ),
    _d(
        "restart_overhead",
        "Restart overhead",
        "GPU-hours",
        "Time from an interruption's detection until the job trains again, less any wait for spare hosts: "
        "rescheduling, initialisation and checkpoint restore (Google's 'checkpoint restore' and 'infrastructure "
        "recovery'), times the job's GPUs.",
        "engine.analysis.ledger.GoodputLedger.restart_s",
        "lost_work",
        "waiting_for_spares",
    ),
    _d(
        "checkpoint_writes",
        "Checkpoint writes",
        "GPU-hours",
        "Time the job stood still to write checkpoints that completed (Google's 'checkpoint save'), times its "
        "GPUs.",
        "engine.analysis.ledger.GoodputLedger.checkpoint_s",
        "checkpoints_written",
    ),
    _d(
        "waiting_for_spares",
        "Waiting for spare hosts",
        "GPU-hours",
        "Time the job could not restart because no healthy spare host was left to replace a failed one, times "
        "its GPUs (Google's 'infrastructure recovery' spent on scheduling).",
        "engine.analysis.ledger.GoodputLedger.waiting_s",
        "restart_overhead",
    ),
    _d(
        "network_slowdown",
        "Network slowdown",
        "GPU-hours",
        "Training time the fabric's placement slowdown cost: productive time less the progress it would have made "
        "at full speed, times the job's GPUs. Counted as productive by ETTR, as lost by goodput with network "
        "slowdown.",
        "engine.analysis.ledger.GoodputLedger.network_slowdown_s",
        "goodput_with_network",
    ),
    _d(
        "goodput_lost",
        "Goodput lost",
        "GPU-hours",
        "GPU-hours of the flagship job that made no progress: lost work + restart overhead + checkpoint writes "
        "+ waiting for spare hosts (network slowdown is shown on its own). Its dollar figure is these GPU-hours "
        "at the scenario's price per GPU-hour.",
        "engine.analysis.ledger.GoodputLedger.lost_s (summary job.lost_gpu_hours)",
        "incident_gpu_hours_lost",
    ),
    _d(
        "checkpoints_written",
        "Checkpoints written",
        "count",
        "Checkpoints of the flagship job that completed (the checkpoints table).",
        "summary job.checkpoints",
        "checkpoint_writes",
    ),
    _d(
        "flagship_attempts",
        "Attempts of the flagship job",
        "count",
        "Contiguous runs of the flagship job: the first start and every restart after an interruption. An "
        "interruption that hits the job while it is already restarting starts no new attempt, so there are "
        "fewer attempts than interruptions.",
        "summary job.attempts (job_attempts)",
        "interruptions",
    ),
    _d(
        "young_daly_interval",
        "Young-Daly interval",
        "seconds",
        "The checkpoint interval that minimises lost work plus checkpoint writes, sqrt(2 x write time x job "
        "MTTF) (Young 1974, Daly 2006).",
        "engine.analysis.analytics.young_daly_interval",
        "job_mttf",
    ),
)
