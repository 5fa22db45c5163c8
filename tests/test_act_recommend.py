"""engine.act.recommend: each rule on a small hand-made run with exactly its case, the exact recommendation
(action, nodes, rule, job, costs from the formulas, evidence and links, stable ids), the cases each rule must leave
alone, and a demo run whose list is sane.

The cluster: 4 hosts (h0..h3) of 8 GPUs over one day. Job `train` (16 GPUs) runs on h0 and h1 and job `solo`
(8 GPUs) on h2 for the whole day; h3 is idle. The scenario restarts in 10 min with a 30 min checkpoint interval
(a restart costs 10 + 15 = 25 min of the job's GPUs) and flags a lemon at 2 failures within 6 h.
"""

import json
from dataclasses import replace
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import polars as pl
import pytest

from dashboard.incidents.tabs import FAIL_SLOW
from engine.act.recommend import FAIL_SLOW_TAB, recommend
from engine.act.records import Action, Rule
from engine.act.settings import ActionSettings
from engine.analysis import lemons as lemon_rule
from engine.cli import main
from engine.store import Store
from engine.store.run import Run
from engine.store.schema import polars_schema

DAY = 86400.0
HOSTS, GPUS_PER_HOST = 4, 8
RESTART_S = 600.0 + 1800.0 / 2  # training.restart_overhead + half of training.checkpoint_interval
SCENARIO = {
    "preset": "demo",
    "training": {"restart_overhead": "10m", "checkpoint_interval": "30m"},
    "repair": {"lemon_failures": 2, "lemon_window": "6h"},
}
SETTINGS = ActionSettings()  # horizon 24 h
H = SETTINGS.horizon_hours
JOBS = {"train": (16.0, (0, 1)), "solo": (8.0, (2,))}


def restart_cost(gpus: float) -> float:
    return gpus * RESTART_S / 3600.0


def frame(table: str, rows: list[dict]) -> pl.DataFrame:
    schema = polars_schema(table)
    return pl.DataFrame([{name: row.get(name) for name in schema} for row in rows], schema=schema)


def incident(incident_id, t_s, host_id, *, cause="faulty_gpu", xid=None, gpu_index=None, repaired_s=None):
    return {
        "incident_id": incident_id,
        "t_s": t_s,
        "detected_s": t_s,
        "repaired_s": repaired_s,
        "cause": cause,
        "category": "GPU",
        "planned": False,
        "xid": xid,
        "host_id": host_id,
        "gpu_id": None if gpu_index is None else host_id * GPUS_PER_HOST + gpu_index,
        "jobs_hit": 0,
        "gpu_hours_lost": 0.0,
        "job_ids": [],
    }


def default_states() -> dict[int, list[tuple[str, float, float]]]:
    return {
        0: [("running", 0.0, DAY)],
        1: [("running", 0.0, DAY)],
        2: [("running", 0.0, DAY)],
        3: [("healthy", 0.0, DAY)],
    }


