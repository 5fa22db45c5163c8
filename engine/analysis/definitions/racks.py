"""Figures of the Racks page: the floor at a moment t, and what a failure of one part would stop then.

The page also shows "Hosts out of service" (engine.analysis.definitions.cluster): the same count as the Overview's at
the same t. Its blast radius counts jobs that *would* stop, not the jobs an incident did stop ("Jobs hit").
"""

from engine.analysis.definitions import Definition, section

SECTION = "Racks"


_d = section(SECTION, default_scope="view")  # most figures here depend on the moment, window or part shown


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "racks",
        "Racks",
        "count",
        "Racks of the cluster (distinct rack ids of the hosts table).",
        "hosts.rack_id (dashboard.queries.racks.racks)",
        scope="run",
    ),
    _d(
        "racks_with_a_problem",
        "Racks with a problem",
        "count",
        "Racks with at least one host out of service (draining, down, diagnosing, in repair or burn-in) or at "
        "least one failed GPU (an incident on that GPU not yet repaired) at the moment shown.",
        "dashboard.queries.racks.problem_racks",
        "hosts_out_of_service",
    ),
    _d(
        "hosts_in_service",
        "Hosts in service",
        "count",
        "Hosts running a job, healthy and idle, or held as spares at the moment shown "
        "(engine.store.schema.IN_SERVICE_STATES).",
        "host_states (engine.store.schema.IN_SERVICE_STATES)",
        "hosts_out_of_service",
    ),
    _d(
        "hosts_without_a_state",
        "Hosts without a state",
        "count",
        "Hosts no host_states interval covers at the moment shown (observed runs that record no states).",
        "host_states (dashboard.queries.racks.hosts_at)",
    ),
    _d(
        "gpu_power_drawn",
        "GPU power drawn",
        "kW",
        "Each GPU's latest power reading at or before the moment shown, summed over the cluster: GPUs only, not "
        "CPUs, fans, switches or cooling. A GPU without a recent reading counts 0 W.",
        "dashboard.queries.racks.floor_cells (gpu_samples.power_w)",
        "racks_over_power_budget",
    ),
    _d(
        "racks_over_power_budget",
        "Racks over their power budget",
        "count",
        "Racks whose GPUs draw more than the rack's budget (cluster.rack_power_budget_kw) at the moment shown.",
        "dashboard.queries.racks.rack_power",
        "gpu_power_drawn",
    ),
    _d(
        "blast_jobs",
        "Jobs that would stop",
        "count",
        "Jobs with a host behind the part chosen (a rack, a host, a rack switch; for a spine switch the jobs of "
        "its pod that span racks) at the moment shown: what a failure of that part would stop. A what-if, not "
        "a count of incidents.",
        "dashboard.queries.racks.blast_radius",
        "jobs_hit",
    ),
    _d(
        "blast_gpus_stopped",
        "GPUs that would stop",
        "count",
        "Every GPU the jobs that would stop hold at the moment shown: a gang-scheduled job stops and restarts "
        "as a whole, so this counts far more GPUs than sit behind the part.",
        "dashboard.queries.racks.blast_radius (job_gpus)",
        "blast_gpus_behind",
    ),
    _d(
        "blast_gpus_behind",
        "GPUs behind the part",
        "count",
        "GPUs that lose their place in the fabric when the part chosen fails: those of the rack, of the host, "
        "or for a spine switch those of its pod.",
        "dashboard.queries.racks.blast_hosts",
        "blast_gpus_stopped",
    ),
)
