"""GPUs page: the health grid at ?t= with its filters (?state=, ?cause=, ?xid=), XIDs over time, ECC trends,
lemons and repeat offenders, one GPU from ?gpu=, and the live refresh of a run still being scraped (the GPUs
and Overview pages)."""

import json
import os
import time

import numpy as np
import polars as pl
import pytest
from test_charts_pages import DAY, STARTED, open_page, pages_run, sparse_run, stored_run

from dashboard import state
from dashboard.charts import gpus as charts
from dashboard.charts import health_grid
from dashboard.queries import gpus as queries
from engine.analysis.definitions import DEFINITIONS, by_label
from engine.report.palette import GPU_FAILED_COLOUR, HOST_STATE_COLOURS, UNKNOWN_STATE_COLOUR
from engine.store import Store
from engine.store.run import Run

PAGE = "app_pages/gpus.py"
XIDS, ECC, THROTTLED, LEMONS = (
    "XID events",
    "ECC errors",
    "Throttled and slow GPUs",
    "Lemons and repeat offenders",
)


def open_tab(at, label: str):
    """Open the tab `label` under the health grid as a click would (only the open tab is drawn)."""
    at.session_state["tab"] = label
    return at.run()


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def matched(at) -> list[int]:
    """The GPU ids in the table of GPUs that pass the filters (the first dataframe when filters are set)."""
    return at.dataframe[0].value["gpu_id"].tolist()


def test_empty_store(store_dir):
    at = open_page(PAGE)
    assert not at.exception and [t.value for t in at.title] == ["GPUs"]
    assert any("no runs yet" in i.value for i in at.info)


def test_health_lemons_xids_and_a_gpu_from_the_url(store_dir):
    run_id = stored_run(store_dir, pages_run(preset_sets=("repair.lemon_failures=2",)))
    # t = 30,000 s: GPU 3 failed at 20,000 s and is repaired at 40,000 s; the flagship's 8 GPUs train on
    # hosts 0, 2, 3 and 7 (the spare took host 1's place), a research job on hosts 4 and 5; host 6's job was
    # just stopped by a cable failure (it restarts at 31,000 s)
    at = open_page(PAGE, {"run": run_id, "t": "30000", "gpu": "3"})
    assert not at.exception
    shown = metrics(at)
    # host 1 (GPUs 2 and 3) is in repair: 2 GPUs out of service, GPU 3 among them failed
    assert {
        k: shown[k] for k in ("GPUs in the run", "Failed GPUs", "GPUs out of service", "GPUs training")
    } == {"GPUs in the run": "16", "Failed GPUs": "1", "GPUs out of service": "2", "GPUs training": "12"}
    # every figure is named and explained by its definition (engine.analysis.definitions)
    for m in at.metric:
        known = by_label(m.label)
        if known is not None:
            assert m.proto.help == known.help, m.label
    assert {m.label for m in at.metric} <= {d.label for d in DEFINITIONS.values()}
    assert [s.value for s in at.subheader] == ["Health", "One GPU"]
    assert at.session_state["tab"] == XIDS  # the first tab is open by default
    markdown = [m.value for m in at.markdown]
    captions = [c.value for c in at.caption]
    assert shown["XID events"] == "3"
    # the XIDs counted per 1 h window (a day's run)
    assert any(c.startswith("Every XID event counted per 1 h window") for c in captions)
    # the drill-down, drawn below the tabs without a click: ?gpu= chose it
    assert at.number_input[0].value == 3
    assert any(m.startswith("**GPU 3**: index 1 of host host-001 (rack 0)") for m in markdown)
    assert "**Events** (5)" in markdown  # 2 incidents + 3 XID events
    events = at.dataframe[0].value
    assert (
        events["time"].tolist()[:2] == ["2024-03-01 05:33 UTC"] * 2 and "from_start_s" not in events.columns
    )
    assert (
        events["what"].tolist()[0] == "Faulty GPU"
        and events["xid"].tolist()[0] == "79 GPU_HAS_FALLEN_OFF_THE_BUS"
    )
    # 96 samples over 85,500 s in buckets of 85,500 / 500 = 171 s: one sample a bucket, nothing averaged
    assert "96 samples, each drawn as read." in captions
    # no ECC error in this run
    open_tab(at, ECC)
    assert "No GPU of this run reported an ECC error." in [i.value for i in at.info]
    open_tab(at, LEMONS)
    assert not at.exception
    shown = metrics(at)
    markdown = [m.value for m in at.markdown]
    captions = [c.value for c in at.caption]
    # host 1 failed twice (faulty_gpu at 20,000 s, gpu_hbm3 at 70,000 s): with repair.lemon_failures = 2 in
    # 14 days it is a lemon from its second failure on
    assert shown["Hosts meeting the lemon rule"] == "1" and "**Hosts meeting the lemon rule**" in markdown
    lemons = at.dataframe[0].value
    assert lemons["hostname"].tolist() == ["host-001"] and lemons["failures"].tolist() == [2]
    assert lemons["flagged"].tolist() == ["2024-03-01 19:26 UTC"]
    assert any("2 hardware failures within 14 d (the run's repair.lemon_failures" in c for c in captions)
    # a simulated run without the simulator's count of pulled lemons says so rather than showing 0
    assert shown["Lemon hosts pulled"] == "–" and any("no count of lemon hosts pulled" in c for c in captions)
    assert shown["Hosts with repeat incidents"] == "1" and shown["GPUs with repeat incidents"] == "1"
    assert "**Hosts with repeat incidents** (the worst 50 first)" in markdown
    # every figure of the tab is named and explained by its definition too
    for m in at.metric:
        assert by_label(m.label) is not None and m.proto.help == by_label(m.label).help, m.label
    # the expander of incidents per host and per GPU is drawn only once opened (dashboard/lazy.py)
    assert len(at.dataframe) == 4
    at.session_state["gpus_incidents_per_host_and_gpu"] = True
    at.run()
    every_host, every_gpu = at.dataframe[1].value, at.dataframe[2].value
    assert every_host[["hostname", "incidents"]].values.tolist() == [["host-001", 2], ["host-006", 1]]
    assert every_gpu[["gpu_id", "incidents"]].values.tolist() == [[3, 2]]
    assert every_host["gpu_hours_lost"].tolist() == [3.6, 1.2]  # 8 x 1600 s, 2 x 2200 s: one decimal
    offenders = at.dataframe[3].value
    # causes in words, as a list, never snake_case
    assert offenders["hostname"].tolist() == ["host-001"]
    assert [list(c) for c in offenders["causes"]] == [["Faulty GPU", "GPU HBM3 memory"]]
    assert [list(c) for c in every_host["causes"]] == [
        ["Faulty GPU", "GPU HBM3 memory"],
        ["Network switch/cable"],
    ]
    assert at.dataframe[5].value["what"].tolist()[0] == "Faulty GPU"  # GPU 3 still shown below the tabs


