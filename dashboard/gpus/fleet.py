"""The fleet from Prometheus: every host's temperature or power over a recent window, its band and the
hottest and coolest hosts (a run ingested from a Prometheus server only)."""

import streamlit as st

from dashboard import chart_view, table_view
from dashboard.charts import gpu_telemetry as telemetry_charts
from dashboard.format import fmt_duration, fmt_int, fmt_time
from dashboard.queries import prometheus
from dashboard.text import md
from engine.errors import GoodputError
from engine.store import RunInfo

FLEET_POINTS = 600  # steps of the fleet window: about the chart's width in pixels
FLEET_WINDOWS = {"1 h": 3600.0, "6 h": 6 * 3600.0, "24 h": 24 * 3600.0}
FLEET_DEFAULT_WINDOW = "6 h"  # issue 15's page window


def fleet_section(run: RunInfo) -> None:
    """A watched run's every GPU at once, from Prometheus: the spread across GPUs over the window (max, p99,
    median, min) and the hosts at either end. Asked of the recording rules when Prometheus has them loaded
    (data/prometheus/goodput-rules.yml: a 24,576-GPU window in well under 2 s), else of the raw series."""
    access, error = prometheus.prometheus_access_or_error(run)
    if access is None and error is None:
        return
    st.subheader("Fleet telemetry (from Prometheus)")
    if error is not None:
        st.error(f"This run's Prometheus settings cannot be read: {md(error)}", icon=":material/error:")
        return
    left, right = st.columns(2)
    what = left.segmented_control(
        "Metric", list(prometheus.FLEET_METRICS), default="temperature", key="fleet_metric"
    )
    window = right.segmented_control(
        "Window (ending at the last cycle)",
        list(FLEET_WINDOWS),
        default=FLEET_DEFAULT_WINDOW,
        key="fleet_window",
    )
    what = what or "temperature"
    window = window or FLEET_DEFAULT_WINDOW
    metric, unit = prometheus.FLEET_METRICS[what]
    end = run.started_at.timestamp() + run.duration_s
    start = end - FLEET_WINDOWS[window]
    try:
        fleet = prometheus.prometheus_fleet(access, metric, start, end, FLEET_POINTS)
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
    chart_view.plotly(telemetry_charts.fleet_band(fleet.band, unit), width="stretch")
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
