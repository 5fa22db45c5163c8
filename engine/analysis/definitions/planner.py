"""The Planner's figures: closed forms from the knobs alone (no run), and bands over the seeds of many runs.

A figure the Planner computes without simulating says "closed form" in its label; one over many simulated
runs says "over seeds". A single simulated run is shown under the goodput ledger's own labels (ETTR
(goodput), Job MTTF, Interruptions, Goodput lost): it is that figure, of a run not stored.
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
        "its delta and the band give the 5th and 95th percentiles.",
        "engine.sim.sweep.bands (ettr_mean)",
        "ettr",
        "closed_form_ettr",
    ),
    _d(
        "ettr_p5_over_seeds",
        "ETTR, 5th percentile of seeds",
        "ratio",
        "The ETTR (goodput) that 95 % of the seeds' runs reach or beat.",
        "engine.sim.sweep.bands (ettr_p5)",
        "mean_ettr_over_seeds",
    ),
    _d(
        "ettr_p95_over_seeds",
        "ETTR, 95th percentile of seeds",
        "ratio",
        "The ETTR (goodput) that only 5 % of the seeds' runs beat.",
        "engine.sim.sweep.bands (ettr_p95)",
        "mean_ettr_over_seeds",
    ),
    _d(
        "mean_goodput_with_network_over_seeds",
        "Mean goodput with network slowdown over seeds",
        "ratio",
        "Goodput with network slowdown of the flagship job averaged over the seeds' runs.",
        "engine.sim.sweep.bands (ettr_with_network_mean)",
        "goodput_with_network",
    ),
    _d(
        "mean_job_mttf_over_seeds",
        "Mean job MTTF over seeds",
        "hours",
        "Job MTTF of the flagship job averaged over the seeds' runs.",
        "engine.sim.sweep.bands (mttf_hours_mean)",
        "job_mttf",
        "closed_form_job_mttf",
    ),
    _d(
        "mean_interruptions_over_seeds",
        "Mean interruptions over seeds",
        "count",
        "Interruptions (unexpected and planned) of the flagship job averaged over the seeds' runs.",
        "engine.sim.sweep.bands (interruptions_mean)",
        "interruptions",
    ),
    _d(
        "mean_goodput_lost_usd_over_seeds",
        "Mean goodput lost over seeds (USD)",
        "USD",
        "Goodput lost of the flagship job in dollars (lost work + restart overhead + checkpoint writes + waiting "
        "for spare hosts at the GPU-hour price) averaged over the seeds' runs.",
        "engine.sim.sweep.bands (lost_usd_mean)",
        "goodput_lost",
    ),
)
