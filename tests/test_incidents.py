"""Incidents: the exact chain of hand-made incidents, their cost, filters that combine, Llama 3 counting."""

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.analysis.incidents import (
    HARDWARE_CATEGORIES,
    IncidentError,
    filter_incidents,
    incident_chain,
    incident_detail,
    load_incidents,
    summary_counts,
)
from engine.scenario import build
from engine.twin.simulate import simulate
from tests.runs import make_store, small_run


@pytest.fixture(scope="module")
def tables() -> dict:
    return small_run().tables


def test_chain_of_a_gpu_falling_off_the_bus_is_exact(tables):
    # tests/runs.py incident 1: faulty_gpu on GPU 11 of host 1 at 36,000 s; checkpoints every 7,200 s of
    # compute + 300 s write, so the last one completed before the fault at 4 x 7,500 - 300 + 300 = 29,100 s
    chain = incident_chain(tables, 1)
    assert chain["step"].to_list() == list(range(1, 12))
    assert list(zip(chain["t_s"], chain["what"], chain["detail"], strict=True)) == [
        (29100.0, "checkpoint", "tiny-pretrain: restarts from the checkpoint completed here"),
        (36000.0, "occurred", "faulty_gpu (GPU) on host h0001, GPU 11, XID 79"),
        (36000.0, "job interrupted", "tiny-pretrain: attempt 1 on 2 hosts ended, 6,900 s of work lost"),
        (36000.0, "hosts drained", "h0001 taken out of service (down)"),
        (
            36060.0,
            "detected",
            "XID 79 in the kernel log (NVRM: Xid (PCI:0000:9a:00): 79, GPU has fallen off the bus.)",
        ),
        (36600.0, "repair: diagnosing", "h0001"),
        (37800.0, "spares swapped in", "tiny-pretrain: hosts h0003 replace h0001"),
        (37800.0, "job running again", "tiny-pretrain: attempt 2 on 2 hosts"),
        (37800.0, "repair: repair", "h0001"),
        (100000.0, "repair: burn_in", "h0001"),
        (120000.0, "host returned", "h0001 back as spare"),
    ]


def test_chain_of_a_rack_switch_failure_hits_two_jobs_and_two_hosts(tables):
    detail = incident_detail(tables, 4)
    assert detail.hosts == [2, 3] and detail.jobs == ["flagship", "research-1"]
    assert detail.gpus == list(range(16, 32))  # every GPU of hosts 2 and 3
    assert detail.cost.select("job_id", "attempt", "lost_work_s", "restart_s").rows() == [
        ("flagship", 3, 1500.0, 1800.0),  # 150,000 - last checkpoint 148,500; back at 151,800
        ("research-1", 2, 3600.0, 14400.0),  # back on host 2 at 164,400 after its repair
    ]
    whats = detail.chain["what"].to_list()
    assert whats.count("job interrupted") == 2 and whats.count("host returned") == 2
    assert ("spares swapped in", "tiny-pretrain: hosts h0001 replace h0003") in list(
        zip(detail.chain["what"], detail.chain["detail"], strict=True)
    )
    assert detail.chain["t_s"].is_sorted()


def test_a_planned_stop_loses_nothing_to_repair_and_a_spare_host_failure_hits_no_job(tables):
    planned = incident_detail(tables, 3)
    assert planned.hosts == [] and "hosts drained" not in planned.chain["what"].to_list()
    assert planned.chain.filter(pl.col("what") == "detected")["detail"][0].startswith("planned stop")
    spare = incident_detail(tables, 5)
    assert spare.jobs == [] and spare.cost.height == 0 and spare.gpu_hours_lost == 0.0
    assert spare.chain["detail"].to_list()[-1] == "h0003 still out of service at the end of the run"


def test_cost_of_every_hand_made_incident_matches_the_runs_gpu_hours(tables):
    expected = dict(
        zip(tables["incidents"]["incident_id"], tables["incidents"]["gpu_hours_lost"], strict=True)
    )
    for incident_id, gpu_hours in expected.items():
        assert incident_detail(tables, incident_id).gpu_hours_lost == pytest.approx(gpu_hours, rel=1e-12)


def test_store_connection_and_frames_give_the_same_chain(tmp_path, tables):
    store = make_store(tmp_path / "store")
    with store.connect(small_run().run_id) as con:
        for incident_id in range(1, 6):
            assert incident_chain(con, incident_id).equals(incident_chain(tables, incident_id))


def test_unknown_incident_is_a_clear_error(tables):
    with pytest.raises(IncidentError, match="no incident 42"):
        incident_chain(tables, 42)


def test_simulated_chains_cost_what_the_simulator_charged():
    # a high failure rate, so research jobs are hit and the flagship job is hit while restarting too
    run = simulate(
        build("demo", sets=["simulation.days=3", "failures.scale=4", "simulation.telemetry=false"])
    )
    incidents = run.tables["incidents"]
    assert incidents.height >= 3
    for row in incidents.iter_rows(named=True):
        detail = incident_detail(run.tables, row["incident_id"])
        assert detail.gpu_hours_lost == pytest.approx(row["gpu_hours_lost"], rel=1e-9, abs=1e-9)
        assert detail.chain["what"][0] in ("checkpoint", "occurred")


def test_chain_of_an_observed_xid_from_a_real_kernel_log(shared_data):
    from engine.ingest import ingest_kernel_logs

    run = ingest_kernel_logs([shared_data / "kernel-logs" / "sxid20034_xid79.log"])
    frame = load_incidents(run.tables)
    assert frame.height >= 1 and frame["xid"][0] == 79
    chain = incident_chain(run.tables, frame["incident_id"][0])
    detected = chain.filter(pl.col("what") == "detected")["detail"][0]
    assert detected.startswith("XID 79 in the kernel log") and "fallen off the bus" in detected


