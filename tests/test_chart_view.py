"""dashboard/chart_view and the plain theme it draws with (dashboard/charts/common.plain_theme): Streamlit's look in
the figure's own layout where the chart has not set its own, no template, a data revision, 1-D data as lists; and
every chart of the pages drawn through chart_view."""

import ast
import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from dashboard.charts.common import (
    DATA_REVISION,
    STREAMLIT_COLOURWAY,
    STREAMLIT_TEXT,
    plain_theme,
    selectable,
)

DASHBOARD = Path(__file__).resolve().parents[1] / "dashboard"


def sent(fig: go.Figure) -> dict:
    """The figure as Streamlit sends it to the browser."""
    return json.loads(pio.to_json(fig, validate=False))


def test_the_look_fills_what_the_chart_leaves_unset_and_keeps_what_it_sets():
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    fig.update_layout(title="Failures by cause", legend={"font": {"size": 15}}, margin={"l": 64})
    fig.update_yaxes(title={"text": "failures", "font": {"size": 18}})
    layout = sent(plain_theme(fig))["layout"]
    assert "template" not in layout and layout["datarevision"] == DATA_REVISION
    assert layout["colorway"] == STREAMLIT_COLOURWAY and layout["font"]["color"] == STREAMLIT_TEXT
    assert layout["legend"]["font"] == {"size": 15, "color": "#262730"}  # its size, the theme's colour
    assert layout["margin"] == {"l": 64, "r": 0, "pad": 8}
    assert layout["yaxis"]["title"] == {
        "text": "failures",
        "font": {"size": 18, "color": STREAMLIT_TEXT},
        "standoff": 24,
    }
    assert layout["xaxis"]["showgrid"] is False and layout["yaxis"].get("showgrid") is None
    assert layout["title"]["text"] == "<b>Failures by cause</b>"  # as Streamlit's theme sets a title
    assert sent(plain_theme(fig))["layout"] == layout  # twice is once


def test_one_dimensional_numbers_go_as_lists_cells_and_dates_as_before():
    times = np.array(["2024-03-01T00:00", "2024-03-02T00:00"], dtype="datetime64[ns]")
    fig = go.Figure(
        [
            go.Scatter(
                x=times, y=np.array([1.5, 2.5]), customdata=np.arange(2), marker={"color": np.array([3, 4])}
            ),
            go.Heatmap(z=np.zeros((2, 3), dtype=np.float32)),
        ]
    )
    fig.update_yaxes(tickvals=np.arange(2.0))
    before = sent(fig)
    data = sent(plain_theme(fig))["data"]
    assert (
        data[0]["y"] == [1.5, 2.5]
        and data[0]["customdata"] == [0, 1]
        and data[0]["marker"]["color"] == [3, 4]
    )
    assert data[0]["x"] == before["data"][0]["x"] and "2024-03-01" in data[0]["x"][0]
    assert data[1]["z"] == before["data"][1]["z"] and "bdata" in data[1]["z"]  # compact, as it was
    assert sent(fig)["layout"]["yaxis"]["tickvals"] == [0.0, 1.0]


def test_a_clickable_chart_carries_the_settings_streamlit_would_give_it():
    fig = selectable(go.Figure(go.Scatter(x=[1], y=[1])))
    assert (fig.layout.clickmode, fig.layout.hovermode, fig.layout.dragmode) == (
        "event+select",
        "closest",
        "pan",
    )
    own = selectable(go.Figure(layout={"hovermode": "x", "clickmode": "event"}))
    assert (own.layout.clickmode, own.layout.hovermode) == ("event", "x")


def test_every_chart_of_the_pages_goes_through_chart_view():
    """A chart drawn with st.plotly_chart directly would be drawn twice a visit again."""
    direct = []
    for path in DASHBOARD.rglob("*.py"):
        if path.name == "chart_view.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "plotly_chart":
                direct.append(f"{path.relative_to(DASHBOARD)}:{node.lineno}")
    assert direct == []


def test_a_run_of_unknown_date_keeps_its_time_axis():
    """plain_theme leaves the axis settings of charts.common.time_axis alone (a date axis that reads as time from
    the start)."""
    from dashboard.charts.common import as_time, time_axis
    from engine.store.run import UNKNOWN_START

    fig = go.Figure(go.Scatter(x=as_time(UNKNOWN_START, [0.0, 3600.0]), y=[1, 2]))
    time_axis(fig, UNKNOWN_START, title_text="UTC")
    axis = sent(plain_theme(fig))["layout"]["xaxis"]
    assert axis["type"] == "date" and axis["title"]["text"] != "UTC" and "from start" in axis["hoverformat"]
