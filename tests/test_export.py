"""Exports: CSV, JSON and Parquet round-trip to the same frame; the HTML holds every incident and loads nothing
from the network; anonymised exports hold no name; files are written whole or not at all; the CLI."""

import io
import json
import os
import re
import stat

import plotly.offline
import polars as pl
import pytest

from engine.analysis.incidents import load_incidents
from engine.cli import main
from engine.errors import GoodputError
from engine.report.anonymise import KEY_FILE, pseudonym, store_key
from engine.report.export import (
    EXPORT_SCHEMA,
    ExportError,
    export_frame,
    export_incidents,
    export_run_incidents,
    read_export,
    write_export,
)
from tests.runs import STARTED_AT, bare_run, make_store, small_run
from tests.serving import CHROMIUM, CHROMIUM_ARGS

RUN_ID = small_run().run_id
# every name tests/runs.py gives a host, a job or a user
NAMES = (
    "h0000",
    "h0001",
    "h0002",
    "h0003",
    "tiny-pretrain",
    "ablation-a",
    "research-1",
    "flagship",
    "alice",
    '"pretrain"',
    ">pretrain<",
)


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return load_incidents(small_run().tables)


@pytest.fixture
def store(tmp_path):
    return make_store(tmp_path / "store")


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_round_trip_to_the_same_frame(frame, fmt):
    data = export_incidents(frame, fmt, run_info={"run_id": RUN_ID, "started_at": STARTED_AT, "name": "tiny"})
    back, meta = read_export(data, fmt)
    expected = export_frame(frame, STARTED_AT)
    assert back.schema == pl.Schema(EXPORT_SCHEMA)
    assert back.equals(expected)
    assert back["time_utc"][0].isoformat() == "2024-03-01T10:00:00+00:00"  # 36,000 s after the start
    assert back["job_ids"].to_list()[3] == ["flagship", "research-1"]
    if fmt != "csv":
        assert meta["run"]["run_id"] == RUN_ID and meta["format"] == "goodput-incidents"


def test_csv_list_cells_survive_quotes_and_commas():
    tricky = pl.DataFrame(
        {
            "incident_id": [0],
            "t_s": [1.0],
            "cause": ["ssd"],
            "category": ["Host"],
            "planned": [False],
            "job_ids": [['a "quoted", job', "back\\slash", ""]],
        }
    )
    back, _ = read_export(export_incidents(tricky, "csv"), "csv")
    assert back["job_ids"].to_list() == [['a "quoted", job', "back\\slash", ""]]


def test_json_carries_run_metadata_summary_and_records(store):
    document = json.loads(export_run_incidents(store, RUN_ID, "json"))
    assert (
        document["run"]["name"] == "tiny"
        and document["run"]["scenario"]["training"]["name"] == "tiny-pretrain"
    )
    assert document["run"]["started_at"] == "2024-03-01T00:00:00+00:00"
    assert document["summary"]["total"] == 5 and document["summary"]["unexpected"] == 4
    assert [r["incident_id"] for r in document["incidents"]] == [1, 2, 3, 4, 5]
    # every exported incident is an incident; only the flagship's are interruptions (issue 28, 3)
    for group in ("by_cause", "by_category"):
        rows = document["summary"][group]
        assert all("incidents" in r and "interruptions" not in r for r in rows)
        assert sum(r["incidents"] for r in rows) == 5
    if "interruptions" in document:
        assert all("interruptions" in r for r in document["interruptions"]["by_cause"])


