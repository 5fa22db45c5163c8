"""Replay settings (`goodput replay --set KEY=VALUE`):

    replay.mode                  recorded | rescheduled (default rescheduled; --mode)
    scheduler.placement          pack | spread (default pack; --policy)
    scheduler.backfill           true | false (default true: EASY backfill)
    scheduler.preemption         true | false (default false)
    scheduler.backfill_depth     jobs backfill looks at a pass (default 500, Slurm's bf_max_job_test)
    scheduler.checkpoint_interval  work a `restart` job loses at most when hit (default 30m)
    replay.failures              CSV of host failures: t,host,down_for[,cause] (durations; host id or name)
    replay.gpus_per_host         host size where the trace does not give its nodes
                                 (default cluster.gpus_per_host)
    replay.hosts                 cluster size where the trace does not give its nodes (default: inferred)

and the scenario keys of the cluster's layout and clock: cluster.hosts_per_rack, cluster.racks_per_pod,
cluster.racks_per_row, cluster.gpu_model, cluster.gpus_per_host, simulation.start, simulation.seed.
"""

from dataclasses import dataclass, field

from engine import limits
from engine import scenario as scenario_mod
from engine.errors import GoodputError
from engine.scenario.durations import parse_duration
from engine.scheduling.scheduler import Policy

MODES = ("recorded", "rescheduled")
SCENARIO_KEYS = (
    "cluster.hosts_per_rack",
    "cluster.racks_per_pod",
    "cluster.racks_per_row",
    "cluster.gpu_model",
    "cluster.gpus_per_host",
    "simulation.start",
    "simulation.seed",
)


@dataclass
class ReplaySettings:
    mode: str = "rescheduled"
    policy: Policy = field(default_factory=Policy)
    failures_file: str | None = None
    gpus_per_host: int | None = None
    hosts: int | None = None
    scenario: scenario_mod.Scenario = field(default_factory=lambda: scenario_mod.build("llama3-405b"))
    raw: dict = field(default_factory=dict)
    passed: tuple = ()  # scenario keys given with --set


def settings_from(sets: list[str], mode: str | None = None, placement: str | None = None) -> ReplaySettings:
    """Parse `--set` strings (and the --mode/--policy flags, which win); errors name the key."""
    mine: dict[str, str] = {}
    passed: list[str] = []
    for text in sets:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep:
            raise GoodputError(f"--set {text!r}: expected KEY=VALUE")
        if key.startswith(("replay.", "scheduler.")):
            mine[key] = value.strip()
        elif key in SCENARIO_KEYS:
            passed.append(text)
        else:
            raise GoodputError(
                f"--set {key}: not a replay setting; use replay.*, scheduler.* or one of "
                + ", ".join(SCENARIO_KEYS)
            )
    known = {
        "replay.mode",
        "replay.failures",
        "replay.gpus_per_host",
        "replay.hosts",
        "scheduler.placement",
        "scheduler.backfill",
        "scheduler.preemption",
        "scheduler.backfill_depth",
        "scheduler.checkpoint_interval",
    }
    for key in mine:
        if key not in known:
            raise GoodputError(f"--set {key}: unknown replay setting; known: {', '.join(sorted(known))}")
    if mode:
        mine["replay.mode"] = mode
    if placement:
        mine["scheduler.placement"] = placement
    chosen_mode = mine.get("replay.mode", "rescheduled")
    if chosen_mode not in MODES:
        raise GoodputError(f"replay.mode: recorded or rescheduled, got {chosen_mode!r}")
    policy = Policy(
        placement=mine.get("scheduler.placement", "pack"),
        backfill=_bool(mine, "scheduler.backfill", True),
        preemption=_bool(mine, "scheduler.preemption", False),
        backfill_depth=_int(
            mine, "scheduler.backfill_depth", Policy.backfill_depth, 1, limits.MAX_TRACE_JOBS
        ),
        checkpoint_interval_s=parse_duration(
            mine.get("scheduler.checkpoint_interval", "30m"), "scheduler.checkpoint_interval"
        ),
    )
    return ReplaySettings(
        mode=chosen_mode,
        policy=policy,
        failures_file=mine.get("replay.failures"),
        gpus_per_host=_int(mine, "replay.gpus_per_host", None, 1, limits.MAX_GPUS_PER_HOST),
        hosts=_int(mine, "replay.hosts", None, 1, limits.MAX_HOSTS),
        scenario=scenario_mod.build("llama3-405b", sets=passed),
        raw=mine,
        passed=tuple(text.partition("=")[0].strip() for text in passed),
    )


def _bool(values: dict, key: str, default: bool) -> bool:
    text = values.get(key)
    if text is None:
        return default
    if text.lower() in ("true", "1", "yes", "on"):
        return True
    if text.lower() in ("false", "0", "no", "off"):
        return False
    raise GoodputError(f"{key}: expected true or false, got {text!r}")


def _int(values: dict, key: str, default: int | None, minimum: int, maximum: int) -> int | None:
    text = values.get(key)
    if text is None:
        return default
    try:
        number = int(text) if len(text) <= 40 else None  # no count here has 40 digits: not read at all
    except ValueError:
        number = None
    if number is None:
        raise GoodputError(f"{key}: expected a whole number, got {text[:40]!r}")
    if number < minimum:
        raise GoodputError(f"{key}: must be at least {minimum}, got {number}")
    limits.check_at_most(number, maximum, key)
    return number
