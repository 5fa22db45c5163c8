"""Per-job goodput of a watched run with the jobs' own checkpoints (definition `observed_job_goodput`): exact small
cases built here (attempts, interruptions, checkpoints), and the watcher's checkpoint rows kept once across cycles."""

from collections import Counter

import polars as pl
import pytest

from engine.ingest import slurm
from engine.ingest.watch import Reading, Watcher, job_goodput, jobs_goodput, jobs_goodput_total

JOBS = pl.DataFrame(
    {
        "job_id": ["1", "2", "3", "4", "5", "6"],
        "gpus": [8.0, 2.0, 4.0, 16.0, 1.0, 1.0],
        "start_s": [0.0, 10.0, 0.0, None, 0.0, 0.0],
        "end_s": [100.0, None, 60.0, None, 50.0, 100.0],
    }
)
ATTEMPTS = pl.DataFrame(
    {
        "job_id": ["1", "1", "2", "2", "3", "3", "5", "5", "6", "6", "6"],
        "attempt": [1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3],
        "start_s": [0.0, 60.0, 10.0, 35.0, 0.0, 30.0, 0.0, 25.0, 0.0, 40.0, 80.0],
        "end_s": [40.0, 100.0, 30.0, 50.0, 20.0, 60.0, 20.0, 50.0, 30.0, 70.0, 100.0],
        "end_reason": [
            "requeued",
            "completed",
            "failed",
            "end_of_run",
            "node_fail",
            "completed",
            "failed",
            "completed",
            "failed",
            "timeout",
            "completed",
        ],
    }
)
# the time each checkpoint was saved (end_s; start_s = end_s where the duration is unknown, as the watch writes)
SAVED = {"1": [10.0, 30.0, 70.0], "2": [35.0], "5": [20.0], "6": [20.0]}
CHECKPOINTS = pl.DataFrame(
    {
        "job_id": [job for job, times in SAVED.items() for _ in times],
        "start_s": [t for times in SAVED.values() for t in times],
        "end_s": [t for times in SAVED.values() for t in times],
    }
)


def test_an_interrupted_attempt_keeps_only_the_time_to_its_last_checkpoint():
    frame = job_goodput(JOBS, ATTEMPTS, now_s=50.0, checkpoints=CHECKPOINTS)
    assert frame.select("job_id", "wall_s", "kept_s", "interruptions", "checkpointed", "goodput").rows() == [
        # requeued at 40 after a checkpoint at 30: 30 kept, then 60-100 whole
        ("1", 100.0, 70.0, 1, True, 0.7),
        # failed at 30 with no checkpoint in 10-30 (its first is at 35, in the attempt still running): 0 kept
        ("2", 40.0, 15.0, 1, True, 0.375),
        # no checkpoint read: its interrupted attempt counts whole, an upper bound
        ("3", 60.0, 50.0, 1, False, 50.0 / 60.0),
        # a checkpoint at the very end of the failed attempt keeps it whole
        ("5", 50.0, 45.0, 1, True, 0.9),
        # the checkpoint at 20 is before the second attempt started: that attempt keeps nothing
        ("6", 100.0, 40.0, 2, True, 0.4),
    ]


def test_the_total_weights_jobs_by_gpus_and_says_which_are_measured():
    total = jobs_goodput(JOBS, ATTEMPTS, 50.0, CHECKPOINTS)
    kept = 8 * 70 + 2 * 15 + 4 * 50 + 1 * 45 + 1 * 40
    wall = 8 * 100 + 2 * 40 + 4 * 60 + 1 * 50 + 1 * 100
    assert total.goodput == round(kept / wall, 6)
    assert (total.measured, total.upper_bounds) == (4, 1)
    assert jobs_goodput_total(JOBS, ATTEMPTS, 50.0, CHECKPOINTS) == total.goodput


def test_without_checkpoints_every_attempt_counts_whole_an_upper_bound():
    frame = job_goodput(JOBS, ATTEMPTS, now_s=50.0)
    assert frame["kept_s"].to_list() == [80.0, 35.0, 50.0, 45.0, 80.0]
    assert not frame["checkpointed"].any()
    assert jobs_goodput(JOBS, ATTEMPTS, 50.0) == jobs_goodput(JOBS, ATTEMPTS, 50.0, CHECKPOINTS.clear())
    assert jobs_goodput(JOBS, ATTEMPTS, 50.0).measured == 0


def test_the_watcher_keeps_each_checkpoint_once_across_cycles():
    origin = 1_700_000_000.0
    watcher = Watcher(origin=origin)
    first = pl.DataFrame({"job_id": ["7", "7", "8"], "t": [origin + 5.5, origin + 9.0, origin + 7.25]})
    tables = watcher.derive(Reading(now=origin + 10, checkpoints=first))
    assert tables["checkpoints"].rows() == [("7", 5.5, 5.5), ("7", 9.0, 9.0), ("8", 7.25, 7.25)]
    # the next cycle reads the gauges again: the latest values again, and one new checkpoint
    again = pl.DataFrame({"job_id": ["7", "8", "8"], "t": [origin + 9.0, origin + 7.25, origin + 12.5]})
    tables = watcher.derive(Reading(now=origin + 20, checkpoints=again))
    assert tables["checkpoints"].rows() == [("8", 12.5, 12.5)]
    assert watcher.checkpoints.height == 4
    summary = watcher.summary(2, Counter(), origin + 20)
    assert summary["checkpoints"] == 4
    assert (summary["jobs_goodput_measured"], summary["jobs_goodput_upper_bounds"]) == (0, 0)


