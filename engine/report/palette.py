"""One palette and one label set for everything Goodput draws: the dashboard's charts and the HTML export.

A colour means the same thing wherever it appears (red is down, blue is training, each failure category keeps
its colour from the Overview's bars to the exported incident report, each XID code its colour on every chart),
and a cause, state or reason is shown in words ("Faulty GPU", "Burn-in"), never as its snake_case key. The
keys stay the store's and the CLI's (DESIGN "The store"); only what people read goes through here.
"""

from engine.analysis.definitions import definition
from engine.analysis.ledger import BUCKET_DEFINITIONS
from engine.reference import CAUSE_BY_KEY, CAUSES, PLANNED_CAUSE, XID_BY_CODE, XIDS
from engine.store.schema import HOST_STATES, IN_SERVICE_STATES, OUT_OF_SERVICE_STATES  # noqa: F401 (re-exported)

OTHER_COLOUR = "#bbbbbb"  # anything a scenario or trace adds that the palette does not know

# ----- host states ------------------------------------------------------------------------------------------

# Host states (engine.store.schema.HOST_STATES): available hosts in calm colours, unavailable ones in warm ones,
# from "just failed" (red) through repair (purple) to "almost back" (olive).
HOST_STATE_COLOURS: dict[str, str] = {
    "running": "#1f77b4",  # training: blue
    "healthy": "#2ca02c",  # up and idle: green
    "spare": "#17becf",  # held back for the flagship job: teal
    "draining": "#ff7f0e",  # leaving service: orange
    "down": "#d62728",  # failed: red
    "diagnosing": "#e377c2",  # DCGM diagnostics: pink
    "repair": "#9467bd",  # hands-on repair or RMA: purple
    "burn_in": "#bcbd22",  # stress test before return: olive
    "retired": "#7f7f7f",  # out for good (retirement.policy): grey
}
assert set(HOST_STATE_COLOURS) == set(HOST_STATES), "every host state needs a colour"

HOST_STATE_LABELS: dict[str, str] = {
    "running": "Running a job",
    "healthy": "Healthy",  # in service and running no job (in a fault history: not out)
    "spare": "Spare",
    "draining": "Draining",
    "down": "Down",
    "diagnosing": "Diagnosing",
    "repair": "In repair",
    "burn_in": "Burn-in",
    "retired": "Retired",
}
assert set(HOST_STATE_LABELS) == set(HOST_STATES), "every host state needs a label"

# A GPU with an incident not yet repaired (the Racks and GPUs pages), on a host that may still be running.
# Black: darker than every state colour, so it cannot pass for running (blue) or down (red) at a few pixels a
# cell, whatever the reader's colour vision (it differs from each by lightness, not hue alone).
GPU_FAILED_COLOUR = "#000000"
GPU_FAILED_LABEL = "Failed GPU"
UNKNOWN_STATE_COLOUR = "#dee2e6"  # no host_states interval covers the moment shown
UNKNOWN_STATE_LABEL = "No state recorded"


# ----- failure categories and causes ------------------------------------------------------------------------

# Failure categories of the Llama 3 table (engine.reference.CAUSES) plus planned interruptions.
CATEGORY_COLOURS: dict[str, str] = {
    "GPU": "#d62728",
    "Host": "#ff7f0e",
    "Network": "#9467bd",
    "Dependency": "#8c564b",
    "Unplanned maintenance": "#e377c2",
    "Unknown": "#7f7f7f",
    "Planned": "#17becf",
}
assert {c.category for c in CAUSES} <= set(CATEGORY_COLOURS), "every reference category needs a colour"


def category_of(cause: str) -> str:
    """The category of a cause key ("Planned" for planned maintenance, "Unknown" for unknown causes)."""
    if cause == PLANNED_CAUSE.cause:
        return PLANNED_CAUSE.category
    known = CAUSE_BY_KEY.get(cause)
    return known.category if known else "Unknown"


