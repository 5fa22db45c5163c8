"""GPUs: the health grid of every GPU at time t (filters by state, incident cause and XID), XID events over time,
ECC trends, the lemons and repeat offenders (the lemon rule scored against the simulator's ground truth where
the run has one), and one GPU's telemetry and events.

URL: ?t= (seconds since the run's start), ?state=, ?cause=, ?xid= (comma-separated) and ?gpu= (GPU id)
reproduce the view. While a live-ingest run is selected the page reruns itself as scrapes arrive.
"""

from collections.abc import Callable

import polars as pl
import streamlit as st

from dashboard import state, table_view
from dashboard.charts import gpus as charts
from dashboard.format import fmt_duration, fmt_int, fmt_pct, fmt_time
from dashboard.queries import gpus as queries
from dashboard.queries.racks import parse_t, state_time
from dashboard.text import md
from dashboard.text_exprs import cause_label_text, time_text
from dashboard.time_slider import moment_slider, time_axis
from engine.analysis.definitions import definition
from engine.analysis.lemon_score import LemonRule, LemonScore, score_lemon_rule
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.report.palette import OUT_OF_SERVICE_STATES, cause_label, xid_label
from engine.store import RunInfo

TELEMETRY_POINTS = 500  # buckets drawn for one GPU, whatever the run's length
ECC_GPUS = 10  # GPUs drawn in the ECC trends
ECC_POINTS = 200  # buckets of the ECC trends
MATCH_ROWS = 500  # rows of the table of GPUs that pass the filters
SHOWN_ROWS = 50  # rows of the lemon and repeat-offender tables (their metrics count them all)
FEW_WINDOWS = 10  # fewer XID windows than this over the run: draw each event instead of counts per window
SHORT_RUN_S = 3600.0  # in a run shorter than this, times also say their seconds from the run's start
TRUTH_TITLE = "The lemon rule against the simulator's ground truth"
FLEET_POINTS = 600  # steps of the fleet window: about the chart's width in pixels
FLEET_WINDOWS = {"1 h": 3600.0, "6 h": 6 * 3600.0, "24 h": 24 * 3600.0}
FLEET_DEFAULT_WINDOW = "6 h"  # issue 15's page window


def metric(column, key: str, value: str) -> None:
    """A figure of the ledger (engine.analysis.definitions): its label and its help, wherever it is shown."""
    column.metric(definition(key).label, value, help=definition(key).help)


def figure_column(key: str, **kwargs) -> st.column_config.Column:
    """A table column that shows a registered figure: the figure's label and help."""
    return st.column_config.NumberColumn(definition(key).label, help=definition(key).help, **kwargs)


# How the page's tables show their columns: names in words, counts whole, GPU-hours to one decimal.
COLUMNS = {
    "gpu_id": st.column_config.NumberColumn("GPU", format="%d"),
    "host_id": st.column_config.NumberColumn("host id", format="%d"),
    "hostname": st.column_config.TextColumn("host"),
    "rack_id": st.column_config.NumberColumn("rack", format="%d"),
    "gpu_index": st.column_config.NumberColumn("GPU index", format="%d"),
    "state": st.column_config.TextColumn("state"),
    "temp_c": st.column_config.NumberColumn("temperature (°C)", format="%.0f"),
    "power_w": st.column_config.NumberColumn("power (W)", format="%.0f"),
    "xid_events": figure_column("xid_events", format="%d"),
    "last_xid": st.column_config.TextColumn("last XID"),
    "xid": st.column_config.TextColumn("XID"),
    "causes": st.column_config.ListColumn("causes"),
    "incidents": figure_column("unplanned_incidents", format="%d"),
    "gpu_hours_lost": figure_column("incident_gpu_hours_lost", format="%.1f"),
    "failures": st.column_config.NumberColumn("repair-sending incidents", format="%d"),
    "most_in_window": st.column_config.NumberColumn("most in one window", format="%d"),
    "flagged": st.column_config.TextColumn("meets the rule at (UTC)"),
    "bad": st.column_config.TextColumn(
        "ground truth",
        help="Whether the simulator drew the host bad: " + definition("bad_hosts_ground_truth").help,
    ),
    "first": st.column_config.TextColumn("first (UTC)"),
    "last": st.column_config.TextColumn("last (UTC)"),
    "time": st.column_config.TextColumn("time (UTC)"),
    "from_start_s": st.column_config.NumberColumn("seconds from start", format="%.3f"),
    "ecc_dbe": st.column_config.NumberColumn("double-bit ECC (most)", format="%d"),
    "ecc_sbe": st.column_config.NumberColumn("single-bit ECC (most)", format="%d"),
    "kind": st.column_config.TextColumn("kind"),
    "what": st.column_config.TextColumn("what"),
    "incident_id": st.column_config.NumberColumn("incident", format="%d"),
}


