"""Replay then fork: a run's own incidents export replays to the same run; other settings, same failures."""

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import GoodputError
from engine.replay.incidents import (
    IncidentsFileError,
    replay_incidents,
    replay_incidents_data,
    replay_stored_run,
)
from engine.report.export import export_run_incidents, write_export
from engine.scenario import build, from_dict
from engine.store import Store
from engine.twin.simulate import simulate

# A busy week of the demo cluster: many failures, rack-switch failures among them, so replay must get the
# rack-wide flag, the GPU behind a NIC cable, late detections and planned stops right.
SETS = [
    "simulation.days=4",
    "failures.scale=6",
    "failures.network_rack_share=0.5",
    "simulation.seed=3",
    "simulation.telemetry=false",
]
HEADER = "t_s,detected_s,cause,planned,host_id,gpu_id,xid\n"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("replay")
    run = simulate(build("demo", sets=SETS))
    store = Store(folder / "store")
    run_id = store.write_run(run)
    for fmt in ("json", "csv"):
        write_export(folder / f"incidents.{fmt}", export_run_incidents(store, run_id, fmt))
    return run, folder


def test_a_stored_run_forks_directly_and_an_upload_replays_from_bytes(exported):
    run, folder = exported
    store = Store(folder / "store")
    same = replay_stored_run(store, run.run_id)
    assert same.tables["incidents"].equals(run.tables["incidents"])
    assert same.summary["jobs"] == run.tables["jobs"].height and same.summary["format"] == "incidents"
    uploaded = replay_incidents_data(
        (folder / "incidents.csv").read_bytes(), "csv", where="upload.csv", preset="demo", sets=SETS
    )
    assert uploaded.summary["interruptions"] == run.summary["interruptions"]
    # an anonymised export keeps host and GPU ids (positions, not names), so it replays to the same run; only
    # the flagship job's name (the scenario's training.name) is now its pseudonym
    anonymised = replay_incidents_data(
        export_run_incidents(store, run.run_id, "json", anonymise=True), "json"
    )
    assert anonymised.summary["interruptions"] == run.summary["interruptions"]
    assert anonymised.tables["incidents"].drop("job_ids").equals(run.tables["incidents"].drop("job_ids"))
    assert anonymised.summary["job"]["name"].startswith("job-")
    with pytest.raises(IncidentsFileError, match="^upload.csv: line 2: unknown cause"):
        replay_incidents_data(
            HEADER.encode() + b"1,1,gpu_on_fire,false,1,,\n", "csv", where="upload.csv", preset="demo"
        )


def test_a_fork_takes_values_as_the_engine_reads_them(exported):
    run, folder = exported
    store = Store(folder / "store")
    forked = replay_stored_run(
        store, run.run_id, values={"spares.hosts": 0, "training.checkpoint_interval": 600.0}, name="fork"
    )
    assert forked.name == "fork" and forked.kind == "replay"
    scenario = from_dict(forked.scenario)
    assert scenario["spares.hosts"] == 0 and scenario["training.checkpoint_interval"] == 600.0
    assert forked.scenario["training"]["checkpoint_interval"] == "10m"  # spelled as a file would spell it
    # the same failures, at the same times and on the same hosts, under the new settings
    columns = ["t_s", "cause", "host_id"]
    assert forked.tables["incidents"].select(columns).equals(run.tables["incidents"].select(columns))
    with pytest.raises(GoodputError, match="training.checkpoint_interval"):
        replay_stored_run(store, run.run_id, values={"training.checkpoint_interval": -1.0})


def test_replaying_a_runs_own_json_export_reproduces_it(exported):
    run, folder = exported
    replay = replay_incidents(folder / "incidents.json")
    assert replay.kind == "replay" and replay.run_id != run.run_id
    assert run.tables["incidents"].height > 20 and run.tables["incidents"]["link_id"].drop_nulls().len() > 0
    assert replay.summary["interruptions"] == run.summary["interruptions"]
    for table in ("incidents", "job_attempts", "checkpoints", "host_states", "jobs"):
        assert replay.tables[table].equals(run.tables[table]), table
    assert replay.summary["job"]["ettr"] == run.summary["job"]["ettr"]
    replayed = replay.summary["replayed"]
    assert replayed["failures"] + replayed["planned"] == run.tables["incidents"].height
    assert replayed["planned"] == int(run.tables["incidents"]["planned"].sum())


def test_a_csv_export_replays_under_the_preset_and_sets_given(exported):
    run, folder = exported
    replay = replay_incidents(folder / "incidents.csv", preset="demo", sets=SETS)
    assert replay.summary["interruptions"] == run.summary["interruptions"]
    assert replay.tables["incidents"].equals(run.tables["incidents"])
    with pytest.raises(IncidentsFileError, match="carries no scenario"):
        replay_incidents(folder / "incidents.csv")


