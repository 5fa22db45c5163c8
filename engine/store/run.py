"""A Run: what simulate, replay and ingest all produce, whatever the source.

One flat record type out of the engine (the Ciw habit): a run's metadata plus one Polars frame per store
table. Very large tables (telemetry of a big cluster) may be given as an iterable of frames, written chunk
by chunk so memory stays flat.
"""

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl

KINDS = ("simulate", "replay", "ingest")

# The wall-clock start of a run whose date is unknown: a kernel log stamped only in seconds since boot
# (`[12345.678901] NVRM: Xid ...`, /dev/kmsg) with nothing beside it that tells the date. Its times still count
# in seconds from the run's start (the log's first line), and runs.started_at holds this flag, the Unix epoch,
# which no observed run can have (engine.ingest refuses stamps before 2000). Pages show such times as
# "+3 h 25 min from start", never as a date (dashboard.charts.common.fmt_time); the run's summary says
# `"start_known": false` and its scenario `"start": "unknown"`.
UNKNOWN_START = datetime(1970, 1, 1, tzinfo=UTC)


def start_known(started_at: datetime | None) -> bool:
    """False for a run whose wall-clock start is unknown (UNKNOWN_START, or none at all)."""
    if started_at is None:
        return False
    aware = started_at if started_at.tzinfo else started_at.replace(tzinfo=UTC)
    return aware != UNKNOWN_START


Table = pl.DataFrame | Iterable[pl.DataFrame]


def new_run_id(kind: str, now: datetime | None = None) -> str:
    """Sortable, readable and unique: `sim-20261202-165012-7f3a9c`."""
    now = now or datetime.now(UTC)
    return f"{kind[:3]}-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


@dataclass
class Run:
    kind: str
    name: str
    started_at: datetime
    duration_s: float
    scenario: dict = field(default_factory=dict)
    seed: int | None = None
    summary: dict = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    run_id: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"run kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not self.run_id:
            self.run_id = new_run_id(self.kind)