def table(place, frame: pl.DataFrame) -> None:
    table_view.dataframe(
        frame,
        where=place,
        hide_index=True,
        width="stretch",
        column_config={c: COLUMNS[c] for c in frame.columns if c in COLUMNS},
    )


def times(frame: pl.DataFrame, run: RunInfo, *columns: str) -> pl.DataFrame:
    """Seconds-since-start columns shown as UTC times (column `first_s` becomes `first`)."""
    return frame.with_columns(time_text(c, run.started_at).alias(c.removesuffix("_s")) for c in columns).drop(
        *columns
    )


def in_words(frame: pl.DataFrame) -> pl.DataFrame:
    """States, causes and XIDs as engine.report.palette names them; lost GPU-hours to one decimal."""
    named = {
        "state": charts.gpu_state_text("state"),
        "causes": charts.causes_text("causes"),
        "last_xid": charts.xid_label_text("last_xid"),
        "xid": charts.xid_label_text("xid"),
        "gpu_hours_lost": pl.col("gpu_hours_lost").round(1),
        "bad": pl.when(pl.col("bad")).then(pl.lit("bad")).when(~pl.col("bad")).then(pl.lit("good")),
    }
    return frame.with_columns(expr.alias(c) for c, expr in named.items() if c in frame.columns)


def when(run: RunInfo, t_s: float) -> str:
    """A moment of the run as a UTC date, and for a short run (minutes of a log) its seconds from the start."""
    text = fmt_time(run.started_at, t_s)
    return text + (f" ({t_s:,.1f} s from the start)" if run.duration_s < SHORT_RUN_S else "")


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


