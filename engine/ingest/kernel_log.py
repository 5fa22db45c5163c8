"""Read NVRM Xid and NVSwitch SXid lines out of kernel logs, in every format operators hand over.

Formats (one per line, so a file may mix them):
  dmesg            `[6781741.548768] NVRM: Xid (PCI:0000:91:00): 79, ...`        seconds since boot
  dmesg -T         `[Mon Dec  2 10:11:12 2024] NVRM: ...`                         wall clock
  dmesg iso        `kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: ...`   wall clock (--time-format iso -x)
  journal          `2024-12-02T10:11:12+0000 host kernel: NVRM: ...`              wall clock (journalctl -o short-iso)
  syslog           `Dec  2 10:11:12 host kernel: [123.4] NVRM: ...`               wall clock, no year
  /dev/kmsg        `4,1234,5678901,-;NVRM: ...`                                   microseconds since boot

A log has plenty of other lines; those are counted as "other lines", never errors. A line that announces an
XID (`NVRM: Xid`, `SXid (`) but is truncated or garbled is an error naming the file and line, as is an XID line
whose time cannot be read. The lines `NVRM: GPU at PCI:0000:91:00: GPU-<uuid>` give the bus-id-to-UUID map.

Bounds (engine/limits.py, worded in engine/ingest/bounds.py) are errors naming the line: a line longer than
MAX_LINE_BYTES, an XID line stamped before 2000 or over a day ahead of this machine, since-boot stamps spanning
more than MAX_RUN_DAYS, a host with more GPUs (by bus id) than MAX_GPUS_PER_HOST.
"""

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.ingest import bounds
from engine.ingest.sources import Source, decode
from engine.units import SECONDS_PER_DAY

_PCI = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
_XID = rf"NVRM: Xid \(PCI:({_PCI})\): ([0-9]+)(?:,[ \t]*(.*))?$"
_SXID = rf"(nvidia-nvswitch[0-9]+): SXid \(PCI:({_PCI})\): ([0-9]+)(?:,[ \t]*(.*))?$"
_GPU_AT = rf"NVRM: GPU at PCI:({_PCI}): (GPU-[0-9a-fA-F-]+)"

# Timestamp prefixes, tried in order; each leaves the rest of the line in its last group.
_DMESG = r"^\[[ \t]*([0-9]+\.[0-9]+)\][ \t]?(.*)$"
_DMESG_T = r"^\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]?[0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4})\][ \t]?(.*)$"
_ISO = (
    r"^(?:[a-z]+[ \t]*:[a-z]+[ \t]*:[ \t]*)?"
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]{1,9})?)(Z|[+-][0-9]{2}:?[0-9]{2})?"
    r"[ \t]+(.*)$"
)
_SYSLOG = r"^([A-Z][a-z]{2}[ \t]+[0-9]{1,2} [0-9]{2}:[0-9]{2}:[0-9]{2})[ \t]+(.*)$"
_KMSG = r"^[0-9]+,[0-9]+,([0-9]+),[^;]*;(.*)$"
# After a wall-clock stamp, journal and syslog lines name the host and the kernel, and syslog may keep the
# dmesg stamp too: `host kernel: [123.456] NVRM: ...`.
_HOST_KERNEL = r"^([A-Za-z0-9_.-]+) kernel:[ \t]*(?:\[[ \t]*[0-9]+\.[0-9]+\][ \t]*)?(.*)$"


@dataclass
class KernelEvents:
    """XID and SXid lines of some kernel logs.

    `events`: source (UInt32), line (UInt32), host (String, null where the line names none), kind (`xid` or
    `sxid`), pci (`0000:3b:00`, the GPU's or switch's bus), device (nvswitch name or null), code (Int32),
    message (String), t_abs_us (Int64, wall clock in microseconds; null for since-boot stamps), t_rel_s
    (Float64, seconds after the file's first since-boot stamp; null for wall-clock stamps).
    `uuids`: source, host, pci, uuid from `NVRM: GPU at` lines.
    """

    events: pl.DataFrame
    uuids: pl.DataFrame
    other_lines: int = 0
    sources: list[Source] = field(default_factory=list)


def normalise_pci(expr: pl.Expr) -> pl.Expr:
    """`00000000:3B:00.0` (DCGM) and `0000:3b:00` (NVRM) -> `0000:3b:00`: 4-digit domain, bus, device."""
    parts = expr.str.to_lowercase().str.extract_groups(r"^([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})")
    return pl.concat_str(
        parts.struct.field("1").str.slice(-4),
        pl.lit(":"),
        parts.struct.field("2"),
        pl.lit(":"),
        parts.struct.field("3"),
    )


