"""Acting through a real Slurm (tests/servers/slurm.py: slurmctld, slurmd, slurmdbd on 127.0.0.1), nothing mocked:
a drain, a resume and a requeue end to end; the dry run; the caps; the circuit breaker; two operators approving
at once; a replayed approval; the second confirmation for the largest job; Slurm's refusal kept.

Every test leaves the one node resumed and its own jobs cancelled: the cluster is shared by the session.
"""

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.act.audit import AuditEvent, AuditLog
from engine.act.command import who_acts
from engine.act.records import Action, ActionState, Recommendation, Rule, recommendation_id
from engine.act.service import Actions, NeedsConfirmation
from engine.act.settings import ActionSettings
from engine.cli import main
from tests.servers.slurm import SlurmCluster

pytestmark = pytest.mark.xdist_group("slurm")

OPERATOR = "ana@example.com"


def node_state(cluster: SlurmCluster) -> tuple[str, str]:
    """The node's long state (without sinfo's marks such as `*`, not responding for a moment) and its reason."""
    out = cluster.run("sinfo", "--noheader", "--Node", f"--nodes={cluster.node}", "--format=%T|%E")
    state, _, reason = out.strip().splitlines()[0].partition("|")
    return state.rstrip("*~#!%$@^-"), reason


@pytest.fixture
def cluster(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    yield slurm_cluster
    slurm_cluster.run("scancel", "--full", "--user=root")
    deadline = time.monotonic() + 60
    while slurm_cluster.run("squeue", "--noheader").strip():
        assert time.monotonic() < deadline, slurm_cluster.run("squeue", "--all")
        time.sleep(0.3)
    if drained(slurm_cluster):
        slurm_cluster.resume()


def drained(cluster: SlurmCluster) -> bool:
    """Whether the node is drained or draining (what an action here changes; allocated or idle alike)."""
    return node_state(cluster)[0].startswith("drain")


def actions(store: Path, cluster: SlurmCluster, **settings) -> Actions:
    return Actions(store, ActionSettings(slurm_conf=cluster.conf, **settings))


def recommended_drain(acts: Actions, node: str, since: str = "incident 1") -> str:
    """A drain logged as the rules log one (the rules themselves: tests/test_act_recommend.py)."""
    rec = Recommendation(
        id=recommendation_id(Action.DRAIN, (node,), None, Rule.FATAL_XID, since),
        action=Action.DRAIN,
        nodes=(node,),
        reason="fatal XID 79 on GPU 3",
        rule=Rule.FATAL_XID,
        run_id="obs-test",
        cost_if_acting_gpu_hours=12.0,
        cost_if_not_gpu_hours=80.0,
    )
    with acts.log.writing() as log:
        log.append("goodput", AuditEvent.RECOMMENDED, rec.id, rec.as_json())
    return rec.id


def events(store: Path, action_id: str) -> list[str]:
    return [e.event for e in AuditLog(store).entries(action_id=action_id)]


def test_dry_run_shows_the_exact_command_and_sends_nothing(cluster: SlurmCluster, tmp_path: Path) -> None:
    acts = actions(tmp_path, cluster)
    action_id = recommended_drain(acts, cluster.node)
    outcome = acts.approve(action_id, OPERATOR, dry_run=True)
    assert outcome.dry_run and not outcome.refused
    assert outcome.command.argv == (
        "scontrol",
        "update",
        f"NodeName={cluster.node}",
        "State=DRAIN",
        "Reason=goodput: fatal XID 79 on GPU 3",
    )
    assert outcome.message == f"dry run: would run {outcome.command.shown()}"
    assert not drained(cluster)
    assert events(tmp_path, action_id) == ["recommended", "dry_run"]
    assert acts.recommendation(action_id).state is ActionState.RECOMMENDED


def test_a_drain_and_a_resume_end_to_end(cluster: SlurmCluster, tmp_path: Path) -> None:
    acts = actions(tmp_path, cluster)
    action_id = recommended_drain(acts, cluster.node)
    outcome = acts.approve(action_id, OPERATOR)
    assert (outcome.state, outcome.answer.ok) == (ActionState.DONE, True)
    assert drained(cluster) and node_state(cluster)[1] == "goodput: fatal XID 79 on GPU 3"
    assert events(tmp_path, action_id) == ["recommended", "approved", "done"]
    approved = AuditLog(tmp_path).entries(action_id=action_id)[1]
    assert (approved.who, approved.detail["nodes"]) == (OPERATOR, [cluster.node])

    back = acts.by_hand(Action.RESUME, OPERATOR, nodes=(cluster.node,), reason="GPU 3 replaced, checks clean")
    assert back.state is ActionState.DONE
    assert back.command.argv == ("scontrol", "update", f"NodeName={cluster.node}", "State=RESUME")
    assert not drained(cluster)
    assert AuditLog(tmp_path).verify().ok


def test_a_replayed_approval_acts_once(cluster: SlurmCluster, tmp_path: Path) -> None:
    acts = actions(tmp_path, cluster)
    action_id = recommended_drain(acts, cluster.node)
    assert acts.approve(action_id, OPERATOR).state is ActionState.DONE
    cluster.resume()
    again = acts.approve(action_id, "mallory@example.com")
    assert again.refused and again.message.startswith(f"{action_id}: already done by {OPERATOR} at ")
    assert not drained(cluster)  # nothing sent the second time
    assert events(tmp_path, action_id) == ["recommended", "approved", "done"]


def test_two_operators_approving_at_once_act_once(cluster: SlurmCluster, tmp_path: Path) -> None:
    action_id = recommended_drain(actions(tmp_path, cluster), cluster.node)
    start = threading.Barrier(4)
    outcomes = []

    def approve(who: str) -> None:
        acts = actions(tmp_path, cluster)  # each its own connections, as two sessions or processes have
        start.wait()
        outcomes.append(acts.approve(action_id, who))

    threads = [threading.Thread(target=approve, args=(f"op{i}@example.com",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(o.refused for o in outcomes) == [False, True, True, True]
    assert events(tmp_path, action_id).count("approved") == 1
    assert drained(cluster)


def test_requeue_of_the_largest_job_needs_a_second_confirmation(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    job = cluster.submit("--requeue", "--job-name=flagship", "--wrap", "sleep 300")
    cluster.wait(job, states=("RUNNING",))
    acts = actions(tmp_path, cluster)
    with pytest.raises(NeedsConfirmation, match=rf"^requeue touches job {job}, the largest running job"):
        acts.by_hand(Action.REQUEUE, OPERATOR, job_id=job, reason="stuck on a drained node")
    assert cluster.state(job) == "RUNNING"
    outcome = acts.by_hand(
        Action.REQUEUE, OPERATOR, job_id=job, reason="stuck on a drained node", confirm_largest=True
    )
    assert (outcome.state, outcome.command.argv) == (ActionState.DONE, ("scontrol", "requeue", job))
    cluster.wait(job, states=("PENDING",), timeout_s=30)
    assert "Restarts=1" in cluster.run("scontrol", "--oneliner", "show", "job", job)
    cluster.run("scontrol", "update", f"jobid={job}", "starttime=now")  # not after Slurm's credential delay
    cluster.wait(job, states=("RUNNING",), timeout_s=60)
    # draining its node touches it too
    with pytest.raises(NeedsConfirmation, match=rf"^drain touches job {job}"):
        acts.by_hand(Action.DRAIN, OPERATOR, nodes=(cluster.node,), reason="slow host")
    assert node_state(cluster)[0] in ("allocated", "mixed")


def test_slurms_refusal_is_shown_and_kept(cluster: SlurmCluster, tmp_path: Path) -> None:
    job = cluster.submit("--no-requeue", "--job-name=norequeue", "--wrap", "sleep 300")
    cluster.wait(job, states=("RUNNING",))
    acts = actions(tmp_path, cluster)
    outcome = acts.by_hand(Action.REQUEUE, OPERATOR, job_id=job, reason="try", confirm_largest=True)
    assert outcome.state is ActionState.FAILED and not outcome.answer.ok
    assert "scontrol requeue" in outcome.answer.text and "exited with status 1" in outcome.answer.text
    failed = AuditLog(tmp_path).entries(action_id=outcome.action_id)[-1]
    assert failed.event == "failed" and failed.detail["answer"]["text"] == outcome.answer.text
    assert cluster.state(job) == "RUNNING"


def test_names_slurm_does_not_list_are_refused_before_anything_is_sent(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    acts = actions(tmp_path, cluster)
    outcome = acts.by_hand(Action.DRAIN, OPERATOR, nodes=("gpu-9999",), reason="typo")
    assert outcome.refused and outcome.message == "drain: Slurm lists no node gpu-9999"
    shell = acts.by_hand(Action.DRAIN, OPERATOR, nodes=(f"{cluster.node};reboot",), reason="x")
    assert shell.refused and "is not a node name" in shell.message
    requeue = acts.by_hand(Action.REQUEUE, OPERATOR, job_id="99999999", reason="gone")
    assert requeue.refused and requeue.message.startswith("requeue: Slurm lists no active job 99999999")
    assert not drained(cluster)


def test_the_hourly_cap_refuses_a_second_drain(cluster: SlurmCluster, tmp_path: Path) -> None:
    acts = actions(tmp_path, cluster, max_drains_per_hour=1)
    assert acts.approve(recommended_drain(acts, cluster.node, "a"), OPERATOR).state is ActionState.DONE
    cluster.resume()
    second = recommended_drain(acts, cluster.node, "b")
    outcome = acts.approve(second, OPERATOR)
    assert outcome.refused
    assert outcome.message == (
        "cap: 1 node(s) drained by Goodput in the last hour; 1 more would pass max_drains_per_hour = 1"
    )
    assert not drained(cluster)
    assert events(tmp_path, second) == ["recommended", "refused"]


def test_the_circuit_breaker_stops_actions_until_reset(cluster: SlurmCluster, tmp_path: Path) -> None:
    broken_conf = tmp_path / "empty-slurm.conf"
    broken_conf.write_text("")
    broken = Actions(tmp_path, ActionSettings(slurm_conf=str(broken_conf), breaker_errors=3))
    for i in range(3):
        outcome = broken.by_hand(Action.DRAIN, OPERATOR, nodes=(cluster.node,), reason=f"try {i}")
        assert outcome.state is ActionState.FAILED and "does not read like a slurm.conf" in outcome.message
    good = actions(tmp_path, cluster, breaker_errors=3)
    assert good.breaker().open
    refused = good.by_hand(Action.DRAIN, OPERATOR, nodes=(cluster.node,), reason="now it works")
    assert refused.refused and refused.message.startswith("circuit breaker open: 3 Slurm errors in a row")
    assert not drained(cluster)
    good.reset_breaker(OPERATOR, "slurm.conf fixed")
    assert not good.breaker().open
    assert good.by_hand(Action.DRAIN, OPERATOR, nodes=(cluster.node,), reason="now").state is ActionState.DONE


def test_the_command_line_acts_and_verifies_the_log(
    cluster: SlurmCluster, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    store = ["--store", str(tmp_path), "--slurm-conf", cluster.conf]
    assert main(["act", "drain", cluster.node, "--reason", "burn-in", "--dry-run", "--json", *store]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] and dry["command"][-1] == "Reason=goodput: burn-in"
    assert not drained(cluster)
    assert main(["act", "drain", cluster.node, "--reason", "burn-in", *store]) == 0
    assert "Slurm accepted" in capsys.readouterr().out
    assert drained(cluster) and node_state(cluster)[1] == "goodput: burn-in"
    assert main(["act", "resume", cluster.node, "--reason", "burn-in passed", *store]) == 0
    assert main(["act", "verify-log", *store]) == 0
    out = capsys.readouterr().out
    assert "chain intact" in out
    assert main(["act", "log", "--format", "json", *store]) == 0
    logged = json.loads(capsys.readouterr().out)
    assert [e["event"] for e in logged] == [
        "dry_run",
        "recommended",
        "approved",
        "done",
        "recommended",
        "approved",
        "done",
    ]
    assert {e["who"] for e in logged} == {who_acts()}
