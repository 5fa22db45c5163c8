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
