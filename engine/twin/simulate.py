"""`simulate(scenario) -> Run`: one run of the twin, from the model's records to the tables and summary a run
writes to the store (DESIGN "The store").

Randomness: each part draws from its own named stream of `simulation.seed` (engine.sim.streams), so the
telemetry and the network (drawn here, after the model) never shift the model's draws.
"""

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import polars as pl

from engine import telemetry
from engine.analysis.summary import summarize
from engine.fabric.traffic import network_run
from engine.scenario import Scenario
from engine.sim.failures import Arrivals
from engine.sim.host_timeline import host_states, out_of_service
from engine.sim.simulate import run_model
from engine.sim.streams import Stream, generator
from engine.sim.tables import incidents_frame, job_frames, slow_episodes_frame
from engine.store.run import Run
from engine.units import SECONDS_PER_DAY


def simulate(
    scenario: Scenario,
    *,
    name: str | None = None,
    progress: Callable[[float], None] | None = None,
    summary_only: bool = False,
    figures_only: bool = False,
    arrivals: Arrivals | None = None,
    planned_times: np.ndarray | None = None,
    kind: str = "simulate",
) -> Run:
    """Run `scenario` and return its Run (kind simulate): metadata, summary and the store tables.

    `summary_only` (the planner's sliders): the same events and summary, but only the incidents table is built
    (no hosts, GPUs, links, jobs, host_states or telemetry), which keeps a llama3-405b run well under a second.
    `arrivals` and `planned_times` (replay then fork, engine.replay.incidents): feed exactly these failures and
    planned stops instead of drawing them; every other part still draws from its own child generator, so a
    run's own failures fed back under the same scenario reproduce it.
    `figures_only` (a backtest's runs, engine.analysis.window_figures): incidents, jobs, attempts, checkpoints and
    only the out-of-service rows of host_states (engine.sim.host_timeline.out_of_service); the same events.
    """
    seed = scenario.simulation.seed
    model = run_model(scenario, progress=progress, arrivals=arrivals, planned_times=planned_times)
    topo, result = model.topology, model.result
    # a replay's failures (fed in) were not caused by the hosts this run draws bad: it has no ground truth
    ground_truth = kind == "simulate"
    incidents = incidents_frame(result)
    summary = summarize(scenario, result, incidents)
    tables = {"incidents": incidents}
    if figures_only:
        tables |= _figure_tables(result)
    elif not summary_only:
        jobs, attempts, checkpoints = job_frames(result)
        tables.update(
            {
                # simulated ground truth: the hosts drawn bad (engine.sim.bad_hosts)
                "hosts": topo.hosts.with_columns(
                    bad=pl.Series(model.drawn_bad) if ground_truth else pl.lit(None, pl.Boolean)
                ),
                "gpus": topo.gpus,
                "links": topo.links,
                "jobs": jobs,
                "job_attempts": attempts,
                "checkpoints": checkpoints,
                "host_states": host_states(result),
                "slow_episodes": slow_episodes_frame(result),
            }
        )
        if scenario.simulation.telemetry:
            # a run whose flagship finished its work (training.work) ended then: its telemetry ends with it
            timed = (
                scenario
                if result.horizon_s >= scenario.duration_s
                else scenario.with_values({"simulation.days": result.horizon_s / SECONDS_PER_DAY})
            )
            tables.update(_telemetry(timed, tables, model.rngs["telemetry"], result.slow_episodes))
            # network (engine.fabric.traffic): link_samples and the summary's network part, from its own stream
            tables["link_samples"], network = network_run(
                scenario,
                topo,
                tables["host_states"],
                incidents,
                result.horizon_s,
                generator(seed, Stream.NETWORK),
            )
            summary = replace(summary, network=network)
    return Run(
        kind=kind,
        name=name or scenario.preset or "simulation",
        started_at=scenario.simulation.start,
        duration_s=result.horizon_s,
        scenario=scenario.to_dict(),
        seed=scenario.simulation.seed,
        summary=summary.to_json(),
        tables=tables,
    )


def _figure_tables(result) -> dict[str, pl.DataFrame]:
    """What a backtest's figures read (engine.analysis.window_figures), beside the incidents."""
    jobs, attempts, checkpoints = job_frames(result)
    return {
        "jobs": jobs,
        "job_attempts": attempts,
        "checkpoints": checkpoints,
        "host_states": out_of_service(result),
    }


def _telemetry(scenario: Scenario, tables: dict, rng: np.random.Generator, slow_episodes=()) -> dict:
    """Per-GPU samples and XID events (engine.telemetry), each drawn from a child of the telemetry generator;
    fail-slow episodes (engine.sim.slow) hold GPUs down in the samples."""
    sample_rng, xid_rng = rng.spawn(2)
    return {
        "gpu_samples": telemetry.gpu_samples(
            scenario,
            tables["gpus"],
            tables["host_states"],
            tables["incidents"],
            tables["checkpoints"],
            sample_rng,
            slow_episodes=slow_episodes,
        ),
        "xid_events": telemetry.xid_events(tables["incidents"], tables["gpus"], xid_rng),
    }
