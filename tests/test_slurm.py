"""Jobs, attempts and node states read from a real single-node Slurm (tests/servers/slurm.py), nothing mocked.

The jobs run for real: one that sleeps, one with 2 GPUs of gres, one that exits 3, one cancelled, one requeued
while running (two attempts), one still running while read. Then the node is drained with a reason.
"""

import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from engine.ingest.slurm import (
    SACCT_FIELDS,
    SlurmError,
    SlurmSource,
    parse_sacct,
    parse_sinfo,
    probe,
    read_jobs,
    read_nodes,
    sacct_args,
)
from tests.servers.slurm import SlurmCluster

pytestmark = pytest.mark.xdist_group("slurm")


@dataclass
class Ran:
    before: datetime  # a second before the first submit (sacct's times are whole seconds)
    after: datetime  # when every finished job had finished
    ids: dict[str, str]  # what each job was for -> its id


def _requeue(cluster: SlurmCluster, job_id: str) -> None:
    cluster.run("scontrol", "requeue", job_id)
    # a requeued job waits Slurm's credential lifetime (about 2 minutes) before it may start again: once it is
    # pending again (its first run completed), let it start now
    cluster.wait(job_id, states=("PENDING",), timeout_s=30)
    cluster.run("scontrol", "update", f"jobid={job_id}", "starttime=now")


@pytest.fixture(scope="module")
def ran(slurm_cluster: SlurmCluster) -> Ran:
    c = slurm_cluster
    before = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    ids = {
        "sleep": c.submit("--job-name=sleep1", "--wrap", "sleep 1"),
        "gpus": c.submit("--job-name=gpu2", "--gres=gpu:2", "--wrap", "sleep 1"),
        "fails": c.submit("--job-name=exit3", "--wrap", "exit 3"),
        "cancelled": c.submit("--job-name=cancelme", "--wrap", "sleep 300"),
        "requeued": c.submit("--job-name=requeue", "--requeue", "--gres=gpu:1", "--wrap", "sleep 2"),
    }
    c.wait(ids["cancelled"], states=("RUNNING",))
    c.run("scancel", ids["cancelled"])
    c.wait(ids["requeued"], states=("RUNNING",))
    _requeue(c, ids["requeued"])
    for key in ("sleep", "gpus", "fails", "cancelled", "requeued"):
        c.wait(ids[key])
    after = datetime.now(UTC)
    # slurmctld sends a job's end to slurmdbd a moment after it ends: wait until accounting has every one
    deadline = time.monotonic() + 30
    while True:
        done = read_jobs(c.source(), since=before).jobs.filter(pl.col("job_id").is_in(list(ids.values())))
        if done.height == len(ids) and done["end"].null_count() == 0:
            break
        assert time.monotonic() < deadline, done
        time.sleep(0.2)
    ids["running"] = c.submit("--job-name=longrun", "--gres=gpu:4", "--wrap", "sleep 120")
    c.wait(ids["running"], states=("RUNNING",))
    while True:  # its start reaches accounting a moment later, too
        attempts = read_jobs(c.source(), since=before).attempts
        if ids["running"] in attempts["job_id"]:
            break
        assert time.monotonic() < deadline + 30, attempts
        time.sleep(0.2)
    return Ran(before, after, ids)


def _by_id(frame: pl.DataFrame, ids: dict[str, str]) -> dict[str, dict]:
    rows = {row["job_id"]: row for row in frame.iter_rows(named=True)}
    return {key: rows[job_id] for key, job_id in ids.items() if job_id in rows}


def test_probe_names_the_version_and_cluster(slurm_cluster: SlurmCluster) -> None:
    status = probe(slurm_cluster.source())
    assert (status.reachable, status.version, status.cluster, status.error) == (
        True,
        "22.05.8",
        "goodputtest",
        None,
    )


def test_jobs_have_their_state_exit_code_gpus_and_nodes(slurm_cluster: SlurmCluster, ran: Ran) -> None:
    got = read_jobs(slurm_cluster.source(), since=ran.before)
    jobs = _by_id(got.jobs, ran.ids)
    assert set(jobs) == set(ran.ids)
    assert got.skipped == 0
    node = [slurm_cluster.node]
    expected = {
        "sleep": ("sleep1", "COMPLETED", 0, 0.0, node),
        "gpus": ("gpu2", "COMPLETED", 0, 2.0, node),
        "fails": ("exit3", "FAILED", 3, 0.0, node),
        "cancelled": ("cancelme", "CANCELLED", 0, 0.0, node),
        "requeued": ("requeue", "COMPLETED", 0, 1.0, node),
        "running": ("longrun", "RUNNING", 0, 4.0, node),
    }
    for key, (name, state, code, gpus, nodes) in expected.items():
        row = jobs[key]
        assert (row["name"], row["state"], row["exit_code"], row["gpus"], row["nodes"]) == (
            name,
            state,
            code,
            gpus,
            nodes,
        ), key
        assert (row["user"], row["partition"]) == ("root", "debug")
        assert ran.before <= row["submit"] <= row["start"], key
        if key == "running":
            assert row["end"] is None
        else:
            assert row["start"] <= row["end"] <= ran.after, key
    assert got.jobs.schema["submit"] == pl.Datetime("us", "UTC")


