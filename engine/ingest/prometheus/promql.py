"""PromQL text and the window's arithmetic shared by the queries: whole milliseconds, checked names, escapes,
and the selector that picks series by host the way engine/ingest/dcgm.py names hosts."""

import json
import re

from engine.errors import GoodputError
from engine.ingest import bounds

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


def window_ms(start: float, end: float) -> tuple[int, int]:
    """The window in whole milliseconds (Prometheus' own resolution), checked against engine/limits.py."""
    try:
        start_ms, end_ms = round(float(start) * 1000), round(float(end) * 1000)
    except (TypeError, ValueError, OverflowError):
        raise GoodputError(f"start {start!r} and end {end!r} must be epoch seconds") from None
    window = bounds.file_window()
    for name, t in (("start", start_ms), ("end", end_ms)):
        if not window.lo_ms <= t <= window.hi_ms:
            raise GoodputError(f"{name}: {bounds.describe_ms(t)} is outside 2000-01-01 .. a day from now")
    if end_ms < start_ms:
        raise GoodputError(f"end ({end}) is before start ({start})")
    return start_ms, end_ms


def step_for(start_ms: int, end_ms: int, points: int) -> int:
    """The step (ms) that cuts [start, end] into about `points` steps: a chart's resolution."""
    return max(1, -(-(end_ms - start_ms) // points))


def seconds(ms: int) -> str:
    return f"{ms // 1000}.{ms % 1000:03d}"


def check_metric(metric: str) -> None:
    if not _METRIC_NAME.match(metric):
        raise GoodputError(f"metric {metric!r} is not a Prometheus metric name")


def by_gpu(template: str, hosts: list[str] | None) -> str:
    """`template` (PromQL with `{sel}` where the metric's matchers go) for `hosts` (by Hostname, or by instance
    for series without one: engine/ingest/dcgm.py's rule), or for every series.

    No aggregation here: `max by (Hostname, gpu)` and `or` cost Prometheus 4x the plain query on a 24,576-GPU
    cluster (6.3 s against 1.7 s a 150-step chunk here). Series of one GPU are merged after (series.by_host_gpu)."""
    if hosts is None:
        return template.replace("{sel}", "")
    if not hosts:
        raise GoodputError("hosts: give at least one host, or None for all")
    pattern = promql_string("|".join(re2_escape(h) for h in hosts))
    named, bare = f"{{Hostname=~{pattern}}}", f'{{Hostname="",instance=~{pattern}}}'
    return f"{template.replace('{sel}', named)} or {template.replace('{sel}', bare)}"


def host_label(expr: str, label: str) -> str:
    """`expr` with a label `label` naming each series' host as dcgm.py does: Hostname, else instance."""
    with_instance = f'label_replace({expr}, "{label}", "$1", "instance", "(.*)")'
    return f'label_replace({with_instance}, "{label}", "$1", "Hostname", "(.+)")'


def re2_escape(text: str) -> str:
    """A literal for Prometheus' RE2 regular expressions (punctuation escaped; nothing else is)."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", text)


def promql_string(text: str) -> str:
    return json.dumps(text)  # a PromQL double-quoted string escapes like JSON (\\, \", \n)
