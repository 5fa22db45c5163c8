"""Planner page: knobs start from a preset, the closed form follows them at once, the URL keeps them; Run
simulates with the losses beside the closed form, Keep as run stores the full run, the TOML downloads and
reloads; Monte-Carlo shows a band and a tiny sweep its heat map."""

import json

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import app_test
from test_browser import dashboard  # noqa: F401 (the served dashboard, a fixture)
from test_charts_pages import open_page

from dashboard import planner_model as model
from dashboard.format import fmt_pct
from engine.analysis.analytics import closed_form_ettr
from engine.analysis.planner import placement_slowdown_of
from engine.scenario import build, load
from engine.store import Store

PAGE = "app_pages/planner.py"
SLOWDOWN = "Placement slowdown (closed form)"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def deltas(at) -> dict[str, str]:
    return {m.label: m.delta for m in at.metric}


def knob(at, label):
    """A knob by its label: a number input (counts), a slider or a select slider (rates, durations, sizes)."""
    return next(n for n in [*at.number_input, *at.slider, *at.select_slider] if n.label == label)


def button(at, label):
    return next(b for b in at.button if b.label == label)


def open_tab(at, label: str):
    """Pick the Planner's tab `label` as a click would (only the open tab is drawn: dashboard/app_pages/planner.py)."""
    at.session_state["tab"] = label
    return at.run()


def charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_starts_from_the_llama3_preset_and_shows_its_closed_form(store_dir):
    at = open_page(PAGE)  # works without any run in the store: the Llama 3 cluster is where planning starts
    assert not at.exception
    llama3 = build("llama3-405b")
    assert at.selectbox[0].value == "llama3-405b"
    assert knob(at, "Job GPUs").value == 16384 and knob(at, "Cluster GPUs").value == 24576
    assert knob(at, "Checkpoint interval").value == 300.0 and knob(at, "Technicians").value == 8
    expected = closed_form_ettr(
        gpus=16384,
        rate_per_1000_node_days=llama3["failures.rate_per_1000_node_days"],
        checkpoint_interval_s=300.0,
        checkpoint_write_s=llama3.checkpoint_write_s,
        restart_overhead_s=llama3["training.restart_overhead"],
    )
    assert metrics(at)["Closed-form ETTR"] == fmt_pct(expected.ettr)
    assert at.query_params["preset"] == "llama3-405b" and at.query_params["gpus"] == "16384"
    assert at.query_params["ckpt"] == "storage" and at.query_params["fix"] == "14400"


def test_starts_from_the_selected_runs_preset(store_dir):
    from engine.scenario import build as build_scenario
    from engine.store import Store
    from engine.twin.simulate import simulate

    run_id = Store(store_dir).write_run(simulate(build_scenario("demo", sets=["simulation.telemetry=false"])))
    at = open_page(PAGE, {"run": run_id})
    [preset] = [box for box in at.selectbox if box.label == "Start from"]
    assert not at.exception and preset.value == "demo" and knob(at, "Job GPUs").value == 384


def test_a_knob_moves_the_closed_form_and_the_url(store_dir):
    at = open_page(
        PAGE,
        {
            "preset": "llama3-405b",
            "interval": "1800",
            "ckpt": "time",
            "write": "60",
            "restart": "600",
            "rate": "3.79",
            "gpus": "16384",
        },
    )
    assert not at.exception
    expected = closed_form_ettr(
        gpus=16384,
        rate_per_1000_node_days=3.79,
        checkpoint_interval_s=1800.0,
        checkpoint_write_s=60.0,
        restart_overhead_s=600.0,
    )
    m = metrics(at)
    assert m["Closed-form ETTR"] == fmt_pct(expected.ettr) and m["Closed-form job MTTF"] == "3.1 h"
    knob(at, "Failure rate (per 1,000 host-days)").set_value(8.0).run()  # about twice the rate
    assert not at.exception and at.query_params["rate"] == "8"
    doubled = closed_form_ettr(
        gpus=16384,
        rate_per_1000_node_days=8.0,
        checkpoint_interval_s=1800.0,
        checkpoint_write_s=60.0,
        restart_overhead_s=600.0,
    )
    assert (
        metrics(at)["Closed-form ETTR"] == fmt_pct(doubled.ettr)
        and metrics(at)["Closed-form job MTTF"] == "1.5 h"
    )


