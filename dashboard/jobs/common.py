"""What the Jobs page's sections share: figures and table columns under their definitions."""

import streamlit as st

from engine.analysis.definitions import definition


def metric(where, key: str, value: str, delta: str | None = None, note: str = "", **kwargs) -> None:
    """st.metric under the label and help of engine.analysis.definitions' `key` (`note`: what this view adds)."""
    d = definition(key)
    where.metric(d.label, value, delta, help=f"{d.help} {note}".strip(), **kwargs)


def column(key: str, kind=st.column_config.Column, **kwargs):
    """A table column named and explained by engine.analysis.definitions' `key`."""
    return kind(definition(key).label, help=definition(key).help, **kwargs)
