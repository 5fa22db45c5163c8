"""One rack at time t (clicked on the floor, chosen, or ?rack=): its place and power, its elevation with its
links, its hosts, and its incidents, XID lines and state history up to t."""

import polars as pl
import streamlit as st

from dashboard import chart_view, state, table_view
from dashboard.charts.floor_overlays import clicked_rack
from dashboard.charts.host_states import state_history, state_words_expr
from dashboard.charts.rack_elevation import elevation
from dashboard.queries import racks as queries
from dashboard.racks.floor import Floor
from dashboard.text_exprs import cause_label_text, duration_text, time_text
from engine.report.palette import TIER_LABELS
from engine.report.visible_text import visible
from engine.store import RunInfo


def one_rack(run: RunInfo, floor: Floor, clicked) -> int | None:
    """The rack opened (clicked on the floor, else chosen, else ?rack=): its elevation, links and events."""
    st.subheader("Rack")
    rack = choose_rack(run, floor.problems, clicked)
    if rack is None:
        st.query_params.pop("rack", None)
    else:
        st.query_params["rack"] = str(rack)
        rack_view(run, floor, rack)
        rack_events(run, rack, floor.t_s)
    return rack


def choose_rack(run: RunInfo, problems: pl.DataFrame, clicked) -> int | None:
    """The Rack selectbox: a click on the floor opens that rack, else the user's choice, else ?rack=."""
    rack_ids = queries.racks(run.run_id)["rack_id"].to_list()
    try:
        wanted = int(st.query_params.get("rack", ""))
    except ValueError:
        wanted = None
    rack_key = state.seed(f"racks_rack:{run.run_id}", wanted if wanted in rack_ids else None)
    click = clicked_rack(clicked.selection if clicked else None)
    if click is not None and click != st.session_state.get("racks_last_click") and click in rack_ids:
        st.session_state[rack_key] = (
            click  # a new click on the floor opens that rack; the selectbox can move on
        )
    st.session_state["racks_last_click"] = click
    problem_words = {
        r: f"rack {r} · {h} host(s) out of service, {g} failed GPU(s)"
        for r, h, g in problems.select("rack_id", "hosts_out_of_service", "failed_gpus").iter_rows()
    }
    rack = st.selectbox(
        "Rack",
        rack_ids,
        key=rack_key,
        format_func=lambda r: visible(problem_words.get(r, f"rack {r}")),
        placeholder="Choose a rack to see its elevation, links and events",
    )
    return rack


def rack_view(run: RunInfo, floor: Floor, rack: int) -> None:
    """One rack at t: its place and power, its elevation with its links, its hosts and its links' table."""
    hosts, cells_frame, power, budget_kw = floor.hosts, floor.cells, floor.power, floor.budget_kw
    links = queries.rack_links(run.run_id, rack, floor.t_s)
    rack_hosts = hosts.filter(pl.col("rack_id") == rack)
    rack_power = power.filter(pl.col("rack_id") == rack)
    kw = float(rack_power["rack_kw"][0]) if rack_power.height else 0.0
    st.markdown(
        f"**Rack {rack}**: pod {rack_hosts['pod_id'][0]}, row {rack_hosts['row'][0]}, position "
        f"{rack_hosts['position'][0]}, {rack_hosts.height} hosts (top slot first) · {kw:.1f} of "
        f"{budget_kw:g} kW" + (" · **over budget**" if kw > budget_kw else "")
    )
    chart_view.plotly(elevation(cells_frame.filter(pl.col("rack_id") == rack), links, rack), width="stretch")
    in_rack = rack_hosts.join(
        cells_frame.group_by("host_id").agg(pl.col("host_kw").first()), on="host_id", how="left"
    ).select("hostname", "slot", pl.col("state").fill_null("unknown"), "job_id", "host_kw", "host_id")
    table_view.short(
        in_rack.sort("slot", descending=True)
        .with_columns(state_words_expr("state"), pl.col("host_kw").round(2))
        .rename({"hostname": "host", "job_id": "job", "host_kw": "kW", "host_id": "host id"})
    )
    if links.height:
        st.markdown(
            f"**Links** ({links.height}: a cable per GPU NIC to the rack switch, the switch's uplinks)"
        )
        table_view.dataframe(
            links.with_columns(pl.col("tier").replace(TIER_LABELS), pl.col("util_pct").round(1)),
            hide_index=True,
            width="stretch",
        )


def rack_events(run: RunInfo, rack: int, t_s: float) -> None:
    """The rack's incidents and XID lines up to t, and its hosts' state history."""
    incidents = queries.rack_incidents(run.run_id, rack).filter(pl.col("t_s") <= t_s).reverse()
    st.markdown(f"**Incidents up to t** ({incidents.height})")
    if incidents.is_empty():
        st.caption("No incidents on this rack's hosts, GPUs or links up to t.")
    else:
        table_view.short(
            incidents.select(
                pl.col("incident_id").alias("incident #"),
                time_text("t_s", run.started_at).alias("time (UTC)"),
                pl.col("hostname").alias("host"),
                pl.col("gpu_id").alias("GPU id"),
                pl.col("link_id").alias("link id"),
                cause_label_text("cause"),
                "category",
                pl.when(pl.col("planned")).then(pl.lit("yes")).otherwise(pl.lit("no")).alias("planned"),
                pl.col("xid").alias("XID"),
                pl.col("jobs_hit").alias("jobs hit"),
                pl.col("gpu_hours_lost").round(1).alias("GPU-hours lost"),
                duration_text("out_of_service_s").fill_null("not repaired").alias("out of service"),
            )
        )
    xids = queries.rack_xids(run.run_id, rack, t_s)
    if xids.height:
        st.markdown(f"**XID lines up to t** ({xids.height})")
        table_view.short(
            xids.select(
                time_text("t_s", run.started_at).alias("time (UTC)"),
                pl.col("hostname").alias("host"),
                pl.col("gpu_index").alias("GPU"),
                pl.col("xid").alias("XID"),
                pl.col("incident_id").alias("incident #"),
                "message",
            )
        )
    if queries.has_table(run.run_id, "host_states"):
        history = queries.rack_history(run.run_id, rack)
        if history.height:
            st.markdown("**State history**")
            chart_view.plotly(state_history(history, run.started_at), width="stretch")