# ----- filters --------------------------------------------------------------------------------------------


def test_filters_combine_with_and_and_values_with_or(tables):
    frame = load_incidents(tables)
    assert filter_incidents(frame, categories=["GPU"], planned=False)["incident_id"].to_list() == [1, 2]
    assert filter_incidents(frame, since_s=50000, until_s=160000)["incident_id"].to_list() == [2, 3, 4]
    assert filter_incidents(frame, jobs=["research-1"], racks=[1])["incident_id"].to_list() == [2]
    assert filter_incidents(frame, causes=["ssd", "faulty_gpu"], racks=[0, 1])["incident_id"].to_list() == [
        1,
        5,
    ]
    assert filter_incidents(frame, planned=True)["incident_id"].to_list() == [3]
    assert filter_incidents(frame, causes=[]).height == 0
    with pytest.raises(IncidentError, match="unknown cause gpu_on_fire"):
        filter_incidents(frame, causes=["gpu_on_fire"])
    with pytest.raises(IncidentError, match="unknown category Cosmic"):
        filter_incidents(frame, categories=["Cosmic"])


_FRAME = load_incidents(small_run().tables)


@settings(max_examples=150, deadline=None)
@given(
    since=st.none() | st.floats(0, 200000),
    until=st.none() | st.floats(0, 200000),
    causes=st.none() | st.lists(st.sampled_from(sorted(set(_FRAME["cause"]))), unique=True),
    categories=st.none() | st.lists(st.sampled_from(sorted(set(_FRAME["category"]))), unique=True),
    racks=st.none() | st.lists(st.sampled_from([0, 1, 7]), unique=True),
    jobs=st.none() | st.lists(st.sampled_from(["flagship", "research-1", "research-2"]), unique=True),
    planned=st.none() | st.booleans(),
)
def test_filters_match_a_row_by_row_reading(since, until, causes, categories, racks, jobs, planned):
    got = filter_incidents(
        _FRAME,
        since_s=since,
        until_s=until,
        causes=causes,
        categories=categories,
        racks=racks,
        jobs=jobs,
        planned=planned,
    )["incident_id"].to_list()
    expected = [
        r["incident_id"]
        for r in _FRAME.iter_rows(named=True)
        if (since is None or r["t_s"] >= since)
        and (until is None or r["t_s"] < until)
        and (causes is None or r["cause"] in causes)
        and (categories is None or r["category"] in categories)
        and (racks is None or r["rack_id"] in racks)
        and (jobs is None or set(r["job_ids"]) & set(jobs))
        and (planned is None or r["planned"] == planned)
    ]
    assert got == expected


# ----- counting -------------------------------------------------------------------------------------------


def test_counts_of_the_llama3_table_give_its_hardware_share(shared_reference):
    table = pl.read_csv(shared_reference / "llama3_interruptions.csv")
    unexpected = table.select(
        pl.col("cause").repeat_by("count").explode(), pl.col("category").repeat_by("count").explode()
    )
    planned = pl.DataFrame({"cause": ["planned_maintenance"] * 47, "category": ["Planned"] * 47})
    frame = pl.concat(
        [unexpected.with_columns(planned=pl.lit(False)), planned.with_columns(planned=pl.lit(True))]
    ).with_columns(t_s=pl.int_range(pl.len()).cast(pl.Float64) * 54 * 86400 / 466, gpu_hours_lost=pl.lit(1.0))
    counts = summary_counts(frame, days=54)
    # Llama 3 paper: 466 interruptions in 54 days, 47 planned, 419 unexpected, "about 78%" hardware
    assert (counts["total"], counts["planned"], counts["unexpected"]) == (466, 47, 419)
    assert counts["hardware"] == 268 + 21 + 35 and counts["hardware_share"] == pytest.approx(324 / 419)
    assert abs(counts["hardware_share"] - 0.78) < 0.01
    assert counts["per_day"] == pytest.approx(466 / 54)
    by_cause = dict(counts["by_cause"].select("cause", "interruptions").iter_rows())
    assert by_cause["faulty_gpu"] == 148 and by_cause["planned_maintenance"] == 47
    gpu = counts["by_category"].filter(pl.col("category") == "GPU").row(0, named=True)
    assert gpu["pct_of_unexpected"] == pytest.approx(268 / 419 * 100)
    assert counts["days"].height == 54 and counts["days"]["planned"].sum() == 47
    assert set(HARDWARE_CATEGORIES) == {"GPU", "Host", "Network"}


def test_counts_of_the_hand_made_run(tables):
    counts = summary_counts(load_incidents(tables), days=2)
    assert (counts["total"], counts["planned"], counts["unexpected"], counts["hardware"]) == (5, 1, 4, 4)
    assert counts["per_day"] == 2.5
    assert counts["days"].rows() == [(0, 0, 2), (1, 1, 2)]
    assert counts["gpu_hours_lost"] == pytest.approx(float(tables["incidents"]["gpu_hours_lost"].sum()))


def test_counts_of_the_flagship_job_match_the_run_summary():
    run = simulate(
        build("demo", sets=["simulation.days=3", "failures.scale=4", "simulation.telemetry=false"])
    )
    frame = load_incidents(run.tables)
    counts = summary_counts(frame, 3, job=run.summary["job"]["name"])
    expected = run.summary["interruptions"]
    assert (counts["total"], counts["planned"], counts["unexpected"]) == (
        expected["total"],
        expected["planned"],
        expected["unexpected"],
    )
    assert dict(counts["by_cause"].select("cause", "interruptions").iter_rows()) == {
        cause: n for cause, n in expected["by_cause"].items() if n
    }
    assert summary_counts(frame, 3)["total"] == frame.height > counts["total"]  # research jobs were hit too
