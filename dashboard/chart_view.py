"""Charts on the pages: `st.plotly_chart`, drawn once a visit.

    chart_view.plotly(fig, width="stretch")
    chart_view.plotly(fig, where=cols[0], key="jobs_waits", on_select="rerun", selection_mode="points")

Streamlit's own theme pass draws every chart twice in the browser (dashboard.charts.common.plain_theme says why), a
cost of every visit to every page (issue 28). Each chart is drawn here with theme=None instead, carrying Streamlit's
look in its own layout; a chart that answers clicks carries the click settings Streamlit would give it on mounting
(dashboard.charts.common.selectable), so that mounting changes nothing.
"""

import plotly.graph_objects as go
import streamlit as st

from dashboard.charts.common import DATA_REVISION, plain_theme, selectable


def plotly(fig: go.Figure, where=None, **kwargs):
    """`where.plotly_chart` (st by default; a column or container) of `fig`, drawn once; returns what
    st.plotly_chart returns (a selection, for a chart drawn with on_select)."""
    if kwargs.get("on_select", "ignore") != "ignore":
        selectable(fig)
    if fig.layout.datarevision != DATA_REVISION:  # a figure laid out already (a cached one) is only read
        plain_theme(fig)
    return (where or st).plotly_chart(fig, theme=None, **kwargs)