def test_html_report_holds_every_incident_and_loads_nothing_from_the_network(store):
    page = export_run_incidents(store, RUN_ID, "html").decode()
    bundle = plotly.offline.get_plotlyjs()
    # plotly.js is embedded inline exactly once; its own source holds URL strings (map tile servers, licences)
    # that it only uses for map traces, which the report does not draw
    assert page.count(bundle) == 1
    rest = page.replace(bundle, "")
    assert "http://" not in rest and "https://" not in rest and "//cdn" not in rest
    tags = re.findall(r"<(?:script|link|img|iframe|source|embed|object)\b[^>]*>", page, flags=re.I)
    assert tags and all(not re.search(r"\b(?:src|href|data)\s*=", tag, flags=re.I) for tag in tags)
    assert "fetch(" not in rest and "XMLHttpRequest" not in rest and "import(" not in rest
    assert rest.count('class="plotly-graph-div"') == 2  # the timeline and the by-cause chart
    table = rest[rest.index('<table class="incidents">') :]
    rows = re.findall(r"<tr><td>(\d+)</td>", table)
    assert rows == ["1", "2", "3", "4", "5"]
    assert (
        "Network switch/cable" in table and "network_switch_cable" not in table and "h0001" in table
    )  # causes in words


def test_html_of_one_incident_shows_its_chain(store):
    page = export_run_incidents(store, RUN_ID, "html", incident_id=1, charts=False).decode()
    assert "Chain of the incident" in page and "tiny-pretrain: hosts h0003 replace h0001" in page
    assert re.findall(r"<tr><td>(\d+)</td>", page[page.index('<table class="incidents">') :]) == ["1"]
    assert "plotly" not in page.lower()  # charts=False: a light report


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "html"])
def test_anonymised_exports_name_no_host_job_or_user(store, fmt):
    data = export_run_incidents(
        store, RUN_ID, fmt, anonymise=True, incident_id=4 if fmt == "html" else None, charts=False
    )
    text = data.decode("latin-1")
    for name in NAMES:
        assert name not in text, name
    assert "tiny" not in text.replace("tiny-pretrain", "")  # the run's name
    if fmt == "json":
        assert json.loads(data)["run"]["name"] == pseudonym(store_key(store.root), "run", "tiny")
    key = store_key(store.root)
    for name, kind in (("h0001", "host"), ("flagship", "job"), ("alice", "user")):
        if fmt == "html" and name == "h0001":
            name = "h0002"  # incident 4 names hosts 2 and 3 (and h0001 as the spare swapped in)
        assert pseudonym(key, kind, name) in text


def test_pseudonyms_are_stable_within_a_store_and_differ_across_stores(tmp_path, store):
    first = read_export(export_run_incidents(store, RUN_ID, "csv", anonymise=True), "csv")[0]
    again = read_export(export_run_incidents(store, RUN_ID, "csv", anonymise=True), "csv")[0]
    assert first.equals(again)
    assert first["hostname"][0] == first.filter(pl.col("incident_id") == 1)["hostname"][0]
    # the flagship job's id is the same pseudonym in every row it appears in
    ids = first.filter(pl.col("jobs_hit") > 0)["job_ids"].to_list()
    assert ids[0][0] == ids[2][0] == ids[3][0] != ids[1][0]
    key_path = store.root / KEY_FILE
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600 and len(key_path.read_bytes()) == 32
    other = make_store(tmp_path / "other")
    elsewhere = read_export(export_run_incidents(other, RUN_ID, "csv", anonymise=True), "csv")[0]
    assert elsewhere["hostname"][0] != first["hostname"][0]


@pytest.mark.parametrize("anonymise", [False, True])
def test_a_run_without_incidents_exports_empty_files(tmp_path, anonymise):
    store = make_store(tmp_path / "store", bare_run())
    for fmt in ("csv", "json", "parquet"):
        back, _ = read_export(export_run_incidents(store, bare_run().run_id, fmt, anonymise=anonymise), fmt)
        assert back.height == 0 and back.schema == pl.Schema(EXPORT_SCHEMA)
    page = export_run_incidents(store, bare_run().run_id, "html", anonymise=anonymise).decode()
    assert "Incidents (0)" in page and "plotly" not in page.lower()


def test_anonymise_without_a_key_is_an_error(frame):
    with pytest.raises(ExportError, match="no key"):
        export_incidents(frame, "csv", anonymise=True)


