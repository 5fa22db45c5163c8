"""Fail-slow episodes on the pages and in the exports (issue 24, 4): the Incidents page lists them worst first with
their cost under a total equal to the ledger's slowdown bucket, names from the data as text; the Jobs page names the
flagship's culprit; every export format but CSV carries them and reads them back."""

import functools
import json
from dataclasses import replace
from datetime import datetime

import polars as pl
import pytest
from test_charts_pages import open_page

from dashboard.format import fmt_gpu_hours
from dashboard.incidents.fail_slow import SHOWN, episodes_table
from dashboard.text import md
from engine.analysis.definitions import definition
from engine.report.export import export_run_incidents, read_export
from engine.report.slow_episodes import SCHEMA, load_slow_episodes, slow_cause_label
from engine.scenario import build
from engine.sim.slow import SLOW_CAUSES
from engine.store import Store
from engine.twin.simulate import simulate

PAGE, JOBS = "app_pages/incidents.py", "app_pages/jobs.py"
TAB = "Fail-slow episodes"  # the Incidents page's tab that lists them (drawn only once open)
HOSTILE = "![x](http://evil.example/i.png)"
QUICK = ["simulation.telemetry=false", "simulation.days=3"]


@functools.cache
def slow_run(hostile: bool = False):
    """A demo run of 3 days with fail-slow episodes of every cause; `hostile`: the costliest episode's host named
    like a Markdown image."""
    run = simulate(build("demo", sets=[*QUICK, *(f"slow.{c}_rate=40" for c in SLOW_CAUSES)]))
    if not hostile:
        return run
    worst = run.tables["slow_episodes"].sort("cost_gpu_hours", descending=True, nulls_last=True)["host_id"][0]
    hosts = run.tables["hosts"].with_columns(
        hostname=pl.when(pl.col("host_id") == worst).then(pl.lit(HOSTILE)).otherwise(pl.col("hostname"))
    )
    return replace(run, tables={**run.tables, "hosts": hosts})


def bucket(run) -> float:
    return run.summary["job"]["losses_gpu_hours"]["slowdown"]


def episodes_shown(at):
    """The episodes' table (a pandas frame, as AppTest gives it)."""
    return next(d.value for d in at.dataframe if "detected_after" in d.value.columns)


def test_the_page_lists_the_episodes_worst_first_under_their_total(store_dir):
    run = slow_run()
    run_id = Store(store_dir).write_run(run)
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    assert TAB in [t.label for t in at.tabs] and "Fail-slow episodes" not in [s.value for s in at.subheader]
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert "Fail-slow episodes" in [s.value for s in at.subheader]
    total = next(m.value for m in at.markdown if definition("slow_episodes_cost_total").label in m.value)
    assert fmt_gpu_hours(bucket(run)) in total  # the ledger's slowdown bucket, to the digit shown
    shown = episodes_shown(at)
    stored = run.tables["slow_episodes"]
    assert len(shown) == min(stored.height, SHOWN)
    costs = shown["cost_gpu_hours"].dropna().tolist()
    assert costs == sorted(costs, reverse=True) and costs[0] == pytest.approx(stored["cost_gpu_hours"].max())
    assert set(shown["cause"]) <= {slow_cause_label(c) for c in SLOW_CAUSES}
    assert shown["start"].str.endswith("UTC").all()  # dates, as the page's other tables write them


def test_a_hostile_hostname_stays_text(store_dir):
    run_id = Store(store_dir).write_run(slow_run(hostile=True))
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    assert episodes_shown(at)["component"].iloc[0] == HOSTILE  # a table cell: plain text, as it is
    at = open_page(JOBS, {"run": run_id, "job": "demo-pretrain"})
    assert not at.exception
    line = next(m.value for m in at.markdown if definition("slowdown_culprit").label in m.value)
    assert md(HOSTILE) in line and HOSTILE not in line  # escaped, not a Markdown image


def test_the_jobs_page_names_the_flagships_culprit(store_dir):
    run = slow_run()
    run_id = Store(store_dir).write_run(run)
    at = open_page(JOBS, {"run": run_id, "job": "demo-pretrain"})
    assert not at.exception
    line = next(m.value for m in at.markdown if definition("slowdown_culprit").label in m.value)
    episodes = run.tables["slow_episodes"].sort("cost_gpu_hours", descending=True, nulls_last=True)
    worst = episodes.row(0, named=True)
    assert fmt_gpu_hours(worst["cost_gpu_hours"]) in line
    hostname = run.tables["hosts"].filter(pl.col("host_id") == worst["host_id"])["hostname"][0]
    assert md(hostname) in line
    share = worst["cost_gpu_hours"] / bucket(run)
    assert f"{share * 100:.0f}%" in line


