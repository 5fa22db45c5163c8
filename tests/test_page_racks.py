"""Racks page (AppTest): the floor at t from the URL, every control (measure, failure window, cells, time, play,
rack, blast radius target) and what each changes, on the small known cluster of tests/test_charts_racks.py."""

from datetime import datetime, timedelta

import pytest
from test_charts_pages import open_page, sparse_run, stored_run
from test_charts_racks import racks_run

from engine.analysis.definitions import by_label

SLIDER_START = datetime(2024, 3, 1)  # the run's start (test_charts_racks.STARTED) as the slider's naive UTC


def at_hours(hours: float) -> datetime:
    """The slider's value `hours` after the run's start."""
    return SLIDER_START + timedelta(hours=hours)


PAGE = "app_pages/racks.py"


def open_blast_radius(at, run_id: str):
    """Open the Blast radius expander (drawn only once opened, dashboard/lazy.py), as a click on it does."""
    at.session_state[f"racks_blast:{run_id}"] = True
    return at.run()


def metrics(at) -> dict[str, str]:
    """The page's figures by definition key (each label must be a registered one)."""
    return {by_label(m.label).key: m.value for m in at.metric}


@pytest.fixture
def run_id(store_dir) -> str:
    return stored_run(store_dir, racks_run())


def test_empty_store_shows_the_empty_state(store_dir):
    at = open_page(PAGE)
    assert not at.exception
    assert [t.value for t in at.title] == ["Racks"]
    assert any("no runs yet" in i.value for i in at.info)


def test_floor_at_t_from_the_url_with_power_a_rack_and_its_blast_radius(run_id):
    # at 30,000 s host 1 is in repair (GPU 3 failed at 20,000 s); rack 1 draws 2.6 kW of its 2.5 kW budget
    at = open_page(PAGE, {"run": run_id, "t": "30000", "rack": "1"})
    assert not at.exception
    # the blast radius waits, closed, until asked for
    assert "blast" not in at.query_params and "blast_jobs" not in metrics(at)
    assert [e.label for e in at.expander] == [
        "Blast radius: what a failure of a rack, host or switch would interrupt at t"
    ]
    at = open_blast_radius(at, run_id)
    assert not at.exception
    assert metrics(at) == {
        "racks": "4",
        "racks_with_a_problem": "1",
        "hosts_in_service": "7",
        "hosts_out_of_service": "1",
        "hosts_without_a_state": "0",
        "gpu_power_drawn": "7.8 kW",
        "racks_over_power_budget": "1",
        "blast_jobs": "1",
        "blast_gpus_stopped": "8",
        "blast_gpus_behind": "4",
    }
    assert "2024-03-01 08:20 UTC" in at.caption[0].value
    assert [s.value for s in at.subheader] == ["Floor plan", "Rack"]
    assert at.query_params["cells"] == "gpus" and at.query_params["measure"] == "state"
    assert at.query_params["problems"] == "0"  # 4 racks: every rack shown as it is
    markdown = [m.value for m in at.markdown]
    assert "**Racks over their power budget at t**: rack 1 (2.6 kW)" in markdown
    assert any(
        m.startswith("**Rack 1**: pod 0, row 0, position 1, 2 hosts") and m.endswith("**over budget**")
        for m in markdown
    )
    hosts = at.table[0].value  # two hosts: static cells, each its text (dashboard.table_view.short)
    assert hosts["host"].tolist() == ["gt-p00-r00001-h1", "gt-p00-r00001-h0"]
    assert hosts["kW"].tolist() == ["1.30", "1.30"]
    assert hosts["state"].tolist() == ["Running a job"] * 2  # states in words, never their keys
    assert at.dataframe[0].value["tier"].tolist() == (
        ["NIC cables (GPU to rack switch)"] * 4  # the rack's links
        + ["Rack uplinks (rack to cluster switch)"] * 2
    )
    assert "**Incidents up to t** (0)" in markdown
    # the blast radius opens on the open rack: the flagship job's 8 GPUs stop
    assert at.query_params["blast"] == "rack:1"
    blast = at.dataframe[-1].value
    assert blast[["job", "its GPUs behind the part", "its GPUs (all stop)"]].values.tolist() == [
        ["flag", 4, 8]
    ]


def test_measure_and_failure_window_are_kept_in_the_url(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "60000", "measure": "power"})
    assert not at.exception
    assert at.button_group[0].value == "power"
    assert any("700 W" in c.value and "2.5 kW" in c.value for c in at.caption)
    assert not any(s.label == "Failures in the last" for s in at.selectbox)
    at.button_group[0].set_value("failures").run()
    assert not at.exception and at.query_params["measure"] == "failures"
    window = next(s for s in at.selectbox if s.label == "Failures in the last")
    assert window.value == "1d"
    window.set_value("6h").run()
    assert not at.exception and at.query_params["window"] == "6h"
    at.button_group[0].set_value("temp").run()
    assert not at.exception and at.query_params["measure"] == "temp"