def test_write_export_never_leaves_a_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "out.csv"
    write_export(target, b"old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ExportError, match="out.csv: cannot be written \\(disk full\\)"):
        write_export(target, b"new contents", force=True)
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    monkeypatch.undo()
    with pytest.raises(GoodputError, match="already exists; add --force"):
        write_export(target, b"new contents")
    write_export(target, b"new contents", force=True)
    assert target.read_bytes() == b"new contents" and sorted(p.name for p in tmp_path.iterdir()) == [
        "out.csv"
    ]


def test_write_export_never_replaces_what_appeared_after_the_check(tmp_path, monkeypatch):
    # the first check (the CLI's) passes; a file or link made at that path before the write is never replaced
    import engine.report.export
    from engine.store.outputs import check_target

    calls = []

    def first_check_passes(path, *, force, flag="--output"):
        calls.append(path)
        if len(calls) > 1:
            check_target(path, force=force, flag=flag)

    monkeypatch.setattr(engine.report.export, "check_target", first_check_passes)
    target = tmp_path / "out.csv"
    target.write_bytes(b"someone else's")
    with pytest.raises(ExportError, match="already exists; add --force"):
        write_export(target, b"ours")  # the hard link refuses
    assert target.read_bytes() == b"someone else's"
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    link = tmp_path / "link.csv"
    link.symlink_to(victim)
    calls.clear()
    with pytest.raises(GoodputError, match="is a symbolic link"):
        write_export(link, b"ours", force=True)  # checked again just before the rename
    assert victim.read_bytes() == b"precious" and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "out.csv", "victim"]


def test_unknown_format_and_damaged_files_are_clear_errors(frame):
    with pytest.raises(ExportError, match="unknown export format 'xlsx'"):
        export_incidents(frame, "xlsx")
    with pytest.raises(ExportError, match="not a Goodput incidents export"):
        read_export(b'{"rows": []}', "json")
    with pytest.raises(ExportError, match="cannot read as a parquet"):
        read_export(b"not parquet", "parquet")


# ----- the command line ---------------------------------------------------------------------------------


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "html"])
def test_cli_writes_each_format(capsys, store, tmp_path, fmt):
    out = tmp_path / f"incidents.{fmt}"
    code, _, err = run_cli(
        capsys,
        "export",
        "incidents",
        "--run",
        RUN_ID,
        "--format",
        fmt,
        "--output",
        str(out),
        "--store",
        str(store.root),
    )
    assert code == 0 and out.stat().st_size > 0 and "wrote" in err
    if fmt != "html":
        assert read_export(out.read_bytes(), fmt)[0].height == 5


def test_cli_filters_and_one_incident(capsys, store, tmp_path):
    out = tmp_path / "some.json"
    code, _, _ = run_cli(
        capsys,
        "export",
        "incidents",
        "--run",
        RUN_ID,
        "--format",
        "json",
        "--output",
        str(out),
        "--store",
        str(store.root),
        "--unexpected",
        "--since",
        "12h",
        "--until",
        "2d",
        "--category",
        "GPU",
        "--category",
        "Network",
    )
    assert code == 0
    document = json.loads(out.read_text())
    assert [r["incident_id"] for r in document["incidents"]] == [2, 4]
    assert document["filters"] == {
        "since_s": 43200.0,
        "until_s": 172800.0,
        "categories": ["GPU", "Network"],
        "planned": False,
    }
    code, _, _ = run_cli(
        capsys,
        "export",
        "incidents",
        "--run",
        RUN_ID,
        "--format",
        "json",
        "--output",
        str(out),
        "--store",
        str(store.root),
        "--incident",
        "4",
        "--anonymise",
        "--force",
    )
    document = json.loads(out.read_text())
    assert code == 0 and [r["incident_id"] for r in document["incidents"]] == [4] and document["anonymised"]
    assert [s["what"] for s in document["chain"]].count("job interrupted") == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--run", "sim-nope"], "no run 'sim-nope'"),
        (["--run", RUN_ID, "--cause", "gpu_on_fire"], "unknown cause gpu_on_fire"),
        (["--run", RUN_ID, "--incident", "99"], "has no incident 99"),
        (["--run", RUN_ID, "--since", "soon"], "--since"),
    ],
)
def test_cli_bad_input_exits_2_and_writes_nothing(capsys, store, tmp_path, argv, message):
    out = tmp_path / "x.csv"
    code, stdout, err = run_cli(
        capsys,
        "export",
        "incidents",
        "--format",
        "csv",
        "--output",
        str(out),
        "--store",
        str(store.root),
        *argv,
    )
    assert code == 2 and stdout == "" and err.startswith("goodput: error: ") and message in err
    assert list(tmp_path.glob("*.csv")) == [] and not any(
        p.name.startswith(".x.csv") for p in tmp_path.iterdir()
    )


