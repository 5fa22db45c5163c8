"""Compare page: runs from ?runs=, headline figures side by side, the scenario keys that differ, and in tabs (only
the open one drawn) ETTR over time, what failures cost, interruptions by cause."""

import base64
import json

import numpy as np
import pytest
from test_charts_pages import open_page, pages_run, sparse_run, stored_run
from test_text import unescaped

from dashboard.queries.compare import scenario_diff, timeline_bucket
from engine.analysis.analytics import ettr_timeline
from engine.store import Store

PAGE = "app_pages/compare.py"


def tables(at) -> list:
    """The page's tables top to bottom as pandas frames: interactive grids and static cells (dashboard.table_view:
    every cell the text it shows)."""

    def walk(node):
        if getattr(node, "type", None) == "dataframe":
            yield node.value
        if getattr(node, "type", None) == "table":  # Markdown source: the text a reader sees
            yield node.value.rename(columns=unescaped).map(unescaped)
        for child in (getattr(node, "children", None) or {}).values():
            yield from walk(child)

    return list(walk(at._tree))


def test_empty_store_and_a_single_run(store_dir):
    at = open_page(PAGE)
    assert not at.exception and any("no runs yet" in i.value for i in at.info)
    stored_run(store_dir)
    at = open_page(PAGE)
    assert not at.exception and any("at least two runs" in i.value for i in at.info)


def test_two_runs_side_by_side(store_dir):
    a = stored_run(store_dir, pages_run("base"))
    b = stored_run(
        store_dir, pages_run("spares", preset_sets=("spares.hosts=8", "training.checkpoint_interval=30m"))
    )
    c = stored_run(store_dir, pages_run("unused"))
    at = open_page(PAGE, {"runs": f"{a},{b}"})
    assert not at.exception
    assert at.multiselect[0].value == [a, b] and c not in at.query_params["runs"]
    headlines = tables(at)[0]
    assert list(headlines.columns) == ["figure", f"base ({a})", f"spares ({b})"]
    assert headlines.set_index("figure").loc["ETTR (goodput)"].tolist() == ["93.0%", "93.0%"]
    # static cells, whatever the number of figures (issue 28: the grid cut "In-memory checkpoint me..." at
    # 1280 px, and cost a first visit a second to load its code)
    assert len(at.table) == 2 and headlines.shape[0] > 20 and not at.dataframe
    assert "In-memory checkpoint memory per host" in headlines["figure"].tolist()
    diff = tables(at)[1]
    assert diff["key"].tolist() == ["spares.hosts", "training.checkpoint_interval"]
    assert diff[f"spares ({b})"].tolist() == ["8", "30m"] and diff[f"base ({a})"].tolist() == ["4", "20m"]
    assert [t.label for t in at.tabs] == ["ETTR over time", "What failures cost", "Interruptions by cause"]
    assert len(tables(at)) == 2  # the causes' table only once its tab is open
    at = open_page(PAGE, {"runs": f"{a},{b}", "tab": "Interruptions by cause"})
    causes = tables(at)[2]  # the flagship's two interruptions, as the summary counts them
    assert sorted(causes["cause"].tolist()) == ["Faulty GPU", "Planned maintenance"]  # causes in words
    assert causes[f"base ({a})"].tolist() == ["1", "1"]  # a short table: static cells
    at.toggle[0].set_value(True).run()  # per 1,000 host-days: 2 / (the job's 4 hosts x 1 day) = 500
    assert not at.exception and at.query_params["per"] == "host-days"
    assert tables(at)[2][f"base ({a})"].tolist() == ["250", "250"]


def test_default_is_the_selected_run_and_the_newest(store_dir):
    a = stored_run(store_dir, pages_run("first"))
    b = stored_run(store_dir, pages_run("second"))
    at = open_page(PAGE, {"run": a})
    assert not at.exception and set(at.multiselect[0].value) == {a, b}
    assert set(at.query_params["runs"].split(",")) == {a, b}
    infos = Store(store_dir).list_runs()
    assert scenario_diff(infos).is_empty()  # same scenario: nothing differs
    assert any("share one scenario" in c.value for c in at.caption)


