"""What the server does once before it listens: import the heavy libraries every page uses, then freeze them
out of the garbage collector's way.

A full collection walks every tracked object while holding the GIL. After the imports the pages need there
are some 140,000 of them (Polars, pandas, Plotly, DuckDB, the engine), and a full collection took 0.1-0.2 s of
CPU, many times that on a busy 2-core machine, and stack dumps taken while /_stcore/health was late under 20
sessions (issue 12's load test) found the event loop garbage-collecting. Module-level objects live as long as the
process, so `gc.freeze()` moves them to the permanent generation: collections then walk only what sessions
allocate. Dashboard modules are not imported here: their Streamlit caches belong to the running server.
"""

import gc
import importlib

HEAVY_MODULES = (
    "numpy",
    "pandas",
    "pyarrow",
    "polars",
    "duckdb",
    "plotly.graph_objects",
    "plotly.subplots",
    "plotly.express",
    "engine.twin.simulate",
    "engine.twin.sweep",
    "engine.replay.run",
    "engine.replay.incidents",
    "engine.ingest.dcgm",
    "engine.report.export",
)


def preload_and_freeze() -> int:
    """Import HEAVY_MODULES, collect what importing left as garbage, freeze the rest; how many were frozen."""
    for name in HEAVY_MODULES:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
