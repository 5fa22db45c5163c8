"""Data page: the runs of the store, deleting in two steps, unreadable files, imports by upload (telemetry
ingested, traces replayed, bad files named with their line), the commands that add runs."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.store import Store
from tests.fixtures.ingest.samples import kernel_log, scrape_text, xid_body
from tests.runs import bare_run, make_store, small_run

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
SIM, ING = "sim-20240301-000000-aaaaaa", "ing-20240301-000000-bbbbbb"
SCRAPES = scrape_text(2, 8, 3).encode()  # 2 hosts x 8 GPUs x 3 scrapes x 11 metrics
LOG = kernel_log("dmesg-T", [(10.0, xid_body(3, 79))], host="node001").encode()
TRACE = (Path(__file__).resolve().parent / "fixtures" / "replay" / "small.csv").read_bytes()


def data_page(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    return at.switch_page("app_pages/data.py").run()


def runs_listed(at: AppTest) -> list[tuple]:
    """The runs table's rows (run id, kind, name, days, GPUs, seed): a store's few runs as static cells, each its
    text (dashboard.table_view.short)."""
    [table] = at.table
    return [
        tuple(r)
        for r in table.value[["run id", "kind", "name", "days", "GPUs", "seed"]].itertuples(index=False)
    ]


@pytest.fixture
def two_runs(store_dir):
    return make_store(store_dir, small_run(), bare_run())


def test_lists_every_run_newest_first(two_runs):
    at = data_page()
    assert not at.exception
    assert at.title[0].value == "Data"
    rows = runs_listed(at)
    assert [r[:4] for r in rows] == [(SIM, "simulate", "tiny", "2"), (ING, "ingest", "observed", "2")]
    # GPUs from the summary where the simulator wrote one, else counted in the run's gpus table
    assert [r[4] for r in rows] == ["32", "32"]
    assert rows[0][5] == "1" and rows[1][5] == "–"  # an ingested run has no seed
    assert not at.dataframe  # no interactive grid for a few runs
    assert str(two_runs.root) in at.caption[0].value and "2 run(s)" in at.caption[0].value


def test_the_run_to_delete_is_the_selected_one_by_default(two_runs):
    at = data_page(run=ING)
    assert at.selectbox(key="data_victim").value == ING


def test_delete_asks_first_and_cancel_keeps_the_run(two_runs):
    at = data_page()
    at.selectbox(key="data_victim").select(ING)
    at.button(key="data_delete").click().run()
    [warning] = at.warning
    assert (
        "Delete **observed · ingest · " + ING + "**?" in warning.value and "cannot be undone" in warning.value
    )
    assert two_runs.path_of(ING).exists()  # nothing deleted yet
    at.button(key="data_cancel").click().run()
    assert not at.warning
    assert two_runs.path_of(ING).exists()
    assert [r[0] for r in runs_listed(at)] == [SIM, ING]


def test_delete_after_confirmation(two_runs):
    at = data_page()
    at.selectbox(key="data_victim").select(ING)
    at.button(key="data_delete").click().run()
    at.button(key="data_confirm").click().run()
    assert not at.exception
    assert not two_runs.path_of(ING).exists()
    assert [s.value for s in at.success] == [f"Deleted run `{ING}`."]
    assert [r[0] for r in runs_listed(at)] == [SIM]
    assert at.sidebar.selectbox[0].options == [f"tiny · simulate · {SIM}"]


def test_deleting_the_selected_run_moves_the_selection(two_runs):
    at = data_page(run=SIM)
    assert at.query_params["run"] == SIM
    at.selectbox(key="data_victim").select(SIM)
    at.button(key="data_delete").click().run()
    at.button(key="data_confirm").click().run()
    assert not at.exception
    assert not two_runs.path_of(SIM).exists()
    assert at.query_params["run"] == ING and at.sidebar.selectbox[0].value == ING


def test_unreadable_file_is_shown_and_can_be_deleted(store_dir):
    store = make_store(store_dir, small_run())
    bad = store.runs_dir / "sim-20240302-000000-cccccc.duckdb"
    bad.write_bytes(b"\x00garbage" * 64)
    at = data_page()
    assert not at.exception
    [error] = at.error
    assert "sim-20240302-000000-cccccc" in error.value and "cannot be read" in error.value
    at.selectbox(key="data_victim").select("sim-20240302-000000-cccccc")
    at.button(key="data_delete").click().run()
    at.button(key="data_confirm").click().run()
    assert not bad.exists() and not at.error
    assert [r[0] for r in runs_listed(at)] == [SIM]


def test_more_runs_than_a_short_table_holds_are_listed_in_the_sortable_grid(store_dir):
    from dashboard.table_view import SHORT_ROWS

    runs = [small_run(f"run {i}", run_id=f"sim-20240301-000000-{i:06x}") for i in range(SHORT_ROWS + 1)]
    make_store(store_dir, *runs)
    at = data_page()
    assert not at.exception and not at.table
    [grid] = at.dataframe
    assert list(grid.value["run_id"]) == [r.run_id for r in runs]  # newest first
    assert list(grid.value["days"]) == [r.duration_s / 86400 for r in runs]  # numbers, sortable as numbers


def test_empty_store_shows_the_commands(store_dir):
    at = data_page()
    assert not at.exception
    assert not at.dataframe and not at.table
    assert any("No runs in" in i.value for i in at.info)
    # nothing to delete: the only buttons are the imports', disabled until a file is chosen (no watch form
    # either: no endpoint is configured, tests/test_page_data_watch.py)
    assert [(b.key, b.disabled) for b in at.button] == [("upload_ingest", True), ("upload_replay", True)]
    commands = "\n".join(c.value for c in at.code)
    for command in (
        "goodput simulate --preset demo",
        "goodput replay",
        "goodput ingest dcgm",
        "goodput ingest kernel-log",
        "goodput runs",
    ):
        assert command in commands
    assert f"--store {store_dir}" in commands
    assert [u.key for u in at.file_uploader] == ["upload_dcgm", "upload_logs", "upload_trace", "upload_nodes"]
    assert any("Up to 200 MB in all per import" in c.value for c in at.caption)


# ----- uploads ---------------------------------------------------------------------------------------------


def page_links(at: AppTest) -> list[tuple[str, str]]:
    return [(link.proto.label, link.proto.query_string) for link in at.get("page_link")]


def test_uploaded_scrapes_and_logs_become_a_run_with_a_link(store_dir):
    at = data_page()
    at.file_uploader(key="upload_dcgm").set_value([("node000-001.prom", SCRAPES, "text/plain")])
    at.file_uploader(key="upload_logs").set_value([("node001.log", LOG, "text/plain")])
    at.text_input(key="upload_telemetry_name").input("rack 7 scrapes")
    at.run()
    at.button(key="upload_ingest").click().run()
    assert not at.exception and not at.error
    store = Store(store_dir)
    [run_id] = store.run_ids()
    assert [s.value for s in at.success] == [
        f"Imported **rack 7 scrapes** as run `{run_id}` (ingest: 2 hosts, 16 GPUs, 528 samples, 1 XID events)."
    ]
    assert page_links(at) == [(f"Open run {run_id}", f"run={run_id}")]
    assert [r[0] for r in runs_listed(at)] == [run_id]  # the list above shows it at once
    assert store.info(run_id).kind == "ingest"


def test_a_garbled_upload_shows_file_and_line_and_writes_nothing(store_dir):
    at = data_page()
    bad = SCRAPES.replace(b"DCGM_FI_DEV_GPU_TEMP{", b"DCGM_FI_DEV_GPU_TEMP{{", 1)
    at.file_uploader(key="upload_dcgm").set_value([("bad.prom", bad, "text/plain")]).run()
    at.button(key="upload_ingest").click().run()
    assert not at.exception and not at.success
    [error] = at.error
    assert error.value.startswith("Nothing was imported: bad.prom, line 39: garbled metric name")
    assert Store(store_dir).run_ids() == []


def test_an_uploaded_trace_is_replayed_in_the_chosen_mode(store_dir):
    at = data_page()
    at.file_uploader(key="upload_trace").set_value(("small.csv", TRACE, "text/csv"))
    at.selectbox(key="upload_format").select("goodput")
    at.radio(key="upload_mode").set_value("recorded")
    at.run()
    at.button(key="upload_replay").click().run()
    assert not at.exception and not at.error
    [run_id] = Store(store_dir).run_ids()
    info = Store(store_dir).info(run_id)
    assert (info.kind, info.name, info.summary["mode"], info.summary["jobs"]) == (
        "replay",
        "small.csv",
        "recorded",
        4,
    )
    assert page_links(at) == [(f"Open run {run_id}", f"run={run_id}")]


def test_a_bad_trace_upload_names_the_line(store_dir):
    at = data_page()
    at.file_uploader(key="upload_trace").set_value(
        ("small.csv", TRACE.replace(b"a,0,16,2h", b"a,0,x16,2h"), "text/csv")
    ).run()
    at.button(key="upload_replay").click().run()
    [error] = at.error
    assert error.value.startswith("Nothing was imported: small.csv, line 3: gpus must be a number")
    assert Store(store_dir).run_ids() == []


# ----- issue 13: uploads do what the command line does ----------------------------------------------------------

OPENB = Path(__file__).resolve().parent / "fixtures" / "replay" / "openb"  # a pod list and its node list
PODS, NODES = (OPENB / "pods.csv").read_bytes(), (OPENB / "openb_node_list_gpu_node.csv").read_bytes()


def test_an_openb_pod_list_is_replayed_on_its_uploaded_node_list(store_dir):
    at = data_page()
    at.file_uploader(key="upload_trace").set_value(("openb_pod_list_default.csv", PODS, "text/csv"))
    at.file_uploader(key="upload_nodes").set_value(("openb_node_list_gpu_node.csv", NODES, "text/csv"))
    at.run()
    at.button(key="upload_replay").click().run()
    assert not at.exception and not at.error and not at.warning
    [run_id] = Store(store_dir).run_ids()
    assert [s.value for s in at.success] == [
        f"Imported **openb_pod_list_default.csv** as run `{run_id}` (replay: 5 jobs, 2 hosts, 10 GPUs)."
    ]
    hosts = Store(store_dir).table(run_id, "hosts")["hostname"].to_list()
    assert hosts == ["node-a", "node-b"]  # the recorded nodes, as `goodput replay` reads them beside the pods


def test_an_openb_pod_list_alone_says_its_node_list_is_missing(store_dir):
    at = data_page()
    at.file_uploader(key="upload_trace").set_value(("pods.csv", PODS, "text/csv")).run()
    at.button(key="upload_replay").click().run()
    assert not at.exception and not at.error
    [run_id] = Store(store_dir).run_ids()
    [warning] = at.warning
    assert warning.value.startswith(
        "pods.csv came without its node list (openb_node_list_gpu_node.csv):"
        " the cluster was inferred from the pods' peak GPU use (2 hosts, 16 GPUs)."
    )
    assert "add it on the Data page" in warning.value
    assert page_links(at) == [(f"Open run {run_id}", f"run={run_id}")]


def test_a_node_list_given_as_the_trace_says_where_it_goes(store_dir):
    at = data_page()
    at.file_uploader(key="upload_trace").set_value(("nodes.csv", NODES, "text/csv")).run()
    at.button(key="upload_replay").click().run()
    [error] = at.error
    assert error.value.startswith(
        "Nothing was imported: nodes.csv: an Alibaba openb node list, not a job trace"
    )
    assert Store(store_dir).run_ids() == []


def test_a_boot_relative_kernel_log_upload_says_its_dates_are_unknown(store_dir):
    log = kernel_log("dmesg", [(10.0, xid_body(3, 79))], host="node001").encode()
    at = data_page()
    at.file_uploader(key="upload_logs").set_value([("node001.dmesg", log, "text/plain")]).run()
    at.button(key="upload_ingest").click().run()
    assert not at.exception and not at.error
    [warning] = at.warning
    assert warning.value.startswith(
        "node001.dmesg: stamped in seconds since boot only, so its dates are unknown;"
        " times are shown from its first line"
    )
    [table] = at.table
    assert table.value["run starts"].to_list() == ["unknown (since boot)"]
    dated = kernel_log("dmesg-T", [(10.0, xid_body(3, 79))], host="node001").encode()
    at.file_uploader(key="upload_logs").set_value([("node001.log", dated, "text/plain")]).run()
    at.button(key="upload_ingest").click().run()
    assert not at.warning
    [table] = at.table
    assert sorted(table.value["run starts"].to_list()) == ["2024-12-02 11:00 UTC", "unknown (since boot)"]
