"""Node events asked of slurmdbd itself: `sacctmgr --parsable2 show event` over a window, run the way
engine/ingest/slurm.py runs sacct (a subprocess with a deadline and an output bound, TZ=UTC so every time it
prints is UTC, SLURM_CONF from the source), its answer read as it streams (engine/ingest/node_events/read.py).

    read_window(SlurmSource(conf="/etc/slurm/slurm.conf"), since, until)   -> Read of the node events
"""

from datetime import UTC, datetime

from engine import limits
from engine.ingest.inflate import BLOCK_BYTES, cut_lines
from engine.ingest.node_events.read import Read, read_sacctmgr
from engine.ingest.slurm import TIME_FORMAT, SlurmSource

# Reason last: sacctmgr does not quote a `|` inside a reason, and the reader joins extra fields back into it.
FORMAT = "NodeName,TimeStart,TimeEnd,State,User,Reason"


def sacctmgr_args(since: datetime, until: datetime) -> list[str]:
    """Every node event that overlaps [since, until) (UTC), as `--parsable2` text with its header."""
    return [
        "--parsable2",
        "show",
        "event",
        "event=node",
        f"start={since.astimezone(UTC).strftime(TIME_FORMAT)}",
        f"end={until.astimezone(UTC).strftime(TIME_FORMAT)}",
        f"format={FORMAT}",
    ]


def read_window(source: SlurmSource, since: datetime, until: datetime) -> Read:
    """The node events slurmdbd holds for [since, until); a SlurmError naming the command when it fails."""
    args = sacctmgr_args(since, until)
    shown = source.shown("sacctmgr", *args)
    chunks = source.stream("sacctmgr", *args, limit=limits.MAX_INPUT_BYTES)
    try:
        read = read_sacctmgr(cut_lines(shown, chunks, BLOCK_BYTES), shown)
    finally:
        chunks.close()  # a refusal mid-answer kills sacctmgr
    read.name = "sacctmgr show event"
    return read
