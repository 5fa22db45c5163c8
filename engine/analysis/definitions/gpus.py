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
)
