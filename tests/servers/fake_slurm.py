"""A Slurm of many nodes for the concurrency tests of acting (issue 45): `sinfo --json`, `squeue` and `scontrol`
as small programs over one state file, each call logged.

The real Slurm of tests/servers/slurm.py has one node (one slurmd on one machine: Debian's Slurm is built without
multiple-slurmd), and a cap on the share of nodes drained needs tens of them. So this stands in for the
commands Goodput runs, answering the way Slurm 22.05 does (sinfo's JSON as engine.ingest.slurm_text reads it,
scontrol's exit status and message), with a delay before `scontrol update` answers, so that actions started at
once are all in flight together. Its state and the commands it was given are in `state.json` and
`commands.log` beside the programs; each call holds an flock on the state while it reads or changes it.
"""

import json
import sys
from pathlib import Path

PROGRAM = """#!{python}
import fcntl, json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
name = os.path.basename(sys.argv[0])
with open(os.path.join(here, "commands.log"), "a") as log:
    fcntl.flock(log, fcntl.LOCK_EX)
    log.write(json.dumps([name, *sys.argv[1:]]) + "\\n")
settings = json.load(open(os.path.join(here, "settings.json")))

def state(change=None):
    with open(os.path.join(here, "state.json"), "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        nodes = json.load(f)
        if change is not None:
            change(nodes)
            f.seek(0); f.truncate(); json.dump(nodes, f)
        return nodes

if name == "sinfo":
    nodes = state()
    print(json.dumps({{"meta": {{}}, "errors": [], "nodes": [
        {{"name": n, "state": "idle", "state_flags": ["DRAIN"] if s["drained"] else [], "reason": s["reason"],
          "gres": "gpu:8", "partitions": ["debug"]}}
        for n, s in sorted(nodes.items())]}}))
elif name == "squeue":
    pass  # no job runs
elif name == "scontrol" and sys.argv[1:2] == ["update"]:
    time.sleep(settings["delay_s"])
    if settings["fail"]:
        print("slurm_update error: Invalid node state specified", file=sys.stderr)
        sys.exit(1)
    fields = dict(arg.split("=", 1) for arg in sys.argv[2:])
    def apply(nodes):
        for n in fields["NodeName"].split(","):
            nodes[n]["drained"] = fields["State"] == "DRAIN"
            nodes[n]["reason"] = fields.get("Reason", "")
    state(apply)
elif name == "scontrol":
    print("SLURM_VERSION = 22.05.8")
else:
    print(name + ": not faked", file=sys.stderr)
    sys.exit(2)
"""


def make(folder: Path, nodes: int, *, delay_s: float = 3.0, fail: bool = False) -> Path:
    """A folder holding the fake sinfo, squeue and scontrol over `nodes` idle nodes (gpu01, gpu02, ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"gpu{i:02d}" for i in range(1, nodes + 1)]
    (folder / "state.json").write_text(json.dumps({n: {"drained": False, "reason": ""} for n in names}))
    (folder / "settings.json").write_text(json.dumps({"delay_s": delay_s, "fail": fail}))
    (folder / "commands.log").write_text("")
    for name in ("sinfo", "squeue", "scontrol"):
        (folder / name).write_text(PROGRAM.format(python=sys.executable))
        (folder / name).chmod(0o755)
    return folder


def drained(folder: Path) -> list[str]:
    """The nodes the fake Slurm holds drained now."""
    return sorted(n for n, s in json.loads((folder / "state.json").read_text()).items() if s["drained"])


def updates(folder: Path) -> list[list[str]]:
    """Every `scontrol update` the fake Slurm was given, in order."""
    calls = [json.loads(line) for line in (folder / "commands.log").read_text().splitlines()]
    return [c for c in calls if c[:2] == ["scontrol", "update"]]
