"""Incidents page: Llama 3 counting of the filtered set (engine.analysis.incidents.summary_counts), filters that combine
and live in the URL (engine.analysis.incidents.filter_incidents, as the exports filter), the cost table, one incident's
chain and blast radius from ?incident=, download buttons and their file names, and "replay with other
settings" writing a second run beside the first."""

import dataclasses
import json
from datetime import datetime, timedelta

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest
from test_charts_pages import DAY, open_page, pages_run, sparse_run, stored_run

from dashboard.queries import incidents as queries
from engine.report.export import export_run_incidents, read_export
from engine.scenario import build
from engine.store import RunInfo, Store
from engine.twin.simulate import simulate

PAGE = "app_pages/incidents.py"
FORMATS = ["CSV", "JSON", "Parquet", "HTML report"]


def open_tab(at, label: str):
    """Open the tab `label` as a click would (the URL follows it): only the open tab is drawn
    (dashboard/incidents/tabs.py)."""
    at.session_state["tab"] = at.query_params["tab"] = label
    return at.run()


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def cost_table(at):
    return next(d.value for d in at.dataframe if "jobs_hit" in d.value.columns)


def chain_table(at):
    return next(d.value for d in at.dataframe if "what" in d.value.columns)


def charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


# ----- pure helpers ---------------------------------------------------------------------------------------