def test_forking_keeps_the_failures_and_changes_the_outcome(exported):
    run, folder = exported
    slower = replay_incidents(folder / "incidents.json", sets=["training.checkpoint_interval=2h"])
    original = run.tables["incidents"].filter(pl.col("jobs_hit") > 0)
    forked = slower.tables["incidents"]
    # every failure of the file happens again at the same time on the same host with the same cause
    assert (
        forked.select("t_s", "host_id", "cause")
        .sort("t_s", "host_id")
        .equals(run.tables["incidents"].select("t_s", "host_id", "cause").sort("t_s", "host_id"))
    )
    assert original.height and slower.summary["job"]["ettr"] != run.summary["job"]["ettr"]


def test_more_spares_never_lower_ettr_on_the_same_failures(tmp_path):
    # Hand-made: six GPUs of the demo flagship job's hosts (0-47) fail within three hours, while the hosts
    # before them are still in repair (hours), so with few spares the job waits for repaired hosts.
    rows = [
        (3600.0 * (1 + i / 2), 3600.0 * (1 + i / 2) + 60, "faulty_gpu", "false", h, h * 8, 79)
        for i, h in enumerate((0, 5, 11, 17, 23, 29))
    ]
    rows.append((20 * 3600.0, 20 * 3600.0, "planned_maintenance", "true", "", "", ""))
    path = tmp_path / "hand-made.csv"
    path.write_text(HEADER + "".join(",".join(map(str, r)) + "\n" for r in rows))
    ettr = []
    for spares in (0, 1, 2, 3, 6, 12):
        # spares alone: without them the job waits for repairs instead of preempting research jobs
        run = replay_incidents(
            path,
            preset="demo",
            sets=[
                "simulation.days=2",
                "simulation.telemetry=false",
                f"spares.hosts={spares}",
                "spares.preempt_research=false",
            ],
        )
        assert run.summary["interruptions"]["by_cause"]["faulty_gpu"] >= 1
        ettr.append(run.summary["job"]["ettr"])
    assert all(a <= b + 1e-12 for a, b in zip(ettr, ettr[1:], strict=False)), ettr
    assert ettr[0] < ettr[-1]  # without spares the job waited for repairs; with six or more it never did
    assert ettr[-2] == ettr[-1]  # six failures: the seventh to twelfth spares change nothing
    # with preemption (the default) research hosts stand in for the missing spares: the job waits only for each
    # one's hand-over (spares.preempt_handover); with an instant hand-over it never waits
    base = ["simulation.days=2", "simulation.telemetry=false", "spares.hosts=0"]
    instant = replay_incidents(path, preset="demo", sets=[*base, "spares.preempt_handover=0s"])
    assert instant.summary["job"]["ettr"] == pytest.approx(ettr[-1], abs=1e-12)
    preempting = replay_incidents(path, preset="demo", sets=base)
    assert preempting.summary["cluster"]["research_preemptions"] == 6
    assert preempting.summary["job"]["ettr"] < ettr[-1]
    waited_h = (
        preempting.summary["job"]["losses_gpu_hours"]["waiting_for_spares"]
        / preempting.summary["job"]["gpus"]
    )
    assert waited_h == pytest.approx(6 * 20 / 60, rel=1e-9)  # six hand-overs of 20 min


