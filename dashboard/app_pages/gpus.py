"""GPUs: the health grid of every GPU at time t (filters by state, incident cause and XID), XID events over time,
ECC trends, the lemons and repeat offenders, and one GPU's telemetry and events.

URL: ?t= (seconds since the run's start), ?state=, ?cause=, ?xid= (comma-separated) and ?gpu= (GPU id)
reproduce the view. While a live-ingest run is selected the page reruns itself as scrapes arrive.
"""

import threading
from collections.abc import Callable
from typing import TypeVar

import polars as pl
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from dashboard import state
from dashboard.charts import gpus as charts
from dashboard.charts.common import fmt_duration, fmt_time
from dashboard.charts.racks import STATE_ORDER
from dashboard.charts.text_exprs import time_text
from dashboard.queries import gpus as queries
from dashboard.queries.racks import parse_t, state_time
from dashboard.text import md
from engine.store import RunInfo

TELEMETRY_POINTS = 500  # buckets drawn for one GPU, whatever the run's length
ECC_GPUS = 10  # GPUs drawn in the ECC trends
ECC_POINTS = 200  # buckets of the ECC trends
MATCH_ROWS = 500  # rows of the table of GPUs that pass the filters
T = TypeVar("T")


def times(frame: pl.DataFrame, run: RunInfo, *columns: str) -> pl.DataFrame:
    """Seconds-since-start columns shown as UTC times (column `first_s` becomes `first`)."""
    return frame.with_columns(
        time_text(c, run.started_at).alias(c.removesuffix("_s")) for c in columns).drop(*columns)


def health(run: RunInfo) -> Callable[[], None] | None:
    """The time slider, counts and filters; returns what draws the grid once its samples are in (None: no
    GPUs)."""
    st.subheader("Health")
    duration_h = max(run.duration_s / 3600.0, 1 / 60)
    t_key = state.seed(f"gpus_t:{run.run_id}", parse_t(st.query_params.get("t"), run.duration_s) / 3600.0)
    end_key = f"gpus_end:{run.run_id}"
    if st.session_state.get(end_key, duration_h) <= st.session_state[t_key] < duration_h:
        st.session_state[t_key] = duration_h  # a live run grew: a view of its end follows the newest scrape
    st.session_state[end_key] = duration_h
    t_h = st.slider("Time (hours since the run's start)", 0.0, duration_h, step=max(duration_h / 500, 1 / 60),
                    format="%.2f h", key=t_key)
    st.query_params["t"] = f"{t_h * 3600.0:.0f}"
    t_s = state_time(t_h * 3600.0, run.duration_s)
    # The samples' scan (the page's one slow query) runs while the rest of the page is drawn; the grid and its
    # table fill their place here once it is done.
    samples = in_background(queries.last_samples, run.run_id, t_s, queries.sample_resolution(run.kind, run.scenario))
    grid = queries.grid_at(run.run_id, t_s)
    counts = queries.state_counts(grid)
    if counts.is_empty():
        st.info("This run has no GPUs table.")
        return None
    by_state = dict(zip(counts["state"].to_list(), counts["gpus"].to_list(), strict=True))
    cols = st.columns(3)
    cols[0].metric("GPUs", f"{sum(by_state.values()):,}")
    cols[1].metric("Failed GPUs", f"{by_state.get('failed', 0):,}", help="GPUs with an incident not yet repaired at t")
    cols[2].metric("GPUs training", f"{by_state.get('running', 0):,}", help="on hosts running a job at t")

    causes, xids = queries.causes_in_run(run.run_id), queries.xids_in_run(run.run_id)
    left, middle, right = st.columns(3)
    chosen_states = left.multiselect("State", list(STATE_ORDER), key=state.seed(
        f"gpus_state:{run.run_id}", state.url_list("state", list(STATE_ORDER))))
    chosen_causes = middle.multiselect("Incident cause (up to t)", causes, key=state.seed(
        f"gpus_cause:{run.run_id}", state.url_list("cause", causes)))
    chosen_xids = right.multiselect("XID (up to t)", xids, key=state.seed(
        f"gpus_xid:{run.run_id}", [int(x) for x in state.url_list("xid", [str(x) for x in xids])]))
    state.set_url("state", ",".join(chosen_states))
    state.set_url("cause", ",".join(chosen_causes))
    state.set_url("xid", ",".join(str(x) for x in chosen_xids))

    filtered = bool(chosen_states or chosen_causes or chosen_xids)
    match = queries.matching(grid, chosen_states, chosen_causes, chosen_xids) if filtered else None
    st.caption(f"Every GPU at {fmt_time(run.started_at, t_s)}: a rack is a column of hosts, a host a line of its "
               "GPUs. A GPU takes its host's state unless it has failed itself; hover for its last temperature "
               "and power, its XIDs and incidents so far."
               + (f" **{int(match.sum()):,} of {grid.height:,} GPUs match the filters.**" if filtered else ""))
    place = st.container()
    with st.expander("GPUs by state"):
        st.plotly_chart(charts.health_counts(counts), width="stretch")

    def draw() -> None:
        cells = grid.join(samples(), on="gpu_id", how="left")
        place.plotly_chart(charts.health_grid(cells, match), width="stretch", key=f"gpus_grid:{run.run_id}")
        if filtered:
            picked = cells.filter(match).select(
                "gpu_id", "hostname", "rack_id", "gpu_index", "state", "temp_c", "power_w", "xid_events",
                "last_xid", pl.col("causes").list.join(", "))
            place.markdown(f"**GPUs that match** ({picked.height:,}; open one below by its id)")
            place.dataframe(picked.head(MATCH_ROWS), hide_index=True, width="stretch")

    return draw


