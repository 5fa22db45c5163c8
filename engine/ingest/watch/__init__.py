"""Keep an observed run current from Prometheus and Slurm (`goodput watch`), one atomic commit a cycle.

    goodput watch --prometheus http://prom:9090 --slurm --every 1m

Each cycle reads what changed since the last (sources.py): Slurm's jobs and attempts that changed since its last
read and the state of every node (engine.ingest.slurm), and Prometheus' XID, ECC, clock and NIC events in (last
read, now] plus the GPUs and NIC ports it knows (engine.ingest.prometheus), and, where jobs export one, the gauge
of their latest checkpoint times (checkpoints.py). Only events and what is derived from them go to the store
(derive.py, events.py, hosts.py, nics.py: hosts, gpus, jobs, job_attempts, checkpoints, incidents, host_states,
xid_events; as gpu_samples rows the ECC counters at the moments they rose and the SM clock, clocks-event reasons
and throttle-violation counters at the moments the reasons changed or a counter rose; as nic_samples each NIC
port of node_exporter's infiniband collector when first seen, then where its rate changed or a counter rose); the
raw per-GPU and per-port series stay in Prometheus. The run records how to reach it (access.py: the base URL, the
shown headers and the paths of the token or password files, never a secret); pages query it for their window with
the credentials of the endpoint the dashboard's configuration holds for that URL, never with files a run names
(access.prometheus_access). Cycles are at least MIN_EVERY_S (loop.py) apart.

Jobs are joined to GPUs as Meta's gcm does: an XID's host and time -> the job attempt that held that host then
-> the incident's job_ids. A job's interruptions are its attempts that ended failed, requeued or on a node
failure. Its goodput (goodput.py, definition `observed_job_goodput`) is the time of its attempts that was kept
over its wall clock from first start to end (or now): an interrupted attempt keeps only the time to its last
checkpoint where the job's checkpoints are read, and counts whole otherwise (an upper bound: Slurm records no
checkpoints); the gaps between attempts (requeue, restart, waiting for nodes) are lost.

The first cycle creates the run (Store.write_run); later ones add to it (jobs and attempts that changed
replace their earlier rows). The first cycle failing is an error and nothing is written. Later, each source
keeps its own watermark: a source that fails is reported (on stderr and in the run's summary: "Prometheus
unreachable since 10:42 UTC") and read again from its last success the next cycle, so nothing it holds is
lost, while the other source's data still lands. A cycle in which every source failed commits only the
sources' states. SIGINT or SIGTERM end the loop within a fraction of a second; a cycle cut short is dropped
(loop.py).
"""

from engine.ingest.watch.access import PrometheusAccess, prometheus_access
from engine.ingest.watch.checkpoints import DEFAULT_JOB_LABEL, read_checkpoints
from engine.ingest.watch.derive import Watcher
from engine.ingest.watch.goodput import (
    INTERRUPTED,
    RUNNING,
    JobsGoodput,
    job_goodput,
    jobs_goodput,
    jobs_goodput_total,
)
from engine.ingest.watch.loop import DEFAULT_LOOKBACK_S, watch_loop, watch_text
from engine.ingest.watch.sources import (
    INVENTORY_METRIC,
    LABELS,
    PROMETHEUS,
    SLURM,
    SLURM_OVERLAP_S,
    PrometheusWatch,
    Reading,
    SlurmWatch,
    SourceState,
    WatchSource,
    source_states,
)
from engine.ingest.watch.tables import REPLACE_KEYS, TYPES

__all__ = [
    "DEFAULT_JOB_LABEL",
    "DEFAULT_LOOKBACK_S",
    "INTERRUPTED",
    "INVENTORY_METRIC",
    "LABELS",
    "PROMETHEUS",
    "REPLACE_KEYS",
    "RUNNING",
    "SLURM",
    "SLURM_OVERLAP_S",
    "TYPES",
    "JobsGoodput",
    "PrometheusAccess",
    "PrometheusWatch",
    "Reading",
    "SlurmWatch",
    "SourceState",
    "WatchSource",
    "Watcher",
    "job_goodput",
    "jobs_goodput",
    "jobs_goodput_total",
    "prometheus_access",
    "read_checkpoints",
    "source_states",
    "watch_loop",
    "watch_text",
]
