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
    # fail-slow episodes (engine.sim.slow): a component that kept working, slowly; never incidents
    _d(
        "slow_episode_cost",
        "Cost of the fail-slow episode",
        "GPU-hours",
        "The flagship job's fail-slow slowdown blamed on one episode: the training it lost, times its GPUs, while "
        "this episode's factor was the binding one, the largest among the job's hosts (ties go to the earliest: "
        "the host slow the longest, then on a host the episode that started first). Blank for an episode that "
        "never bound the job while it trained (on a host outside it, or under a slower one). Slowdown later thrown "
        "away with lost work is counted there, not here.",
        "engine.sim.slow.episode_costs (slow_episodes.cost_gpu_hours)",
        "slowdown_fail_slow",
        "incident_cost",
        scope="view",
    ),
    _d(
        "slow_episodes_cost_total",
        "GPU-hours lost to fail-slow episodes",
        "GPU-hours",
        "The costs of every fail-slow episode of the run summed: equal to the flagship job's fail-slow slowdown, "
        "since each stretch of its slowdown is blamed on exactly one episode.",
        "engine.sim.slow.episode_costs (sum of slow_episodes.cost_gpu_hours)",
        "slowdown_fail_slow",
        "incident_gpu_hours_lost",
    ),
    _d(
        "slow_episode_factor",
        "Slowdown factor",
        "ratio",
        "How many times slower the episode's host ran while it lasted (f: the host ran at 1/f of its speed).",
        "slow_episodes.factor",
        "straggler_slowdown",
        scope="view",
    ),
    _d(
        "slow_episode_detected_after",
        "Slowness detected after",
        "seconds",
        "Time from the episode's start to its detection on a host of the flagship job (slow.detect_after; "
        "slow_episodes.detected_s - start_s); blank where nobody detected it (slow.policy ignore, or it ended "
        "first).",
        "slow_episodes table",
        "incident_detected_after",
        scope="view",
    ),
    _d(
        "slowdown_culprit",
        "Culprit of the slowdown",
        "GPU-hours",
        "The fail-slow episode that cost the flagship job most of its fail-slow slowdown: its host (and GPU), its "
        "cause, and its cost with its share of the job's slowdown.",
        "engine.sim.slow.episode_costs (the largest slow_episodes.cost_gpu_hours)",
        "slow_episode_cost",
        "persistent_straggler",
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
    # a fault history (`goodput ingest node-events`): outages of nodes, some still open, some of no known cause
    _d(
        "open_incidents",
        "Incidents still open",
        "count",
        "Incidents with no repair time (incidents.repaired_s empty): in a fault history, outages whose node was "
        "still out when the history was read (an event or ticket with no end). Their hosts stay down to the end "
        "of the run.",
        "incidents table (repaired_s IS NULL)",
        "incidents",
        "hosts_out_of_service",
    ),
    _d(
        "unknown_cause_incidents",
        "Incidents of unknown cause",
        "share of incidents",
        "The share of the incidents whose cause is unknown: in a fault history, outages whose reason and "
        "description no rule of the causes map named (`goodput ingest node-events --causes`). They are kept and "
        "counted, never dropped; a site's map that names more of them lowers it.",
        "incidents table (cause = 'unknown'); the ingest's summary at unknown_share",
        "unknown_cause_share",
        summary="unknown_share",
    ),
)
