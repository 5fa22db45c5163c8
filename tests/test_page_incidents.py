"""Incidents page: the Llama 3 way of counting (flagship interruptions), filters in the URL, the cost table,
one incident's chain from ?incident=; and the counting functions on a hand-made frame."""

import math

import polars as pl
import pytest
from test_charts_pages import _incidents, open_page, sparse_run, stored_run

from dashboard.queries import incidents as counting

PAGE = "app_pages/incidents.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_counting_as_the_llama3_paper():
    frame = _incidents().with_columns(pl.col("planned").fill_null(False))
    flagship = counting.of_job(frame, "j-flag")
    assert flagship["incident_id"].to_list() == [1, 3]
    figures = counting.headline(flagship, days=1.0)
    assert figures == {"total": 2, "planned": 1, "unexpected": 1, "hardware_share": 1.0, "per_day": 2.0}
    everything = counting.headline(frame, days=2.0)
    assert everything["unexpected"] == 3 and everything["hardware_share"] == 1.0 and everything["per_day"] == 2.0
    assert math.isnan(counting.headline(frame.filter(pl.col("planned")), 1.0)["hardware_share"])
    causes = counting.by_cause(frame)
    assert causes["cause"].to_list() == ["faulty_gpu", "gpu_hbm3", "network_switch_cable", "planned_maintenance"]
    assert causes["pct_of_unexpected"].to_list() == [33.3, 33.3, 33.3, None]
    categories = counting.by_category(frame)
    assert dict(zip(categories["category"], categories["interruptions"], strict=True)) == {
        "GPU": 2, "Network": 1, "Planned": 1}
    days = counting.per_day(frame.with_columns(pl.col("t_s") + pl.Series([0.0, 0.0, 86400.0, 2 * 86400.0])), 3.0)
    assert days.rows() == [(0, 0, 2), (1, 1, 0), (2, 0, 1)]
    assert counting.per_day(frame, 2.5)["day"].to_list() == [0, 1, 2]  # a part day counts as a day


def test_empty_store(store_dir):
    at = open_page(PAGE)
    assert not at.exception and [t.value for t in at.title] == ["Incidents"]
    assert any("no runs yet" in i.value for i in at.info)


def test_counts_table_and_an_incident_from_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "incident": "2"})
    assert not at.exception
    m = metrics(at)
    assert (m["Interruptions"], m["Unexpected"], m["Planned"], m["Hardware share"], m["Interruptions a day"]) == (
        "2", "1", "1", "100%", "2.0")
    assert any("flagship job `j-flag`" in c.value and "4 incidents in all" in c.value for c in at.caption)
    table = next(d.value for d in at.dataframe if "job_ids" in d.value.columns)
    assert table["incident_id"].tolist() == [1, 3, 2, 4]  # costliest first
    # the drill-down: the cable failure on host 6's rack uplink, detected 10 minutes after it occurred
    assert at.selectbox[0].value == 2
    assert (m["Cause"], m["Category"], m["Jobs hit"]) == ("network_switch_cable", "Network", "1")
    chain = next(d.value for d in at.dataframe if "step" in d.value.columns)
    assert chain["after"].tolist() == ["0 s", "10 min", "16 min", "15 min"]
    assert any(x.value.startswith("**Where**: host host-006 (rack 3), link 18") for x in at.markdown)


def test_filters_go_to_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "planned": "unexpected", "categories": "GPU"})
    assert not at.exception
    assert at.radio[0].value == "unexpected"
    table = next(d.value for d in at.dataframe if "job_ids" in d.value.columns)
    assert table["incident_id"].tolist() == [1, 4]
    at.multiselect[1].set_value([]).run()
    at.radio[0].set_value("planned").run()
    assert not at.exception
    assert at.query_params["planned"] == "planned" and "categories" not in at.query_params
    table = next(d.value for d in at.dataframe if "job_ids" in d.value.columns)
    assert table["cause"].tolist() == ["planned_maintenance"]


@pytest.mark.parametrize("incident", ["x", "99"])
def test_a_bad_incident_in_the_url_shows_none(store_dir, incident):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "incident": incident})
    assert not at.exception and at.selectbox[0].value is None and "incident" not in at.query_params


def test_a_run_without_incidents(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    assert any("no incidents" in i.value for i in at.info)


def test_an_incident_never_repaired(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "incident": "4"})
    assert not at.exception
    chain = next(d.value for d in at.dataframe if "step" in d.value.columns)
    assert chain["after"].tolist() == ["0 s", "10 s", "1 min", "not by the run's end"]


def test_every_change_counts(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id})
    for incident in (1, 3, 4):
        at.selectbox[0].set_value(incident).run()
        assert at.query_params["incident"] == str(incident)
    at.radio[0].set_value("planned").run()
    at.radio[0].set_value("unexpected").run()
    assert at.query_params["planned"] == "unexpected" and at.query_params["incident"] == "4"
