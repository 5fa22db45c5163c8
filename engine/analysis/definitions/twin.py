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
        "90 % interval and the event count n. With no failure at all it is the one-sided 90 % upper bound "
        "and the default is kept.",
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
        "Backtest band",
        "5-95 %",
        "The fitted scenario simulated over the window's length under N seeds: the 5th and 95th percentile of "
        "a figure across those runs. An observed figure outside its band is the twin's error on this cluster: "
        "the fit misses something it does. Ten seeds put each end between the two outermost runs.",
        "engine.twin.backtest.backtest",
    ),
)
