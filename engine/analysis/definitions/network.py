"""Figures of the fabric (the Network page): its links, their load, their faults and the jobs they hit.

Three counts of trouble that sound alike are kept apart: link faults (what the engine injected: network
incidents plus the fabric's own faults), link outages (what the samples show: links seen down together) and
network incidents (the incidents table's Network category). Likewise jobs hit (distinct jobs) against job
interruptions (a job hit twice counts twice).
"""

from engine.analysis.definitions import Definition, section

SECTION = "Network"


_d = section(SECTION)


_ALL_LINKS = (
    "Computed by the engine from every link of the tier at every sample time while it routes the "
    "traffic, whichever links link_samples stores (by default a NIC cable only while it is down or "
    "logs errors, a selection by trouble that says nothing about the tier)."
)

DEFINITIONS: tuple[Definition, ...] = (
    # ----- the fabric
    _d(
        "fabric_links",
        "Fabric links",
        "count",
        "Links of the fabric (the links table): every GPU's NIC cable, every rack switch's uplinks and every "
        "spine's core links, each counted once.",
        "links table",
    ),
    _d(
        "fabric_tiers",
        "Fabric tiers",
        "count",
        "Levels of the fabric that have links: NIC cables, rack uplinks, core links.",
        "links.tier",
    ),
    _d(
        "fabric_capacity",
        "Fabric capacity",
        "Tbps",
        "Every link's capacity summed, one direction (links.capacity_gbps).",
        "links.capacity_gbps",
    ),
    _d(
        "fabric_kind",
        "Fabric",
        "kind",
        "The fabric's technology, from the tier names of the links table: RoCE (Meta's Llama 3 clusters) or "
        "InfiniBand.",
        "engine.fabric.topology.FABRIC_TIERS",
    ),
    # ----- load
    _d(
        "gbps_per_gpu",
        "Network demand a GPU",
        "Gbps",
        "Ring traffic each GPU of a multi-host job sends (and receives) in the traffic model "
        "(scenario network.gbps_per_gpu); a one-host job talks over NVLink only.",
        "engine.fabric.traffic.network_run",
        summary="network.gbps_per_gpu",
    ),
    _d(
        "link_samples",
        "Link samples",
        "count",
        "Rows of link_samples: one link at one sample time, with its utilisation (none while it is down) and "
        "its error counter.",
        "link_samples table",
        "links_sampled",
    ),
    _d(
        "links_sampled",
        "Links in link_samples",
        "count",
        "Per tier: links with at least one row in link_samples. Fewer than the tier's links means the rows are "
        "a selection (network.link_samples = switches keeps a NIC cable only while it is down or logs "
        "errors): the page then draws nothing of that tier from them.",
        "link_samples table",
        "fabric_links",
    ),
    _d(
        "tier_mean_utilisation",
        "Mean link utilisation",
        "%",
        "Per tier, over the whole run: the mean of every reading of a link in service (its busier direction's "
        "load over its capacity, capped at 100 %). " + _ALL_LINKS,
        "engine.fabric.link_stats (summary network.tiers.mean_util_pct)",
        "tier_peak_utilisation",
    ),
    _d(
        "tier_hottest_link",
        "Hottest link's mean utilisation",
        "%",
        "Per tier, over the whole run: the highest of its links' own mean utilisations. " + _ALL_LINKS,
        "engine.fabric.link_stats (summary network.tiers.hottest_link_mean_pct)",
        "tier_mean_utilisation",
    ),
    _d(
        "tier_peak_utilisation",
        "Peak link utilisation",
        "%",
        "Per tier, over the whole run: the highest single reading of any of its links. " + _ALL_LINKS,
        "engine.fabric.link_stats (summary network.tiers.peak_util_pct)",
        "tier_mean_utilisation",
    ),
    _d(
        "tier_down_share",
        "Link-time out of service",
        "ratio",
        "Per tier: the share of its link-samples (links x sample times) at which the link was out of service "
        "(down, no reading). " + _ALL_LINKS,
        "engine.fabric.link_stats (summary network.tiers.down_share)",
        "link_outages",
    ),
    # ----- slowdown
    _d(
        "flagship_slowdown_mean",
        "Flagship step slowdown (mean)",
        "x",
        "Mean over the samples at which the flagship job ran of its step time over its step time on an idle "
        "network (1.000x: never slowed): the most loaded link on its rings' paths, offered over its capacity.",
        "engine.fabric.traffic.network_run",
        "network_slowdown",
        summary="network.flagship_slowdown_mean",
    ),
    _d(
        "flagship_slowdown_max",
        "Flagship step slowdown (worst)",
        "x",
        "The highest step-time slowdown of the flagship job at any sample (see Flagship step slowdown (mean)).",
        "engine.fabric.traffic.network_run",
        "flagship_slowdown_mean",
        summary="network.flagship_slowdown_max",
    ),
    _d(
        "flagship_progress_rate",
        "Flagship progress rate under the network",
        "ratio",
        "Training progress an hour of the flagship job running makes given the network's slowdowns: the mean of "
        "1 / slowdown over its samples (1: never slowed).",
        "engine.fabric.traffic.network_run",
        "goodput_with_network",
        summary="network.flagship_progress_rate",
    ),
    _d(
        "jobs_slowed",
        "Jobs slowed by the network",
        "count",
        "Distinct jobs that ran slower than on an idle network at one sample or more, because a link on their "
        "rings' paths was offered more than its capacity.",
        "engine.fabric.traffic.network_run",
        "network_jobs_hit",
        summary="network.jobs_slowed",
    ),
    # ----- faults
    _d(
        "link_faults",
        "Link faults",
        "count",
        "Faults the engine put on the fabric: network incidents (a NIC cable or a rack switch, which stop the "
        "jobs on them) plus the fabric's own faults above the racks (uplink cables and spine switches, "
        "network.fabric_faults_per_day), which ECMP routes around. One fault can take many links down.",
        "engine.fabric.traffic.network_run",
        "link_outages",
        "network_incidents",
        summary="network.link_faults",
    ),
    _d(
        "link_outages",
        "Link outages seen in samples",
        "count",
        "Groups of links seen out of service together in link_samples, from the first sample they were down "
        "to the first they were up again. A fault shorter than the sampling step is not seen and faults down "
        "over the same samples merge, so there can be fewer outages than link faults.",
        "dashboard.queries.network.outages",
        "link_faults",
    ),
    _d(
        "network_incidents",
        "Network incidents",
        "count",
        "Incidents of the Network category (the Llama 3 table's 'Network switch/cable'): a NIC cable or a rack "
        "switch failed, anywhere in the cluster, whether or not a job was hit. The fabric's own faults above "
        "the racks are not incidents.",
        "incidents where cause = network_switch_cable",
        "incidents",
        "link_faults",
    ),
    _d(
        "network_jobs_hit",
        "Jobs hit by network incidents",
        "count",
        "Distinct jobs whose running attempt a network incident ended; a job hit twice counts once.",
        "incidents.job_ids of network incidents",
        "network_job_interruptions",
        "jobs_hit",
    ),
    _d(
        "network_job_interruptions",
        "Job interruptions by network incidents",
        "count",
        "Attempts of any job that a network incident ended: the sum of jobs_hit over network incidents, so a "
        "job hit twice counts twice. The flagship job's share of it is its interruptions caused by a network "
        "switch/cable.",
        "sum of incidents.jobs_hit of network incidents",
        "network_jobs_hit",
        "interruptions",
    ),
    _d(
        "network_gpu_hours_lost",
        "GPU-hours lost to network incidents",
        "GPU-hours",
        "GPU-hours lost to incidents (incidents.gpu_hours_lost), summed over network incidents only.",
        "incidents.gpu_hours_lost of network incidents",
        "incident_gpu_hours_lost",
    ),
    # ----- degraded links
    _d(
        "degraded_link_episodes",
        "Degraded-link episodes",
        "count",
        "Fail-slow episodes of cause network in a simulated run: a host's NIC or cable kept working at a "
        "fraction of its speed (scenario keys slow.network_*), anywhere in the cluster over the run.",
        "slow_episodes rows of cause network",
        "slow_episodes",
        "link_outages",
    ),
    _d(
        "degraded_link_worst_slowdown",
        "Worst degraded-link slowdown",
        "ratio",
        "The largest slowdown factor among the run's degraded-link episodes (f: the host ran at 1/f of its "
        "speed while the episode lasted).",
        "max of slow_episodes.factor of cause network",
        "degraded_link_slowdown",
    ),
    _d(
        "degraded_link_slowdown",
        "Slowdown of the link's host",
        "ratio",
        "How many times slower the episode's host ran while its NIC or cable was degraded (f: 1/f of its speed).",
        "slow_episodes.factor",
        "degraded_link_worst_slowdown",
        scope="view",
    ),
    _d(
        "nominal_port_rate",
        "Nominal port rate",
        "Gbps",
        "The fleet's most common NIC port rate, each port counted once at its latest sample (the larger rate on "
        "a tie): node_exporter's node_infiniband_rate_bytes_per_second x 8 / 1e9. A port below it has trained "
        "down (fewer lanes or a lower speed).",
        "nic_samples.rate_gbps",
        "fabric_capacity",
    ),
    _d(
        "degraded_ports",
        "Degraded ports",
        "count",
        "NIC ports whose latest rate is below the nominal port rate, or whose link-downed, symbol-error, "
        "link-error-recovery or receive-error counter rose between two of the run's samples.",
        "nic_samples",
        "link_outages",
    ),
    _d(
        "port_error_rise",
        "Counter rise",
        "count",
        "How much the port's counter rose over the run: the sum of its increases between consecutive samples "
        "(a counter that restarts from 0, a driver reload, adds nothing).",
        "nic_samples counters",
        scope="view",
    ),
)
