"""dashboard.table_view.short: a short table is static cells, each showing exactly its text (st.table reads
Markdown in them), a missing value a dash; a longer one is the interactive grid. table_view.static: static cells
whatever the rows."""

import json

import polars as pl
from streamlit.testing.v1 import AppTest

SCRIPT = """
import polars as pl
from dashboard import table_view
rows = int(__import__("streamlit").query_params.get("rows", "2"))
frame = pl.DataFrame({
    "host": ["![x](http://evil.example/i.png)", "*bold* `code` :red[x]"] * (rows // 2),
    "gpus": [8, None] * (rows // 2),
    "**run** (a)": [0.5, 2.0] * (rows // 2),
})
getattr(table_view, __import__("streamlit").query_params.get("how", "short"))(frame)
"""


def run(rows: int, how: str = "short") -> AppTest:
    at = AppTest.from_string(SCRIPT)
    at.query_params["rows"] = str(rows)
    at.query_params["how"] = how
    return at.run()


def test_a_short_table_is_static_cells_each_escaped():
    at = run(2)
    assert not at.exception and not at.dataframe
    [table] = at.table
    cells = pl.from_pandas(table.value)
    assert cells.columns == ["host", "gpus", "\\*\\*run\\*\\* (a)"]  # a header is data too: escaped
    # every Markdown character escaped: the cell shows the characters, not an image, emphasis or code
    assert cells["host"][0].startswith("!\\[x\\]") and "\\*bold\\*" in cells["host"][1]
    assert "\\`code\\`" in cells["host"][1]
    assert cells["gpus"].to_list() == ["8", "–"]  # a missing value is a dash, never "None"
    assert cells["\\*\\*run\\*\\* (a)"].to_list() == ["0.50", "2"]  # a fraction to two decimals


def test_a_long_table_is_the_interactive_grid():
    at = run(22)
    assert not at.exception and not at.table
    [grid] = at.dataframe
    assert grid.value["host"].tolist()[0] == "![x](http://evil.example/i.png)"  # plain cells: shown as is
    assert grid.proto.placeholder == "–"  # a missing value a dash, as in static cells, not "None"
    config = json.loads(grid.proto.columns)
    assert config["**run** (a)"]["type_config"]["format"] == "localized"  # 126,475.6 as static cells write it
    assert "gpus" not in config  # whole numbers (ids among them) as they are


def test_static_cells_whatever_the_rows():
    at = run(22, "static")
    assert not at.exception and not at.dataframe
    [table] = at.table
    cells = pl.from_pandas(table.value)
    assert cells.height == 22 and cells["gpus"].to_list()[:2] == ["8", "–"]


def test_headers_that_read_alike_are_numbered():
    from dashboard.table_view import _unique

    assert _unique(["a", "b", "a", "a (2)", "a"]) == ["a", "b", "a (2)", "a (2) (2)", "a (3)"]