def health(run: RunInfo) -> Callable[[], None] | None:
    """The time slider, counts and filters; returns what draws the grid once its samples are in (None: no
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

    filtered = bool(chosen_states or chosen_causes or chosen_xids)
    match = queries.matching(grid, chosen_states, chosen_causes, chosen_xids) if filtered else None
    st.caption(
        f"Every GPU at {when(run, t_s)}: a rack is a column of hosts, a host a line of its "
        "GPUs. A GPU takes its host's state unless it has failed itself; hover for its last temperature "
        "and power, its XIDs and incidents so far."
        + (f" **{int(match.sum()):,} of {grid.height:,} GPUs match the filters.**" if filtered else "")
    )
    place = st.container()
    with st.expander("GPUs by state"):
        st.plotly_chart(charts.health_counts(counts), width="stretch")

    def draw() -> None:
        cells = grid.join(samples(), on="gpu_id", how="left")
        place.plotly_chart(charts.health_grid(cells, match), width="stretch", key=f"gpus_grid:{run.run_id}")
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

    return draw


def xid_section(run: RunInfo) -> None:
    st.subheader("XID events by code")
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
        st.plotly_chart(charts.xid_strip(events, run.started_at), width="stretch")
    else:
        timeline = queries.xid_timeline(run.run_id, window, picked)
        st.caption(
            f"Every XID event counted per {fmt_duration(window)} window, not the last value of the "
            f"exporter's gauge (which never resets){only or '; a code keeps its colour on every chart'}."
        )
        st.plotly_chart(charts.xid_timeline(timeline, run.started_at, window), width="stretch")
    st.plotly_chart(charts.xid_counts(totals), width="stretch")


def ecc_section(run: RunInfo, ecc_top: Callable[[], pl.DataFrame]) -> None:
    st.subheader("ECC errors")
    top = ecc_top()
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
    st.plotly_chart(charts.ecc_trend(trend, labels, run.started_at), width="stretch")
    table(st, times(top.drop("gpus_with_ecc"), run, "first_s"))


def lemon_section(run: RunInfo) -> int | None:
    """The lemons and repeat offenders; returns a GPU clicked in the offenders' history, if any."""
    st.subheader("Lemons and repeat offenders")
    failures, window = queries.repair_rule(run.scenario)
    lemons = queries.lemons(run.run_id, failures, window)
    cluster = RunSummary.from_json(run.summary).cluster
    pulled = cluster.lemons if cluster is not None else None
    cols = st.columns(4)
    metric(cols[0], "lemon_rule_hosts", fmt_int(lemons.height))
    metric(cols[1], "lemons_pulled", fmt_int(pulled) if isinstance(pulled, int) else "–")
    metric(cols[2], "repeat_offender_hosts", fmt_int(queries.offender_count(run.run_id, "host", 2)))
    metric(cols[3], "repeat_offender_gpus", fmt_int(queries.offender_count(run.run_id, "gpu", 2)))
    short = (
        f" This run spans {fmt_duration(run.duration_s)}, less than the rule's window: only failures that "
        "close together can meet it."
        if 0 < run.duration_s < window
        else ""
    )
    st.caption(
        f"The lemon rule, on the incidents this run observed: {failures} hardware failures within "
        f"{fmt_duration(window)} (the run's repair.lemon_failures and repair.lemon_window) send a host's "
        "part back to the vendor."
        + short
        + (
            ""
            if isinstance(pulled, int)
            else " The run has no count of lemon hosts pulled: only the simulator's repair model pulls hosts."
        )
    )
    # only a simulation knows its bad hosts: a replay feeds recorded failures, whatever hosts it may mark bad
    truth = queries.ground_truth(run.run_id) if run.kind == "simulate" else None
    if not lemons.is_empty():
        st.markdown(f"**{definition('lemon_rule_hosts').label}**")
        listed = lemons.head(SHOWN_ROWS)
        if truth is not None:  # each flagged host's truth beside its name
            listed = queries.with_truth(listed, truth).select(
                "host_id", "hostname", "bad", pl.exclude("host_id", "hostname", "bad")
            )
        table(st, in_words(times(listed, run, "flagged_s")))
    lemon_truth(run, lemons, truth, LemonRule(failures, window))
    lemon_hosts = queries.offenders(run.run_id, "host", minimum=2, limit=SHOWN_ROWS)
    lemon_gpus = queries.offenders(run.run_id, "gpu", minimum=2, limit=SHOWN_ROWS)
    with st.expander(f"{definition('unplanned_incidents').label} per host and per GPU (top {SHOWN_ROWS})"):
        left, right = st.columns(2)
        table(left, in_words(times(queries.offenders(run.run_id, "host"), run, "first_s", "last_s")))
        table(right, in_words(times(queries.offenders(run.run_id, "gpu"), run, "first_s", "last_s")))
    if lemon_hosts.is_empty() and lemon_gpus.is_empty():
        st.info("No host or GPU failed more than once in this run.")
        return None
    left, right = st.columns(2)
    left.markdown(f"**{definition('repeat_offender_hosts').label}** (the worst {SHOWN_ROWS} first)")
    table(left, in_words(times(lemon_hosts, run, "first_s", "last_s")))
    right.markdown(f"**{definition('repeat_offender_gpus').label}** (the worst {SHOWN_ROWS} first)")
    table(right, in_words(times(lemon_gpus, run, "first_s", "last_s")))
    if not lemon_gpus.is_empty() and "gpu" not in st.query_params:
        st.caption(f"The worst repeat offender is GPU {lemon_gpus['gpu_id'][0]}.")
    history = queries.offender_incidents(run.run_id, minimum=2)
    if history.is_empty():
        return None
    st.caption("Each incident of the worst hosts; click one on a GPU to open that GPU below.")
    clicked = st.plotly_chart(
        charts.offender_history(history, run.started_at),
        width="stretch",
        on_select="rerun",
        selection_mode="points",
        key=f"gpus_offenders:{run.run_id}",
    )
    return charts.clicked_gpu(clicked.selection if clicked else None)


