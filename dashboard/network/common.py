"""What the Network page's sections share: the run summary's network part, figures and table columns under
their definitions, the fabric of a run's tiers and its tier table."""

from collections.abc import Mapping
from typing import Any

import polars as pl
import streamlit as st

from dashboard import text_exprs
from dashboard.charts import network as charts
from dashboard.queries import network as queries
from dashboard.text_exprs import tier_rank
from engine.analysis.definitions import definition
from engine.analysis.run_summary import RunSummary
from engine.fabric.topology import FABRIC_TIERS
from engine.store import RunInfo

UTILISATION_POINTS = 400  # time buckets drawn, whatever the run's length


def network_summary(run: RunInfo) -> Mapping[str, Any]:
    """The run summary's network part (engine.fabric.traffic.network_run's figures; {} for a run without them:
    replayed, ingested, older)."""
    return RunSummary.from_json(run.summary).network or {}


def metric(column, key: str, value: str, note: str = "") -> None:
    """A figure under its definition's label, with its definition as help (plus `note` on where it comes from)."""
    d = definition(key)
    column.metric(d.label, value, help=f"{d.help}{note}")


def number(key: str, fmt: str = "localized", unit: str = "") -> st.column_config.NumberColumn:
    """A table column that shows a registered figure: its label and help come from the definition."""
    d = definition(key)
    return st.column_config.NumberColumn(f"{d.label}{unit}", help=d.help, format=fmt)


def bar(key: str, top: float, unit: str = "") -> st.column_config.ProgressColumn:
    """A table column that shows a registered figure as a bar in its cell (full at `top`) beside its number."""
    d = definition(key)
    return st.column_config.ProgressColumn(
        f"{d.label}{unit}", help=d.help, format="localized", min_value=0, max_value=max(float(top or 0), 1.0)
    )


def fabric_figures(run: RunInfo) -> pl.DataFrame:
    """Each tier's figures (dashboard.queries.network.tier_figures: the engine's count where the run has it) and
    how much of it link_samples holds; a scan of every sample, so only the tabs that show them ask (cached)."""
    return queries.tier_figures(queries.tier_coverage(run.run_id), network_summary(run).get("tiers"))


def no_telemetry_note(consequence: str) -> str:
    """The sentence for a run without link telemetry: what cannot be shown, and how a simulation gets it."""
    return (
        f"This run has no link telemetry (its link_samples table is empty), so {consequence}: simulate with "
        "telemetry on (simulation.telemetry) and network.link_samples other than off."
    )


def fabric_of(tier_names: list[str]) -> str | None:
    """The engine's fabric whose tier names this run's links use (None: a fabric the engine did not build)."""
    return next((name for name, tiers in FABRIC_TIERS.items() if set(tiers) & set(tier_names)), None)


def level_map(fabric: str) -> dict[str, int]:
    return {tier: level for level, tier in enumerate(FABRIC_TIERS[fabric])}


def time_text(run: RunInfo, column: str) -> pl.Expr:
    return text_exprs.time_text(column, run.started_at)


TIER_COLUMNS = {
    "tier": "Tier",
    "mean_util": number("tier_mean_utilisation", "%.2f", " (%)"),
    "hottest_link_mean": number("tier_hottest_link", "%.2f", " (%)"),
    "max_util": number("tier_peak_utilisation", "%.2f", " (%)"),
    "down_pct": number("tier_down_share", "%.4f", " (%)"),
    "links_sampled": number("links_sampled"),
    "links": number("fabric_links"),
}


def tier_table(figures: pl.DataFrame) -> pl.DataFrame:
    """The per-tier figures in words and percent, bottom of the fabric first."""
    return figures.sort(tier_rank("tier"), "tier").with_columns(
        charts.tier_text("tier"), (pl.col("down_share") * 100).alias("down_pct")
    )