def test_an_ingested_run_beside_a_simulated_one(store_dir):
    a = stored_run(store_dir, pages_run("sim"))
    b = stored_run(store_dir, sparse_run("observed"))
    at = open_page(PAGE, {"runs": f"{a},{b}", "tab": "Interruptions by cause"})
    assert not at.exception
    headlines = tables(at)[0].set_index("figure")
    assert headlines.loc["kind"].tolist() == ["simulate", "ingest"]
    assert headlines.loc["ETTR (goodput)"].tolist() == ["93.0%", "–"]
    diff = tables(at)[1]
    assert "preset" in diff["key"].tolist()  # the ingested run has no scenario at all
    causes = tables(at)[2]  # the ingested run has neither a flagship job nor incidents
    assert causes[f"observed ({b})"].tolist() == ["0", "0"] and causes[f"sim ({a})"].tolist() == ["1", "1"]


def test_three_runs_with_their_ettr_over_time(store_dir):
    a = stored_run(store_dir, pages_run("base"))
    b = stored_run(store_dir, pages_run("ckpt", preset_sets=("training.checkpoint_interval=30m",)))
    c = stored_run(store_dir, sparse_run("observed"))
    at = open_page(PAGE, {"runs": f"{a},{b},{c}"})
    assert not at.exception and at.multiselect[0].value == [a, b, c]
    assert list(tables(at)[0].columns) == ["figure", f"base ({a})", f"ckpt ({b})", f"observed ({c})"]
    diff = tables(at)[1].set_index("key")  # the ingested run has no scenario at all
    assert diff.loc["training.checkpoint_interval"].tolist() == ["20m", "30m", "–"]
    assert diff.loc["preset"].tolist() == ["demo", "demo", "–"]
    [chart] = [
        json.loads(ch.proto.spec)
        for ch in at.get("plotly_chart")
        if json.loads(ch.proto.spec)["layout"]["yaxis"]["title"]["text"] == "ETTR since the start"
    ]
    assert [t["name"] for t in chart["data"]] == [f"base ({a})", f"ckpt ({b})"]
    assert any(f"No flagship job in: observed ({c})" in cap.value for cap in at.caption)
    run = pages_run()
    expected = ettr_timeline(run.tables["job_attempts"], run.tables["checkpoints"], "j-flag", 3600.0, 86400.0)
    line = chart["data"][0]
    assert decoded(line["x"]) == pytest.approx([(t + 3600.0) / 86400.0 for t in expected["t_s"]])
    assert decoded(line["y"]) == pytest.approx(
        expected["ettr_cumulative"].fill_null(float("nan")).to_list(), nan_ok=True
    )


def test_timeline_bucket():
    assert (
        timeline_bucket(86400.0) == 3600.0 and timeline_bucket(54 * 86400.0) == 12 * 3600.0
    )  # 6 h: 216 points
    assert timeline_bucket(3650 * 86400.0) == 7 * 86400.0


def decoded(values) -> list[float]:
    """Plotly's JSON spells number arrays as base64 ({"dtype", "bdata"}) or as plain lists."""
    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).tolist()
    return [float("nan") if v is None else v for v in values]


# ----- recovery strategies side by side (issue 14) ----------------------------------------------------------


def strategy_run(name: str, strategy: str, cost: dict[str, float], sets: tuple[str, ...] = ()):
    """pages_run under `strategy`, its summary carrying the strategy, its losses in dollars and its recovery
    cost as engine.analysis.summary writes them."""
    run = pages_run(name, preset_sets=(f"training.recovery={strategy}", *sets))
    run.summary["job"] |= {
        "recovery": strategy,
        "recovery_cost": {
            "standby_gpu_hours": 0.0,
            "standby_usd": 0.0,
            "degraded_gpu_hours": 0.0,
            "degraded_usd": 0.0,
            "memory_gb_per_host": 0.0,
        }
        | cost,
        "losses_usd": {"lost_work": 10.0, "restart": 4.5, "checkpoint": 0.0, "waiting_for_spares": 0.0},
    }
    return run


