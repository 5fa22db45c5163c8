"""The Network page's load sections: utilisation by tier (figures and over time), the hottest links (heat map
and table) and the fabric drawn and coloured by load (?colour=). Each is a tab of the page, drawn only while
open (dashboard/lazy.py)."""

import polars as pl
import streamlit as st

from dashboard import chart_view, state, table_view
from dashboard.charts import network as charts
from dashboard.format import fmt_duration, fmt_int
from dashboard.network.common import (
    TIER_COLUMNS,
    UTILISATION_POINTS,
    fabric_figures,
    metric,
    network_summary,
    no_telemetry_note,
    tier_table,
)
from dashboard.queries import network as queries
from engine.analysis.run_summary import RunSummary
from engine.fabric.topology import FABRIC_TIERS
from engine.store import RunInfo

HEATMAP_POINTS = 150
HOT_LINKS = 25
COLOUR_BY = {"mean": "mean_util", "peak": "peak_util"}


# ----- utilisation ----------------------------------------------------------------------------------------
def partial_note(figures: pl.DataFrame) -> str:
    """Which tiers link_samples holds only in part (so nothing of them is drawn from it), with how much."""
    partial = figures.filter(~pl.col("complete") & (pl.col("links_sampled") > 0))
    return " ".join(
        f"{row['tier']}: link_samples holds {row['links_sampled']:,} of its {row['links']:,} links, and those "
        "only at the samples where they were down or logged errors (network.link_samples = switches), a "
        "selection by trouble rather than a sample, so the tier is not drawn from them."
        for row in partial.with_columns(charts.tier_text("tier")).iter_rows(named=True)
    )


def utilisation_section(run: RunInfo, samples: int) -> None:
    """Utilisation by tier: its figures, each tier's over the run and, where sampled at every step, over time."""
    if samples == 0:
        no_telemetry(run)
    else:
        show_utilisation(run, samples, fabric_figures(run))


def no_telemetry(run: RunInfo) -> None:
    st.subheader("Utilisation by tier")
    if network_summary(run).get("tiers"):
        table_view.dataframe(
            tier_table(fabric_figures(run)).select(*TIER_COLUMNS),
            hide_index=True,
            width="stretch",
            column_config=TIER_COLUMNS,
        )
    st.info(no_telemetry_note("there is no utilisation to show"))


def show_utilisation(run: RunInfo, samples: int, figures: pl.DataFrame) -> None:
    st.subheader("Utilisation by tier")
    summary, typed = network_summary(run), RunSummary.from_json(run.summary)
    cols = st.columns(4)
    metric(cols[0], "link_samples", fmt_int(samples))
    if summary:
        metric(cols[1], "gbps_per_gpu", f"{typed.figure('gbps_per_gpu') or 0:g} Gbps")
        mean, worst = typed.figure("flagship_slowdown_mean"), typed.figure("flagship_slowdown_max")
        metric(cols[2], "flagship_slowdown_mean", "-" if mean is None else f"{mean:.3f}x")
        metric(cols[3], "flagship_slowdown_max", "-" if worst is None else f"{worst:.3f}x")
    from_engine = bool(summary.get("tiers"))
    table_view.dataframe(
        tier_table(figures).select(*TIER_COLUMNS),
        hide_index=True,
        width="stretch",
        column_config=TIER_COLUMNS,
    )
    st.caption(
        (
            "Each tier over the whole run, from every link at every sample time (the engine's count while "
            "it routed the traffic). "
            if from_engine
            else "Each tier over the whole run, from link_samples: a tier it does not hold completely has no "
            "figures. "
        )
        + partial_note(figures)
    )
    drawn = tuple(figures.filter(pl.col("complete"))["tier"])
    if not drawn:
        st.info("No tier has a sample of every link at every step, so no utilisation over time is drawn.")
        return
    utilisation = queries.utilisation_by_tier(run.run_id, UTILISATION_POINTS)
    st.caption(
        f"Tiers sampled at every step, averaged over {fmt_duration(utilisation['bucket_s'][0])} buckets: "
        "solid, the mean of the tier's links; dotted, its busiest link."
    )
    chart_view.plotly(
        charts.utilisation(utilisation.filter(pl.col("tier").is_in(drawn)), run.started_at), width="stretch"
    )


