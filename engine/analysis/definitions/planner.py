"""The Planner's figures: closed forms from the knobs alone (no run), and bands over the seeds of many runs.

A figure the Planner computes without simulating says "closed form" in its label; one over many simulated
runs says "over seeds" (a percentile: "of seeds"). A single simulated run is shown under the goodput ledger's
own labels (ETTR (goodput), Job MTTF, Interruptions, Goodput lost): it is that figure, of a run not stored.
The recovery strategies' studies (engine.twin.scale) say "at scale" or "standby" in their labels.
"""

from engine.analysis.definitions import Definition, section

SECTION = "Planner"


_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "closed_form_job_mttf",
        "Closed-form job MTTF",
        "hours",
        "1 / (job hosts x failure rate with the category multipliers): how long the flagship job runs between "
        "unexpected interruptions on average, from the knobs alone.",
        "engine.analysis.analytics.closed_form_ettr (ClosedForm.mttf_s)",
        "job_mttf",
    ),
    _d(
        "closed_form_ettr_at_young_daly",
        "Closed-form ETTR at Young-Daly",
        "ratio",
        "The closed-form ETTR with the checkpoint interval set to its Young-Daly optimum, every other knob as "
        "set; its delta is the gain over the interval chosen.",
        "engine.analysis.analytics.closed_form_ettr(checkpoint_interval_s=young_daly_interval)",
        "closed_form_ettr",
    ),
    _d(
        "closed_form_goodput_lost",
        "Closed-form goodput lost",
        "GPU-hours",
        "The closed form's lost work (half an interval a failure), restart overhead and checkpoint writes over "
        "the scenario's days, times the job's GPUs; its dollar figure at the GPU-hour price. The first-order "
        "model has no queue for spares, and the network slowdown is shown on its own.",
        "engine.analysis.planner.closed_form_losses",
        "goodput_lost",
    ),
    _d(
        "closed_form_unexpected_interruptions",
        "Closed-form unexpected interruptions",
        "count",
        "Unexpected interruptions of the flagship job the closed form expects over the scenario's days: job "
        "hosts x failure rate x days. Planned ones are not counted.",
        "engine.analysis.analytics.ClosedForm.failures_per_s x simulation.days",
        "unexpected_interruptions",
    ),
    _d(
        "planner_placement_slowdown",
        "Placement slowdown (closed form)",
        "ratio",
        "How many times as long the flagship job's steps take on the hosts its placement gives it: its ring "
        "alone on the fabric, every link up, at the network demand per GPU set. 1 (none) when no link is "
        "oversubscribed.",
        "engine.fabric.traffic.placement_slowdown",
        "network_slowdown",
    ),
    _d(
        "spare_hosts_in_use",
        "Spare hosts in use (closed form)",
        "hosts",
        "The flagship job's hosts away in repair at once, on average (Little's law): its failures that send a "
        "host to repair a second, times the hosts each takes, times drain + diagnose + fix + RMA share x RMA time "
        "+ burn-in. Its delta compares it with the hot spares held.",
        "engine.analysis.planner.spare_cover (hosts_away)",
        "spares_run_out",
    ),
    _d(
        "spares_run_out",
        "Chance spares run out (closed form)",
        "ratio",
        "Share of the time more of the job's hosts are in repair than hot spares are held (Poisson about the "
        "spare hosts in use; 100 % once the technicians are over-loaded). Then the job borrows a research host "
        "(spares.preempt_research) or waits: the simulated run shows it as waiting for spare hosts.",
        "engine.analysis.planner.spare_cover (run_out)",
        "spare_hosts_in_use",
        "waiting_for_spares",
    ),
    _d(
        "technician_load",
        "Technician load (closed form)",
        "ratio",
        "Share of the technicians' time the whole cluster's repairs ask for: every host's failures to repair a "
        "second x mean fix time / technicians. At 100 % or more the repair queue grows without end.",
        "engine.analysis.planner.spare_cover (technician_load)",
    ),
    _d(
        "mean_ettr_over_seeds",
        "Mean ETTR over seeds",
        "ratio",
        "ETTR (goodput) of the flagship job averaged over summary-only runs of the same settings, one a seed; "
        "its delta and the band give the 5th and 95th percentiles. Started from a twin, each run first draws the "
        "fitted keys left at the fit from their laws, and the band is the Twin band.",
        "engine.twin.sweep.bands (ettr_mean)",
        "ettr",
        "closed_form_ettr",
    ),
    _d(
        "ettr_p5_over_seeds",
        "ETTR, 5th percentile of seeds",
        "ratio",
        "The ETTR (goodput) that 95 % of the seeds' runs reach or beat.",
        "engine.twin.sweep.bands (ettr_p5)",
        "mean_ettr_over_seeds",
    ),
    _d(
        "ettr_p95_over_seeds",
        "ETTR, 95th percentile of seeds",
        "ratio",
        "The ETTR (goodput) that only 5 % of the seeds' runs beat.",
        "engine.twin.sweep.bands (ettr_p95)",
        "mean_ettr_over_seeds",
    ),
    _d(
        "mean_goodput_with_network_over_seeds",
        "Mean goodput with network slowdown over seeds",
        "ratio",
        "Goodput with network slowdown of the flagship job averaged over the seeds' runs.",
        "engine.twin.sweep.bands (ettr_with_network_mean)",
        "goodput_with_network",
    ),
    _d(
        "mean_job_mttf_over_seeds",
        "Mean job MTTF over seeds",
        "hours",
        "Job MTTF of the flagship job averaged over the seeds' runs.",
        "engine.twin.sweep.bands (mttf_hours_mean)",
        "job_mttf",
        "closed_form_job_mttf",
    ),
    _d(
        "mean_interruptions_over_seeds",
        "Mean interruptions over seeds",
        "count",
        "Interruptions (unexpected and planned) of the flagship job averaged over the seeds' runs.",
        "engine.twin.sweep.bands (interruptions_mean)",
        "interruptions",
    ),
    _d(
        "mean_goodput_lost_usd_over_seeds",
        "Mean goodput lost over seeds (USD)",
        "USD",
        "Goodput lost of the flagship job in dollars (lost work + restart overhead + checkpoint writes + waiting "
        "for spare hosts at the GPU-hour price) averaged over the seeds' runs.",
        "engine.twin.sweep.bands (lost_usd_mean)",
        "goodput_lost",
    ),
    # ----- recovery strategies: the scale study and the standby break-even (engine.twin.scale) -----
    _d(
        "scale_mean_ettr",
        "Mean ETTR at scale over seeds",
        "ratio",
        "ETTR (goodput) of a flagship job of the size shown under the recovery strategy shown, averaged over "
        "summary-only runs one a seed: the job alone on a cluster of its hosts and spares (the settings' spares "
        "per job host, at least the warm standbys), research and telemetry off, every other setting as set, over "
        "the scale study's horizon.",
        "engine.twin.scale.scale_bands (ettr_mean)",
        "mean_ettr_over_seeds",
        "ettr",
    ),
    _d(
        "scale_ettr_p10",
        "ETTR at scale, 10th percentile of seeds",
        "ratio",
        "The ETTR (goodput) that 90 % of the seeds' runs of that size and strategy reach or beat: the lower "
        "edge of the band on the scale chart.",
        "engine.twin.scale.scale_bands (ettr_p10)",
        "scale_mean_ettr",
        "ettr_p5_over_seeds",
    ),
    _d(
        "scale_ettr_p90",
        "ETTR at scale, 90th percentile of seeds",
        "ratio",
        "The ETTR (goodput) that only 10 % of the seeds' runs of that size and strategy beat: the upper edge of "
        "the band on the scale chart.",
        "engine.twin.scale.scale_bands (ettr_p90)",
        "scale_mean_ettr",
        "ettr_p95_over_seeds",
    ),
    _d(
        "scale_horizon_days",
        "Scale study horizon",
        "days",
        "The days each run of a job size simulates: enough for about 100 interruptions of the job (its hosts' "
        "unexpected failures at the rate set, plus the planned ones), at least a day and twice a failed host's "
        "time away, at most a year. A fixed span would give a 1k-GPU job a handful of failures and a 256k-GPU "
        "job thousands.",
        "engine.twin.scale.horizon_days",
    ),
    _d(
        "scale_best_strategy",
        "Best strategy at scale",
        "strategy",
        "The recovery strategy with the highest mean ETTR at scale over seeds for a job size.",
        "engine.twin.scale.best_strategy",
        "scale_mean_ettr",
    ),
    _d(
        "standby_goodput_won_usd",
        "Goodput won by standbys over seeds (USD)",
        "USD",
        "(ETTR with the warm standbys - ETTR of restart on the same hosts and seed) x the job's GPUs x the "
        "scenario's hours x the GPU-hour price, averaged over the seeds: what faster swaps are worth.",
        "engine.twin.standby.run_break_even (won_usd)",
        "standby_cost_usd",
    ),
    _d(
        "standby_cost_usd",
        "Standby cost over seeds (USD)",
        "USD",
        "The warm standby hosts' GPU-hours spent idle at the GPU-hour price (each run's recovery cost of "
        "standbys), averaged over the seeds.",
        "engine.twin.standby.run_break_even (standby_usd)",
        "standby_goodput_won_usd",
    ),
    _d(
        "standby_net_usd",
        "Net value of standbys over seeds (USD)",
        "USD",
        "Goodput won by standbys minus their cost, averaged over the seeds (its band: the 10th to 90th "
        "percentile). Above zero the standbys pay for themselves.",
        "engine.twin.standby.break_even_bands (net_usd_mean)",
        "standby_goodput_won_usd",
        "standby_cost_usd",
    ),
    _d(
        "standby_best_count",
        "Most valuable standby count",
        "hosts",
        "Of the standby counts run, the one with the highest net value of standbys (0 where no count pays).",
        "engine.twin.standby.break_even_of (best)",
        "standby_break_even",
    ),
    _d(
        "standby_break_even",
        "Standby break-even",
        "hosts",
        "Past the most valuable count, the number of warm standby hosts at which the mean net value falls to "
        "zero (linear between the counts run): more standbys than this cost more than the goodput they win.",
        "engine.twin.standby.break_even_of (break_even)",
        "standby_best_count",
    ),
)
