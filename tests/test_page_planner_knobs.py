"""Planner page, issue 13: sliders for the continuous knobs with durations shown as durations; every knob
moves the headline or the page says why not; every figure is a registered definition with its help."""

import re

import pytest
from test_charts_pages import open_page
from test_page_planner import PAGE, button, deltas, knob, metrics, open_tab

from dashboard.planner_knobs import WHY_CLUSTER_AND_SPARES, WHY_REPAIR, knob_duration
from engine.analysis.definitions import by_label, definition

DURATION_TEXT = re.compile(r"^(\d+(\.\d+)? (s|min|h|d))( \d+ (s|min|h))?$")
ETTR = definition("closed_form_ettr").label


def test_continuous_knobs_are_sliders_and_durations_read_as_durations(store_dir):
    at = open_page(PAGE, {"preset": "llama3-405b"})
    sliders = {s.label for s in [*at.slider, *at.select_slider]}
    assert {
        "Failure rate (per 1,000 host-days)",
        "Checkpoint interval",
        "Restart overhead",
        "Repair turnaround",
        "Checkpoint size per GPU (GB)",
        "Storage bandwidth (GB/s)",
        "Network demand per GPU (Gbps)",
        "GPU-hour price (USD)",
    } <= sliders
    assert {n.label for n in at.number_input} == {
        "Cluster GPUs",
        "Job GPUs",
        "Hot spares (hosts)",
        "Technicians",
    }
    # the Fail-slow hosts tab's rate (dashboard/planner/fail_slow.py), drawn once its tab is open
    assert "Episodes a cause per 1,000 host-days" in {
        n.label for n in open_tab(at, "Fail-slow hosts").number_input
    }
    for label in ("Checkpoint interval", "Restart overhead", "Repair turnaround"):
        options = knob(at, label).options
        assert all(DURATION_TEXT.match(o) for o in options), options  # "30 min", "1 h 30 min", never "1800"
        assert len(set(options)) == len(options)  # no two positions read the same
    assert (
        "30 min" in knob(at, "Checkpoint interval").options and knob(at, "Checkpoint interval").value == 300.0
    )
    assert knob(at, "Restart overhead").value == 600.0 and knob(at, "Repair turnaround").value == 14400.0


def test_a_url_value_off_the_ladder_joins_it(store_dir):
    at = open_page(PAGE, {"preset": "llama3-405b", "interval": "1437.7"})
    interval = knob(at, "Checkpoint interval")
    assert not at.exception and interval.value == 1437.7 and "23 min 58 s" in interval.options
    assert at.query_params["interval"] == "1437.7"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (0.0768, "0.077 s"),
        (90, "1 min 30 s"),
        (5400, "1 h 30 min"),
        (90000, "1 d 1 h"),
        (1209600, "14 d"),
    ],
)
def test_knob_durations(seconds, text):
    assert knob_duration(seconds) == text


# (knob label, new value, the figure it moves; None: the closed-form ETTR itself)
MOVES_ETTR = [
    ("Job GPUs", 256, None),
    ("Failure rate (per 1,000 host-days)", 80.0, None),
    ("Checkpoint interval", 3600.0, None),
    ("Restart overhead", 3600.0, None),
    ("Checkpoint size per GPU (GB)", 50.0, None),
]
MOVES_ITS_OWN = [  # these leave the closed-form ETTR where it is: the page says why, next to them
    ("Cluster GPUs", 1024, "technician_load", WHY_CLUSTER_AND_SPARES),
    ("Hot spares (hosts)", 1, "spares_run_out", WHY_CLUSTER_AND_SPARES),
    ("Repair turnaround", 86400.0, "spare_hosts_in_use", WHY_REPAIR),
    ("Technicians", 1, "technician_load", WHY_REPAIR),
]


@pytest.mark.parametrize(("label", "value", "figure"), MOVES_ETTR, ids=[k[0] for k in MOVES_ETTR])
def test_a_knob_that_changes_the_estimate_moves_the_headline(store_dir, label, value, figure):
    at = open_page(PAGE, {"preset": "demo"})
    before = metrics(at)[ETTR]
    knob(at, label).set_value(value).run()
    assert not at.exception and metrics(at)[ETTR] != before


@pytest.mark.parametrize(
    ("label", "value", "figure", "why"), MOVES_ITS_OWN, ids=[k[0] for k in MOVES_ITS_OWN]
)
def test_a_knob_outside_the_closed_form_moves_its_figure_and_says_why(store_dir, label, value, figure, why):
    at = open_page(PAGE, {"preset": "demo"})
    before = metrics(at)
    assert why in [c.value for c in at.caption]
    knob(at, label).set_value(value).run()
    after = metrics(at)
    assert not at.exception and after[ETTR] == before[ETTR]
    assert after[definition(figure).label] != before[definition(figure).label]


def test_the_price_moves_the_closed_form_cost(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    lost = definition("closed_form_goodput_lost").label
    before = deltas(at)[lost]
    knob(at, "GPU-hour price (USD)").set_value(5.0).run()  # twice the demo's $2.50
    assert deltas(at)[lost] != before and metrics(at)[lost].endswith("GPU-h")


def test_every_figure_is_registered_with_its_help(store_dir):
    at = open_page(PAGE, {"preset": "demo"})
    button(at, "Run").click().run()
    shown = {m.label: m.proto.help for m in at.metric}
    open_tab(at, "Monte-Carlo")
    at.slider(key="planner_mc_seeds").set_value(2).run()
    button(at, "Run Monte-Carlo").click().run()
    assert not at.exception
    shown |= {m.label: m.proto.help for m in at.metric}
    assert {"Closed-form ETTR", "ETTR (goodput)", "Mean ETTR over seeds", "Goodput lost"} <= set(shown)
    assert "ETTR" not in shown and "Simulated ETTR" not in shown  # the closed form is never "ETTR" alone
    for label, help_text in shown.items():
        d = by_label(label)
        assert d is not None, f"{label!r} is no registered figure"
        assert help_text == d.help
