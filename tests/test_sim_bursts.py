"""Bursts: correlated failures of several hosts at one instant (failures.burst_*, engine.sim.failures.draw_bursts;
issue 46, part 2).

Statistical checks draw the bursts alone at fixed seeds and state their tolerance (3 sigma of the law drawn from).
Exact small cases feed fixed arrivals to a 16-host cluster (the job on hosts 0-7, spares 8 and 9, idle research
hosts 10-15) whose repairs take exactly 2 h 17 min, as tests/test_bad_hosts.py does, so every time is computed by
hand. With bursts off nothing changes: tests/test_same_seed_same_tables.py holds every preset's tables.
"""

import math

import numpy as np
import polars as pl
import pytest

from engine.errors import GoodputError
from engine.replay.incidents import replay_stored_run
from engine.scenario import build
from engine.sim.failures import (
    BURST_SCOPES,
    CAUSE_KEYS,
    SCOPE,
    XIDS_OF,
    Arrivals,
    burst_sizes,
    draw_arrivals,
    draw_bursts,
    draw_planned,
)
from engine.sim.simulate import run_model, simultaneous_groups
from engine.sim.streams import Stream, generator
from engine.store import Store
from engine.twin.simulate import simulate
from engine.units import SECONDS_PER_HOUR

H = SECONDS_PER_HOUR
RESTART_S = 600.0  # training.restart_overhead's default
HANDOVER_S = 1200.0  # spares.preempt_handover's default: a research host taken when the spares run out
JOB = "demo-pretrain"
SMALL = [
    "cluster.gpus=128",
    "cluster.racks_per_pod=2",
    "training.gpus=64",
    "spares.hosts=2",
    "simulation.days=1",
    "simulation.telemetry=false",
    "research.utilization=0",
    "failures.planned_per_day=0",
    "failures.rate_per_1000_node_days=0",
    "repair.drain=2m",
    "repair.diagnose=15m",
    "repair.fix=0s",
    "repair.rma_fraction=0",
    "repair.burn_in=2h",
    "repair.technicians=16",
]
CYCLE = 20 * 60 + 0.4 * 64 / 2000  # demo's checkpoint interval + its write (0.4 GB x 64 GPUs at 2,000 GB/s)


def _bursts(*sets: str, seed: int = 1, hosts: int = 3072):
    scenario = build("llama3-405b", sets=["simulation.telemetry=false", *sets])
    return scenario, draw_bursts(scenario, hosts, np.random.default_rng(seed))


def _groups(a: Arrivals) -> list[np.ndarray]:
    """The arrivals' indices burst by burst (a burst's arrivals share their fault time)."""
    _, first, counts = np.unique(a.fault_s, return_index=True, return_counts=True)
    order = np.argsort(first)
    return [np.arange(first[i], first[i] + counts[i]) for i in order]


def _arrivals(
    t: float, hosts: list[int], cause: str = "faulty_gpu", *more: tuple[float, list[int]]
) -> Arrivals:
    """A failure of `cause` on each of `hosts` at `t` (noticed at once), then each (time, hosts) of `more`."""
    events = [(t, h) for h in hosts] + [(t2, h) for t2, hs in more for h in hs]
    events.sort()
    n = len(events)
    xid = 79 if cause == "faulty_gpu" else -1
    return Arrivals(
        fault_s=np.array([e[0] for e in events], dtype=float),
        detected_s=np.array([e[0] for e in events], dtype=float),
        host=np.array([e[1] for e in events], dtype=np.int64),
        cause=np.full(n, CAUSE_KEYS.index(cause)),
        gpu_index=np.zeros(n, dtype=np.int64),
        xid=np.full(n, xid),
        rack_wide=np.zeros(n, dtype=bool),
    )


def _model(arrivals: Arrivals, *sets: str):
    return run_model(build("demo", sets=SMALL + list(sets)), arrivals=arrivals, planned_times=np.empty(0))


