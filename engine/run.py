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