def test_moving_the_time_slider_updates_the_url_the_counts_and_the_power(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "30000"})
    # before the failure: every host is up
    at.slider[0].set_value(SLIDER_START + timedelta(seconds=10000)).run()
    assert not at.exception
    assert at.query_params["t"] == "10000"
    m = metrics(at)
    # 10,000 s: racks 0 and 1 at 2.6 kW (over), rack 2 at 2.4 kW, rack 3 idle and spare 0.36 kW
    assert (
        m["hosts_out_of_service"] == "0"
        and m["racks_over_power_budget"] == "2"
        and m["gpu_power_drawn"] == "8.0 kW"
    )
    assert m["racks_with_a_problem"] == "0"
    assert "rack" not in at.query_params  # no rack chosen: no elevation


def test_a_bad_url_parameter_falls_back_to_the_end_of_the_run(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "soon", "rack": "99", "measure": "heat", "blast": "moon:1"})
    assert not at.exception
    assert metrics(at)["hosts_out_of_service"] == "1"  # host 1 never comes back
    assert at.slider[0].value == at_hours(24.0) and at.slider[0].label == "Time (UTC)"
    assert at.query_params["measure"] == "state" and "blast" not in at.query_params  # closed: no part


def test_choosing_a_rack_shows_its_events_up_to_t(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "30000"})
    at.selectbox(key=f"racks_rack:{run_id}").set_value(0).run()
    assert not at.exception and at.query_params["rack"] == "0"
    markdown = [m.value for m in at.markdown]
    assert "**Incidents up to t** (1)" in markdown and "**XID lines up to t** (1)" in markdown
    incidents = next(t.value for t in at.table if "cause" in t.value.columns)
    assert incidents["cause"].tolist() == ["Faulty GPU"] and incidents["out of service"].tolist() == [
        "not repaired"
    ]
    assert incidents["time (UTC)"].tolist() == ["2024-03-01 05:33 UTC"]
    assert incidents["link id"].tolist() == ["–"]  # a missing value is a dash, never "None"
    assert at.table[0].value["state"].tolist() == ["In repair", "Running a job"]  # h1 on top
    at = open_blast_radius(at, run_id)
    assert at.query_params["blast"] == "rack:0"  # opened: on the open rack


def test_blast_radius_of_a_switch_chosen_on_the_page_and_from_the_url(run_id):
    at = open_blast_radius(open_page(PAGE, {"run": run_id, "t": "30000"}), run_id)
    at.button_group[2].set_value("ctsw").run()
    at.selectbox(key=f"racks_blast_target:{run_id}:ctsw").set_value("ctsw-1-0").run()
    assert not at.exception and at.query_params["blast"] == "ctsw:ctsw-1-0"
    # pod 1's spine: only the flagship job spans racks there (host 7); r1 stays inside rack 2
    assert metrics(at)["blast_jobs"] == "1" and metrics(at)["blast_gpus_stopped"] == "8"
    assert metrics(at)["blast_gpus_behind"] == "8"  # pod 1's 4 hosts of 2 GPUs
    at = open_page(PAGE, {"run": run_id, "t": "30000", "blast": "rtsw:rtsw-2"})
    assert not at.exception
    assert at.dataframe[-1].value["job"].tolist() == ["r1"] and metrics(at)["blast_gpus_stopped"] == "4"
    at = open_page(PAGE, {"run": run_id, "t": "30000", "blast": "host:gt-p01-r00003-h0"})
    assert metrics(at)["blast_jobs"] == "0" and any("No job runs behind it" in c.value for c in at.caption)


def test_the_blast_radius_on_the_floor_on_demand(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "30000", "blast": "rack:1"})
    charts_before = len(at.get("plotly_chart"))
    at.toggle(key="racks_blast_floor").set_value(True).run()
    assert not at.exception and len(at.get("plotly_chart")) == charts_before + 1


def test_play_switches_on_and_off(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "3600"})
    at.toggle[0].set_value(True).run()
    assert not at.exception and at.toggle[0].value
    at.selectbox(key="racks_step").set_value("6h").run()
    assert not at.exception and at.query_params["t"] == "3600"  # the app run itself does not step; ticks do
    at.toggle[0].set_value(False).run()
    assert not at.exception and not at.toggle[0].value


def test_cells_a_host_or_a_gpu_from_the_url(run_id):
    at = open_page(PAGE, {"run": run_id, "cells": "hosts", "measure": "temp"})
    assert not at.exception and at.query_params["cells"] == "hosts"
    assert any("hottest GPU" in c.value for c in at.caption)
    at.button_group[1].set_value("gpus").run()
    assert not at.exception and at.query_params["cells"] == "gpus"
    assert any("*Failed GPU* (black)" in c.value for c in at.caption)


def test_a_run_without_host_states_or_links_shows_every_host_unknown(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id, "rack": "1", "measure": "power"})
    assert not at.exception
    assert metrics(at)["hosts_without_a_state"] == "8"
    assert any("records no host states" in c.value for c in at.caption)
    assert any("No incidents on this rack" in c.value for c in at.caption)
    assert metrics(open_blast_radius(at, run_id))["blast_jobs"] == "0"