def lemon_truth(run: RunInfo, lemons: pl.DataFrame, truth: pl.DataFrame | None, rule: LemonRule) -> None:
    """The lemon rule scored against the simulator's ground truth (hosts.bad): what it flagged that is bad,
    what bad it missed; for a run without ground truth, that it has none."""
    if truth is None:
        st.markdown(f"**{TRUTH_TITLE}**")
        st.info(
            "This run has no ground truth of bad hosts, so the lemon rule cannot be scored: "
            + (
                "it was written before simulated runs recorded which hosts the simulator drew bad."
                if run.kind == "simulate"
                else "it was observed (replayed or ingested), and nobody knows which of its hosts are "
                "systematically bad."
            )
        )
        return
    score = score_lemon_rule(lemons, truth, rule)
    st.markdown(truth_sentence(score))
    cols = st.columns(5)
    metric(cols[0], "lemon_rule_hosts", fmt_int(score.flagged_hosts))
    metric(cols[1], "lemon_rule_true_positives", fmt_int(score.true_positives))
    metric(cols[2], "lemon_rule_precision", fmt_pct(score.precision))
    metric(cols[3], "bad_hosts_ground_truth", fmt_int(score.bad_hosts))
    metric(cols[4], "lemon_rule_recall", fmt_pct(score.recall))
    st.caption(chance_sentence(score))
    counts = queries.lemon_truth_counts(run.run_id, rule.window_s)
    st.plotly_chart(charts.lemon_truth(counts, rule.failures), width="stretch")


def hosts_text(n: int) -> str:
    return f"{n:,} host" + ("" if n == 1 else "s")


def truth_sentence(score: LemonScore) -> str:
    """ "Flagged N hosts, M of them bad (precision P), found M of the K bad hosts (recall R)", in words where a
    ratio is undefined."""
    flagged = (
        f"flagged {hosts_text(score.flagged_hosts)}, {score.true_positives:,} of them bad "
        f"(precision {fmt_pct(score.precision)})"
        if score.flagged_hosts
        else "flagged no host (precision undefined)"
    )
    found = (
        f"found {score.true_positives:,} of the {score.bad_hosts:,} bad {'host' if score.bad_hosts == 1 else 'hosts'}"
        f" (recall {fmt_pct(score.recall)})"
        if score.bad_hosts
        else "and the simulator drew no bad host (failures.bad_host_fraction = 0: recall undefined)"
    )
    return f"**{TRUTH_TITLE}:** {flagged}, {found}."


def chance_sentence(score: LemonScore) -> str:
    """What flagging as many hosts at random would score, the yardstick for the rule's figures."""
    if not score.hosts:
        return ""
    expected = score.flagged_hosts * score.bad_hosts / score.hosts
    return (
        f"{score.bad_hosts:,} of the run's {score.hosts:,} hosts were drawn bad ({fmt_pct(score.chance_precision)}): "
        f"flagging {hosts_text(score.flagged_hosts)} at random would find about {expected:,.1f} bad ones "
        f"(precision {fmt_pct(score.chance_precision)}, recall {fmt_pct(score.chance_recall)}). Each bar "
        f"below is a share of its own group; hosts in the shaded part meet the rule ({score.rule.failures} "
        f"repair-sending incidents within {fmt_duration(score.rule.window_s)})."
    )


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
    events = queries.gpu_events(run.run_id, gpu)
    st.markdown(f"**Events** ({events.height})")
    if events.is_empty():
        st.caption("No incident or XID event on this GPU.")
    else:
        table(st, gpu_events(events, run))
    access, error = queries.prometheus_access_or_error(run)
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
    st.plotly_chart(
        charts.gpu_telemetry(telemetry, run.started_at, float(tdp) if tdp else None), width="stretch"
    )