def _flagship(result) -> list[tuple[float, int, float]]:
    """(detected, host, lost work) of each incident that is an interruption of the flagship job."""
    return [(i.detected_s, i.host_id, i.lost_work_s) for i in result.incidents if i.flagship is not None]


# ----- the keys ----------------------------------------------------------------------------------------------------


def test_the_keys_default_to_off_and_refuse_what_they_cannot_mean():
    s = build("llama3-405b")
    assert (s["failures.burst_per_day"], s["failures.burst_size_mean"], s["failures.burst_hosts"]) == (
        0.0,
        4.0,
        "rack",
    )
    assert s["failures.burst_window"] == 60.0 and s.failures.burst_window == 60.0
    for bad, key in (
        ("failures.burst_size_mean=1.9", "burst_size_mean"),
        ("failures.burst_per_day=-1", "burst_per_day"),
        ("failures.burst_per_day=1001", "burst_per_day"),
        ("failures.burst_hosts=pdu", "burst_hosts"),
    ):
        with pytest.raises(GoodputError, match=key):
            build("demo", sets=[bad])
    # the bursts' hosts count among the failures a run may draw (engine.scenario.bounds)
    with pytest.raises(GoodputError, match=r"failures\.burst_\*.*failures, planned stops"):
        build("llama3-405b", sets=["failures.burst_per_day=1000", "failures.burst_size_mean=100"])


def test_with_bursts_off_nothing_draws_from_their_stream_and_the_summary_has_no_burst_figures():
    run = simulate(build("demo", sets=["simulation.telemetry=false"]))
    assert "bursts" not in run.summary["cluster"] and "burst_hosts" not in run.summary["cluster"]
    scenario = build("demo")
    arrivals = draw_arrivals(scenario, scenario.hosts, generator(scenario.simulation.seed, Stream.FAILURES))
    assert len(simultaneous_groups(arrivals)) == len(arrivals) + 1  # no two drawn failures at one instant
    assert len(draw_bursts(scenario, scenario.hosts, np.random.default_rng(0))) == 0


# ----- the draws -------------------------------------------------------------------------------------------------


def test_the_count_of_bursts_follows_the_rate_times_the_days():
    # 3 a day over 2,000 days: Poisson with mean 6,000, sd 77; within 3 sd
    scenario, a = _bursts(
        "failures.burst_per_day=3", "simulation.days=2000", "failures.rate_per_1000_node_days=0"
    )
    bursts = len(_groups(a))
    assert abs(bursts - 6000) < 3 * math.sqrt(6000)
    # failures.scale multiplies it as it does every unexpected rate: 12,000, sd 110
    _, doubled = _bursts(
        "failures.burst_per_day=3",
        "simulation.days=2000",
        "failures.scale=2",
        "failures.rate_per_1000_node_days=0",
    )
    assert abs(len(_groups(doubled)) - 12000) < 3 * math.sqrt(12000)
    assert len(_bursts("failures.burst_per_day=3", "failures.scale=0")[1]) == 0


@pytest.mark.parametrize("mean", [2.0, 3.0, 4.0, 7.5])
def test_sizes_are_two_plus_a_geometric_count_with_the_mean_asked(mean):
    sizes = burst_sizes(mean, 20000, 3072, np.random.default_rng(5))
    assert sizes.min() == 2
    p = 1.0 / (mean - 1.0)
    sd = math.sqrt((1 - p) / p**2 / sizes.size)  # of the mean of 20,000 sizes
    assert abs(sizes.mean() - mean) <= 3 * sd + 1e-12
    # P(size = 2) = p, P(size = 3) = (1 - p) p
    assert (sizes == 2).mean() == pytest.approx(p, abs=3 * math.sqrt(p * (1 - p) / sizes.size) + 1e-12)
    assert (sizes == 3).mean() == pytest.approx((1 - p) * p, abs=0.011)
    # capped at the cluster's hosts
    assert burst_sizes(mean, 1000, 3, np.random.default_rng(5)).max() <= 3


