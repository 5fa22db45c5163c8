"""The records of acting on a cluster: what is recommended, on what evidence, at what price, and where it stands.

One record type crosses every boundary (engine.act.recommend makes it, engine.act.audit keeps it as JSON,
engine.act.service and the Operations page read it back): `Recommendation`. Its JSON form is the contract of
`goodput act recommend --json` (DESIGN: `{"id", "action", "nodes", "reason", "evidence",
"cost_if_acting_gpu_hours", "cost_if_not_gpu_hours", "state"}`), extended by the keys after those.
"""

import hashlib
import json
from dataclasses import dataclass, field
from enum import StrEnum


class Action(StrEnum):
    DRAIN = "drain"  # scontrol update NodeName=... State=DRAIN Reason="goodput: ..."
    RESUME = "resume"  # scontrol update NodeName=... State=RESUME
    REQUEUE = "requeue"  # scontrol requeue JOBID


class ActionState(StrEnum):
    """Where an action stands, as its latest event in the audit log says."""

    RECOMMENDED = "recommended"  # proposed by a rule, nobody has decided
    APPROVED = "approved"  # approved by an operator, sent to Slurm, no answer kept yet
    REJECTED = "rejected"  # an operator said no (with why)
    DONE = "done"  # Slurm accepted it
    FAILED = "failed"  # Slurm refused it, or could not be reached (its answer is kept)


FINAL_STATES = (ActionState.REJECTED, ActionState.DONE, ActionState.FAILED)


class Rule(StrEnum):
    """Why an action is recommended: each rule is one function in engine.act.recommend."""

    FATAL_XID = "fatal_xid"  # a host with a fatal XID still in service
    LEMON = "lemon"  # a repeat offender (the lemon rule: repair.lemon_failures within repair.lemon_window)
    SLOW_HOST = "slow_host"  # a host running slow now (an open fail-slow episode)
    REPAIRED = "repaired"  # a host back from repair whose checks since are clean
    STUCK_JOB = "stuck_job"  # a job still allocated a node that is drained or down
    MANUAL = "manual"  # asked for by hand (`goodput act drain|resume|requeue`, the page's form)


@dataclass(frozen=True)
class Evidence:
    """One fact behind a recommendation, with where a person can look at it."""

    kind: str  # incident, slow_episode, host_state, job
    text: str  # what happened, in words ("XID 79 (GPU fallen off the bus) on GPU 3")
    t_s: float | None = None  # when, in seconds since the run's start
    link: str = ""  # the page showing it, relative to the dashboard ("incidents?incident=123&run=...")

    def as_json(self) -> dict:
        return {"kind": self.kind, "text": self.text, "t_s": self.t_s, "link": self.link}

    @classmethod
    def from_json(cls, data: dict) -> "Evidence":
        return cls(kind=data["kind"], text=data["text"], t_s=data.get("t_s"), link=data.get("link", ""))


@dataclass(frozen=True)
class Recommendation:
    """One action on one or more nodes (or one job), the evidence for it and the twin's price of acting and of not
    acting, in GPU-hours of the cluster (engine.act.pricing's docstring gives the formulas)."""

    id: str  # recommendation_id(...): the same finding gives the same id, a new finding a new one
    action: Action
    nodes: tuple[str, ...]  # Slurm node names (the run's hostnames)
    reason: str  # in words, for a person and for Slurm's Reason= ("fatal XID 79 on GPU 3 at ...")
    rule: Rule
    run_id: str
    evidence: tuple[Evidence, ...] = ()
    cost_if_acting_gpu_hours: float = 0.0
    cost_if_not_gpu_hours: float = 0.0
    job_id: str | None = None  # the job a requeue acts on
    jobs_hit: tuple[str, ...] = ()  # jobs running on the nodes now: acting interrupts them
    gpus_hit: int = 0  # GPUs of those jobs
    state: ActionState = ActionState.RECOMMENDED
    pricing: str = ""  # how the two costs were worked out, in words (shown beside them)
    extra: dict = field(default_factory=dict)  # rule-specific figures (rates, horizon), JSON-able

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "action": str(self.action),
            "nodes": list(self.nodes),
            "reason": self.reason,
            "evidence": [e.as_json() for e in self.evidence],
            "cost_if_acting_gpu_hours": self.cost_if_acting_gpu_hours,
            "cost_if_not_gpu_hours": self.cost_if_not_gpu_hours,
            "state": str(self.state),
            "rule": str(self.rule),
            "run_id": self.run_id,
            "job_id": self.job_id,
            "jobs_hit": list(self.jobs_hit),
            "gpus_hit": self.gpus_hit,
            "pricing": self.pricing,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Recommendation":
        return cls(
            id=data["id"],
            action=Action(data["action"]),
            nodes=tuple(data["nodes"]),
            reason=data["reason"],
            rule=Rule(data["rule"]),
            run_id=data["run_id"],
            evidence=tuple(Evidence.from_json(e) for e in data.get("evidence", ())),
            cost_if_acting_gpu_hours=float(data.get("cost_if_acting_gpu_hours", 0.0)),
            cost_if_not_gpu_hours=float(data.get("cost_if_not_gpu_hours", 0.0)),
            job_id=data.get("job_id"),
            jobs_hit=tuple(data.get("jobs_hit", ())),
            gpus_hit=int(data.get("gpus_hit", 0)),
            state=ActionState(data.get("state", ActionState.RECOMMENDED)),
            pricing=data.get("pricing", ""),
            extra=dict(data.get("extra", {})),
        )


def recommendation_id(
    action: Action, nodes: tuple[str, ...], job_id: str | None, rule: Rule, since: str
) -> str:
    """A short stable id: the same action on the same nodes for the same finding (`since`: what makes the finding
    new, such as the incident's id or the episode's start) is the same recommendation, so running the rules
    again neither duplicates it nor revives one already decided; a new incident on the same host gives a new id."""
    key = json.dumps([str(action), sorted(nodes), job_id, str(rule), since], separators=(",", ":"))
    return f"{action}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