def chart_titles(at) -> list[str]:
    """The Plotly charts on the page, each by the names of its traces (the health grid is a canvas: `grid`)."""
    return [
        ",".join(str(t.get("name", "")) for t in json.loads(c.proto.spec)["data"])
        for c in at.get("plotly_chart")
    ]


def grid(at) -> dict | None:
    """The health grid's data as the page sent it to its canvas (dashboard/gpus/grid_canvas.py); None: not drawn."""
    drawn = [e.proto for e in at.get("bidi_component") if e.proto.component_name == "goodput.health_grid"]
    assert len(drawn) <= 1
    return json.loads(drawn[0].json) if drawn else None


def test_only_the_open_tab_is_drawn_and_the_url_opens_one(store_dir):
    """The sections under the grid cost a 24k-GPU page seconds in the browser: only the open tab's charts and
    tables are sent; ?tab= opens one from a link."""
    run_id = stored_run(store_dir, ecc_run())
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    assert [t.label for t in at.tabs] == [XIDS, ECC, THROTTLED, LEMONS]
    assert len(chart_titles(at)) == 2 and grid(at) is not None  # the XID tab's two charts, and the grid
    assert "GPUs with ECC errors" not in metrics(at) and "Hosts meeting the lemon rule" not in metrics(at)
    assert not any("ecc_dbe" in d.value.columns for d in at.dataframe)
    # a click on the ECC tab draws it alone
    open_tab(at, ECC)
    assert not at.exception
    assert metrics(at)["GPUs with ECC errors"] == "2" and "XID events" not in metrics(at)
    assert len(chart_titles(at)) == 1 and grid(at) is not None  # the ECC trend, and the grid
    assert any("ecc_dbe" in d.value.columns for d in at.dataframe)
    # a link opens a tab
    at = open_page(PAGE, {"run": run_id, "tab": LEMONS})
    assert not at.exception and at.session_state["tab"] == LEMONS
    assert "GPUs with ECC errors" not in metrics(at) and "XID events" not in metrics(at)
    assert metrics(at)["Hosts meeting the lemon rule"] == "0"
    assert len(chart_titles(at)) == 1  # the offenders' history
    # one GPU shows below whichever tab is open, without a click
    at = open_page(PAGE, {"run": run_id, "tab": THROTTLED, "gpu": "3"})
    assert not at.exception and "**Events** (5)" in [m.value for m in at.markdown]