def test_a_checkpoint_metric_needs_prometheus_and_a_valid_name():
    from engine.errors import GoodputError

    with pytest.raises(GoodputError, match="give --prometheus"):
        Watcher(origin=0.0, checkpoint_metric="training_checkpoint_timestamp_seconds")


def _sacct(origin: float, rows: list[tuple[str, float, float | None, str]]) -> bytes:
    """`sacct --parsable2` text (engine.ingest.slurm's format) of job 9's runs: (state, start, end, exit code)."""
    from datetime import UTC, datetime

    def stamp(t: float | None) -> str:
        return "Unknown" if t is None else datetime.fromtimestamp(origin + t, UTC).strftime(slurm.TIME_FORMAT)

    tres = "billing=8,cpu=8,gres/gpu=8,mem=1000M,node=1"
    lines = ["\x1f".join(slurm.SACCT_FIELDS)]
    for state, start, end, code in rows:
        fields = ["9", "train", "alice", "debug", stamp(0.0), stamp(start), stamp(end), state, code]
        lines.append("\x1f".join([*fields, tres, tres, "gpu0001"]))
    return ("\n".join(lines) + "\n").encode()


def test_a_checkpoint_read_after_its_attempt_ended_rewrites_the_attempts_lost_work():
    origin = 1_700_000_000.0  # a whole second: sacct's times have no fraction
    watcher = Watcher(origin=origin)
    runs = slurm.parse_sacct(
        _sacct(origin, [("REQUEUED", 10.0, 110.0, "0:0"), ("RUNNING", 130.0, None, "0:0")])
    )
    # cycle 1: Slurm tells of the requeue; no checkpoint read yet, so nothing is known lost
    tables = watcher.derive(Reading(now=origin + 200, jobs=runs.jobs, attempts=runs.attempts))
    assert tables["job_attempts"].select("attempt", "end_reason", "lost_work_s").rows() == [
        (1, "requeued", 0.0),
        (2, "end_of_run", 0.0),
    ]
    # cycle 2: Prometheus, behind, tells of the checkpoints: the first run lost what followed the one at 70
    read = pl.DataFrame({"job_id": ["9", "9"], "t": [origin + 70.0, origin + 150.0]})
    tables = watcher.derive(Reading(now=origin + 260, checkpoints=read))
    assert tables["job_attempts"].select("attempt", "end_reason", "lost_work_s").sort("attempt").rows() == [
        (1, "requeued", 40.0),  # rewritten: 110 - 70
        (2, "end_of_run", 0.0),  # the running one, stretched to now as every cycle
    ]
    # cycle 3: the same gauges again: the first run is not written again
    tables = watcher.derive(Reading(now=origin + 300, checkpoints=read))
    assert tables["job_attempts"]["attempt"].to_list() == [2]
    frame = job_goodput(watcher.jobs, watcher.attempts, 300.0, watcher.checkpoints)
    # kept: 60 of the first run, the running one whole (130-300); wall 10-300
    assert frame.select("kept_s", "wall_s", "checkpointed").rows() == [(60.0 + 170.0, 290.0, True)]


def test_the_text_summary_says_on_what_the_goodput_stands():
    from engine.ingest.watch import watch_text

    base = {
        "run_id": "r",
        "cycles": 3,
        "jobs": 7,
        "running_jobs": 1,
        "interrupted_attempts": 2,
        "hosts": 2,
        "gpus": 16,
        "xid_events": 0,
        "incidents": 0,
        "incidents_with_jobs": 0,
        "jobs_goodput": 0.875,
    }
    measured = watch_text(base | {"jobs_goodput_measured": 2, "jobs_goodput_upper_bounds": 5})
    assert measured.endswith("jobs' goodput 87.5% (2 jobs measured from their checkpoints, 5 upper bounds)")
    bound = watch_text(base | {"jobs_goodput_measured": 0, "jobs_goodput_upper_bounds": 7})
    assert bound.endswith("jobs' goodput 87.5% (an upper bound: no checkpoints read for its 7 jobs)")


def test_the_ledger_splits_each_jobs_wall_clock_into_kept_lost_work_and_between_attempts():
    total = jobs_goodput(JOBS, ATTEMPTS, now_s=50.0, checkpoints=CHECKPOINTS)
    per_job = job_goodput(JOBS, ATTEMPTS, now_s=50.0, checkpoints=CHECKPOINTS)
    # job 1 (8 GPUs): wall 100 s, attempts 40 + 40 s; requeued at 40 after a checkpoint at 30 -> kept 30 + 40 s,
    # lost 10 s after the checkpoint, 20 s between attempts (40 to 60)
    one = per_job.filter(pl.col("job_id") == "1").row(0, named=True)
    assert (one["wall_s"], one["attempts_s"], one["kept_s"]) == (100.0, 80.0, 70.0)
    ledger = total.ledger
    gpu_h = (per_job["gpus"] / 3600).to_numpy()
    assert ledger.wall_gpu_h == pytest.approx(float((per_job["wall_s"].to_numpy() * gpu_h).sum()))
    assert ledger.kept_gpu_h + ledger.lost_work_gpu_h + ledger.between_attempts_gpu_h == pytest.approx(
        ledger.wall_gpu_h, rel=1e-12
    )
    assert total.goodput == round(ledger.kept_gpu_h / ledger.wall_gpu_h, 6)
    # only jobs whose checkpoints are read lose work: job 3's interrupted attempt counts whole (upper bound)
    measured = per_job.filter(pl.col("checkpointed"))
    lost_s = ((measured["attempts_s"] - measured["kept_s"]) * measured["gpus"]).sum()
    assert ledger.lost_work_gpu_h == pytest.approx(lost_s / 3600, rel=1e-12)
    assert ledger.as_summary()["lost_work"] == round(ledger.lost_work_gpu_h, 6)
