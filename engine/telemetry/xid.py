"""XID events: the NVRM lines a GPU incident prints in the kernel log, kept as events and counted per window.

Each GPU incident starts with its primary XID (the incidents' `xid` column, set by the simulator from
../shared/reference/xid_catalog.csv) and continues with the lines real drivers print after it: a GPU that falls
off the bus (79) takes the job down, so the host's other GPUs log 45 (preemptive channel removal); a double-bit
error (48) is followed by a row remap (63); SM exceptions (13) come in bursts ending in a channel reset (43);
GSP timeouts (119) repeat and end in a GSP error (120). HBM failures are also preceded by row remaps (63) and an
excessive single-bit-error warning (92) in the days before: the precursors Meta tracks against thresholds
(reference README §2). Timings are fixed per step; only pids and the numbers inside messages are drawn.

`message` is the text after the kernel's timestamp, `NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>',
name=<unknown>, GPU has fallen off the bus.`, so the kernel-log parser reads back what the simulator wrote.
"""

import numpy as np
import polars as pl

from engine.errors import GoodputError
from engine.reference import XID_BY_CODE
from engine.store.schema import polars_schema
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

XID_EVENT_SCHEMA = polars_schema("xid_events")

# PCI bus of each GPU slot on an 8-GPU HGX H100 baseboard (as `nvidia-smi` lists them on such servers); slots
# past 8 continue the pattern so any host size gets distinct buses.
_HGX_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


def pci_bus_id(index: int) -> str:
    """`0000:18:00` for GPU slot 0: the PCI address the NVRM lines name (domain:bus:device)."""
    bus = _HGX_BUSES[index] if index < len(_HGX_BUSES) else (0x04 + 3 * index) % 256
    return f"0000:{bus:02x}:00"


SELF, OTHERS = "self", "others"
# primary XID -> (follow-on XID, seconds after the primary, which GPUs print it). The primary itself is step 0.
FOLLOW_ONS: dict[int, tuple[tuple[int, float, str], ...]] = {
    79: ((45, 0.2, OTHERS),),  # the job aborts: every other GPU of the host tears down its channels
    74: ((45, 0.1, SELF),),
    48: ((63, 0.01, SELF), (45, 0.1, SELF)),  # DBE -> the row is marked for remapping -> channels cleaned up
    64: ((45, 0.1, SELF),),
    94: ((63, 0.01, SELF),),
    95: ((63, 0.01, SELF), (45, 0.1, SELF)),
    13: ((13, 0.0001, SELF), (13, 0.0002, SELF), (13, 0.0003, SELF), (43, 0.5, SELF)),  # SM exception burst
    31: ((43, 0.5, SELF),),
    119: ((119, 6.0, SELF), (120, 12.0, SELF)),  # the next RPC times out as well, then GSP gives up
    120: ((45, 0.1, SELF),),
    61: ((62, 0.1, SELF),),
    62: ((45, 0.1, SELF),),
}
# cause -> (XID, seconds before the incident): what a failing HBM stack prints in the days before it fails.
PRECURSORS: dict[str, tuple[tuple[int, float], ...]] = {
    "gpu_hbm3": ((63, 2 * SECONDS_PER_DAY), (63, SECONDS_PER_DAY), (92, 6 * SECONDS_PER_HOUR)),
}
# XIDs the driver raises in the context of the process that hit them; the rest print pid='<unknown>'.
# (Real logs: 43 carries `pid=2924364, name=pt_main_thread`, PyTorch's main thread; 13 and 79 print unknown.)
IN_PROCESS = (31, 43, 45, 94)
PROCESS_NAME = "pt_main_thread"


def _steps() -> pl.DataFrame:
    rows = [(code, 0, code, 0.0, SELF) for code in XID_BY_CODE]
    rows += [
        (primary, step + 1, xid, delay, scope)
        for primary, follow in FOLLOW_ONS.items()
        for step, (xid, delay, scope) in enumerate(follow)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "primary": pl.Int64,
            "step": pl.Int64,
            "xid": pl.Int64,
            "delay_s": pl.Float64,
            "scope": pl.String,
        },
        orient="row",
    )