@pytest.mark.parametrize(
    "text, message",
    [
        ("t_s,cause\n1,ssd\n", "missing column(s) planned, host_id"),
        (HEADER + "12,12,ssd,false,1,,\nsoon,12,ssd,false,1,,\n", "line 3: t_s is not a number: 'soon'"),
        (HEADER + "12,12,gpu_on_fire,false,1,,\n", "line 2: unknown cause 'gpu_on_fire'"),
        (
            HEADER + "12,12,ssd,false,999,,\n",
            "line 2: host_id is not a host of the replayed cluster (0 to 63): '999'",
        ),
        (HEADER + "12,12,ssd,false,,,\n", "line 2: an unexpected failure needs a host_id"),
        (HEADER + "12,10,ssd,false,1,,\n", "line 2: detected_s is before t_s: '10'"),
        (HEADER + "12,12,ssd,maybe,1,,\n", "line 2: planned is not true or false: 'maybe'"),
        (HEADER + "12,12,ssd,true,1,,\n", "line 2: planned must be true exactly for planned_maintenance"),
        (HEADER + "12,12,faulty_gpu,false,1,99,79\n", "line 2: the GPU is not one of the host's 8"),
        (HEADER + "12,12,ssd,false,1.5,,\n", "line 2: host_id is not a whole number: '1.5'"),
    ],
)
def test_bad_csv_names_file_line_and_column(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(IncidentsFileError) as err:
        replay_incidents(path, preset="demo")
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_bad_json_and_other_files_are_clear_errors(tmp_path):
    cases = {
        "a.json": "{not json",
        "b.json": json.dumps({"rows": []}),
        "c.txt": "t_s\n",
        "d.json": json.dumps({"incidents": [{"t_s": 1, "cause": "ssd", "planned": False, "host_id": 1}, 7]}),
    }
    messages = {
        "a.json": "not valid JSON",
        "b.json": "no `incidents` list",
        "c.txt": ".csv or .json",
        "d.json": "incident record 2 is not an object",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(IncidentsFileError, match=messages[name]):
            replay_incidents(tmp_path / name, preset="demo")
    with pytest.raises(IncidentsFileError, match="no such file"):
        replay_incidents(tmp_path / "missing.csv", preset="demo")


def test_json_record_errors_name_the_record(tmp_path):
    path = tmp_path / "x.json"
    records = [
        {"t_s": 5.0, "cause": "ssd", "planned": False, "host_id": 1},
        {"t_s": -5.0, "cause": "ssd", "planned": False, "host_id": 1},
    ]
    path.write_text(json.dumps({"incidents": records}))
    with pytest.raises(IncidentsFileError, match="incident record 2: t_s must be a time in seconds"):
        replay_incidents(path, preset="demo")


@settings(max_examples=60, deadline=None)
@given(cells=st.lists(st.text(alphabet="0123456789.-e xtruefalsnd_", max_size=6), min_size=7, max_size=7))
def test_any_row_either_replays_or_is_a_clear_error(tmp_path_factory, cells):
    path = tmp_path_factory.mktemp("fuzz") / "row.csv"
    path.write_text(HEADER + ",".join(c.replace(",", "") for c in cells) + "\n")
    try:
        run = replay_incidents(path, preset="demo", sets=["simulation.days=1", "simulation.telemetry=false"])
    except GoodputError as err:
        assert str(err).startswith(str(path))
    else:
        assert (
            run.summary["replayed"]["failures"]
            + run.summary["replayed"]["planned"]
            + run.summary["replayed"]["beyond_the_run"]
            == 1
        )


def test_the_replay_command_forks_an_export_under_other_settings(exported, tmp_path, capsys):
    """`goodput export incidents` then `goodput replay FILE --set ...`: the same failures, other spares."""
    from engine.cli import main

    run, folder = exported
    store, run_id = Store(folder / "store"), run.run_id
    json_path, csv_path = folder / "incidents.json", folder / "incidents.csv"
    assert (
        main(["replay", str(json_path), "--set", "spares.hosts=8", "--store", str(store.root), "--json"]) == 0
    )
    forked = json.loads(capsys.readouterr().out)
    original = store.info(run_id).summary

    def failures(of: str) -> set:
        return set(store.table(of, "incidents").select("t_s", "cause", "host_id").iter_rows())

    # the fork draws no failure of its own: each is one of the original's (a host already in repair under
    # the other settings is spared a second one), and the settings changed as asked
    assert failures(forked["run_id"]) <= failures(run_id) and len(failures(forked["run_id"])) > 10
    assert store.info(forked["run_id"]).scenario["spares"]["hosts"] == 8
    assert store.info(run_id).scenario["spares"]["hosts"] == 4
    # a CSV export carries no scenario: it needs --preset (told plainly), then replays like the JSON
    assert main(["replay", str(csv_path), "--store", str(store.root)]) == 2
    assert "preset" in capsys.readouterr().err
    sets = [arg for key_value in SETS for arg in ("--set", key_value)]
    assert (
        main(
            [
                "replay",
                str(csv_path),
                "--format",
                "incidents",
                "--preset",
                "demo",
                *sets,
                "--store",
                str(store.root),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["interruptions"]["total"] == original["interruptions"]["total"]


def test_a_csv_cell_the_export_quoted_against_formulas_reads_back_as_written(tmp_path):
    # engine/report/csv_safety.py puts one quote before text that starts like a formula (or with a quote); replay drops
    # exactly that one quote, so a quoted cell and its original replay alike.
    plain, quoted = tmp_path / "plain.csv", tmp_path / "quoted.csv"
    plain.write_text(HEADER + "12,12,ssd,false,1,,\n")
    quoted.write_text(HEADER + "12,12,'ssd,false,1,,\n")
    one, other = replay_incidents(plain, preset="demo"), replay_incidents(quoted, preset="demo")
    assert other.tables["incidents"]["cause"].to_list() == ["ssd"]
    assert one.tables["incidents"].equals(other.tables["incidents"])
