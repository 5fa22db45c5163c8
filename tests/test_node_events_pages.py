"""A fault history on every page and in every export (issue 46): `goodput ingest node-events` makes an observed run of
outages only (hosts, GPUs assumed, host states, incidents, node_events; no jobs, telemetry or links). Every page opens
on it without an exception; the Incidents page lists the outages with what people wrote (reason, description, who)
as text, Markdown and HTML shown verbatim; the pages whose subject the history lacks say so in one line instead of
zeros; and each export format holds the outages with their text.

The history is a tickets CSV written here: a GPU fault, a planned stop, a reason holding Markdown and one holding
HTML, a ticket still open, one whose cause no rule names, two tickets of one node that overlap (one outage) and a
duplicate (skipped, and said).
"""

import json
import re
from pathlib import Path

import polars as pl
import pytest
from test_charts_pages import open_page
from test_text import unescaped

from engine.cli import main
from engine.ingest.node_events import ingest_node_events
from engine.report.export import export_run_incidents, read_export
from engine.store import Store

TICKETS = """node,start,end,cause,description,user
gpu-01,2025-03-01T00:00:00Z,2025-03-01T06:00:00Z,Xid 79,GPU 3 fell off the bus; reseated,alice
gpu-02,2025-03-02T00:00:00Z,2025-03-02T04:00:00Z,scheduled maintenance,firmware upgrade,fleet
gpu-03,2025-03-03T00:00:00Z,2025-03-03T02:00:00Z,**bold** psu,<b>PSU 2</b> [link](http://example.com) replaced,=cmd|x
gpu-04,2025-03-04T00:00:00Z,2025-03-04T08:00:00Z,mystery,node sluggish; nothing found,bob
gpu-05,2025-03-05T00:00:00Z,,Xid 48,double-bit ECC on GPU 1,carol
gpu-01,2025-03-06T00:00:00Z,2025-03-06T05:00:00Z,Xid 79,GPU 3 again,alice
gpu-01,2025-03-06T04:00:00Z,2025-03-06T09:00:00Z,Not responding,node down,slurm
gpu-04,2025-03-04T00:00:00Z,2025-03-04T08:00:00Z,mystery,the same ticket twice,bob
"""
BOLD, HTML = "**bold** psu", "<b>PSU 2</b> [link](http://example.com) replaced"
OUTAGES = 6  # seven tickets, the last two of gpu-01 overlapping


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, str]:
    """A store holding the fault history of TICKETS (8 nodes: 5 named, 3 more by --nodes)."""
    folder = tmp_path_factory.mktemp("history")
    tickets = folder / "tickets.csv"
    tickets.write_text(TICKETS)
    store = folder / "store"
    run_id = Store(store).write_run(ingest_node_events([tickets], nodes=8, now=1_767_225_600))
    return store, run_id


@pytest.fixture
def run_id(history, monkeypatch) -> str:
    store, run_id = history
    monkeypatch.setenv("GOODPUT_STORE", str(store))
    return run_id


def texts(at) -> str:
    """Everything the page wrote as Markdown, captions and alerts, one string."""
    parts = [e.value for kind in ("markdown", "caption", "info", "warning", "success") for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


PAGES = [
    "overview",
    "racks",
    "gpus",
    "jobs",
    "network",
    "incidents",
    "operations",
    "twin",
    "planner",
    "compare",
]


@pytest.mark.parametrize("page", [*PAGES, "data"])
def test_every_page_opens_on_a_fault_history(run_id, page):
    at = open_page(f"app_pages/{page}.py", {"run": run_id})
    assert not at.exception, at.exception
    assert not [e.value for e in at.error]


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("incidents", {"tab": "Timeline"}),
        ("incidents", {"tab": "By cause and day"}),
        ("incidents", {"tab": "Export"}),
        ("incidents", {"tab": "Replay with other settings"}),
        ("racks", {"rack": "0", "measure": "failures"}),
        ("compare", {"tab": "Interruptions by cause"}),
    ],
)
def test_every_tab_and_drill_down_opens_on_a_fault_history(run_id, page, params):
    at = open_page(f"app_pages/{page}.py", {"run": run_id, **params})
    assert not at.exception, at.exception


def test_overview_says_what_the_history_holds_and_what_the_ingest_noted(run_id):
    at = open_page("app_pages/overview.py", {"run": run_id})
    said = texts(at)
    assert f"{OUTAGES} outages from 7 events, 1 still open" in said
    assert "no ETTR" in said and "8 GPUs a node assumed" in said and "skipped 1 duplicate events" in said
    m = metrics(at)
    assert (m["Incidents"], m["Incidents still open"], m["Incidents of unknown cause"]) == ("6", "1", "16.7%")
    assert "ETTR (goodput)" not in m