def in_background(fn: Callable[..., T], *args) -> Callable[[], T]:
    """Start `fn(*args)` on a thread that carries this script run's context (Streamlit's caches work there as
    here) and return a function that waits for its result. For queries only: DuckDB works while Python
    draws the rest of the page. Elements must not be drawn from the thread."""
    box: dict = {}

    def work() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as err:  # handed to the script thread, which raises it where the result is used
            box["error"] = err

    thread = threading.Thread(target=work, name="gpus-page-query", daemon=True)
    add_script_run_ctx(thread, get_script_run_ctx())
    thread.start()

    def result() -> T:
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]

    return result


def xid_section(run: RunInfo) -> None:
    st.subheader("XID events by code")
    totals = queries.xid_counts(run.run_id)
    if totals.is_empty():
        st.info("This run recorded no XID events.")
        return
    window = queries.xid_window(run.duration_s)
    picked = [int(x) for x in state.url_list("xid", [str(x) for x in totals["xid"].to_list()])]
    timeline = queries.xid_timeline(run.run_id, window, picked)
    st.caption(f"Every XID event counted per {fmt_duration(window)} window, not the last value of the exporter's "
               "gauge (which never resets)" + (f"; only XID {', '.join(map(str, picked))}, as filtered above."
                                               if picked else "; fatal codes in reds."))
    st.plotly_chart(charts.xid_timeline(timeline, run.started_at, window), width="stretch")
    st.plotly_chart(charts.xid_counts(totals), width="stretch")


def ecc_section(run: RunInfo, ecc_top: Callable[[], pl.DataFrame]) -> None:
    st.subheader("ECC errors")
    top = ecc_top()
    if top.is_empty():
        st.info("No GPU of this run reported an ECC error.")
        return
    labels = {g: f"GPU {g} ({h} #{i})" for g, h, i in top.select("gpu_id", "hostname", "gpu_index").iter_rows()}
    bucket = max(run.duration_s / ECC_POINTS, 1.0)
    trend = queries.ecc_trend(run.run_id, top["gpu_id"].to_list(), bucket)
    st.caption(f"{top['gpus_with_ecc'][0]:,} GPUs reported ECC errors; the {top.height} with the most "
               f"(double-bit first), the largest count in each {fmt_duration(bucket)}. Rising single-bit counts "
               "come before HBM failures.")
    st.plotly_chart(charts.ecc_trend(trend, labels, run.started_at), width="stretch")
    st.dataframe(times(top.drop("gpus_with_ecc"), run, "first_s"), hide_index=True, width="stretch")


