"""Network page: links by tier at once; in tabs drawn only while open (?tab=), the note when a run has no link
telemetry, utilisation, hottest links, the fabric diagram, failed and flapping links, cable failures, and a RoCE run
beside an InfiniBand one (?vs=, which opens its tab from a link)."""

import polars as pl
import pytest
from test_charts_pages import open_page, pages_run, sparse_run, stored_run

from dashboard.charts import network as charts
from engine.analysis.definitions import definition
from engine.scenario import build
from engine.store import Store
from engine.twin.simulate import simulate

PAGE = "app_pages/network.py"
OUTAGES, FAILURES, DEGRADED = "Outages and slowed jobs", "Switch and cable failures", "Degraded links"
UTILISATION, HOTTEST, FABRIC, COMPARE = "Utilisation", "Hottest links", "Fabric map", "Compare runs"
TABS = [FAILURES, OUTAGES, DEGRADED, UTILISATION, HOTTEST, FABRIC, COMPARE]
# demo with pods of one rack at 200 Gbps a GPU: a ring edge leaving a pod (1,600 Gbps) overloads the pod's
# 6.4 Tbps / 7 of core, so the flagship is slowed 1.75x (more while an uplink of its racks is down); the fabric
# fails a few times a day of its own
DEMO_SETS = [
    "network.gbps_per_gpu=200",
    "cluster.racks_per_pod=1",
    "network.fabric_faults_per_day=3",
    "simulation.days=2",
]


def metrics(at) -> dict[str, str]:
    """Each metric's value by its definition key (engine.analysis.definitions): the page labels figures from there."""
    return {m.label: m.value for m in at.metric}


def label(key: str) -> str:
    return definition(key).label


def frames_with(at, column: str) -> list:
    return [d.value for d in at.dataframe if column in d.value.columns]


def open_tab(at, label: str):
    """Open the page's tab `label` as a click would (only the open tab is drawn: dashboard/lazy.py): its state,
    and the URL it is bound to, which a page opened with ?tab= holds."""
    at.session_state["tab"] = label
    if "tab" in at.query_params:
        at.query_params["tab"] = label
    return at.run()


def subheaders(at) -> list[str]:
    return [h.value for h in at.subheader]


def infos(at) -> list[str]:
    return [i.value for i in at.info]


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
    assert [m[label(k)] for k in ("fabric_links", "fabric_tiers", "fabric_capacity", "fabric_kind")] == [
        "22",
        "3",
        "22.4 Tbps",
        "RoCE",
    ]
    assert any("no link telemetry" in i for i in infos(open_tab(at, UTILISATION)))
    m = metrics(open_tab(at, FAILURES))
    assert [
        m[label(k)]
        for k in (
            "network_incidents",
            "network_jobs_hit",
            "network_job_interruptions",
            "network_gpu_hours_lost",
        )
    ] == ["1", "1", "1", "1.2 GPU-h"]
    failures = frames_with(at, "incident_id")[0]
    assert failures["link_id"].tolist() == [18] and failures["tier"].tolist() == [
        "Rack uplinks (rack to cluster switch)"
    ]
    assert failures["job_ids"].tolist() == ["j-r2"] and failures["hostname"].tolist() == ["host-006"]
    hit = frames_with(at, "network_incidents")[0]
    assert hit["job_id"].tolist() == ["j-r2"] and hit["name"].tolist() == ["eval-b"]


def test_utilisation_when_the_run_has_link_samples(store_dir):
    run_id = stored_run(store_dir, pages_run(link_telemetry=True))
    at = open_page(PAGE, {"run": run_id, "tab": UTILISATION})
    assert not at.exception
    assert not any("no link telemetry" in i for i in infos(at))
    assert metrics(at)[label("link_samples")] == "528"
    assert frames_with(at, "hottest_link_mean") and at.get("plotly_chart")  # the tiers' table, over time
    hottest = frames_with(open_tab(at, HOTTEST), "errors")[0]
    # util = 10 + link_id: link 21 (ctsw_atsw) is the hottest at 31%
    assert hottest["link_id"].tolist()[:2] == [21, 20] and hottest["mean_util"].tolist()[0] == 31.0
    # its switches are not named as the engine names them: no diagram; nothing went down
    assert any("cannot be drawn" in i for i in infos(open_tab(at, FABRIC)))
    at = open_tab(at, OUTAGES)
    assert "No link went down in this run." in infos(at)
    assert metrics(at)[label("link_outages")] == "0"


