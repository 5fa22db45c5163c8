"""Interruptions (of the flagship job) and incidents (of the cluster): DESIGN's one vocabulary.

"Interruptions" always means interruptions of the flagship job, counted as the Llama 3 paper counts its 466;
what happens anywhere in the cluster (idle hosts, research jobs, links) is counted as "incidents".
"""

from engine.analysis.definitions import Definition, section

SECTION = "Interruptions and incidents"


_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "interruptions",
        "Interruptions",
        "count",
        "Failures and planned stops that hit the flagship job while it trained or restarted, counted the way "
        "the Llama 3 paper counts its 466 in 54 days (419 unexpected, 47 planned): incidents whose jobs hit "
        "include the flagship job.",
        "engine.analysis.incidents.summary_counts(job=flagship)",
        "incidents",
        "flagship_attempts",
        summary="interruptions.total",
    ),
    _d(
        "unexpected_interruptions",
        "Unexpected interruptions",
        "count",
        "Interruptions of the flagship job that were not planned.",
        "engine.analysis.summary",
        "interruptions",
        summary="interruptions.unexpected",
    ),
    _d(
        "planned_interruptions",
        "Planned interruptions",
        "count",
        "Planned stops of the flagship job (maintenance, upgrades): no lost work, a restart.",
        "engine.analysis.summary",
        "interruptions",
        summary="interruptions.planned",
    ),
    _d(
        "interruptions_per_day",
        "Interruptions a day",
        "per day",
        "Interruptions of the flagship job divided by the days they were counted over (the whole run, or the "
        "window chosen). Not shown for less than a day of data: a rate from hours of data says nothing.",
        "engine.analysis.incidents.summary_counts",
        "interruptions",
    ),
    _d(
        "hardware_share",
        "Hardware share",
        "ratio",
        "Share of the unexpected interruptions whose cause is in the GPU, Host or Network category (Llama 3: "
        "about 78 %).",
        "engine.analysis.incidents.summary_counts",
        "unexpected_interruptions",
    ),
    _d(
        "incidents",
        "Incidents",
        "count",
        "Every failure, fault and planned stop anywhere in the cluster (the incidents table): on the flagship "
        "job's hosts, on research jobs, on idle hosts and on network links, whether or not a job was hit.",
        "incidents table (engine.analysis.incidents.load_incidents)",
        "interruptions",
    ),
    _d(
        "incidents_per_day",
        "Incidents a day",
        "per day",
        "Incidents of the cluster divided by the days they were counted over. Not shown for less than a day.",
        "engine.analysis.incidents.summary_counts",
        "interruptions_per_day",
    ),
    _d(
        "incident_gpu_hours_lost",
        "GPU-hours lost to incidents",
        "GPU-hours",
        "Summed over every incident of the cluster, each incident's cost (incidents.gpu_hours_lost): for the "
        "flagship job, the work lost since its last checkpoint plus its downtime until it resumed (or the next "
        "interruption), times its GPUs; for research jobs, the attempt each one lost. Checkpoint writes are not "
        "incidents, so this is not the goodput lost.",
        "engine.analysis.incidents.summary_counts (incidents.gpu_hours_lost)",
        "interruption_gpu_hours_lost",
        "goodput_lost",
    ),
    _d(
        "interruption_gpu_hours_lost",
        "GPU-hours lost to interruptions",
        "GPU-hours",
        "The same cost summed over the flagship job's interruptions only; an interruption that also hit research "
        "jobs includes their lost attempts.",
        "engine.analysis.incidents.summary_counts(job=flagship)",
        "incident_gpu_hours_lost",
        "goodput_lost",
    ),
    _d(
        "incident_cost",
        "Cost of the incident",
        "GPU-hours",
        "One incident's cost (incidents.gpu_hours_lost): lost work and downtime of every job it hit, in GPU-hours.",
        "engine.analysis.incidents.IncidentDetail.gpu_hours_lost",
        "incident_gpu_hours_lost",
        scope="view",
    ),
    _d(
        "incident_detected_after",
        "Detected after",
        "seconds",
        "Time from the fault to its detection (incidents.detected_s - t_s).",
        "incidents table",
        scope="view",
    ),
    _d(
        "incident_gpus_hit",
        "GPUs hit",
        "count",
        "GPUs of the jobs the incident stopped (or the failed GPU when no job was hit).",
        "engine.analysis.incidents.IncidentDetail.gpus",
        scope="view",
    ),
    _d(
        "incident_hosts_taken_out",
        "Hosts it took out of service",
        "count",
        "Hosts the incident sent to draining, diagnosis, repair or burn-in.",
        "engine.analysis.incidents.IncidentDetail.hosts",
        "hosts_out_of_service",
        scope="view",
    ),
    _d(
        "incident_lost_time",
        "Lost work + restart",
        "seconds",
        "Work lost since each hit job's last checkpoint plus the time until it ran again, summed over the jobs "
        "hit; times each job's GPUs it is the incident's cost.",
        "engine.analysis.incidents.IncidentDetail",
        "incident_cost",
        scope="view",
    ),
    _d(
        "jobs_hit",
        "Jobs hit",
        "count",
        "Distinct jobs whose running attempt the incident (or the incidents shown) ended.",
        "incidents.job_ids",
        scope="view",
    ),
)