def test_an_empty_choice_filters_nothing_and_planned_maps_to_a_bool():
    assert (
        queries.filter_keywords(
            since_s=None, until_s=None, causes=[], categories=[], racks=[], jobs=[], planned="all"
        )
        == {}
    )
    assert queries.filter_keywords(
        since_s=10.0,
        until_s=None,
        causes=["ssd"],
        categories=[],
        racks=[0, 3],
        jobs=["j"],
        planned="unexpected",
    ) == {"since_s": 10.0, "causes": ["ssd"], "racks": [0, 3], "jobs": ["j"], "planned": False}
    assert queries.filter_keywords(
        since_s=None, until_s=5.0, causes=[], categories=["GPU"], racks=[], jobs=[], planned="planned"
    ) == {"until_s": 5.0, "categories": ["GPU"], "planned": True}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3600", 3600.0),
        ("-5", 0.0),
        ("1e9", DAY),
        ("x", None),
        ("", None),
        (None, None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_url_seconds_are_clipped_to_the_run(text, expected):
    assert queries.url_seconds(text, 0.0, DAY) == expected


def test_export_file_names():
    assert queries.export_file_name("sim-1", "csv") == "incidents-sim-1.csv"
    assert (
        queries.export_file_name("sim-1", "html", incident_id=7, anonymise=True)
        == "incident-7-sim-1-anon.html"
    )


def test_side_by_side_figures_and_cost():
    def info(run_id, summary):
        return RunInfo(
            run_id=run_id,
            kind="simulate",
            name="n",
            seed=1,
            started_at=None,
            duration_s=DAY,
            created_at=None,
            engine_version="x",
            scenario={},
            summary=summary,
        )

    a = info(
        "a",
        {
            "job": {
                "ettr": 0.9,
                "lost_gpu_hours": 1234.0,
                "losses_usd": {"lost_work": 100.0, "restart": 50.0},
            },
            "interruptions": {"total": 12, "unexpected": 10},
        },
    )
    b = info("b", {})
    table = queries.side_by_side(a, b)
    assert table["figure"].to_list() == [
        "ETTR",
        "interruptions",
        "unexpected",
        "lost GPU-hours",
        "cost of the losses",
    ]
    assert table["n (a)"].to_list() == ["90.0%", "12", "10", "1.2k GPU-h", "$150"]
    assert table["n (b)"].to_list() == ["–"] * 5


def test_days_in_the_window_count_from_the_runs_start():
    frame = pl.DataFrame(
        {
            "t_s": [3600.0, 2 * DAY + 10.0, 2 * DAY + 20.0, 3 * DAY + 5.0, 4 * DAY],
            "planned": [False, False, True, False, False],
            "gpu_hours_lost": [1.0] * 5,
            "cause": ["ssd"] * 5,
            "category": ["Host"] * 5,
            "job_ids": [["a"], ["a"], ["a"], ["b"], ["a"]],
        }
    )
    inside = frame.filter((pl.col("t_s") >= 1.5 * DAY) & (pl.col("t_s") < 4 * DAY))
    days = queries.days_in_window(inside, 1.5 * DAY, 4 * DAY)
    assert days.rows() == [(1, 0, 0), (2, 1, 1), (3, 0, 1)]  # (day, planned, unexpected)
    assert queries.days_in_window(inside, 1.5 * DAY, 4 * DAY, job="a").rows() == [
        (1, 0, 0),
        (2, 1, 1),
        (3, 0, 0),
    ]
    assert queries.days_in_window(frame, None, 5 * DAY)["day"].to_list() == [0, 1, 2, 3, 4]


# ----- the page -------------------------------------------------------------------------------------------


def test_empty_store(store_dir):
    at = open_page(PAGE)
    assert not at.exception and [t.value for t in at.title] == ["Incidents"]
    assert any("no runs yet" in i.value for i in at.info)


def test_counts_table_and_an_incident_from_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "incident": "2"})
    assert not at.exception
    m = metrics(at)
    # the flagship's interruptions (incidents 1 and 3) of the 4, over the run's 1 day
    assert (
        m["Interruptions"],
        m["Unexpected interruptions"],
        m["Planned interruptions"],
        m["Hardware share"],
        m["Interruptions a day"],
        m["GPU-hours lost to interruptions"],
    ) == ("2", "1", "1", "100%", "2.0", "5.8 GPU-h")
    assert any(
        "flagship job `j-flag`" in c.value and "4 incidents the filters keep (4 in the run)" in c.value
        for c in at.caption
    )
    # the drill-down, opened by the link without a click on its tab: the cable failure on host 6's rack
    # uplink, detected 10 minutes after it occurred
    assert at.tabs[0].label == "By cost" and at.session_state["tab"] == "One incident"
    assert at.selectbox[0].value == 2
    assert (m["Cause"], m["Category"], m["Detected after"], m["Cost of the incident"]) == (
        "Network switch/cable",
        "Network",
        "10 min",
        "1.2 GPU-h",
    )
    assert chain_table(at)["what"].tolist() == [
        "checkpoint",
        "occurred",
        "job interrupted",
        "detected",
        "job running again",
    ]
    # eval-b had no checkpoint: it restarts from its start at 5,000 s, 25,000 s before the fault
    assert chain_table(at)["after"].tolist() == ["6 h 56 min before", "0 s", "0 s", "10 min", "16 min"]
    assert any(
        x.value.startswith(
            "**Where**: host host-006 (rack 3), link 18 (the rack switch's uplink: the whole rack)"
        )
        for x in at.markdown
    )
    assert (m["GPUs hit"], m["Hosts it took out of service"], m["Jobs hit"]) == ("0", "0", "1")
    cost = next(d.value for d in at.dataframe if "restart_s" in d.value.columns)
    # durations in words, as the chain's "after" column writes them
    assert cost[["job_id", "lost_work_s", "restart_s"]].values.tolist() == [["j-r2", "20 min", "16 min"]]
    open_tab(at, "By cost")
    assert not at.exception
    assert cost_table(at)["incident_id"].tolist() == [1, 3, 2, 4]  # costliest first
    assert [list(j) for j in cost_table(at)["jobs"]] == [
        ["demo-pretrain"],
        ["demo-pretrain"],
        ["eval-b"],
        [],
    ]  # lists
    assert at.query_params["incident"] == "2"  # kept while another tab is open


def test_the_chain_of_a_hardware_failure_and_its_blast_radius(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "incident": "1"})
    assert not at.exception
    assert chain_table(at)["what"].tolist() == [
        "checkpoint",
        "occurred",
        "job interrupted",
        "hosts drained",
        "detected",
        "repair: diagnosing",
        "spares swapped in",
        "job running again",
        "repair: repair",
        "repair: burn_in",
        "host returned",
    ]
    assert "host-007 replace host-001" in chain_table(at)["detail"][6]
    m = metrics(at)
    assert (m["GPUs hit"], m["Hosts it took out of service"], m["Jobs hit"], m["Lost work + restart"]) == (
        "1",
        "1",
        "1",
        "26 min",
    )
    assert any(c.value == "Hosts taken out of service: host-001" for c in at.caption)
    [gantt] = [c for c in charts(at) if c["data"][0].get("base") is not None]
    bar = gantt["data"][0]
    assert bar["y"][0] == "1 · checkpoint" and bar["y"][-1] == "11 · host returned"
    assert bar["base"][1] == 0.0 and bar["base"][-1] == pytest.approx(20000 / 3600)


