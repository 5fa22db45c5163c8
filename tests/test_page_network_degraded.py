"""The Network page's "Degraded links" section (dashboard.network.degraded): on hand-built runs, a simulated run's
fail-slow episodes of cause network (host names as text, start, duration, factor) and an observed run's NIC ports
below the fleet's nominal rate or with rising error counters (which counter, by how much, when), exactly; one plain
sentence for a run without NIC samples (older files too), without a degraded link, or without network episodes.
One real simulation with slow.network_rate on shows its episodes on the page."""

from datetime import UTC, datetime

import duckdb
import polars as pl
from test_charts_pages import open_page, stored_run

from dashboard.queries import network_degraded as queries
from engine.analysis.definitions import definition
from engine.scenario import build
from engine.store import Run, Store
from engine.store.schema import polars_schema
from engine.twin.simulate import simulate
from tests.test_store_older_files import older_file

PAGE = "app_pages/network.py"
TAB = "Degraded links"  # its tab of the page (?tab=), drawn only while open
STARTED = datetime(2024, 12, 2, 11, tzinfo=UTC)
HOSTS = ["*node*-a", "<b>n1</b>", "node-c"]  # names Markdown or HTML would mangle
NO_NIC = "This run has no NIC port samples"
NO_EPISODES = "No link was degraded in this run"


def _hosts() -> pl.DataFrame:
    return pl.DataFrame(
        {"host_id": [0, 1, 2], "hostname": HOSTS, "rack_id": [0, 0, 0], "slot": [0, 1, 2]},
        schema=polars_schema("hosts", ("host_id", "hostname", "rack_id", "slot")),
    )


def episodes_run(episodes: list[tuple]) -> Run:
    """Episodes (host_id, gpu_id, cause, start_s, end_s, factor, detected_s, action)."""
    columns = ("host_id", "gpu_id", "cause", "start_s", "end_s", "factor", "detected_s", "action")
    slow = pl.DataFrame(episodes, schema=list(columns), orient="row").cast(
        polars_schema("slow_episodes", columns)
    )
    tables = {"hosts": _hosts(), "slow_episodes": slow}
    return Run(kind="simulate", name="slow-links", started_at=STARTED, duration_s=86_400.0, tables=tables)


def nic_run(rows: list[tuple]) -> Run:
    """NIC samples (host_id, device, port, t_s, rate_gbps, link_downed, symbol_errors, link_recoveries,
    rcv_errors)."""
    nic = pl.DataFrame(rows, schema=list(polars_schema("nic_samples")), orient="row").cast(
        polars_schema("nic_samples")
    )
    tables = {"hosts": _hosts(), "nic_samples": nic}
    return Run(kind="ingest", name="nics", started_at=STARTED, duration_s=3_600.0, tables=tables)


def port(
    host: int, device: str, rates: list[float], counters: list[tuple[int, int, int, int]]
) -> list[tuple]:
    return [
        (host, device, 1, 600.0 * i, rate, *c)
        for i, (rate, c) in enumerate(zip(rates, counters, strict=True))
    ]


CLEAN = [(0, 0, 0, 0)] * 4
NIC_ROWS = (
    port(0, "mlx5_0", [400.0] * 4, CLEAN)  # fine
    + port(0, "mlx5_1", [400.0, 400.0, 200.0, 200.0], CLEAN)  # trained down to 200 Gbps at 1,200 s
    + port(1, "mlx5_0", [400.0] * 4, [(0, 5, 0, 0), (0, 5, 0, 0), (0, 9, 1, 0), (0, 12, 1, 0)])  # symbols +7
    + port(
        2, "mlx5_0", [400.0] * 4, [(1, 0, 0, 3), (2, 0, 0, 3), (0, 0, 0, 0), (1, 0, 0, 2)]
    )  # reset between
)


def test_the_degraded_ports_worst_first(store_dir):
    run_id = stored_run(store_dir, nic_run(NIC_ROWS))
    assert queries.nominal_rate(run_id) == 400.0
    rows = queries.degraded_ports(run_id, 400.0).rows()
    assert rows == [
        ("*node*-a", "mlx5_1", 1, "rate below nominal", 200.0, None, 1200.0, 1800.0),
        ("<b>n1</b>", "mlx5_0", 1, "symbol errors", None, 7, 1200.0, 1800.0),
        # host 2: link_downed 1 -> 2 at 600 s, then a reset (2 -> 0, not counted), then 0 -> 1 at 1,800 s;
        # its receive errors 3 -> 3 -> 0 -> 2 rose once, by 2
        ("node-c", "mlx5_0", 1, "link downed", None, 2, 600.0, 1800.0),
        ("node-c", "mlx5_0", 1, "receive errors", None, 2, 1800.0, 1800.0),
        ("<b>n1</b>", "mlx5_0", 1, "link error recoveries", None, 1, 1200.0, 1200.0),
    ]


