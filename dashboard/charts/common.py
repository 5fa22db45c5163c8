"""What every chart shares beyond the palette (engine.report.palette: one colour per meaning, shared with the HTML
export) and the number formats (dashboard.format): axis settings, and run times on a time axis.

Run times are seconds since the run's start. A run with a known start draws them as UTC dates. A run whose date
is unknown (a kernel log stamped in seconds since boot: engine.store.run.start_known) must not show an invented
1970 date: `as_time` puts its times on the 1970-01-01 origin (UNKNOWN_START), as Plotly needs dates on a date
axis, and `time_axis` and `hover_time` make that axis read as time from the start, "day 1 03:25" (day 1 is the
first day, as dashboard.format.fmt_run_time writes it), never as a calendar date.
"""

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from engine.store.run import UNKNOWN_START, start_known
from engine.units import MILLISECONDS_PER_DAY

# ----- axes ------------------------------------------------------------------------------------------------


def count_axis(largest: float | None) -> dict:
    """Axis settings for a count (events, GPUs): whole numbers from zero, never "0.5 events"; for a small
    largest count (an observed run with a handful of XIDs) a tick at every whole number, since Plotly would
    otherwise step by halves."""
    axis = {"rangemode": "tozero", "tickformat": ",d"}
    if largest is None or largest <= 10:
        axis["dtick"] = 1
    return axis


# ----- legends ----------------------------------------------------------------------------------------------


def legend_squares(entries: Iterable[tuple[str, str]]) -> list[go.Scatter]:
    """A legend for colours a heatmap draws (which has no legend of its own): one invisible trace a (name, colour),
    shown as a square of that colour."""
    return [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=name,
            showlegend=True,
            marker={"symbol": "square", "size": 12, "color": colour},
        )
        for name, colour in entries
    ]


# ----- Streamlit's look without Streamlit's theme pass ---------------------------------------------------------

# A chart drawn with st.plotly_chart(theme="streamlit") is drawn twice on every visit: Streamlit's chart passes the
# figure through its theme once more after mounting (JSON out and back in, a fresh `template`), and Plotly.react
# redraws everything when the template or any data array is a new object. For the big first-screen charts (the
# 24k-GPU health grid, the floor plan, the jobs' Gantt) that second draw is 0.1-0.25 s of every visit on 2 cores
# (issue 28). `plain_theme` readies such a chart for theme=None: Streamlit's light-theme look as the figure's own
# layout (the values its theme sets, read from Streamlit 1.67's template in the browser), no template at all, and a
# `datarevision`, which tells Plotly.react to compare data by that mark instead of by array identity. A constant
# mark is safe: Streamlit names a chart's element by a hash of its whole figure, so a figure with other data is a
# new element, drawn afresh (Plotly.newPlot), never an update of the old one.
STREAMLIT_FONT = '"Source Sans", "Source Sans Pro", sans-serif'
STREAMLIT_TEXT = "#808495"  # axis and hover text in Streamlit's chart theme
STREAMLIT_HEADING = "#2F2D2B"
STREAMLIT_LEGEND_TEXT = "#262730"
STREAMLIT_TICKS = "#e6eaf1"  # the theme's light tick marks, where a chart shows ticks
STREAMLIT_COLOURWAY = [
    "#0068c9",
    "#83c9ff",
    "#ff2b2b",
    "#ffabab",
    "#29b09d",
    "#7defa1",
    "#ff8700",
    "#ffd16a",
    "#6d3fc0",
    "#d5dae5",
]
# Streamlit's sequential (blues) and diverging (reds to blues) colour scales
_BLUES = "#e4f5ff #c7ebff #a6dcff #83c9ff #60b4ff #3d9df3 #1c83e1 #0068c9 #0054a3 #004280".split()
_REDS_BLUES = "#7d353b #bd4043 #ff4b4b #ff8c8c #ffc7c7 #a6dcff #60b4ff #1c83e1 #0054a3 #004280".split()
STREAMLIT_SEQUENTIAL = [[i / (len(_BLUES) - 1), colour] for i, colour in enumerate(_BLUES)]
STREAMLIT_DIVERGING = [[i / (len(_REDS_BLUES) - 1), colour] for i, colour in enumerate(_REDS_BLUES)]
PLAIN_LAYOUT = {
    "font": {"family": STREAMLIT_FONT, "size": 12, "color": STREAMLIT_TEXT},
    "title": {
        "font": {"family": STREAMLIT_FONT, "size": 16, "color": STREAMLIT_HEADING},
        "x": 0,
        "xanchor": "left",
        "pad": {"l": 4},
    },
    "colorway": STREAMLIT_COLOURWAY,
    "colorscale": {
        "sequential": STREAMLIT_SEQUENTIAL,
        "sequentialminus": STREAMLIT_SEQUENTIAL,
        "diverging": STREAMLIT_DIVERGING,
    },
    "paper_bgcolor": "white",
    "plot_bgcolor": "white",
    "hoverlabel": {
        "bgcolor": "white",
        "bordercolor": "rgba(47, 45, 43, 0.2)",
        "font": {"family": STREAMLIT_FONT, "size": 12, "color": STREAMLIT_TEXT},
    },
    "legend": {"font": {"size": 12, "color": STREAMLIT_LEGEND_TEXT}, "valign": "top"},
    "margin": {"pad": 8, "l": 0, "r": 0},
}
# (not the theme's grid colour: set in a figure rather than a template, it turns on grid lines the theme leaves off)
PLAIN_Y_AXIS = {
    "title": {"font": {"size": 14, "color": STREAMLIT_TEXT}, "standoff": 24},
    "tickfont": {"size": 12, "color": STREAMLIT_TEXT},
    "tickcolor": STREAMLIT_TICKS,
    "automargin": True,
}
PLAIN_X_AXIS = {
    **PLAIN_Y_AXIS,
    "title": {"font": {"size": 14, "color": STREAMLIT_TEXT}, "standoff": 20},
    "showgrid": False,
    "zeroline": False,
}
DATA_REVISION = "drawn-once"  # see above: constant, as Streamlit keys a chart by its figure


