"""The Network page's counts of network incidents, computed once from the incidents table.

A sum of jobs_hit over incidents counts a job once per incident that hit it (job interruptions); the distinct
jobs among them are the jobs hit. Both are shown, under different names (engine.analysis.definitions.network), so
"Jobs interrupted 53" and "Jobs stopped 14" can no longer pass for the same thing.
"""

from dataclasses import dataclass

import polars as pl

NETWORK_CAUSE = "network_switch_cable"  # engine.reference: the Llama 3 table's only Network cause


@dataclass(frozen=True)
class NetworkIncidentCounts:
    incidents: int  # definition network_incidents
    jobs_hit: int  # network_jobs_hit: distinct jobs
    job_interruptions: int  # network_job_interruptions: sum of jobs_hit
    gpu_hours_lost: float  # network_gpu_hours_lost


def network_incident_counts(incidents: pl.DataFrame) -> NetworkIncidentCounts:
    """Counts over the network incidents of an incidents frame (columns cause, jobs_hit, job_ids,
    gpu_hours_lost; other causes are ignored, so the whole table may be passed)."""
    net = incidents.filter(pl.col("cause") == NETWORK_CAUSE)
    jobs = net["job_ids"].explode().drop_nulls()
    return NetworkIncidentCounts(
        incidents=net.height,
        jobs_hit=jobs.n_unique(),
        job_interruptions=int(net["jobs_hit"].fill_null(0).sum()),
        gpu_hours_lost=float(net["gpu_hours_lost"].fill_null(0.0).sum()),
    )
