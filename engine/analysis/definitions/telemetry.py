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
        "engine.ingest (summary samples)",
    ),
    _d(
        "xid_events",
        "XID events",
        "count",
        "NVIDIA driver errors (XIDs and NVSwitch SXids) over the whole run, one per line a kernel log holds (or "
        "per XID the simulator drew): the xid_events table, and `goodput ingest --json`'s xid_events. Not the "
        "DCGM exporter's XID gauge, which holds only the last code a GPU reported. An XID is not an incident "
        "until it stops a GPU.",
        "xid_events table (summary xid_events)",
        "incidents",
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
        "engine.ingest.watch.goodput.jobs_goodput (summary jobs_goodput)",
        "ettr",
    ),
    _d(
        "observed_checkpoints",
        "Checkpoints read",
        "count",
        "Checkpoints a watch read where the jobs log them: each distinct value of a job's gauge of its latest "
        "checkpoint time (`--checkpoint-metric`, e.g. training_checkpoint_timestamp_seconds{slurm_job_id=...}) "
        "is one row of the checkpoints table, at the time the value holds (summary checkpoints).",
        "engine.ingest.watch.checkpoints.read_checkpoints (summary checkpoints)",
    ),
)
