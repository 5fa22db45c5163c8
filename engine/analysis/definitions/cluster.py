"""Figures of the whole cluster: its hosts and GPUs, whatever job they run."""

from engine.analysis.definitions import Definition, section

SECTION = "Cluster"


_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "research_preemptions",
        "Research jobs preempted",
        "count",
        "Research jobs stopped because the flagship job had no spare host left and took theirs "
        "(spares.preempt_research); each loses its work and the flagship waits spares.preempt_handover for the "
        "host. What running with few hot spares costs the rest of the cluster.",
        "engine.sim.simulate.Simulation._preempt_research",
        "research_lost_gpu_hours",
        "waiting_for_spares",
        summary="cluster.research_preemptions",
    ),
    _d(
        "research_lost_gpu_hours",
        "Research GPU-hours lost",
        "GPU-hours",
        "Research work thrown away: the GPU-hours research jobs had run when a failure or a preemption ended "
        "them (research jobs keep no checkpoints).",
        "engine.analysis.summary",
        "research_preemptions",
        summary="cluster.research_lost_gpu_hours",
    ),
    _d(
        "utilisation_by_allocation",
        "Utilisation (allocated)",
        "ratio",
        "Share of all GPU-hours of the cluster (GPUs x run length) that hosts spent allocated to a running job, "
        "flagship or research, whether or not that time became progress.",
        "engine.analysis.summary",
        "utilisation_by_progress",
        "gpu_hours_down",
        summary="cluster.utilization",
    ),
    _d(
        "utilisation_by_progress",
        "Utilisation (progress)",
        "ratio",
        "Share of all GPU-hours of the cluster that became kept training progress: the flagship job's "
        "productive GPU-hours plus research jobs' completed work, over GPUs x run length.",
        "engine.analysis.ledger.cluster_progress_share",
        "utilisation_by_allocation",
        summary="cluster.utilization_progress",
    ),
    _d(
        "gpu_hours_down",
        "GPU-hours out of service",
        "GPU-hours",
        "GPU-hours of hosts out of service: draining, down, diagnosing, in repair or burn-in "
        "(engine.store.schema.OUT_OF_SERVICE_STATES).",
        "engine.analysis.summary",
        "utilisation_by_allocation",
        summary="cluster.gpu_hours_down",
    ),
    _d(
        "cluster_gpu_hours",
        "Cluster GPU-hours",
        "GPU-hours",
        "Every GPU of the cluster times the run's length.",
        "engine.analysis.summary",
        summary="cluster.gpu_hours",
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
        "engine.analysis.summary",
        summary="cluster.lemons",
    ),
    # fail-slow episodes (engine.sim.slow; simulated runs with slow.* rates only)
    _d(
        "slow_episodes",
        "Fail-slow episodes",
        "count",
        "Episodes in which a host kept working, slowly (GPU thermal throttling or power capping, a slow host, a "
        "degraded NIC or cable: scenario keys slow.*), anywhere in the cluster over the run. The flagship job "
        "runs at the pace of its slowest host while one of its hosts has one (its cost: Slowdown (fail-slow)).",
        "engine.sim.slow",
        "slowdown_fail_slow",
        "slow_hosts_swapped",
        summary="cluster.slow_episodes",
    ),
    _d(
        "slow_hosts_swapped",
        "Fail-slow hosts swapped out",
        "count",
        "Hosts of the flagship job taken out for repair because a fail-slow episode was detected on them "
        "(slow.detect_after into it): swapped for a spare at once, with a graceful restart of the job (slow.policy "
        "= swap), or at the job's next interruption (slow.policy = drain). Zero under slow.policy = ignore.",
        "engine.sim.slow",
        "slow_episodes",
        summary="cluster.slow_hosts_swapped",
    ),
    # bursts: failures of several hosts at one instant (engine.sim.failures.draw_bursts; failures.burst_per_day)
    _d(
        "bursts",
        "Bursts",
        "count",
        "Correlated failures that struck several hosts at one instant (a rack's PDU, a leaf switch, a bad batch "
        "of parts: scenario keys failures.burst_*), counted once each; a burst that found all but one of its hosts "
        "out of service struck one and reads as any failure, so it is not counted. Each host struck is an "
        "incident of its own; the flagship job hit on several of its hosts is interrupted once.",
        "engine.analysis.summary (engine.sim.simulate.simultaneous_groups)",
        "burst_hosts",
        "incidents",
        summary="cluster.bursts",
    ),
    _d(
        "burst_hosts",
        "Hosts struck by bursts",
        "count",
        "Hosts the bursts struck over the run (those counted in Bursts), each an incident: failures beyond the "
        "hosts' own rate (failures.rate_per_1000_node_days).",
        "engine.analysis.summary (engine.sim.simulate.simultaneous_groups)",
        "bursts",
        summary="cluster.burst_hosts",
    ),
    # bad hosts, diagnosis, repair outcomes, retirement (engine.sim.bad_hosts; simulated runs only)
    _d(
        "bad_hosts_cured",
        "Bad hosts cured",
        "count",
        "Hosts drawn systematically bad (failures.bad_host_fraction) that a repair truly fixed: a repair that "
        "reported success without failing silently (repair.*_silent_failure). A cured host fails at the base "
        "rate from then on.",
        "engine.sim.bad_hosts.bad_host_summary",
        "bad_hosts_ground_truth",
        "bad_hosts_left",
        summary="cluster.bad_hosts_cured",
    ),
    _d(
        "bad_hosts_left",
        "Bad hosts left in service",
        "count",
        "Hosts still systematically bad at the end of the run and not retired: never repaired, or repaired only "
        "by repairs that failed silently.",
        "engine.sim.bad_hosts.bad_host_summary",
        "bad_hosts_ground_truth",
        "bad_hosts_cured",
        summary="cluster.bad_hosts_in_service_at_end",
    ),
    _d(
        "retired_hosts",
        "Retired hosts",
        "count",
        "Hosts the retirement policy (retirement.policy: a threshold of failures within a window, or a score "
        "of failures halving every window) took out of the cluster for good instead of repairing them; they "
        "are out of service (state retired) to the end of the run.",
        "engine.sim.bad_hosts.bad_host_summary",
        "lemons_pulled",
        summary="cluster.retired_hosts",
    ),
    _d(
        "misdiagnoses",
        "Misdiagnoses",
        "count",
        "Single-host failures whose diagnosis found no host (diagnosis.probability: the host stayed in service "
        "and its job restarted on it) or blamed another host of the flagship job, which went to repair while "
        "the faulty one stayed (diagnosis.wrong_host).",
        "engine.sim.bad_hosts.bad_host_summary",
        "over_evicted_hosts",
        summary="cluster.misdiagnoses",
    ),
    _d(
        "over_evicted_hosts",
        "Over-evicted hosts",
        "count",
        "Suspect hosts evicted from the flagship job with a host blamed for a failure (diagnosis.over_eviction: "
        "its nearest neighbours in rank order), each sent through repair although nothing was found on it.",
        "engine.sim.bad_hosts.bad_host_summary",
        "misdiagnoses",
        summary="cluster.over_evicted_hosts",
    ),
    _d(
        "silent_repair_failures",
        "Silent repair failures",
        "count",
        "Repairs, automatic or hands-on, that reported success but left the fault (repair.automatic_silent_"
        "failure, repair.manual_silent_failure): a bad host comes back still bad; a good host's failures are "
        "random, so it comes back as good as it was.",
        "engine.sim.bad_hosts.bad_host_summary",
        "bad_hosts_left",
        summary="cluster.silent_repair_failures",
    ),
)