def test_filters_from_the_url_pick_gpus_out_of_the_grid(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "t": "30000", "state": "failed"})
    assert not at.exception
    assert any("**1 of 16 GPUs match the filters.**" in c.value for c in at.caption)
    assert matched(at) == [3]
    # the grid keeps every GPU in its place, the others drawn pale
    drawn = grid(at)
    pale = health_grid.GRID_ORDER.index(health_grid.FILTERED_OUT)
    assert [g for g, shown in zip(drawn["gpu"], drawn["shown"], strict=True) if shown != pale] == [3]
    assert [drawn["labels"][c] for c in drawn["legend"]] == ["Failed GPU", "Filtered out"]
    # a cable failure has no GPU: it counts for both GPUs of its host (6)
    at = open_page(PAGE, {"run": run_id, "t": "40000", "cause": "network_switch_cable"})
    assert matched(at) == [12, 13]
    # XIDs count up to t: GPU 3's XID 63 comes at 69,000 s
    at = open_page(PAGE, {"run": run_id, "t": "30000", "xid": "63"})
    assert any("**0 of 16 GPUs match the filters.**" in c.value for c in at.caption)
    at = open_page(PAGE, {"run": run_id, "t": "80000", "xid": "63,79"})
    assert matched(at) == [3]
    assert any("only XID 63, 79, as filtered above" in c.value for c in at.caption)
    # filters combine with AND; values the run does not know are dropped from the URL
    at = open_page(
        PAGE, {"run": run_id, "t": "30000", "state": "running,failed", "cause": "faulty_gpu,bogus"}
    )
    assert matched(at) == [3] and at.query_params["cause"] == "faulty_gpu"


def test_choosing_filters_and_a_gpu_writes_them_to_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception and "gpu" not in at.query_params and "state" not in at.query_params
    assert any("worst repeat offender is GPU 3" in c.value for c in open_tab(at, LEMONS).caption)
    # at the run's end host 1 is in repair again; its GPU 3 shows `failed` (its HBM incident is not repaired)
    at.multiselect[0].set_value(["repair"]).run()
    assert at.query_params["state"] == "repair" and matched(at) == [2]
    at.number_input[0].set_value(0).run()
    assert not at.exception and at.query_params["gpu"] == "0"
    assert any("index 0 of host host-000" in m.value for m in at.markdown)
    assert any("No incident or XID event on this GPU." == c.value for c in at.caption)


def test_grid_rows_state_samples_xids_and_causes(store_dir):
    run = pages_run()
    run_id = stored_run(store_dir, run)
    grid = queries.grid_at(run_id, 30000.0)
    assert grid.height == 16 and grid["gpu_id"].to_list() == list(range(16))
    row = grid.filter(pl.col("gpu_id") == 3).row(0, named=True)
    assert (row["state"], row["xid_events"], row["last_xid"], row["causes"]) == (
        "failed",
        1,
        79,
        ["faulty_gpu"],
    )
    assert grid.filter(pl.col("gpu_id") == 13)["causes"].to_list() == [["network_switch_cable"]]
    assert grid.filter(pl.col("gpu_id") == 8)["state"].to_list() == ["running"]
    # a simulated run's samples sit on its 15 min grid: t = 30,000 s reads the samples of 29,700 s
    assert queries.sample_resolution("simulate", run.scenario) == 900.0
    samples = queries.last_samples(run_id, 30000.0, 900.0).sort("gpu_id")
    expected = run.tables["gpu_samples"].filter(pl.col("t_s") == 29700.0).sort("gpu_id")
    assert samples["gpu_id"].to_list() == [0, 3]
    assert samples["temp_c"].to_list() == expected["temp_c"].to_list() == [70.0, 35.0]
    # other runs: the newest value within the hour before t (samples every 900 s: the one at 29,700 s)
    assert queries.sample_resolution("ingest", run.scenario) is None
    assert queries.last_samples(run_id, 30000.0, None).sort("gpu_id")["power_w"].to_list() == [650.0, 90.0]
    assert queries.last_samples(run_id, DAY + 7200.0, None).is_empty()