def cause_label(cause: str) -> str:
    """The reference table's label for a cause key ("Faulty GPU"), else the key made readable."""
    if cause == PLANNED_CAUSE.cause:
        return PLANNED_CAUSE.label
    known = CAUSE_BY_KEY.get(cause)
    if known:
        return known.label
    return readable(cause)


def readable(key: str) -> str:
    """A snake_case key as words, first letter upper: "end_of_run" -> "End of run".

    Upper first letter and lower rest, not str.capitalize, because dashboard.charts.text_exprs mirrors it with
    Polars expressions, which have no title case."""
    words = key.replace("_", " ")
    return words[:1].upper() + words[1:].lower()


def cause_colour(cause: str) -> str:
    """A cause takes its category's colour, so the bars of one category read as one group."""
    return CATEGORY_COLOURS.get(category_of(cause), OTHER_COLOUR)


def category_colour(category: str | None) -> str:
    return CATEGORY_COLOURS.get(category or "", OTHER_COLOUR)


def state_colour(state: str) -> str:
    return HOST_STATE_COLOURS.get(state, OTHER_COLOUR)


def state_label(state: str) -> str:
    return HOST_STATE_LABELS.get(state) or readable(state)


# ----- XIDs -------------------------------------------------------------------------------------------------

# Each XID code of the catalogue keeps one colour on every chart: fatal codes (engine.reference.Xid.fatal) in
# reds and purples, the others in greys, blues and greens, assigned in catalogue order so that a chart showing
# only some codes does not recolour them.
_FATAL_SHADES = (
    "#c92a2a",
    "#e8590c",
    "#f08c00",
    "#a61e4d",
    "#862e9c",
    "#d6336c",
    "#5c0011",
    "#ff6b6b",
    "#9c36b5",
)
_OTHER_SHADES = ("#495057", "#1c7ed6", "#0ca678", "#868e96", "#5f3dc4", "#3bc9db", "#74b816", "#adb5bd")


def _xid_colours() -> dict[int, str]:
    fatal = [x.xid for x in XIDS if x.fatal]
    other = [x.xid for x in XIDS if not x.fatal]
    assert len(fatal) <= len(_FATAL_SHADES) and len(other) <= len(_OTHER_SHADES), "an XID code needs a shade"
    return dict(zip(fatal, _FATAL_SHADES, strict=False)) | dict(zip(other, _OTHER_SHADES, strict=False))


XID_COLOURS: dict[int, str] = _xid_colours()
XID_OTHER_COLOUR = "#ced4da"  # a code outside the catalogue (read from a real log)


def xid_colour(xid: int) -> str:
    return XID_COLOURS.get(xid, XID_OTHER_COLOUR)


def xid_label(xid: int) -> str:
    """ "79 GPU_HAS_FALLEN_OFF_THE_BUS", or the bare code when the catalogue does not know it."""
    known = XID_BY_CODE.get(xid)
    return f"{xid} {known.mnemonic}" if known else str(xid)


# ----- the goodput ledger -----------------------------------------------------------------------------------

# Productive time and the losses of a job (engine.analysis.ledger.BUCKETS): green is progress, the rest is badput.
LOSS_COLOURS: dict[str, str] = {
    "productive": "#2ca02c",
    "lost_work": "#d62728",
    "restart": "#ff7f0e",
    "checkpoint": "#1f77b4",
    "waiting_for_spares": "#9467bd",
    "degraded": "#e377c2",  # training lost with data-parallel replicas out (replica_drop)
    "slowdown": "#bcbd22",  # training lost at the pace of a fail-slow host (engine.sim.slow)
    "network_slowdown": "#8c564b",
}
# Each bucket is named by its definition (engine/analysis/definitions/goodput.py), on every chart and in every export.
LOSS_LABELS: dict[str, str] = {bucket: definition(key).label for bucket, key in BUCKET_DEFINITIONS.items()}
assert set(LOSS_LABELS) == set(LOSS_COLOURS), "every ledger bucket needs a colour"

