"""Figures of the twin fitted to a run (`goodput calibrate`, the Twin page): what it learned, on how much
evidence, and how well it reproduces the window it learned from (the backtest)."""

from engine.analysis.definitions import Definition, section

SECTION = "Twin"
FIGURES = "engine.analysis.window_figures.window_figures"

_d = section(SECTION, default_scope="view")  # every figure depends on the window the fit covers


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "exposure_host_days",
        "Host-days in service (exposure)",
        "host-days",
        "Host-time that was observed and in service (healthy, running or spare) inside the window: the time "
        "over which a failure could have been seen. Gaps in a watch, hosts not yet seen and hosts in repair "
        "are left out, so a fitted rate is not diluted by time nobody watched.",
        "engine.twin.calibrate.calibrate",
        "fitted_failure_rate",
    ),
    _d(
        "fitted_failure_rate",
        "Fitted failure rate",
        "per 1,000 host-days",
        "Unexpected failures per 1,000 host-days of exposure in the window, with its exact (Garwood) Poisson "
        "90 % interval and the event count n: each cause's events over its exposure (host-time running a job "
        "for a job's cause), summed; a cause never seen is a fitted zero with its upper bound. With fewer "
        "than five failures in all the rate is shrunk toward the default, and with none it is the one-sided "
        "90 % upper bound and the default is kept.",
        "engine.twin.calibrate.calibrate",
        "exposure_host_days",
    ),
    _d(
        "window_interruptions",
        "Interruptions of the largest job (window)",
        "count",
        "Incidents that began inside the window and hit the run's largest job (most GPUs), planned ones "
        "included: over the whole of a simulated run it is the run's Interruptions.",
        FIGURES,
        "interruptions",
        "window_incidents",
    ),
    _d(
        "window_incidents",
        "Unexpected incidents (window)",
        "count",
        "Unexpected incidents anywhere in the cluster that began inside the window, whatever they hit.",
        FIGURES,
        "incidents",
        "window_interruptions",
    ),
    _d(
        "window_gpu_hours_lost",
        "GPU-hours lost by the largest job (window)",
        "GPU-hours",
        "The largest job's wall clock inside the window (first start to its end or the window's) less what it "
        "kept: attempt time less the work lost after the last checkpoint before each interruption and less "
        "checkpoint writes, times its GPUs. Without its checkpoints read it is a lower bound.",
        FIGURES,
        "window_ettr",
    ),
    _d(
        "window_ettr",
        "ETTR of the largest job (window)",
        "ratio",
        "What the largest job kept over its wall clock inside the window (see GPU-hours lost by the largest "
        "job). Over the whole of a simulated run it equals the run's ETTR to rounding; without the job's "
        "checkpoints read it is an upper bound.",
        FIGURES,
        "ettr",
        "window_gpu_hours_lost",
    ),
    _d(
        "window_hosts_in_repair",
        "Hosts in repair (window mean)",
        "hosts",
        "Hosts out of service (draining, down, diagnosing, in repair, burning in or retired), averaged over "
        "the window; the Twin page also draws each day's mean.",
        FIGURES,
    ),
    _d(
        "window_repair_median",
        "Time to repair, median (window)",
        "seconds",
        "The median of the time to repair (repaired_s - t_s) of the unexpected incidents that began inside the "
        "window, put a host out (repaired after they began) and were repaired by the window's end, read between "
        "order statistics (linear). A job-level cause (a reboot at most) puts no host out and is not counted; a "
        "repair still open at the window's end is left out on both sides alike, so the observed and the simulated "
        "values compare. Not the twin's fitted median, which counts the open repairs as censored (Kaplan-Meier).",
        FIGURES,
        "window_repair_p90",
    ),
    _d(
        "window_repair_p90",
        "Time to repair, 90th percentile (window)",
        "seconds",
        "The 90th percentile of the same repairs as the median time to repair (window): unexpected incidents that "
        "began inside the window, put a host out and were repaired by its end, read between order statistics "
        "(linear).",
        FIGURES,
        "window_repair_median",
    ),
    _d(
        "window_faults_by_week",
        "Faults by week (window)",
        "count a week",
        "Unexpected incidents that began in each week from the window's start (the last week may be partial), "
        "each host's fault once: a burst of five hosts is five. The backtest bands each week on its own (the "
        "twin's runs' faults of that week), so about one week in ten falls outside a 90 % band by chance alone; "
        "a run of weeks outside on one side is the twin's error.",
        FIGURES,
        "window_incidents",
        "drift_test",
    ),
    _d(
        "window_unknown_share",
        "Faults of unknown cause (window)",
        "share of unexpected incidents",
        "The share of the window's unexpected incidents whose cause the simulator does not model (an ingested "
        "ticket no rule of the causes map named). The simulator draws no such cause, so its band is a "
        "beta-binomial prediction instead of the runs': the window's count of incidents n, each unknown with the "
        "fit's share drawn from its Jeffreys posterior Beta(u + 1/2, f - u + 1/2) (u unknown of f faults fitted), "
        "the 5 % and 95 % quantiles over n. Shown only where either window had such a fault.",
        "engine.twin.backtest.backtest",
        "unknown_cause_share",
    ),
    _d(
        "unknown_cause_share",
        "Faults of unknown cause",
        "share of unexpected faults",
        "The fitted window's unexpected faults whose cause the simulator does not model (an ingested ticket no "
        "rule of the causes map named, or a cause of another taxonomy), over all its unexpected faults. They "
        "still happened: they count in the fitted failure rate, shared among the known causes in their "
        "proportions.",
        "engine.twin.calibrate.calibrate",
        "window_unknown_share",
        "fitted_failure_rate",
    ),
    _d(
        "drift_test",
        "Failure rate by week and its test of one level",
        "per 1,000 host-days",
        "Each week from the window's start: the fault events (a burst, faults of different hosts starting within "
        "failures.burst_window of each other, counts once) over the host-days in service (healthy, running or "
        "spare), per 1,000 host-days, and the median time to repair of the week's faults. The test: the largest "
        "Poisson likelihood ratio of two rates against one over every split leaving at least 4 weeks each side (a "
        "scan, Worsley 1986); its p-value is exact given the total, from 999 draws of the weeks' counts under one "
        "rate (multinomial in proportion to the exposure, a fixed seed). A change at p < 0.01 is taken and the "
        "weeks after it scanned again (at most three changes): the twin fits its rates to the weeks after the "
        "last change. Fewer than 8 weeks with hosts in service, or fewer than two fault events, are too short to "
        "test. The repair time is tested alike: the largest two-sample t of the log repair times before and after "
        "a split (at least 20 repairs each side), its p-value from 199 permutations; where it changed, the repair "
        "law is fitted to the repairs after.",
        "engine.twin.drift.rate_changes",
        "fitted_failure_rate",
    ),
    _d(
        "burst_rate",
        "Fitted burst rate",
        "per day",
        "Bursts beyond chance a day: the unexpected faults of the fitted weeks (after the last change of rate) in "
        "order of start, a fault beginning within failures.burst_window of the one before it joining its group; a "
        "group of two hosts or more is a burst of that size. Independent faults also fall that close by chance: (n - "
        "1)(1 - exp(-n w / T)) pairs of n faults over T days, so that many groups of two (at most all of them) are "
        "not counted. The rate is bursts over days with its exact Poisson 90 % interval; the mean size is 2 plus the "
        "mean of each burst's hosts beyond two (a geometric law, p's Jeffreys posterior Beta(n + 1/2, k + 1/2) "
        "giving its interval). The hosts bursts struck are taken out of the independent failure rate.",
        "engine.twin.fit_bursts.fit_bursts",
        "bursts",
        "fitted_failure_rate",
    ),
    _d(
        "backtest_time_split",
        "Time split",
        "days",
        "The backtest of a window that ends before the run does (the Twin page's window, or `goodput calibrate "
        "--until D --backtest`): the twin fitted on the days before D forecasts the days from D to the run's end, "
        "which it never saw. Each run first simulates a warm-up (30 days, or the fit's whole window if shorter), so "
        "the forecast does not open with every host healthy and no repair under way, then the days after D; the "
        "observed figures are those of the days after D. At least a day must follow D.",
        "engine.twin.backtest.split_of",
        "backtest_band",
    ),
    _d(
        "backtest_band",
        "Twin band",
        "90 % prediction interval",
        "Where the next value of a figure falls, 90 % of the time: the twin's scenario simulated N times, each "
        "run first drawing every fitted key from its law (a parametric bootstrap: Poisson rates from Jeffreys' "
        "posterior, means and medians from their sampling laws, the repair law from its likelihood), so the "
        "band holds what the fit does not know as well as the luck of the runs. The band is the k-th smallest "
        "and k-th largest run, which hold a new run (N + 1 - 2k) / (N + 1) of the time whatever the figure's "
        "law; 20 runs give the smallest and largest, 90.5 %; fewer than 19 hold less, and say how much. In a "
        "backtest an observed figure outside its band is the twin's error on this cluster: the fit misses "
        "something it does. Forecasts and the Planner started from a twin use the same bands.",
        "engine.twin.prediction.prediction_interval",
        "fitted_failure_rate",
    ),
    _d(
        "fit_assumed",
        "Assumed and default keys",
        "keys",
        "The scenario keys this run could not show: the flagship's spare pool or size where no job or spare was "
        "seen (assumed, and said in a warning), and every key the fit does not set (the default of "
        "engine/scenario/keys.py, the llama3-405b scenario). A key whose events were counted and found none is "
        "not among them: it is a fitted zero with its upper bound.",
        "engine.twin.calibrate.Calibration.assumed",
        "backtest_band",
    ),
)
