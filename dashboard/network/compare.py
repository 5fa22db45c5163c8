"""This run's fabric beside another run's (RoCE against InfiniBand: ?vs=): tier figures level by level, the
flagship's slowdown and the jobs slowed, and utilisation over time."""

from collections.abc import Mapping
from typing import Any

import polars as pl
import streamlit as st

from dashboard import chart_view, state, table_view
from dashboard.charts import network as charts
from dashboard.network.common import (
    TIER_COLUMNS,
    UTILISATION_POINTS,
    fabric_figures,
    fabric_of,
    level_map,
    network_summary,
    number,
    tier_table,
)
from dashboard.queries import network as queries
from dashboard.text import code
from engine.report.visible_text import visible
from engine.store import RunInfo


def compare_section(run: RunInfo, fabric: str | None, samples: int) -> None:
    st.subheader("Compare with another run")
    others = [info for info in state.list_runs() if info.run_id != run.run_id]
    if not fabric or not others or samples == 0:
        st.info(
            "Another run with a modelled fabric is needed to compare (for example `goodput simulate --preset "
            "meta-24k-ib` beside `--preset llama3-405b`)."
        )
        return
    by_id = {info.run_id: info for info in others}
    wanted = st.query_params.get("vs", "")
    choice = st.selectbox(
        "Second run",
        ["", *by_id],
        key=state.seed("net_vs", wanted if wanted in by_id else ""),
        format_func=lambda r: "pick a run" if not r else visible(f"{by_id[r].name} · {r}"),
    )
    state.set_url("vs", choice)
    if not choice:
        return
    other_tiers = queries.tiers(choice)
    other_fabric = fabric_of(other_tiers["tier"].to_list()) if not other_tiers.is_empty() else None
    if other_fabric is None or queries.sample_count(choice) == 0:
        st.info(f"Run {code(choice)} has no modelled fabric with link telemetry to compare.")
        return
    labels = {run.run_id: f"{run.name} ({fabric})", choice: f"{by_id[choice].name} ({other_fabric})"}
    summaries = {run.run_id: network_summary(run), choice: network_summary(by_id[choice])}
    per_run = {
        run.run_id: (fabric_figures(run), fabric),
        choice: (
            queries.tier_figures(queries.tier_coverage(choice), summaries[choice].get("tiers")),
            other_fabric,
        ),
    }
    compare_tiers(per_run, labels)
    compare_figures(summaries, labels)
    compare_utilisation(per_run, labels)


def compare_tiers(per_run: dict[str, tuple[pl.DataFrame, str]], labels: dict[str, str]) -> None:
    """Each run's tier figures side by side, level by level."""
    stats = pl.concat(
        [
            f.join(
                pl.DataFrame({"tier": list(level_map(fab)), "level": list(level_map(fab).values())}),
                on="tier",
            ).with_columns(run=pl.lit(labels[r]))
            for r, (f, fab) in per_run.items()
        ]
    )
    table_view.dataframe(
        tier_table(stats.sort("level"))
        .with_columns(
            pl.col("level").replace_strict(dict(enumerate(charts.LEVEL_NAMES)), return_dtype=pl.String)
        )
        .select("level", "run", "tier", *list(TIER_COLUMNS)[1:]),
        hide_index=True,
        width="stretch",
        column_config={"level": "Level", "run": "Run"} | TIER_COLUMNS,
    )


def compare_figures(summaries: dict[str, Mapping[str, Any]], labels: dict[str, str]) -> None:
    """Each run's flagship slowdown and progress, jobs slowed and link faults (its summary's network part)."""
    table_view.dataframe(
        pl.DataFrame(
            [
                {
                    "run": labels[r],
                    "flagship_slowdown_mean": s.get("flagship_slowdown_mean"),
                    "flagship_slowdown_max": s.get("flagship_slowdown_max"),
                    "flagship_progress_rate": s.get("flagship_progress_rate"),
                    "jobs_slowed": s.get("jobs_slowed", len({e["job_id"] for e in s.get("slowed") or []})),
                    "link_faults": s.get("link_faults"),
                }
                for r, s in summaries.items()
            ],
            schema={
                "run": pl.String,
                "flagship_slowdown_mean": pl.Float64,
                "flagship_slowdown_max": pl.Float64,
                "flagship_progress_rate": pl.Float64,
                "jobs_slowed": pl.Int64,
                "link_faults": pl.Int64,
            },
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "run": "Run",
            "flagship_slowdown_mean": number("flagship_slowdown_mean", "%.3fx"),
            "flagship_slowdown_max": number("flagship_slowdown_max", "%.3fx"),
            "flagship_progress_rate": number("flagship_progress_rate", "%.4f"),
            "jobs_slowed": number("jobs_slowed"),
            "link_faults": number("link_faults"),
        },
    )


def compare_utilisation(per_run: dict[str, tuple[pl.DataFrame, str]], labels: dict[str, str]) -> None:
    """Mean utilisation over time of each run's levels that its link_samples holds at every step."""
    drawn = {
        r: {t: lv for t, lv in level_map(fab).items() if t in set(f.filter(pl.col("complete"))["tier"])}
        for r, (f, fab) in per_run.items()
    }
    st.caption("Mean utilisation over time of each run's levels that its link_samples holds at every step.")
    chart_view.plotly(
        charts.compare_levels(
            {labels[r]: queries.utilisation_by_level(r, drawn[r], UTILISATION_POINTS) for r in per_run}
        ),
        width="stretch",
    )