# ----- job attempts -----------------------------------------------------------------------------------------

# How an attempt ended (job_attempts.end_reason): a failure cause key is a failure, the rest are these.
CLEAN_END_REASONS: tuple[str, ...] = (
    "completed",
    "end_of_run",
    "preempted",
    "planned_maintenance",
    "running",
    "fail_slow_swap",
    "fail_slow_drain",
)
END_REASON_COLOURS: dict[str, str] = {
    "completed": "#2ca02c",
    "end_of_run": "#7f7f7f",
    "running": "#1f77b4",
    "preempted": "#ff7f0e",
    "planned_maintenance": "#17becf",  # the Planned category's colour
    "fail_slow_swap": "#bcbd22",  # a fail-slow host swapped out (slow.policy = swap): the slowdown bucket's colour
    "fail_slow_drain": "#dbdb8d",  # a fail-slow host drained at an interruption (slow.policy = drain)
    "failure": "#d62728",
}
END_REASON_LABELS: dict[str, str] = {
    "completed": "Completed",
    "end_of_run": "Still running at the end of the run",
    "running": "Running",
    "preempted": "Preempted",
    "planned_maintenance": "Planned maintenance",
    "fail_slow_swap": "Fail-slow host swapped out",
    "fail_slow_drain": "Fail-slow host drained",
    "failure": "Failure",
}


def end_reason_label(reason: str) -> str:
    """An attempt's end in words: a clean end by name, a failure by its cause ("Faulty GPU")."""
    return END_REASON_LABELS.get(reason) or cause_label(reason)


# Why a job waited (engine.scheduling.wait_reasons.REASONS, jobs.wait_reason); a job that waited with no recorded reason
# (a trace replayed as recorded) is shown as NO_WAIT_REASON.
NO_WAIT_REASON = "not_recorded"
WAIT_REASON_COLOURS: dict[str, str] = {
    "no_capacity": "#1f77b4",
    "fragmentation": "#ff7f0e",
    "priority": "#9467bd",
    "failed_hosts": "#d62728",
    NO_WAIT_REASON: OTHER_COLOUR,
}
WAIT_REASON_LABELS: dict[str, str] = {
    "no_capacity": "No free capacity",
    "fragmentation": "Fragmentation (no whole hosts free)",
    "priority": "Higher-priority jobs first",
    "failed_hosts": "Hosts failed or in repair",
    NO_WAIT_REASON: "Reason not recorded",
}


def wait_reason_label(reason: str) -> str:
    return WAIT_REASON_LABELS.get(reason) or readable(reason)


# ----- network tiers ----------------------------------------------------------------------------------------

# Fabric tiers from the GPU up (links.tier), RoCE and InfiniBand names side by side.
TIER_ORDER: tuple[str, ...] = ("gpu_rtsw", "gpu_leaf", "rtsw_ctsw", "leaf_spine", "ctsw_atsw", "spine_core")
TIER_LABELS: dict[str, str] = {
    "gpu_rtsw": "NIC cables (GPU to rack switch)",
    "gpu_leaf": "NIC cables (GPU to leaf)",
    "rtsw_ctsw": "Rack uplinks (rack to cluster switch)",
    "leaf_spine": "Rack uplinks (leaf to spine)",
    "ctsw_atsw": "Core links (cluster to aggregation switch)",
    "spine_core": "Core links (spine to core)",
}
# One colour a level of the fabric, the same on RoCE and InfiniBand.
TIER_COLOURS: dict[str, str] = {
    "gpu_rtsw": "#2b8a3e",
    "rtsw_ctsw": "#1971c2",
    "ctsw_atsw": "#c2255c",
    "gpu_leaf": "#2b8a3e",
    "leaf_spine": "#1971c2",
    "spine_core": "#c2255c",
}


def tier_colour(tier: str) -> str:
    return TIER_COLOURS.get(tier, OTHER_COLOUR)


def tier_label(tier: str) -> str:
    return TIER_LABELS.get(tier) or readable(tier)
