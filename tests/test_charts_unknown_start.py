"""A run whose date is unknown (a kernel log stamped in seconds since boot: engine.store.run.UNKNOWN_START) draws
its times as time from its start on every chart, "day 1 03:25", never as a 1970 date; a run with a known start
keeps its UTC dates. Each chart that draws run times is built here for both, from small hand-made frames.

Plotly needs the times as dates (a number of up to four digits on a date axis is read as a year), so an unknown
start's times sit on the 1970-01-01 origin: 1970 may be in the raw times (x, a bar's base, ranges, tick
positions) and nowhere else, and every format the reader sees is the time from the start."""

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.charts import common, gpus, incidents, jobs, network, overview, racks
from dashboard.format import fmt_run_time
from engine.limits import MAX_RUN_DAYS
from engine.store.run import UNKNOWN_START

KNOWN = datetime(2024, 3, 1, tzinfo=UTC)
LATER = 3 * 3600 + 25 * 60 + 7  # 3 h 25 min 7 s after the start


def gantt(started_at: datetime, last_s: float = LATER) -> go.Figure:
    attempts = pl.DataFrame(
        {
            "job_id": ["j1", "j1"],
            "label": ["train", "train"],
            "attempt": [1, 2],
            "start_s": [60.0, 1200.0],
            "end_s": [900.0, last_s],
            "end_reason": ["faulty_gpu", "completed"],
            "lost_work_s": [300.0, 0.0],
        }
    )
    checkpoints = pl.DataFrame({"job_id": ["j1"], "label": ["train"], "start_s": [600.0]})
    waiting = pl.DataFrame({"job_id": ["j1"], "label": ["train"], "submit_s": [0.0], "start_s": [60.0]})
    return jobs.attempts_gantt(attempts, started_at, ["train"], checkpoints, waiting=waiting)


def queue(started_at: datetime, last_s: float = LATER) -> go.Figure:
    frame = pl.DataFrame(
        {"t_s": [0.0, 600.0, last_s], "queued_jobs": [1.0, 2.0, 0.0], "queued_gpus": [8, 16, 0]}
    )
    return jobs.queue_over_time(frame, started_at)


def utilisation(started_at: datetime, last_s: float = LATER) -> go.Figure:
    util = pl.DataFrame(
        {"t_s": [0.0, last_s], "busy_gpus": [6, 8], "unavailable_gpus": [2, 0], "total_gpus": [16, 16]}
    )
    frag = pl.DataFrame({"t_s": [0.0, last_s], "fragmentation": [0.5, 0.25]})
    return jobs.utilisation_and_fragmentation(util, frag, started_at)


def incident_timeline(started_at: datetime, last_s: float = LATER) -> go.Figure:
    frame = pl.DataFrame(
        {
            "incident_id": [1, 2],
            "t_s": [0.0, last_s],
            "cause": ["faulty_gpu", "planned_maintenance"],
            "category": ["GPU", "Planned"],
            "gpu_hours_lost": [8.0, 2.0],
        }
    )
    return incidents.timeline(frame, started_at)