def test_a_run_without_links(store_dir):
    run_id = stored_run(store_dir, sparse_run())
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    no_telemetry = "This run has no link telemetry (its link_samples table is empty), so "
    shown = {tab: [i.split(":")[0] for i in infos(open_tab(at, tab))] for tab in TABS}
    assert not at.exception
    assert shown == {
        OUTAGES: ["This run has no links table", f"{no_telemetry}no link outage or slowed job can be shown"],
        FAILURES: ["This run has no links table", "No switch or cable failure in this run."],
        DEGRADED: [
            "This run has no links table",
            "This run has no NIC port samples, so no degraded link can be shown",
        ],
        UTILISATION: ["This run has no links table", f"{no_telemetry}there is no utilisation to show"],
        HOTTEST: ["This run has no links table", f"{no_telemetry}there are no hot links to show"],
        FABRIC: ["This run has no links table", f"{no_telemetry}the fabric cannot be coloured by load"],
        COMPARE: [
            "This run has no links table",
            "Another run with a modelled fabric is needed to compare (for example `goodput simulate --preset "
            "meta-24k-ib` beside `--preset llama3-405b`).",
        ],
    }


# each tab and the section it draws
SECTIONS = {
    OUTAGES: "Failed and degraded links",
    FAILURES: "Switch and cable failures",
    DEGRADED: "Degraded links",
    UTILISATION: "Utilisation by tier",
    HOTTEST: "Hottest links",
    FABRIC: "The fabric",
    COMPARE: "Compare with another run",
}


def test_a_section_is_drawn_only_once_its_tab_is_open(store_dir):
    run_id = stored_run(store_dir, pages_run(link_telemetry=True))
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    # at once: links by tier (one table, no chart) and the first tab, the switch and cable failures; nothing of
    # the other tabs
    assert subheaders(at) == ["Links by tier", SECTIONS[FAILURES]] and not at.get("plotly_chart")
    assert [t.label for t in at.tabs] == TABS
    tiers = frames_with(at, "capacity_gbps")
    assert len(tiers) == 1 and tiers[0]["links"].tolist() == [16, 4, 2]  # NIC cables, uplinks, core links
    assert not frames_with(at, "hottest_link_mean") and not frames_with(at, "down_for")
    for tab in TABS:  # a click opens each, and only it
        assert subheaders(open_tab(at, tab)) == ["Links by tier", SECTIONS[tab]], tab
    # ?tab= opens one from a link
    for tab in (UTILISATION, COMPARE):
        linked = open_page(PAGE, {"run": run_id, "tab": tab})
        assert not linked.exception and subheaders(linked) == ["Links by tier", SECTIONS[tab]]
    # a link with ?colour= but no ?tab= opens the fabric map it colours; an explicit ?tab= wins
    assert subheaders(open_page(PAGE, {"run": run_id, "colour": "peak"}))[1] == SECTIONS[FABRIC]
    linked = open_page(PAGE, {"run": run_id, "colour": "peak", "tab": HOTTEST})
    assert subheaders(linked)[1] == SECTIONS[HOTTEST]


@pytest.fixture
def demo_runs():  # fresh each test: link_samples is a generator, drawn once as the store writes it
    return simulate(build("demo", sets=DEMO_SETS)), simulate(
        build("demo", sets=[*DEMO_SETS, "cluster.fabric=infiniband"])
    )


def test_a_simulated_run_shows_its_fabric_failures_and_slowed_jobs(store_dir, demo_runs):
    roce, _ = demo_runs
    run_id = stored_run(store_dir, roce)
    at = open_page(PAGE, {"run": run_id, "tab": UTILISATION})
    assert not at.exception
    m = metrics(at)
    summary = roce.summary["network"]
    assert m[label("gbps_per_gpu")] == "200 Gbps" and summary["flagship_slowdown_max"] >= 1.75
    assert m[label("flagship_slowdown_max")] == f"{summary['flagship_slowdown_max']:.3f}x"
    assert 1.75 <= summary["flagship_slowdown_mean"] < 1.8
    m = metrics(open_tab(at, OUTAGES))
    # every slowed job, not only those of the 50 worst episodes the summary lists
    assert m[label("jobs_slowed")] == str(summary["jobs_slowed"]) != "0"
    assert summary["jobs_slowed"] >= len({e["job_id"] for e in summary["slowed"]})
    slowed = frames_with(at, "worst_slowdown")[0]
    flagship = slowed[slowed["job_id"] == "demo-pretrain"]
    assert (slowed["outages_meanwhile"] >= 0).all()
    assert flagship["worst_slowdown"].max() == pytest.approx(summary["flagship_slowdown_max"])
    # outages: one row per group of links down together, as many as the store's islands of null samples
    samples = Store(store_dir).table(run_id, "link_samples")
    down_links = samples.filter(pl.col("util_pct").is_null())["link_id"].n_unique()
    outages = frames_with(at, "down_for")[0]
    assert int(m[label("link_outages")]) == outages.shape[0] > 0 and outages["links"].sum() >= down_links
    assert frames_with(at, "errors")  # flapping cables before they failed
    at = open_page(PAGE, {"run": run_id, "colour": "peak"})  # a link to the map coloured by peak opens it
    assert not at.exception and at.session_state["tab"] == FABRIC
    assert at.radio[0].value == "peak" and any(
        c.value.startswith("32 racks, 512 spines and 16 core") for c in at.caption
    )  # demo: 32 racks, each its own pod
    assert len(at.get("plotly_chart")) == 1  # the map (links by tier is a table)
    # another tab, then the map again: still by peak (the URL's ?colour= stays while the map is closed)
    assert frames_with(open_tab(at, HOTTEST), "errors") and not at.radio
    assert open_tab(at, FABRIC).radio[0].value == "peak"