def plain_theme(fig: go.Figure) -> go.Figure:
    """`fig` laid out as Streamlit's theme would lay it out, for st.plotly_chart(fig, theme=None): the theme's
    values wherever the chart has not set its own (a theme's defaults, as a template's would be), no template,
    and the data revision that spares the redraw (above)."""
    own = fig.layout.to_plotly_json()
    look = dict(PLAIN_LAYOUT)
    for name in own:
        if name.startswith(("xaxis", "yaxis")):
            look[name] = PLAIN_X_AXIS if name.startswith("x") else PLAIN_Y_AXIS
    look.setdefault("xaxis", PLAIN_X_AXIS)
    look.setdefault("yaxis", PLAIN_Y_AXIS)
    if not (own.get("title") or {}).get("text"):
        del look["title"]  # no title to lay out
    fig.update_layout(_unset(look, own), datarevision=DATA_REVISION)
    title = fig.layout.title.text
    if title and not title.startswith("<b>"):
        fig.update_layout(title_text=f"<b>{title}</b>")  # Streamlit's theme sets chart titles in bold
    fig.layout.template = None
    # a 1-D numpy array goes to the browser as a typed array, which Plotly.react compares by identity whatever the
    # data revision (a redraw); as a list it is compared by the revision. 2-D ones (a heatmap's cells) arrive as
    # lists of rows either way, and stay compact.
    for trace in fig.data:
        for path in TRACE_ARRAYS:
            if path in trace:
                _as_list(trace, path)
    for name in own:
        if name.startswith(("xaxis", "yaxis")):
            for path in ("tickvals", "range"):
                _as_list(fig.layout[name], path)
    return fig


# the properties of the charts' traces that may hold 1-D arrays (plain_theme)
TRACE_ARRAYS = (
    "x",
    "y",
    "base",
    "width",
    "customdata",
    "marker.color",
    "marker.size",
    "marker.opacity",
    "marker.line.color",
    "marker.line.width",
    "error_x.array",
    "error_x.arrayminus",
    "error_y.array",
    "error_y.arrayminus",
)


def _as_list(part, path: str) -> None:
    """`part[path]` as a list where it holds a 1-D numeric numpy array (a typed array in the browser); dates go as
    text either way, and a list compares by the data revision. (By name rather than by walking the trace:
    to_plotly_json copies every one of a 24k-GPU grid's hover texts.)"""
    values = part[path]
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iuf":
        part[path] = None  # Plotly keeps a value equal to the one it holds, so the array goes first
        part[path] = values.tolist()


