"""Tables of data on the pages: `st.dataframe` with every text column's invisible characters shown visibly
(dashboard.text.table_frame), so a hostname or job name holding a right-to-left override or a zero-width space
reads as what it is in a table too.

    table_view.dataframe(frame, hide_index=True, width="stretch")
"""

import polars as pl
import streamlit as st

from dashboard.text import table_frame


def dataframe(data, where=None, **kwargs):
    """`where.dataframe` (st by default; a column or container) of `data`: a Polars frame's text columns made
    visible, anything else as it is."""
    return (where or st).dataframe(table_frame(data) if isinstance(data, pl.DataFrame) else data, **kwargs)