# ----- --output checked before the run is read ----------------------------------------------------------


def cli_export(capsys, store, output: str, *extra: str):
    return run_cli(
        capsys,
        "export",
        "incidents",
        "--run",
        RUN_ID,
        "--format",
        "csv",
        "--output",
        output,
        "--store",
        str(store.root),
        *extra,
    )


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("", "--output: empty; give the name of a file to write"),
        ("{tmp}", "--output: {tmp} is a folder; give the name of a file to write inside it"),
        ("{tmp}/", "--output: {tmp}/ names a folder; give the name of a file to write inside it"),
        ("{tmp}/missing/x.csv", "--output: folder {tmp}/missing does not exist"),
        ("{tmp}/file.txt/x.csv", "--output: {tmp}/file.txt is not a folder"),
        (
            "/dev/null",
            "--output: /dev/null is not a regular file (a device, FIFO or socket); Goodput writes only"
            " regular files",
        ),
        ("{tmp}/fifo", "--output: {tmp}/fifo is not a regular file (a device, FIFO or socket)"),
        (
            "{tmp}/link.csv",
            "--output: {tmp}/link.csv is a symbolic link; Goodput does not write through links",
        ),
        ("{tmp}/dangling.csv", "--output: {tmp}/dangling.csv is a symbolic link"),
        ("{tmp}/file.txt", "--output: {tmp}/file.txt already exists; add --force to replace it"),
        ("/proc/incidents.csv", "--output: /proc cannot be written ("),
    ],
)
@pytest.mark.parametrize("force", [False, True])
def test_a_bad_output_is_refused_before_the_run_is_read(
    capsys, tmp_path, monkeypatch, output, message, force
):
    import engine.report.export

    if force and output.endswith("file.txt"):
        return  # an existing regular file with --force is replaced: the next test
    store = make_store(tmp_path / "store")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "file.txt").write_bytes(b"keep me")
    os.mkfifo(folder / "fifo")
    (folder / "link.csv").symlink_to(folder / "file.txt")
    (folder / "dangling.csv").symlink_to(folder / "nowhere.csv")
    before = {p.name: (p.lstat().st_mode, p.lstat().st_ino) for p in folder.iterdir()}
    null = os.stat("/dev/null")

    def read(*_, **__):
        raise AssertionError("the run was read before --output was checked")

    monkeypatch.setattr(engine.report.export, "export_run_incidents", read)
    monkeypatch.setattr(store.__class__, "info", read)
    code, out, err = cli_export(capsys, store, output.format(tmp=folder), *(["--force"] if force else []))
    assert code == 2 and out == ""
    assert err.startswith("goodput: error: " + message.format(tmp=folder)) and err.count("\n") == 1
    assert {
        p.name: (p.lstat().st_mode, p.lstat().st_ino) for p in folder.iterdir()
    } == before  # nothing written
    assert (folder / "file.txt").read_bytes() == b"keep me"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.stat("/dev/null").st_rdev == null.st_rdev


def test_force_replaces_an_existing_file_atomically(capsys, store, tmp_path):
    out = tmp_path / "incidents.csv"
    out.write_bytes(b"old export")
    code, _, err = cli_export(capsys, store, str(out))
    assert code == 2 and "already exists; add --force" in err and out.read_bytes() == b"old export"
    code, _, _ = cli_export(capsys, store, str(out), "--force")
    assert code == 0 and read_export(out.read_bytes(), "csv")[0].height == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["incidents.csv", "store"]


