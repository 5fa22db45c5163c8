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
        "The watched jobs' attempts' time over their wall clock, from each job's first start to its end (or now), "
        "weighted by the job's GPUs. Slurm records no checkpoints, so an attempt's whole time counts as kept and "
        "the gaps between attempts (requeues, restarts) are what was lost: an upper bound of the jobs' goodput, "
        "not the simulated flagship job's ETTR.",
        "engine.ingest.watch.jobs_goodput_total (summary jobs_goodput)",
        "ettr",
    ),
)