def test_a_category_multiplier_moves_the_closed_form(store_dir):
    at = open_page(PAGE, {"preset": "llama3-405b"})
    before = metrics(at)["Closed-form job MTTF"]
    at.slider(key="planner_m_gpu:llama3-405b").set_value(2.0).run()
    assert not at.exception and at.query_params["m_gpu"] == "2"
    knobs = model.from_params({"preset": "llama3-405b", "m_gpu": "2"})
    assert metrics(at)["Closed-form ETTR"] == fmt_pct(model.closed_form(knobs).ettr)
    assert metrics(at)["Closed-form job MTTF"] != before


def test_placement_and_network_demand_show_their_slowdown_and_reach_the_run(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    assert metrics(at)[SLOWDOWN] == "none"  # the demo job packs into two pods at 25 Gbps a GPU
    at.radio(key="planner_place:demo").set_value("spread").run()
    knob(at, "Network demand per GPU (Gbps)").set_value(200.0).run()
    assert not at.exception and (at.query_params["place"], at.query_params["gbps"]) == ("spread", "200")
    knobs = model.from_params(dict(at.query_params))
    slowdown = placement_slowdown_of(model.scenario(knobs))
    assert slowdown > 1.0 and metrics(at)[SLOWDOWN] == f"{slowdown:.2f}x"
    assert deltas(at)[SLOWDOWN] == "spread, 200 Gbps a GPU"
    button(at, "Run").click().run()
    assert not at.exception
    losses = next(d.value for d in at.dataframe if "loss" in d.value.columns)
    slowed = losses[losses["loss"] == "Network slowdown"].iloc[0]
    assert slowed["simulated"] != "0 GPU-h" and slowed["closed form"] != "0 GPU-h"
    assert any(f"slows the job's collectives {slowdown:.2f}x" in c.value for c in at.caption)


def test_checkpoint_write_as_a_time_or_size_and_bandwidth(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    assert {"Checkpoint size per GPU (GB)", "Storage bandwidth (GB/s)"} <= {n.label for n in at.select_slider}
    knob(at, "Checkpoint size per GPU (GB)").set_value(20.0).run()  # 20 GB x 384 GPUs / 2,000 GB/s = 3.84 s
    assert at.query_params["gb"] == "20" and any("3 s" in c.value or "4 s" in c.value for c in at.caption)
    at.radio(key="planner_ckpt:demo").set_value("time").run()
    assert not at.exception and at.query_params["ckpt"] == "time"
    assert "Checkpoint write time" in {n.label for n in at.select_slider}
    knob(at, "Checkpoint write time").set_value(120.0).run()
    assert at.query_params["write"] == "120"
    knobs = model.from_params(dict(at.query_params))
    assert (
        metrics(at)["Closed-form ETTR"] == fmt_pct(model.closed_form(knobs).ettr)
        and model.write_seconds(knobs) == 120.0
    )


def test_changing_the_preset_resets_the_knobs(store_dir):
    at = open_page(PAGE, {"preset": "demo", "gpus": "64"})
    assert knob(at, "Job GPUs").value == 64
    at.selectbox[0].set_value("rsc1").run()
    assert not at.exception
    assert knob(at, "Job GPUs").value == 8192 and at.query_params["gpus"] == "8192"


@pytest.mark.parametrize("value", ["lots", "-5"])
def test_a_bad_knob_in_the_url_falls_back_or_clamps(store_dir, value):
    at = open_page(PAGE, {"preset": "demo", "rate": value})
    assert not at.exception
    assert knob(at, "Failure rate (per 1,000 host-days)").value == (40.0 if value == "lots" else 0.0)


def test_settings_that_do_not_fit_say_why(store_dir):
    at = open_page(PAGE, {"preset": "demo", "gpus": "1024"})
    assert not at.exception and "Closed-form ETTR" in metrics(at)  # the closed form still answers
    assert any("training.gpus" in e.value for e in at.error)
    assert not any(b.label == "Run" for b in at.button)


def test_telemetry_is_offered_only_where_it_stays_small(store_dir):
    at = open_page(PAGE, {"preset": "demo"})  # 512 GPUs x 7 days at 15 min: 344,064 samples
    assert not at.checkbox[0].disabled
    at.selectbox[0].set_value("llama3-405b").run()  # 24,576 GPUs x 54 days at 1 h: 31.9 million
    assert at.checkbox[0].disabled


def test_run_then_keep_as_run(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    button(at, "Run").click().run()
    assert not at.exception
    m, d = metrics(at), deltas(at)
    assert m["ETTR (goodput)"].endswith("%") and "vs closed form" in d["ETTR (goodput)"]
    assert d["Job MTTF"].startswith("closed form") and d["Goodput lost"].startswith("$")
    assert "; closed form " in d["Goodput lost"] and m["Goodput lost"].endswith("GPU-h")
    assert Store(store_dir).list_runs() == []  # nothing stored yet
    waterfall = next(c for c in charts(at) if c["data"][0]["type"] == "waterfall")
    assert [t["name"] for t in waterfall["data"]] == ["simulated", "closed form"]
    losses = next(d.value for d in at.dataframe if "loss" in d.value.columns)
    assert losses["loss"].tolist()[1] == "Restart overhead" and "closed-form cost" in losses.columns
    button(at, "Keep as run").click().run()
    assert not at.exception
    [kept] = Store(store_dir).list_runs()
    assert kept.name == "planner · demo" and kept.summary["job"]["ettr"] == pytest.approx(
        float(m["ETTR (goodput)"].rstrip("%")) / 100, abs=0.0006
    )  # the full run is the same run
    assert any(s.value.startswith(f"Kept as run {kept.run_id}") for s in at.success)
    tables = Store(store_dir).open(kept.run_id).execute("SELECT count(*) FROM host_states").fetchall()
    assert tables[0][0] > 0  # the kept run has every table, not just the summary


def test_the_downloaded_toml_reloads_to_the_same_scenario(store_dir, tmp_path, monkeypatch):
    kept: list[MemoryMediaFileStorage] = []

    class Keeping(MemoryMediaFileStorage):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kept.append(self)

    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", Keeping)
    params = {
        "preset": "rsc1",
        "m_network": "3",
        "ckpt": "time",
        "write": "25",
        "spares": "10",
        "price": "3.1",
    }
    at = open_page(PAGE, params)
    [download] = [b for b in at.download_button if b.proto.label == "Download scenario"]
    file_id = download.proto.url.rsplit("/", 1)[1]
    path = tmp_path / "planner-rsc1.toml"
    path.write_bytes(kept[-1]._files_by_id[file_id.split(".")[0]].content)
    # the file reproduces the run the knobs describe, telemetry as the preset has it (issue 28, 2)
    telemetry = model.base_scenario("rsc1").simulation.telemetry
    knobs = model.from_params(dict(at.query_params))
    assert load(path).values == model.scenario(knobs, telemetry=telemetry).values
    assert load(path).simulation.telemetry == telemetry
    assert load(path)["spares.hosts"] == 10 and load(path).checkpoint_write_s == 25.0


def test_monte_carlo_shows_a_band(store_dir):
    at = open_page(PAGE, {"preset": "demo", "tab": "Monte-Carlo"})
    at.slider(key="planner_mc_seeds").set_value(3).run()  # 3 runs: in this process
    button(at, "Run Monte-Carlo").click().run()
    assert not at.exception
    assert metrics(at)["Mean ETTR over seeds"].endswith("%")
    assert deltas(at)["Mean ETTR over seeds"].startswith("5-95 %: ")
    histogram = next(c for c in charts(at) if c["data"][0]["type"] == "histogram")
    assert len(histogram["layout"]["shapes"]) == 2  # the band and the mean
    assert any(c.value.startswith("3 runs") for c in at.caption)


def test_a_tiny_sweep_shows_its_heat_map(store_dir):
    at = open_page(PAGE, {"preset": "demo", "tab": "Sweep"})
    at.slider(key="planner_sweep_seeds").set_value(1).run()
    at.text_input(key="planner_sweep_values:training.checkpoint_interval:demo").set_value("10m,20m").run()
    at.text_input(key="planner_sweep_values:training.restart_overhead:demo").set_value("5m,10m").run()
    assert any("2 x 2 points x 1 seeds = 4 runs" in c.value for c in at.caption)
    button(at, "Run sweep").click().run()
    assert not at.exception
    heat = next(c for c in charts(at) if c["data"][0]["type"] == "heatmap")
    assert heat["data"][0]["x"] == [10.0, 20.0] and heat["data"][0]["y"] == [5.0, 10.0]
    assert heat["data"][1]["name"] == "Young-Daly interval"
    table = at.dataframe[-1].value
    assert table["training.checkpoint_interval"].tolist() == ["10m", "10m", "20m", "20m"]
    assert table["runs"].tolist() == [1, 1, 1, 1]


def test_the_young_daly_curve_follows_the_interval_on_either_axis(store_dir):
    at = open_page(PAGE, {"preset": "demo", "tab": "Sweep"})
    at.selectbox(key="planner_sweep_x").set_value("failures.rate_per_1000_node_days").run()
    at.selectbox(key="planner_sweep_y").set_value("training.checkpoint_interval").run()
    at.slider(key="planner_sweep_seeds").set_value(1).run()
    at.text_input(key="planner_sweep_values:failures.rate_per_1000_node_days:demo").set_value("10,40").run()
    at.text_input(key="planner_sweep_values:training.checkpoint_interval:demo").set_value("1m,4m").run()
    button(at, "Run sweep").click().run()
    assert not at.exception
    heat = next(c for c in charts(at) if c["data"][0]["type"] == "heatmap")
    curve = heat["data"][1]
    assert curve["x"] == [10.0, 40.0] and curve["y"][0] == pytest.approx(2 * curve["y"][1])  # 4x rate: half


def test_a_one_setting_sweep_shows_a_line_with_its_band(store_dir):
    at = open_page(PAGE, {"preset": "demo", "tab": "Sweep"})
    at.selectbox(key="planner_sweep_y").set_value("").run()
    at.slider(key="planner_sweep_seeds").set_value(2).run()
    at.text_input(key="planner_sweep_values:training.checkpoint_interval:demo").set_value("10m,40m").run()
    button(at, "Run sweep").click().run()
    assert not at.exception
    line = next(c for c in charts(at) if c["data"][-1].get("name") == "Closed-form ETTR")
    assert [t.get("name") for t in line["data"][1:]] == [
        "5-95 % of seeds",
        "Mean ETTR over seeds",
        "Closed-form ETTR",
    ]
    assert at.dataframe[-1].value["runs"].tolist() == [2, 2]


def test_a_bad_sweep_value_is_an_error_not_a_crash(store_dir):
    at = open_page(PAGE, {"preset": "demo", "tab": "Sweep"})
    at.text_input(key="planner_sweep_values:training.checkpoint_interval:demo").set_value("10m,soon").run()
    assert not at.exception and any("training.checkpoint_interval" in e.value for e in at.error)


@pytest.mark.browser
def test_planner_in_chromium(dashboard, tmp_path):  # noqa: F811 (the fixture imported above)
    """The served page in a real browser: Run, Monte-Carlo and the default 4 x 4 x 3 sweep, no exception."""
    from playwright.sync_api import expect, sync_playwright
    from test_browser import CHROMIUM, CHROMIUM_ARGS, RENDER_TIMEOUT_MS

    url, _ = dashboard
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 3600})
            page.goto(f"{url}/planner?preset=demo&m_gpu=2")
            expect(page.get_by_text("Closed form", exact=True)).to_be_visible(timeout=RENDER_TIMEOUT_MS)
            run = page.get_by_role("button", name="Run", exact=True)
            expect(run).to_be_enabled(timeout=RENDER_TIMEOUT_MS)
            run.click()
            expect(page.get_by_text("ETTR (goodput)")).to_be_visible(timeout=RENDER_TIMEOUT_MS)
            expect(page.locator(".js-plotly-plot .waterfalllayer")).to_have_count(
                1, timeout=RENDER_TIMEOUT_MS
            )
            page.screenshot(path=str(tmp_path / "planner_run.png"))
            page.get_by_role("tab", name="Monte-Carlo").click()
            page.get_by_role("button", name="Run Monte-Carlo").click()
            expect(page.get_by_text("Mean ETTR over seeds")).to_be_visible(timeout=RENDER_TIMEOUT_MS)
            page.get_by_role("tab", name="Sweep").click()
            page.get_by_role("button", name="Run sweep").click()
            expect(page.locator(".js-plotly-plot .heatmaplayer")).to_have_count(1, timeout=RENDER_TIMEOUT_MS)
            page.screenshot(path=str(tmp_path / "planner_sweep.png"))
            expect(page.get_by_test_id("stException")).to_have_count(0)
            assert "m_gpu=2" in page.url and "preset=demo" in page.url
        finally:
            browser.close()


def test_how_many_spares_shows_what_the_rest_of_the_cluster_pays(store_dir):
    """Issue 28, 2: with no hot spares the flagship preempts research jobs, each costing their work and a hand-over
    the flagship waits for; the Simulate tab shows it beside the flagship's figures."""
    at = open_page(PAGE, {"preset": "demo", "spares": "0", "m_gpu": "4"})
    button(at, "Run").click().run()
    assert not at.exception
    shown = metrics(at)
    assert int(shown["Research jobs preempted"]) > 0
    assert shown["Waiting for spare hosts"] != "0 GPU-h" and shown["Research GPU-hours lost"] != "0 GPU-h"
    assert "Utilisation (progress)" in shown