def test_the_mean_size_of_drawn_bursts_matches_burst_size_mean():
    # 4,000 bursts of mean 5 (k geometric with mean 3, var 12): sd of the mean 0.055
    _, a = _bursts("failures.burst_per_day=4", "simulation.days=1000", "failures.burst_size_mean=5")
    sizes = np.array([g.size for g in _groups(a)])
    assert abs(sizes.mean() - 5.0) < 3 * math.sqrt(12 / sizes.size)


@pytest.mark.parametrize("where", ["rack", "any"])
def test_a_bursts_hosts_share_its_instant_and_cause_rack_bursts_are_consecutive(where):
    n_hosts = 64
    scenario, a = _bursts(
        "failures.burst_per_day=20",
        "failures.burst_size_mean=6",
        f"failures.burst_hosts={where}",
        "failures.mix.silent_data_corruption=0",  # late-detected: its detection time is later, still shared
        hosts=n_hosts,
    )
    groups = _groups(a)
    assert len(groups) > 500
    wrapped = 0
    for g in groups:
        hosts = a.host[g]
        assert g.size >= 2 and np.unique(hosts).size == g.size  # distinct hosts
        assert np.unique(a.detected_s[g]).size == 1 and np.unique(a.cause[g]).size == 1
        assert not a.rack_wide[g].any()  # the burst names its hosts: never a rack switch's fault
        cause = CAUSE_KEYS[a.cause[g[0]]]
        assert SCOPE[cause] in BURST_SCOPES
        if cause in XIDS_OF:  # each host's GPU logs an XID of the cause, as a single-host failure does
            assert set(a.xid[g].tolist()) <= {code for code, _ in XIDS_OF[cause]}
        if where == "rack":  # consecutive hosts in host order from the first, wrapping past the last
            first = next(h for h in hosts if (h - 1) % n_hosts not in set(hosts.tolist()))
            assert sorted(hosts.tolist()) == sorted(((first + np.arange(g.size)) % n_hosts).tolist())
            wrapped += int(hosts.max() - hosts.min() >= g.size)
    if where == "rack":
        assert wrapped > 0  # some bursts wrapped around past host 63
    else:
        spread = np.mean([a.host[g].max() - a.host[g].min() >= g.size for g in groups])
        assert spread > 0.8  # rarely consecutive


def test_a_bursts_cause_is_drawn_once_from_the_hardware_and_network_causes_as_weighted_by_the_mix():
    _, a = _bursts("failures.burst_per_day=50", "failures.burst_size_mean=2", hosts=3072)
    causes = np.array([a.cause[g[0]] for g in _groups(a)])
    assert {CAUSE_KEYS[c] for c in np.unique(causes)} <= {c for c in CAUSE_KEYS if SCOPE[c] in BURST_SCOPES}
    scenario = build("llama3-405b")
    weights = np.array([scenario.mix[c] * (SCOPE[c] in BURST_SCOPES) for c in CAUSE_KEYS])
    share = weights / weights.sum()
    observed = np.bincount(causes, minlength=len(CAUSE_KEYS)) / causes.size
    big = share > 0.05
    assert np.allclose(
        observed[big], share[big], atol=3 * np.sqrt(share[big] * (1 - share[big]) / causes.size)
    )
    # only causes outside the scopes weighted: uniform over those inside
    only_jobs = [f"failures.mix.{c}=0" for c in CAUSE_KEYS if SCOPE[c] in BURST_SCOPES]
    _, b = _bursts("failures.burst_per_day=5", *only_jobs)
    assert {SCOPE[CAUSE_KEYS[c]] for c in b.cause} <= set(BURST_SCOPES) and len(b) > 0


# ----- one instant, one interruption ---------------------------------------------------------------------------------