def _precursor_steps() -> pl.DataFrame:
    rows = [
        (cause, -len(seq) + i, xid, -lead)
        for cause, seq in PRECURSORS.items()
        for i, (xid, lead) in enumerate(seq)
    ]
    return pl.DataFrame(
        rows,
        schema={"cause": pl.String, "step": pl.Int64, "xid": pl.Int64, "delay_s": pl.Float64},
        orient="row",
    )


def xid_events(incidents: pl.DataFrame, gpus: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """The xid_events table for `incidents`, sorted by (t_s, incident_id, step).

    Incidents without an XID (non-GPU causes) or without a GPU emit nothing; precursor lines that would fall
    before the run's start (t < 0) are dropped.
    """
    for frame, name, columns in (
        (incidents, "incidents", ("incident_id", "t_s", "gpu_id", "xid")),
        (gpus, "gpus", ("gpu_id", "host_id", "index")),
    ):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise GoodputError(f"{name}: missing column(s) {', '.join(missing)} needed for XID events")
    inc = (
        incidents.filter(pl.col("xid").is_not_null() & pl.col("gpu_id").is_not_null())
        .select(
            pl.col("incident_id").cast(pl.Int64),
            pl.col("t_s").cast(pl.Float64),
            pl.col("gpu_id").cast(pl.Int64),
            pl.col("xid").cast(pl.Int64).alias("primary"),
            (
                pl.col("cause").cast(pl.String) if "cause" in incidents.columns else pl.lit(None, pl.String)
            ).alias("cause"),
        )
        .sort("t_s", "incident_id")
    )
    unknown = inc.filter(~pl.col("primary").is_in(list(XID_BY_CODE)))
    if unknown.height:
        raise GoodputError(
            f"incidents: incident {unknown['incident_id'][0]} has XID {unknown['primary'][0]}, "
            f"which is not in the XID catalogue ({', '.join(map(str, XID_BY_CODE))})"
        )
    fleet = gpus.select(
        pl.col("gpu_id").cast(pl.Int64), pl.col("host_id").cast(pl.Int64), pl.col("index").cast(pl.Int64)
    )
    inc = inc.join(fleet, on="gpu_id", how="inner", maintain_order="left")
    # one pid per incident: the training process that was running on the failing GPU's host
    inc = inc.with_columns(pl.Series("pid", rng.integers(1000, 4_194_304, size=inc.height), dtype=pl.Int64))

    steps = inc.join(_steps(), on="primary", how="inner")
    own = steps.filter(pl.col("scope") == SELF)
    others = (
        steps.filter(pl.col("scope") == OTHERS)
        .drop("index")
        .join(fleet.rename({"gpu_id": "other_gpu"}), on="host_id", how="inner")
        .filter(pl.col("other_gpu") != pl.col("gpu_id"))
        .with_columns(pl.col("other_gpu").alias("gpu_id"))
        .drop("other_gpu")
    )
    before = inc.join(_precursor_steps(), on="cause", how="inner").filter(
        pl.col("t_s") + pl.col("delay_s") >= 0
    )
    columns = ["incident_id", "t_s", "delay_s", "gpu_id", "host_id", "index", "xid", "pid", "step"]
    events = (
        pl.concat([own.select(columns), others.select(columns), before.select(columns)])
        .with_columns((pl.col("t_s") + pl.col("delay_s")).alias("t_s"))
        .sort("t_s", "incident_id", "step", "gpu_id")
    )
    return _with_messages(events, rng)


def _with_messages(events: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    n = events.height
    numbers = {"a": rng.integers(0, 12, n), "b": rng.integers(0, 8, n), "c": rng.integers(0, 2, n)}
    hexes = {
        "ch": np.char.mod("%08x", rng.integers(1, 64, n)),
        "row": np.char.mod("%016x", rng.integers(1, 2**20, n)),
        "addr": np.char.mod("%08x", rng.integers(0, 2**32, n)),
    }
    slots = events["index"].unique().to_list()
    events = events.with_columns(
        *(pl.Series(name, values, dtype=pl.Int64) for name, values in numbers.items()),
        *(pl.Series(name, values.astype(str), dtype=pl.String) for name, values in hexes.items()),
        pl.col("index")
        .replace_strict({i: pci_bus_id(i) for i in slots}, return_dtype=pl.String)
        .alias("bus"),
    )
    # one training process (rank) per GPU: the ranks of a host have consecutive pids
    who = (
        pl.when(pl.col("xid").is_in(IN_PROCESS))
        .then(pl.format("pid={}, name={}", pl.col("pid") + pl.col("index"), pl.lit(PROCESS_NAME)))
        .otherwise(pl.lit("pid='<unknown>', name=<unknown>"))
    )
    message = pl.format("NVRM: Xid (PCI:{}): {}, {}, {}", pl.col("bus"), pl.col("xid"), who, _detail())
    return events.select(
        pl.col("t_s"),
        pl.col("gpu_id").cast(pl.Int32),
        pl.col("host_id").cast(pl.Int32),
        pl.col("xid").cast(pl.Int32),
        pl.col("incident_id").cast(pl.Int32),
        message.alias("message"),
    ).cast(XID_EVENT_SCHEMA)


def _detail() -> pl.Expr:
    """The driver's wording after pid/name for each XID (as real NVRM lines print it)."""
    a, b, c, ch = pl.col("a"), pl.col("b"), pl.col("c"), pl.col("ch")
    texts = {
        13: pl.format("Graphics SM Warp Exception on (GPC {}, TPC {}, SM {}): Out Of Range Address", a, b, c),
        31: pl.format(
            "Ch {}, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_{} faulted @ 0x7f_{}. "
            "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
            ch,
            b,
            pl.col("addr"),
        ),
        43: pl.format("Ch {}", ch),
        45: pl.format("Ch {}", ch),
        48: pl.format(
            "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
            "at partition {}, subpartition {}.",
            a,
            c,
        ),
        63: pl.format(
            "Row Remapper: New row (0x{}) marked for remapping, reset gpu to activate.", pl.col("row")
        ),
        64: pl.format(
            "Row Remapper Error: row (0x{}) could not be remapped, no spare rows left.", pl.col("row")
        ),
        74: pl.format(
            "NVLink: fatal error detected on link {}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", a + b
        ),
        79: pl.lit("GPU has fallen off the bus."),
        92: pl.lit("High single-bit ECC error rate"),
        94: pl.lit("Contained: SM (0x1). RST: No, D-RST: No"),
        95: pl.lit("Uncontained: FBHUB. RST: Yes, D-RST: No"),
        119: pl.format(
            "Timeout after 6s of waiting for RPC response from GPU{} GSP! Expected function 76 "
            "(GSP_RM_CONTROL) (0x20800a4c 0x4).",
            pl.col("index"),
        ),
        120: pl.format(
            "GSP Error: Task 1 raised error code 0x5 for reason 0x0 at 0x{} (0 more errors skipped)",
            pl.col("addr"),
        ),
    }
    detail = pl.lit(None, dtype=pl.String)
    for code in XID_BY_CODE:  # codes without a wording of their own print the catalogue's meaning
        text = texts.get(code, pl.lit(XID_BY_CODE[code].meaning))
        detail = pl.when(pl.col("xid") == code).then(text).otherwise(detail)
    return detail


def xid_counts(xid_events: pl.DataFrame, window_s: float) -> pl.DataFrame:
    """(t_s window start, xid, count) of the events in each window, every window with at least one event.

    The DCGM exporter's XID gauge holds only the last XID and never resets, so a burst of 13s and a single 79
    look alike there; counts per window keep both.
    """
    if not window_s > 0:
        raise GoodputError(f"xid_counts: the window must be positive, got {window_s!r}")
    return (
        xid_events.select(
            (pl.col("t_s") / window_s).floor().mul(window_s).alias("t_s"), pl.col("xid").cast(pl.Int32)
        )
        .group_by("t_s", "xid")
        .agg(pl.len().cast(pl.Int64).alias("count"))
        .sort("t_s", "xid")
    )
