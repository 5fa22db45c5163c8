"""What an ingested run read (`goodput ingest --json`): telemetry values and XID events."""

from engine.analysis.definitions import Definition, section

SECTION = "Telemetry"


_d = section(SECTION)


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "samples_read",
        "Metric values read",
        "count",
        "Telemetry values ingested: one per DCGM field value of one GPU at one time (summary samples).",
        "engine.ingest (summary samples)",
    ),
    _d(
        "xid_events",
        "XID events",
        "count",
        "NVIDIA driver errors (XIDs and NVSwitch SXids) over the whole run, one per line a kernel log holds (or "
        "per XID the simulator drew): the xid_events table, and `goodput ingest --json`'s xid_events. Not the "
        "DCGM exporter's XID gauge, which holds only the last code a GPU reported. An XID is not an incident "
        "until it stops a GPU.",
        "xid_events table (summary xid_events)",
        "incidents",
    ),
)