def parse_kernel_logs(sources: list[Source], *, year: int | None = None) -> KernelEvents:
    """Parse every source. Syslog stamps carry no year: the file's (or `year`, or this year) is assumed."""
    parsed = [_parse_one(source, i, year=year) for i, source in enumerate(sources)]
    return KernelEvents(
        events=pl.concat([p[0] for p in parsed], how="vertical"),
        uuids=pl.concat([p[1] for p in parsed], how="vertical"),
        other_lines=sum(p[2] for p in parsed),
        sources=list(sources),
    )


def _parse_one(source: Source, index: int, *, year: int | None) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    lines = _numbered_lines(source, index)
    window = bounds.file_window()
    if year is None:
        year = _year_of(source, window)
    # Only lines that may be XID or UUID lines need their stamps read; since-boot times count from the file's
    # first since-boot stamp, whatever that line says.
    since_boot = pl.col("text").str.contains(_DMESG) | pl.col("text").str.contains(_KMSG)
    first_boot = _split_stamps(lines.filter(since_boot).head(1), year, 0.0)["boot_s"]
    origin = first_boot[0] if first_boot.len() else 0.0
    total = lines.height
    wanted = pl.col("text").str.contains("Xid", literal=True) | pl.col("text").str.contains(
        "GPU at PCI:", literal=True
    )
    lines = _split_stamps(lines.filter(wanted), year, origin)
    events = _xid_events(source, lines)
    _check_bounds(source, index, events, window)
    uuids = (
        lines.filter(pl.col("body").str.contains("NVRM: GPU at PCI:", literal=True))
        .select("source", "host", pl.col("body").str.extract_groups(_GPU_AT).alias("m"))
        .select(
            "source",
            "host",
            normalise_pci(pl.col("m").struct.field("1")).alias("pci"),
            pl.col("m").struct.field("2").alias("uuid"),
        )
        .drop_nulls(["pci", "uuid"])
    )
    return events.drop("text").with_columns(pl.col("message").fill_null("")), uuids, total - events.height


def _numbered_lines(source: Source, index: int) -> pl.DataFrame:
    """The file's lines (text, 1-based line, source index), their lengths checked."""
    text = decode(source, strict=False)  # kernel logs carry stray bytes; only XID lines must be well formed
    lines = (
        pl.DataFrame({"text": [text]})
        .select(pl.col("text").str.split("\n"))
        .explode("text")
        .with_row_index("line", offset=1)
        .with_columns(pl.col("text").str.strip_suffix("\r"), pl.lit(index, pl.UInt32).alias("source"))
    )
    if text.endswith("\n"):
        lines = lines.slice(0, lines.height - 1)
    bounds.check_line_lengths(source.name, lines.select("line", nbytes=pl.col("text").str.len_bytes()))
    return lines


def _year_of(source: Source, window: bounds.Window) -> int:
    """The year of stamps that carry none (syslog): the file's mtime's, else this year."""
    stamp = source.mtime if source.mtime is not None else time.time()
    if not window.lo_ms <= stamp * 1000 <= window.hi_ms:  # an mtime of 0 says nothing about the year
        stamp = time.time()
    return datetime.fromtimestamp(stamp, UTC).year


def _xid_events(source: Source, lines: pl.DataFrame) -> pl.DataFrame:
    """The NVRM Xid and NVSwitch SXid lines as events (pci, device, code, message, stamps), checked."""
    is_xid = pl.col("body").str.contains("NVRM: Xid", literal=True)
    is_sxid = pl.col("body").str.contains(": SXid (", literal=True) | pl.col("body").str.contains(
        "SXid (PCI", literal=True
    )
    lines = lines.with_columns(kind=pl.when(is_xid).then(pl.lit("xid")).when(is_sxid).then(pl.lit("sxid")))
    xid = lines.filter(pl.col("kind") == "xid").with_columns(m=pl.col("body").str.extract_groups(_XID))
    sxid = lines.filter(pl.col("kind") == "sxid").with_columns(m=pl.col("body").str.extract_groups(_SXID))
    for frame, what in ((xid, "NVRM Xid"), (sxid, "NVSwitch SXid")):
        bad = frame.filter(pl.col("m").struct.field("1").is_null())
        if bad.height:
            raise _error(source, bad, f"truncated or garbled {what} line")
    field = pl.col("m").struct.field
    stamps_and_text = ("t_abs_us", "t_rel_s", "text")
    events = (
        pl.concat(
            [
                xid.select(
                    "source",
                    "line",
                    "host",
                    "kind",
                    field("1").alias("pci"),
                    pl.lit(None, pl.String).alias("device"),
                    field("2").alias("code"),
                    field("3").alias("message"),
                    *stamps_and_text,
                ),
                sxid.select(
                    "source",
                    "line",
                    "host",
                    "kind",
                    field("2").alias("pci"),
                    field("1").alias("device"),
                    field("3").alias("code"),
                    field("4").alias("message"),
                    *stamps_and_text,
                ),
            ]
        )
        .sort("line")
        .with_columns(pl.col("code").cast(pl.Int32, strict=False), normalise_pci(pl.col("pci")).alias("pci"))
    )
    bad = events.filter(pl.col("code").is_null())
    if bad.height:
        raise _error(source, bad, "XID code out of range")
    bad = events.filter(pl.col("t_abs_us").is_null() & pl.col("t_rel_s").is_null())
    if bad.height:
        raise _error(
            source,
            bad,
            "XID line without a timestamp Goodput reads (dmesg, dmesg -T, iso, journal, syslog or /dev/kmsg)",
        )
    return events


