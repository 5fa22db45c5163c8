"""The throttled and slow GPUs: per GPU, why its clocks were held down (DCGM's clocks-event reasons in words), how
often (a share of its samples), how far (its SM clock), the violation counters where an observed run read them,
and a simulated run's fail-slow episodes on it; worst first, with charts of the reasons."""

import polars as pl
import streamlit as st

from dashboard import chart_view, table_view
from dashboard.charts import gpus_throttled as charts
from dashboard.format import fmt_int, fmt_pct
from dashboard.gpus.common import SHOWN_ROWS, figure_column, metric
from dashboard.queries import gpus as gpu_queries
from dashboard.queries import gpus_throttled as queries
from dashboard.text_exprs import duration_text
from engine.analysis.definitions import definition
from engine.store import RunInfo

FEW_WINDOWS = 10  # fewer windows than this over the run: no timeline, the reasons' bars say it all


def _text_figure(key: str) -> st.column_config.Column:
    """A registered duration figure shown as text ("2 h 5 min")."""
    return st.column_config.TextColumn(definition(key).label, help=definition(key).help)


COLUMNS = {
    "hostname": st.column_config.TextColumn("host"),
    "gpu_index": st.column_config.NumberColumn("GPU index", format="%d"),
    "gpu_id": st.column_config.NumberColumn("GPU", format="%d"),
    "reasons": st.column_config.ListColumn("throttle reasons", width="medium"),
    "throttled_share": figure_column("gpu_throttled_share", format="percent"),
    "throttled_samples": st.column_config.NumberColumn("throttled samples", format="%d"),
    "samples": st.column_config.NumberColumn("samples read", format="%d"),
    "lowest_clock_mhz": figure_column("lowest_sm_clock_throttled", format="%.0f MHz"),
    "median_clock_mhz": figure_column("median_sm_clock_throttled", format="%.0f MHz"),
    "power_violation": _text_figure("power_violation_time"),
    "thermal_violation": _text_figure("thermal_violation_time"),
    "slow_episodes": figure_column("gpu_slow_episodes", format="%d"),
    "time_slow": _text_figure("gpu_time_slow"),
    "worst_factor": figure_column("gpu_worst_slowdown", format="%.2f×"),
}


def shown(gpus: pl.DataFrame, counters: bool, episodes: bool, events: bool = False) -> pl.DataFrame:
    """The table's columns: durations in words, the violation columns only where the run read the counters, the
    fail-slow ones only where it has episodes, no share of samples where its rows are events (`events`)."""
    frame = gpus.with_columns(
        duration_text("power_violation_s").alias("power_violation"),
        duration_text("thermal_violation_s").alias("thermal_violation"),
        duration_text("slow_s").alias("time_slow"),
    )
    columns = ["hostname", "gpu_index", "gpu_id", "reasons"]
    columns += [] if events else ["throttled_share", "throttled_samples", "samples"]
    columns += ["lowest_clock_mhz", "median_clock_mhz"]
    columns += ["power_violation", "thermal_violation"] if counters else []
    columns += ["slow_episodes", "time_slow", "worst_factor"] if episodes else []
    return frame.select(columns)


def throttled_section(run: RunInfo) -> None:
    seen = queries.coverage(run.run_id)
    gpus = queries.throttled_gpus(run.run_id, run.duration_s)
    clocks = seen["clock_samples"] > 0 or seen["counter_samples"] > 0
    if not clocks:
        st.info(
            "This run has no SM clock or throttle-reason readings, so which GPUs were throttled is not known."
        )
    if gpus.is_empty():
        if clocks:
            st.info(nothing_throttled(run.run_id, seen["clock_samples"]))
        return
    throttled = gpus.filter(
        (pl.col("throttled_samples") > 0)
        | (pl.col("power_violation_s").fill_null(0) > 0)
        | (pl.col("thermal_violation_s").fill_null(0) > 0)
    )
    episodes = bool((gpus["slow_episodes"] > 0).any())
    # a watched run (goodput watch) stores a GPU's clocks only at the moments its reasons changed or a counter rose:
    # events, of which a share says nothing about time
    events = isinstance(run.scenario, dict) and run.scenario.get("source") == "watch"
    section_metrics(
        gpus, throttled.height if clocks else None, None if events else seen["clock_samples"], episodes
    )
    st.caption(table_caption(gpus.height, episodes, events))
    top = queries.top_gpus(run.run_id, run.duration_s, SHOWN_ROWS)
    table_view.dataframe(
        shown(top, seen["counter_samples"] > 0, episodes, events),
        hide_index=True,
        width="stretch",
        column_config=COLUMNS,
    )
    if gpus.height > SHOWN_ROWS:
        rest = gpus.height - SHOWN_ROWS
        st.caption(f"… and {rest:,} more GPU{'' if rest == 1 else 's'}, not listed.")
    reasons_charts(run, throttled)


