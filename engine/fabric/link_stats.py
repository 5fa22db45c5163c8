"""Statistics of each fabric tier over every link and every sample, summed while the traffic is routed.

Why the engine sums them rather than the dashboard reading them back from link_samples: with
`network.link_samples = switches` (the default) the store keeps a NIC cable's rows only while the cable is down
or logs errors. Those rows are a selection of the tier's cables by their trouble, not a sample of them: on
llama3-405b, 208 of 24,576 cables, almost every row of them down, so a "down share" over the stored rows read
0.987 for a tier whose cables were up 99.99 % of the time. The engine sees every link at every sample while it
computes the utilisation, so it counts the tier there, once, and the run summary carries the result
(summary network.tiers); the Network page shows it as the tier's figures.
"""

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class TierStats:
    """One tier of the fabric over the whole run: every link at every sample time."""

    tier: str
    links: int
    link_samples: int  # links x sample times
    down_link_samples: int  # of those, the link was out of service (no reading)
    mean_util_pct: float | None  # mean reading over the link-samples in service (None: never in service)
    hottest_link_mean_pct: float | None  # the highest of the links' own mean readings
    peak_util_pct: float | None  # the highest single reading

    @property
    def down_share(self) -> float:
        """Share of the tier's link-samples out of service (0 for a tier that was never sampled)."""
        return self.down_link_samples / self.link_samples if self.link_samples else 0.0

    def record(self) -> dict:
        """A JSON-ready dict for the run summary (percentages to 4 decimals, down_share to 8)."""
        out = asdict(self)
        for key in ("mean_util_pct", "hottest_link_mean_pct", "peak_util_pct"):
            out[key] = None if out[key] is None else round(float(out[key]), 4)
        out["down_share"] = round(self.down_share, 8)
        return out


class LinkTotals:
    """Running per-link sums of utilisation readings, fed one block of samples at a time."""

    def __init__(self, n_links: int) -> None:
        self.util_sum = np.zeros(n_links, dtype=np.float64)
        self.readings = np.zeros(n_links, dtype=np.int64)
        self.peak = np.full(n_links, np.nan, dtype=np.float64)
        self.samples = 0

    def add(self, util: np.ndarray) -> None:
        """A block (samples x links) of utilisation in percent, NaN where a link was out of service."""
        up = ~np.isnan(util)
        self.readings += up.sum(axis=0)
        self.util_sum += np.where(up, util, 0.0).sum(axis=0, dtype=np.float64)
        if util.shape[0]:
            # fmax skips NaN: a link down all block keeps its peak so far
            self.peak = np.fmax(self.peak, np.fmax.reduce(util, axis=0).astype(np.float64))
        self.samples += util.shape[0]

    def tier(self, name: str, first: int, stop: int) -> TierStats:
        """The statistics of the links first..stop-1 (a tier: the engine numbers each tier's links in a row)."""
        readings, sums = self.readings[first:stop], self.util_sum[first:stop]
        links = stop - first
        total = int(readings.sum())
        seen = readings > 0
        peak = self.peak[first:stop]
        return TierStats(
            tier=name,
            links=links,
            link_samples=links * self.samples,
            down_link_samples=links * self.samples - total,
            mean_util_pct=float(sums.sum() / total) if total else None,
            hottest_link_mean_pct=float((sums[seen] / readings[seen]).max()) if seen.any() else None,
            peak_util_pct=float(np.nanmax(peak)) if seen.any() else None,
        )
