"""Jobs page: counts, the capped Gantt, filters kept in the URL, one job's attempts from ?job=."""

from test_charts_pages import open_page, sparse_run, stored_run

PAGE = "app_pages/jobs.py"


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
    assert (m["Jobs"], m["Waiting or pending"], m["Failed attempts"], m["Flagship checkpoints"]) == ("4", "1", "2", "46")
    assert any(c.value.startswith("3 of 3 jobs that ran") for c in at.caption)
    table = at.dataframe[0].value
    assert table["job_id"].tolist() == ["j-flag", "j-r1", "j-r2", "j-r3"]  # flagship, then GPU-time
    assert table.set_index("job_id").loc["j-flag", "lost_gpu_hours"] == 8 * 600 / 3600
    assert at.selectbox[0].value == "j-r2"
    assert (m["GPUs"], m["Attempts"], m["Waited"]) == ("2", "2", "16 min")
    attempts = at.dataframe[1].value
    assert attempts["end_reason"].tolist() == ["network_switch_cable", "completed"]
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


def test_a_run_without_jobs(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id, "job": "nope"})
    assert not at.exception
    assert metrics(at)["Jobs"] == "0" and metrics(at)["Flagship checkpoints"] == "–"
    assert any(i.value == "No job matches the filters." for i in at.info)
    assert at.selectbox[0].value is None


def test_every_change_counts_and_the_chosen_job_survives_the_filters(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id})
    at.selectbox[0].set_value("j-r1").run()
    at.selectbox[0].set_value("j-flag").run()
    assert at.query_params["job"] == "j-flag"
    for text, expected in (("sweep", ["j-r1"]), ("eval", ["j-r2"]), ("queued", ["j-r3"])):
        at.text_input[0].set_value(text).run()
        assert at.dataframe[0].value["job_id"].tolist() == expected
    assert at.selectbox[0].value == "j-flag" and at.selectbox[0].options[0] == "demo-pretrain · j-flag"
