"""Network page: links by tier, the note when a run has no link telemetry, utilisation when it has, cable failures."""

from test_charts_pages import open_page, pages_run, sparse_run, stored_run

PAGE = "app_pages/network.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_empty_store(store_dir):
    at = open_page(PAGE)
    assert not at.exception and [t.value for t in at.title] == ["Network"]
    assert any("no runs yet" in i.value for i in at.info)


def test_tiers_no_telemetry_note_and_cable_failures(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    m = metrics(at)
    # 16 x 400 + 4 x 3,200 + 2 x 1,600 Gbps = 22.4 Tbps
    assert (m["Links"], m["Tiers"], m["Capacity"]) == ("22", "3", "22.4 Tbps")
    assert any("no link telemetry" in i.value for i in at.info)
    assert (m["Network incidents"], m["Jobs interrupted"], m["GPU-hours lost"]) == ("1", "1", "1.2 GPU-h")
    failures = at.dataframe[1].value
    assert failures["link_id"].tolist() == [18] and failures["tier"].tolist() == ["rtsw_ctsw"]
    assert failures["job_ids"].tolist() == ["j-r2"] and failures["hostname"].tolist() == ["host-006"]
    hit = at.dataframe[2].value
    assert hit["job_id"].tolist() == ["j-r2"] and hit["name"].tolist() == ["eval-b"]


def test_utilisation_when_the_run_has_link_samples(store_dir):
    run_id = stored_run(store_dir, pages_run(link_telemetry=True))
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    assert not any("no link telemetry" in i.value for i in at.info)
    assert any(c.value.startswith("528 link samples") for c in at.caption)
    hottest = at.dataframe[1].value
    # util = 10 + link_id: link 21 (ctsw_atsw) is the hottest at 31%
    assert hottest["link_id"].tolist()[:2] == [21, 20] and hottest["mean_util"].tolist()[0] == 31.0


def test_a_run_without_links(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    assert [i.value.split(":")[0] for i in at.info] == ["This run has no links table",
                                                        "This run has no link telemetry (its link_samples table is empty), so there is no utilisation to show. Link loads come with the fabric model of the network issue (issue 6).",
                                                        "No switch or cable failure in this run."]