# ----- hostile names: CSV formula injection and HTML ------------------------------------------------------

HOSTILE = [
    '=HYPERLINK("http://evil","x")',
    "<img src=x onerror=alert(1)>",
    '<a href="http://evil/">click</a>',
    "![x](http://evil/i.png)",
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd",
    "-2+3",
    "\t=1",
    "'=already quoted",
]


def hostile_frame() -> pl.DataFrame:
    frame = load_incidents(small_run().tables)
    n = frame.height
    return frame.with_columns(
        hostname=pl.Series([HOSTILE[i % len(HOSTILE)] for i in range(n)]),
        cause=pl.Series([HOSTILE[(i + 1) % len(HOSTILE)] for i in range(n)]),
        category=pl.Series([HOSTILE[(i + 2) % len(HOSTILE)] for i in range(n)]),
        job_names=pl.Series([[HOSTILE[(i + 3) % len(HOSTILE)]] for i in range(n)]),
        users=pl.Series([[h] for h in HOSTILE[:n]]),
    )


def test_csv_export_neutralises_formulas_and_reads_back_the_original():
    import csv

    frame = hostile_frame()
    data = export_incidents(frame, "csv", run_info={"started_at": STARTED_AT})
    rows = list(csv.DictReader(io.StringIO(data.decode(), newline="")))
    for row, hostname, cause in zip(rows, frame["hostname"], frame["cause"], strict=True):
        for cell, original in ((row["hostname"], hostname), (row["cause"], cause)):
            assert cell[0] not in "=+-@\t\r", cell
            assert cell == (("'" + original) if original[0] in "=+-@\t\r'" else original)
        assert row["users"].startswith("[")  # a JSON array: text to a spreadsheet
    assert rows[0]["t_s"] == "36000.0" and rows[0]["incident_id"] == "1"  # numbers stay numbers, unquoted
    assert '"\'=HYPERLINK(""http://evil"",""x"")"' in data.decode()  # quoted, with its leading quote
    back, _ = read_export(data, "csv")
    assert back.equals(export_frame(frame, STARTED_AT))  # the original text, every cell


def test_csv_keeps_negative_numbers_as_numbers():
    frame = pl.DataFrame(
        {"incident_id": [1], "t_s": [-5.0], "xid": [-1], "cause": ["-5"], "planned": [False]}
    )
    line = export_incidents(frame, "csv").decode().splitlines()[1]
    assert line.startswith("1,,-5.0,") and ",-1," in line and ",'-5," in line


def test_json_and_parquet_keep_hostile_text_as_it_is():
    frame = hostile_frame()
    for fmt in ("json", "parquet"):
        back, _ = read_export(export_incidents(frame, fmt, run_info={"started_at": STARTED_AT}), fmt)
        assert back["hostname"].to_list() == frame["hostname"].to_list()
        assert back["users"].to_list() == frame["users"].to_list()


def test_html_report_escapes_every_data_string():
    frame = hostile_frame()
    chain = pl.DataFrame({"step": [1], "t_s": [36000.0], "what": [HOSTILE[1]], "detail": [HOSTILE[0]]})
    page = export_incidents(
        frame, "html", run_info={"name": HOSTILE[1], "run_id": "sim-x", "started_at": STARTED_AT}, chain=chain
    ).decode()
    body = page.replace(plotly.offline.get_plotlyjs(), "")
    assert "<img" not in body and "\\u003cimg" not in body  # neither in the tables nor in the charts' data
    assert body.count("&lt;img src=x onerror=alert(1)&gt;") >= 3  # title, table rows, chain
    assert "![x](http://evil/i.png)" in body  # HTML does not read Markdown: shown as it is, loads nothing
    tags = set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", body))
    assert tags <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "p",
        "b",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "div",
        "script",
    }, tags


