"""`goodput act ...`: recommend, approve, reject, drain, resume, requeue, verify the log, export it, reset the breaker.

    goodput act recommend --run RUN_ID [--json]
    goodput act approve ID [--dry-run] [--confirm-largest-job] [--json]
    goodput act reject ID --why TEXT
    goodput act drain NODE... --reason TEXT [--dry-run] [--confirm-largest-job] [--json]
    goodput act resume NODE... --reason TEXT [--dry-run] [--json]
    goodput act requeue JOBID --reason TEXT [--dry-run] [--confirm-largest-job] [--json]
    goodput act log [--format csv|json] [--output FILE]
    goodput act verify-log [--json]
    goodput act reset-breaker --why TEXT

Every subcommand takes --store DIR and --slurm-conf FILE (else [actions] slurm_conf of <store>/settings.toml,
else Slurm's default). Who acts is the operating-system user of the process's real uid (`user@host`), as the
audit log records it: never a name from the environment (LOGNAME, USER), which anyone sets. A name the operator
gives with --name (an email, "on call") is recorded beside it, marked as given: `alice@host (gave the name
"olga@example.com")`.
Exit status: 0 done (or a dry run), 1 Slurm refused or failed, 2 bad input or refused by a check (nothing sent),
3 the audit log does not verify.
"""

import argparse
import json
import os
import pwd
import socket
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from engine.act.records import Action, ActionState
from engine.errors import GoodputError
from engine.store import resolve_store_dir

if TYPE_CHECKING:  # the machinery is imported when a subcommand runs, not when `goodput` builds its parser
    from engine.act.audit import AuditLog
    from engine.act.service import Outcome

EXIT_SLURM_FAILED = 1
EXIT_REFUSED = 2
EXIT_LOG_BROKEN = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    subs = parser.add_subparsers(dest="act", required=True, metavar="WHAT")

    def sub(name: str, help_text: str) -> argparse.ArgumentParser:
        p = subs.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--store", metavar="DIR", help="run store folder (default: $GOODPUT_STORE or data/store)"
        )
        p.add_argument("--slurm-conf", metavar="FILE", help="slurm.conf of the cluster to act on")
        p.add_argument("--json", action="store_true", help="print JSON instead of text")
        p.add_argument(
            "--name",
            metavar="TEXT",
            help="a name to record beside your operating-system user, marked as given by you (an email, a role)",
        )
        return p

    rec = sub("recommend", "what the run's data says should be drained, resumed or requeued, with its price")
    rec.add_argument("--run", required=True, metavar="RUN_ID", help="the observed run of the cluster")
    approve = sub("approve", "approve a recommended action and carry it out through Slurm")
    approve.add_argument("id", metavar="ID", help="the action's id (from `goodput act recommend`)")
    _acting_flags(approve)
    reject = sub("reject", "reject a recommended action (kept in the audit log with why)")
    reject.add_argument("id", metavar="ID")
    reject.add_argument("--why", required=True, metavar="TEXT")
    for action, what in ((Action.DRAIN, "drain nodes"), (Action.RESUME, "resume drained nodes")):
        p = sub(str(action), f"{what} by hand (the same checks, caps and log as an approval)")
        p.add_argument("nodes", nargs="+", metavar="NODE", help="Slurm node names")
        p.add_argument("--reason", required=True, metavar="TEXT")
        _acting_flags(p)
    requeue = sub("requeue", "requeue a Slurm job by hand")
    requeue.add_argument("job_id", metavar="JOBID")
    requeue.add_argument("--reason", required=True, metavar="TEXT")
    _acting_flags(requeue)
    log = sub("log", "the audit log, as CSV or JSON")
    log.add_argument("--format", choices=("csv", "json"), default="json")
    log.add_argument("--output", metavar="FILE", help="write here (default: print)")
    log.add_argument("--force", action="store_true", help="replace --output if it is an existing file")
    sub("verify-log", "check the audit log's hash chain: a changed or deleted row is named")
    reset = sub("reset-breaker", "close the circuit breaker after Slurm errors (kept in the audit log)")
    reset.add_argument("--why", required=True, metavar="TEXT")


def _acting_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dry-run", action="store_true", help="check everything and show the command; send nothing"
    )
    p.add_argument(
        "--confirm-largest-job",
        action="store_true",
        help="the second confirmation needed to touch a node of the largest running job",
    )


MAX_GIVEN_NAME_CHARS = 200


def who_acts(given: str | None = None) -> str:
    """The operating-system user of the process's real uid at this host (getpass reads LOGNAME and USER first,
    which anyone sets: `LOGNAME='olga@example.com (operator on call)'` was recorded as who acted), and the name
    the operator gave, marked as given."""
    uid = os.getuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:  # a uid with no passwd entry (a container's)
        user = f"uid {uid}"
    who = f"{user}@{socket.gethostname()}"
    if given is None:
        return who
    words = " ".join(given.split())
    if not words:
        raise GoodputError("--name: empty; leave it out, or give the name to record beside your user")
    if len(words) > MAX_GIVEN_NAME_CHARS:
        raise GoodputError(f"--name: {len(words)} characters, over {MAX_GIVEN_NAME_CHARS}")
    return f"{who} (gave the name {json.dumps(words, ensure_ascii=False)})"