def test_a_requeued_job_has_one_attempt_per_run(slurm_cluster: SlurmCluster, ran: Ran) -> None:
    got = read_jobs(slurm_cluster.source(), since=ran.before)
    attempts = got.attempts.filter(pl.col("job_id").is_in(list(ran.ids.values()))).sort("job_id", "attempt")
    per_job = attempts.group_by("job_id").agg(pl.col("state"), pl.col("attempt"))
    states = {row["job_id"]: (row["attempt"], row["state"]) for row in per_job.iter_rows(named=True)}
    ids = ran.ids
    assert states == {
        ids["sleep"]: ([0], ["COMPLETED"]),
        ids["gpus"]: ([0], ["COMPLETED"]),
        ids["fails"]: ([0], ["FAILED"]),
        ids["cancelled"]: ([0], ["CANCELLED"]),
        ids["requeued"]: ([0, 1], ["REQUEUED", "COMPLETED"]),
        ids["running"]: ([0], ["RUNNING"]),
    }
    first, second = attempts.filter(pl.col("job_id") == ids["requeued"]).iter_rows(named=True)
    assert first["end"] <= second["start"] <= second["end"]
    assert first["nodes"] == second["nodes"] == [slurm_cluster.node]
    job = _by_id(got.jobs, {"requeued": ids["requeued"]})["requeued"]
    assert (job["start"], job["end"]) == (first["start"], second["end"])


def test_since_keeps_only_jobs_active_after_it(slurm_cluster: SlurmCluster, ran: Ran) -> None:
    since = ran.after.replace(microsecond=0) + timedelta(seconds=1)  # sacct's times are whole seconds
    time.sleep(max(0.0, (since - datetime.now(UTC)).total_seconds()))
    got = read_jobs(slurm_cluster.source(), since=since)
    assert set(got.jobs["job_id"]) & set(ran.ids.values()) == {ran.ids["running"]}
    # a clock ahead of Slurm's: sacct would refuse a start after now, so it is read from now
    ahead = read_jobs(slurm_cluster.source(), since=datetime.now(UTC) + timedelta(hours=1))
    assert set(ahead.jobs["job_id"]) & set(ran.ids.values()) <= {ran.ids["running"]}


def test_a_drained_node_is_down_with_its_reason(slurm_cluster: SlurmCluster, ran: Ran) -> None:
    c = slurm_cluster
    source = c.source()
    assert read_nodes(source).select(
        "node", "state", "slurm_state", "flags", "reason", "gpus"
    ).to_dicts() == [
        {"node": c.node, "state": "running", "slurm_state": "mixed", "flags": [], "reason": None, "gpus": 8}
    ]
    drained_at = datetime.now(UTC).replace(microsecond=0)
    c.drain("xid 79 on gpu 3")
    try:
        # still running a job: draining; once it ends, drained ("down", out of service)
        row = read_nodes(source).row(0, named=True)
        assert (row["state"], row["slurm_state"], row["flags"], row["reason"]) == (
            "draining",
            "mixed",
            ["DRAIN"],
            "xid 79 on gpu 3",
        )
        assert drained_at <= row["reason_time"] <= datetime.now(UTC)
        c.run("scancel", ran.ids["running"])
        c.wait(ran.ids["running"])
        deadline = time.monotonic() + 30
        while (row := read_nodes(source).row(0, named=True))["slurm_state"] != "idle":
            assert time.monotonic() < deadline, row
            time.sleep(0.2)
        assert (row["state"], row["flags"], row["reason"], row["partitions"]) == (
            "down",
            ["DRAIN"],
            "xid 79 on gpu 3",
            ["debug"],
        )
    finally:
        c.resume()
    row = read_nodes(source).row(0, named=True)
    # a busy machine may have missed a ping (NOT_RESPONDING, still in service): only DRAIN must be gone
    assert (row["state"], "DRAIN" in row["flags"], row["reason"], row["reason_time"]) == (
        "healthy",
        False,
        None,
        None,
    )


def test_nodelists_expand_and_gpus_come_from_alloc_tres(slurm_cluster: SlurmCluster, ran: Ran) -> None:
    """sacct's real output for the 2-GPU job, its NodeList and TRES changed to a larger cluster's."""
    out = slurm_cluster.run("sacct", *sacct_args(ran.before), "--jobs", ran.ids["gpus"])
    header, record = out.strip("\n").split("\n")
    fields = dict(zip(SACCT_FIELDS, record.split("\x1f"), strict=True))
    fields["NodeList"] = "gpu[001-003,007],login1"
    fields["AllocTRES"] = "billing=32,cpu=32,gres/gpu=32,node=5"
    text = header + "\n" + "\x1f".join(fields[f] for f in SACCT_FIELDS) + "\n"
    job = parse_sacct(text.encode()).jobs.row(0, named=True)
    assert job["nodes"] == ["gpu001", "gpu002", "gpu003", "gpu007", "login1"]
    assert job["gpus"] == 32.0
    fields["NodeList"] = "gpu[003-001]"
    bad = header + "\n" + "\x1f".join(fields[f] for f in SACCT_FIELDS) + "\n"
    with pytest.raises(SlurmError, match=r"NodeList 'gpu\[003-001\]' is not Slurm hostlist syntax"):
        parse_sacct(bad.encode(), "sacct")