def _unset(look: dict, own: dict) -> dict:
    """The settings of `look` that `own` does not make (nested)."""
    left = {}
    for name, value in look.items():
        if name not in own or own[name] is None:
            left[name] = value
        elif isinstance(value, dict) and isinstance(own[name], dict):
            deeper = _unset(value, own[name])
            if deeper:
                left[name] = deeper
    return left


def selectable(fig: go.Figure) -> go.Figure:
    """`fig` with the click settings Streamlit gives a chart drawn with selection_mode="points" on mounting
    (clicks select points, hover nearest, drag pans), set in the figure so that mounting changes nothing and
    does not draw the chart again (see plain_theme)."""
    own = fig.layout
    fig.update_layout(
        clickmode=own.clickmode or "event+select",
        hovermode=own.hovermode or "closest",
        dragmode=own.dragmode or "pan",
    )
    return fig


# ----- label widths ------------------------------------------------------------------------------------------

# Advance widths of Source Sans (Streamlit's font, which its charts' labels use), thousandths of an em, of the
# printable ASCII characters from " " to "~" in order: measured in Chromium (SVG text, 12 px). The middle dot joins
# a job's name and id on the Jobs page; any other character counts as a full em (CJK is one; most others are less).
_ASCII_WIDTHS = [
    int(width)
    for width in (
        "200 289 426 497 497 824 609 249 303 303 418 497 249 311 249 350 497 497 497 497 497 497 497 497 "
        "497 497 249 249 497 497 497 425 847 537 588 545 615 527 494 617 652 263 443 579 486 727 647 664 "
        "566 664 569 522 536 645 524 786 513 476 524 303 350 303 497 500 542 504 553 437 555 496 289 504 "
        "544 246 247 495 255 829 547 542 555 555 347 419 320 544 467 719 446 467 425 303 241 303 497"
    ).split()
]
_WIDTHS = {chr(32 + i): width for i, width in enumerate(_ASCII_WIDTHS)} | {"\u00b7": 249}


def text_px(text: str, font_px: float = 12.0) -> float:
    """The width `text` takes on one line in Source Sans at `font_px`, at most: for margins set by hand where
    Plotly's automargin would measure every label (a forced layout each) and draw the chart again."""
    return font_px * sum(_WIDTHS.get(character, 1000) for character in text) / 1000


# ----- run times ---------------------------------------------------------------------------------------------

ELAPSED_TITLE = "time from start"
# d3 formats (Plotly's) of a time from the start on the 1970 origin: %j is the day of the year, 1 on 1970-01-01,
# so "day %-j" is the run's day counted from 1. 1970 has 365 days: past its last day %j starts again at 1, and
# before the origin it reads 365, so these formats serve only while every time drawn is in [0, 365 days) (see
# time_axis for the rest: engine.limits.MAX_RUN_DAYS allows 3,650 days).
ELAPSED_DAYS_MS = 365 * MILLISECONDS_PER_DAY
_DATE_FORMATS = {
    "minutes": "%Y-%m-%d %H:%M",
    "seconds": "%Y-%m-%d %H:%M:%S",
    "milliseconds": "%Y-%m-%d %H:%M:%S.%L",
}
_ELAPSED_FORMATS = {
    "minutes": "day %-j %H:%M",
    "seconds": "day %-j %H:%M:%S",
    "milliseconds": "day %-j %H:%M:%S.%L",
}
# Past day 365 a d3 format cannot count days: %s, the seconds since the 1970 origin, is the time from the start.
_LONG_HOVER = "%s s"
# The tick format by the distance between ticks (Plotly's dtick, in ms): the finer the ticks, the more digits.
_ELAPSED_TICKS = (
    (None, 1_000, "day %-j %H:%M:%S.%L"),
    (1_000, 60_000, "day %-j %H:%M:%S"),
    (60_000, MILLISECONDS_PER_DAY, "day %-j %H:%M"),
    (MILLISECONDS_PER_DAY, None, "day %-j"),
)
# Steps between ticks laid out here (seconds), for an axis the d3 formats cannot label: about TICKS of them.
_TICK_STEPS_S = (
    *(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5),
    *(1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800),
    *(3600, 7200, 10800, 21600, 43200),
    *(d * 86400 for d in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)),
)
TICKS = 8


