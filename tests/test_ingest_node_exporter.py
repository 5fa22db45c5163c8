"""`goodput ingest node-exporter`: NIC ports from node_exporter's infiniband collector (engine.ingest.node_exporter).
The fixture tests/fixtures/ingest/node_exporter/node017.prom holds two scrapes of node017, 60 s apart: mlx5_0 at
400 Gbps throughout, mlx5_1 trained down to 200 Gbps in the second with its symbol errors 12 -> 42. Exact rows,
the CLI, the Network page's degraded links, and one clear error naming file and line for each kind of bad input."""

import json
from pathlib import Path

import pytest
from test_charts_pages import open_page

from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import registry
from engine.ingest.node_exporter import MAX_PORTS_PER_HOST, ingest_node_exporter
from engine.store import Store

FIXTURE = Path(__file__).parent / "fixtures" / "ingest" / "node_exporter" / "node017.prom"
T0_MS = 1733133600000


def test_the_scrapes_become_nic_samples_one_row_a_port_and_time():
    run = ingest_node_exporter([FIXTURE])
    assert run.kind == "ingest" and run.started_at.timestamp() == T0_MS / 1000
    assert run.tables["hosts"]["hostname"].to_list() == ["node017"]
    assert run.tables["nic_samples"].rows() == [
        (0, "mlx5_0", 1, 0.0, 400.0, 0, 0, 0, 0),
        (0, "mlx5_1", 1, 0.0, 400.0, 0, 12, 1, 0),
        (0, "mlx5_0", 1, 60.0, 400.0, 0, 0, 0, 0),
        (0, "mlx5_1", 1, 60.0, 200.0, 0, 42, 1, 0),
    ]
    summary = run.summary
    assert (summary["hosts"], summary["gpus"], summary["samples"], summary["nic_ports"]) == (1, 0, 20, 2)
    assert summary["skipped"] == {"samples of other metrics": 6}
    assert run.duration_s == 60.0


def test_the_host_is_the_instance_without_its_port_else_the_file_name():
    saved = (
        'node_infiniband_rate_bytes_per_second{device="mlx5_0",instance="node018:9100",job="node",port="1"}'
        f" 2.5e+10 {T0_MS}\n"
        f'node_infiniband_link_downed_total{{device="mlx5_0",port="2"}} 3 {T0_MS}\n'
    )
    run = ingest_node_exporter([("federate/saved.txt", saved.encode())])
    assert run.tables["hosts"]["hostname"].to_list() == ["node018", "saved"]
    assert run.tables["nic_samples"].rows() == [
        (0, "mlx5_0", 1, 0.0, 200.0, None, None, None, None),
        (1, "mlx5_0", 2, 0.0, None, 3, None, None, None),
    ]


def test_the_cli_ingests_and_the_page_shows_the_degraded_port(store_dir, capsys):
    assert "node-exporter" in registry.names()
    assert main(["ingest", "node-exporter", str(FIXTURE), "--json", "--store", str(store_dir)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["hosts"], result["samples"], result["xid_events"]) == (1, 20, 0)
    with Store(store_dir).connect(result["run_id"]) as con:
        assert con.sql("SELECT count(*) AS n FROM nic_samples").pl()["n"][0] == 4
    at = open_page("app_pages/network.py", {"run": result["run_id"], "tab": "Degraded links"})
    assert not at.exception
    [table] = [d.value for d in at.dataframe if "problem" in d.value.columns]
    assert table[["hostname", "device", "problem"]].values.tolist() == [
        ["node017", "mlx5_1", "rate below nominal"],
        ["node017", "mlx5_1", "symbol errors"],
    ]
    assert table["rise"].tolist()[1] == 30


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('node_infiniband_link_downed_total{device="mlx5_0",port="1"} zero\n', "line 1: its value 'zero'"),
        ("this is no sample\n", "line 1: not a sample line"),
        ('# HELP x y\nnode_infiniband_link_downed_total{port="1"} 0\n', "line 2: no device label"),
        ('node_infiniband_link_downed_total{device="mlx5_0",port="p1"} 0\n', "line 1: port label 'p1'"),
        (
            f'node_infiniband_link_downed_total{{device="mlx5_0",port="1"}} 0 {T0_MS}\n'
            f'node_infiniband_link_downed_total{{device="mlx5_0",port="1"}} 1 {T0_MS}\n',
            "line 2: node_infiniband_link_downed_total of mlx5_0 port 1 again at one time",
        ),
        ('node_infiniband_link_downed_total{device="mlx5_0",port="1"} 0 5\n', "line 1: timestamp 5 ms"),
        ("node_cpu_seconds_total 1\n", "nothing to ingest"),
    ],
)
def test_bad_input_is_one_error_naming_file_and_line(text, error):
    with pytest.raises(GoodputError, match="^bad.prom") as caught:
        ingest_node_exporter([("bad.prom", text.encode())])
    assert error in str(caught.value)


def test_values_no_column_holds_are_skipped_and_counted():
    text = (
        f'node_infiniband_link_downed_total{{device="mlx5_0",port="1"}} -1 {T0_MS}\n'
        f'node_infiniband_symbol_error_total{{device="mlx5_0",port="1"}} 2.5 {T0_MS}\n'
        f'node_infiniband_rate_bytes_per_second{{device="mlx5_0",port="1"}} NaN {T0_MS}\n'
        f'node_infiniband_port_errors_received_total{{device="mlx5_0",port="1"}} 7 {T0_MS}\n'
    )
    run = ingest_node_exporter([("odd.prom", text.encode())])
    assert run.tables["nic_samples"].rows() == [(0, "mlx5_0", 1, 0.0, None, None, None, None, 7)]
    assert run.summary["skipped"] == {
        "values out of range for their column (a negative rate, a counter not a whole 0-2^53)": 3
    }


def test_too_many_ports_on_a_host_is_an_error_naming_the_line():
    text = "".join(
        f'node_infiniband_link_downed_total{{device="mlx5_{d}",port="1"}} 0 {T0_MS}\n'
        for d in range(MAX_PORTS_PER_HOST + 1)
    )
    with pytest.raises(
        GoodputError, match=f"^many.prom, line {MAX_PORTS_PER_HOST + 1}: host 'many' has more than"
    ):
        ingest_node_exporter([("many.prom", text.encode())])