def _check_bounds(source: Source, index: int, events: pl.DataFrame, window: bounds.Window) -> None:
    """Clocks in range, since-boot stamps within a run's span, GPUs per host (each XID GPU is a bus id)."""
    wall_ms = pl.col("t_abs_us") // 1000
    bad = events.filter(pl.col("t_abs_us").is_not_null() & ~bounds.in_window(wall_ms, window))
    if bad.height:
        row = bad.sort("line").row(0, named=True)
        raise bounds.time_error(source.name, row["line"], row["t_abs_us"] // 1000, window)
    # Since-boot times count from the file's first since-boot stamp (0): every one must lie within a run's span.
    far = events.filter(pl.col("t_rel_s").abs() > limits.MAX_RUN_DAYS * SECONDS_PER_DAY).sort("line")
    if far.height:
        row = far.row(0, named=True)
        raise GoodputError(
            f"{source.name}, line {row['line']}: {row['t_rel_s']:,.0f} s from the file's first"
            f" since-boot stamp, more than a run may span ({limits.MAX_RUN_DAYS:,} days,"
            " engine/limits.py MAX_RUN_DAYS)"
        )
    gpus = events.filter(pl.col("kind") == "xid").select(
        pl.coalesce(pl.col("host"), pl.lit(source.stem)).alias("hostname"),
        pl.col("pci").alias("key"),
        pl.lit(0, pl.UInt32).alias("source"),
        "line",
    )
    bounds.check_hosts_and_gpus([source.name], gpus)


def _split_stamps(lines: pl.DataFrame, year: int, origin: float) -> pl.DataFrame:
    """Add host, body, t_abs_us (wall clock) and t_rel_s (since the file's first since-boot stamp)."""
    text = pl.col("text")
    dmesg, dmesg_t = text.str.extract_groups(_DMESG), text.str.extract_groups(_DMESG_T)
    iso, syslog, kmsg = (
        text.str.extract_groups(_ISO),
        text.str.extract_groups(_SYSLOG),
        text.str.extract_groups(_KMSG),
    )
    boot_s = pl.coalesce(
        dmesg.struct.field("1").cast(pl.Float64, strict=False),
        kmsg.struct.field("1").cast(pl.Float64, strict=False) / 1e6,
    )
    iso_text = pl.concat_str(
        iso.struct.field("1").str.replace(",", ".", literal=True),
        iso.struct.field("2")
        .fill_null("+0000")
        .str.replace("Z", "+0000", literal=True)
        .str.replace(":", "", literal=True),
    )
    wall = pl.coalesce(
        dmesg_t.struct.field("1")
        .str.replace_all(r"\s+", " ")
        .str.strptime(pl.Datetime("us", "UTC"), "%a %b %d %H:%M:%S %Y", strict=False),
        iso_text.str.strptime(pl.Datetime("us", "UTC"), "%Y-%m-%dT%H:%M:%S%.f%z", strict=False),
        pl.concat_str(syslog.struct.field("1").str.replace_all(r"\s+", " "), pl.lit(f" {year}")).str.strptime(
            pl.Datetime("us", "UTC"), "%b %d %H:%M:%S %Y", strict=False
        ),
    )
    rest = pl.coalesce(
        dmesg.struct.field("2"),
        dmesg_t.struct.field("2"),
        iso.struct.field("3"),
        syslog.struct.field("2"),
        kmsg.struct.field("2"),
        text,
    )
    lines = lines.with_columns(boot_s=boot_s, t_abs_us=wall.dt.epoch("us"), rest=rest)
    host_kernel = pl.col("rest").str.extract_groups(_HOST_KERNEL)
    return lines.with_columns(
        host=host_kernel.struct.field("1"),
        body=pl.coalesce(host_kernel.struct.field("2"), pl.col("rest")),
        t_rel_s=pl.when(pl.col("t_abs_us").is_null()).then(pl.col("boot_s") - origin),
    )


def _error(source: Source, bad: pl.DataFrame, what: str) -> GoodputError:
    row = bad.sort("line").row(0, named=True)
    text = row["text"] if len(row["text"]) <= 100 else row["text"][:100] + "..."
    return GoodputError(f"{source.name}, line {row['line']}: {what}: {text!r}")