def test_the_ports_on_the_page_with_host_names_as_text(store_dir):
    run_id = stored_run(store_dir, nic_run(NIC_ROWS))
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    shown = {m.label: m.value for m in at.metric}
    assert shown[definition("nominal_port_rate").label] == "400 Gbps"
    assert shown[definition("degraded_ports").label] == "3"
    [table] = [d.value for d in at.dataframe if "problem" in d.value.columns]
    assert table["hostname"].tolist()[:2] == ["*node*-a", "<b>n1</b>"]
    assert table["problem"].tolist()[0] == "rate below nominal"
    assert table["first"].tolist()[0] == "2024-12-02 11:20 UTC"
    assert not any("*node*" in m.value for m in at.markdown)


def test_no_degraded_link_is_one_sentence(store_dir):
    run_id = stored_run(store_dir, nic_run(port(0, "mlx5_0", [400.0] * 4, CLEAN)))
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    assert "No degraded link: every NIC port ran at the nominal rate and no error counter rose." in [
        i.value for i in at.info
    ]
    assert not [d for d in at.dataframe if "problem" in d.value.columns]


def test_an_observed_run_without_nic_samples_and_an_older_file(store_dir):
    run_id = stored_run(store_dir, nic_run([]))
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception and any(i.value.startswith(NO_NIC) for i in at.info)
    store, older = older_file(store_dir / "older")
    con = duckdb.connect(str(store.run_file(older)))
    con.execute("DROP TABLE nic_samples")
    con.close()
    assert store.table(older, "nic_samples").is_empty()


def test_the_network_episodes_of_a_simulated_run(store_dir):
    run_id = stored_run(
        store_dir,
        episodes_run(
            [
                (1, None, "network", 3_600.0, 5_400.0, 2.5, 4_200.0, "swap"),
                (0, None, "network", 600.0, 1_200.0, 1.5, None, "none"),
                (2, 5, "gpu_thermal", 100.0, 200.0, 3.0, None, "none"),  # not a link
            ]
        ),
    )
    assert queries.network_episodes(run_id).rows() == [
        ("*node*-a", 600.0, 600.0, 1.5, None, "none"),
        ("<b>n1</b>", 3_600.0, 1_800.0, 2.5, 4_200.0, "swap"),
    ]
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    shown = {m.label: m.value for m in at.metric}
    assert shown[definition("degraded_link_episodes").label] == "2"
    assert shown[definition("degraded_link_worst_slowdown").label] == "2.50x"
    [table] = [d.value for d in at.dataframe if "detected" in d.value.columns]
    assert table["hostname"].tolist() == ["*node*-a", "<b>n1</b>"]
    assert table["start"].tolist() == ["2024-12-02 11:10 UTC", "2024-12-02 12:00 UTC"]
    assert table["duration"].tolist() == ["10 min", "30 min"]
    assert table["factor"].tolist() == [1.5, 2.5]
    # as the Incidents page's fail-slow table writes them (one truth): a dash where nobody detected it
    assert table["detected"].tolist() == ["–", "10 min"]
    assert table["action"].tolist() == ["none", "swapped out"]


def test_a_simulated_run_without_network_episodes_says_so(store_dir):
    run_id = stored_run(store_dir, episodes_run([(2, 5, "gpu_power", 100.0, 200.0, 3.0, None, "none")]))
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception and any(i.value.startswith(NO_EPISODES) for i in at.info)


def test_a_real_simulation_with_degraded_links(store_dir):
    scenario = build(
        preset="demo", sets=["slow.network_rate=50", "simulation.days=2", "simulation.telemetry=false"]
    )
    run = simulate(scenario)
    episodes = run.tables["slow_episodes"].filter(pl.col("cause") == "network")
    assert episodes.height > 0
    run_id = Store(store_dir).write_run(run)
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    [table] = [d.value for d in at.dataframe if "detected" in d.value.columns]
    assert len(table) == episodes.height
    assert sorted(table["factor"].tolist()) == sorted(episodes["factor"].to_list())