def small_run(
    *,
    incidents=(),
    states=None,
    episodes=(),
    samples=(),
    xid_events=(),
    attempts=None,
    scenario=SCENARIO,
    hosts=HOSTS,
    kind="simulate",
) -> Run:
    """The cluster above with the given incidents, host states (host -> [(state, start, end)], replacing the
    defaults host by host), fail-slow episodes, GPU samples (gpu_id, t_s, ecc_dbe), XID events and attempts; `kind`
    "ingest" makes it an observed run."""
    every_state = {**default_states(), **(states or {})}
    job_of = {h: job for job, (_, hosts) in JOBS.items() for h in hosts}
    if attempts is None:
        attempts = [
            {
                "job_id": job,
                "attempt": 1,
                "start_s": 0.0,
                "end_s": DAY,
                "end_reason": "end_of_run",
                "hosts": list(h),
            }
            for job, (_, h) in JOBS.items()
        ]
    tables = {
        "hosts": frame(
            "hosts",
            [{"host_id": h, "hostname": f"h{h}", "rack_id": h // 2, "pod_id": 0} for h in range(hosts)],
        ),
        "gpus": frame(
            "gpus",
            [
                {
                    "gpu_id": h * GPUS_PER_HOST + i,
                    "host_id": h,
                    "index": i,
                    "uuid": f"GPU-{h}-{i}",
                    "model": "H100",
                }
                for h in range(hosts)
                for i in range(GPUS_PER_HOST)
            ],
        ),
        "jobs": frame(
            "jobs",
            [
                {
                    "job_id": job,
                    "name": job,
                    "gpus": gpus,
                    "submit_s": 0.0,
                    "start_s": 0.0,
                    "state": "running",
                }
                for job, (gpus, _) in JOBS.items()
            ],
        ),
        "job_attempts": frame("job_attempts", list(attempts)),
        "incidents": frame("incidents", list(incidents)),
        "host_states": frame(
            "host_states",
            [
                {
                    "host_id": h,
                    "state": s,
                    "start_s": a,
                    "end_s": b,
                    "job_id": job_of.get(h) if s == "running" else None,
                }
                for h, intervals in every_state.items()
                for s, a, b in intervals
            ],
        ),
        "slow_episodes": frame("slow_episodes", list(episodes)),
        "gpu_samples": frame(
            "gpu_samples", [{"gpu_id": g, "t_s": t, "ecc_dbe": d, "ecc_sbe": 0} for g, t, d in samples]
        ),
        "xid_events": frame("xid_events", list(xid_events)),
    }
    return Run(
        kind=kind,
        name="act-recommend",
        started_at=datetime(2024, 3, 1, tzinfo=UTC),
        duration_s=DAY,
        scenario=scenario,
        seed=1,
        tables=tables,
    )


def stored(store_dir, run: Run) -> tuple[Store, str]:
    store = Store(store_dir)
    return store, store.write_run(run)


def only(recs):
    assert len(recs) == 1, [(r.rule, r.nodes) for r in recs]
    return recs[0]


# ----- FATAL_XID ---------------------------------------------------------------------------------------------

FATAL = incident(1, 80000.0, 1, xid=79, gpu_index=3)


def test_a_fatal_xid_on_a_host_in_service_drains_it(store_dir):
    store, run_id = stored(store_dir, small_run(incidents=[FATAL]))
    rec = only(recommend(store, run_id, SETTINGS))
    assert (rec.action, rec.nodes, rec.rule, rec.job_id) == (Action.DRAIN, ("h1",), Rule.FATAL_XID, None)
    assert (rec.jobs_hit, rec.gpus_hit, rec.run_id, str(rec.state)) == (("train",), 16, run_id, "recommended")
    # fewer than 5 hosts with a fatal XID to measure repeats: it is taken to recur (p = 1)
    assert rec.cost_if_acting_gpu_hours == pytest.approx(restart_cost(16), abs=1e-9)
    assert rec.cost_if_not_gpu_hours == pytest.approx(1.0 * restart_cost(16), abs=1e-9)
    assert rec.extra["p_recur"] == 1.0 and rec.extra["p_source"] == "assumed"
    assert rec.extra["repeat_hosts_n"] == 0 and rec.extra["repeat_window_s"] == H * 3600
    (evidence,) = rec.evidence
    assert evidence.kind == "incident" and evidence.t_s == 80000.0
    assert evidence.text == "XID 79 (GPU not reachable on PCIe) on GPU 3, incident 1"
    assert evidence.link == f"incidents?run={run_id}&incident=1"
    assert "XID 79" in rec.reason and "2024-03-01 22:13 UTC" in rec.reason
    assert "p = 1" in rec.pricing and "16 GPUs" in rec.pricing
    # the same finding gives the same id; JSON round trip keeps it whole
    again = only(recommend(store, run_id, SETTINGS))
    assert again.id == rec.id and again == rec
    assert json.loads(json.dumps(rec.as_json()))["id"] == rec.id


def test_a_new_fatal_xid_on_the_same_host_is_a_new_finding(store_dir):
    store, first = stored(store_dir, small_run(incidents=[FATAL]))
    later = incident(2, 82000.0, 1, xid=48, gpu_index=5, cause="gpu_hbm3")
    _, second = stored(store_dir, replace(small_run(incidents=[FATAL, later]), run_id=first + "-b"))
    a, b = only(recommend(store, first, SETTINGS)), only(recommend(store, second, SETTINGS))
    assert a.nodes == b.nodes and a.id != b.id
    assert [e.text for e in b.evidence] == [
        "XID 79 (GPU not reachable on PCIe) on GPU 3, incident 1",
        "XID 48 (Double-bit ECC error in GPU memory) on GPU 5, incident 2",
    ]


@pytest.mark.parametrize(
    "case",
    ["drained", "repaired", "returned since", "before now"],
)
def test_a_fatal_xid_already_dealt_with_is_not_recommended_again(store_dir, case):
    incidents, states, now = [FATAL], None, None
    if case == "drained":  # the host is drained: draining it again does nothing
        states = {1: [("running", 0.0, 80000.0), ("down", 80000.0, DAY)]}
    elif case == "repaired":
        incidents = [{**FATAL, "repaired_s": 84000.0}]
    elif case == "returned since":  # drained and back in service after it: whoever drained it dealt with it
        states = {1: [("running", 0.0, 80000.0), ("repair", 80000.0, 83000.0), ("running", 83000.0, DAY)]}
    else:  # looked at before it happened
        now = 70000.0
    store, run_id = stored(store_dir, small_run(incidents=incidents, states=states))
    assert [r for r in recommend(store, run_id, SETTINGS, now) if r.rule == Rule.FATAL_XID] == []


def test_the_chance_of_a_repeat_is_measured_where_enough_hosts_had_a_fatal_xid(store_dir):
    """Six hosts (of eight) had a fatal XID more than a horizon (1 h) before now, two of them failed again within
    the hour: p = 2/6, with its evidence."""
    settings = ActionSettings(horizon_hours=1.0)
    history = []
    for host in range(6):
        t = 1000.0 + 2000.0 * host
        history.append(incident(10 + host, t, host, xid=79, gpu_index=0, repaired_s=t + 500.0))
    for host in (0, 1):  # another incident within the hour after the first
        t = 1000.0 + 2000.0 * host + 1800.0
        history.append(incident(20 + host, t, host, cause="software_bug", repaired_s=t + 1.0))
    states = {h: [("healthy", 0.0, DAY)] for h in range(3, 8)}
    store, run_id = stored(store_dir, small_run(incidents=[*history, FATAL], states=states, hosts=8))
    rec = only(recommend(store, run_id, settings))
    assert rec.nodes == ("h1",) and rec.extra["p_source"] == "measured"
    assert (rec.extra["repeat_hosts_n"], rec.extra["repeated_n"]) == (6, 2)
    assert rec.cost_if_not_gpu_hours == pytest.approx(2 / 6 * restart_cost(16), abs=1e-9)
    assert rec.cost_if_acting_gpu_hours == pytest.approx(restart_cost(16), abs=1e-9)


# ----- LEMON -------------------------------------------------------------------------------------------------

LEMON_INCIDENTS = [
    incident(3, 70000.0, 2, cause="ssd", repaired_s=70600.0),
    incident(4, 82000.0, 2, cause="power_supply", repaired_s=82600.0),
]


def test_a_lemon_in_service_is_drained(store_dir):
    settings = ActionSettings(horizon_hours=1.0)
    store, run_id = stored(store_dir, small_run(incidents=LEMON_INCIDENTS))
    rec = only(recommend(store, run_id, settings))
    assert (rec.action, rec.nodes, rec.rule, rec.job_id) == (Action.DRAIN, ("h2",), Rule.LEMON, None)
    assert (rec.jobs_hit, rec.gpus_hit) == (("solo",), 8)
    expected = 2 / (6 * 3600.0) * 3600.0  # its 2 incidents in 6 h, over a 1 h horizon: 1/3
    assert rec.cost_if_acting_gpu_hours == pytest.approx(restart_cost(8), abs=1e-9)
    assert rec.cost_if_not_gpu_hours == pytest.approx(expected * restart_cost(8), abs=1e-9)
    assert rec.extra["incidents_n"] == 2 and rec.extra["lemon_window_s"] == 6 * 3600.0
    assert rec.extra["lemon_failures"] == 2 and rec.extra["expected_failures"] == pytest.approx(expected)
    assert [(e.text, e.t_s, e.link) for e in rec.evidence] == [
        ("ssd, incident 3", 70000.0, f"incidents?run={run_id}&incident=3"),
        ("power_supply, incident 4", 82000.0, f"incidents?run={run_id}&incident=4"),
    ]
    assert only(recommend(store, run_id, settings)).id == rec.id
    # over the default 24 h horizon, 8 expected failures are capped at one
    capped = only(recommend(store, run_id, SETTINGS))
    assert capped.cost_if_not_gpu_hours == pytest.approx(restart_cost(8), abs=1e-9)
    assert capped.id == rec.id  # the same finding, priced over another horizon


def test_the_lemon_rule_counts_only_repair_sending_incidents_in_the_window_ending_now(store_dir):
    job_level = [
        {**i, "cause": "software_bug"} for i in LEMON_INCIDENTS
    ]  # a job-level cause sends no host to repair
    old = [{**LEMON_INCIDENTS[0], "t_s": 10000.0, "repaired_s": 10600.0}, LEMON_INCIDENTS[1]]  # 20 h apart
    for incidents in (job_level, old):
        store, run_id = stored(store_dir, small_run(incidents=incidents))
        assert recommend(store, run_id, SETTINGS) == []
        store.delete_run(run_id)


def test_the_dashboard_lists_lemons_through_the_engine_rule(store_dir):
    store, run_id = stored(store_dir, small_run(incidents=LEMON_INCIDENTS))
    with store.connect(run_id) as con:
        flagged = lemon_rule.lemons(con, 2, 6 * 3600.0)
        assert flagged.select("hostname", "failures", "most_in_window", "flagged_s").rows() == [
            ("h2", 2, 2, 82000.0)
        ]
        assert lemon_rule.lemons(con, 2, 3600.0).is_empty()
        assert lemon_rule.lemons_at(con, 2, 6 * 3600.0, 85000.0)["incident_id"].to_list() == [3, 4]
        assert lemon_rule.lemons_at(con, 2, 6 * 3600.0, 95000.0).is_empty()  # 70,000 left the window
    assert lemon_rule.lemon_rule(SCENARIO) == (2, 6 * 3600.0)
    assert lemon_rule.lemon_rule({"start": "unknown"}) == (3, 14 * 86400.0)


# ----- SLOW_HOST ---------------------------------------------------------------------------------------------

EPISODE = {"host_id": 0, "gpu_id": None, "cause": "host", "start_s": 80000.0, "end_s": 90000.0, "factor": 2.0}


def test_a_host_running_slow_now_is_drained(store_dir):
    store, run_id = stored(store_dir, small_run(episodes=[EPISODE]))
    rec = only(recommend(store, run_id, SETTINGS))
    assert (rec.action, rec.nodes, rec.rule, rec.job_id) == (Action.DRAIN, ("h0",), Rule.SLOW_HOST, None)
    assert (rec.jobs_hit, rec.gpus_hit) == (("train",), 16)
    assert rec.cost_if_acting_gpu_hours == pytest.approx(restart_cost(16), abs=1e-9)
    assert rec.cost_if_not_gpu_hours == pytest.approx(16 * (1 - 1 / 2.0) * H, abs=1e-9)
    (evidence,) = rec.evidence
    assert evidence.kind == "slow_episode" and evidence.t_s == 80000.0
    assert "1/2 of its speed" in evidence.text and evidence.text.startswith("host fail-slow")
    assert evidence.link == f"incidents?run={run_id}&tab=Fail-slow%20episodes"
    query = parse_qs(urlsplit(evidence.link).query)
    assert query == {"run": [run_id], "tab": [FAIL_SLOW]} and FAIL_SLOW_TAB == FAIL_SLOW
    assert rec.extra["factor"] == 2.0
    assert only(recommend(store, run_id, SETTINGS)).id == rec.id
    # the same host slow again later is a new finding
    later = {**EPISODE, "start_s": 84000.0}
    _, other = stored(store_dir, replace(small_run(episodes=[later]), run_id=run_id + "-b"))
    assert only(recommend(store, other, SETTINGS)).id != rec.id


def test_a_slow_episode_over_before_now_is_left_alone(store_dir):
    store, run_id = stored(store_dir, small_run(episodes=[{**EPISODE, "end_s": 85000.0}]))
    assert recommend(store, run_id, SETTINGS) == []
    assert only(recommend(store, run_id, SETTINGS, now_s=84999.0)).rule == Rule.SLOW_HOST


# ----- REPAIRED ----------------------------------------------------------------------------------------------

REPAIRED = incident(5, 10000.0, 3, xid=79, gpu_index=2, repaired_s=40000.0)
DOWN_SINCE_INCIDENT = {3: [("healthy", 0.0, 10000.0), ("down", 10000.0, DAY)]}
CLEAN_SAMPLES = [(3 * GPUS_PER_HOST + 2, 5000.0, 1), (3 * GPUS_PER_HOST + 2, 50000.0, 1)]


def test_a_repaired_host_clean_since_is_resumed(store_dir):
    store, run_id = stored(
        store_dir, small_run(incidents=[REPAIRED], states=DOWN_SINCE_INCIDENT, samples=CLEAN_SAMPLES)
    )
    rec = only(recommend(store, run_id, SETTINGS))
    assert (rec.action, rec.nodes, rec.rule, rec.job_id) == (Action.RESUME, ("h3",), Rule.REPAIRED, None)
    assert (rec.jobs_hit, rec.gpus_hit) == ((), 0)
    # the run's rate: 1 incident over 4 hosts x 24 h; p over the 24 h horizon = 0.25; the largest job (16 GPUs)
    p = 1 / (4 * 24.0) * H
    assert rec.cost_if_acting_gpu_hours == pytest.approx(p * restart_cost(16), abs=1e-9)
    assert rec.cost_if_not_gpu_hours == pytest.approx(GPUS_PER_HOST * H, abs=1e-9)
    assert (rec.extra["incidents_n"], rec.extra["hosts_n"], rec.extra["window_s"]) == (1, 4, DAY)
    assert rec.extra["job_assumed"] == "train" and rec.extra["gpu_samples_read"] == 2
    repair = rec.evidence[0]
    assert repair.kind == "incident" and repair.t_s == 40000.0
    assert repair.link == f"incidents?run={run_id}&incident=5"
    assert "repaired at 2024-03-01 11:06 UTC" in repair.text and "(2 GPU samples read)" in repair.text
    assert rec.evidence[1].text == "h3 is down at 2024-03-02 00:00 UTC"
    assert only(recommend(store, run_id, SETTINGS)).id == rec.id


@pytest.mark.parametrize(
    "case", ["double-bit error since", "fatal XID since", "incident open", "drained after"]
)
def test_a_repaired_host_with_trouble_since_is_not_resumed(store_dir, case):
    incidents, samples, events, states = [REPAIRED], CLEAN_SAMPLES, [], DOWN_SINCE_INCIDENT
    gpu = 3 * GPUS_PER_HOST + 2
    if case == "double-bit error since":
        samples = [*CLEAN_SAMPLES, (gpu, 60000.0, 2)]
    elif case == "fatal XID since":
        events = [
            {"t_s": 45000.0, "gpu_id": gpu, "host_id": 3, "xid": 48, "incident_id": None, "message": "DBE"}
        ]
    elif case == "incident open":
        incidents = [REPAIRED, incident(6, 30000.0, 3, cause="ssd")]
    else:  # in service after the repair, then drained for a reason nobody told us: left to whoever drained it
        states = {
            3: [
                ("healthy", 0.0, 10000.0),
                ("repair", 10000.0, 40000.0),
                ("healthy", 40000.0, 60000.0),
                ("down", 60000.0, DAY),
            ]
        }
    run = small_run(incidents=incidents, states=states, samples=samples, xid_events=events)
    store, run_id = stored(store_dir, run)
    assert [r for r in recommend(store, run_id, SETTINGS) if r.rule == Rule.REPAIRED] == []


# ----- REPAIRED, observed: out of service and clean for the clean window ---------------------------------------

# h3 went down at 60,000 s (16:40) after a fatal XID that nobody marks repaired (an observed run never does);
# since, all its GPUs report, clean, through the 6 h window ending at the run's end (18:00 to 24:00).
H3_GPUS = [3 * GPUS_PER_HOST + i for i in range(GPUS_PER_HOST)]
WENT_DOWN = incident(7, 59000.0, 3, xid=79, gpu_index=1)
WENT_DOWN_XID = {
    "t_s": 59000.0,
    "gpu_id": H3_GPUS[1],
    "host_id": 3,
    "xid": 79,
    "incident_id": 7,
    "message": "79",
}
DOWN_AT_60000 = {3: [("healthy", 0.0, 60000.0), ("down", 60000.0, DAY)]}
# before the repair GPU 0 had counted 2 double-bit errors; the driver's reload reset the count to 0
CLEAN_WINDOW_SAMPLES = [(H3_GPUS[0], 50000.0, 2)] + [(g, t, 0) for g in H3_GPUS for t in (70000.0, 80000.0)]


def observed_run(
    *, incidents=(WENT_DOWN,), states=DOWN_AT_60000, samples=CLEAN_WINDOW_SAMPLES, events=(), **kw
):
    return small_run(
        incidents=list(incidents),
        states=states,
        samples=samples,
        xid_events=[WENT_DOWN_XID, *events],
        kind=kw.pop("kind", "ingest"),
        **kw,
    )


def test_an_observed_host_out_of_service_and_clean_for_the_window_is_resumed(store_dir):
    store, run_id = stored(store_dir, observed_run())
    rec = only(recommend(store, run_id, SETTINGS))
    assert (rec.action, rec.nodes, rec.rule, rec.job_id) == (Action.RESUME, ("h3",), Rule.REPAIRED, None)
    assert (rec.jobs_hit, rec.gpus_hit) == ((), 0)
    # priced as the repaired rule: 1 incident over 4 hosts x 24 h, p = 0.25 over 24 h; the largest job, 16 GPUs
    p = 1 / (4 * 24.0) * H
    assert rec.cost_if_acting_gpu_hours == pytest.approx(p * restart_cost(16), abs=1e-9)
    assert rec.cost_if_not_gpu_hours == pytest.approx(GPUS_PER_HOST * H, abs=1e-9)
    assert rec.extra["p_recur"] == pytest.approx(p) and rec.extra["job_assumed"] == "train"
    assert (rec.extra["incidents_n"], rec.extra["hosts_n"], rec.extra["window_s"]) == (1, 4, DAY)
    assert rec.extra["out_since_s"] == 60000.0 and rec.extra["clean_window_s"] == 6 * 3600.0
    assert rec.extra["clean_from_s"] == DAY - 6 * 3600.0
    assert (rec.extra["gpu_samples_read"], rec.extra["gpus_reporting"], rec.extra["host_gpus"]) == (16, 8, 8)
    telemetry, state = rec.evidence
    assert (telemetry.kind, telemetry.t_s) == ("telemetry", DAY - 6 * 3600.0)
    assert telemetry.text == (
        "all 8 of its GPUs reported, 16 GPU samples in the 6 h from 2024-03-01 18:00 UTC to 2024-03-02 00:00 UTC,"
        " with no fatal XID, no double-bit ECC error and no incident"
    )
    assert telemetry.link == f"gpus?run={run_id}&gpu={H3_GPUS[0]}&t=86400"
    assert (state.kind, state.t_s) == ("host_state", 60000.0)
    assert state.text == "h3 is down at 2024-03-02 00:00 UTC, out of service since 2024-03-01 16:40 UTC"
    assert "out of service since 2024-03-01 16:40 UTC, clean for the last 6 h" in rec.reason
    assert "p = min(" in rec.pricing and "GPUs idle for 24 h" in rec.pricing
    # the same finding gives the same id, later in the same stretch out of service too
    assert only(recommend(store, run_id, SETTINGS)).id == rec.id
    assert only(recommend(store, run_id, SETTINGS, now_s=85000.0)).id == rec.id


@pytest.mark.parametrize(
    "case",
    [
        "a GPU not reporting",
        "fatal XID in the window",
        "double-bit error rise in the window",
        "incident in the window",
        "out of service less than the window",
        "lemon",
        "simulated run",
    ],
)
def test_an_observed_host_not_clean_for_the_window_is_not_resumed(store_dir, case):
    kw: dict = {}
    if case == "a GPU not reporting":  # its last GPU reported before the window only
        kw["samples"] = [(g, t, d) for g, t, d in CLEAN_WINDOW_SAMPLES if g != H3_GPUS[-1]]
        kw["samples"].append((H3_GPUS[-1], 60000.0, 0))
    elif case == "fatal XID in the window":
        kw["events"] = [{**WENT_DOWN_XID, "t_s": 75000.0, "xid": 48, "incident_id": None}]
    elif case == "double-bit error rise in the window":
        kw["samples"] = [*CLEAN_WINDOW_SAMPLES, (H3_GPUS[2], 82000.0, 1)]
    elif case == "incident in the window":
        kw["incidents"] = [WENT_DOWN, incident(8, 75000.0, 3, cause="ssd")]
    elif case == "out of service less than the window":  # down at 70,000: 4.4 h before the run's end
        kw["states"] = {3: [("healthy", 0.0, 70000.0), ("down", 70000.0, DAY)]}
    elif case == "lemon":  # two repair-sending failures within a day: the lemon rule flags it
        kw["incidents"] = [incident(6, 30000.0, 3, cause="ssd"), WENT_DOWN]
        kw["scenario"] = {**SCENARIO, "repair": {"lemon_failures": 2, "lemon_window": "1d"}}
    else:  # a simulated run knows its repairs: the repaired incident's sign only
        kw["kind"] = "simulate"
    store, run_id = stored(store_dir, observed_run(**kw))
    assert [r for r in recommend(store, run_id, SETTINGS) if r.rule == Rule.REPAIRED] == []


def test_an_observed_host_is_resumed_once_out_of_service_for_the_whole_window(store_dir):
    """Down at 60,000 s: 6 h later is 81,600 s (the fatal XID at 59,000 s has left the window by then)."""
    store, run_id = stored(store_dir, observed_run())
    assert [r.rule for r in recommend(store, run_id, SETTINGS, now_s=81700.0)] == [Rule.REPAIRED]
    assert [r for r in recommend(store, run_id, SETTINGS, now_s=81500.0) if r.rule == Rule.REPAIRED] == []


# ----- STUCK_JOB ---------------------------------------------------------------------------------------------

STUCK_STATES = {1: [("running", 0.0, 80000.0), ("down", 80000.0, DAY)]}


def test_a_job_holding_a_down_host_is_requeued(store_dir):
    store, run_id = stored(store_dir, small_run(states=STUCK_STATES))
    rec = only(recommend(store, run_id, SETTINGS))
    assert (rec.action, rec.nodes, rec.rule, rec.job_id) == (Action.REQUEUE, ("h1",), Rule.STUCK_JOB, "train")
    assert (rec.jobs_hit, rec.gpus_hit) == (("train",), 16)
    assert rec.cost_if_acting_gpu_hours == pytest.approx(restart_cost(16), abs=1e-9)
    assert rec.cost_if_not_gpu_hours == pytest.approx(16 * H, abs=1e-9)
    job, host = rec.evidence
    assert (job.kind, job.link) == ("job", f"jobs?run={run_id}&job=train")
    assert (host.kind, host.text) == ("host_state", "h1 is down at 2024-03-02 00:00 UTC")
    assert only(recommend(store, run_id, SETTINGS)).id == rec.id


def test_a_finished_job_is_not_requeued(store_dir):
    attempts = [
        {
            "job_id": "train",
            "attempt": 1,
            "start_s": 0.0,
            "end_s": 70000.0,
            "end_reason": "completed",
            "hosts": [0, 1],
        },
        {
            "job_id": "solo",
            "attempt": 1,
            "start_s": 0.0,
            "end_s": DAY,
            "end_reason": "end_of_run",
            "hosts": [2],
        },
    ]
    store, run_id = stored(store_dir, small_run(states=STUCK_STATES, attempts=attempts))
    assert recommend(store, run_id, SETTINGS) == []


# ----- every rule together, and a demo run ---------------------------------------------------------------------


def test_recommendations_come_most_worth_doing_first(store_dir):
    run = small_run(incidents=[FATAL], episodes=[EPISODE], states=STUCK_STATES)
    # h1 down: no fatal-XID drain (not in service), the job on it is requeued; h0 slow: drained
    store, run_id = stored(store_dir, run)
    recs = recommend(store, run_id, SETTINGS)
    assert [r.rule for r in recs] == [Rule.STUCK_JOB, Rule.SLOW_HOST]
    net = [r.cost_if_not_gpu_hours - r.cost_if_acting_gpu_hours for r in recs]
    assert net == sorted(net, reverse=True)


def test_a_demo_run_gives_a_sane_list(tmp_path, capsys):
    store_dir = tmp_path / "store"
    assert (
        main(
            [
                "simulate",
                "--preset",
                "demo",
                "--set",
                "slow.host_rate=20",
                "--store",
                str(store_dir),
                "--json",
            ]
        )
        == 0
    )
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    store = Store(store_dir)
    hostnames = set(store.table(run_id, "hosts")["hostname"].to_list())
    episodes = store.table(run_id, "slow_episodes")
    moments = [None, *((episodes["start_s"] + episodes["end_s"]) / 2).to_list()[:5]]
    seen = 0
    for now_s in moments:
        recs = recommend(store, run_id, SETTINGS, now_s)
        seen += len(recs)
        assert len({r.id for r in recs}) == len(recs)
        for rec in recs:
            assert rec.cost_if_acting_gpu_hours >= 0 and rec.cost_if_not_gpu_hours >= 0
            assert rec.nodes and set(rec.nodes) <= hostnames
            assert rec.run_id == run_id and rec.pricing and rec.evidence
        net = [r.cost_if_not_gpu_hours - r.cost_if_acting_gpu_hours for r in recs]
        assert net == sorted(net, reverse=True)
        assert [r.id for r in recommend(store, run_id, SETTINGS, now_s)] == [r.id for r in recs]
    assert seen > 0  # the slow hosts at least