def as_time(started_at: datetime, seconds) -> np.ndarray:
    """Seconds since the run's start as naive-UTC datetime64[ms] (what Plotly draws on a date axis). A run
    whose date is unknown starts on the 1970-01-01 origin (UNKNOWN_START), which `time_axis` reads as time from
    the start. (Milliseconds as plain numbers would keep 1970 out of the figure, but Plotly reads a number of
    up to four digits on a date axis as a year: 1000 ms would be the year 1000.)"""
    origin = np.datetime64(started_at.astimezone(UTC).replace(tzinfo=None), "ms")
    ms = np.rint(np.asarray(seconds, dtype=float) * 1000.0).astype("int64")
    return origin + ms.astype("timedelta64[ms]")


def hover_time(started_at: datetime, precision: str = "seconds") -> str:
    """A hovertemplate's time of the point: "%{x|%Y-%m-%d %H:%M:%S} UTC" for a known start, "%{x|day %-j
    %H:%M:%S} from start" for an unknown one; `precision` is minutes, seconds or milliseconds."""
    if start_known(started_at):
        return f"%{{x|{_DATE_FORMATS[precision]}}} UTC"
    return f"%{{x|{_ELAPSED_FORMATS[precision]}}} from start"


def time_axis(fig: go.Figure, started_at: datetime, precision: str = "seconds", **dated) -> go.Figure:
    """Lay out the figure's x axes, which hold run times from `as_time` (every x axis of a subplot figure).

    A known start: `dated`, the chart's settings for UTC dates (type="date", title_text="UTC", tickformat=...),
    as given. An unknown start: a date axis that reads as time from the start, ticks "day 1 03:25" and hovers
    "day 1 03:25:07 from start" (`precision`), "time from start" for a title given; `dated`'s other settings
    (side, range, standoff) kept. Call it once every trace and range is in the figure.
    """
    if start_known(started_at):
        if dated:
            fig.update_xaxes(**dated)
        return fig
    kept = {k: v for k, v in dated.items() if k not in ("tickformat", "hoverformat", "title_text", "title")}
    if "title_text" in dated or "title" in dated:
        kept["title_text"] = ELAPSED_TITLE
    extent = _time_extent(fig, dated.get("range"))
    axis = {"type": "date", "hoverformat": f"{_ELAPSED_FORMATS[precision]} from start", **kept}
    if extent.last_point >= ELAPSED_DAYS_MS:  # past its 365th day: hovers give the seconds from the start
        axis["hoverformat"] = f"{_LONG_HOVER} from start"
        _long_hovers(fig)
    if extent.first < 0 or extent.last >= ELAPSED_DAYS_MS:
        # %j cannot say these days: ticks laid out here, each named as dashboard.format.fmt_run_time would
        axis.update(_listed_ticks(extent.first, extent.last))
    else:
        # d3 picks and labels ticks as the reader zooms: nothing may show a time before the start, which %j would
        # call day 365, so a range set starts at the start at the earliest (a margin before a first mark at 0
        # goes), and neither autorange nor a pan reaches before it. No maxallowed: Plotly (3.1, and Streamlit's)
        # then reverses the autorange.
        axis["tickformatstops"] = [
            {"dtickrange": [lo, hi], "value": value} for lo, hi, value in _ELAPSED_TICKS
        ]
        axis["minallowed"] = _at(0.0)
        for shown in fig.select_xaxes():
            if shown.range is not None:
                shown.range = _from_start(shown.range)
        if "range" in axis:
            axis["range"] = _from_start(axis["range"])
    fig.update_xaxes(**axis)
    return fig


def _from_start(shown) -> list[np.datetime64]:
    """A range of run times that begins at the start at the earliest."""
    low, high = _numbers(list(shown))
    return [_at(max(low, 0.0)), _at(high)]


def _at(ms: float) -> np.datetime64:
    """A time from the start (ms) as as_time draws it for an unknown start: on the 1970 origin."""
    return np.datetime64(UNKNOWN_START.replace(tzinfo=None), "ms") + np.timedelta64(round(ms), "ms")