# ----- the hottest links ----------------------------------------------------------------------------------
HOT_COLUMNS = {
    "link_id": "Link",
    "tier": "Tier",
    "a": "From",
    "b": "To",
    "capacity_gbps": st.column_config.NumberColumn("Capacity (Gbps)", format="localized"),
    "mean_util": st.column_config.NumberColumn("Its mean utilisation (%)", format="%.2f"),
    "max_util": st.column_config.NumberColumn("Its peak utilisation (%)", format="%.2f"),
    "errors": st.column_config.NumberColumn("Errors", format="localized"),
}


def hot_links_section(run: RunInfo, samples: int, tiers: pl.DataFrame, fabric: str | None) -> None:
    """The links between switches with the highest mean utilisation: over time, then a table of every tier's."""
    st.subheader("Hottest links")
    if samples == 0:
        st.info(no_telemetry_note("there are no hot links to show"))
        return
    figures = fabric_figures(run)
    complete = tuple(figures.filter(pl.col("complete"))["tier"])
    above_nic = tuple(
        t
        for t in (FABRIC_TIERS[fabric][1:] if fabric else tiers["tier"].to_list())
        if t in complete and charts.tier_sort_key(t)[0] > 1
    )
    heat = queries.hot_link_heatmap(run.run_id, above_nic, HOT_LINKS, HEATMAP_POINTS) if above_nic else None
    if heat is None or heat.is_empty():
        st.info("No samples of links between switches in this run.")
    else:
        st.caption(
            f"The {heat['link_id'].n_unique()} links between switches with the highest mean utilisation, "
            "over time (rack uplinks and core links)."
        )
        chart_view.plotly(charts.hot_links(heat, run.started_at), width="stretch")
    table_view.dataframe(
        queries.hottest_links(run.run_id, complete).with_columns(charts.tier_text("tier")),
        hide_index=True,
        width="stretch",
        column_config=HOT_COLUMNS,
    )


# ----- the fabric drawn -----------------------------------------------------------------------------------
def fabric_map_section(run: RunInfo, samples: int, fabric: str | None) -> None:
    """Every switch of the fabric in its row (racks, spines, core), coloured by its links' load (?colour=)."""
    st.subheader("The fabric")
    if samples == 0:
        st.info(no_telemetry_note("the fabric cannot be coloured by load"))
        return
    nodes = (
        charts.diagram_nodes(
            queries.switch_loads(run.run_id), queries.rack_pods(run.run_id), FABRIC_TIERS[fabric]
        )
        if fabric
        else None
    )
    if nodes is None or nodes.is_empty():
        st.info(
            "This run's switches are not named the way the engine names them, so the fabric cannot be drawn."
        )
        return
    initial = st.query_params.get("colour", "mean")
    colour = st.radio(
        "Colour switches by",
        list(COLOUR_BY),
        horizontal=True,
        key=state.seed("net_colour", initial if initial in COLOUR_BY else "mean"),
    )
    state.set_url("colour", "" if colour == "mean" else colour)
    st.caption(
        f"{(nodes['level'] == 0).sum():,} racks, {(nodes['level'] == 1).sum():,} spines and "
        f"{(nodes['level'] == 2).sum():,} core switches, coloured by the {colour} utilisation of their "
        "links; outlined: the switch was out of service (every link of it down at once) at some point. "
        "A single cable down is in the hover text, not outlined."
    )
    chart_view.plotly(charts.fabric_diagram(nodes, COLOUR_BY[colour]), width="stretch")