def test_filters_combine_and_go_to_the_url(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(
        PAGE,
        {
            "run": run_id,
            "since": "25000",
            "until": "80000",
            "racks": "0,3",
            "planned": "unexpected",
            "tab": "By cost",
        },
    )
    assert not at.exception
    # the run's start (test_charts_pages.STARTED), naive UTC as the slider has it
    start = datetime(2024, 3, 1)
    assert at.slider[0].label == "Time window (UTC)"
    assert at.slider[0].value == (start + timedelta(seconds=25000), start + timedelta(seconds=80000))
    # in [25000, 80000): 2, 3, 4; on rack 0 or 3: 2, 4 (3 has no host); unexpected: 2, 4
    assert cost_table(at)["incident_id"].tolist() == [2, 4]
    keywords = queries.filter_keywords(
        since_s=25000.0,
        until_s=80000.0,
        causes=[],
        categories=[],
        racks=[0, 3],
        jobs=[],
        planned="unexpected",
    )
    exported, _ = read_export(export_run_incidents(Store(store_dir), run_id, "csv", **keywords), "csv")
    assert sorted(exported["incident_id"].to_list()) == [2, 4]  # the export filters alike
    next(s for s in at.multiselect if s.label == "Job hit").set_value(["j-r2"]).run()
    assert cost_table(at)["incident_id"].tolist() == [2]
    assert at.query_params["jobs"] == "j-r2" and at.query_params["racks"] == "0,3"
    # no flagship interruption is left: the figures say so instead of counting the research job's
    assert metrics(at)["Interruptions"] == "0"
    at.radio[0].set_value("all").run()
    next(s for s in at.multiselect if s.label == "Job hit").set_value([]).run()
    at.slider[0].set_value((start, start + timedelta(seconds=DAY))).run()
    assert not at.exception
    assert cost_table(at)["incident_id"].tolist() == [1, 2, 4]  # racks 0 and 3 only
    assert (
        "planned" not in at.query_params and "since" not in at.query_params and "until" not in at.query_params
    )


def test_category_and_cause_filters(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(
        PAGE,
        {"run": run_id, "categories": "GPU,Network", "causes": "faulty_gpu,gpu_hbm3,nope", "tab": "By cost"},
    )
    assert not at.exception
    assert at.multiselect[0].value == ["faulty_gpu", "gpu_hbm3"]
    assert cost_table(at)["incident_id"].tolist() == [1, 4]
    at.multiselect[0].set_value([]).run()
    assert cost_table(at)["incident_id"].tolist() == [1, 2, 4] and "causes" not in at.query_params


def column_labels(element) -> dict[str, str]:
    """The headers a dataframe shows: its column config's labels, else the column's name."""
    config = json.loads(element.proto.columns or "{}")
    return {
        c: config.get(f"col:name:{c}", config.get(c, {})).get("label") or c for c in element.value.columns
    }


def test_the_tables_speak_words_not_keys(store_dir):
    """Issue 28: the cause table in words beside the chart's words, headers for people, a dash where an
    incident has no place (never "None"), one number format a column."""
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "incident": "2", "tab": "By cause and day"})
    assert not at.exception
    by_cause = next(d for d in at.dataframe if "cause" in d.value.columns and "unexpected" in d.value.columns)
    causes = by_cause.value["cause"].tolist()
    assert causes and all("_" not in c for c in causes), causes  # "Faulty GPU", never faulty_gpu
    assert "Faulty GPU" in causes
    open_tab(at, "By cost")
    cost = next(d for d in at.dataframe if "jobs_hit" in d.value.columns)
    headers = column_labels(cost)
    assert (headers["incident_id"], headers["jobs_hit"], headers["gpu_hours_lost"], headers["hostname"]) == (
        "incident",
        "jobs hit",
        "GPU-h lost",
        "host",
    )
    assert not any("_" in h for h in headers.values()), headers
    shown = cost.value.astype(str)
    assert not (shown == "None").any().any() and not (shown == "nan").any().any()
    assert "–" in cost.value["gpu_id"].tolist()  # the planned stop and the cable failure name no GPU
    config = json.loads(cost.proto.columns)
    assert config["gpu_hours_lost"]["type_config"]["format"] == "%,.1f"
    open_tab(at, "One incident")
    blast = next(d for d in at.dataframe if "restart_s" in d.value.columns)
    assert set(column_labels(blast).values()) >= {"job", "lost work", "restart", "GPU-h lost"}
    # the incident chooser names causes in words too
    assert "_" not in at.selectbox[0].format_func(at.selectbox[0].value)


