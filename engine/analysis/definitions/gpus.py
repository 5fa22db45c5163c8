"""Figures of the GPUs page: the health of every GPU at a moment t, XID and ECC errors, lemons and repeat
offenders.

The health figures are read at the moment the page's slider picks; the XID, ECC and offender figures over the
whole run. The lemon and repeat-offender figures are rules applied to the incidents the run observed, not
counts of repairs: the simulator's own count of hosts it pulled is "Lemon hosts pulled" (cluster). On a simulated
run the lemon rule is also scored against the hosts the simulator drew bad (precision and recall). The page's
XID figures are "XID events" (telemetry).
"""

from engine.analysis.definitions import Definition, section

SECTION = "GPUs"


_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "gpus_in_run",
        "GPUs in the run",
        "count",
        "Every GPU of the run's gpus table: the whole cluster for a simulated or replayed run, the GPUs an "
        "ingested kernel log or DCGM scrape named for an observed one.",
        "gpus table (dashboard.queries.gpus.gpu_ids)",
    ),
    _d(
        "failed_gpus",
        "Failed GPUs",
        "count",
        "GPUs with an incident of their own (one that names the GPU) at or before the moment shown and not "
        "repaired by then; an incident never repaired keeps its GPU failed to the end of the run. An incident "
        "of a host's other parts (no GPU named) fails no GPU: its GPUs take the host's state.",
        "dashboard.queries.gpus.grid_at (state 'failed')",
        "gpus_out_of_service",
        scope="view",
    ),
    _d(
        "gpus_training",
        "GPUs training",
        "count",
        "GPUs on hosts running a job (the flagship job or a research job) at the moment shown, less the failed "
        "GPUs among them. Not known (shown as a dash) for an observed run that records no host states.",
        "dashboard.queries.gpus.grid_at (state 'running')",
        "utilisation_by_allocation",
        scope="view",
    ),
    _d(
        "gpus_out_of_service",
        "GPUs out of service",
        "count",
        "GPUs of the hosts out of service at the moment shown (draining, down, diagnosing, in repair or in "
        "burn-in), failed GPUs among them included: Hosts out of service times the GPUs of each.",
        "dashboard.queries.gpus.grid_at (host_state in engine.store.schema.OUT_OF_SERVICE_STATES)",
        "hosts_out_of_service",
        "failed_gpus",
        scope="view",
    ),
    _d(
        "xid_codes",
        "XID codes",
        "count",
        "Distinct XID and NVSwitch SXid codes among the run's XID events.",
        "xid_events table (dashboard.queries.gpus.xid_counts)",
        "xid_events",
    ),
    _d(
        "xid_span",
        "Span of the XID events",
        "seconds",
        "Time from the run's first XID event to its last: with XID events, a count over a span, not a rate. A "
        "kernel log of seconds gives no rate a day.",
        "xid_events table (dashboard.queries.gpus.xid_events)",
        "xid_events",
    ),
    _d(
        "gpus_with_ecc_errors",
        "GPUs with ECC errors",
        "count",
        "GPUs whose single-bit (corrected) or double-bit (uncorrectable) ECC count was above zero in any "
        "telemetry sample of the run.",
        "dashboard.queries.gpus.ecc_top (gpus_with_ecc)",
    ),
    _d(
        "unplanned_incidents",
        "Unplanned incidents",
        "count",
        "Incidents that were not planned and name a host, counted for one host (its GPUs and other parts) or "
        "one GPU over the whole run. Planned stops and link faults without a host are not counted.",
        "dashboard.queries.gpus.offenders",
        "incidents",
        scope="view",
    ),
    _d(
        "lemon_rule_hosts",
        "Hosts meeting the lemon rule",
        "count",
        "A rule applied to the incidents the run observed, not a count of repairs: hosts with at least "
        "repair.lemon_failures unplanned incidents of a cause that sends a host to repair within one "
        "repair.lemon_window. The simulator restarts its count once it pulls a host, so it may pull fewer.",
        "dashboard.queries.gpus.lemons",
        "lemons_pulled",
        "repeat_offender_hosts",
    ),
    _d(
        "lemon_rule_true_positives",
        "Bad hosts the lemon rule flagged",
        "count",
        "Hosts meeting the lemon rule that the simulator drew systematically bad (failures.bad_host_fraction; the "
        "hosts table's ground truth): the rule's true positives. Only a simulated run knows which hosts are bad.",
        "engine.analysis.lemon_score.score_lemon_rule (true_positives)",
        "lemon_rule_hosts",
        "bad_hosts_ground_truth",
    ),
    _d(
        "bad_hosts_ground_truth",
        "Bad hosts (ground truth)",
        "count",
        "Hosts the simulator drew systematically bad at the start of the run (failures.bad_host_fraction of "
        "them, failing at failures.bad_host_multiplier times the rate), whether or not they ever failed and even "
        "if a repair cured them later: the ground truth the lemon rule is scored against. Unknown for an "
        "observed run.",
        "engine.analysis.lemon_score.score_lemon_rule (bad_hosts), from hosts.bad",
        "lemon_rule_hosts",
    ),
    _d(
        "lemon_rule_precision",
        "Precision of the lemon rule",
        "ratio",
        "Of the hosts meeting the lemon rule, the share the simulator drew bad: Bad hosts the lemon rule "
        "flagged divided by Hosts meeting the lemon rule. Undefined (a dash) when the rule flags no host; "
        "flagging hosts at random would score the share of bad hosts.",
        "engine.analysis.lemon_score.score_lemon_rule (precision)",
        "lemon_rule_recall",
    ),
    _d(
        "lemon_rule_recall",
        "Recall of the lemon rule",
        "ratio",
        "Of the hosts the simulator drew bad, the share the lemon rule flagged: Bad hosts the lemon rule flagged "
        "divided by Bad hosts (ground truth). Undefined (a dash) when no host is bad. A bad host that never "
        "failed often enough in one window is missed, however bad.",
        "engine.analysis.lemon_score.score_lemon_rule (recall)",
        "lemon_rule_precision",
    ),
    _d(
        "repeat_offender_hosts",
        "Hosts with repeat incidents",
        "count",
        "A rule on the incidents the run observed: hosts with two or more unplanned incidents of any cause (on "
        "the host or one of its GPUs) over the whole run, however far apart.",
        "dashboard.queries.gpus.offenders(by='host', minimum=2)",
        "lemon_rule_hosts",
    ),
    _d(
        "repeat_offender_gpus",
        "GPUs with repeat incidents",
        "count",
        "A rule on the incidents the run observed: GPUs named by two or more unplanned incidents over the "
        "whole run.",
        "dashboard.queries.gpus.offenders(by='gpu', minimum=2)",
        "repeat_offender_hosts",
    ),
    # throttled and slow GPUs (dashboard.gpus.throttled): DCGM's clocks-event reasons (field 112), SM clock (100)
    # and violation counters (240, 241); a simulated run's fail-slow episodes on GPUs
    _d(
        "throttled_gpus",
        "Throttled GPUs",
        "count",
        "GPUs held down for power or heat at least once in the run: a telemetry sample whose clocks-event reasons "
        "(DCGM field 112) include power cap, HW slowdown, SW or HW thermal slowdown or HW power brake, or a "
        "power- or thermal-violation counter that rose. Idle, an applications-clocks setting, sync boost and "
        "display clocks are reasons too, but not throttling. A throttle shorter than the sampling step may fall "
        "between samples (a fail-slow episode on the GPU still lists it).",
        "dashboard.queries.gpus_throttled.throttled_gpus",
        "gpus_with_slow_episodes",
        "slow_episodes",
    ),
    _d(
        "throttled_samples_share",
        "Throttled samples",
        "ratio",
        "Of all the run's telemetry samples with a clocks-event reading, the share with a throttle reason set "
        "(as in Throttled GPUs): a share of samples, not of time or of GPUs.",
        "dashboard.queries.gpus_throttled: throttled_gpus (throttled_samples) over coverage (clock_samples)",
        "gpu_throttled_share",
    ),
    _d(
        "gpu_throttled_share",
        "Share of the GPU's samples throttled",
        "ratio",
        "Of one GPU's telemetry samples with a clocks-event reading, the share with a throttle reason set: a share "
        "of samples (taken every telemetry step in a simulated run, every scrape in an observed one), which "
        "approaches the share of time only when throttles last longer than the step.",
        "dashboard.queries.gpus_throttled.top_gpus (throttled_share)",
        "throttled_samples_share",
        scope="view",
    ),
    _d(
        "lowest_sm_clock_throttled",
        "Lowest SM clock while throttled",
        "MHz",
        "The lowest SM clock (DCGM field 100) among one GPU's throttled samples: how far the limit held it down "
        "(an H100 SXM boosts to 1,980 MHz).",
        "dashboard.queries.gpus_throttled.throttled_gpus (lowest_clock_mhz)",
        "median_sm_clock_throttled",
        scope="view",
    ),
    _d(
        "median_sm_clock_throttled",
        "Median SM clock while throttled",
        "MHz",
        "The median SM clock (DCGM field 100) of one GPU's throttled samples.",
        "dashboard.queries.gpus_throttled.throttled_gpus (median_clock_mhz)",
        "lowest_sm_clock_throttled",
        scope="view",
    ),
    _d(
        "power_violation_time",
        "Power-violation time",
        "seconds",
        "How much DCGM's power-violation counter (field 240, time the GPU was held down by its power limit, "
        "cumulative, in nanoseconds) rose over the run on one GPU: its highest reading less its lowest. Only "
        "observed runs read the counter; blank where it was not read.",
        "dashboard.queries.gpus_throttled.throttled_gpus (power_violation_s)",
        "thermal_violation_time",
        scope="view",
    ),
    _d(
        "thermal_violation_time",
        "Thermal-violation time",
        "seconds",
        "How much DCGM's thermal-violation counter (field 241, time the GPU was held down by its temperature "
        "limit, cumulative, in nanoseconds) rose over the run on one GPU: its highest reading less its lowest. "
        "Only observed runs read the counter; blank where it was not read.",
        "dashboard.queries.gpus_throttled.throttled_gpus (thermal_violation_s)",
        "power_violation_time",
        scope="view",
    ),
    _d(
        "gpus_with_slow_episodes",
        "GPUs with fail-slow episodes",
        "count",
        "GPUs with at least one fail-slow episode of their own (scenario keys slow.gpu_thermal_* and "
        "slow.gpu_power_*: the GPU throttled for heat or power) in a simulated run. Slow hosts and links are "
        "not counted: their GPUs wait, they are not held down.",
        "dashboard.queries.gpus_throttled.throttled_gpus (slow_episodes > 0)",
        "slow_episodes",
        "throttled_gpus",
    ),
    _d(
        "gpu_slow_episodes",
        "Fail-slow episodes of the GPU",
        "count",
        "One GPU's own fail-slow episodes (gpu_thermal, gpu_power) over the run, in a simulated run.",
        "dashboard.queries.gpus_throttled.throttled_gpus (slow_episodes)",
        "slow_episodes",
        scope="view",
    ),
    _d(
        "gpu_time_slow",
        "Time the GPU ran slow",
        "seconds",
        "The time covered by at least one of one GPU's own fail-slow episodes, within the run (overlapping "
        "thermal and power episodes counted once).",
        "dashboard.queries.gpus_throttled.throttled_gpus (slow_s)",
        "gpu_slow_episodes",
        scope="view",
    ),
    _d(
        "gpu_worst_slowdown",
        "Worst slowdown factor of the GPU",
        "ratio",
        "The largest factor among one GPU's own fail-slow episodes: the GPU ran at 1/factor of its speed (and "
        "a synchronous job on it at the pace of its slowest host).",
        "dashboard.queries.gpus_throttled.throttled_gpus (worst_factor)",
        "slowdown_fail_slow",
        scope="view",
    ),
    _d(
        "throttled_gpus_per_window",
        "Throttled GPUs per window",
        "count",
        "GPUs with a throttle reason (as in Throttled GPUs) in at least one of their samples within each "
        "window of the run, by reason and for any reason; a GPU with two reasons counts under each.",
        "dashboard.queries.gpus_throttled.throttle_timeline",
        "throttled_gpus",
        scope="view",
    ),
)