def lemon_section(run: RunInfo) -> int | None:
    """The lemons and repeat offenders; returns a GPU clicked in the offenders' history, if any."""
    st.subheader("Lemons and repeat offenders")
    failures, window = queries.repair_rule(run.scenario)
    lemons = queries.lemons(run.run_id, failures, window)
    flagged = run.summary.get("cluster", {}).get("lemons") if isinstance(run.summary, dict) else None
    st.caption(f"A lemon has {failures} hardware failures within {fmt_duration(window)} (the run's "
               "repair.lemon_failures and repair.lemon_window): its part goes back to the vendor."
               + (f" The simulator flagged {flagged} lemon repairs." if isinstance(flagged, int) else ""))
    st.markdown(f"**Lemons** ({lemons.height})")
    if lemons.is_empty():
        st.caption("No host reached the lemon rule in this run.")
    else:
        st.dataframe(times(lemons, run, "flagged_s"), hide_index=True, width="stretch")
    lemon_hosts = queries.offenders(run.run_id, "host", minimum=2)
    lemon_gpus = queries.offenders(run.run_id, "gpu", minimum=2)
    with st.expander("Incidents per host and per GPU (top 50)"):
        left, right = st.columns(2)
        left.dataframe(times(queries.offenders(run.run_id, "host"), run, "first_s", "last_s"), hide_index=True,
                       width="stretch")
        right.dataframe(times(queries.offenders(run.run_id, "gpu"), run, "first_s", "last_s"), hide_index=True,
                        width="stretch")
    if lemon_hosts.is_empty() and lemon_gpus.is_empty():
        st.info("No host or GPU failed more than once in this run.")
        return None
    left, right = st.columns(2)
    left.markdown(f"**Hosts** ({lemon_hosts.height}) with two or more unplanned incidents")
    left.dataframe(times(lemon_hosts, run, "first_s", "last_s"), hide_index=True, width="stretch")
    right.markdown(f"**GPUs** ({lemon_gpus.height}) with two or more unplanned incidents")
    right.dataframe(times(lemon_gpus, run, "first_s", "last_s"), hide_index=True, width="stretch")
    if not lemon_gpus.is_empty() and "gpu" not in st.query_params:
        st.caption(f"The worst repeat offender is GPU {lemon_gpus['gpu_id'][0]}.")
    history = queries.offender_incidents(run.run_id, minimum=2)
    if history.is_empty():
        return None
    st.caption("Each incident of the worst hosts; click one on a GPU to open that GPU below.")
    clicked = st.plotly_chart(charts.offender_history(history, run.started_at), width="stretch",
                              on_select="rerun", selection_mode="points", key=f"gpus_offenders:{run.run_id}")
    return charts.clicked_gpu(clicked.selection if clicked else None)


def one_gpu(run: RunInfo, click: int | None) -> None:
    st.subheader("One GPU")
    ids = queries.gpu_ids(run.run_id)
    first, last = ids["first"][0], ids["last"][0]
    if first is None:
        return
    try:
        wanted = int(st.query_params.get("gpu", ""))
    except ValueError:
        wanted = None
    wanted = wanted if wanted is not None and first <= wanted <= last else None
    gpu_key = f"gpus_gpu:{run.run_id}"
    if click is not None and click != st.session_state.get("gpus_last_click") and first <= click <= last:
        st.session_state[gpu_key] = click  # a new click on an offender's incident opens its GPU
    st.session_state["gpus_last_click"] = click
    gpu = st.number_input("GPU id", min_value=int(first), max_value=int(last), step=1,
                          key=state.seed(gpu_key, wanted),
                          placeholder="Enter a GPU id to see its telemetry and events")
    if gpu is None:
        st.query_params.pop("gpu", None)
        return
    gpu = int(gpu)
    st.query_params["gpu"] = str(gpu)
    info = queries.gpu_info(run.run_id, gpu)
    if info.is_empty():
        st.warning(f"GPU {gpu} is not in this run.")
        return
    row = info.row(0, named=True)
    st.markdown(f"**GPU {gpu}**: index {row['gpu_index']} of host {md(row['hostname'])} (rack {row['rack_id']}), "
                f"{md(row['model'])}, {md(row['uuid'])}")
    events = queries.gpu_events(run.run_id, gpu)
    st.markdown(f"**Events** ({events.height})")
    if events.is_empty():
        st.caption("No incident or XID event on this GPU.")
    else:
        st.dataframe(times(events.with_columns(pl.col("t_s").alias("time_s")), run, "time_s"),
                     hide_index=True, width="stretch")
    telemetry = queries.gpu_telemetry(run.run_id, gpu, TELEMETRY_POINTS)
    st.markdown("**Telemetry**")
    if telemetry.is_empty():
        st.caption("No telemetry samples for this GPU in this run.")
        return
    tdp = run.scenario.get("cluster", {}).get("gpu_tdp_w")
    st.caption(f"{int(telemetry['samples'].sum()):,} samples averaged over "
               f"{fmt_duration(telemetry['bucket_s'][0])} buckets.")
    st.plotly_chart(charts.gpu_telemetry(telemetry, run.started_at, float(tdp) if tdp else None), width="stretch")


def page(run_id: str) -> None:
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    live_every = state.live_refresh_s(run)
    if live_every:
        st.caption(f":material/sensors: Live: this run is still being scraped ({run.summary.get('scrapes', '?')} "
                   f"scrapes, {run.summary.get('samples', 0):,} samples so far); the page refreshes every "
                   f"{fmt_duration(live_every)}.")
    # the two scans of the samples (ECC here, the grid's temperatures in `health`) start first and run while
    # the rest of the page is drawn
    ecc_top = in_background(queries.ecc_top, run.run_id, ECC_GPUS)
    draw_grid = health(run)
    xid_section(run)
    ecc_section(run, ecc_top)
    click = lemon_section(run)
    one_gpu(run, click)
    if draw_grid is not None:
        draw_grid()


st.title("GPUs")
selected = state.run_or_stop()
state.render_run_page(page, selected)