def test_two_strategies_and_their_recovery_costs_side_by_side(store_dir):
    a = stored_run(store_dir, strategy_run("restart", "restart", {}))
    b = stored_run(
        store_dir,
        strategy_run(
            "standbys",
            "hot_spare",
            {"standby_gpu_hours": 192.0, "standby_usd": 480.0},
            ("recovery.hot_spares=1", "spares.hosts=4"),
        ),
    )
    at = open_page(PAGE, {"runs": f"{a},{b}", "tab": "What failures cost"})
    assert not at.exception
    headlines = tables(at)[0].set_index("figure")
    assert headlines.loc["Recovery strategy"].tolist() == [
        "Restart from the last checkpoint",
        "Warm standby hosts (hot spare)",
    ]
    assert headlines.loc["Standby hosts idle"].tolist() == ["0 GPU-h", "192 GPU-h"]
    assert headlines.loc["Degraded: replicas out"].tolist() == ["0 GPU-h", "0 GPU-h"]
    assert headlines.loc["In-memory checkpoint memory per host"].tolist() == ["0.0 GB", "0.0 GB"]
    diff = tables(at)[1].set_index("key")
    assert diff.loc["training.recovery"].tolist() == ["restart", "hot_spare"]
    [costs] = [
        json.loads(ch.proto.spec)
        for ch in at.get("plotly_chart")
        if json.loads(ch.proto.spec)["layout"]["yaxis"]["title"]["text"] == "USD"
    ]
    by_name = {t["name"]: decoded(t["y"]) for t in costs["data"]}
    assert by_name["Standby hosts idle"] == [0.0, 480.0]  # the standbys on top of the same losses
    assert by_name["Lost work"] == [10.0, 10.0] and costs["layout"]["barmode"] == "stack"


def test_a_run_from_before_the_strategies_shows_dashes(store_dir):
    a = stored_run(store_dir, pages_run("old"))  # a summary without job.recovery
    b = stored_run(store_dir, strategy_run("drop", "replica_drop", {"degraded_gpu_hours": 3.5}))
    at = open_page(PAGE, {"runs": f"{a},{b}"})
    assert not at.exception
    headlines = tables(at)[0].set_index("figure")
    assert headlines.loc["Recovery strategy"].tolist() == ["–", "Drop the failed replica (FT-HSDP)"]
    assert headlines.loc["Degraded: replicas out"].tolist() == ["–", "3.5 GPU-h"]


def test_simulated_runs_of_two_strategies_compare(store_dir):
    """Needs the strategies in the simulator (engine/sim/recovery.py): replica_drop's degraded GPU-hours."""
    from engine.scenario import build
    from engine.twin.simulate import simulate

    store = Store(store_dir)
    sets = ["simulation.telemetry=false", "recovery.replicas=4"]
    a = store.write_run(simulate(build("demo", sets=sets), name="restart"))
    b = store.write_run(simulate(build("demo", sets=[*sets, "training.recovery=replica_drop"]), name="drop"))
    at = open_page(PAGE, {"runs": f"{a},{b}"})
    assert not at.exception
    headlines = tables(at)[0].set_index("figure")
    assert headlines.loc["Recovery strategy"].tolist() == [
        "Restart from the last checkpoint",
        "Drop the failed replica (FT-HSDP)",
    ]
    degraded = headlines.loc["Degraded: replicas out"].tolist()
    assert degraded[0] == "0 GPU-h" and degraded[1] != "0 GPU-h"


def test_a_replayed_runs_utilisation_is_the_same_on_compare_as_on_its_summary(store_dir, capsys):
    """One truth (issue 28, 3): a replay's allocated utilisation lives where every page reads it."""
    from engine.analysis.run_summary import RunSummary
    from engine.replay.run import replay_file

    replayed = replay_file("tests/fixtures/replay/small.csv")
    summary = RunSummary.from_json(replayed.summary)
    assert summary.figure("utilisation_by_allocation") == replayed.summary["utilization"] > 0
    a = stored_run(store_dir, pages_run("sim"))
    b = stored_run(store_dir, replayed)
    at = open_page(PAGE, {"runs": f"{a},{b}"})
    headlines = tables(at)[0].set_index("figure")
    shown = headlines.loc["Utilisation (allocated)"].tolist()[1]
    assert shown == f"{replayed.summary['utilization'] * 100:.1f}%"
