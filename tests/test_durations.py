"""Durations: a number and its unit, never a bare number (issue 13), wherever a duration enters Goodput."""

import subprocess
import sys
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cli import main
from engine.errors import GoodputError
from engine.scenario import ScenarioError, build, from_dict
from engine.scenario.durations import UNIT_SECONDS, format_duration, human_duration, parse_duration

DURATION_KEYS = (
    "training.checkpoint_interval",
    "training.restart_overhead",
    "training.checkpoint_write",
    "simulation.telemetry_resolution",
    "repair.fix",
    "repair.lemon_window",
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("2h", 7200),
        ("1d", 86400),
        ("1.5h", 5400),
        ("2w", 1209600),
        ("250ms", 0.25),
        (" 10 min ", 600),
        ("1h30m", 5400),
        ("3d12h", 302400),
        ("1m5s", 65),
        ("2 h 15 min", 8100),
        ("3.1536e+07s", 31536000),
        (".5m", 30),
        ("0s", 0),
    ],
)
def test_parse(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-15)


@pytest.mark.parametrize("text", ["", "abc", "5x", "1h30", "True", True, "m", "1e999s", "inf", "nan"])
def test_bad_durations_name_the_key(text):
    with pytest.raises(GoodputError, match="training.restart_overhead"):
        parse_duration(text, "training.restart_overhead")


def test_a_negative_duration_is_called_negative():
    with pytest.raises(GoodputError, match="cannot be negative, got '-3m'"):
        parse_duration("-3m", "repair.fix")


@pytest.mark.parametrize("bare", [5, 0, 300.0, "5", " 300 ", "1.5", "1e3", 10**400, "-2"])
def test_a_bare_number_is_refused_with_the_key_the_value_and_the_units(bare):
    with pytest.raises(GoodputError) as caught:
        parse_duration(bare, "--checkpoint-interval")
    message = str(caught.value)
    assert message.startswith("--checkpoint-interval: ")
    assert "has no unit; give a unit: 90s, 30m, 2h, 1d" in message
    assert repr(bare)[:20] in message  # the value as given (cut short past 60 characters)


def test_a_stored_bare_number_still_reads_as_seconds():
    """An earlier Goodput took a bare number as seconds and stored it so; such a run still opens."""
    assert parse_duration(300, "k", bare_seconds=True) == 300.0
    assert parse_duration("45", "k", bare_seconds=True) == 45.0
    with pytest.raises(GoodputError, match="finite"):
        parse_duration(10**400, "k", bare_seconds=True)


# ----- any bare number refused, any number with its unit read exactly ------------------------------------------

BARE_NUMBERS = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.from_regex(r"\A ?[+-]?([0-9]{1,9}(\.[0-9]{0,4})?|\.[0-9]{1,4})([eE][+-]?[0-9]{1,2})? ?\Z"),
)


@settings(max_examples=300, deadline=None)
@given(BARE_NUMBERS)
def test_any_bare_number_is_refused(bare):
    with pytest.raises(GoodputError, match="has no unit; give a unit: 90s, 30m, 2h, 1d"):
        parse_duration(bare, "k")


AMOUNTS = st.from_regex(r"\A([0-9]{1,7}(\.[0-9]{1,3})?|\.[0-9]{1,3})\Z")


@settings(max_examples=300, deadline=None)
@given(AMOUNTS, st.sampled_from(sorted(UNIT_SECONDS)), st.sampled_from(["", " "]))
def test_any_number_with_its_unit_is_read_in_seconds(amount, unit, gap):
    expected = float(
        Decimal(amount) * Decimal(UNIT_SECONDS[unit]) if unit != "ms" else Decimal(amount) / 1000
    )
    assert parse_duration(f"{amount}{gap}{unit}") == pytest.approx(expected, rel=1e-15, abs=1e-18)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10**6), st.sampled_from(["d", "h", "m", "s"])),
        min_size=1,
        max_size=4,
    )
)
def test_parts_add_up(parts):
    text = "".join(f"{n}{unit}" for n, unit in parts)
    assert parse_duration(text) == sum(n * UNIT_SECONDS[unit] for n, unit in parts)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DURATION_KEYS), st.integers(min_value=1, max_value=10**5))
def test_every_scenario_duration_refuses_a_bare_number_and_takes_one_with_its_unit(key, n):
    with pytest.raises(ScenarioError, match=rf"--set: {key}: {n} has no unit; give a unit"):
        build("demo", sets=[f"{key}={n}"])
    quoted = f'"{n}s"' if key == "training.checkpoint_write" else f"{n}s"  # optional text keys are quoted
    s = build("demo", sets=[f"{key}={quoted}", "simulation.telemetry=false", "simulation.days=0.1"])
    assert (s.checkpoint_write_s if key == "training.checkpoint_write" else s[key]) == n


