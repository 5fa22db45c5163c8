"""CSV formula injection (OWASP): text cells that a spreadsheet would evaluate get a leading quote, reversibly;
numbers stay numbers. The engine's incidents CSV and the dashboard's table downloads share the rule."""

import csv
import io

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import exports
from engine.report.csv_safety import FORMULA_PREFIXES, QUOTE, neutralise, restore, restore_frame, safe_csv

# text that starts with every character the rule cares about far more often than chance would
risky_text = st.one_of(
    st.text(),
    st.builds(lambda first, rest: first + rest, st.sampled_from(list(FORMULA_PREFIXES + QUOTE)), st.text()),
)


def cells(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


@settings(max_examples=300, deadline=None)
@given(risky_text)
def test_a_cell_read_back_never_starts_a_formula_and_the_original_is_one_quote_away(text):
    header, row = cells(safe_csv(pl.DataFrame({"name": [text], "n": [7]})))
    assert header == ["name", "n"] and row[1] == "7"
    cell = row[0]
    assert cell[:1] not in tuple(FORMULA_PREFIXES)  # a spreadsheet reads text, never a formula
    if text[:1] and text[0] in FORMULA_PREFIXES + QUOTE:
        assert cell == QUOTE + text  # exactly one quote added
    else:
        assert cell == text  # everything else exactly as it was
    assert restore(cell) == text == restore(neutralise(text))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), risky_text),
            st.integers(-(2**53), 2**53),
            st.floats(allow_nan=False, allow_infinity=False),
        ),
        max_size=20,
    )
)
def test_polars_reads_back_every_text_and_number(rows):
    frame = pl.DataFrame(rows, schema={"name": pl.String, "n": pl.Int64, "x": pl.Float64}, orient="row")
    back = restore_frame(pl.read_csv(io.BytesIO(safe_csv(frame)), schema=frame.schema))
    assert back.equals(frame)


@settings(max_examples=100, deadline=None)
@given(st.integers(-(2**62), 2**62), st.floats(allow_nan=False, allow_infinity=False))
def test_numbers_stay_numbers(n, x):
    _, row = cells(safe_csv(pl.DataFrame({"n": [n], "x": [x]})))
    assert row[0] == str(n) and float(row[1]) == x  # unquoted, no leading quote, negative ones included


def test_the_dashboards_table_downloads_are_neutralised():
    jobs = pl.DataFrame(
        {
            "job_id": ['=HYPERLINK("http://evil","x")', "j2"],
            "user": ["@SUM(1)", "+cmd"],
            "gpus": [-8, 16],
            "hosts": [["=h1", "h2"], ["h3"]],
        }
    )
    header, *rows = cells(exports.to_csv(jobs))
    assert header == ["job_id", "user", "gpus", "hosts"]
    assert rows == [
        ['\'=HYPERLINK("http://evil","x")', "'@SUM(1)", "-8", "'=h1;h2"],
        ["j2", "'+cmd", "16", "h3"],
    ]
    categorical = pl.DataFrame({"state": pl.Series(["-failed", "done"], dtype=pl.Categorical)})
    assert cells(exports.to_csv(categorical))[1:] == [["'-failed"], ["done"]]