def per_day(started_at: datetime, last_s: float = LATER) -> go.Figure:
    days = np.arange(int(last_s // 86400) + 1)
    frame = pl.DataFrame({"day": days, "planned": [1] * days.size, "unexpected": [2] * days.size})
    return incidents.per_day(frame, started_at)


def link_utilisation(started_at: datetime, last_s: float = LATER) -> go.Figure:
    frame = pl.DataFrame(
        {"t_s": [0.0, last_s], "tier": ["gpu_rtsw"] * 2, "mean_util": [10.0, 20.0], "max_util": [40.0, 60.0]}
    )
    return network.utilisation(frame, started_at)


def hot_links(started_at: datetime, last_s: float = LATER) -> go.Figure:
    frame = pl.DataFrame(
        {"label": ["a", "a", "b", "b"], "mean_util": [50.0, 50.0, 20.0, 20.0], "t_s": [0.0, last_s] * 2}
    ).with_columns(util=pl.Series([40.0, 60.0, 10.0, 30.0]))
    return network.hot_links(frame, started_at)


def xid_timeline(started_at: datetime, last_s: float = LATER) -> go.Figure:
    counts = pl.DataFrame({"t_s": [0.0, last_s - 60.0], "xid": [79, 13], "count": [1, 2]})
    return gpus.xid_timeline(counts, started_at, 60.0)


def xid_strip(started_at: datetime, last_s: float = LATER) -> go.Figure:
    return gpus.xid_strip(pl.DataFrame({"t_s": [1.0, last_s], "xid": [79, 79]}), started_at)


def offenders(started_at: datetime, last_s: float = LATER) -> go.Figure:
    frame = pl.DataFrame(
        {"label": ["node001"] * 2, "t_s": [1.0, last_s], "cause": ["faulty_gpu"] * 2, "gpu_id": [3, 5]}
    )
    return gpus.offender_history(frame, started_at)


def telemetry(started_at: datetime, last_s: float = LATER) -> go.Figure:
    samples = pl.DataFrame(
        {"t_s": [0.0, last_s], "temp_c": [60.0, 70.0], "power_w": [500.0, 600.0], "util_pct": [90.0, 95.0]}
    )
    return gpus.gpu_telemetry(samples, started_at, tdp_w=700.0)


def one_scrape(started_at: datetime, last_s: float = LATER) -> go.Figure:
    samples = pl.DataFrame({"t_s": [last_s], "temp_c": [60.0], "power_w": [500.0], "util_pct": [90.0]})
    return gpus.gpu_telemetry(samples, started_at)


def ecc(started_at: datetime, last_s: float = LATER) -> go.Figure:
    trend = pl.DataFrame({"gpu_id": [3, 3], "t_s": [0.0, last_s], "ecc_sbe": [0, 4], "ecc_dbe": [0, 1]})
    return gpus.ecc_trend(trend, {3: "node001 GPU 3"}, started_at)


def ettr(started_at: datetime, last_s: float = LATER) -> go.Figure:
    t = np.linspace(0.0, last_s, 5)  # buckets of a quarter of the run, the last at its end
    timeline = pl.DataFrame({"t_s": t, "ettr": [0.9] * t.size, "ettr_cumulative": [0.9] * t.size})
    marks = pl.DataFrame({"t_s": [t[-1]], "cause": ["faulty_gpu"]})
    return overview.ettr_over_time(timeline, started_at, marks, closed_form=0.92)


def state_history(started_at: datetime, last_s: float = LATER) -> go.Figure:
    intervals = pl.DataFrame(
        {
            "hostname": ["node001", "node001"],
            "state": ["running", "down"],
            "start_s": [0.0, 1800.0],
            "end_s": [1800.0, last_s],
            "job_id": ["j1", None],
        }
    )
    return racks.state_history(intervals, started_at)


CHARTS = {
    f.__name__: f
    for f in (
        gantt,
        queue,
        utilisation,
        incident_timeline,
        per_day,
        link_utilisation,
        hot_links,
        xid_timeline,
        xid_strip,
        offenders,
        telemetry,
        one_scrape,
        ecc,
        ettr,
        state_history,
    )
}
ORIGIN = np.datetime64("1970-01-01T00:00:00", "ms")
RAW_TIMES = ("range", "tickvals", "minallowed")


def shown_json(fig: go.Figure) -> str:
    """The figure's JSON without its raw times (which Plotly needs as dates): what formats and words it has."""
    spec = json.loads(fig.to_json())
    for trace in spec["data"]:
        trace.pop("x", None)
        trace.pop("base", None)
    for key, axis in spec["layout"].items():
        if key.startswith("xaxis"):
            for raw in RAW_TIMES:
                axis.pop(raw, None)
    return json.dumps(spec)


def x_axes(fig: go.Figure) -> list:
    return list(fig.select_xaxes())


def hovertemplates(fig: go.Figure) -> list[str]:
    return [t.hovertemplate for t in fig.data if isinstance(getattr(t, "hovertemplate", None), str)]


@pytest.mark.parametrize("name", CHARTS)
def test_an_unknown_start_reads_as_time_from_the_start_with_no_1970_anywhere(name):
    fig = CHARTS[name](UNKNOWN_START)
    text = shown_json(fig)
    assert "1970" not in text and "UTC" not in text and "%Y" not in text
    for axis in x_axes(fig):
        assert axis.type == "date"
        assert axis.hoverformat.startswith("day %-j %H:%M") and axis.hoverformat.endswith(" from start")
        assert axis.tickformat is None  # a chart's clock format ("%H:%M:%S") would read as a time of day
        if axis.tickmode == "array":  # laid out here: every label names its day from 1
            assert axis.ticktext and all(label.startswith("day ") for label in axis.ticktext)
        else:
            stops = [stop.value for stop in axis.tickformatstops]
            assert stops and all(value.startswith("day %-j") for value in stops)
            assert axis.minallowed == ORIGIN and axis.maxallowed is None
    for template in hovertemplates(fig):
        assert "%{x|" not in template or "%{x|day %-j %H:%M" in template
    if name in ("gantt", "xid_strip"):  # the axes that said UTC say what they show now
        assert fig.layout.xaxis.title.text == common.ELAPSED_TITLE


@pytest.mark.parametrize("name", CHARTS)
def test_a_known_start_keeps_its_utc_dates(name):
    fig = CHARTS[name](KNOWN)
    text = fig.to_json()
    assert "2024-03-01" in text and "day %-j" not in text and "from start" not in text
    for axis in x_axes(fig):
        assert not axis.tickformatstops and axis.tickmode is None and axis.minallowed is None
        assert axis.hoverformat is None and axis.tickformat in (None, "%H:%M:%S")
    for template in hovertemplates(fig):
        assert "%{x|" not in template or "%{x|%Y-%m-%d %H:%M" in template


def test_the_known_gantt_and_strip_keep_their_axes_as_they_were():
    axis = gantt(KNOWN).layout.xaxis
    assert (axis.type, axis.side, axis.title.text, axis.title.standoff) == ("date", "top", "UTC", 4)
    strip = xid_strip(KNOWN)
    assert (strip.layout.xaxis.tickformat, strip.layout.xaxis.title.text) == ("%H:%M:%S", "time (UTC)")
    assert strip.data[0].hovertemplate == "%{x|%Y-%m-%d %H:%M:%S.%L} UTC<extra>%{fullData.name}</extra>"
    assert strip.data[0].x[0] == np.datetime64("2024-03-01T00:00:01.000")
    failure = next(t for t in gantt(KNOWN).data if t.name == "Failure here")
    assert failure.hovertemplate == "%{y}<br>%{x|%Y-%m-%d %H:%M:%S} UTC<br>%{text}<extra>failure</extra>"


def test_an_unknown_start_draws_its_times_on_the_1970_origin():
    strip = xid_strip(UNKNOWN_START)
    assert list(strip.data[0].x) == [ORIGIN + np.timedelta64(1, "s"), ORIGIN + np.timedelta64(LATER, "s")]
    assert strip.data[0].hovertemplate == "%{x|day %-j %H:%M:%S.%L} from start<extra>%{fullData.name}</extra>"
    # its margin before the first mark would reach before the start, which %j calls day 365: it starts there
    end = ORIGIN + np.timedelta64(round((LATER + (LATER - 1) * 0.05) * 1000), "ms")
    assert list(strip.layout.xaxis.range) == [ORIGIN, end]
    assert strip.layout.xaxis.minallowed == ORIGIN and strip.layout.xaxis.tickmode is None
    failure = next(t for t in gantt(UNKNOWN_START).data if t.name == "Failure here")
    assert list(failure.x) == [ORIGIN + np.timedelta64(900, "s")]
    assert (
        failure.hovertemplate == "%{y}<br>%{x|day %-j %H:%M:%S} from start<br>%{text}<extra>failure</extra>"
    )


def test_a_bar_centred_on_the_start_gets_ticks_that_never_read_day_365():
    fig = per_day(UNKNOWN_START, last_s=2 * 86400 + 10.0)  # three days, the first bar half before the start
    axis = fig.layout.xaxis
    assert axis.tickmode == "array"
    # every 12 h from the start: nothing but the margin is before it
    assert list(axis.ticktext) == [f"day {d} {h}:00" for d in (1, 2, 3) for h in ("00", "12")]
    assert list(axis.tickvals) == [ORIGIN + np.timedelta64(12 * i, "h") for i in range(6)]


@pytest.mark.parametrize("name", CHARTS)
def test_a_run_past_its_365th_day_counts_days_on_from_the_start(name):
    """1970 has 365 days: %j would start again at 1 on the 366th, so past it the ticks are laid out here and the
    hovers give seconds from the start (%s on the 1970 origin), which no calendar wraps."""
    last_s = 400 * 86400.0 + 3600.0  # day 401
    fig = CHARTS[name](UNKNOWN_START, last_s=last_s)
    assert "1970" not in shown_json(fig) and "%-j" not in json.dumps(hovertemplates(fig))
    for axis in x_axes(fig):
        assert axis.tickmode == "array" and axis.hoverformat == "%s s from start"
        assert axis.ticktext[-1].startswith("day 4")
        days = [int(label.split()[1]) for label in axis.ticktext]
        assert days == sorted(days) and days[0] >= 0 and days[-1] <= 402
    for template in hovertemplates(fig):
        assert "%{x|" not in template or "%{x|%s s} from start" in template


def test_the_longest_run_allowed_is_labelled_to_its_last_day():
    last_s = MAX_RUN_DAYS * 86400.0
    axis = incident_timeline(UNKNOWN_START, last_s=last_s).layout.xaxis
    assert axis.ticktext[0] == "day 1" and axis.ticktext[-1] in ("day 3001", "day 3501")
    assert all(label.split()[1].isdigit() for label in axis.ticktext)


# ----- the helpers ---------------------------------------------------------------------------------------------


def test_elapsed_labels_count_days_from_one():
    assert common.elapsed_label(0.0, 1800) == "day 1 00:00"
    assert common.elapsed_label(86400 + 17 * 3600 + 40 * 60, 60) == fmt_run_time(86400 + 17 * 3600 + 40 * 60)
    assert common.elapsed_label(400 * 86400.0, 50 * 86400) == "day 401"
    assert common.elapsed_label(LATER, 5) == "day 1 03:25:07"
    assert common.elapsed_label(LATER + 0.25, 0.1) == "day 1 03:25:07.250"
    assert common.elapsed_label(-2.0, 1) == "day 0 23:59:58"  # the day before day 1


def test_hover_time_by_precision():
    assert common.hover_time(KNOWN, "minutes") == "%{x|%Y-%m-%d %H:%M} UTC"
    assert common.hover_time(KNOWN) == "%{x|%Y-%m-%d %H:%M:%S} UTC"
    assert common.hover_time(UNKNOWN_START) == "%{x|day %-j %H:%M:%S} from start"
    assert common.hover_time(UNKNOWN_START, "milliseconds") == "%{x|day %-j %H:%M:%S.%L} from start"


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=365 * 86400 - 1))
def test_the_d3_formats_on_the_1970_origin_say_what_fmt_run_time_says(t_s):
    """Plotly's d3 formats share their directives with C's strftime: on the origin the formats give the run's day
    and time, as the text of the page does (dashboard.format.fmt_run_time), for every second of the first 365
    days (where time_axis lets them label the axis)."""
    when = datetime(1970, 1, 1) + timedelta(seconds=t_s)
    assert when.strftime(common._ELAPSED_FORMATS["minutes"]) == fmt_run_time(t_s)
    assert when.strftime(common._ELAPSED_FORMATS["seconds"]) == common.elapsed_label(t_s, 1)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=-86400.0, max_value=MAX_RUN_DAYS * 86400.0),
    st.floats(min_value=0.01, max_value=MAX_RUN_DAYS * 86400.0),
)
def test_listed_ticks_are_round_in_range_and_named_apart(low_s, span_s):
    high_s = low_s + span_s
    ticks = common._listed_ticks(low_s * 1000.0, high_s * 1000.0)
    labels = ticks["ticktext"]
    values = [(v - ORIGIN) / np.timedelta64(1, "ms") for v in ticks["tickvals"]]  # ms from the start
    assert 1 <= len(values) <= common.TICKS + 1
    first_s = max(low_s, 0.0) if high_s >= 0 else low_s  # none before the start unless the whole axis is
    assert all(first_s * 1000.0 - 1e-3 <= v <= high_s * 1000.0 + 1e-3 for v in values)
    assert len(set(labels)) == len(labels)  # each tick says a different time
    assert all(label.startswith("day ") for label in labels)
