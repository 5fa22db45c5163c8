"""Jobs page: counts, the capped Gantt, filters and the time window kept in the URL, one job's attempts, hosts
and waits from ?job=, the queue and utilisation of a window (each in its lazy tab, drawn only once open), the
exports."""

import json
import os
import re
import subprocess
from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest
from test_charts_jobs import STARTED, queue_run
from test_charts_pages import open_page, sparse_run, stored_run

from engine.analysis.definitions import definition
from engine.replay import parse_trace
from engine.replay.run import replay, settings_from
from engine.store import Store

PAGE = "app_pages/jobs.py"
QUEUE = "Queue and waits"  # the tabs under the Gantt (dashboard/app_pages/jobs.py), ?tab=LABEL
GPUS = "GPU allocation"


def open_tab(at, label: str):
    """Open the tab `label` as a click would, and rerun (the URL's ?tab= follows the widget; a page opened
    from a ?tab= link holds it there too)."""
    at.session_state["tab"] = label
    at.query_params.pop("tab", None)
    return at.run()


def job_box(at):
    return next(b for b in at.selectbox if b.label == "Job")


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_empty_store(store_dir):
    at = open_page(PAGE)
    assert not at.exception and [t.value for t in at.title] == ["Jobs"]
    assert any("no runs yet" in i.value for i in at.info)


def test_counts_gantt_table_and_a_job_from_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "job": "j-r2"})
    assert not at.exception
    m = metrics(at)
    assert (m["Jobs"], m["Jobs never started"], m["Failed attempts"], m["Checkpoints written"]) == (
        "4",
        "1",
        "2",
        "46",
    )
    assert any(c.value.startswith("3 of 3 jobs that ran") for c in at.caption)
    help_of = {x.label: x.help for x in at.metric}
    assert help_of["Failed attempts"] == definition("failed_attempts").help  # every figure explains itself
    table = at.dataframe[0].value
    assert table["job_id"].tolist() == ["j-flag", "j-r1", "j-r2", "j-r3"]  # flagship, then GPU-time
    assert table.set_index("job_id").loc["j-flag", "lost_gpu_hours"] == round(8 * 600 / 3600, 1)
    assert (
        table.set_index("job_id").loc["j-flag", "submitted"] == "2024-03-01 00:00 UTC"
    )  # a date, not seconds
    assert job_box(at).value == "j-r2"
    assert (m["GPUs of the job"], m["Attempts of the job"], m["Wait before start"]) == ("2", "2", "16 min")
    attempts = at.dataframe[1].value
    assert attempts["ended_by"].tolist() == ["Network switch/cable", "Completed"]  # words, not keys
    assert attempts["lost_work_min"].tolist() == [20.0, 0.0]
    assert "**Incidents that hit it** (1)" in [x.value for x in at.markdown]


def test_filters_narrow_the_table_and_go_to_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "states": "completed"})
    assert not at.exception
    assert at.dataframe[0].value["job_id"].tolist() == ["j-r1", "j-r2"]
    at.text_input[0].set_value("EVAL").run()
    assert not at.exception and at.query_params["q"] == "EVAL"
    assert at.dataframe[0].value["job_id"].tolist() == ["j-r2"]
    at.multiselect[0].set_value(["pending"]).run()
    assert at.query_params["states"] == "pending"
    assert any(i.value == "No job matches the filters." for i in at.info)


def test_gantt_is_capped(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id})
    at.number_input[0].set_value(1).run()
    assert any(c.value.startswith("1 of 3 jobs that ran") for c in at.caption)


def test_gantt_order_from_the_url(store_dir):
    run_id = Store(store_dir).write_run(queue_run())
    at = open_page(PAGE, {"run": run_id, "order": "waited"})
    assert not at.exception
    order = next(b for b in at.selectbox if b.label == "Gantt order")
    assert order.value == "waited"
    assert any(
        c.value.startswith("3 of 3 jobs that ran in the window (flagship first, then the longest waits)")
        for c in at.caption
    )
    order.set_value("GPU-time").run()
    assert "order" not in at.query_params


