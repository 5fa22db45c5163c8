"""The goodput ledger of the flagship job (engine.analysis.ledger): where its wall-clock time went.

Wall clock = productive + lost work + restart + checkpoint writes + waiting for spares + degraded (replicas out)
+ slowdown (fail-slow hosts) + network slowdown, the buckets of Google's ML goodput measurement where they
apply (checkpoint save, checkpoint restore and infrastructure recovery, wasted progress from disruption), each
in seconds, GPU-hours and dollars; and what each recovery strategy costs besides.
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
        "engine.analysis.ledger.GoodputLedger.ettr",
        "goodput_with_network",
        "closed_form_ettr",
        summary="job.ettr",
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
        "engine.analysis.ledger.GoodputLedger.goodput_with_network",
        "ettr",
        summary="job.ettr_with_network",
    ),
    _d(
        "closed_form_ettr",
        "Closed-form ETTR",
        "ratio",
        "The first-order estimate of ETTR from the scenario's settings alone (job size, failure rate, checkpoint "
        "interval and write time, restart overhead), as Kokolis et al. give it; no simulation.",
        "engine.analysis.analytics.closed_form_ettr",
        "ettr",
        summary="job.closed_form_ettr",
    ),
    _d(
        "job_mttf",
        "Job MTTF",
        "hours",
        "Mean time to failure of the flagship job: the run's wall-clock time divided by the job's unexpected "
        "interruptions (planned ones do not count).",
        "engine.analysis.summary",
        "unexpected_interruptions",
        summary="job.mttf_hours",
    ),
    _d(
        "time_to_train",
        "Time to train",
        "days",
        "Wall-clock days the flagship job took to do its work (training.work, in days of ideal compute): the "
        "run ends then. Blank when the scenario sets no work, or when the work was not done by simulation.days. "
        "ETTR of such a run is its work over its time to train.",
        "engine.sim.training.FlagshipJob (training.work)",
        "ettr",
        summary="job.time_to_train_days",
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
        summary="job.losses_gpu_hours.lost_work",
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
        summary="job.losses_gpu_hours.restart",
    ),
    _d(
        "checkpoint_writes",
        "Checkpoint writes",
        "GPU-hours",
        "Time the job stood still to write checkpoints that completed (Google's 'checkpoint save'), times its "
        "GPUs.",
        "engine.analysis.ledger.GoodputLedger.checkpoint_s",
        "checkpoints_written",
        summary="job.losses_gpu_hours.checkpoint",
    ),
    _d(
        "waiting_for_spares",
        "Waiting for spare hosts",
        "GPU-hours",
        "Time the job could not restart because no healthy spare host was left to replace a failed one, times "
        "its GPUs (Google's 'infrastructure recovery' spent on scheduling).",
        "engine.analysis.ledger.GoodputLedger.waiting_s",
        "restart_overhead",
        summary="job.losses_gpu_hours.waiting_for_spares",
    ),
    _d(
        "degraded_replicas_out",
        "Degraded: replicas out",
        "GPU-hours",
        "Training the flagship job did not do while some of its data-parallel replicas were out (the "
        "replica_drop recovery strategy: a failed replica drops out until its hosts are replaced and it "
        "rejoins, the rest train on): k/R of its training time with k of R replicas out, times its GPUs. Its "
        "dollar figure is these GPU-hours at the scenario's price per GPU-hour. Zero under other strategies.",
        "engine.analysis.ledger.GoodputLedger.degraded_s",
        "lost_work",
        "restart_overhead",
        summary="job.recovery_cost.degraded_gpu_hours",
    ),
    _d(
        "slowdown_fail_slow",
        "Slowdown (fail-slow)",
        "GPU-hours",
        "Training the flagship job did not do because it ran at the pace of a fail-slow host (a GPU throttled "
        "for heat or power, a slow host, a degraded NIC or cable: scenario keys slow.*): a synchronous job runs "
        "at the speed of its slowest host, so while its slowest host runs at 1/f it loses (1 - 1/f) of its "
        "training time, times its GPUs. Kept apart from failures; not counted as productive by ETTR. Its dollar "
        "figure is these GPU-hours at the scenario's price per GPU-hour. Absent (zero) in runs without fail-slow "
        "episodes.",
        "engine.analysis.ledger.GoodputLedger.slowdown_s",
        "slow_episodes",
        "network_slowdown",
        summary="job.losses_gpu_hours.slowdown",
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
        "+ waiting for spare hosts + degraded (replicas out) + slowdown (fail-slow hosts) (network slowdown is "
        "shown on its own). Its dollar "
        "figure is these GPU-hours at the scenario's price per GPU-hour.",
        "engine.analysis.ledger.GoodputLedger.lost_s",
        "incident_gpu_hours_lost",
        summary="job.lost_gpu_hours",
    ),
    _d(
        "recovery_strategy",
        "Recovery strategy",
        "strategy",
        "How the flagship job recovers from a failure (scenario key training.recovery): restart (stop, swap in "
        "spares, reload the last checkpoint), in_memory_checkpoint (reload from peers' CPU memory, Gemini), "
        "replica_drop (the failed data-parallel replica drops out and rejoins, Meta FT-HSDP) or hot_spare (swap "
        "in a warm standby, NVIDIA NVRx / ByteRobust).",
        "engine.sim.recovery",
        summary="job.recovery",
    ),
    _d(
        "standby_hosts_idle",
        "Standby hosts idle",
        "GPU-hours",
        "GPU-hours of the warm standby hosts the flagship job held initialised and idle (the hot_spare recovery "
        "strategy), from when each was taken from the spare pool until it was swapped in, failed or the run "
        "ended. Its dollar figure is these GPU-hours at the scenario's price per GPU-hour. Zero under other "
        "strategies.",
        "engine.analysis.summary",
        "degraded_replicas_out",
        summary="job.recovery_cost.standby_gpu_hours",
    ),
    _d(
        "memory_checkpoint_per_host",
        "In-memory checkpoint memory per host",
        "GB",
        "CPU memory each host gives to in-memory checkpoints (the in_memory_checkpoint recovery strategy): the "
        "state of its peers, checkpoint size per GPU x GPUs per host x copies (recovery.memory_copies). Zero "
        "under other strategies.",
        "engine.sim.recovery.memory_gb_per_host",
        summary="job.recovery_cost.memory_gb_per_host",
    ),
    _d(
        "checkpoints_written",
        "Checkpoints written",
        "count",
        "Checkpoints of the flagship job that completed (the checkpoints table).",
        "engine.analysis.summary",
        "checkpoint_writes",
        summary="job.checkpoints",
    ),
    _d(
        "flagship_attempts",
        "Attempts of the flagship job",
        "count",
        "Contiguous runs of the flagship job: the first start and every restart after an interruption. An "
        "interruption that hits the job while it is already restarting starts no new attempt, so there are "
        "fewer attempts than interruptions.",
        "engine.analysis.summary (job_attempts)",
        "interruptions",
        summary="job.attempts",
    ),
    _d(
        "young_daly_interval",
        "Young-Daly interval",
        "seconds",
        "The checkpoint interval that minimises lost work plus checkpoint writes, sqrt(2 x write time x job "
        "MTTF) (Young 1974, Daly 2006).",
        "engine.analysis.analytics.young_daly_interval",
        "job_mttf",
        summary="job.young_daly_interval_s",
    ),
)
