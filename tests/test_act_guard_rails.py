"""Guard-rails that hold when operators act at once (issue 45, 1 and 2), and the command line's own doors (6, 9, 11).

Concurrency is tested as it happens: real `goodput act` processes started together, Slurm's state and the audit
log read afterwards. The breaker against the suite's real Slurm (tests/servers/slurm.py), its scontrol slowed so
that every action is in flight together, as the reviewer's was; the share-of-nodes cap against a Slurm of 40
nodes (tests/servers/fake_slurm.py: the real one has one node), whose scontrol answers after a second.
"""

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from engine.act.audit import AuditLog
from engine.cli import main
from tests.servers import fake_slurm
from tests.servers.slurm import SlurmCluster

GOODPUT = Path(sys.executable).parent / "goodput"


def settings(store: Path, **values) -> None:
    store.mkdir(parents=True, exist_ok=True)
    lines = ["[actions]", *(f"{k} = {json.dumps(v)}" for k, v in values.items())]
    (store / "settings.toml").write_text("\n".join(lines) + "\n")


def at_once(commands: list[list[str]], env: dict | None = None) -> list[subprocess.CompletedProcess]:
    """Start every command before waiting for any: real processes, acting together."""
    procs = [
        subprocess.Popen(
            [str(GOODPUT), *c], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for c in commands
    ]
    done = []
    for command, proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(command, proc.returncode, out, err))
    return done


def logged(store: Path) -> Counter:
    """How many of each event the audit log holds (it must verify)."""
    log = AuditLog(store)
    assert log.verify().ok, log.verify().problems
    return Counter(e.event for e in log.entries())


def test_six_drains_at_once_drain_what_the_share_cap_allows(tmp_path):
    """40 nodes at max_drain_share = 0.05: two may be out of service. Six drains started together drained six,
    as each judged the share from a Slurm reading taken before the others' drains; now they drain two, as six
    one after another would, and the other four are refused by the cap."""
    slurm = fake_slurm.make(tmp_path / "slurm", 40, delay_s=1.0)
    store = tmp_path / "store"
    settings(store, max_drain_share=0.05, max_drains_per_hour=10, max_drains_per_day=10, slurm_bin=str(slurm))
    runs = at_once(
        [["act", "drain", f"gpu{i:02d}", "--reason", "bad GPU", "--store", str(store)] for i in range(1, 7)]
    )
    assert sorted(r.returncode for r in runs) == [0, 0, 2, 2, 2, 2], [r.stderr for r in runs]
    assert len(fake_slurm.drained(slurm)) == 2 and len(fake_slurm.updates(slurm)) == 2
    events = logged(store)
    assert events["done"] == 2 and events["refused"] == 4 and events["approved"] == 2
    refusals = [r.stderr for r in runs if r.returncode == 2]
    assert all("cap: 3 of 40 nodes would be out of service" in err for err in refusals), refusals


def test_ten_actions_at_once_stop_at_the_breaker_like_ten_in_a_row(tmp_path):
    """breaker_errors = 3 and an scontrol that fails after 3 s: ten `goodput act resume` started together all
    reached Slurm; one after another, the breaker stops the fourth. Now three reach it and seven are refused."""
    slurm = fake_slurm.make(tmp_path / "slurm", 4, delay_s=3.0, fail=True)
    store = tmp_path / "store"
    settings(store, breaker_errors=3, slurm_bin=str(slurm))
    started = time.monotonic()
    runs = at_once(
        [["act", "resume", "gpu01", "--reason", f"try {i}", "--store", str(store)] for i in range(10)]
    )
    assert sorted(r.returncode for r in runs) == [1] * 3 + [2] * 7, [r.stderr for r in runs]
    assert len(fake_slurm.updates(slurm)) == 3
    events = logged(store)
    assert events["failed"] == 3 and events["refused"] == 7
    assert all("circuit breaker open: 3 Slurm errors in a row" in r.stderr for r in runs if r.returncode == 2)
    assert time.monotonic() - started < 120