def test_incidents_lists_outages_with_their_text_verbatim(run_id):
    at = open_page("app_pages/incidents.py", {"run": run_id})
    m = metrics(at)
    assert (m["Incidents"], m["Incidents still open"], m["Incidents of unknown cause"]) == ("6", "1", "16.7%")
    assert "GPU-hours lost to incidents" not in m  # no job ran: no zero that reads as measured
    assert [t.label for t in at.tabs][0] == "Newest first"
    assert "Job hit" not in [s.label for s in at.multiselect]
    table = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert len(table) == OUTAGES and table["time"].tolist() == sorted(table["time"].tolist(), reverse=True)
    psu = table[table["hostname"] == "gpu-03"].iloc[0]
    # data is text: the Markdown and HTML of the ticket are the cell's exact characters
    assert (psu["reason"], psu["description"], psu["reported_by"]) == (BOLD, HTML, "=cmd|x")
    merged = table[table["hostname"] == "gpu-01"].iloc[0]  # the newest of gpu-01: two tickets, one outage
    assert (merged["reason"], merged["reported_by"]) == ("Xid 79 | Not responding", "alice | slurm")
    assert table[table["hostname"] == "gpu-05"].iloc[0]["down_for"] == "open"
    assert table[table["hostname"] == "gpu-04"].iloc[0]["cause"] == "Unknown"


def test_one_outage_shows_the_events_it_merged(run_id):
    at = open_page("app_pages/incidents.py", {"run": run_id, "incident": "2"})
    assert not at.exception
    m = metrics(at)
    assert "Cost of the incident" not in m and "Jobs hit" not in m
    events = next(d.value for d in at.dataframe if "read from" in d.value.columns)
    assert events[["reason", "description", "reported by"]].values.tolist() == [[BOLD, HTML, "=cmd|x"]]
    assert events["read from"].tolist() == ["tickets.csv:4"]
    # the Markdown of the reason never reaches a Markdown element: it is in a table cell only
    assert "**bold**" not in texts(at) and "<b>" not in texts(at)


@pytest.mark.parametrize(
    ("page", "said"),
    [
        ("jobs", "it has no jobs"),
        ("network", "it has no network links"),
        ("gpus", "it has no GPU telemetry"),
        ("racks", "it has no GPU telemetry"),
    ],
)
def test_pages_whose_subject_the_history_lacks_say_so(run_id, page, said):
    at = open_page(f"app_pages/{page}.py", {"run": run_id})
    assert said in texts(at), texts(at)


def test_racks_and_gpus_show_the_hosts_down_at_t(run_id):
    # 2025-03-01T03:00: gpu-01 is out (its first outage), the others in service
    at = open_page("app_pages/racks.py", {"run": run_id, "t": "10800"})
    m = metrics(at)
    assert (m["Hosts out of service"], m["Hosts in service"]) == ("1", "7")
    assert "GPU power drawn" not in m and "Racks over their power budget" not in m
    at = open_page("app_pages/gpus.py", {"run": run_id, "t": "10800"})
    m = metrics(at)
    assert (m["GPUs in the run"], m["GPUs out of service"]) == ("64", "8")
    assert "GPUs training" not in m


def test_data_page_shows_the_ingests_notes(run_id):
    at = open_page("app_pages/data.py", {"run": run_id})
    said = texts(at)
    assert "8 GPUs a node assumed" in said and "skipped 1 duplicate events" in said
    assert "16.7% of them of unknown cause" in said
    assert "goodput ingest node-events" in "\n".join(c.value for c in at.code)


def test_one_gpu_opened_shows_its_hosts_outages(run_id):
    # GPU 0 is on gpu-01 (hosts in name order): its two outages, the second of two tickets
    at = open_page("app_pages/gpus.py", {"run": run_id, "gpu": "0", "tab": "Lemons and repeat offenders"})
    assert not at.exception
    assert [t.label for t in at.tabs] == ["Lemons and repeat offenders"]
    outages = next(d.value for d in at.dataframe if "down for" in d.value.columns)
    assert outages["down for"].tolist() == ["6 h", "9 h"]
    assert "Its host's outages" in texts(at) and "No telemetry samples" not in texts(at)