def test_share_and_cost_tables_as_functions():
    from dashboard.incidents.tables import share_table

    counts = pl.DataFrame(
        {
            "cause": ["faulty_gpu", "planned_maintenance"],
            "interruptions": [3, 2],
            "unexpected": [3, 0],
            "gpu_hours_lost": [339.4, 127.6],
            "pct_of_unexpected": [None, None],
        },
        schema_overrides={"pct_of_unexpected": pl.Float64},
    )
    table = share_table(counts, "cause")
    assert table["cause"].to_list() == ["Faulty GPU", "Planned maintenance"]
    assert table["gpu_hours_lost"].to_list() == [339.0, 128.0]  # whole GPU-hours, every row alike
    assert table["pct_of_unexpected"].to_list() == ["–", "–"]  # no unexpected incident: no share, no "None"


def test_download_buttons_for_the_set_and_for_one_incident(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "tab": "Export"})
    assert [b.label for b in at.download_button] == FORMATS  # the filtered set
    assert [b.help for b in at.download_button] == [
        f"saves incidents-{run_id}.{f}" for f in ("csv", "json", "parquet", "html")
    ]
    open_tab(at, "One incident")
    assert not at.download_button  # no incident chosen
    at.selectbox[0].set_value(3).run()
    assert [b.label for b in at.download_button] == FORMATS
    assert at.download_button[0].help == f"saves incident-3-{run_id}.csv"
    open_tab(at, "Export")
    at.toggle[0].set_value(True).run()
    assert not at.exception and at.query_params["anon"] == "1"
    assert at.download_button[3].help == f"saves incidents-{run_id}-anon.html"
    open_tab(at, "One incident")  # the Export tab's toggle anonymises this tab's downloads too
    assert at.selectbox[0].value == 3
    assert at.download_button[3].help == f"saves incident-3-{run_id}-anon.html"
    assert any("anonymised" in m.value for m in at.markdown)
    at.download_button[0].click().run()  # a download keeps the view
    assert not at.exception and at.selectbox[0].value == 3
    # the buttons' bytes: engine.report.export's, for the chosen incident with its chain, anonymised
    document = json.loads(queries.export_bytes(run_id, "json", anonymise=True, incident_id=3))
    assert document["anonymised"] and [i["incident_id"] for i in document["incidents"]] == [3]
    assert [s["what"] for s in document["chain"]][:2] == ["checkpoint", "occurred"]
    assert "demo-pretrain" not in json.dumps(document)


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


def test_an_incident_never_repaired_and_a_run_without_a_scenario(store_dir):
    run_id = stored_run(store_dir, dataclasses.replace(pages_run(), scenario={}))
    at = open_page(PAGE, {"run": run_id, "incident": "4"})
    assert not at.exception
    assert chain_table(at)["detail"].tolist()[-1] == "host-001 still out of service at the end of the run"
    open_tab(at, "Replay with other settings")
    assert any("no scenario to replay under" in i.value for i in at.info)
    assert not [b for b in at.button if b.label.startswith("Replay")]


def test_a_section_is_drawn_only_once_its_tab_is_open(store_dir):
    """Only the open tab is drawn (dashboard/lazy.py): the table by cost by default, another from ?tab=; the
    filters and the figures they keep above the tabs, drawn whichever is open."""
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "planned": "unexpected"})
    assert not at.exception
    assert [t.label for t in at.tabs] == [
        "By cost",
        "Timeline",
        "By cause and day",
        "One incident",
        "Export",
        "Replay with other settings",
    ]  # no Fail-slow episodes tab: this run has no slowness (tests/test_page_incidents_fail_slow.py)
    assert cost_table(at)["incident_id"].tolist() == [1, 2, 4]  # the filters apply in the tab
    assert not charts(at) and len(at.dataframe) == 1  # the charts and the other tables wait for their tabs
    assert not at.main.selectbox and not at.download_button and not at.button and not at.number_input
    assert metrics(at)["Interruptions"] == "1"  # the figures, above the tabs
    at = open_page(PAGE, {"run": run_id, "planned": "unexpected", "tab": "Timeline"})
    assert not at.exception and not at.dataframe  # the table waits
    [timeline] = charts(at)  # the timeline only, of the incidents the filters keep
    assert sum(len(trace["text"]) for trace in timeline["data"]) == 3  # a marker each: incidents 1, 2 and 4
    assert at.query_params["tab"] == "Timeline" and metrics(at)["Interruptions"] == "1"
    open_tab(at, "By cause and day")
    assert not any("jobs_hit" in d.value.columns for d in at.dataframe)  # the cost table waits
    by_cause = next(d.value for d in at.dataframe if "cause" in d.value.columns)
    assert by_cause["interruptions"].sum() == 1  # the filters apply here too
    assert len(charts(at)) == 2  # by cause, and by day


