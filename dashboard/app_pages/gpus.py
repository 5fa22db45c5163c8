"""GPUs: the health grid of every GPU at time t (filters by state, incident cause and XID) at once; under it a row
of tabs, only the open one drawn (dashboard/lazy.py: a 24k-GPU run's charts cost the browser seconds): XID events
over time, ECC trends, the throttled and slow GPUs with their reasons, the lemons and repeat offenders (the lemon
rule scored against the simulator's ground truth where the run has one); below them one GPU's telemetry and
events, drawn once a GPU is chosen. Under a grid taller than the screen's remainder, the tabs and the one GPU are
drawn once scrolled to (or at once where ?tab= or ?gpu= asks for them: dashboard/lazy.below_fold).

URL: ?t= (seconds since the run's start), ?state=, ?cause=, ?xid= (comma-separated), ?tab= (the open tab's label)
and ?gpu= (GPU id) reproduce the view. While a live-ingest run is selected the page reruns itself as scrapes
arrive.
"""

from collections.abc import Callable
from typing import NamedTuple

import polars as pl
import streamlit as st

from dashboard import chart_view, fault_history, lazy, state
from dashboard.charts import gpu_telemetry as telemetry_charts
from dashboard.charts import gpus as charts
from dashboard.charts import health_grid
from dashboard.charts.health_grid import HealthGridData
from dashboard.format import fmt_duration, fmt_int
from dashboard.gpus import grid_canvas, history
from dashboard.gpus.common import SHORT_RUN_S, in_words, metric, table, times, when
from dashboard.gpus.fleet import fleet_section
from dashboard.gpus.lemons import lemon_section
from dashboard.gpus.throttled import throttled_section
from dashboard.queries import gpus as queries
from dashboard.queries import prometheus
from dashboard.queries.racks import parse_t, state_time
from dashboard.text import md
from dashboard.text_exprs import cause_label_text
from dashboard.time_slider import moment_slider, time_axis
from engine.errors import GoodputError
from engine.report.palette import OUT_OF_SERVICE_STATES, cause_label, xid_label
from engine.store import RunInfo

TELEMETRY_POINTS = 500  # buckets drawn for one GPU, whatever the run's length
ECC_GPUS = 10  # GPUs drawn in the ECC trends
ECC_POINTS = 200  # buckets of the ECC trends
MATCH_ROWS = 500  # rows of the table of GPUs that pass the filters
FEW_WINDOWS = 10  # fewer XID windows than this over the run: draw each event instead of counts per window
# the tabs under the health grid, as ?tab= names them; the first is open by default
XID_TAB = "XID events"
ECC_TAB = "ECC errors"
THROTTLED_TAB = "Throttled and slow GPUs"
GRID_CLICK = "gpus_grid_click"  # the GPU a click on the grid opened, until the rerun it causes shows it
LEMONS_TAB = "Lemons and repeat offenders"


def time_slider(run: RunInfo) -> float:
    """The moment shown (seconds since the run's start), from ?t=: a slider over UTC times (or, for a run of
    unknown date, time from its start); none for a run of one moment (one scrape)."""
    if run.duration_s <= 0:
        st.caption(f"This run is a single moment ({when(run, 0.0)}): the page shows it.")
        st.query_params["t"] = "0"
        return 0.0
    # a step fine enough for a log of seconds, 500 steps across a long run
    step_s = max(run.duration_s / 500, 1.0 if run.duration_s < 120 else 60.0)
    axis = time_axis(run.started_at, run.duration_s, step_s)
    t_s = moment_slider(
        axis, f"gpus_t:{run.run_id}", parse_t(st.query_params.get("t"), run.duration_s), follow_end=True
    )
    st.query_params["t"] = f"{t_s:.0f}"
    return state_time(t_s, run.duration_s)


class Grid(NamedTuple):
    """The health grid to come: what draws it once its samples are in, and its height."""

    draw: Callable[[], None]
    height_px: int