def test_a_run_without_jobs(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id, "job": "nope"})
    assert not at.exception
    assert metrics(at)["Jobs"] == "0" and "Checkpoints written" not in metrics(at)  # no flagship job
    assert any(i.value == "No job matches the filters." for i in at.info)
    assert job_box(at).value is None


def test_every_change_counts_and_the_chosen_job_survives_the_filters(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id})
    job_box(at).set_value("j-r1").run()
    job_box(at).set_value("j-flag").run()
    assert at.query_params["job"] == "j-flag"
    for text, expected in (("sweep", ["j-r1"]), ("eval", ["j-r2"]), ("queued", ["j-r3"])):
        at.text_input[0].set_value(text).run()
        assert at.dataframe[0].value["job_id"].tolist() == expected
    assert job_box(at).value == "j-flag" and job_box(at).options[0] == "demo-pretrain · j-flag"


# ----- the window, the queue, the drill-down's waits and hosts, the exports (tests/test_charts_jobs.queue_run)


def test_window_from_the_url_narrows_waits_reasons_and_utilisation(store_dir):
    run_id = Store(store_dir).write_run(queue_run())
    at = open_page(PAGE, {"run": run_id, "from": "240", "to": "720", "tab": QUEUE})
    assert not at.exception
    origin = STARTED.replace(tzinfo=None)
    assert at.slider[0].value == (origin + timedelta(seconds=240), origin + timedelta(seconds=720))
    m = metrics(at)
    # started in [240, 720): B at 300 s after 300 s of waiting
    assert (
        m["Jobs started (window)"],
        m["Wait before start, median (window)"],
        m["Wait before start, 95th percentile (window)"],
    ) == ("1", "5 min", "5 min")
    # why they waited: the table's jobs A, B, C (D did not wait), as the table's "Why it waited" says
    assert m["Jobs that waited"] == "3"
    assert any(
        c.value
        == "Of the 4 jobs in the table (Jobs in the window: the window and filters above), each under "
        "the reason it waited longest for: No free capacity: 2 · Higher-priority jobs first: 1."
        for c in at.caption
    )
    m = metrics(open_tab(at, GPUS))
    # busy GPU-s: A 360 x 4 + B 200 x 2 + B 20 x 2 + D 480 x 0.5 = 2,120 of 480 s x 10 GPUs; h1 down 200 s x 4
    assert (m["Mean GPUs allocated (window)"], m["Mean GPUs out of service (window)"]) == ("44.2%", "16.7%")
    table = open_tab(at, "Jobs in the window").dataframe[0].value
    assert table["job_id"].tolist() == ["A", "B", "D", "C"]
    assert table["why_it_waited"].fillna("").tolist() == [
        "Higher-priority jobs first",
        "No free capacity",
        "",
        "No free capacity",
    ]
    assert at.query_params["from"] == "240" and at.query_params["to"] == "720"
    at.slider[0].set_value((origin, origin + timedelta(seconds=1000))).run()  # the whole run: a clean URL
    assert not at.exception and "from" not in at.query_params and "to" not in at.query_params
    assert metrics(open_tab(at, QUEUE))["Jobs started (window)"] == "3"


def test_window_drops_jobs_that_ended_before_it(store_dir):
    run_id = Store(store_dir).write_run(queue_run())
    at = open_page(PAGE, {"run": run_id, "from": "660", "to": "1000"})
    assert not at.exception
    assert at.dataframe[0].value["job_id"].tolist() == ["B", "D", "C"]  # A ended at 600
    assert any(c.value.startswith("2 of 2 jobs that ran in the window") for c in at.caption)


def test_a_job_shows_its_hosts_and_why_it_waited(store_dir):
    run_id = Store(store_dir).write_run(queue_run())
    at = open_page(PAGE, {"run": run_id, "job": "B"})
    assert not at.exception
    attempts = at.dataframe[1].value
    assert [list(h) for h in attempts["on_hosts"]] == [["h1"], ["h1"]]  # a list, not a joined string
    assert attempts["ended_by"].tolist() == ["Faulty GPU", "Still running at the end of the run"]
    assert "**Why it waited**: No free capacity (5 min), Hosts failed or in repair (3 min)" in [
        x.value for x in at.markdown
    ]
    waits = at.dataframe[2].value
    assert waits["reason"].tolist() == ["No free capacity", "Hosts failed or in repair"]
    assert waits["from"].tolist() == ["2024-03-01 00:00 UTC", "2024-03-01 00:08 UTC"]
    job_box(at).set_value("D").run()
    assert not at.exception and any(c.value == "It did not wait." for c in at.caption)