def run_command(args: argparse.Namespace) -> int:
    from engine.act.audit import AuditLog
    from engine.act.service import Actions
    from engine.act.settings import load_settings

    root = resolve_store_dir(args.store)
    if args.act == "verify-log":
        return _verify(AuditLog(root), args.json)
    if args.act == "log":
        return _export_log(AuditLog(root), args.format, args.output, args.force)
    who = who_acts(args.name)  # checked before anything reads or writes
    settings = load_settings(root)
    if args.slurm_conf:
        settings = replace(settings, slurm_conf=args.slurm_conf)
    actions = Actions(root, settings)
    if args.act == "recommend":
        recs = actions.recommend(args.run, who)
        if args.json:
            print(json.dumps([r.as_json() for r in recs]))
        else:
            _print_recommendations(args.run, recs)
        return 0
    if args.act == "reset-breaker":
        actions.reset_breaker(who, args.why)
        print(f"circuit breaker reset by {who}")
        return 0
    if args.act == "reject":
        return _report(actions.reject(args.id, who, args.why), args.json)
    acting = {"dry_run": args.dry_run, "confirm_largest": args.confirm_largest_job}
    if args.act == "approve":
        return _report(actions.approve(args.id, who, **acting), args.json)
    if args.act == "requeue":
        outcome = actions.by_hand(Action.REQUEUE, who, job_id=args.job_id, reason=args.reason, **acting)
    else:
        outcome = actions.by_hand(
            Action(args.act), who, nodes=tuple(args.nodes), reason=args.reason, **acting
        )
    return _report(outcome, args.json)


def _report(outcome: "Outcome", as_json: bool) -> int:
    if as_json:
        print(json.dumps(outcome.as_json()))
    else:
        print(f"{outcome.action_id}: {outcome.message}")
        if outcome.answer is not None:
            print(f"  Slurm said: {outcome.answer.text}")
    if outcome.refused:
        if not as_json:
            print(f"goodput: error: {outcome.message}", file=sys.stderr)
        return EXIT_REFUSED
    if outcome.state is ActionState.FAILED:
        return EXIT_SLURM_FAILED
    return 0


def _print_recommendations(run_id: str, recs: list) -> None:
    if not recs:
        print(f"run {run_id}: nothing to recommend")
        return
    print(f"run {run_id}: {len(recs)} recommended action(s), most worth doing first")
    for r in recs:
        target = f"job {r.job_id} on " if r.job_id else ""
        print(
            f"  {r.id}  [{r.state}] {r.action} {target}{', '.join(r.nodes)}: {r.reason}\n"
            f"      cost if acting {r.cost_if_acting_gpu_hours:,.1f} GPU-h, if not {r.cost_if_not_gpu_hours:,.1f} GPU-h"
            f" ({r.pricing})"
        )


def _verify(log: "AuditLog", as_json: bool) -> int:
    v = log.verify()
    if as_json:
        print(
            json.dumps({"ok": v.ok, "rows": v.rows, "head_hash": v.head_hash, "problems": list(v.problems)})
        )
    elif v.ok:
        print(f"audit log {log.path}: {v.rows:,} rows, chain intact; head {v.head_hash}")
        print(
            "  keep the head hash elsewhere: a log rewritten whole can only be caught against an outside copy"
        )
    else:
        print(f"audit log {log.path}: {len(v.problems)} problem(s)", file=sys.stderr)
        for problem in v.problems:
            print(f"  {problem}", file=sys.stderr)
    return 0 if v.ok else EXIT_LOG_BROKEN


def audit_csv(log: "AuditLog") -> bytes:
    """The log as CSV (the page's download too): one row an entry, detail as JSON text, text cells neutralised
    for spreadsheets (engine.report.csv_safety)."""
    from engine.report.csv_safety import safe_csv

    return safe_csv(log.frame())


def audit_json(log: "AuditLog") -> bytes:
    return json.dumps([e.as_json() for e in log.entries()], ensure_ascii=False, indent=1).encode()


def _export_log(log: "AuditLog", fmt: str, output: str | None, force: bool) -> int:
    """The log to stdout, or to --output through the checked writer `export` and `calibrate` use: an existing
    file only with --force, never a folder, a device, a FIFO or through a symbolic link, written whole."""
    from engine.report.export import write_export
    from engine.store.outputs import check_output

    path = check_output(output, force=force) if output is not None else None  # before the log is read
    data = audit_csv(log) if fmt == "csv" else audit_json(log)
    if path is None:
        sys.stdout.write(data.decode())
        return 0
    write_export(path, data, force=force)
    print(f"wrote the audit log ({fmt}) to {output}")
    return 0
