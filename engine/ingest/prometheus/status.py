"""Is the source answering, and how are its scrape targets: `probe`, `scrape_interval`."""

import re
import time
from dataclasses import dataclass, field
from datetime import datetime

from engine import limits
from engine.ingest.prometheus.source import PrometheusError, PrometheusSource

# The step for event queries when Prometheus does not say its scrape interval (Thanos, VictoriaMetrics).
DEFAULT_SCRAPE_S = 15.0


@dataclass(frozen=True)
class TargetHealth:
    job: str
    instance: str
    health: str  # up, down, unknown
    last_error: str
    last_scrape: float | None  # epoch s
    scrape_interval_s: float | None


@dataclass(frozen=True)
class PrometheusStatus:
    """What `probe` saw. `down_since` (epoch s): when the source was first found unreachable in a row of failed
    probes (the previous status passed to `probe`), so a page can say "Prometheus unreachable since 10:42"."""

    url: str
    reachable: bool
    checked_at: float
    error: str | None = None
    version: str | None = None
    down_since: float | None = None
    targets: tuple[TargetHealth, ...] | None = field(default=None)  # None: the server has no targets API

    @property
    def targets_up(self) -> int:
        return sum(t.health == "up" for t in self.targets or ())

    @property
    def targets_down(self) -> int:
        return sum(t.health != "up" for t in self.targets or ())


def probe(source: PrometheusSource, previous: PrometheusStatus | None = None) -> PrometheusStatus:
    """Is the source answering queries, which version is it, how are its scrape targets? Never raises for an
    unreachable server: the status says so (and since when, given the previous status)."""
    now = time.time()
    try:
        source.get("query", {"query": "vector(1)"}, "query 'vector(1)'")
    except PrometheusError as err:
        since = previous.down_since if previous is not None and not previous.reachable else None
        return PrometheusStatus(source.shown, False, now, error=str(err), down_since=since or now)
    version = None
    try:
        version = str(source.get("status/buildinfo", {}, "build info").get("version") or "") or None
    except PrometheusError:
        pass  # Thanos and VictoriaMetrics may not serve it: a version is a nicety
    return PrometheusStatus(source.shown, True, now, version=version, targets=_targets(source))


def scrape_interval(source: PrometheusSource) -> float:
    """The smallest scrape interval among Prometheus' active targets; DEFAULT_SCRAPE_S where it does not say."""
    intervals = [t.scrape_interval_s for t in _targets(source) or () if t.scrape_interval_s]
    return min(intervals) if intervals else DEFAULT_SCRAPE_S


def _targets(source: PrometheusSource) -> tuple[TargetHealth, ...] | None:
    try:
        data = source.get("targets", {"state": "active"}, "targets")
    except PrometheusError:
        return None
    active = data.get("activeTargets") if isinstance(data, dict) else None
    if not isinstance(active, list):
        return None
    found = []
    for target in active[: limits.MAX_HOSTS]:
        labels = target.get("labels") or {}
        found.append(
            TargetHealth(
                job=str(labels.get("job", "")),
                instance=str(labels.get("instance", "")),
                health=str(target.get("health", "unknown")),
                last_error=str(target.get("lastError", "")),
                last_scrape=_epoch(target.get("lastScrape")),
                scrape_interval_s=_duration_s(target.get("scrapeInterval")),
            )
        )
    return tuple(found)


def _epoch(text: object) -> float | None:
    """Prometheus' RFC 3339 times (nanoseconds, `Z`) in epoch seconds; None for its zero time or garbage."""
    if not isinstance(text, str) or text.startswith("0001-"):
        return None
    match = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", text)
    if match is None:
        return None
    fraction = (match[2] or ".0")[:7]
    zone = "+00:00" if match[3] == "Z" else match[3]
    try:
        return datetime.fromisoformat(match[1] + fraction + zone).timestamp()
    except ValueError:
        return None


def _duration_s(text: object) -> float | None:
    """Prometheus' durations (`15s`, `1m30s`, `500ms`) in seconds."""
    if not isinstance(text, str):
        return None
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    parts = re.findall(r"([0-9]+)(ms|[smhdwy])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(int(n) * units[u] for n, u in parts)