def test_health_grid_lays_out_racks_hosts_and_gpus_as_cells():
    cells = pl.DataFrame(
        {
            "gpu_id": [0, 1, 2, 3],
            "hostname": ["a", "a", "b", "b"],
            "rack_id": [0, 0, 1, 1],
            "row": [0, 0, 1, 1],
            "position": [0, 0, 0, 0],
            "slot": [0, 0, 0, 0],
            "gpu_index": [0, 1, 0, 1],
            "state": ["running", "failed", "repair", None],
            "temp_c": [70.4, None, 30.0, None],
            "power_w": [650.0, None, 90.0, None],
            "xid_events": [0, 2, 0, 0],
            "last_xid": [None, 79, None, None],
            "causes": [[], ["faulty_gpu"], [], []],
        }
    )
    data = health_grid.health_grid(cells)
    code = {s: i for i, s in enumerate(health_grid.GRID_ORDER)}
    # 2 rows x (1 slot + a blank line); 2 GPUs + a blank column: GPU 2 starts the third line
    assert (data["lines"], data["columns"]) == (4, 3)
    assert data["cell"] == [0, 1, 6, 7]
    assert (
        data["state"] == data["shown"] == [code["running"], code["failed"], code["repair"], code["unknown"]]
    )
    assert [data["hosts"][h] for h in data["host"]] == ["a", "a", "b", "b"] and data["racks"] == [0, 1]
    assert data["index"] == [0, 1, 0, 1] and data["gpu"] == [0, 1, 2, 3]
    # what is not known is None (the hover leaves it out), the rest rounded as shown
    assert data["temp"] == [70, None, 30, None] and data["power"] == [650, None, 90, None]
    assert data["notes"] == {"1": " | XIDs 2 (last 79) | incidents: Faulty GPU"}
    # the legend names states in words, in the palette's colours (failed: engine.report.palette.GPU_FAILED_COLOUR)
    legend = {data["labels"][c]: data["colours"][c] for c in data["legend"]}
    assert legend == {
        "Running a job": HOST_STATE_COLOURS["running"],
        "Failed GPU": GPU_FAILED_COLOUR,
        "In repair": HOST_STATE_COLOURS["repair"],
        "No state recorded": UNKNOWN_STATE_COLOUR,
    }
    assert data["row_labels"] == [(0.5, "row 0"), (2.5, "row 1")] and data["position_labels"] == [(1.0, "0")]
    assert data["summary"] == (
        "Health grid of 4 GPUs: Running a job 1, In repair 1, Failed GPU 1, No state recorded 1."
    )
    json.dumps(data)  # what the component sends
    # filtered: the other GPUs are drawn pale, in place, and still named by their state in the hover
    data = health_grid.health_grid(cells, pl.Series([False, True, False, False]))
    assert (
        data["shown"]
        == [code[health_grid.FILTERED_OUT], code["failed"]] + [code[health_grid.FILTERED_OUT]] * 2
    )
    assert data["state"][0] == code["running"]
    assert [data["labels"][c] for c in data["legend"]] == ["Failed GPU", "Filtered out"]


def test_xids_are_counted_per_window_and_code(store_dir):
    run_id = stored_run(store_dir)
    assert queries.xid_window(DAY) == 3600.0 and queries.xid_window(54 * DAY) == 86400.0
    assert queries.xid_window(600.0) == 60.0
    counts = queries.xid_timeline(run_id, 3600.0)
    assert counts.rows() == [(18000.0, 79, 1), (68400.0, 48, 1), (68400.0, 63, 1)]
    assert queries.xid_timeline(run_id, 3600.0, [63]).rows() == [(68400.0, 63, 1)]
    fig = charts.xid_timeline(counts, STARTED, 3600.0)
    assert [t.name.split()[0] for t in fig.data] == ["48", "63", "79"]  # most events first, then by code
    assert [list(t.y) for t in fig.data] == [[1], [1], [1]]
    assert fig.layout.barmode == "stack"


