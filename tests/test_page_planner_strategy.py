"""Planner page, issue 14: the recovery strategy selector (its own knobs shown only for it, kept in the URL,
flowing into the scenario), the "which strategy at which scale" study and the break-even of warm standbys."""

import json

import pytest
from test_charts_pages import open_page
from test_page_planner import PAGE, button, knob, metrics, open_tab

from dashboard import planner_model as model
from engine.analysis.definitions import by_label, definition
from engine.twin.scale import STRATEGIES, STRATEGY_LABELS

OWN_KNOBS = {
    "restart": set(),
    "in_memory_checkpoint": {"Memory checkpoint interval", "Memory copies (peer hosts)"},
    "replica_drop": {"Data-parallel replicas", "Drop stall", "Rejoin time"},
    "hot_spare": {"Warm standbys (hosts)", "Hot swap"},
}
EVERY_OWN_KNOB = set().union(*OWN_KNOBS.values())


def selector(at):
    return next(s for s in at.selectbox if s.label == "Recovery strategy")


def knob_labels(at) -> set[str]:
    return {k.label for k in [*at.number_input, *at.slider, *at.select_slider]}


def chart_with(at, words: str) -> dict:
    """The Plotly chart whose layout mentions `words` (its title or an axis title)."""
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return next(s for s in specs if words in json.dumps(s["layout"]))


