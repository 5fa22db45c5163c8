"""Network: the fabric's links by tier at once (one table, its counts as bars), then one row of tabs, each drawn
only while open (dashboard/lazy.py; ?tab=): switch and cable failures with the jobs they hit (the first, open by
default), link outages with the jobs the network slowed and the flapping links, degraded links (NIC ports slow or
erring, fail-slow NICs and cables), utilisation by tier (what each tier carried and how long it was down, over
every link, and over time), the hottest links, the fabric drawn and coloured by load (?colour=), and this run's
fabric beside another run's (RoCE against InfiniBand: ?vs=). Every figure is named and explained by
engine.analysis.definitions."""

import polars as pl
import streamlit as st

from dashboard import fault_history, lazy, state, table_view
from dashboard.charts import network as charts
from dashboard.format import fmt_int
from dashboard.network import failures, load
from dashboard.network.common import bar, fabric_of, metric
from dashboard.network.compare import compare_section
from dashboard.network.degraded import degraded_section
from dashboard.queries import network as queries
from dashboard.text_exprs import tier_rank
from engine.report.palette import cause_label
from engine.store import RunInfo

FABRIC_NAMES = {"roce": "RoCE", "infiniband": "InfiniBand"}
COMPARE_TAB = "Compare runs"
FABRIC_TAB = "Fabric map"
# a link without ?tab= that sets what only one tab reads opens that tab
LINKED_TABS = {"vs": COMPARE_TAB, "colour": FABRIC_TAB}


def page(run_id: str) -> None:
    """Links by tier, then the tabs: only the open one is drawn (charts and tables below the fold cost the
    browser as much as those above), and the link-sample scans only the open one needs are made."""
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    if fault_history.is_fault_history(run) and queries.tiers(run.run_id).is_empty():
        history_section(run)
        return
    tiers, fabric = fabric_section(run)
    samples = queries.sample_count(run.run_id)
    open_linked_tab()
    lazy.tabs(
        {
            "Switch and cable failures": lambda: failures.incidents_section(run),
            "Outages and slowed jobs": lambda: failures.failed_links_section(run, samples),
            "Degraded links": lambda: degraded_section(run),
            "Utilisation": lambda: load.utilisation_section(run, samples),
            "Hottest links": lambda: load.hot_links_section(run, samples, tiers, fabric),
            FABRIC_TAB: lambda: load.fabric_map_section(run, samples, fabric),
            COMPARE_TAB: lambda: compare_section(run, fabric, samples),
        }
    )


def open_linked_tab() -> None:
    """On a session's first run from a link without ?tab=, open the tab its ?vs= or ?colour= is for."""
    if lazy.TAB_PARAMETER in st.session_state or lazy.TAB_PARAMETER in st.query_params:
        return
    linked = next((tab for parameter, tab in LINKED_TABS.items() if parameter in st.query_params), None)
    if linked:
        st.session_state[lazy.TAB_PARAMETER] = linked


def history_section(run: RunInfo) -> None:
    """A fault history has no fabric: one line says so, and where its outages of network cause are."""
    st.info(fault_history.lacks(run, "links"))
    count = queries.network_incidents(run.run_id).height
    if count:
        st.markdown(
            f"**{fmt_int(count)} of its outages** were put down to a switch or cable "
            f"({cause_label(queries.NETWORK_CAUSE)}); the Incidents page lists them with what was written."
        )
        st.page_link(
            "app_pages/incidents.py",
            label="Its switch and cable outages",
            icon=":material/report:",
            query_params={state.RUN_PARAM: run.run_id, "causes": queries.NETWORK_CAUSE},
        )


# ----- the fabric -----------------------------------------------------------------------------------------
def fabric_section(run: RunInfo) -> tuple[pl.DataFrame, str | None]:
    """Links by tier; returns the tiers and the engine's fabric they belong to (None: not one it builds)."""
    st.subheader("Links by tier")
    tiers = queries.tiers(run.run_id)
    fabric = fabric_of(tiers["tier"].to_list()) if not tiers.is_empty() else None
    if tiers.is_empty():
        st.info("This run has no links table: its fabric was not modelled or observed.")
        return tiers, fabric
    cols = st.columns(4)
    metric(cols[0], "fabric_links", fmt_int(tiers["links"].sum()))
    metric(cols[1], "fabric_tiers", fmt_int(tiers.height))
    metric(cols[2], "fabric_capacity", f"{tiers['capacity_gbps'].sum() / 1000:,.1f} Tbps")
    metric(cols[3], "fabric_kind", FABRIC_NAMES.get(fabric, "other"))
    # one table, its counts drawn as bars in their cells: a Plotly chart of the same numbers cost the browser
    # its chart library on a first visit (seconds in headless Chromium) and half a second on every one
    table = tiers.sort(tier_rank("tier"), "tier").with_columns(
        charts.tier_text("tier"),
        pl.col("capacity_gbps").round(0),
        pl.col("min_link_gbps", "max_link_gbps").round(1),
    )
    table_view.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            "tier": "Tier",
            "links": bar("fabric_links", table["links"].max()),
            "capacity_gbps": bar("fabric_capacity", table["capacity_gbps"].max(), " (Gbps)"),
            "min_link_gbps": st.column_config.NumberColumn("Slowest link (Gbps)", format="localized"),
            "max_link_gbps": st.column_config.NumberColumn("Fastest link (Gbps)", format="localized"),
        },
    )
    return tiers, fabric


st.title("Network")
state.render_run_page(page, state.run_or_stop())