def test_compare_two_histories_shows_their_incidents_not_a_table_of_dashes(tmp_path, monkeypatch):
    store = Store(tmp_path / "store")
    ids = []
    for name, text in (("a.csv", TICKETS), ("b.csv", TICKETS.replace("mystery", "Xid 79"))):
        (tmp_path / name).write_text(text)
        ids.append(store.write_run(ingest_node_events([tmp_path / name], now=1_767_225_600)))
    monkeypatch.setenv("GOODPUT_STORE", str(store.root))
    at = open_page("app_pages/compare.py", {"runs": ",".join(ids)})
    assert not at.exception
    table = at.table[0].value.map(unescaped).set_index("figure")  # static cells: Markdown source
    assert table.loc["Incidents"].tolist() == ["6", "6"]
    assert table.loc["Incidents of unknown cause"].tolist() == ["16.7%", "0.0%"]
    assert "ETTR (goodput)" not in table.index and "Interruptions" not in table.index


def export(capsys, history, tmp_path, fmt: str) -> bytes:
    """`goodput export incidents --run ID --format FMT --output F` on the history: the file's bytes."""
    store, run_id = history
    out = tmp_path / f"incidents.{fmt}"
    argv = [
        "export",
        "incidents",
        "--run",
        run_id,
        "--format",
        fmt,
        "--output",
        str(out),
        "--store",
        str(store),
    ]
    code = main(argv)
    assert code == 0, capsys.readouterr().err
    return out.read_bytes()


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_exports_hold_the_outages_with_their_text(capsys, history, tmp_path, fmt):
    frame, _ = read_export(export(capsys, history, tmp_path, fmt), fmt)
    assert frame.height == OUTAGES
    psu = frame.filter(pl.col("hostname") == "gpu-03").row(0, named=True)
    assert (psu["reason"], psu["description"], psu["reported_by"], psu["node_events"]) == (
        BOLD,
        HTML,
        "=cmd|x",
        1,
    )
    assert frame.filter(pl.col("hostname") == "gpu-05")["repaired_s"].to_list() == [None]
    merged = frame.filter(pl.col("hostname") == "gpu-01").sort("t_s")
    assert merged["node_events"].to_list() == [1, 2]


def test_csv_export_keeps_text_cells_from_spreadsheet_formulas(capsys, history, tmp_path):
    raw = export(capsys, history, tmp_path, "csv").decode()
    assert "'=cmd|x" in raw and ",=cmd" not in raw  # a leading quote: the cell is text to a spreadsheet


def test_html_export_shows_the_text_escaped_and_no_job_zeros(capsys, history, tmp_path):
    page = export(capsys, history, tmp_path, "html").decode()
    assert "&lt;b&gt;PSU 2&lt;/b&gt;" in page and "<b>PSU 2</b>" not in page
    assert "**bold** psu" in page
    assert "<th>reason</th>" in page and "<th>reported by</th>" in page
    assert "no jobs in this run" in page and "<th>GPU-hours lost</th>" not in page


def test_anonymised_exports_leave_out_the_free_text_and_hide_who(history):
    store, run_id = history
    data = json.loads(export_run_incidents(Store(store), run_id, "json", anonymise=True))
    rows = {r["incident_id"]: r for r in data["incidents"]}
    assert all(r["reason"] is None and r["description"] is None for r in rows.values())
    reporters = [r["reported_by"] for r in rows.values()]
    assert all(re.fullmatch(r"user-[0-9a-f]+( \| user-[0-9a-f]+)?", r) for r in reporters), reporters
    assert not any(name in json.dumps(data) for name in ("alice", "carol", "slurm", "cmd"))


def test_an_outages_chain_says_it_was_recorded_not_how_it_was_detected(history):
    """A ticket says when a node went out, not what noticed it: the chain names the records, never a health check
    Goodput did not see."""
    from engine.analysis.incidents import incident_chain

    store_dir, run_id = history
    with Store(store_dir).connect(run_id) as con:
        chains = [incident_chain(con, i) for i in range(3)]
    detected = [c.filter(pl.col("what") == "detected")["detail"][0] for c in chains]
    assert all("of the fault history" in d and "not recorded" in d for d in detected), detected
    assert not any("health check" in d for d in detected)


def test_the_rules_recommend_nothing_on_a_history_and_say_why(run_id, history, capsys):
    """A history's last states are the past: `act recommend` refuses in one line, the Operations page says so."""
    store, _ = history
    assert main(["act", "recommend", "--run", run_id, "--store", str(store)]) == 2
    assert "is a fault history" in capsys.readouterr().err
    at = open_page("app_pages/operations.py", {"run": run_id})
    assert not at.exception
    assert any("is a fault history" in i.value for i in at.info)
    assert not at.dataframe  # no table of findings