def test_four_strategies_in_words_restart_first_and_no_knob_of_another(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    assert not at.exception
    box = selector(at)
    assert box.options == [STRATEGY_LABELS[s] for s in STRATEGIES] and box.value == "restart"
    assert not knob_labels(at) & EVERY_OWN_KNOB
    assert at.query_params["recovery"] == "restart"
    assert not {"replicas", "standbys", "swap", "mem_interval"} & set(dict(at.query_params))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_shows_only_its_own_knobs(store_dir, strategy):
    at = open_page(PAGE, {"preset": "demo"})
    selector(at).set_value(strategy).run()
    assert not at.exception and at.query_params["recovery"] == strategy
    assert knob_labels(at) & EVERY_OWN_KNOB == OWN_KNOBS[strategy]


def test_the_strategy_and_its_knobs_live_in_the_url_and_reach_the_scenario(store_dir):
    at = open_page(PAGE, {"preset": "demo", "recovery": "replica_drop", "replicas": "4", "stall": "120"})
    assert not at.exception and selector(at).value == "replica_drop"
    assert knob(at, "Data-parallel replicas").value == 4 and knob(at, "Drop stall").value == 120.0
    knob(at, "Rejoin time").set_value(1800.0).run()
    params = dict(at.query_params)
    assert (params["replicas"], params["stall"], params["rejoin"]) == ("4", "120", "1800")
    s = model.scenario(model.from_params(params))
    assert s["training.recovery"] == "replica_drop" and s["recovery.replicas"] == 4
    assert (s["recovery.drop_stall"], s["recovery.rejoin"]) == (120.0, 1800.0)
    selector(at).set_value("restart").run()  # the replica knobs leave the URL with their strategy
    assert "replicas" not in dict(at.query_params)
    assert model.scenario(model.from_params(dict(at.query_params)))["recovery.replicas"] == 16  # default


def test_standbys_the_spares_cannot_hold_say_why(store_dir):
    at = open_page(PAGE, {"preset": "demo", "recovery": "hot_spare", "standbys": "6"})  # demo: 4 spares
    assert not at.exception
    assert any("recovery.hot_spares: 6 warm standbys" in e.value for e in at.error)


def test_a_run_shows_the_strategy_and_what_it_costs(store_dir):
    at = open_page(PAGE, {"preset": "demo", "recovery": "hot_spare", "standbys": "2"})
    button(at, "Run").click().run()
    assert not at.exception
    shown = metrics(at)
    assert shown["Recovery strategy"] == "Warm standby hosts (hot spare)"
    # needs the strategies: 2 standby hosts of 8 GPUs idle most of the demo's week
    assert shown["Standby hosts idle"].endswith("GPU-h") and shown["Standby hosts idle"] != "0 GPU-h"


def test_restart_runs_as_before_without_a_strategy_row(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    button(at, "Run").click().run()
    assert not at.exception and "Recovery strategy" not in metrics(at)


def test_the_scale_study_draws_a_line_and_a_band_a_strategy(store_dir):
    at = open_page(PAGE, {"preset": "demo", "tab": "Strategies at scale"})
    at.multiselect(key="planner_scale_sizes").set_value([1024, 2048]).run()
    at.slider(key="planner_scale_seeds").set_value(2).run()
    assert any("4 strategies x 2 sizes x 2 seeds = 16 summary-only runs." in c.value for c in at.caption)
    button(at, "Run scale study").click().run()
    assert not at.exception
    chart = chart_with(at, "10th to 90th percentile over 2 seeds")
    assert chart["layout"]["xaxis"]["type"] == "log"
    lines = [t["name"] for t in chart["data"] if t.get("mode") == "lines+markers"]
    assert lines == [STRATEGY_LABELS[s] for s in STRATEGIES]
    assert sum(t.get("fill") == "tonexty" for t in chart["data"]) == 4
    table = next(d.value for d in at.dataframe if "ettr_p10" in d.value.columns)
    assert len(table) == 8 and set(table["strategy"]) == set(STRATEGY_LABELS.values())
    assert (table["ettr_p10"] <= table["ettr_mean"]).all() and (table["ettr_mean"] <= table["ettr_p90"]).all()
    assert definition("scale_best_strategy").label in metrics(at)


def test_the_break_even_asks_for_warm_standbys_first(store_dir):
    at = open_page(PAGE, {"preset": "demo", "tab": "Standby break-even"})
    assert any("choose **Warm standby hosts (hot spare)**" in i.value for i in at.info)
    assert not [b for b in at.button if b.label == "Run break-even"]


def test_the_break_even_weighs_standby_cost_against_goodput_won(store_dir):
    at = open_page(
        PAGE, {"preset": "demo", "recovery": "hot_spare", "standbys": "2", "tab": "Standby break-even"}
    )
    at.slider(key="planner_standby_seeds").set_value(2).run()
    assert any("Standby counts 0, 1, 2, 4: 10 summary-only runs." in c.value for c in at.caption)
    button(at, "Run break-even").click().run()
    assert not at.exception
    assert definition("standby_goodput_won_usd").label in metrics(at)
    # needs engine.twin.sweep.result_row to report the standby cost (standby_usd): then the verdict shows
    shown = metrics(at)
    assert {
        definition(k).label for k in ("standby_cost_usd", "standby_net_usd", "standby_break_even")
    } <= set(shown)
    chart = chart_with(at, "warm standby hosts")
    assert [round(x) for x in chart["data"][2]["x"]] == [0, 1, 2, 4]


def test_every_new_figure_is_registered_with_its_help(store_dir):
    at = open_page(PAGE, {"preset": "demo", "recovery": "hot_spare", "standbys": "2"})
    button(at, "Run").click().run()
    shown = {m.label: m.proto.help for m in at.metric}
    open_tab(at, "Strategies at scale")
    at.multiselect(key="planner_scale_sizes").set_value([1024]).run()
    at.slider(key="planner_scale_seeds").set_value(2).run()
    button(at, "Run scale study").click().run()
    shown |= {m.label: m.proto.help for m in at.metric}
    open_tab(at, "Standby break-even")
    at.slider(key="planner_standby_seeds").set_value(2).run()
    button(at, "Run break-even").click().run()
    assert not at.exception
    shown |= {m.label: m.proto.help for m in at.metric}
    assert {"Recovery strategy", "Best strategy at scale", "Goodput won by standbys over seeds (USD)"} <= set(
        shown
    )
    for label, help_text in shown.items():
        d = by_label(label)
        assert d is not None, f"{label!r} is no registered figure"
        assert help_text == d.help