def test_a_burst_on_three_job_hosts_is_three_incidents_and_one_interruption():
    t = 5000.0
    run = _model(_arrivals(t, [2, 3, 4]))
    result = run.result
    assert [(i.t_s, i.host_id, i.cause) for i in result.incidents] == [
        (t, 2, "faulty_gpu"),
        (t, 3, "faulty_gpu"),
        (t, 4, "faulty_gpu"),
    ]
    lost = t - 4 * CYCLE  # since the 4th checkpoint
    assert _flagship(result) == [(t, 2, pytest.approx(lost))]
    ledger = result.job.ledger
    # spares 8 and 9 fill two slots, research host 10 the third (handed over in 20 min); one restart
    assert [(a.end_s, a.end_reason) for a in ledger.attempts] == [(t, "faulty_gpu"), (86400.0, "end_of_run")]
    assert sorted(ledger.attempts[1].hosts.tolist()) == [0, 1, 5, 6, 7, 8, 9, 10]
    assert ledger.resumed_at == [pytest.approx(t + HANDOVER_S + RESTART_S)]
    assert result.bursts == (3,)
    # the same three failures a millisecond apart: the job is hit three times (once training, twice restarting)
    apart = _model(_arrivals(t, [2], "faulty_gpu", (t + 0.001, [3]), (t + 0.002, [4])))
    assert len(_flagship(apart.result)) == 3 and apart.result.bursts == ()
    assert apart.result.job.ledger.lost_work_s == pytest.approx(ledger.lost_work_s)


def test_the_summary_counts_a_burst_once_among_the_interruptions_and_lists_its_hosts():
    t = 5000.0
    run = simulate(build("demo", sets=SMALL + ["failures.burst_per_day=1"]), arrivals=_arrivals(t, [2, 3, 4]))
    assert run.summary["interruptions"]["unexpected"] == 1
    assert (run.summary["cluster"]["bursts"], run.summary["cluster"]["burst_hosts"]) == (1, 3)
    incidents = run.tables["incidents"].sort("incident_id")
    assert incidents["host_id"].to_list() == [2, 3, 4] and incidents["t_s"].unique().to_list() == [t]
    assert incidents["jobs_hit"].to_list() == [1, 0, 0]
    assert run.tables["job_attempts"].filter(pl.col("job_id") == JOB).height == 2


def test_a_burst_takes_a_host_and_its_peer_together_so_the_in_memory_copy_is_lost():
    t = 5000.0
    sets = ("training.recovery=in_memory_checkpoint",)
    together = _model(_arrivals(t, [2, 3]), *sets).result.job.ledger
    assert (together.memory_restores, together.storage_fallbacks) == (0, 1)
    assert together.attempts[0].lost_work_s == pytest.approx(t - 4 * CYCLE)
    # one after the other, the first resumes from its peer's copy (the second hits a restart)
    apart = _model(_arrivals(t, [2], "faulty_gpu", (t + 0.001, [3])), *sets).result.job.ledger
    assert (apart.memory_restores, apart.storage_fallbacks) == (1, 0)


def test_a_burst_of_spares_and_idle_hosts_interrupts_nothing_and_a_host_in_repair_is_not_struck():
    t = 5000.0
    result = _model(_arrivals(t, [8, 9, 10])).result
    assert len(result.incidents) == 3 and _flagship(result) == []
    assert [a.end_reason for a in result.job.ledger.attempts] == ["end_of_run"]
    # host 3 failed an hour before: in repair (2 h 17 min), the burst strikes 2 and 4 only
    result = _model(_arrivals(t, [2, 3, 4], "faulty_gpu", (t - H, [3]))).result
    assert [(i.t_s, i.host_id) for i in result.incidents] == [(t - H, 3), (t, 2), (t, 4)]
    assert [(d, h) for d, h, _ in _flagship(result)] == [(t - H, 3), (t, 2)]
    assert result.bursts == (2,)


def test_a_missed_diagnosis_in_a_burst_restarts_the_job_once_with_the_host_kept():
    t = 5000.0
    # diagnosis never finds anything: every host struck stays in service and the job restarts in place, once
    result = _model(_arrivals(t, [2, 3, 4]), "diagnosis.probability=0").result
    assert len(result.incidents) == 3 and [(d, h) for d, h, _ in _flagship(result)] == [(t, 2)]
    ledger = result.job.ledger
    assert [a.end_reason for a in ledger.attempts] == ["faulty_gpu", "end_of_run"]
    assert ledger.resumed_at == [pytest.approx(t + RESTART_S)]
    assert sorted(ledger.attempts[1].hosts.tolist()) == list(range(8))  # the same hosts


