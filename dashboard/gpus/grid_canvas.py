"""The health grid on the page: a Streamlit component (st.components.v2, no iframe) that draws
dashboard.charts.health_grid's data on a canvas (dashboard/gpus/health_grid.js), its legend above and a hover
label that names the GPU under the pointer; a click on a GPU reports its id (once, on the rerun it causes).

    clicked = grid_canvas.health_grid(data, key="gpus_grid:RUN", where=place)
"""

from pathlib import Path

import streamlit as st

from dashboard.charts.health_grid import HealthGridData

_CSS = """
.grid { position: relative; width: 100%; font-family: var(--st-font, "Source Sans", sans-serif); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 18px; height: 30px; align-items: center; padding-left: 64px;
  font-size: 12px; color: #262730; }
.legend span { display: inline-flex; align-items: center; gap: 6px; }
.legend i { display: inline-block; width: 12px; height: 12px; }
canvas { display: block; width: 100%; }
.tip { position: absolute; z-index: 2; pointer-events: none; white-space: nowrap; font-size: 13px; color: #262730;
  background: #fff; border: 1px solid; border-left-width: 4px; border-radius: 4px; padding: 4px 8px;
  box-shadow: 0 1px 4px rgba(0, 0, 0, 0.15); }
"""
_grid = st.components.v2.component(
    "goodput.health_grid", css=_CSS, js=(Path(__file__).with_name("health_grid.js")).read_text()
)


def health_grid(data: HealthGridData, key: str, where=None) -> int | None:
    """Draw `data` where given (a container; the page by default), its height fixed by the data; returns the id
    of the GPU just clicked (None on a run no click caused)."""
    with where if where is not None else st.container():
        shown = _grid(key=key, data=data, height=data["height_px"], on_clicked_change=_rerun)
    return None if shown.clicked is None else int(shown.clicked)


def _rerun() -> None:
    """A click reruns the page (a component's trigger does, given a callback)."""
