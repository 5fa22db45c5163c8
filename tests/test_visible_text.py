"""Invisible characters shown visibly wherever data is shown (issue 27, 9; engine/report/visible_text.py): a job
name holding U+202E RIGHT-TO-LEFT OVERRIDE displayed reversed on the Gantt; now every page's prose, tables,
selectors and charts, and the HTML export, show `⟨U+202E⟩` instead."""

import sys
import unicodedata

import polars as pl
from hypothesis import given
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from dashboard.charts import jobs as charts
from dashboard.text import code, md, plot, plot_expr
from engine.report.export import export_run_incidents
from engine.report.visible_text import INVISIBLE, RANGES, visible, visible_expr, visible_frame
from tests.runs import make_store, small_run
from tests.test_charts_jobs import STARTED, queue_run
from tests.test_charts_pages import open_page

RLO = "\u202e"
APP = "../dashboard/streamlit_app.py"


def test_the_ranges_are_this_pythons_invisible_characters():
    """Every Cc (but tab, LF, CR), Cf, Zl and Zp character of the running Python's Unicode, and nothing else."""
    expected = {
        chr(c)
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp") and chr(c) not in "\t\n\r"
    }
    assert set(INVISIBLE) >= expected, sorted(f"U+{ord(c):04X}" for c in expected - set(INVISIBLE))
    assert all(first <= last for first, last in RANGES)


@given(st.text())
def test_nothing_invisible_is_left_and_the_rest_is_kept(text):
    shown = visible(text)
    assert not set(shown) & set(INVISIBLE)
    assert shown.replace("⟨", "").replace("⟩", "") == "".join(
        f"U+{ord(c):04X}" if c in INVISIBLE else c for c in text.replace("⟨", "").replace("⟩", "")
    )


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Zl", "Zp", "Cs"))))
def test_ordinary_text_is_unchanged(text):
    assert visible(text) == text


@given(st.lists(st.one_of(st.none(), st.text()), max_size=20))
def test_a_column_is_made_visible_as_each_value_is(values):
    frame = pl.DataFrame({"x": values, "n": range(len(values))}, schema={"x": pl.String, "n": pl.Int64})
    assert frame.select(visible_expr("x"))["x"].to_list() == [
        None if v is None else visible(v) for v in values
    ]
    shown = visible_frame(frame.with_columns(pl.concat_list(pl.col("x")).alias("l")))
    assert shown["x"].to_list() == [None if v is None else visible(v) for v in values]
    assert shown["l"].to_list() == [[None if v is None else visible(v)] for v in values]  # lists of text too
    assert shown["n"].to_list() == list(range(len(values)))  # other columns untouched


def test_every_way_data_reaches_a_page_shows_the_override():
    name = f"train{RLO}gpj.exe"
    for shown in (md(name), code(name), plot(name)):
        assert RLO not in shown and "⟨U+202E⟩" in shown
    column = pl.DataFrame({"n": [name]}).select(plot_expr("n"))["n"][0]
    assert RLO not in column and "⟨U+202E⟩" in column
    frame = visible_frame(pl.DataFrame({"hosts": [[name, "h1"]], "job": [name]}))
    assert frame.row(0) == (["train⟨U+202E⟩gpj.exe", "h1"], "train⟨U+202E⟩gpj.exe")


def test_the_gantt_shows_a_right_to_left_override_instead_of_obeying_it():
    run = queue_run()
    evil = f"job{RLO}A"
    attempts = run.tables["job_attempts"].with_columns(
        pl.when(pl.col("job_id") == "A").then(pl.lit(evil)).otherwise(pl.col("job_id")).alias("label")
    )
    fig = charts.attempts_gantt(attempts, STARTED, [evil, "B", "D"])
    texts = [str(v) for t in fig.data for v in [*(t.y or []), *(t.hovertext or [])]]
    texts += [str(v) for v in (fig.layout.yaxis.categoryarray or [])]
    assert any("job⟨U+202E⟩A" in t for t in texts), texts
    assert not any(RLO in t for t in texts)


def test_the_html_export_shows_the_override(store_dir):
    run = small_run(name=f"week{RLO}31")
    store = make_store(store_dir, run)
    html = export_run_incidents(store, run.run_id, "html").decode()
    assert RLO not in html and "week⟨U+202E⟩31" in html


def test_pages_show_the_override_in_tables_and_selectors(store_dir):
    make_store(store_dir, small_run(name=f"evil{RLO}run"))
    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("app_pages/data.py").run()
    assert not at.exception
    [option] = at.sidebar.selectbox[0].options
    assert "evil⟨U+202E⟩run" in option and RLO not in option
    [runs] = [t.value for t in at.table if "name" in t.value.columns][:1]  # a few runs: static cells
    assert "evil⟨U+202E⟩run" in list(runs["name"]) and not any(RLO in str(v) for v in runs["name"])


def test_the_delete_selector_shows_the_override(store_dir):
    make_store(store_dir, small_run(name=f"evil{RLO}run"))
    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("app_pages/data.py").run()
    [victim] = [s for s in at.selectbox if s.label == "Run to delete"]
    assert any("evil⟨U+202E⟩run" in o for o in victim.options) and not any(RLO in o for o in victim.options)


def test_an_incidents_cause_and_category_show_the_override(store_dir):
    run = small_run()
    run.tables["incidents"] = run.tables["incidents"].with_columns(
        pl.col("cause") + RLO + "x", pl.col("category") + RLO + "y"
    )
    make_store(store_dir, run)
    at = open_page("app_pages/incidents.py", {"run": run.run_id, "incident": "1"})
    assert not at.exception
    shown = {m.label: m.value.replace("\\", "") for m in at.metric}
    assert "⟨U+202E⟩x" in shown["Cause"] and "GPU⟨U+202E⟩y" in shown["Category"], shown
    assert not any(RLO in v for v in shown.values())


def test_goodput_runs_shows_the_override_and_a_files_escape_codes(store_dir, capsys):
    from engine.cli import main

    store = make_store(store_dir, small_run(name=f"evil{RLO}run"))
    (store.runs_dir / "odd\x1b[2Jname.duckdb").write_bytes(b"x")  # ESC [2J would clear the terminal
    assert main(["runs", "--store", str(store_dir)]) == 0
    out, err = capsys.readouterr()
    assert "evil⟨U+202E⟩run" in out and RLO not in out
    assert "odd⟨U+001B⟩[2Jname.duckdb" in err and "\x1b" not in err
