"""What Goodput asks Slurm to do, and what it asks Slurm first: the commands, the names checked, the answer kept.

Every command is an argument vector run without a shell (engine.ingest.slurm.SlurmSource: SLURM_CONF, a deadline,
bounded output), so a node name or a reason can never become a second command. Before it is built, every node
name must be one Slurm lists now (`sinfo --json`) and every job id one `squeue` lists now: a name Goodput read
from an old run, or one typed wrong, is refused before anything is sent.

    drain    scontrol update NodeName=a,b State=DRAIN Reason="goodput: <reason>"
    resume   scontrol update NodeName=a,b State=RESUME
    requeue  scontrol requeue JOBID
"""

import re
import shlex
import time
from dataclasses import dataclass

from engine.act.records import Action
from engine.errors import GoodputError
from engine.ingest.slurm import SlurmError, SlurmSource, read_nodes
from engine.replay.sacct import expand_hostlist

REASON_PREFIX = "goodput: "
MAX_REASON_CHARS = 200  # Slurm keeps a node's reason in its state file; a page of text is not a reason
MAX_NODES_PER_ACTION = 64
MAX_ANSWER_CHARS = 4000  # what the audit log keeps of Slurm's answer
# Slurm's node names are host names; its job ids are numbers, or array tasks (123_4) and het jobs (123+1)
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_JOB = re.compile(r"^[0-9]{1,12}(?:[_+][0-9]{1,9})?$")
ACTIVE_JOB_STATES = "RUNNING,CONFIGURING,COMPLETING,SUSPENDED,PENDING,REQUEUED"


class SlurmRefused(GoodputError):
    """A node or job Slurm does not list, or a request Goodput will not build; nothing was sent."""


@dataclass(frozen=True)
class SlurmCommand:
    """One command for Slurm: `argv` as run (the program's name first, found on PATH or in slurm_bin)."""

    action: Action
    argv: tuple[str, ...]
    nodes: tuple[str, ...] = ()
    job_id: str | None = None

    def shown(self) -> str:
        """As a person would type it (quoted for a POSIX shell, though none is used)."""
        return shlex.join(self.argv)


@dataclass(frozen=True)
class SlurmAnswer:
    """What Slurm said: `ok` when the command exited 0; its output (or its error) as text, cut to a bound."""

    ok: bool
    text: str
    seconds: float

    def as_json(self) -> dict:
        return {"ok": self.ok, "text": self.text, "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class ClusterNow:
    """What Slurm says of the cluster now: its nodes, the ones drained or down, and each active job's nodes."""

    nodes: frozenset[str]
    out_of_service: frozenset[str]  # drained, draining or down
    jobs: dict[str, tuple[str, ...]]  # active job id -> its nodes (none while pending)

    def largest_job(self) -> tuple[str, tuple[str, ...]] | None:
        """The running job on the most nodes (ties: the lowest id), or None."""
        running = [(job, nodes) for job, nodes in self.jobs.items() if nodes]
        if not running:
            return None
        return max(running, key=lambda item: (len(item[1]), -_job_order(item[0])))

    def jobs_on(self, nodes: tuple[str, ...]) -> list[str]:
        wanted = set(nodes)
        return sorted(job for job, on in self.jobs.items() if wanted & set(on))


def _job_order(job_id: str) -> int:
    return int(re.split(r"[_+]", job_id)[0])


def read_cluster(source: SlurmSource) -> ClusterNow:
    """Nodes from `sinfo --json` (engine.ingest.slurm.read_nodes), active jobs from
    `squeue -h -t ... -o %i|%N`; a SlurmError naming the command when Slurm does not answer."""
    nodes = read_nodes(source)
    out = nodes.filter(nodes["state"].is_in(["down", "draining"]) | nodes["flags"].list.contains("DRAIN"))
    text = source.run("squeue", "--noheader", f"--states={ACTIVE_JOB_STATES}", "--format=%i|%N").decode(
        errors="replace"
    )
    jobs: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        job_id, _, hostlist = line.strip().partition("|")
        if not job_id:
            continue
        try:
            jobs[job_id] = tuple(expand_hostlist(hostlist)) if hostlist else ()
        except ValueError as err:
            raise SlurmError(
                f"squeue: job {job_id}'s nodes {hostlist[:200]!r} are not a hostlist ({err})"
            ) from None
    return ClusterNow(
        nodes=frozenset(nodes["node"].to_list()), out_of_service=frozenset(out["node"].to_list()), jobs=jobs
    )


def build_command(
    action: Action,
    now: ClusterNow,
    *,
    nodes: tuple[str, ...] = (),
    job_id: str | None = None,
    reason: str = "",
) -> SlurmCommand:
    """The command for `action`, after checking every name against what Slurm lists now (SlurmRefused if not)."""
    if action is Action.REQUEUE:
        if job_id is None or not _JOB.match(job_id):
            raise SlurmRefused(f"requeue: {job_id!r} is not a Slurm job id")
        if job_id not in now.jobs:
            raise SlurmRefused(f"requeue: Slurm lists no active job {job_id} (finished, or never there)")
        return SlurmCommand(action, ("scontrol", "requeue", job_id), nodes=now.jobs[job_id], job_id=job_id)
    if not nodes:
        raise SlurmRefused(f"{action}: no node named")
    if len(nodes) > MAX_NODES_PER_ACTION:
        raise SlurmRefused(f"{action}: {len(nodes)} nodes; one action takes at most {MAX_NODES_PER_ACTION}")
    for node in nodes:
        if not _NODE.match(node):
            raise SlurmRefused(f"{action}: {node[:80]!r} is not a node name")
    unknown = sorted(set(nodes) - now.nodes)
    if unknown:
        raise SlurmRefused(f"{action}: Slurm lists no node {', '.join(unknown[:10])}")
    listed = ",".join(sorted(set(nodes)))
    if action is Action.RESUME:
        return SlurmCommand(action, ("scontrol", "update", f"NodeName={listed}", "State=RESUME"), nodes=nodes)
    words = " ".join(reason.split())  # one line: Slurm shows the reason in sinfo -R's one column
    if not words:
        raise SlurmRefused("drain: Slurm needs a reason")
    text = (REASON_PREFIX + words)[:MAX_REASON_CHARS]
    return SlurmCommand(
        action, ("scontrol", "update", f"NodeName={listed}", "State=DRAIN", f"Reason={text}"), nodes=nodes
    )


def carry_out(source: SlurmSource, command: SlurmCommand) -> SlurmAnswer:
    """Run the command; Slurm's answer, success or error, never raised (the caller logs it either way)."""
    started = time.monotonic()
    name, *args = command.argv
    try:
        out = source.run(name, *args).decode(errors="replace").strip()
        return SlurmAnswer(
            True, (out or "accepted (no output)")[:MAX_ANSWER_CHARS], time.monotonic() - started
        )
    except SlurmError as err:
        return SlurmAnswer(False, str(err)[:MAX_ANSWER_CHARS], time.monotonic() - started)