def test_report_charts_give_plotly_escaped_text():
    from engine.report.charts import by_cause_figure, timeline_figure

    frame = export_frame(hostile_frame(), STARTED_AT)
    for fig in (timeline_figure(frame), by_cause_figure(frame)):
        shown = [str(v) for trace in fig.data for v in (*trace.y, trace.name, *(trace.text or ()))]
        assert not any("<img" in v or "<a" in v for v in shown), shown
        assert any("&lt;img src=x onerror=alert(1)&gt;" in v for v in shown)


# ----- the report in a browser, offline ---------------------------------------------------------------------


@pytest.mark.browser
def test_html_report_renders_offline_in_chromium(store, tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    report = tmp_path / "report.html"
    write_export(report, export_run_incidents(store, RUN_ID, "html"))
    requested = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(offline=True)
            page = context.new_page()
            page.on("request", lambda r: requested.append(r.url))
            page.goto(report.as_uri())
            page.wait_for_selector(".plotly-graph-div .main-svg", timeout=20000)
            charts = page.locator(".plotly-graph-div").count()
            markers = page.locator(".plotly-graph-div .scatterlayer .point").count()
            rows = page.locator("table.incidents tbody tr").count()
            # every cause on the charts' left axes whole, at a laptop's width (a fixed margin cut the long ones)
            page.set_viewport_size({"width": 1280, "height": 900})
            page.wait_for_timeout(500)
            cut = page.evaluate(
                """() => [...document.querySelectorAll('.plotly-graph-div')].flatMap(div => {
                    const left = div.getBoundingClientRect().left;
                    return [...div.querySelectorAll('.ytick text')]
                        .filter(t => t.getBoundingClientRect().left < left - 0.5).map(t => t.textContent);
                })"""
            )
        finally:
            browser.close()
    assert charts == 2 and markers == 5 and rows == 5  # every incident drawn on the timeline and listed
    assert cut == []
    assert requested == [report.as_uri()]  # nothing but the file itself was loaded


@pytest.mark.browser
def test_hostile_names_in_the_html_report_stay_text_in_chromium(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    report = tmp_path / "report.html"
    write_export(
        report,
        export_incidents(hostile_frame(), "html", run_info={"name": HOSTILE[1], "started_at": STARTED_AT}),
    )
    requested, dialogs = [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(offline=True).new_page()
            page.on("request", lambda r: requested.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(report.as_uri())
            page.wait_for_selector(".plotly-graph-div .main-svg", timeout=20000)
            images = page.locator("img, svg image").count()
            links = page.locator("a[href*='evil'], svg a").count()
            hosts = page.locator("table.incidents tbody tr td:nth-child(7)").all_inner_texts()
            ticks = page.locator(".plotly-graph-div .ytick text").evaluate_all(
                "els => els.map(e => e.textContent)"
            )
        finally:
            browser.close()
    assert images == 0 and links == 0 and dialogs == [] and requested == [report.as_uri()]
    assert hosts == [HOSTILE[i % len(HOSTILE)] for i in range(len(hosts))] and len(hosts) == 5
    assert "<img src=x onerror=alert(1)>" in ticks  # the cause, shown as its own characters


def test_the_reports_cause_axes_grow_to_their_longest_label():
    """Issue 28: "Host maintenance (unplanned)" was cut by the timeline's fixed 160 px margin."""
    from engine.report.charts import by_cause_figure, timeline_figure

    frame = pl.DataFrame(
        {
            "incident_id": [1, 2],
            "t_s": [0.0, 3600.0],
            "cause": ["host_maintenance_unplanned", "faulty_gpu"],
            "category": ["Unplanned maintenance", "GPU"],
            "gpu_hours_lost": [1.0, 2.0],
        }
    )
    for fig in (timeline_figure(frame), by_cause_figure(frame)):
        assert fig.layout.yaxis.automargin is True
        assert fig.layout.margin.l <= 40  # the axis takes what its labels need, no more