def test_a_run_without_slowness_shows_no_episodes(store_dir):
    run_id = Store(store_dir).write_run(simulate(build("demo", sets=QUICK)))
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    assert "Fail-slow episodes" not in [s.value for s in at.subheader]
    assert TAB not in [t.label for t in at.tabs]  # no tab for what the run cannot have
    at = open_page(JOBS, {"run": run_id, "job": "demo-pretrain"})
    assert not at.exception
    assert not any(definition("slowdown_culprit").label in m.value for m in at.markdown)


def test_slowness_on_without_an_episode_says_so_in_a_sentence(store_dir):
    run = simulate(build("demo", sets=[*QUICK, "slow.host_rate=0.0001"]))
    assert run.tables["slow_episodes"].is_empty()
    run_id = Store(store_dir).write_run(run)
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    assert "No component ran slow in this run." in [c.value for c in at.caption]


def test_the_table_writes_a_gpu_cause_with_its_gpu_and_missing_values_as_dashes():
    episodes = pl.DataFrame(
        {
            "host_id": [3, 4],
            "hostname": ["h3", None],
            "gpu_id": [29, None],
            "gpu_index": [5, None],
            "cause": ["gpu_thermal", "network"],
            "start_s": [0.0, 60.0],
            "end_s": [3600.0, 120.0],
            "factor": [1.3, 2.0],
            "detected_s": [600.0, None],
            "action": ["swap", "none"],
            "left_s": [600.0, None],
            "cost_gpu_hours": [12.0, None],
        },
        schema=SCHEMA,
    )

    class Info:  # what episodes_table reads of a RunInfo
        started_at = datetime(2024, 3, 1)

    table = episodes_table(Info(), episodes)
    assert table["component"].to_list() == ["h3 GPU 5", "host 4"]
    assert table["start"].to_list() == ["2024-03-01 00:00 UTC", "2024-03-01 00:01 UTC"]
    assert table["detected_after"].to_list() == ["10 min", "–"]
    assert table["action"].to_list() == ["swapped out", "none"]
    assert table["cause"].to_list() == ["GPU thermal throttling", "Degraded NIC or cable"]


# ----- exports ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_the_export_carries_the_episodes_and_reads_them_back(store_dir, fmt):
    run = slow_run()
    store = Store(store_dir)
    run_id = store.write_run(run)
    frame, meta = read_export(export_run_incidents(store, run_id, fmt), fmt)
    assert frame.height == run.tables["incidents"].height
    episodes = pl.DataFrame(meta["slow_episodes"], schema=SCHEMA, orient="row")
    assert episodes.height == run.tables["slow_episodes"].height
    assert episodes["cost_gpu_hours"].sum() == pytest.approx(bucket(run), rel=1e-9)
    with store.connect(run_id) as con:
        assert episodes.equals(load_slow_episodes(con))


def test_the_html_report_has_the_episodes_and_their_total(store_dir):
    run = slow_run(hostile=True)
    store = Store(store_dir)
    run_id = store.write_run(run)
    page = export_run_incidents(store, run_id, "html", charts=False).decode()
    assert f"<h2>Fail-slow episodes ({run.tables['slow_episodes'].height:,})</h2>" in page
    assert f"{definition('slow_episodes_cost_total').label}: {bucket(run):,.1f}" in page
    assert "GPU thermal throttling" in page or "Slow host" in page
    assert "![x](http://evil.example/i.png)" in page and "<img" not in page  # escaped text


def test_an_anonymised_export_hides_the_episodes_hostnames(store_dir):
    run = slow_run()
    store = Store(store_dir)
    run_id = store.write_run(run)
    document = json.loads(export_run_incidents(store, run_id, "json", anonymise=True))
    names = set(run.tables["hosts"]["hostname"].to_list())
    assert document["slow_episodes"] and not any(e["hostname"] in names for e in document["slow_episodes"])


def test_csv_and_one_incidents_export_stay_as_they_were(store_dir):
    run = slow_run()
    store = Store(store_dir)
    run_id = store.write_run(run)
    frame, meta = read_export(export_run_incidents(store, run_id, "csv"), "csv")
    assert (
        frame.height == run.tables["incidents"].height and meta == {}
    )  # one table, every CSV reader as before
    one = run.tables["incidents"]["incident_id"][0]
    document = json.loads(export_run_incidents(store, run_id, "json", incident_id=one))
    assert "slow_episodes" not in document  # one incident's export is about that incident
    plain = json.loads(export_run_incidents(Store(store_dir), run_id, "json"))
    assert "slow_episodes" in plain