def ecc_run() -> Run:
    """pages_run with GPU 3's single-bit count rising by one a sample until its double-bit error at 70,000 s,
    and GPU 0 with one single-bit error from 50,000 s."""
    run = pages_run()
    samples = run.tables["gpu_samples"].with_columns(
        ecc_sbe=pl.when(pl.col("gpu_id") == 3)
        .then((pl.col("t_s") // 900).cast(pl.Int32))
        .when(pl.col("t_s") >= 50000)
        .then(1)
        .otherwise(0),
        ecc_dbe=pl.when((pl.col("gpu_id") == 3) & (pl.col("t_s") >= 70000)).then(1).otherwise(0),
    )
    run.tables["gpu_samples"] = samples.cast({"ecc_sbe": pl.Int32, "ecc_dbe": pl.Int32})
    return run


def test_ecc_trends_of_the_gpus_with_errors(store_dir):
    run_id = stored_run(store_dir, ecc_run())
    top = queries.ecc_top(run_id, 10)
    assert top.select("gpu_id", "ecc_dbe", "ecc_sbe", "first_s", "gpus_with_ecc").rows() == [
        (3, 1, 95, 900.0, 2),
        (0, 0, 1, 50400.0, 2),
    ]
    trend = queries.ecc_trend(run_id, [3], 43200.0)
    assert trend.rows() == [(3, 0.0, 47, 0), (3, 43200.0, 95, 1)]  # the largest count in each half day
    at = open_page(PAGE, {"run": run_id, "tab": ECC})
    assert not at.exception
    assert metrics(at)["GPUs with ECC errors"] == "2"
    assert any(c.value.startswith("The 2 GPUs with the most ECC errors") for c in at.caption)
    ecc_table = next(d.value for d in at.dataframe if "ecc_dbe" in d.value.columns)
    assert ecc_table["gpu_id"].tolist() == [3, 0]
    fig = charts.ecc_trend(trend, {3: "GPU 3"}, STARTED)
    assert [t.yaxis for t in fig.data] == ["y", "y2"] and list(fig.data[0].y) == [47, 95]


def test_an_ingested_run_without_incidents_or_states(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id, "gpu": "3"})
    assert not at.exception
    assert metrics(at)["Failed GPUs"] == "0"
    open_tab(at, LEMONS)
    assert any("No host or GPU failed more than once" in i.value for i in at.info)
    assert metrics(at)["Hosts meeting the lemon rule"] == "0"
    # no host states recorded: out of service and training are not known, not 0
    assert metrics(at)["GPUs out of service"] == "–" and metrics(at)["GPUs training"] == "–"
    assert any(c.value.startswith("This run records no host states") for c in at.caption)
    assert "**Events** (3)" in [m.value for m in at.markdown]  # its three XID events
    assert not any("Live" in c.value for c in at.caption)  # an ingested file, not a live scrape


# ----- live refresh ------------------------------------------------------------------------------------------


def live_run(samples_until: float) -> Run:
    """A run as `goodput ingest dcgm --scrape` writes it (engine.ingest.live): kind ingest, scenario source
    "scrape", a summary counting scrapes; samples every 30 s of GPU 0 and 1."""
    full = sparse_run("live")
    tables = {k: full.tables[k] for k in ("hosts", "gpus")}
    tables["gpu_samples"] = scrape_samples(0.0, samples_until)
    scrapes = int(samples_until // 30) + 1
    return Run(
        kind="ingest",
        name="live: http://node:9400/metrics",
        started_at=STARTED,
        duration_s=samples_until,
        scenario={"source": "scrape", "endpoints": ["http://node:9400/metrics"]},
        summary={"samples": tables["gpu_samples"].height, "scrapes": scrapes},
        tables=tables,
    )


def scrape_samples(start: float, end: float) -> pl.DataFrame:
    t = np.repeat(np.arange(start, end + 1, 30.0), 2)
    gpu = np.tile(np.array([0, 1], dtype=np.int32), t.size // 2)
    return pl.DataFrame(
        {
            "t_s": t,
            "gpu_id": gpu,
            "temp_c": np.full(t.size, 60.0, np.float32),
            "power_w": np.full(t.size, 500.0, np.float32),
        }
    )


def test_a_live_run_refreshes_itself_and_shows_each_new_scrape(store_dir):
    run_id = stored_run(store_dir, live_run(270.0))  # 10 scrapes, 20 samples
    store = Store(store_dir)
    info = store.info(run_id)
    assert state.live_refresh_s(info) == 30.0  # the scrape interval: 270 s over 9 gaps
    assert state.live_refresh_s(info, now=time.time() + state.LIVE_STALE_S + 1) is None  # scraping stopped
    at = open_page(PAGE, {"run": run_id, "gpu": "0"})
    assert not at.exception
    assert any(
        c.value.startswith(
            ":material/sensors: Live: this run is still being scraped (10 scrapes, 20 "
            "samples so far); the page refreshes every 30 s"
        )
        for c in at.caption
    )
    assert "10 samples, each drawn as read." in " ".join(c.value for c in at.caption)
    # the next scrape lands (copy, append, rename: a new file version) between two reruns
    store.append_to_run(
        run_id,
        {"gpu_samples": scrape_samples(300.0, 300.0)},
        duration_s=300.0,
        summary={"samples": 22, "scrapes": 11},
    )
    os.utime(store.path_of(run_id))  # a new mtime even on a coarse clock
    at.run()
    assert not at.exception
    assert any("(11 scrapes, 22 samples so far)" in c.value for c in at.caption)
    assert "11 samples, each drawn as read." in " ".join(c.value for c in at.caption)


def test_overview_of_a_live_run_refreshes_with_the_newest_file(store_dir):
    run_id = stored_run(store_dir, live_run(270.0))
    at = open_page("app_pages/overview.py", {"run": run_id})
    assert not at.exception
    assert any(
        "Live: this run is still being scraped (10 scrapes, 20 samples so far)" in c.value for c in at.caption
    )
    store = Store(store_dir)
    store.append_to_run(
        run_id,
        {"gpu_samples": scrape_samples(300.0, 330.0)},
        duration_s=330.0,
        summary={"samples": 24, "scrapes": 12},
    )
    os.utime(store.path_of(run_id))
    at.run()
    assert any("(12 scrapes, 24 samples so far)" in c.value for c in at.caption)


def test_a_simulated_or_finished_run_is_not_live(store_dir):
    run_id = stored_run(store_dir)
    assert state.live_refresh_s(Store(store_dir).info(run_id)) is None
    at = open_page(PAGE, {"run": run_id})
    assert not any("Live" in c.value for c in at.caption)


@pytest.mark.parametrize("scrapes, duration, every", [(1, 0.0, 30.0), (3, 4.0, 5.0), (2, 3600.0, 60.0)])
def test_the_refresh_follows_the_scrape_interval_within_bounds(store_dir, scrapes, duration, every):
    run = live_run(60.0)
    run_id = stored_run(
        store_dir,
        Run(
            kind=run.kind,
            name=run.name,
            started_at=STARTED,
            duration_s=duration,
            scenario=run.scenario,
            summary={"scrapes": scrapes},
            tables=run.tables,
        ),
    )
    assert state.live_refresh_s(Store(store_dir).info(run_id)) == every


def test_state_counts_from_the_grid_equal_the_health_query(store_dir):
    run_id = stored_run(store_dir)
    for t_s in (0.0, 20500.0, 30000.0, 71000.0, DAY - 1):
        from_grid = queries.state_counts(queries.grid_at(run_id, t_s))
        assert from_grid.rows() == queries.health_at(run_id, t_s).rows()


def test_failed_and_out_of_service_gpus_agree_with_the_racks_page(store_dir):
    """The same figures under the same names on both pages: Failed GPUs (GPU cells in state failed on the
    Racks floor) and GPUs out of service = Hosts out of service x 2 GPUs a host, at every moment."""
    from dashboard.queries import racks as racks_queries
    from engine.report.palette import OUT_OF_SERVICE_STATES

    run_id = stored_run(store_dir)
    for t_s in (0.0, 20050.0, 30000.0, 39500.0, 71000.0, DAY - 1):
        grid = queries.grid_at(run_id, t_s)
        hosts = racks_queries.hosts_at(run_id, t_s)
        out_hosts = hosts.filter(pl.col("state").is_in(OUT_OF_SERVICE_STATES)).height
        assert grid.filter(pl.col("host_state").is_in(OUT_OF_SERVICE_STATES)).height == 2 * out_hosts, t_s
        failed_on_racks = racks_queries.gpus_at(run_id, t_s).filter(pl.col("state") == "failed").height
        assert grid.filter(pl.col("state") == "failed").height == failed_on_racks, t_s
    # at 30,000 s: host 1 in repair, its GPU 3 failed
    at = open_page(PAGE, {"run": run_id, "t": "30000"})
    assert (metrics(at)["GPUs out of service"], metrics(at)["Failed GPUs"]) == ("2", "1")
