"""Goodput's engine: scenarios, simulation, replay, ingestion, analytics and the run store.

The engine never imports the dashboard or Streamlit.
"""

__version__ = "0.1.0"