def test_a_click_on_a_timeline_marker_opens_its_incident():
    """The timeline's on_select callback (dashboard/incidents/tabs.py) runs before the rerun: the One incident
    tab opens on the marker's incident without a click on the tab."""

    def app():
        import streamlit as st

        from dashboard import lazy
        from dashboard.incidents import tabs

        st.session_state[tabs.timeline_key("r")] = {"selection": {"points": [{"customdata": 3}]}}
        tabs.open_clicked("r")
        lazy.tabs(
            {
                tabs.TIMELINE: lambda: st.write("the timeline"),
                tabs.ONE_INCIDENT: lambda: st.write(f"incident {st.session_state[tabs.incident_key('r')]}"),
            }
        )

    at = AppTest.from_function(app).run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["incident 3"]


def test_every_change_counts(store_dir):
    run_id = stored_run(store_dir)
    at = open_page(PAGE, {"run": run_id, "tab": "One incident"})
    for incident in (1, 3, 4):
        at.selectbox[0].set_value(incident).run()
        assert at.query_params["incident"] == str(incident)
    at.radio[0].set_value("planned").run()
    at.radio[0].set_value("unexpected").run()
    assert at.query_params["planned"] == "unexpected" and at.query_params["incident"] == "4"


def test_replay_with_other_settings_writes_a_second_run(store_dir):
    store = Store(store_dir)
    run_id = store.write_run(
        simulate(
            build(
                "demo",
                sets=[
                    "simulation.days=1",
                    "simulation.telemetry=false",
                    "failures.scale=4",
                    "simulation.seed=5",
                ],
            )
        )
    )
    at = open_page(PAGE, {"run": run_id, "tab": "Replay with other settings"})
    assert not at.exception

    def replay() -> str:
        next(b for b in at.button if b.label == "Replay with these settings").click()
        at.run()
        assert not at.exception
        [status] = at.status
        assert status.state == "complete" and status.label.startswith("Replayed ")
        return at.query_params["replay"]

    # under its own settings the replay reproduces the run: the two columns read the same
    same_id = replay()
    table = next(d.value for d in at.dataframe if "figure" in d.value.columns)
    assert (
        table.columns[2] == f"{store.info(same_id).name} ({same_id})" and "same settings" in table.columns[2]
    )
    assert table.iloc[:, 1].tolist() == table.iloc[:, 2].tolist()

    spares = next(n for n in at.number_input if n.label.startswith("spares.hosts"))
    assert spares.value == 4  # the demo preset's
    spares.set_value(8)
    next(n for n in at.number_input if n.label.startswith("training.checkpoint_interval")).set_value(10.0)
    forked_id = replay()
    assert sorted(store.run_ids()) == sorted([run_id, same_id, forked_id])
    forked = store.info(forked_id)
    assert forked.kind == "replay" and forked.name.endswith(
        "replay (spares.hosts=8, training.checkpoint_interval=10m)"  # spelled as a scenario file spells it
    )
    assert (
        forked.scenario["spares"]["hosts"] == 8
        and forked.scenario["training"]["checkpoint_interval"] == "10m"
    )
    failures = "SELECT t_s, cause FROM incidents WHERE NOT coalesce(planned, false) ORDER BY t_s"
    with store.connect(run_id) as con:
        before = pl.DataFrame(con.execute(failures).fetchall(), orient="row")
    with store.connect(forked_id) as con:
        after = pl.DataFrame(con.execute(failures).fetchall(), orient="row")
    assert before.height > 0 and before.equals(after)  # the same failures, under other settings
    table = next(d.value for d in at.dataframe if "figure" in d.value.columns)
    assert table["figure"].tolist() == [
        "ETTR",
        "interruptions",
        "unexpected",
        "lost GPU-hours",
        "cost of the losses",
    ]
    assert table.iloc[:, 1].tolist() != table.iloc[:, 2].tolist()
    links = {p.proto.label: (p.proto.page, p.proto.query_string) for p in at.get("page_link")}
    assert links["Compare the two runs"] == ("compare", f"runs={run_id}%2C{forked_id}&run={run_id}")
    assert links["Open the replay's incidents"] == ("incidents", f"run={forked_id}")