@pytest.mark.parametrize("value", ["5", '"5"', "5.0"])
def test_a_scenario_file_with_a_bare_duration_names_its_file_and_key(tmp_path, value):
    path = tmp_path / "cluster.toml"
    path.write_text(f'preset = "demo"\n[training]\ncheckpoint_interval = {value}\n')
    with pytest.raises(ScenarioError, match=r"cluster.toml: training.checkpoint_interval: .*5.* has no unit"):
        build(file=path)


def test_a_stored_scenario_with_bare_seconds_still_builds():
    """runs.scenario of a run made before issue 13 (`--set training.checkpoint_interval=300` was seconds)."""
    old = build("demo").to_dict()
    old["training"]["checkpoint_interval"] = 300
    old["training"]["checkpoint_write"] = "20"
    s = from_dict(old)
    assert s["training.checkpoint_interval"] == 300 and s.checkpoint_write_s == 20
    assert s.with_overrides(["spares.hosts=2"])["training.checkpoint_interval"] == 300
    with pytest.raises(ScenarioError, match="has no unit"):  # what is added now must still give its unit
        s.with_overrides(["training.restart_overhead=60"])


# ----- the command line: every flag that takes a duration ------------------------------------------------------

ETTR = ["ettr", "--gpus", "16384", "--node-failure-rate", "3.79"]


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (
            [*ETTR, "--checkpoint-interval", "5", "--checkpoint-write", "3s", "--restart-overhead", "10m"],
            "--checkpoint-interval: '5'",
        ),
        (
            [*ETTR, "--checkpoint-interval", "5m", "--checkpoint-write", "3", "--restart-overhead", "10m"],
            "--checkpoint-write: '3'",
        ),
        (
            [*ETTR, "--checkpoint-interval", "5m", "--checkpoint-write", "3s", "--restart-overhead", "600"],
            "--restart-overhead: '600'",
        ),
        (
            ["simulate", "--preset", "demo", "--set", "training.checkpoint_interval=5"],
            "training.checkpoint_interval: 5",
        ),
        (
            ["sweep", "--preset", "demo", "--vary", "training.checkpoint_interval=5,10", "--seeds", "1"],
            "training.checkpoint_interval: 5",
        ),
        (
            ["replay", "TRACE", "--set", "scheduler.checkpoint_interval=1800"],
            "scheduler.checkpoint_interval: '1800'",
        ),
        (["ingest", "dcgm", "--scrape", "http://127.0.0.1:9/metrics", "--every", "30"], "--every: '30'"),
        (
            ["export", "incidents", "--run", "RUN", "--format", "csv", "--output", "OUT", "--since", "3600"],
            "--since: '3600'",
        ),
    ],
)
def test_every_duration_flag_refuses_a_bare_number_and_writes_nothing(tmp_path, capsys, argv, flag):
    store = tmp_path / "store"
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit,gpus,duration\nj1,0,8,1h\n")
    argv = [a.replace("TRACE", str(trace)).replace("OUT", str(tmp_path / "out.csv")) for a in argv]
    if argv[0] == "export":  # a run to export from: made with units, so only --since is wrong
        assert (
            main(
                [
                    "simulate",
                    "--preset",
                    "demo",
                    "--set",
                    "simulation.days=0.5",
                    "--set",
                    "simulation.telemetry=false",
                    "--store",
                    str(store),
                    "--json",
                ]
            )
            == 0
        )
        run_id = __import__("json").loads(capsys.readouterr().out)["run_id"]
        argv = [a.replace("RUN", run_id) for a in argv]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code = main([*argv, "--store", str(store)] if argv[0] not in ("ettr", "sweep") else argv)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("goodput: error: ") and err.count("\n") == 1
    assert flag in err and "has no unit; give a unit: 90s, 30m, 2h, 1d" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_ettr_echoes_the_durations_it_read(capsys):
    assert (
        main(
            [
                *ETTR,
                "--checkpoint-interval",
                "1h30m",
                "--checkpoint-write",
                "3.3s",
                "--restart-overhead",
                "10m",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "read: 16,384 GPUs, 3.79 failures per 1,000 host-days, checkpoint every 90m,"
        " 3.3s a write, 10m a restart"
    )


def test_ettr_help_states_the_unit():
    out = subprocess.run(
        [sys.executable, "-m", "engine.cli", "ettr", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "with its unit: 90s, 30m, 2h, 1d (a bare number is refused)" in " ".join(out.split())


# ----- spelling durations back ----------------------------------------------------------------------------------


def test_format_picks_the_largest_exact_unit():
    assert [format_duration(s) for s in (1800, 7200, 86400, 90, 0.5)] == ["30m", "2h", "1d", "90s", "0.5s"]


@given(st.integers(min_value=1, max_value=10**7))
def test_format_then_parse_round_trips(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


def test_human_duration():
    assert human_duration(3.1 * 3600) == "3.1 h"
    assert human_duration(720) == "12 min"
    assert human_duration(45) == "45 s"
    assert human_duration(3 * 86400) == "3.0 d"