def test_the_table_downloads_as_csv_and_parquet(store_dir):
    run_id = Store(store_dir).write_run(queue_run())
    at = open_page(PAGE, {"run": run_id, "q": "train"})
    assert [b.label for b in at.download_button] == ["Download CSV", "Download Parquet"]
    shown = at.dataframe[0].value
    assert shown["job_id"].tolist() == ["A", "B"]
    at.download_button[0].click().run()  # a download reruns the page and keeps the view
    assert not at.exception and at.dataframe[0].value["job_id"].tolist() == ["A", "B"]


def test_waits_without_recorded_reasons_count_as_not_recorded(store_dir):
    run_id = stored_run(store_dir)  # no wait_reason: j-r1 and j-r2 waited, j-r3 never started
    at = open_page(PAGE, {"run": run_id, "tab": QUEUE})
    assert not at.exception
    assert metrics(at)["Jobs that waited"] == "3" and metrics(at)["Jobs started (window)"] == "3"
    assert any(c.value.endswith("waited longest for: Reason not recorded: 3.") for c in at.caption)
    at = open_page(
        PAGE, {"run": run_id, "states": "completed", "tab": QUEUE}
    )  # it follows the table's filters
    assert metrics(at)["Jobs that waited"] == "2"
    assert len(open_tab(at, "Jobs in the window").dataframe[0].value) == 2


def test_a_run_where_no_job_waited(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "kinds": "flagship", "tab": QUEUE})
    assert not at.exception and metrics(at)["Jobs that waited"] == "0"
    assert any(i.value == "No job in the table (Jobs in the window) waited." for i in at.info)


def chart_keys(at) -> list[str]:
    """The page's Plotly charts by key, in order (the Gantt's key is jobs_gantt:RUN_ID)."""
    keys = ("jobs_gantt", "jobs_queue", "jobs_waits", "jobs_reasons", "jobs_util")
    return [next(k for k in keys if k in str(c.proto.id)) for c in at.get("plotly_chart")]


def test_only_the_open_tab_is_drawn_and_the_url_opens_one(store_dir):
    run_id = Store(store_dir).write_run(queue_run())
    at = open_page(PAGE, {"run": run_id, "job": "B"})
    assert not at.exception
    assert [t.label for t in at.tabs] == ["Jobs in the window", QUEUE, GPUS]  # no timeline: no Stragglers
    # the first look: figures, the Gantt and the table; the queue's and the GPUs' charts wait for their tab
    assert chart_keys(at) == ["jobs_gantt"] and "Jobs started (window)" not in metrics(at)
    assert at.dataframe[0].value["job_id"].tolist() == ["A", "B", "D", "C"]
    assert job_box(at).value == "B" and metrics(at)["Wait before start"] == "5 min"  # the job, no click
    assert "tab" not in at.query_params  # the first tab by default: a clean URL
    at = open_page(PAGE, {"run": run_id, "job": "B", "tab": QUEUE})  # a link opens the tab
    assert not at.exception
    assert chart_keys(at) == ["jobs_gantt", "jobs_queue", "jobs_waits", "jobs_reasons"]
    assert "Jobs started (window)" in metrics(at) and "Mean GPUs allocated (window)" not in metrics(at)
    assert not any(h.value.startswith("Jobs in the window") for h in at.subheader)  # the table's tab is shut
    assert (
        job_box(at).value == "B" and metrics(at)["Wait before start"] == "5 min"
    )  # One job whatever the tab
    assert at.query_params["job"] == "B"
    open_tab(at, GPUS)
    assert not at.exception and chart_keys(at) == ["jobs_gantt", "jobs_util"]
    assert "Mean GPUs allocated (window)" in metrics(at) and "Jobs started (window)" not in metrics(at)


# ----- in a real browser: a replayed Alibaba run and a simulated run ---------------------------------------