def _long_hovers(fig: go.Figure) -> None:
    """hover_time's formats in the figure's hovertemplates turned into seconds from the start (`_LONG_HOVER`)."""
    for trace in fig.data:
        template = getattr(trace, "hovertemplate", None)
        if isinstance(template, str):
            for fmt in _ELAPSED_FORMATS.values():
                template = template.replace(f"%{{x|{fmt}}}", f"%{{x|{_LONG_HOVER}}}")
            trace.hovertemplate = template


class TimeExtent(NamedTuple):
    """What the x axes of an unknown-start figure hold, in ms since the run's start (the 1970 origin)."""

    first: float  # the earliest drawn: a point, a bar's start, a centred bar's left edge
    last: float  # the latest drawn or in a range set
    last_point: float  # the latest point or bar end (what a hover can show)


def _time_extent(fig: go.Figure, dated_range=None) -> TimeExtent:
    """The figure's TimeExtent: its traces' times (horizontal bars from base to base + x, a vertical bar centred
    on its time reaching half its width before it), the ranges set on its x axes and `dated_range`."""
    lows, highs, points = [], [], []
    for trace in fig.data:
        x = _numbers(getattr(trace, "x", None))
        if trace.type == "bar" and trace.orientation == "h":
            base = _numbers(trace.base)
            if base.size and x.size:
                lows.append(base.min())
                points.append((base + x).max())
            continue
        if not x.size:
            continue
        half = 0.0
        if trace.type == "bar" and trace.offset is None:  # centred on its time: half a bar before it
            width = _numbers(trace.width)
            gaps = np.diff(np.unique(x))
            half = float(width.max() if width.size else (gaps.min() if gaps.size else 0.0)) / 2
        lows.append(x.min() - half)
        highs.append(x.max() + half)
        points.append(x.max())
    ranges = [list(a.range) for a in fig.select_xaxes() if a.range is not None]
    ranges += [list(dated_range)] if dated_range is not None else []
    for shown in ranges:
        highs.append(_numbers(shown).max())
    if not points:
        return TimeExtent(0.0, 0.0, 0.0)
    return TimeExtent(float(min(lows)), float(max(highs + points)), float(max(points)))


def _numbers(values) -> np.ndarray:
    """A trace attribute's times as ms since the 1970 origin (the run's start for an unknown date): as_time's
    datetime64, the datetimes or numbers Plotly keeps (a bar's base is objects); empty for none."""
    if values is None:
        return np.empty(0)
    array = np.atleast_1d(np.asarray(values))
    if array.dtype.kind in "iuf":  # a horizontal bar's length, in ms
        return array.astype(float)
    return array.astype("datetime64[ms]").astype("int64").astype(float)


def _listed_ticks(low_ms: float, high_ms: float) -> dict:
    """Ticks over [low, high] ms since the start (from the start on, when it is inside), about TICKS of them at a
    round step, named "day 400", "day 3 06:00" or "day 1 00:00:02" by the step (a time before the start would
    be on day 0)."""
    span_s = max(high_ms - low_ms, 1.0) / 1000.0
    step = next((s for s in _TICK_STEPS_S if s >= span_s / TICKS), _TICK_STEPS_S[-1])
    # nothing is drawn before the start but a margin: no tick there unless the whole axis is
    first = np.ceil((max(low_ms, 0.0) if high_ms >= 0 else low_ms) / 1000.0 / step) * step
    ticks_s = first + step * np.arange(int((high_ms / 1000.0 - first) // step) + 1)
    return {
        "tickmode": "array",
        "tickvals": [_at(t * 1000.0) for t in ticks_s],
        "ticktext": [elapsed_label(t, step) for t in ticks_s],
    }


def elapsed_label(t_s: float, step_s: float) -> str:
    """A time from the start as a tick reads it: "day 2", "day 2 17:40", "day 2 17:40:05" or "...05.250" as
    fine as `step_s` needs; day 1 is the first day (dashboard.format.fmt_run_time)."""
    ms = round(t_s * 1000.0)
    day, rest = divmod(ms, MILLISECONDS_PER_DAY)
    label = f"day {day + 1}"
    if step_s >= 86400:
        return label
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    label += f" {hours:02d}:{minutes:02d}"
    if step_s >= 60:
        return label
    seconds, millis = divmod(rest, 1000)
    label += f":{seconds:02d}"
    return label if step_s >= 1 else label + f".{millis:03d}"
