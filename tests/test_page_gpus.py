"""GPUs page: health at t, the repeat offenders, XIDs by code, one GPU from ?gpu= with its events and telemetry."""

from test_charts_pages import open_page, sparse_run, stored_run

PAGE = "app_pages/gpus.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_empty_store(store_dir):
    at = open_page(PAGE)
    assert not at.exception and [t.value for t in at.title] == ["GPUs"]
    assert any("no runs yet" in i.value for i in at.info)


def test_health_offenders_xids_and_a_gpu_from_the_url(store_dir):
    run_id = stored_run(store_dir)
    # t = 30,000 s: GPU 3 failed at 20,000 s and is repaired at 40,000 s; the flagship's 8 GPUs train on
    # hosts 0, 2, 3 and 7 (the spare took host 1's place), a research job on hosts 4 and 5; host 6's job was
    # just stopped by a cable failure (it restarts at 31,000 s)
    at = open_page(PAGE, {"run": run_id, "t": "30000", "gpu": "3"})
    assert not at.exception
    assert metrics(at) == {"GPUs": "16", "Failed GPUs": "1", "GPUs training": "12"}
    assert [s.value for s in at.subheader] == ["Health", "Repeat offenders", "XID events by code", "One GPU"]
    markdown = [m.value for m in at.markdown]
    assert "**Hosts** (1)" in markdown and "**GPUs** (1)" in markdown
    lemon_hosts = at.dataframe[0].value
    assert lemon_hosts["hostname"].tolist() == ["host-001"] and lemon_hosts["incidents"].tolist() == [2]
    assert lemon_hosts["causes"].tolist() == ["faulty_gpu, gpu_hbm3"]
    assert at.number_input[0].value == 3
    assert any(m.startswith("**GPU 3**: index 1 of host host-001 (rack 0)") for m in markdown)
    assert "**Events** (5)" in markdown  # 2 incidents + 3 XID events
    # 96 samples over 85,500 s, in buckets of 85,500 / 500 = 171 s
    assert "96 samples averaged over 2 min buckets." in [c.value for c in at.caption]


def test_choosing_a_gpu_writes_it_to_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception and "gpu" not in at.query_params
    assert any("worst repeat offender is GPU 3" in c.value for c in at.caption)
    at.number_input[0].set_value(0).run()
    assert not at.exception and at.query_params["gpu"] == "0"
    assert any("index 0 of host host-000" in m.value for m in at.markdown)
    assert any("No incident or XID event on this GPU." == c.value for c in at.caption)


def test_an_ingested_run_without_incidents_or_states(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id, "gpu": "3"})
    assert not at.exception
    assert metrics(at)["Failed GPUs"] == "0"
    assert any("No host or GPU failed more than once" in i.value for i in at.info)
    assert "**Events** (3)" in [m.value for m in at.markdown]  # its three XID events