# ----- through the whole simulation ---------------------------------------------------------------------------------


SETS = [
    "simulation.telemetry=false",
    "failures.burst_per_day=3",
    "failures.burst_size_mean=4",
    "simulation.seed=11",
]


@pytest.fixture(scope="module")
def bursty():
    """A demo week with 3 bursts a day, rack-wide, of mean 4 hosts, on top of its failures: the run and the
    simulator's own records of it."""
    scenario = build("demo", sets=SETS)
    return simulate(scenario), run_model(scenario).result


def test_every_burst_host_is_an_incident_at_the_bursts_instant_and_the_job_is_hit_once_a_burst(bursty):
    run, result = bursty
    incidents = run.tables["incidents"].filter(~pl.col("planned"))
    groups = (
        incidents.group_by("t_s", "detected_s", "cause")
        .agg(pl.col("host_id").sort(), pl.col("job_ids").list.contains(JOB).sum().alias("interruptions"))
        .filter(pl.col("host_id").list.len() >= 2)
        .sort("detected_s")
    )
    cluster = run.summary["cluster"]
    struck = [n for n in result.bursts if n >= 2]  # a burst that struck one host reads as any failure
    assert (cluster["bursts"], cluster["burst_hosts"]) == (len(struck), sum(struck))
    assert len(result.bursts) >= 12  # 21 expected in 7 days (sd 4.6)
    # every burst that struck two hosts or more is that many incidents at one instant with one cause
    assert groups["host_id"].list.len().to_list() == struck
    assert groups["interruptions"].max() == 1 and groups["interruptions"].sum() >= 5
    attempts = run.tables["job_attempts"].filter(pl.col("job_id") == JOB)
    for row in groups.iter_rows(named=True):
        ended = attempts.filter(pl.col("end_s") == row["detected_s"]).height
        assert ended <= row["interruptions"]  # one attempt closed at most, and then one interruption


def test_a_runs_own_export_replays_to_the_same_run_bursts_included(bursty, tmp_path):
    run, _ = bursty
    store = Store(tmp_path / "store")
    same = replay_stored_run(store, store.write_run(run))
    assert same.tables["incidents"].equals(run.tables["incidents"])
    assert same.summary["interruptions"] == run.summary["interruptions"]
    assert same.summary["job"] == run.summary["job"]
    assert same.summary["cluster"]["bursts"] == run.summary["cluster"]["bursts"]


def test_bursts_leave_every_other_draw_of_the_run_alone(bursty):
    """Every failure of the bursty run is one the hosts' own stream draws without bursts, or a burst's from the
    stream of its own; the planned stops and the topology are the draws of a run without bursts."""
    _, result = bursty
    scenario = build("demo", sets=SETS)
    seed = scenario.simulation.seed

    def keys(a: Arrivals) -> set:
        return set(zip(a.fault_s.tolist(), a.host.tolist(), [CAUSE_KEYS[c] for c in a.cause], strict=True))

    own = keys(draw_arrivals(scenario, scenario.hosts, generator(seed, Stream.FAILURES)))
    bursts = keys(draw_bursts(scenario, scenario.hosts, generator(seed, Stream.BURSTS)))
    failures = [(i.t_s, i.host_id, i.cause) for i in result.incidents if not i.planned]
    assert set(failures) <= own | bursts and not own & bursts
    assert sum(f in bursts for f in failures) == sum(result.bursts)
    assert sum(f in own for f in failures) >= len(own) * 0.8  # the rest hit hosts in repair
    planned = {i.t_s for i in result.incidents if i.planned}
    assert planned and planned <= set(draw_planned(scenario, generator(seed, Stream.PLANNED)).tolist())
    burst_free = run_model(build("demo", sets=[s for s in SETS if "burst" not in s])).result
    assert result.topology.gpus.equals(burst_free.topology.gpus)  # the GPUs' UUIDs: the same draws