def test_every_move_of_the_slider_counts(run_id):
    # a widget re-created from the URL on each rerun would drop every second change
    at = open_page(PAGE, {"run": run_id})
    for hours, seconds in ((2.0, "7200"), (5.0, "18000"), (9.0, "32400"), (12.0, "43200")):
        at.slider[0].set_value(at_hours(hours)).run()
        assert at.slider[0].value == at_hours(hours) and at.query_params["t"] == seconds
    rack = at.selectbox(key=f"racks_rack:{run_id}")
    rack.set_value(1).run()
    at.selectbox(key=f"racks_rack:{run_id}").set_value(2).run()
    assert at.query_params["rack"] == "2" and at.query_params["t"] == "43200"


def test_every_figure_is_labelled_and_helped_by_its_definition(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "30000", "rack": "0"})
    assert not at.exception
    for m in at.metric:
        d = by_label(m.label)
        assert d is not None, f"{m.label!r} is no registered definition"
        assert m.help.startswith(d.help), m.label
    # the Racks page's own figures, and the cluster's count where it is the same figure
    assert {by_label(m.label).section for m in at.metric} == {"Racks", "Cluster"}
    assert by_label("Hosts out of service").key == "hosts_out_of_service"


def test_problems_only_rings_the_broken_racks_and_counts_the_rest(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "30000", "problems": "1"})
    assert not at.exception
    assert at.toggle(key=f"racks_problems:{run_id}").value and at.query_params["problems"] == "1"
    assert metrics(at)["racks_with_a_problem"] == "1"
    assert any(
        "1 of 4 racks have a host out of service or a failed GPU at t (ringed); the other 3 are greyed out"
        in c.value
        for c in at.caption
    )
    # a short list is a static table (racks, counts and state words: no data text)
    listed = next(t.value for t in at.table if "failed GPUs" in t.value.columns)
    assert listed["rack"].tolist() == ["0"] and listed["hosts out of service"].tolist() == ["1"]
    assert listed["failed GPUs"].tolist() == ["1"] and listed["out-of-service states"].tolist() == [
        "In repair"
    ]
    assert any("Click a ringed rack's dot" in c.value for c in at.caption)
    # the rack chooser names the problem
    assert (
        at.selectbox(key=f"racks_rack:{run_id}").options[0]
        == "rack 0 · 1 host(s) out of service, 1 failed GPU(s)"
    )
    at.toggle(key=f"racks_problems:{run_id}").set_value(False).run()
    assert not at.exception and at.query_params["problems"] == "0"
    assert not any("greyed out" in c.value for c in at.caption)


def test_the_blast_radius_follows_the_rack_opened(run_id):
    at = open_blast_radius(open_page(PAGE, {"run": run_id, "t": "30000", "rack": "1"}), run_id)
    assert at.query_params["blast"] == "rack:1"
    assert [metrics(at)[k] for k in ("blast_jobs", "blast_gpus_stopped", "blast_gpus_behind")] == [
        "1",
        "8",
        "4",
    ]
    at.selectbox(key=f"racks_rack:{run_id}").set_value(2).run()  # rack 2: r1's two hosts
    assert not at.exception and at.query_params["blast"] == "rack:2"
    assert at.dataframe[-1].value["job"].tolist() == ["r1"]
    assert [metrics(at)[k] for k in ("blast_jobs", "blast_gpus_stopped", "blast_gpus_behind")] == [
        "1",
        "4",
        "4",
    ]
    # another kind of part follows the open rack too: its top host
    at.button_group[2].set_value("host").run()
    assert at.query_params["blast"] == "host:gt-p01-r00002-h1"
    at.selectbox(key=f"racks_rack:{run_id}").set_value(3).run()  # rack 3: idle host 6, host 7 in the flagship
    assert at.query_params["blast"] == "host:gt-p01-r00003-h1"
    assert at.dataframe[-1].value["job"].tolist() == ["flag"]
    assert [metrics(at)[k] for k in ("blast_jobs", "blast_gpus_stopped", "blast_gpus_behind")] == [
        "1",
        "8",
        "2",
    ]
    # a part chosen by hand stays until another rack is opened
    at.selectbox(key=f"racks_blast_target:{run_id}:host").set_value("gt-p01-r00003-h0").run()
    at.slider[0].set_value(at_hours(10.0)).run()
    assert at.query_params["blast"] == "host:gt-p01-r00003-h0" and metrics(at)["blast_jobs"] == "0"
    at.selectbox(key=f"racks_rack:{run_id}").set_value(0).run()
    assert at.query_params["blast"] == "host:gt-p00-r00000-h1"


def test_a_blast_radius_from_the_url_wins_over_the_open_rack_on_arrival(run_id):
    at = open_page(PAGE, {"run": run_id, "t": "30000", "rack": "1", "blast": "rack:3"})
    assert not at.exception and at.query_params["blast"] == "rack:3"
    at.selectbox(key=f"racks_rack:{run_id}").set_value(2).run()
    assert at.query_params["blast"] == "rack:2"
