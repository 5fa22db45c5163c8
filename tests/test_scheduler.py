"""The scheduler: exact schedules of small hand-made workloads under each policy, and invariants."""

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import GoodputError
from engine.scheduling.scheduler import (
    REASONS,
    Cluster,
    Failures,
    Policy,
    Workload,
    allocate_recorded,
    demands,
    dominant_reason,
    schedule,
)


def cluster(hosts: int = 4, gpus: int = 8, per_rack: int = 2, per_pod: int = 2) -> Cluster:
    index = np.arange(hosts)
    return Cluster(np.full(hosts, gpus), index // per_rack, index // (per_rack * per_pod))


def workload(rows: list[tuple], restart: list[bool] | None = None) -> Workload:
    """rows of (submit, work, gpus, priority)."""
    submit, work, gpus, priority = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    return Workload(
        submit, work, gpus, priority.astype(np.int64), restart=None if restart is None else np.array(restart)
    )


def trace_of(result) -> list[tuple]:
    """(job, attempt, start, end, end_reason, hosts) of every attempt, in job order."""
    return [
        (r["job"], r["attempt"], r["start_s"], r["end_s"], r["end_reason"], r["hosts"])
        for r in result.attempts.iter_rows(named=True)
    ]


def waits_of(result) -> list[tuple]:
    return [(r["job"], r["start_s"], r["end_s"], r["reason"]) for r in result.waits.iter_rows(named=True)]


# 4 hosts of 8 GPUs: a 2-host job, a 1-host job, then a 2-host job that must wait, and a small one
BLOCKING = [(0, 100, 16, 0), (0, 50, 8, 0), (10, 30, 16, 0), (20, 10, 4, 0)]


def test_fifo_keeps_order_and_says_why_each_job_waits():
    result = schedule(cluster(), workload(BLOCKING), Policy(backfill=False))
    assert trace_of(result) == [
        (0, 1, 0.0, 100.0, "completed", [0, 1]),
        (1, 1, 0.0, 50.0, "completed", [2]),
        (2, 1, 50.0, 80.0, "completed", [2, 3]),
        (3, 1, 80.0, 90.0, "completed", [2]),  # FIFO: behind job 2 although host 3 was free from 20 to 50
    ]
    assert waits_of(result) == [
        (2, 10.0, 50.0, "no_capacity"),  # 8 GPUs free, 16 wanted
        (3, 20.0, 50.0, "priority"),  # it fits on host 3, but job 2 comes first
        (3, 50.0, 80.0, "no_capacity"),
    ]
    assert dominant_reason(result.waits).rows() == [(2, "no_capacity"), (3, "no_capacity")]


def test_easy_backfill_starts_a_short_job_without_delaying_the_head():
    result = schedule(cluster(), workload(BLOCKING), Policy(backfill=True))
    assert trace_of(result) == [
        (0, 1, 0.0, 100.0, "completed", [0, 1]),
        (1, 1, 0.0, 50.0, "completed", [2]),
        (2, 1, 50.0, 80.0, "completed", [2, 3]),  # the head still starts at 50
        (3, 1, 20.0, 30.0, "completed", [3]),  # backfilled: ends (30) before the head's reservation (50)
    ]
    assert waits_of(result) == [(2, 10.0, 50.0, "no_capacity")]


def test_backfill_never_delays_the_head_with_a_long_job():
    # job 3 would run 100 s on host 3, which the head (job 2) needs at t = 50: it must not start
    rows = [*BLOCKING[:3], (20, 100, 4, 0)]
    result = schedule(cluster(), workload(rows), Policy(backfill=True))
    starts = {job: start for job, _, start, *_ in trace_of(result)}
    assert starts == {0: 0.0, 1: 0.0, 2: 50.0, 3: 80.0}


def test_backfill_may_use_hosts_the_head_does_not_need():
    # 3 hosts (racks {0, 1}, {2}): pack puts job 0 on host 2 (the fuller rack), job 1 on host 0, job 2 on
    # host 1. The head (job 3, a whole host) is reserved host 0 from t = 50; job 4 runs long, but on host 1,
    # which the head does not need, so it starts at once
    rows = [(0, 100, 8, 0), (0, 50, 8, 0), (0, 100, 4, 0), (10, 30, 8, 0), (20, 1000, 4, 0)]
    result = schedule(cluster(hosts=3), workload(rows), Policy(backfill=True))
    starts = {job: (start, hosts) for job, _, start, _, _, hosts in trace_of(result)}
    assert starts[3] == (50.0, [0])
    assert starts[4] == (20.0, [1])


def test_priority_orders_the_queue():
    rows = [(0, 100, 32, 0), (5, 10, 32, 0), (6, 10, 32, 9)]  # job 2 arrives last with a higher priority
    result = schedule(cluster(), workload(rows), Policy())
    starts = {job: start for job, _, start, *_ in trace_of(result)}
    assert starts == {0: 0.0, 2: 100.0, 1: 110.0}


def test_preemption_evicts_lower_priority_jobs_newest_first():
    rows = [(0, 100, 16, 0), (10, 100, 16, 0), (20, 30, 16, 5)]
    result = schedule(cluster(), workload(rows), Policy(preemption=True))
    assert trace_of(result) == [
        (0, 1, 0.0, 100.0, "completed", [0, 1]),
        (1, 1, 10.0, 20.0, "preempted", [2, 3]),  # the newer low-priority job makes room
        (1, 2, 50.0, 150.0, "completed", [2, 3]),  # requeued: starts over
        (2, 1, 20.0, 50.0, "completed", [2, 3]),
    ]
    lost = result.attempts.filter(pl.col("end_reason") == "preempted")["lost_work_s"].to_list()
    assert lost == [10.0]


def test_preemption_picks_the_host_where_least_work_is_lost():
    # host 0: one old 8-GPU job (100 s x 8 GPUs run); host 1: two newer 4-GPU jobs (50 s and 40 s x 4 GPUs)
    rows = [(0, 1000, 8, 0), (50, 1000, 4, 0), (60, 1000, 4, 0), (100, 10, 8, 5)]
    result = schedule(cluster(hosts=2, per_rack=1, per_pod=1), workload(rows), Policy(preemption=True))
    assert trace_of(result) == [
        (0, 1, 0.0, 1000.0, "completed", [0]),
        (1, 1, 50.0, 100.0, "preempted", [1]),
        (1, 2, 110.0, 1110.0, "completed", [1]),
        (2, 1, 60.0, 100.0, "preempted", [1]),
        (2, 2, 110.0, 1110.0, "completed", [1]),
        (3, 1, 100.0, 110.0, "completed", [1]),
    ]
    assert result.attempts["lost_work_s"].to_list() == [0.0, 50.0, 0.0, 40.0, 0.0, 0.0]


def test_without_preemption_the_high_priority_job_waits():
    rows = [(0, 100, 16, 0), (10, 100, 16, 0), (20, 30, 16, 5)]
    result = schedule(cluster(), workload(rows), Policy(preemption=False))
    assert {j: s for j, _, s, *_ in trace_of(result)} == {0: 0.0, 1: 10.0, 2: 100.0}


def test_pack_fills_a_rack_and_spread_uses_every_pod():
    rows = [(0, 10, 8, 0), (0, 10, 8, 0), (0, 10, 8, 0)]
    c = cluster(hosts=8, per_rack=2, per_pod=2)  # pods {0-3, 4-7}, racks of 2
    packed = [hosts for *_, hosts in trace_of(schedule(c, workload(rows), Policy(placement="pack")))]
    spread = [hosts for *_, hosts in trace_of(schedule(c, workload(rows), Policy(placement="spread")))]
    assert packed == [[0], [1], [2]]  # rack 0 full before rack 1
    assert spread == [[0], [4], [2]]  # the emptiest pod, then the emptiest rack


def test_pack_keeps_a_multi_host_job_inside_one_pod():
    # pod 0 (hosts 0-3) has host 0 busy; a 3-host job fits in pod 0 (3 idle) -> stays there, not split
    rows = [(0, 100, 8, 0), (1, 10, 24, 0)]
    c = cluster(hosts=8, per_rack=2, per_pod=2)
    packed = trace_of(schedule(c, workload(rows), Policy(placement="pack")))
    assert packed[1][-1] == [1, 2, 3]
    spread = trace_of(schedule(c, workload(rows), Policy(placement="spread")))
    assert spread[1][-1] == [1, 2, 4]  # round-robin over the pods: 1 (pod 0), 4 (pod 1), 2 (pod 0)


def test_fragmentation_is_told_apart_from_no_capacity():
    # spread puts the two 4-GPU jobs on different hosts: 8 GPUs free in total, but no whole host
    rows = [(0, 100, 4, 0), (0, 100, 4, 0), (1, 10, 8, 0), (2, 10, 16, 0)]
    result = schedule(cluster(hosts=2, per_rack=1, per_pod=1), workload(rows), Policy(placement="spread"))
    assert waits_of(result) == [(2, 1.0, 100.0, "fragmentation"), (3, 2.0, 110.0, "no_capacity")]
    # pack puts both on host 0, so the 8-GPU job starts at once
    packed = schedule(cluster(hosts=2, per_rack=1, per_pod=1), workload(rows), Policy(placement="pack"))
    assert {j: s for j, _, s, *_ in trace_of(packed)}[2] == 1.0


def test_fractional_jobs_share_one_gpu_when_packed():
    shares = np.array([250, 250, 500, 1000])
    w = Workload(np.zeros(4), np.full(4, 10.0), shares / 1000, np.zeros(4, dtype=np.int64), share=shares)
    result = schedule(cluster(hosts=1, gpus=2, per_rack=1, per_pod=1), w, Policy(placement="pack"))
    assert [start for _, _, start, *_ in trace_of(result)] == [0.0, 0.0, 0.0, 0.0]
    h, n, m, fits = demands(w, cluster(hosts=1, gpus=2))
    assert list(n) == [1, 1, 1, 1] and list(m) == [250, 250, 500, 1000] and fits.all()


def test_a_host_failure_requeues_or_restarts_its_jobs_and_blocks_the_host():
    rows = [(0, 5000, 8, 0), (0, 5000, 8, 0), (100, 10, 16, 0)]
    failures = Failures(np.array([3700.0]), np.array([0]), np.array([600.0]), ["faulty_gpu"])
    result = schedule(
        cluster(hosts=2, per_rack=1, per_pod=1),
        workload(rows, restart=[True, False, False]),
        Policy(checkpoint_interval_s=1800),
        failures,
    )
    first = trace_of(result)[:2]
    # restart: resumes from its checkpoint at 3600 s (losing 100 s) when host 0 is back, 1400 s left; it keeps
    # its place in the queue, ahead of job 2 (submitted later)
    assert first == [(0, 1, 0.0, 3700.0, "faulty_gpu", [0]), (0, 2, 4300.0, 5700.0, "completed", [0])]
    hit = result.attempts.filter(pl.col("end_reason") == "faulty_gpu")
    assert hit["lost_work_s"].to_list() == [100.0]
    assert result.outages.rows() == [(0, 3700.0, 4300.0)]
    assert waits_of(result) == [
        (0, 3700.0, 4300.0, "failed_hosts"),  # it would fit on host 0 if host 0 were up
        (2, 100.0, 5700.0, "no_capacity"),
    ]


def test_requeue_policy_starts_over():
    rows = [(0, 5000, 8, 0)]
    failures = Failures(np.array([1000.0]), np.array([0]), np.array([10.0]))
    result = schedule(
        cluster(hosts=2, per_rack=1, per_pod=1), workload(rows, restart=[False]), Policy(), failures
    )
    assert trace_of(result) == [
        (0, 1, 0.0, 1000.0, "host_failure", [0]),
        (0, 2, 1000.0, 6000.0, "completed", [1]),
    ]
    assert result.attempts["lost_work_s"].to_list() == [1000.0, 0.0]


def test_jobs_that_can_never_fit_or_have_no_length_stay_pending():
    w = Workload(
        np.zeros(3), np.array([10.0, np.nan, 10.0]), np.array([64.0, 8.0, 0.0]), np.zeros(3, np.int64)
    )
    result = schedule(cluster(), w, Policy())
    assert list(result.state) == ["pending", "pending", "completed"]
    assert trace_of(result) == [(2, 1, 0.0, 10.0, "completed", [])]  # a GPU-less job needs no host
    assert waits_of(result) == [(0, 0.0, 10.0, "no_capacity")]  # too big: it waits the whole run


def test_policy_is_checked():
    with pytest.raises(GoodputError, match="pack or spread"):
        Policy(placement="random")


def test_recorded_placement_uses_given_nodes_or_the_policy():
    w = workload([(0, 10, 8, 0), (0, 10, 8, 0), (5, 10, 8, 0)])
    start, end = np.array([0.0, 0.0, 5.0]), np.array([10.0, 10.0, 15.0])
    hosts = allocate_recorded(cluster(), w, start, end, Policy(), nodes=[[3], None, None])
    # pack: job 1 goes beside the busy host 3 (the fuller rack), job 2 to rack 0, the only room left
    assert hosts == [[3], [2], [0]]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 50),
            st.integers(1, 40),
            st.sampled_from([0.25, 0.5, 1, 2, 4, 8, 16, 24]),
            st.integers(0, 2),
        ),
        min_size=1,
        max_size=25,
    ),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["pack", "spread"]),
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 3), st.integers(1, 30)), max_size=4),
)
def test_no_gpu_is_ever_overcommitted_and_every_job_finishes(rows, backfill, preemption, placement, outages):
    c = cluster(hosts=4, gpus=8)
    gpus = np.array([r[2] for r in rows], dtype=float)
    share = np.where(gpus < 1, gpus * 1000, 1000).astype(np.int64)
    w = Workload(
        np.array([r[0] for r in rows], float),
        np.array([r[1] for r in rows], float),
        gpus,
        np.array([r[3] for r in rows]),
        share=share,
    )
    failures = Failures(
        np.array([o[0] for o in outages], float),
        np.array([o[1] for o in outages]),
        np.array([o[2] for o in outages], float),
    )
    restart = np.arange(len(rows)) % 2 == 0
    w.restart = restart
    result = schedule(
        c,
        w,
        Policy(placement=placement, backfill=backfill, preemption=preemption, checkpoint_interval_s=7),
        failures,
    )
    assert (result.state == "completed").all()
    att = result.attempts
    assert (att["start_s"].to_numpy() >= w.submit[att["job"].to_numpy()]).all()
    done = att.filter(pl.col("end_reason") == "completed")
    assert sorted(done["job"].to_list()) == list(range(len(rows)))
    # work done = the job's length: the completed attempt plus what earlier attempts saved (restart policy)
    saved = att.group_by("job").agg(((pl.col("end_s") - pl.col("start_s")) - pl.col("lost_work_s")).sum())
    saved = dict(saved.rows())
    for job in range(len(rows)):
        assert saved[job] == pytest.approx(w.work[job])
    # no attempt runs on a host while it is down
    for host, down_from, down_to in result.outages.rows():
        on_host = att.filter(pl.col("hosts").list.contains(host))
        assert not ((on_host["start_s"] < down_to) & (on_host["end_s"] > down_from)).any()
    # at every start instant, the GPUs held on each host fit in the host
    for t in att["start_s"].unique().to_list():
        live = att.filter((pl.col("start_s") <= t) & (pl.col("end_s") > t))
        held = np.zeros(4)
        for job, hosts in zip(live["job"].to_list(), live["hosts"].to_list(), strict=True):
            for host in hosts:
                held[host] += min(gpus[job], 8.0) if len(hosts) == 1 else 8.0
        assert (held <= 8 + 1e-9).all()
    # waits use the four reasons only and cover exactly each job's time in the queue: from submission to its
    # first start, and from each interrupted attempt's end to the next start
    assert set(result.waits["reason"].unique().to_list()) <= set(REASONS)
    waited = dict(result.waits.group_by("job").agg((pl.col("end_s") - pl.col("start_s")).sum()).rows())
    for job in range(len(rows)):
        mine = att.filter(pl.col("job") == job).sort("attempt")
        queued = (
            mine["start_s"][0]
            - w.submit[job]
            + (mine["start_s"].slice(1) - mine["end_s"].slice(0, mine.height - 1)).sum()
        )
        assert waited.get(job, 0.0) == pytest.approx(queued)


def test_wait_pieces_follow_the_class_timeline():
    from engine.scheduling.wait_reasons import cut_waits

    log = [
        (0, 0.0, "priority"),
        (1, 0.0, "no_capacity"),
        (0, 10.0, "fragmentation"),
        (0, 20.0, "priority"),
        (0, 30.0, None),
    ]
    spells = [(7, 0, 5.0, 25.0), (8, 1, 2.0, 4.0), (9, 0, 12.0, 18.0)]
    assert cut_waits(spells, log).rows() == [
        (7, 5.0, 10.0, "priority"),
        (7, 10.0, 20.0, "fragmentation"),
        (7, 20.0, 25.0, "priority"),
        (8, 2.0, 4.0, "no_capacity"),
        (9, 12.0, 18.0, "fragmentation"),
    ]
    longest = dominant_reason(cut_waits(spells, log)).sort("job").rows()
    assert longest == [(7, "fragmentation"), (8, "no_capacity"), (9, "fragmentation")]