def queued_alibaba(shared_data: Path):
    """The Alibaba openb pods all submitted at t = 0 on 300 hosts: a replay with a long queue to look at."""
    trace = parse_trace(shared_data / "alibaba-openb" / "openb_pod_list_default.csv")
    trace.jobs = trace.jobs.with_columns(
        pl.lit(0.0).alias("submit_s"),
        pl.lit(None, dtype=pl.Float64).alias("start_s"),
        pl.lit(None, dtype=pl.Float64).alias("end_s"),
    )
    return replay(trace, settings_from(["replay.hosts=300"]), name="alibaba-openb-queued")


@pytest.mark.browser
def test_jobs_page_in_chromium(tmp_path, shared_data):
    """Screenshots (GOODPUT_JOBS_SCREENSHOTS=DIR keeps them) of the first day of the queued Alibaba replay
    and of a demo simulation: every chart drawn, no exception, the view in the URL."""
    from playwright.sync_api import expect, sync_playwright
    from test_browser import (
        CHROMIUM,
        CHROMIUM_ARGS,
        GOODPUT,
        RENDER_TIMEOUT_MS,
        ROOT,
        free_port,
        stop_server,
        wait_healthy,
    )

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    store = tmp_path / "store"
    alibaba = queued_alibaba(shared_data)
    replayed = Store(store).write_run(alibaba)
    waited = (
        alibaba.tables["jobs"]
        .filter(pl.col("wait_reason").is_not_null() & (pl.col("start_s") < 86400))
        .sort(pl.col("start_s") - pl.col("submit_s"), "job_id", descending=[True, False])["job_id"][0]
    )
    simulated = subprocess.run(
        [str(GOODPUT), "simulate", "--preset", "demo", "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=ROOT,
    )
    simulated = json.loads(simulated.stdout)["run_id"]
    shots = Path(os.environ.get("GOODPUT_JOBS_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = tmp_path / "dashboard.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(GOODPUT), "dashboard", "--store", str(store), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    views = [  # (run, URL parameters, charts on the page, a text the page must show, file)
        # the first look: the Gantt, the table (its downloads) and the job from the link
        (replayed, f"from=0&to=86400&order=waited&job={waited}", 1, "Why it waited", "jobs-alibaba.png"),
        # the queue's tab from a link: the Gantt and its three charts; 2 research jobs waited for hosts
        (simulated, "tab=Queue+and+waits", 4, "Hosts failed or in repair", "jobs-simulated.png"),
    ]
    try:
        wait_healthy(url, server, log)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1600, "height": 6400})  # Streamlit scrolls inside
                for run_id, params, charts, text, name in views:
                    page.goto(f"{url}/jobs?run={run_id}" + (f"&{params}" if params else ""))
                    expect(page.get_by_role("heading", name="Jobs", exact=True)).to_be_visible(
                        timeout=RENDER_TIMEOUT_MS
                    )
                    expect(page.locator(".js-plotly-plot")).to_have_count(charts, timeout=RENDER_TIMEOUT_MS)
                    expect(page.get_by_text(text).first).to_be_visible(timeout=RENDER_TIMEOUT_MS)
                    expect(page.get_by_test_id("stException")).to_have_count(0)
                    for key in params.split("&") if params else []:
                        assert key.split("=")[0] + "=" in page.url
                    assert "job=" not in params or f"job={waited}" in page.url
                    page.wait_for_timeout(800)  # let Plotly finish its transitions
                    page.screenshot(path=str(shots / name), full_page=True)
                    assert (shots / name).stat().st_size > 50_000
                    if "tab=" in params:  # the table is in its own tab, shut here
                        continue
                    # the downloads carry the whole filtered table ("Jobs in the window (N)")
                    heading = page.get_by_role(
                        "heading", name=re.compile(r"^Jobs in the window \(")
                    ).inner_text()
                    shown = int(re.sub(r"\D", "", heading))
                    for label, read in (("Download CSV", pl.read_csv), ("Download Parquet", pl.read_parquet)):
                        with page.expect_download(timeout=RENDER_TIMEOUT_MS) as download:
                            page.get_by_role("button", name=label).click()
                        table = read(download.value.path())
                        assert table.height == shown and table.columns[:3] == ["job_id", "name", "kind"]
            finally:
                browser.close()
    finally:
        stop_server(server)
