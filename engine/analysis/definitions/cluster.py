"""Figures of the whole cluster: its hosts and GPUs, whatever job they run."""

from engine.analysis.definitions import Definition, section

SECTION = "Cluster"


_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "utilisation_by_allocation",
        "Utilisation (allocated)",
        "ratio",
        "Share of all GPU-hours of the cluster (GPUs x run length) that hosts spent allocated to a running job, "
        "flagship or research, whether or not that time became progress.",
        "engine.sim.summary (summary cluster.utilization)",
        "utilisation_by_progress",
        "gpu_hours_down",
    ),
    _d(
        "utilisation_by_progress",
        "Utilisation (progress)",
        "ratio",
        "Share of all GPU-hours of the cluster that became kept training progress: the flagship job's "
        "productive GPU-hours plus research jobs' completed work, over GPUs x run length.",
        "engine.analysis.ledger.cluster_progress_share",
        "utilisation_by_allocation",
    ),
    _d(
        "gpu_hours_down",
        "GPU-hours out of service",
        "GPU-hours",
        "GPU-hours of hosts out of service: draining, down, diagnosing, in repair or burn-in "
        "(engine.store.schema.OUT_OF_SERVICE_STATES).",
        "engine.sim.summary (summary cluster.gpu_hours_down)",
        "utilisation_by_allocation",
    ),
    _d(
        "cluster_gpu_hours",
        "Cluster GPU-hours",
        "GPU-hours",
        "Every GPU of the cluster times the run's length.",
        "summary cluster.gpu_hours",
    ),
    _d(
        "hosts_out_of_service",
        "Hosts out of service",
        "count",
        "Hosts draining, down, diagnosing, in repair or in burn-in at the moment shown.",
        "host_states (engine.store.schema.OUT_OF_SERVICE_STATES)",
        "gpu_hours_down",
    ),
    _d(
        "lemons_pulled",
        "Lemon hosts pulled",
        "count",
        "Hosts the repair model pulled from service as repeat offenders (sent to the vendor).",
        "summary cluster.lemons",
    ),
)
