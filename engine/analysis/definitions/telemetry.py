"""What an ingested or watched run read (`goodput ingest --json`, `goodput watch --json`): telemetry values,
XID events, and the goodput of the jobs a watch follows."""

from engine.analysis.definitions import Definition, section

SECTION = "Telemetry"


_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "samples_read",
        "Metric values read",
        "count",
        "Telemetry values ingested: one per DCGM field value of one GPU at one time (summary samples).",
        "engine.ingest",
        summary="samples",
    ),
    _d(
        "xid_events",
        "XID events",
        "count",
        "NVIDIA driver errors (XIDs and NVSwitch SXids) over the whole run, one per line a kernel log holds (or "
        "per XID the simulator drew): the xid_events table, and `goodput ingest --json`'s xid_events. Not the "
        "DCGM exporter's XID gauge, which holds only the last code a GPU reported. An XID is not an incident "
        "until it stops a GPU.",
        "xid_events table",
        "incidents",
        summary="xid_events",
    ),
    _d(
        "observed_job_goodput",
        "Job goodput (observed)",
        "ratio",
        "The watched jobs' kept attempt time over their wall clock, from each job's first start to its end (or "
        "now), weighted by the job's GPUs; the gaps between attempts (requeues, restarts, waits) are lost. An "
        "attempt that completed, was cancelled or still runs counts whole. An interrupted attempt (failed, "
        "requeued, node failure, preempted, timeout, out of memory, boot failure) keeps only the time from its "
        "start to its last checkpoint within it (nothing if it had none) for a job whose checkpoints the watch "
        "reads (`--checkpoint-metric`); for a job without, it counts whole, since Slurm records no checkpoints, "
        "so that job's goodput is an upper bound. The summary says how many jobs are measured "
        "(jobs_goodput_measured) and how many are upper bounds (jobs_goodput_upper_bounds). Not the simulated "
        "flagship job's ETTR.",
        "engine.ingest.watch.goodput.jobs_goodput",
        "ettr",
        summary="jobs_goodput",
    ),
    _d(
        "observed_wall_gpu_hours",
        "Wall clock (observed jobs)",
        "GPU-hours",
        "Every watched job's GPUs times its wall clock, from its first start to its end (or now): the whole that "
        "observed_job_goodput divides; kept + lost work + between attempts.",
        "engine.ingest.watch.goodput.jobs_goodput",
        "observed_job_goodput",
        summary="jobs_ledger_gpu_hours.wall",
    ),
    _d(
        "observed_lost_work",
        "Lost work (observed)",
        "GPU-hours",
        "The watched jobs' GPU-hours of interrupted attempts after their last checkpoint: work done and thrown "
        "away when the job restarted from that checkpoint (an attempt with no checkpoint loses all of it). "
        "Counted only for jobs whose checkpoints the watch reads (`--checkpoint-metric`); for the others it is "
        "unknown and counted as kept (observed_job_goodput's upper bound). Weighted by the job's GPUs.",
        "engine.ingest.watch.goodput.jobs_goodput",
        "observed_job_goodput",
        summary="jobs_ledger_gpu_hours.lost_work",
    ),
    _d(
        "observed_between_attempts",
        "Between attempts (observed)",
        "GPU-hours",
        "The watched jobs' wall-clock GPU-hours outside any of their attempts, from each job's first start to "
        "its end (or now): requeues, restarts and waiting for nodes again. Kept + lost work + between attempts "
        "= the jobs' wall-clock GPU-hours. Weighted by the job's GPUs.",
        "engine.ingest.watch.goodput.jobs_goodput",
        "observed_job_goodput",
        summary="jobs_ledger_gpu_hours.between_attempts",
    ),
    _d(
        "observed_checkpoints",
        "Checkpoints read",
        "count",
        "Checkpoints a watch read where the jobs log them: each distinct value of a job's gauge of its latest "
        "checkpoint time (`--checkpoint-metric`, e.g. training_checkpoint_timestamp_seconds{slurm_job_id=...}) "
        "is one row of the checkpoints table, at the time the value holds (summary checkpoints).",
        "engine.ingest.watch.checkpoints.read_checkpoints",
        summary="checkpoints",
    ),
)