def health(run: RunInfo) -> Grid | None:
    """The time slider, counts and filters; returns the grid to draw once its samples are in (None: no
    GPUs)."""
    st.subheader("Health")
    t_s = time_slider(run)
    # The samples' scan (the page's one slow query) runs while the rest of the page is drawn; the grid and its
    # table fill their place here once it is done.
    samples = queries.last_samples_later(run.run_id, t_s, queries.sample_resolution(run.kind, run.scenario))
    grid = queries.grid_at(run.run_id, t_s)
    counts = queries.state_counts(grid)
    if counts.is_empty():
        st.info("This run has no GPUs table.")
        return None
    if fault_history.is_fault_history(run):
        history.history_counts(run, grid)
    else:
        health_counts(grid, counts)
    chosen_states, chosen_causes, chosen_xids = health_filters(run)
    filtered = bool(chosen_states or chosen_causes or chosen_xids)
    match = queries.matching(grid, chosen_states, chosen_causes, chosen_xids) if filtered else None
    opened = st.query_params.get("gpu", "")
    st.caption(
        f"Every GPU at {when(run, t_s)}: a rack is a column of hosts, a host a line of its "
        "GPUs. A GPU takes its host's state unless it has failed itself; hover for its last temperature "
        "and power, its XIDs and incidents so far; click one to open it under the tabs ([One GPU](#one-gpu)"
        + (f": GPU {int(opened)} is open)." if opened.isdigit() else ").")
        + (f" **{int(match.sum()):,} of {grid.height:,} GPUs match the filters.**" if filtered else "")
    )
    place = st.container()
    lazy.expander(
        "GPUs by state",
        "gpus_by_state",
        lambda: chart_view.plotly(charts.health_counts(counts), width="stretch"),
    )

    def draw() -> None:
        cells = grid.join(samples(), on="gpu_id", how="left")
        store = state.store()  # two stores may hold the same run id (a moved store, tests)
        version = (str(store.root), run.run_id, state.file_version(store, run.run_id))
        filters = (tuple(chosen_states), tuple(chosen_causes), tuple(chosen_xids))
        clicked = grid_canvas.health_grid(
            grid_data(version, t_s, filters, cells, match), key=f"gpus_grid:{run.run_id}", where=place
        )
        if clicked is not None:  # open it under the tabs: a rerun draws them, the GPU chosen (one_gpu)
            st.session_state[GRID_CLICK] = clicked
            st.query_params["gpu"] = str(clicked)
            st.rerun()
        if filtered:
            picked = cells.filter(match).select(
                "gpu_id",
                "hostname",
                "rack_id",
                "gpu_index",
                "state",
                "temp_c",
                "power_w",
                "xid_events",
                "last_xid",
                "causes",
            )
            place.markdown(f"**GPUs that match** ({picked.height:,}; open one below by its id)")
            table(place, in_words(picked.head(MATCH_ROWS)))

    return Grid(draw, health_grid.health_grid_height(grid))


@st.cache_resource(max_entries=8, ttl=3600, show_spinner=False)
def grid_data(
    version: tuple, t_s: float, filters: tuple, _cells: pl.DataFrame, _match: pl.Series | None
) -> HealthGridData:
    """The health grid of one version of a run (store, run id, file version) at one moment under one set of filters
    (which make its cells), built once for every session (24,576 GPUs: about 0.1 s on 2 cores) and only read
    after."""
    return health_grid.health_grid(_cells, _match)


def health_counts(grid: pl.DataFrame, counts: pl.DataFrame) -> None:
    """GPUs in the run, failed, out of service and training at t (the last two only where hosts have states)."""
    by_state = dict(zip(counts["state"].to_list(), counts["gpus"].to_list(), strict=True))
    states_known = bool((grid["host_state"] != "unknown").any())  # an observed run may record no host states
    out = grid.filter(pl.col("host_state").is_in(OUT_OF_SERVICE_STATES)).height
    cols = st.columns(4)
    metric(cols[0], "gpus_in_run", fmt_int(grid.height))
    metric(cols[1], "failed_gpus", fmt_int(by_state.get("failed", 0)))
    metric(cols[2], "gpus_out_of_service", fmt_int(out) if states_known else "–")
    metric(cols[3], "gpus_training", fmt_int(by_state.get("running", 0)) if states_known else "–")
    if not states_known:
        st.caption(
            "This run records no host states (an observed log or scrape): GPUs out of service and "
            "training are not known; a GPU is failed while an incident of its own is not repaired."
        )


def health_filters(run: RunInfo) -> tuple[list[str], list[str], list[int]]:
    """The state, incident-cause and XID filters, kept in the URL (?state=, ?cause=, ?xid=)."""
    causes, xids = queries.causes_in_run(run.run_id), queries.xids_in_run(run.run_id)
    left, middle, right = st.columns(3)
    chosen_states = left.multiselect(
        "State",
        list(charts.GPU_STATE_ORDER),
        format_func=charts.gpu_state_label,
        key=state.seed(f"gpus_state:{run.run_id}", state.url_list("state", list(charts.GPU_STATE_ORDER))),
    )
    chosen_causes = middle.multiselect(
        "Incident cause (up to t)",
        causes,
        format_func=cause_label,
        key=state.seed(f"gpus_cause:{run.run_id}", state.url_list("cause", causes)),
    )
    chosen_xids = right.multiselect(
        "XID (up to t)",
        xids,
        format_func=xid_label,
        key=state.seed(
            f"gpus_xid:{run.run_id}", [int(x) for x in state.url_list("xid", [str(x) for x in xids])]
        ),
    )
    state.set_url("state", ",".join(chosen_states))
    state.set_url("cause", ",".join(chosen_causes))
    state.set_url("xid", ",".join(str(x) for x in chosen_xids))
    return chosen_states, chosen_causes, chosen_xids