def test_roce_beside_infiniband(store_dir, demo_runs):
    roce, ib = demo_runs
    roce_id, ib_id = stored_run(store_dir, roce), stored_run(store_dir, ib)
    at = open_page(PAGE, {"run": roce_id, "vs": ib_id})  # a link with ?vs= opens the Compare tab
    assert not at.exception, at.exception
    assert at.session_state["tab"] == COMPARE and at.selectbox(key="net_vs").value == ib_id
    stats = next(f for f in frames_with(at, "hottest_link_mean") if "run" in f.columns)
    # every tier of both fabrics, in words; the NIC cables too (their figures come from every link)
    assert set(stats["tier"]) == {
        "NIC cables (GPU to rack switch)",
        "Rack uplinks (rack to cluster switch)",
        "Core links (cluster to aggregation switch)",
        "NIC cables (GPU to leaf)",
        "Rack uplinks (leaf to spine)",
        "Core links (spine to core)",
    }
    slow = frames_with(at, "flagship_slowdown_max")[0]
    worst = slow["flagship_slowdown_max"].tolist()
    assert worst[0] >= 1.75 and worst[1] < 1.75  # the IB core is non-blocking
    rate = slow["flagship_progress_rate"].tolist()
    assert rate[0] == pytest.approx(roce.summary["network"]["flagship_progress_rate"]) and rate[0] <= 1 / 1.75
    assert rate[1] > rate[0]


def test_outages_meanwhile_counts_overlaps_only():
    slowed = pl.DataFrame({"job_id": ["a", "b"], "start_s": [0.0, 100.0], "end_s": [50.0, 200.0]})
    outages = pl.DataFrame({"from_s": [40.0, 50.0, 150.0], "until_s": [60.0, 120.0, 400.0]})
    assert charts.with_outages_meanwhile(slowed, outages)["outages_meanwhile"].to_list() == [1, 2]
    assert charts.with_outages_meanwhile(slowed, outages.head(0))["outages_meanwhile"].to_list() == [0, 0]


def test_diagram_nodes_place_every_switch():
    loads = pl.DataFrame(
        {
            "tier": ["rtsw_ctsw"] * 4 + ["ctsw_atsw"] * 4,
            "side": ["up", "up", "down", "down", "up", "up", "down", "down"],
            "node": ["rtsw-0", "rtsw-1", "ctsw-0-0", "ctsw-0-1", "ctsw-0-0", "ctsw-0-1", "atsw-0", "atsw-1"],
            "mean_util": [10.0, 30.0, 20.0, 20.0, 40.0, 0.0, 5.0, 15.0],
            "peak_util": [50.0] * 8,
            "down_samples": [0, 2, 0, 0, 0, 0, 0, 0],
            "links": [2, 2, 2, 2, 2, 2, 2, 2],
            "out": [False, True, False, False, False, False, False, False],
        }
    )
    nodes = charts.diagram_nodes(
        loads,
        pl.DataFrame({"rack_id": [0, 1], "pod_id": [0, 0]}, schema={"rack_id": pl.Int32, "pod_id": pl.Int32}),
        ("gpu_rtsw", "rtsw_ctsw", "ctsw_atsw"),
    )
    by_name = {r["name"]: r for r in nodes.to_dicts()}
    assert [by_name[n]["level"] for n in ("rtsw-0", "ctsw-0-1", "atsw-1")] == [0, 1, 2]
    assert by_name["ctsw-0-0"]["mean_util"] == 30.0  # its rack links (20) and core links (40) together
    assert by_name["rtsw-1"]["down_samples"] == 2 and by_name["rtsw-0"]["x"] < by_name["rtsw-1"]["x"]
    assert by_name["rtsw-1"]["out"] and not by_name["rtsw-0"]["out"] and not by_name["ctsw-0-0"]["out"]
    fig = charts.fabric_diagram(nodes)
    assert len(fig.data) == 4  # lines, racks, spines, core