def prometheus_gpu(run: RunInfo, access, hostname: str, index: int) -> None:
    """A watched run keeps no samples: the GPU's telemetry over the run's span comes from its Prometheus,
    down-sampled there to the points the chart draws."""
    start = run.started_at.timestamp()
    end = start + run.duration_s
    st.markdown("**Telemetry** (from Prometheus)")
    try:
        telemetry = queries.prometheus_telemetry(access, hostname, index, start, end, TELEMETRY_POINTS)
    except GoodputError as err:
        st.error(f"Prometheus could not answer: {md(err)}", icon=":material/error:")
        return
    if telemetry.is_empty():
        st.caption(f"Prometheus ({md(access.shown_url)}) holds no DCGM series of this GPU in the run's span.")
        return
    st.caption(
        f"{telemetry.height:,} points from {md(access.shown_url)}, one every {fmt_duration(telemetry['bucket_s'][0])}."
    )
    st.plotly_chart(charts.gpu_telemetry(telemetry, run.started_at), width="stretch")


def fleet_section(run: RunInfo) -> None:
    """A watched run's every GPU at once, from Prometheus: the spread across GPUs over the window (max, p99,
    median, min) and the hosts at either end. Asked of the recording rules when Prometheus has them loaded
    (data/prometheus/goodput-rules.yml: a 24,576-GPU window in well under 2 s), else of the raw series."""
    access, error = queries.prometheus_access_or_error(run)
    if access is None and error is None:
        return
    st.subheader("Fleet telemetry (from Prometheus)")
    if error is not None:
        st.error(f"This run's Prometheus settings cannot be read: {md(error)}", icon=":material/error:")
        return
    left, right = st.columns(2)
    what = left.segmented_control(
        "Metric", list(queries.FLEET_METRICS), default="temperature", key="fleet_metric"
    )
    window = right.segmented_control(
        "Window (ending at the last cycle)",
        list(FLEET_WINDOWS),
        default=FLEET_DEFAULT_WINDOW,
        key="fleet_window",
    )
    what = what or "temperature"
    window = window or FLEET_DEFAULT_WINDOW
    metric, unit = queries.FLEET_METRICS[what]
    end = run.started_at.timestamp() + run.duration_s
    start = end - FLEET_WINDOWS[window]
    try:
        fleet = queries.prometheus_fleet(access, metric, start, end, FLEET_POINTS)
    except GoodputError as err:
        st.error(f"Prometheus could not answer: {md(err)}", icon=":material/error:")
        return
    if fleet.band.is_empty():
        st.caption(f"Prometheus ({md(access.shown_url)}) holds no {metric} series in this window.")
        return
    step = (end - start) / max(fleet.band.height - 1, 1)
    source = (
        "the recording rules"
        if fleet.recorded
        else "the raw series (load data/prometheus/goodput-rules.yml into Prometheus to draw this from the"
        " recording rules, within 2 s at 24,576 GPUs; docs/prometheus.md)"
    )
    st.caption(
        f"{fmt_int(fleet.gpus)} GPUs over the {window} to {fmt_time(run.started_at, run.duration_s)}, one point every"
        f" {fmt_duration(step)}: the spread across every GPU at each step, from {source}, read in"
        f" {fleet.elapsed_s:.1f} s."
    )
    st.plotly_chart(charts.fleet_band(fleet.band, unit), width="stretch")
    hot, cool = st.columns(2)
    hot.markdown(f"**Highest {what}** (the hosts' highest reading in the window)")
    table_view.dataframe(
        where=hot,
        data=fleet.hottest.rename({"max": f"max ({unit})"}),
        hide_index=True,
        column_config={"host": st.column_config.TextColumn("host")},
    )
    cool.markdown(f"**Lowest {what}** (the hosts' lowest reading in the window)")
    table_view.dataframe(
        where=cool,
        data=fleet.coolest.rename({"min": f"min ({unit})"}),
        hide_index=True,
        column_config={"host": st.column_config.TextColumn("host")},
    )


def page(run_id: str) -> None:
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    live_every = state.live_refresh_s(run)
    if live_every:
        st.caption(state.live_note(run, live_every))
    # the two scans of the samples (ECC here, the grid's temperatures in `health`) start first and run while
    # the rest of the page is drawn
    ecc_top = queries.ecc_top_later(run.run_id, ECC_GPUS)
    fleet_section(run)
    draw_grid = health(run)
    xid_section(run)
    ecc_section(run, ecc_top)
    click = lemon_section(run)
    one_gpu(run, click)
    if draw_grid is not None:
        draw_grid()


st.title("GPUs")
state.render_run_page(page, state.run_or_stop())