def section_metrics(
    gpus: pl.DataFrame, throttled: int | None, clock_samples: int | None, episodes: bool
) -> None:
    """Throttled GPUs (a dash where nothing was read), the share of samples throttled (none for a run of events:
    `clock_samples` None) and, for a run with fail-slow episodes on GPUs, how many GPUs had one."""
    figures = [("throttled_gpus", "–" if throttled is None else fmt_int(throttled))]
    if clock_samples is not None:
        share = int(gpus["throttled_samples"].sum()) / clock_samples if clock_samples else None
        figures.append(("throttled_samples_share", share_text(share)))
    if episodes:
        figures.append(("gpus_with_slow_episodes", fmt_int(int((gpus["slow_episodes"] > 0).sum()))))
    for column, (key, value) in zip(st.columns(len(figures)), figures, strict=True):
        metric(column, key, value)


def share_text(share: float | None) -> str:
    """A share of samples to two decimals; a share too small for them (a few throttled samples of millions)
    reads "< 0.01%", never "0.00%"."""
    return "< 0.01%" if share is not None and 0 < share < 0.00005 else fmt_pct(share, 2)


def table_caption(listed: int, episodes: bool, events: bool = False) -> str:
    top = f"the worst {SHOWN_ROWS} of {listed:,}" if listed > SHOWN_ROWS else f"all {listed:,}"
    if events:
        how = (
            "the most moments with a throttle reason set, then the most violation time. This watched run stores "
            "a GPU's clocks only at the moments its reasons changed or a violation counter rose (goodput watch), "
            "so no share of samples is given: the violation times say how long each GPU was held down."
        )
    else:
        how = (
            "the most samples with a throttle reason set, then the longest time slow, then the most violation "
            "time. Their share is a share of samples, not of time: a throttle shorter than the sampling step can "
            "fall between samples."
        )
    slow = (
        " A simulated run also lists each GPU's own fail-slow episodes (`slow.gpu_thermal_*`, `slow.gpu_power_*`),"
        " sampled or not."
        if episodes
        else ""
    )
    return (
        f"GPUs throttled for power or heat, or slow ({top}), worst first: {how} The SM clocks are those of the "
        f"throttled samples.{slow}"
    )


def nothing_throttled(run_id: str, clock_samples: int) -> str:
    """The sentence for a run whose GPUs were never held down, naming the reasons that were set, if any."""
    others = queries.other_reasons(queries.reasons_seen(run_id))
    read = (
        f"none of its {clock_samples:,} samples with a clocks-event reading had a power or thermal reason set"
        if clock_samples
        else "its violation counters never rose"
    )
    also = f" (the only reasons seen: {', '.join(others)})" if others else ""
    return f"No GPU was throttled in this run: {read}{also}."


def reasons_charts(run: RunInfo, throttled: pl.DataFrame) -> None:
    """Throttled GPUs by reason over the run, and per window where the run is long enough to show a trend."""
    counts = charts.reasons_count(throttled)
    if counts.is_empty():
        return
    window = gpu_queries.xid_window(run.duration_s)
    timeline = run.duration_s / window >= FEW_WINDOWS
    left, right = st.columns([1, 2]) if timeline else (st.container(), None)
    chart_view.plotly(charts.reasons_bars(counts), where=left, width="stretch")
    if right is not None:
        frame = queries.throttle_timeline(run.run_id, run.duration_s, window)
        chart_view.plotly(
            charts.throttle_timeline(frame, run.started_at, window), where=right, width="stretch"
        )