def test_a_wrong_slurm_conf_names_the_command_and_slurms_message(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "slurm.conf"
    with pytest.raises(
        SlurmError,
        match=rf"^SLURM_CONF={missing} sinfo --json: {missing} is not a readable regular file \(it does not exist\)$",
    ):
        read_nodes(SlurmSource(conf=str(missing)))
    empty = tmp_path / "slurm.conf"
    empty.write_text("")
    with pytest.raises(SlurmError) as err:
        read_nodes(SlurmSource(conf=str(empty)))
    assert str(err.value).startswith(
        f"SLURM_CONF={empty} sinfo --json: {empty} does not read like a slurm.conf"
    )
    status = probe(SlurmSource(conf=str(empty)))
    assert not status.reachable and "does not read like a slurm.conf" in status.error
    # one that reads like one but names no reachable controller: Slurm's own message
    nowhere = tmp_path / "nowhere.conf"
    nowhere.write_text("ClusterName=nowhere\nSlurmctldHost=localhost\nSlurmctldPort=1\n")
    status = probe(SlurmSource(conf=str(nowhere), timeout_s=20))
    assert not status.reachable and status.error.startswith(f"SLURM_CONF={nowhere} scontrol show config: ")


def test_a_file_that_is_no_slurm_conf_is_never_handed_to_slurm_nor_quoted(tmp_path: Path) -> None:
    """Issue 45, 10: `[actions] slurm_conf = "/etc/shadow"` made Slurm quote one of its lines, which the page
    would show an operator. A link, a FIFO, an unreadable file or one that is no slurm.conf is refused before
    any command reads it, and a configuration line Slurm quotes is never shown."""
    secret = tmp_path / "secret"
    secret.write_text("root:$y$j9T$very-secret-hash:20228:0:99999:7:::\n")
    link = tmp_path / "slurm.conf"
    link.symlink_to(secret)
    fifo = tmp_path / "fifo.conf"
    os.mkfifo(fifo)
    for conf, why in ((secret, "does not read like a slurm.conf"), (link, "symbolic link"), (fifo, "FIFO")):
        with pytest.raises(SlurmError) as err:
            read_nodes(SlurmSource(conf=str(conf)))
        assert why in str(err.value) and "very-secret" not in str(err.value), str(err.value)
    # a file that names a cluster but holds a line Slurm cannot parse: Slurm quotes it, Goodput does not
    odd = tmp_path / "odd.conf"
    odd.write_text("ClusterName=x\nroot:$y$j9T$very-secret-hash:20228\n")
    with pytest.raises(SlurmError) as err:
        read_nodes(SlurmSource(conf=str(odd)))
    assert "line 2 (its text not shown)" in str(err.value) and "very-secret" not in str(err.value)


def test_a_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match=rf"^sacct: not found in {tmp_path} \(install Debian's slurm-client"):
        read_jobs(SlurmSource(bin_dir=str(tmp_path)), since=None)


def test_output_not_as_expected_is_a_clear_error() -> None:
    with pytest.raises(SlurmError, match=r"^sacct: expected the header JobID\|JobName"):
        parse_sacct(b"JobID|JobName\n1|x\n")
    with pytest.raises(SlurmError, match=r"^sinfo --json: did not print JSON"):
        parse_sinfo(b"{")
    with pytest.raises(SlurmError, match=r"^sinfo --json: no list of nodes"):
        parse_sinfo(b'{"meta": {}, "errors": []}')
    with pytest.raises(SlurmError, match=r"^sinfo --json: node 1 is not as Slurm 22.05 prints it"):
        parse_sinfo(b'{"errors": [], "nodes": [{"state": "idle"}]}')


def test_a_stopped_controller_is_a_clear_error(slurm_cluster: SlurmCluster, ran: Ran) -> None:
    source = SlurmSource(conf=slurm_cluster.conf, timeout_s=60)
    slurm_cluster.stop_controller()
    try:
        with pytest.raises(SlurmError) as err:
            read_nodes(source)
        conf = slurm_cluster.conf
        assert str(err.value) == (
            f"SLURM_CONF={conf} sinfo --json: Slurm reported errors: Unspecified error;"
            f" SLURM_CONF={conf} scontrol show config: exited with status 1:"
            " slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)"
        )
        status = probe(source)
        assert not status.reachable and "Unable to contact slurm controller" in status.error
    finally:
        slurm_cluster.start_controller()
    assert probe(source).reachable
