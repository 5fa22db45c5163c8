"""The simulator's typed records (engine.sim.records) and the tables built from them alone: a hand-made
SimulationResult gives exactly the rows its records say, with no Simulation behind it."""

import numpy as np
import polars as pl
import pytest

from engine.analysis.summary import summarize
from engine.fabric.topology import build_topology
from engine.scenario import build
from engine.sim.host_timeline import host_states
from engine.sim.records import (
    NONE,
    Attempt,
    FlagshipRecord,
    HostInterval,
    Incident,
    JobLedger,
    LaneInterval,
    ResearchJob,
    SimulationResult,
    research_job_id,
    research_job_id_expr,
)
from engine.sim.tables import incidents_frame, job_frames
from engine.twin.simulate import simulate
from engine.units import SECONDS_PER_HOUR

HORIZON = 1000.0
SETS = ["cluster.gpus=32", "training.gpus=16", "spares.hosts=0", "cluster.racks_per_pod=1"]  # 4 hosts


def test_a_research_job_id_is_the_same_in_python_and_in_polars():
    indexes = [0, 7, 12, 99_999, 123_456]
    frame = pl.DataFrame({"job": indexes}).select(research_job_id_expr(pl.col("job")))
    assert frame.to_series().to_list() == [research_job_id(i) for i in indexes]
    assert research_job_id(12) == "research-00012"


def test_an_incident_names_the_flagship_job_first_then_the_research_jobs_in_order():
    a, b = ResearchJob(3, lane=0, hosts=2, submit_s=0.0, start_s=0.0), ResearchJob(1, 1, 1, 0.0, 0.0)
    both = Incident(5.0, 5.0, "faulty_gpu", False, 48, 0, 0, NONE, "big", (a, b), 2.0)
    assert both.job_ids == ["big", "research-00003", "research-00001"]
    assert Incident(5.0, 5.0, "ssd", False, NONE, 0, NONE, NONE, None, (), 0.0).job_ids == []


def _result() -> SimulationResult:
    """Two hosts of one flagship job (8 GPUs a host) and a research lane of hosts 2-3, for 1,000 s: a faulty
    GPU on host 3 at 100 s (detected at 120 s) ends research job 0 and the repair brings the host back at
    700 s; a software bug at 400 s interrupts the flagship job, which loses 30 s and resumes at 450 s."""
    topo = build_topology(build("demo", sets=SETS), np.random.default_rng(0))
    ledger = JobLedger(
        attempts=[
            Attempt(1, 0.0, 400.0, "software_bug", 30.0, np.array([0, 1], np.int32)),
            Attempt(2, 450.0, HORIZON, "end_of_run", 0.0, np.array([0, 1], np.int32)),
        ],
        checkpoint_starts=[np.array([90.0, 190.0])],
        resumed_at=[450.0],
    )
    lost_research = ResearchJob(
        0,
        lane=0,
        hosts=2,
        submit_s=0.0,
        start_s=20.0,
        end_s=120.0,
        state="failed",
        end_reason="faulty_gpu",
        lost_work_s=100.0,
    )
    waited = ResearchJob(
        1,
        lane=0,
        hosts=2,
        submit_s=120.0,
        start_s=700.0,
        end_s=HORIZON,
        state="running",
        end_reason="end_of_run",
    )
    return SimulationResult(
        horizon_s=HORIZON,
        gpus_per_host=8,
        topology=topo,
        job_id="big",
        job=FlagshipRecord("big", 16, 10.0, ledger),
        incidents=[
            Incident(100.0, 120.0, "faulty_gpu", False, 48, 3, 25, NONE, None, (lost_research,), 0.0),
            Incident(400.0, 400.0, "software_bug", False, NONE, 0, NONE, NONE, "big", (), 30.0),
        ],
        flagship_intervals=[HostInterval(h, "running", 0.0, HORIZON, "big") for h in (0, 1)],
        borrowed_intervals=[],
        repair_intervals=[HostInterval(3, "draining", 120.0, 200.0), HostInterval(3, "repair", 200.0, 700.0)],
        repaired_at={0: 700.0},
        research_jobs=[lost_research, waited],
        lane_hosts=[np.array([2, 3])],
        lane_intervals=[
            LaneInterval(0, "healthy", 0.0, 20.0, NONE),
            LaneInterval(0, "running", 20.0, 120.0, 0),
            LaneInterval(0, "healthy", 120.0, 700.0, NONE),
            LaneInterval(0, "running", 700.0, HORIZON, 1),
        ],
        lemons=0,
        hosts_in_repair_at_end=0,
        research_preemptions=0,
    )


