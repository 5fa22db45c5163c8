"""The command line's contract: --help everywhere, one-line errors with exit status 2, JSON outputs."""

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from engine.cli import main
from engine.store import Store
from tests.file_modes import as_plain_user
from tests.test_store import small_run

COMMANDS = [
    "simulate",
    "replay",
    "ingest",
    "runs",
    "export",
    "sweep",
    "scale",
    "ettr",
    "dashboard",
    "definitions",
]


def test_every_command_has_help():
    for command in COMMANDS:
        out = subprocess.run(
            [sys.executable, "-m", "engine.cli", command, "--help"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert f"goodput {command}" in out and "--" in out


def test_the_top_level_help_lists_every_command(capsys):
    # a command's one-line help goes through argparse's %-formatting there: "90 % intervals" once broke it
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for command in [*COMMANDS, "watch", "calibrate"]:
        assert f"    {command}" in out


def test_console_script_is_installed():
    out = subprocess.run(
        [str(__import__("pathlib").Path(sys.executable).parent / "goodput"), "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith("goodput ")


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_scale_prints_every_strategy_and_size_from_the_command_line(capsys):
    argv = ["scale", "--preset", "demo", "--sizes", "1024,2048", "--seeds", "2", "--workers", "1", "--json"]
    assert main([*argv, "--strategies", "restart,replica_drop"]) == 0
    out = json.loads(capsys.readouterr().out)
    points = {(b["strategy"], b["job_gpus"]) for b in out["bands"]}
    assert {s for s, _ in points} == {"restart", "replica_drop"} and len(points) == 4
    assert main([*argv, "--strategies", "restart,teleport"]) == 2
    assert "teleport" in capsys.readouterr().err


def test_ettr_json_matches_the_closed_form(capsys):
    code, out, _ = run_cli(
        capsys,
        "ettr",
        "--gpus",
        "16384",
        "--node-failure-rate",
        "3.79",
        "--checkpoint-interval",
        "5m",
        "--checkpoint-write",
        "3.3s",
        "--restart-overhead",
        "10m",
        "--json",
    )
    assert code == 0
    result = json.loads(out)
    assert set(result) == {"ettr", "mttf_hours", "optimal_checkpoint_interval_s"}
    # N r = 2048 x 3.79e-3 / day; MTTF = 1 / (N r) = 3.09 h (reference README §2: one every 3.1 hours)
    assert result["mttf_hours"] == pytest.approx(24 / (2048 * 3.79e-3), rel=1e-9)
    rate = 2048 * 3.79e-3 / 86400
    assert result["ettr"] == pytest.approx((1 - rate * (600 + 150)) / (1 + 3.3 / 300), rel=1e-9)
    assert result["optimal_checkpoint_interval_s"] == pytest.approx(
        (2 * 3.3 * 3600 * result["mttf_hours"]) ** 0.5
    )


def test_ettr_reproduces_dalys_worked_example(capsys):
    # Daly (2006): checkpoint 5 min, MTBF 24 h -> Young's interval sqrt(2 * 5 min * 24 h) = 120 min
    # (Daly's refined 117 min is the higher-order correction). One host failing at 1/day gives MTBF 24 h.
    code, out, _ = run_cli(
        capsys,
        "ettr",
        "--gpus",
        "8",
        "--node-failure-rate",
        "1000",
        "--checkpoint-interval",
        "2h",
        "--checkpoint-write",
        "5m",
        "--restart-overhead",
        "10m",
        "--json",
    )
    assert code == 0
    assert json.loads(out)["optimal_checkpoint_interval_s"] / 60 == pytest.approx(120.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            [
                "ettr",
                "--gpus",
                "8",
                "--node-failure-rate",
                "1",
                "--checkpoint-interval",
                "soon",
                "--checkpoint-write",
                "1s",
                "--restart-overhead",
                "1m",
            ],
            "--checkpoint-interval",
        ),
        (
            [
                "ettr",
                "--gpus",
                "0",
                "--node-failure-rate",
                "1",
                "--checkpoint-interval",
                "1h",
                "--checkpoint-write",
                "1s",
                "--restart-overhead",
                "1m",
            ],
            "--gpus",
        ),
        (
            [
                "ettr",
                "--gpus",
                "8",
                "--node-failure-rate",
                "-1",
                "--checkpoint-interval",
                "1h",
                "--checkpoint-write",
                "1s",
                "--restart-overhead",
                "1m",
            ],
            "--node-failure-rate",
        ),
        (["runs", "--delete", "sim-nope"], "no run 'sim-nope'"),
        (["simulate", "--preset", "nope"], "unknown preset 'nope'"),
        (
            ["simulate", "--preset", "demo", "--set", "training.checkpoint_intervall=5m"],
            "did you mean 'training.checkpoint_interval'",
        ),
        (["simulate", "--scenario", "/no/such/file.toml"], "/no/such/file.toml"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, store_dir, argv, message):
    store_dir.mkdir(parents=True, exist_ok=True)  # an empty store: `runs` refuses a folder that is not there
    code, out, err = run_cli(capsys, *argv, *(["--store", str(store_dir)] if argv[0] in ("runs",) else []))
    assert code == 2
    assert err.startswith("goodput: error: ") and err.count("\n") == 1 and message in err
    assert not (store_dir / "runs").exists() or not list((store_dir / "runs").glob("*.duckdb"))


def test_usage_errors_exit_2():
    result = subprocess.run(
        [sys.executable, "-m", "engine.cli", "ettr", "--gpus", "many"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "invalid int value" in result.stderr


def test_runs_lists_and_deletes(capsys, store_dir):
    store = Store(store_dir)
    first = store.write_run(small_run("first"))
    second = store.write_run(small_run("second"))
    code, out, _ = run_cli(capsys, "runs", "--store", str(store_dir), "--json")
    listed = json.loads(out)
    assert code == 0 and {r["run_id"] for r in listed} == {first, second}
    assert all({"run_id", "kind", "name", "created_at"} <= set(r) for r in listed)
    code, out, _ = run_cli(capsys, "runs", "--store", str(store_dir))
    assert code == 0 and first in out and "second" in out
    code, out, _ = run_cli(capsys, "runs", "--store", str(store_dir), "--delete", first)
    assert code == 0 and f"deleted {first}" in out
    assert [i.run_id for i in store.list_runs()] == [second]


def test_runs_on_an_empty_store_says_how_to_start(capsys, store_dir):
    store_dir.mkdir(parents=True)
    code, out, _ = run_cli(capsys, "runs", "--store", str(store_dir))
    assert code == 0 and "goodput simulate --preset demo" in out


def test_simulate_counts_the_clusters_incidents_beside_the_flagships_interruptions(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "simulate", "--preset", "demo", "--store", str(tmp_path / "s"), "--json")
    result = json.loads(out)
    incidents = Store(tmp_path / "s").table(result["run_id"], "incidents")
    assert code == 0 and result["incidents"]["total"] == incidents.height
    assert result["incidents"]["planned"] + result["incidents"]["unexpected"] == incidents.height
    assert result["incidents"]["total"] >= result["interruptions"]["total"]


def test_promises_of_the_command_line(capsys, tmp_path):
    """A typo'd store is an error, not an empty list; a bad --seed is named as --seed; export names what it
    needs; a port in use is one error line before any URL is printed (issue 28, 5)."""
    code, _, err = run_cli(capsys, "runs", "--store", str(tmp_path / "typo"))
    assert code == 2 and err.startswith("goodput: error: --store:") and "typo does not exist" in err
    code, _, err = run_cli(
        capsys, "simulate", "--preset", "demo", "--seed", "-3", "--store", str(tmp_path / "s")
    )
    assert code == 2 and err.startswith("goodput: error: --seed:")
    result = subprocess.run([sys.executable, "-m", "engine.cli", "export"], capture_output=True, text=True)
    assert result.returncode == 2 and "required: incidents" in result.stderr
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out, err = run_cli(capsys, "dashboard", "--port", str(port), "--store", str(tmp_path / "s"))
    assert (
        code == 2 and out == "" and err.startswith(f"goodput: error: --port {port}:") and err.count("\n") == 1
    )


# ----- paths checked before any work ---------------------------------------------------------------------


@pytest.fixture
def no_work(monkeypatch):
    """Every command's work refuses to start: a check that passes here ran before any of it."""
    import engine.ingest
    import engine.ingest.live
    import engine.replay.run
    import engine.scenario
    import engine.twin.simulate

    def started(*_, **__):
        raise AssertionError("work started before the store was checked")

    for module, name in [
        (engine.scenario, "build"),
        (engine.twin.simulate, "simulate"),
        (engine.replay.run, "replay_file"),
        (engine.ingest, "ingest_dcgm"),
        (engine.ingest, "ingest_kernel_logs"),
        (engine.ingest.live, "scrape_loop"),
    ]:
        monkeypatch.setattr(module, name, started)


WRITING_COMMANDS = [
    ["simulate", "--preset", "demo"],
    ["replay", "tests/fixtures/replay/small.csv"],
    ["ingest", "dcgm", "scrape.prom"],
    ["ingest", "kernel-log", "kern.log"],
    ["ingest", "dcgm", "--scrape", "http://127.0.0.1:9/metrics", "--scrapes", "1"],
]


@pytest.mark.parametrize("argv", WRITING_COMMANDS, ids=lambda argv: " ".join(argv[:2]))
@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("file", "--store: {tmp}/file is not a folder"),
        ("file/store", "--store: {tmp}/file/store cannot be a folder (a file is on its path)"),
        ("/proc", "--store: /proc cannot be written ("),
        (
            "/proc/goodput/store",
            "--store: /proc (where /proc/goodput/store would be made) cannot be written (",
        ),
        ("", "--store: empty"),
    ],
)
def test_a_store_that_cannot_be_written_is_refused_before_any_work(
    capsys, tmp_path, no_work, argv, store, message
):
    (tmp_path / "file").write_text("I am a file\n")
    where = store if store.startswith("/") or not store else str(tmp_path / store)
    code, out, err = run_cli(capsys, *argv, "--store", where)
    assert code == 2 and out == ""
    assert err.startswith("goodput: error: " + message.format(tmp=tmp_path)) and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_read_only_store_is_refused_before_any_work(tmp_path):
    store = tmp_path / "store"
    (store / "runs").mkdir(parents=True)
    (store / "runs").chmod(0o555)
    done = subprocess.run(
        as_plain_user(
            [sys.executable, "-m", "engine.cli", "simulate", "--preset", "demo", "--store", str(store)]
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"goodput: error: --store: {store / 'runs'} cannot be written (Permission denied)\n"
    assert list((store / "runs").iterdir()) == []


def test_a_store_not_made_yet_passes_the_check_and_the_check_leaves_nothing(tmp_path):
    from engine.store.outputs import check_store

    check_store(tmp_path / "new" / "store")
    (tmp_path / "old" / "runs").mkdir(parents=True)
    check_store(tmp_path / "old")
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["old", "old/runs"]


def test_runs_skips_odd_files_with_one_warning_each(capsys, store_dir):
    from tests.test_store import ODD_FILES, make_odd_files

    store = Store(store_dir)
    good = store.write_run(small_run("good"))
    make_odd_files(store.runs_dir, store.path_of(good))
    code, out, err = run_cli(capsys, "runs", "--store", str(store_dir), "--json")
    assert code == 0 and [r["run_id"] for r in json.loads(out)] == [good]
    lines = err.splitlines()
    assert len(lines) == len(ODD_FILES) and all(
        line.startswith("goodput: warning: skipped runs/") for line in lines
    )
    assert sorted(line.split(":")[2].strip().removeprefix("skipped runs/") for line in lines) == sorted(
        ODD_FILES
    )
    code, out, err = run_cli(capsys, "runs", "--store", str(store_dir))
    assert code == 0 and good in out and "my run" not in out and err.count("\n") == len(ODD_FILES)


# ----- --json: the object on stdout, nothing on stderr -----------------------------------------------------


def on_a_terminal(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    """The command with its stderr on a pseudo-terminal, as in a person's shell, where a progress bar shows
    (engine.cli draws one only on a terminal); stdout to a file. Returns the exit status, stdout, stderr."""
    controller, terminal = pty.openpty()
    with (
        (tmp_path / "stdout").open("wb") as out,
        subprocess.Popen([sys.executable, "-m", "engine.cli", *argv], stdout=out, stderr=terminal) as process,
    ):
        os.close(terminal)
        err = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the command has closed its end
                break
            if not chunk:
                break
            err += chunk
    os.close(controller)
    return process.returncode, (tmp_path / "stdout").read_text(), err.decode()


def test_the_terminal_here_shows_the_progress_bar_without_json(tmp_path):
    """The check below would see a bar: without --json the same command draws one on this terminal."""
    code, out, err = on_a_terminal(
        tmp_path,
        "simulate",
        "--preset",
        "demo",
        "--set",
        "simulation.days=1",
        "--store",
        str(tmp_path / "store"),
    )
    assert code == 0 and out.startswith("run sim-") and "100%" in err
    # then the rows as they are written, on one line ended once the run is in the store
    counts = [int(n.replace(",", "")) for n in re.findall(r"writing the run: ([0-9,]+) rows", err)]
    assert counts and counts == sorted(counts) and err.endswith("\n")
    with duckdb.connect(str(next((tmp_path / "store" / "runs").glob("*.duckdb"))), read_only=True) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        stored = sum(
            con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]  # noqa: S608 (names from the file)
            for t in tables
            if t not in ("meta", "runs")
        )
    assert counts[-1] == stored  # every row of the run's tables


SWEEP = [
    "sweep",
    "--preset",
    "demo",
    "--set",
    "simulation.days=1",
    "--vary",
    "training.checkpoint_interval=5m,30m",
    "--seeds",
    "1",
]


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--preset", "demo", "--set", "simulation.days=1"],
        [*SWEEP, "--workers", "1"],
        [*SWEEP, "--workers", "2"],
        ["replay", "tests/fixtures/replay/sacct.txt"],
        ["ingest", "dcgm", "{scrape}"],
        ["ingest", "kernel-log", "{log}", "--dcgm", "{scrape}"],
    ],
    ids=["simulate", "sweep in-process", "sweep processes", "replay", "ingest dcgm", "ingest kernel-log"],
)
def test_json_prints_only_the_object(tmp_path, argv):
    from tests.fixtures.ingest.samples import kernel_log, scrape_text, xid_body

    (tmp_path / "scrape.prom").write_text(scrape_text(2, 8, 3))
    (tmp_path / "node000.log").write_text(kernel_log("journal", [(10.0, xid_body(1, 79))]))
    files = {"scrape": str(tmp_path / "scrape.prom"), "log": str(tmp_path / "node000.log")}
    store = [] if argv[0] == "sweep" else ["--store", str(tmp_path / "store")]
    code, out, err = on_a_terminal(tmp_path, *[a.format(**files) for a in argv], *store, "--json")
    assert (code, err) == (0, "")
    assert isinstance(json.loads(out), dict) and out.count("\n") == 1  # one object, one line


def test_sweep_on_ray_with_json_keeps_rays_start_up_lines_off_stderr(tmp_path):
    pytest.importorskip("ray")  # the optional extra goodput[ray]
    code, out, err = on_a_terminal(
        tmp_path,
        "sweep",
        "--preset",
        "demo",
        "--set",
        "simulation.days=1",
        "--vary",
        "training.checkpoint_interval=5m",
        "--seeds",
        "1",
        "--executor",
        "ray",
        "--workers",
        "1",
        "--json",
    )
    assert (code, err) == (0, "") and len(json.loads(out)["results"]) == 1