def xid_section(run: RunInfo) -> None:
    totals = queries.xid_counts(run.run_id)
    if totals.is_empty():
        st.info("This run recorded no XID events.")
        return
    picked = [int(x) for x in state.url_list("xid", [str(x) for x in totals["xid"].to_list()])]
    only = f"; only XID {', '.join(map(str, picked))}, as filtered above" if picked else ""
    every = queries.xid_events(run.run_id)
    events = every.filter(pl.col("xid").is_in(picked)) if picked else every
    first, last = events["t_s"].min(), events["t_s"].max()
    cols = st.columns(3)
    metric(cols[0], "xid_events", fmt_int(int(totals["events"].sum())))
    metric(cols[1], "xid_codes", fmt_int(totals.height))
    metric(cols[2], "xid_span", fmt_duration(every["t_s"].max() - every["t_s"].min()))
    window = queries.xid_window(run.duration_s)
    if run.duration_s / window < FEW_WINDOWS:
        # minutes of one kernel log: bars per window (or a rate a day) would say nothing; each event at its time
        st.caption(
            f"{events.height:,} XID events from {when(run, first)} to {when(run, last)}: too short a "
            f"span for counts per window, so each event is drawn at its time{only}."
        )
        chart_view.plotly(charts.xid_strip(events, run.started_at), width="stretch")
    else:
        timeline = queries.xid_timeline(run.run_id, window, picked)
        st.caption(
            f"Every XID event counted per {fmt_duration(window)} window, not the last value of the "
            f"exporter's gauge (which never resets){only or '; a code keeps its colour on every chart'}."
        )
        chart_view.plotly(charts.xid_timeline(timeline, run.started_at, window), width="stretch")
    chart_view.plotly(charts.xid_counts(totals), width="stretch")


def ecc_section(run: RunInfo) -> None:
    top = queries.ecc_top(run.run_id, ECC_GPUS)
    if top.is_empty():
        st.info("No GPU of this run reported an ECC error.")
        return
    metric(st, "gpus_with_ecc_errors", fmt_int(top["gpus_with_ecc"][0]))
    labels = {
        g: f"GPU {g} ({h} #{i})" for g, h, i in top.select("gpu_id", "hostname", "gpu_index").iter_rows()
    }
    bucket = max(run.duration_s / ECC_POINTS, 1.0)
    trend = queries.ecc_trend(run.run_id, top["gpu_id"].to_list(), bucket)
    st.caption(
        f"The {top.height} GPUs with the most ECC errors (double-bit first), the largest count in each "
        f"{fmt_duration(bucket)}. Rising single-bit counts come before HBM failures."
    )
    chart_view.plotly(charts.ecc_trend(trend, labels, run.started_at), width="stretch")
    table(st, times(top.drop("gpus_with_ecc"), run, "first_s"))


def gpu_events(events: pl.DataFrame, run: RunInfo) -> pl.DataFrame:
    """One GPU's incidents (their cause in words) and XID lines, at UTC times; seconds from the start too in a
    short run, where a burst of XIDs falls within one minute."""
    shown = events.with_columns(
        pl.when(pl.col("kind") == "incident")
        .then(cause_label_text("what"))
        .otherwise(pl.col("what"))
        .alias("what"),
        pl.col("t_s").alias("time_s"),
        pl.col("t_s").round(3).alias("from_start_s"),
    )
    shown = in_words(times(shown, run, "time_s"))
    columns = [
        "time",
        *(["from_start_s"] if run.duration_s < SHORT_RUN_S else []),
        "kind",
        "what",
        "xid",
        "incident_id",
        "gpu_hours_lost",
    ]
    return shown.select(columns)