@pytest.mark.xdist_group("slurm")
def test_actions_at_once_through_the_real_slurm_act_one_after_another(slurm_cluster: SlurmCluster, tmp_path):
    """The same against the suite's real Slurm, its scontrol slowed by 2 s so that the actions are in flight
    together: Slurm refuses each resume of a node that is not drained; three errors open the breaker; the node
    is as it was, and the log verifies."""
    slow = tmp_path / "bin"
    slow.mkdir()
    real = "/usr/bin/scontrol"
    (slow / "scontrol").write_text(f'#!/bin/sh\nif [ "$1" = update ]; then sleep 2; fi\nexec {real} "$@"\n')
    (slow / "scontrol").chmod(0o755)
    for name in ("sinfo", "squeue"):
        (slow / name).symlink_to(f"/usr/bin/{name}")
    store = tmp_path / "store"
    settings(store, breaker_errors=3, slurm_bin=str(slow), slurm_conf=slurm_cluster.conf)
    node = slurm_cluster.node
    runs = at_once([["act", "resume", node, "--reason", f"try {i}", "--store", str(store)] for i in range(5)])
    assert sorted(r.returncode for r in runs) == [1, 1, 1, 2, 2], [r.stderr for r in runs]
    events = logged(store)
    assert events["failed"] == 3 and events["refused"] == 2
    failed = [e for e in AuditLog(store).entries() if e.event == "failed"]
    assert all("Invalid node state specified" in e.detail["answer"]["text"] for e in failed)
    state = slurm_cluster.run("sinfo", "--noheader", "--Node", f"--nodes={node}", "--format=%T").strip()
    assert not state.startswith("drain"), state


def test_who_acts_is_the_operating_system_user_not_the_environment(tmp_path):
    """Issue 45, 6: LOGNAME='olga@example.com (operator on call)' was written as the actor (getpass reads the
    environment first). The real uid's user is recorded; a name the operator gives is kept beside it, marked."""
    import pwd
    import socket

    store = tmp_path / "store"
    env = dict(os.environ, LOGNAME="olga@example.com (operator on call)", USER="olga", LNAME="olga")
    me = f"{pwd.getpwuid(os.getuid()).pw_name}@{socket.gethostname()}"
    for extra in ([], ["--name", "  ana@example.com  on call "]):
        done = subprocess.run(
            [str(GOODPUT), "act", "reset-breaker", "--why", "test", "--store", str(store), *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
    who = [e.who for e in AuditLog(store).entries()]
    assert who == [me, f'{me} (gave the name "ana@example.com on call")']


def test_an_action_on_a_read_only_store_is_one_line(tmp_path, capsys, monkeypatch):
    """Issue 45, 9: `act drain` on a read-only store ended in a traceback."""
    slurm = fake_slurm.make(tmp_path / "slurm", 4, delay_s=0.0)
    store = tmp_path / "store"
    settings(store, slurm_bin=str(slurm))
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and str(path).startswith(str(store)):
            raise OSError(30, "Read-only file system")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    assert main(["act", "drain", "gpu01", "--reason", "x", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("goodput: error: ") and len(err.splitlines()) == 1 and "Read-only file system" in err
    )
    assert fake_slurm.updates(slurm) == []


def test_settings_nested_too_deep_or_no_regular_file_are_one_line(tmp_path, capsys):
    """Issue 45, 9 and 8: a settings.toml nested 30,000 deep under its size limit was a traceback; a FIFO there
    hung every action."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "settings.toml").write_text("[actions]\nslurm_bin = " + "[" * 30_000 + "]" * 30_000 + "\n")
    assert main(["act", "reset-breaker", "--why", "x", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"goodput: error: {store / 'settings.toml'}: not valid TOML: nested too deep"
    (store / "settings.toml").unlink()
    os.mkfifo(store / "settings.toml")
    done = subprocess.run(
        [str(GOODPUT), "act", "reset-breaker", "--why", "x", "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "FIFO (named pipe), not a regular file" in done.stderr, done.stderr


def test_the_log_is_written_out_only_where_an_export_may_write(tmp_path, capsys):
    """Issue 45, 11: `act log --output` overwrote without --force, wrote through a planted link and replaced
    devices; it now takes the checked writer `export` and `calibrate` use."""
    store = tmp_path / "store"
    assert main(["act", "reset-breaker", "--why", "x", "--store", str(store)]) == 0
    existing = tmp_path / "log.json"
    existing.write_text("keep me")
    target = tmp_path / "elsewhere"
    target.write_text("not yours")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    capsys.readouterr()
    for output in (existing, link, Path("/dev/null")):
        assert main(["act", "log", "--output", str(output), "--store", str(store)]) == 2
        assert capsys.readouterr().err.startswith("goodput: error: --output")
    assert existing.read_text() == "keep me" and target.read_text() == "not yours"
    assert main(["act", "log", "--output", str(existing), "--force", "--store", str(store)]) == 0
    assert json.loads(existing.read_text())[0]["event"] == "breaker_reset"
