"""What Goodput may do to a real cluster, and how it prices it: the `[actions]` table of `<store>/settings.toml`.

    [actions]
    max_drain_share = 0.02        # at most 2 % of Slurm's nodes drained or down once the drain is done
    max_drains_per_hour = 2       # drains Goodput carries out (approved by anyone) in any 60 minutes
    max_drains_per_day = 8        # ... and in any 24 hours
    breaker_errors = 3            # this many Slurm errors in a row stop every action until an operator resets
    horizon_hours = 24            # the price of not acting counts until the next maintenance window, this far off
    slurm_conf = "/etc/slurm/slurm.conf"   # which cluster Slurm's commands ask (default: Slurm's own default)
    slurm_bin = "/usr/bin"        # where scontrol, sinfo and squeue are (default: PATH)

The defaults are deliberately tight (NVIDIA's NVSentinel and Mission Control ship with remediation off or capped
for the same reason: a detector's false positive must not empty a cluster). The file is shared by the command
line and the dashboard, which both read it on every action; a key it does not know, or a value out of range, is
an error naming the key.
"""

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from engine.errors import GoodputError
from engine.store.regular_files import read_regular

SETTINGS_FILE = "settings.toml"
SECTION = "actions"
MAX_SETTINGS_BYTES = 64 * 1024


@dataclass(frozen=True)
class ActionSettings:
    max_drain_share: float = 0.02
    max_drains_per_hour: int = 2
    max_drains_per_day: int = 8
    breaker_errors: int = 3
    horizon_hours: float = 24.0
    slurm_conf: str | None = None
    slurm_bin: str | None = None

    def __post_init__(self) -> None:
        where = f"[{SECTION}]"
        if not 0.0 < self.max_drain_share <= 1.0:
            raise GoodputError(f"{where} max_drain_share: {self.max_drain_share} is not in (0, 1]")
        for name in ("max_drains_per_hour", "max_drains_per_day", "breaker_errors"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise GoodputError(f"{where} {name}: {value!r} is not a whole number of at least 1")
        if self.max_drains_per_day < self.max_drains_per_hour:
            raise GoodputError(f"{where} max_drains_per_day: less than max_drains_per_hour")
        if not 0.0 < self.horizon_hours <= 24 * 366:
            raise GoodputError(f"{where} horizon_hours: {self.horizon_hours} is not in (0, 8784]")


def settings_path(store_root: Path) -> Path:
    return Path(store_root) / SETTINGS_FILE


def load_settings(store_root: Path) -> ActionSettings:
    """The store's [actions] settings, the defaults where the file or a key is absent."""
    path = settings_path(store_root)
    raw = read_regular(path, MAX_SETTINGS_BYTES)  # a FIFO or a link there is refused, never waited on
    if raw is None:
        return ActionSettings()
    try:
        table = tomllib.loads(raw.decode("utf-8")).get(SECTION, {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as err:  # ValueError: a 4,300-digit int
        raise GoodputError(f"{path}: not valid TOML: {str(err).splitlines()[0]}") from None
    except RecursionError:  # tomllib recurses: arrays nested 30,000 deep fit in 64 KiB
        raise GoodputError(f"{path}: not valid TOML: nested too deep") from None
    if not isinstance(table, dict):
        raise GoodputError(f"{path}: [{SECTION}] must be a table")
    known = {f.name: f for f in fields(ActionSettings)}
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise GoodputError(
            f"{path}: [{SECTION}] has unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    values = {}
    for name, value in table.items():
        if name in ("slurm_conf", "slurm_bin"):
            if not isinstance(value, str) or not value:
                raise GoodputError(f"{path}: [{SECTION}] {name}: give a path as a string")
        elif name in ("max_drain_share", "horizon_hours"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise GoodputError(f"{path}: [{SECTION}] {name}: {value!r} is not a number")
            value = float(value)
        values[name] = value
    try:
        return ActionSettings(**values)
    except GoodputError as err:
        raise GoodputError(f"{path}: {err}") from None