def one_gpu(run: RunInfo, click: int | None, grid_click: int | None = None) -> None:
    """One GPU's events and telemetry: the GPU from ?gpu=, a lemon's `click` or the grid's `grid_click`."""
    st.subheader("One GPU", anchor="one-gpu")
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
    if grid_click is not None and first <= grid_click <= last:
        st.session_state[gpu_key] = grid_click
    gpu = st.number_input(
        "GPU id",
        min_value=int(first),
        max_value=int(last),
        step=1,
        key=state.seed(gpu_key, wanted),
        placeholder="Enter a GPU id to see its telemetry and events",
    )
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
    known = ", ".join(md(row[k]) for k in ("model", "uuid") if row[k])  # a kernel log names neither
    st.markdown(
        f"**GPU {gpu}**: index {row['gpu_index']} of host {md(row['hostname'])} (rack {row['rack_id']})"
        + (f", {known}" if known else "")
    )
    if fault_history.is_fault_history(run):  # nothing is known of the GPU itself: its host's outages
        history.host_outages(run, row["host_id"], row["hostname"])
        return
    events = queries.gpu_events(run.run_id, gpu)
    st.markdown(f"**Events** ({events.height})")
    if events.is_empty():
        st.caption("No incident or XID event on this GPU.")
    else:
        table(st, gpu_events(events, run))
    access, error = prometheus.prometheus_access_or_error(run)
    if error is not None:
        st.error(f"This run's Prometheus settings cannot be read: {md(error)}", icon=":material/error:")
        return
    if access is not None:
        prometheus_gpu(run, access, row["hostname"], int(row["gpu_index"]))
        return
    telemetry = queries.gpu_telemetry(run.run_id, gpu, TELEMETRY_POINTS)
    st.markdown("**Telemetry**")
    if telemetry.is_empty():
        st.caption("No telemetry samples for this GPU in this run.")
        return
    tdp = run.scenario.get("cluster", {}).get("gpu_tdp_w")
    samples = int(telemetry["samples"].sum())
    st.caption(
        ("One sample, drawn as read." if samples == 1 else f"{samples:,} samples, each drawn as read.")
        if samples == telemetry.height
        else f"{samples:,} samples averaged over {fmt_duration(telemetry['bucket_s'][0])} buckets."
    )
    chart_view.plotly(
        telemetry_charts.gpu_telemetry(telemetry, run.started_at, float(tdp) if tdp else None),
        width="stretch",
    )


def prometheus_gpu(run: RunInfo, access, hostname: str, index: int) -> None:
    """A watched run keeps no samples: the GPU's telemetry over the run's span comes from its Prometheus,
    down-sampled there to the points the chart draws."""
    start = run.started_at.timestamp()
    end = start + run.duration_s
    st.markdown("**Telemetry** (from Prometheus)")
    try:
        telemetry = prometheus.prometheus_telemetry(access, hostname, index, start, end, TELEMETRY_POINTS)
    except GoodputError as err:
        st.error(f"Prometheus could not answer: {md(err)}", icon=":material/error:")
        return
    if telemetry.is_empty():
        st.caption(f"Prometheus ({md(access.shown_url)}) holds no DCGM series of this GPU in the run's span.")
        return
    st.caption(
        f"{telemetry.height:,} points from {md(access.shown_url)}, one every {fmt_duration(telemetry['bucket_s'][0])}."
    )
    chart_view.plotly(telemetry_charts.gpu_telemetry(telemetry, run.started_at), width="stretch")


def page(run_id: str) -> None:
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    live_every = state.live_refresh_s(run)
    if live_every:
        st.caption(state.live_note(run, live_every))
    grid_click = st.session_state.pop(GRID_CLICK, None)
    fleet_section(run)
    grid = health(run)  # its samples' scan runs while the tabs and the one GPU are drawn
    # what an operator needs at a glance (the health grid, its counts and filters) is drawn at once; under a
    # grid taller than the screen's remainder the tabs and the one GPU once scrolled to (dashboard/lazy.py), at
    # once where a link asks for them
    lazy.below_fold(
        f"gpus_below:{run.run_id}",
        "The tabs below (XID events, ECC errors, throttled GPUs, lemons) and one GPU",
        lambda: below_grid(run, grid_click),
        opened=grid is None or grid.height_px <= lazy.CHART_PX_IN_VIEW,
        url_keys=("tab", "gpu"),
    )
    if grid is not None:
        grid.draw()


def below_grid(run: RunInfo, grid_click: int | None = None) -> None:
    """The row of tabs, each drawn only once open, and one GPU (a lemon's click or the grid's opens it)."""
    clicked: dict[str, int | None] = {}

    def lemons() -> None:
        clicked["gpu"] = lemon_section(run)

    tabs = {
        XID_TAB: lambda: xid_section(run),
        ECC_TAB: lambda: ecc_section(run),
        THROTTLED_TAB: lambda: throttled_section(run),
        LEMONS_TAB: lemons,
    }
    if fault_history.is_fault_history(
        run
    ):  # no telemetry or XIDs (said above the grid): the hosts that failed
        tabs = {LEMONS_TAB: lemons}
    lazy.tabs(tabs)
    one_gpu(run, clicked.get("gpu"), grid_click)


st.title("GPUs")
state.render_run_page(page, state.run_or_stop())