def test_incidents_take_their_costs_and_repair_times_from_the_records():
    frame = incidents_frame(_result())
    rows = frame.select(
        "incident_id",
        "cause",
        "host_id",
        "gpu_id",
        "link_id",
        "xid",
        "mitigated_s",
        "repaired_s",
        "jobs_hit",
        "job_ids",
    ).rows()
    assert rows == [
        (0, "faulty_gpu", 3, 25, None, 48, None, 700.0, 1, ["research-00000"]),
        (1, "software_bug", 0, None, None, None, 450.0, 400.0, 1, ["big"]),
    ]
    # research: 100 s lost on 2 hosts of 8 GPUs; the flagship: 30 s lost plus 50 s down, on 16 GPUs
    assert frame["gpu_hours_lost"].to_list() == pytest.approx(
        [100 * 16 / SECONDS_PER_HOUR, 80 * 16 / SECONDS_PER_HOUR]
    )


def test_jobs_attempts_and_checkpoints_come_from_the_records():
    jobs, attempts, checkpoints = job_frames(_result())
    assert jobs.select("job_id", "gpus", "submit_s", "start_s", "state", "wait_reason").rows() == [
        ("big", 16.0, 0.0, 0.0, "running", None),
        ("research-00000", 16.0, 0.0, 20.0, "failed", "failed_hosts"),
        ("research-00001", 16.0, 120.0, 700.0, "running", "failed_hosts"),
    ]
    assert attempts.select("job_id", "attempt", "end_s", "end_reason", "lost_work_s", "hosts").rows() == [
        ("big", 1, 400.0, "software_bug", 30.0, [0, 1]),
        ("big", 2, HORIZON, "end_of_run", 0.0, [0, 1]),
        ("research-00000", 1, 120.0, "faulty_gpu", 100.0, [2, 3]),
        ("research-00001", 1, HORIZON, "end_of_run", 0.0, [2, 3]),
    ]
    assert checkpoints.select("start_s", "end_s").rows() == [(90.0, 100.0), (190.0, 200.0)]


def test_host_states_overlay_the_repair_on_the_lane():
    states = host_states(_result()).filter(pl.col("host_id") == 3)
    assert states.select("state", "start_s", "end_s", "job_id").rows() == [
        ("healthy", 0.0, 20.0, None),
        ("running", 20.0, 120.0, "research-00000"),
        ("draining", 120.0, 200.0, None),
        ("repair", 200.0, 700.0, None),
        ("running", 700.0, HORIZON, "research-00001"),
    ]


def test_the_summary_counts_hosts_down_running_and_research_progress_from_the_records():
    result = _result()
    summary = summarize(build("demo", sets=SETS), result, incidents_frame(result))
    cluster = summary.cluster
    assert cluster.gpu_hours == pytest.approx(32 * HORIZON / SECONDS_PER_HOUR)  # the record's horizon
    assert cluster.gpu_hours_down == pytest.approx(580 * 8 / SECONDS_PER_HOUR)  # host 3, 120 s to 700 s
    # running: the flagship's 2 hosts x 1000 s and the lane's 2 hosts x (100 + 300) s, of 4 hosts x 1000 s
    assert cluster.utilization == pytest.approx((2 * 1000 + 2 * 400) / (4 * HORIZON))
    # research progress kept: the lane's 800 host-seconds less the 200 the failure threw away
    progress_gpu_s = summary.job.productive_hours * SECONDS_PER_HOUR * 16 + 600 * 8
    assert cluster.utilization_progress == pytest.approx(progress_gpu_s / (32 * HORIZON))
    assert summary.interruptions.total == 1 and summary.job.attempts == 2


def test_a_simulation_hands_on_records_whose_tables_it_stores():
    """The research job an incident names is the record of that job: no id is parsed back into an index."""
    run = simulate(build("demo", sets=["simulation.telemetry=false", "failures.scale=3"]))
    incidents, jobs = run.tables["incidents"], run.tables["jobs"]
    hit = (
        incidents.explode("job_ids")
        .join(jobs, left_on="job_ids", right_on="job_id")
        .filter(pl.col("kind") == "research", pl.col("state") == "failed")
    )
    assert hit.height > 0
    # the research job a failure ended stopped when the failure was noticed
    assert (hit["end_s"] == hit["detected_s"]).all()
