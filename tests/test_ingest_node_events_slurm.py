"""`goodput ingest node-events --slurm`: node events asked of a real slurmdbd (tests/servers/slurm.py), nothing mocked.

The node is drained with a reason, downed with another while drained (one fault: the two events touch, so one
outage), resumed, then drained again and left so (an open outage). sacctmgr's answer, read back through the
command line, has each event's node, times (to the second), reason and user, and the outages they make.
"""

import json
import time
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from engine.cli import main
from engine.errors import GoodputError
from engine.ingest.node_events import ingest_node_events
from engine.ingest.slurm import SlurmSource
from engine.store import Store
from tests.servers.slurm import SlurmCluster

pytestmark = pytest.mark.xdist_group("slurm")


def _now() -> datetime:
    return datetime.now(UTC)


def _second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def test_drains_and_downs_read_back_exactly(slurm_cluster: SlurmCluster, tmp_path, capsys):
    c = slurm_cluster
    marks = []  # (before, after) each state change, to the second
    try:
        for change in (
            lambda: c.drain("xid 79 on gpu 3"),
            lambda: c.run(
                "scontrol", "update", f"nodename={c.node}", "state=down", "reason=PSU failed|again"
            ),
            c.resume,
            lambda: c.drain("burn-in after repair"),
        ):
            time.sleep(1.1)  # slurmdbd keeps whole seconds: each change in its own
            before = _second(_now())
            change()
            marks.append((before, _second(_now()) + timedelta(seconds=1)))
        time.sleep(1.1)
        store = tmp_path / "store"
        argv = ["ingest", "node-events", "--slurm-conf", c.conf, "--since", "1h", "--store", str(store)]
        assert main([*argv, "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
    finally:
        c.resume()
    run_id = printed["run_id"]
    events = Store(store).table(run_id, "node_events")
    info = Store(store).info(run_id)
    started = info.started_at.astimezone(UTC)
    at = [None if s is None else started + timedelta(seconds=s) for s in events["start_s"]]
    until = [None if s is None else started + timedelta(seconds=s) for s in events["end_s"]]
    assert events.select("state", "reason", "user", "cause", "incident_id", "source").rows() == [
        ("DRAIN", "xid 79 on gpu 3", "root", "faulty_gpu", 0, "sacctmgr show event"),
        ("DRAIN", "PSU failed|again", "root", "power_supply", 0, "sacctmgr show event"),
        ("DRAIN", "burn-in after repair", "root", "planned_maintenance", 1, "sacctmgr show event"),
    ]
    assert Store(store).table(run_id, "hosts")["hostname"].to_list() == [c.node]
    assert marks[0][0] <= at[0] <= marks[0][1]  # drained
    assert until[0] == at[1] and marks[1][0] <= at[1] <= marks[1][1]  # downed: a new reason, a new event
    assert marks[2][0] <= until[1] <= marks[2][1]  # resumed
    assert marks[3][0] <= at[2] <= marks[3][1] and until[2] is None  # drained again, still open
    incidents = Store(store).table(run_id, "incidents")
    assert incidents.select("incident_id", "cause", "planned", "xid").rows() == [
        (0, "faulty_gpu", False, 79),
        (1, "planned_maintenance", True, None),
    ]
    assert incidents["repaired_s"][0] == events["end_s"][1] and incidents["repaired_s"][1] is None
    states = Store(store).table(run_id, "host_states").sort("start_s")
    assert states["state"].to_list()[-3:] == ["down", "healthy", "down"]
    assert states["end_s"][-1] == pytest.approx(info.duration_s)
    assert printed["incidents"] == 2 and printed["open"] == 1 and printed["nodes_seen"] == 1
    assert printed["notes"][0].startswith("sacctmgr show event: reasons holding a '|'")
    assert info.duration_s == pytest.approx(3600.0, abs=1.0)  # the window asked, an hour to now


def test_a_window_with_no_event_needs_nodes(slurm_cluster: SlurmCluster):
    source = slurm_cluster.source()
    future = (_now() + timedelta(days=3650)).timestamp()  # no event in the hour before
    with pytest.raises(
        GoodputError, match="no node was down, drained or failed in the window; give --nodes N"
    ):
        ingest_node_events(slurm=source, since_s=3600, now=future - 86400 * 365 * 5)
    run = ingest_node_events(slurm=source, since_s=60, nodes=2, now=future - 86400 * 365 * 5)
    assert run.tables["incidents"].is_empty() and run.tables["hosts"].height == 2
    assert run.duration_s == 60.0
    assert (
        run.tables["host_states"].select("state", "start_s", "end_s").rows() == [("healthy", 0.0, 60.0)] * 2
    )


def test_an_unreachable_slurmdbd_names_the_command(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=nowhere\nSlurmctldHost=localhost\nAccountingStorageType=accounting_storage/slurmdbd\n"
        "AccountingStorageHost=127.0.0.1\nAccountingStoragePort=1\n"
    )
    source = SlurmSource(conf=str(conf), timeout_s=20)
    with pytest.raises(GoodputError) as err:
        ingest_node_events(slurm=source, since_s=3600)
    message = str(err.value)
    assert message.startswith(f"SLURM_CONF={conf} sacctmgr --parsable2 show event event=node start=")
    assert "\n" not in message
    assert pl.Series([message]).str.contains("exited with status|no answer within").item()
