"""`goodput ingest node-events`: a fault history (Slurm's node events, fault tickets) into an observed run.

One small history written four ways (CSV, JSON lines, Parquet, and sacctmgr's text for its own cases) is read
into exact tables: offsets and Unix seconds, an open ticket, an unknown cause, a burst (four nodes out within a
minute), a DRAIN and a DOWN of one fault merged. Then the cause map, the fleet flags, every bad input (an error
naming file, line and column, or a counted skip), nothing written on an error, and Hypothesis for the time
parser and the tables' invariants. Real Slurm: tests/test_ingest_node_events_slurm.py.
"""

import gzip
import json
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import limits
from engine.cli import main
from engine.errors import GoodputError
from engine.ingest.node_events import causes, ingest_node_events
from engine.ingest.node_events.times import parse_text
from engine.store import Store

NOW = datetime(2026, 1, 1, tzinfo=UTC).timestamp()  # the clock the files are read against
T0 = 1_740_787_200  # 2025-03-01T00:00:00Z
GPU_NOTE = "8 GPUs a node assumed (--gpus-per-node to say how many)"

TICKETS_CSV = """node,start,end,cause,description,ticket
gpu01,2025-03-01T00:00:00Z,2025-03-01T06:00:00Z,Xid 79,GPU 3 fell off the bus,T-1
gpu02,2025-03-01T02:00:00+02:00,2025-03-01T03:00:00Z,,PSU tripped,T-2
gpu03,1740787230,1740794400,maintenance,BIOS upgrade,T-3
gpu04,2025-03-01T00:00:45Z,,mystery,,T-4
gpu01,2025-03-02T00:00:00Z,2025-03-02T01:00:00Z,ECC,"row remap
pending",T-5
gpu05,2025-03-03T00:00:00.500Z,2025-03-03T12:00:00Z,IB link down,,T-6
"""

INCIDENTS = [  # (incident_id, t_s, repaired_s, cause, category, planned, xid, host_id)
    (0, 0.0, 21600.0, "faulty_gpu", "GPU", False, 79, 0),
    (1, 0.0, 10800.0, "power_supply", "Host", False, None, 1),
    (2, 30.0, 7200.0, "planned_maintenance", "Planned", True, None, 2),
    (3, 45.0, None, "unknown", "Unknown", False, None, 3),
    (4, 86400.0, 90000.0, "gpu_hbm3", "GPU", False, None, 0),
    (5, 172800.5, 216000.0, "network_switch_cable", "Network", False, None, 4),
]
HOST_STATES = [
    (0, "down", 0.0, 21600.0),
    (0, "healthy", 21600.0, 86400.0),
    (0, "down", 86400.0, 90000.0),
    (0, "healthy", 90000.0, 216000.0),
    (1, "down", 0.0, 10800.0),
    (1, "healthy", 10800.0, 216000.0),
    (2, "healthy", 0.0, 30.0),
    (2, "down", 30.0, 7200.0),
    (2, "healthy", 7200.0, 216000.0),
    (3, "healthy", 0.0, 45.0),
    (3, "down", 45.0, 216000.0),
    (4, "healthy", 0.0, 172800.5),
    (4, "down", 172800.5, 216000.0),
]


def _ingest(tmp_path: Path, name: str, data: str | bytes, **options):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return ingest_node_events([path], now=NOW, **options)


def _incidents(run) -> list[tuple]:
    return (
        run.tables["incidents"]
        .select("incident_id", "t_s", "repaired_s", "cause", "category", "planned", "xid", "host_id")
        .rows()
    )


def _tickets_as_records() -> list[dict]:
    return pl.read_csv(TICKETS_CSV.encode(), infer_schema=False).to_dicts()


def _check_tickets_run(run) -> None:
    assert run.tables["hosts"]["hostname"].to_list() == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]
    assert _incidents(run) == INCIDENTS
    incidents = run.tables["incidents"]
    assert (
        incidents["detected_s"].to_list() == incidents["t_s"].to_list() == incidents["mitigated_s"].to_list()
    )
    assert incidents.select("gpu_id", "link_id").null_count().row(0) == (6, 6)
    assert incidents["jobs_hit"].to_list() == [0] * 6 and incidents["gpu_hours_lost"].to_list() == [0.0] * 6
    assert incidents["job_ids"].to_list() == [[]] * 6
    assert run.tables["host_states"].select("host_id", "state", "start_s", "end_s").rows() == HOST_STATES
    assert run.started_at == datetime.fromtimestamp(T0, UTC) and run.duration_s == 216000.0
    assert run.tables["gpus"].height == 40
    assert run.tables["gpus"].filter(pl.col("host_id") == 4)["index"].to_list() == list(range(8))
    summary = run.summary
    assert (summary["events"], summary["incidents"], summary["open"], summary["planned"]) == (6, 6, 1, 1)
    assert (summary["nodes_seen"], summary["nodes_added"], summary["hosts"], summary["gpus"]) == (5, 0, 5, 40)
    assert summary["unknown"] == 1 and summary["unknown_share"] == pytest.approx(1 / 6, abs=1e-6)
    assert summary["by_cause"]["faulty_gpu"] == 1 and sum(summary["by_cause"].values()) == 6
    assert summary["window"] == {"start": "2025-03-01T00:00:00Z", "end": "2025-03-03T12:00:00Z"}
    assert summary["skipped"] == {} and summary["notes"] == [GPU_NOTE]
    # a burst: four nodes out within the first minute, each its own incident
    assert incidents.filter(pl.col("t_s") < 60)["host_id"].to_list() == [0, 1, 2, 3]


def test_a_tickets_csv_becomes_exact_tables(tmp_path):
    run = _ingest(tmp_path, "tickets.csv", TICKETS_CSV)
    _check_tickets_run(run)
    events = run.tables["node_events"]
    assert events.select(
        "host_id", "start_s", "end_s", "reason", "description", "cause", "incident_id", "line"
    ).rows() == [
        (0, 0.0, 21600.0, "Xid 79", "GPU 3 fell off the bus", "faulty_gpu", 0, 2),
        (1, 0.0, 10800.0, None, "PSU tripped", "power_supply", 1, 3),
        (2, 30.0, 7200.0, "maintenance", "BIOS upgrade", "planned_maintenance", 2, 4),
        (3, 45.0, None, "mystery", None, "unknown", 3, 5),
        (0, 86400.0, 90000.0, "ECC", "row remap\npending", "gpu_hbm3", 4, 6),
        (
            4,
            172800.5,
            216000.0,
            "IB link down",
            None,
            "network_switch_cable",
            5,
            8,
        ),  # line 8: a quoted newline
    ]
    assert (
        events["state"].null_count() == 6
        and events["source"].to_list() == [str(tmp_path / "tickets.csv")] * 6
    )
    assert run.kind == "ingest" and run.scenario["source"] == "node-events"


def test_json_lines_give_the_same_tables(tmp_path):
    lines = []
    for record in _tickets_as_records():
        record = {k: v for k, v in record.items() if v is not None}
        if record["node"] == "gpu03":  # Unix seconds as JSON numbers
            record["start"], record["end"] = int(record["start"]), float(record["end"])
        lines.append(json.dumps(record))
    run = _ingest(tmp_path, "tickets.jsonl", "\n".join(lines) + "\n\n")
    _check_tickets_run(run)
    assert run.tables["node_events"]["line"].to_list() == [1, 2, 3, 4, 5, 6]


def test_parquet_with_timestamps_gives_the_same_tables(tmp_path):
    records = pl.DataFrame(_tickets_as_records())
    stamps = {
        c: pl.Series([parse_text(pl.Series([v]))["us"][0] for v in records[c]]).cast(pl.Datetime("us", "UTC"))
        for c in ("start", "end")
    }
    frame = records.with_columns(**stamps).rename({"node": "Node"})  # column names matched without case
    path = tmp_path / "tickets.parquet"
    frame.write_parquet(path)
    run = ingest_node_events([path], now=NOW)
    _check_tickets_run(run)
    assert run.tables["node_events"]["line"].to_list() == [1, 2, 3, 4, 5, 6]  # rows
    # naive timestamps are read as UTC, and said so
    frame.with_columns(pl.col("start", "end").dt.replace_time_zone(None)).write_parquet(path)
    naive = ingest_node_events([path], now=NOW)
    assert _incidents(naive) == INCIDENTS
    assert naive.summary["notes"] == [f"{path}: times with no zone were read as UTC", GPU_NOTE]


def test_a_gzipped_csv_is_read_as_its_text(tmp_path):
    run = _ingest(tmp_path, "tickets.csv.gz", gzip.compress(TICKETS_CSV.encode()))
    _check_tickets_run(run)


SACCTMGR = """NodeName|TimeStart|TimeEnd|State|Reason|User
|2025-03-01T00:00:00|Unknown||Cluster Registered TRES|
n01|2025-03-01T01:00:00|2025-03-01T02:00:00|IDLE+DRAIN|Xid 48 on GPU 2|root(0)
n01|2025-03-01T01:30:00|2025-03-01T03:00:00|DOWN*|Not responding|slurm(64030)
n02|2025-03-01T01:00:00|2025-03-01T01:20:00|POWERED_DOWN|power save|root(0)
n[03-04]|2025-03-01T04:00:00|Unknown|MIXED+DRAIN|Reboot ASAP|alice(1000)
n05|2025-03-01T05:00:00|2025-03-01T06:00:00|DRAIN+FAIL|PSU failed|pipe|bob(1001)
n05|2025-03-01T06:00:00|2025-03-01T07:00:00|DOWN|replaced PSU|bob(1001)
"""


def test_sacctmgr_events_merge_overlapping_and_touching_ones(tmp_path):
    run = _ingest(tmp_path, "events.txt", SACCTMGR)
    assert run.tables["hosts"]["hostname"].to_list() == ["n01", "n02", "n03", "n04", "n05"]  # n02 only slept
    assert _incidents(run) == [
        (0, 0.0, 7200.0, "gpu_hbm3", "GPU", False, 48, 0),  # DRAIN then DOWN, overlapping: one outage
        (1, 10800.0, None, "planned_maintenance", "Planned", True, None, 2),
        (2, 10800.0, None, "planned_maintenance", "Planned", True, None, 3),
        (3, 14400.0, 21600.0, "power_supply", "Host", False, None, 4),  # touching: one outage
    ]
    assert run.tables["node_events"].select(
        "host_id", "state", "reason", "user", "incident_id", "line"
    ).rows() == [
        (0, "IDLE+DRAIN", "Xid 48 on GPU 2", "root", 0, 3),
        (0, "DOWN*", "Not responding", "slurm", 0, 4),
        (2, "MIXED+DRAIN", "Reboot ASAP", "alice", 1, 6),
        (3, "MIXED+DRAIN", "Reboot ASAP", "alice", 2, 6),
        (4, "DRAIN+FAIL", "PSU failed|pipe", "bob", 3, 7),
        (4, "DOWN", "replaced PSU", "bob", 3, 8),
    ]
    assert run.tables["host_states"].filter(pl.col("host_id") == 1).rows() == [
        (1, "healthy", 0.0, 21600.0, None)
    ]
    summary = run.summary
    assert summary["skipped"] == {
        "cluster-level events (no NodeName)": 1,
        "node events in other states than DOWN, DRAIN or FAIL": 1,
    }
    assert summary["notes"] == [
        f"{tmp_path / 'events.txt'}: reasons holding a '|' (sacctmgr's separator, which it does not escape): 1,"
        " their fields joined back into the reason",
        f"{tmp_path / 'events.txt'}: times with no zone were read as UTC",
        GPU_NOTE,
    ]
    assert summary["formats"] == {str(tmp_path / "events.txt"): "slurm"}


def test_sacctmgr_parsable_with_a_trailing_separator_and_its_format_names(tmp_path):
    text = "NodeName|Start|End|State|User|Reason|\nn1|2025-03-01T00:00:00|2025-03-01T01:00:00|DRAIN|root(0)|a|b|\n"
    run = _ingest(tmp_path, "events.txt", text, fmt="slurm")
    assert run.tables["node_events"].select("reason", "user").rows() == [("a|b", "root")]


# ----- the cause map ------------------------------------------------------------------------------------------


def test_a_site_map_comes_first_and_may_fall_back_to_the_default(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(
        """fallback_to_default = true
[[rule]]
match = '(?i)^GFX-\\d+'
cause = "faulty_gpu"
field = "cause"
[[rule]]
match = 'window'
planned = true
field = "description"
[[rule]]
match = '(?i)mystery'
cause = "unknown"
"""
    )
    csv = (
        "node,start,end,cause,description\n"
        "a,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,GFX-12,PSU\n"  # the site's rule 1, not the default's PSU
        "b,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,other,maintenance window\n"  # rule 2 on the description
        "c,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,window,\n"  # rule 2 reads descriptions only: default
        "d,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,mystery PSU,\n"  # rule 3 stops the default's PSU
        "e,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,kernel panic,\n"  # the default's
    )
    run = _ingest(tmp_path, "t.csv", csv, causes=site)
    assert run.tables["incidents"]["cause"].to_list() == [
        "faulty_gpu",
        "planned_maintenance",
        "unknown",
        "unknown",
        "software_bug",
    ]
    assert run.summary["causes"] == str(site)
    site.write_text(site.read_text().replace("fallback_to_default = true\n", ""))
    alone = _ingest(tmp_path, "t.csv", csv, causes=site)
    assert alone.tables["incidents"]["cause"].to_list()[-1] == "unknown"


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        (
            "match = '(?<=a)b'\ncause = 'cpu'",
            "look-around, including look-ahead and look-behind, is not supported",
        ),
        ("match = '(a)\\1'\ncause = 'cpu'", "backreferences are not supported"),
        ("match = '('\ncause = 'cpu'", "unclosed group"),
        ("match = '(a{1000}){1000}'\ncause = 'cpu'", "Compiled regex exceeds size limit of 10485760 bytes."),
    ],
)
def test_a_pattern_the_engine_cannot_run_is_an_error_naming_the_map_and_rule(tmp_path, rule, said):
    site = tmp_path / "site.toml"
    site.write_text(f"[[rule]]\nmatch = 'ok'\ncause = 'cpu'\n[[rule]]\n{rule}\n")
    with pytest.raises(GoodputError) as err:
        causes.load(site)
    message = str(err.value)
    assert message.startswith(f"{site}, rule 2: match ") and said in message and "\n" not in message


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            "[[rule]]\nmatch = 'x'\ncause = 'gpu_fell_off'",
            "rule 1: cause 'gpu_fell_off' is not one of faulty_gpu,",
        ),
        (
            "[[rule]]\nmach = 'x'\ncause = 'cpu'",
            "rule 1: unknown key 'mach' (keys: match, cause, planned, field)",
        ),
        (
            "[[rule]]\nmatch = 'x'\ncause = 'cpu'\nplanned = true",
            "rule 1: a planned rule's cause is planned_main",
        ),
        ("[[rule]]\nmatch = 'x'\ncause = 'cpu'\nfield = 'title'", "rule 1: field must be one of cause,"),
        ("[[rule]]\nmatch = ''\ncause = 'cpu'", "rule 1: match must be a regular expression"),
        ("rules = 1", "unknown key 'rules' (a map has rule and fallback_to_default)"),
        ("fallback_to_default = true", "no [[rule]] tables"),
        ("[[rule]\n", "not valid TOML"),
    ],
)
def test_a_bad_map_is_a_one_line_error(tmp_path, body, said):
    site = tmp_path / "site.toml"
    site.write_text(body + "\n")
    with pytest.raises(GoodputError) as err:
        causes.load(site)
    assert str(err.value).startswith(f"{site}") and said in str(err.value) and "\n" not in str(err.value)


def test_a_pattern_that_backtracks_elsewhere_runs_in_linear_time(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(
        "[[rule]]\nmatch = '^(a+)+$'\ncause = 'cpu'\n[[rule]]\nmatch = '(x+x+)+y'\ncause = 'ssd'\n"
    )
    text = "a" * (limits.MAX_EVENT_TEXT_CHARS - 2) + "!"  # 2^1022 paths for a backtracking engine
    csv = f"node,start,end,cause,description\nn1,2025-03-01T00:00:00Z,,{text},{'x' * 1000}\n"
    run = _ingest(tmp_path, "t.csv", csv, causes=site)
    assert run.tables["incidents"]["cause"].to_list() == ["unknown"]


def test_texts_are_cut_to_the_limit_and_xids_read_from_them(tmp_path):
    long = "NVRM: Xid (PCI:0000:3b:00): 95, pid=1 " + "x" * 5000
    run = _ingest(tmp_path, "t.csv", f'node,start,end,cause\nn1,2025-03-01T00:00:00Z,,"{long}"\n')
    reason = run.tables["node_events"]["reason"][0]
    assert len(reason) == limits.MAX_EVENT_TEXT_CHARS and reason.endswith("…")
    assert _incidents(run) == [(0, 0.0, None, "gpu_hbm3", "GPU", False, 95, 0)]


def test_the_default_map_names_slurm_reasons_and_ticket_words():
    rules = causes.load(None)
    texts = {
        "Xid 79 on GPU 3": "faulty_gpu",
        "XID:64 row remap failure": "gpu_hbm3",
        "xid=119": "gpu_system_processor",
        "Not responding": "unknown",
        "Node unexpectedly rebooted boot_time=1740787200 last response=1740787100": "unknown",
        "Reboot ASAP": "planned_maintenance",
        "burn-in after repair": "planned_maintenance",
        "unplanned maintenance": "host_maintenance",
        "Low RealMemory": "system_memory",
        "gres/gpu count reported lower than configured (7 < 8)": "faulty_gpu",
        "Kill task failed": "software_bug",
        "NHC: check_hw_ib: mlx5_0 port 1 down": "nic",
        "transceiver replaced": "network_switch_cable",
        "PSU 2 failed": "power_supply",
        "nvme1n1 I/O errors": "ssd",
        "DIMM B3 uncorrectable": "system_memory",
        "kernel panic - not syncing": "software_bug",
        "CPU 12 machine check": "cpu",
        "HBM ECC double-bit": "gpu_hbm3",
        "SRAM parity": "gpu_sram",
        "GPU overheating": "gpu_thermal",
        "NCCL watchdog timeout": "nccl_watchdog_timeout",
        "lustre mount hung": "dependency",
        "riser card": "io_expansion_board",
        "fan failure": "server_chassis",
        "GPU 4 fell off the bus": "faulty_gpu",
        "H100 swap": "faulty_gpu",
        "whatever": "unknown",
    }
    events = pl.DataFrame({"reason": list(texts), "description": [None] * len(texts)})
    assert dict(rules.classify(events).select("reason", "cause").iter_rows()) == texts


# ----- the fleet ------------------------------------------------------------------------------------------------


def test_nodes_pads_the_fleet_with_unseen_hosts(tmp_path):
    run = _ingest(tmp_path, "tickets.csv", TICKETS_CSV, nodes=8, gpus_per_node=4)
    assert run.tables["hosts"]["hostname"].to_list()[5:] == ["unseen-00001", "unseen-00002", "unseen-00003"]
    assert run.tables["gpus"].height == 32 and run.summary["gpus_per_node"] == 4
    assert (run.summary["nodes_seen"], run.summary["nodes_added"], run.summary["hosts"]) == (5, 3, 8)
    assert run.summary["notes"] == [
        "3 nodes never named by an event added to make --nodes 8 (unseen-00001 and on): out of service never"
    ]
    unseen = run.tables["host_states"].filter(pl.col("host_id") >= 5)
    assert unseen.select("host_id", "state", "start_s", "end_s").rows() == [
        (h, "healthy", 0.0, 216000.0) for h in (5, 6, 7)
    ]
    with pytest.raises(GoodputError, match=r"^--nodes 4: the events name 5 nodes, more than that$"):
        _ingest(tmp_path, "tickets.csv", TICKETS_CSV, nodes=4)
    with pytest.raises(GoodputError, match=r"^--gpus-per-node: must be from 1 to 72"):
        _ingest(tmp_path, "tickets.csv", TICKETS_CSV, gpus_per_node=0)


# ----- bad input --------------------------------------------------------------------------------------------------


def _error(tmp_path: Path, name: str, data: str | bytes, **options) -> str:
    with pytest.raises(GoodputError) as err:
        _ingest(tmp_path, name, data, **options)
    message = str(err.value)
    assert "\n" not in message
    return message.replace(str(tmp_path) + "/", "")


HEAD = "node,start,end,cause,description\n"


def test_a_missing_column_names_the_columns_a_file_has(tmp_path):
    assert _error(tmp_path, "t.csv", "host,start,end\nn1,1740787200,\n") == (
        "t.csv: no column 'node' (a tickets file has node, start, end and, where known, cause and description;"
        " this one has 'host', 'start', 'end')"
    )
    assert _error(tmp_path, "t.jsonl", '{"host": "n1", "start": 1740787200}\n') == (
        "t.jsonl: no line has the key 'node' (need node, start, end)"
    )


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            "n1,2025-13-01T00:00:00Z,,x\n",
            "line 2, column 'start': '2025-13-01T00:00:00Z' is not a time (ISO 8601",
        ),
        ("n1,2025-02-29T00:00:00Z,,x\n", "line 2, column 'start': '2025-02-29T00:00:00Z' is not a time"),
        ("n1,1740787200,yesterday,x\n", "line 2, column 'end': 'yesterday' is not a time"),
        ("n1,,,x\n", "line 2, column 'start': empty (every event needs its start)"),
        ("n1,1740787200000,,x\n", "line 2, column 'start': '1740787200000' is not a time"),
        (
            "n1,1999-12-31T23:59:59Z,,x\n",
            "line 2, column 'start': '1999-12-31T23:59:59Z' is before 2000-01-01",
        ),
        (
            "n1,2027-01-01T00:00:00Z,,x\n",
            "line 2, column 'start': '2027-01-01T00:00:00Z' is more than 86,400 s ahead",
        ),
        ("n[1-,1740787200,,x\n", "line 2, column 'node': 'n[1-' is not Slurm hostlist syntax"),
    ],
)
def test_a_value_that_is_not_a_time_names_file_line_and_column(tmp_path, body, said):
    message = _error(tmp_path, "t.csv", HEAD + "n0,1740787200,,x\n" + body)
    assert message.startswith("t.csv, line 3, column") and said.replace("line 2", "line 3") in message


def test_a_zoneless_time_beside_zoned_ones_is_an_error(tmp_path):
    body = "n1,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,x\nn2,2025-03-01T00:00:00,,x\n"
    assert _error(tmp_path, "t.csv", HEAD + body) == (
        "t.csv, line 3, column 'start': '2025-03-01T00:00:00' names no time zone, but the file's other times do"
        " (line 2, column 'start'): give each time its zone (Z, +02:00)"
    )


def test_backwards_and_duplicate_events_are_skipped_counted_and_named(tmp_path):
    body = (
        "n1,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,xid 79,\n"
        "n1,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,xid 79,again\n"  # the same node, start and end
        "n2,2025-03-01T05:00:00Z,2025-03-01T04:00:00Z,PSU,\n"  # ends before it starts
        ",2025-03-01T05:00:00Z,,PSU,\n"  # no node
        "n3,2025-03-01T05:00:00Z,2025-03-01T06:00:00Z,PSU,\n"
    )
    run = _ingest(tmp_path, "t.csv", HEAD + body)
    assert run.summary["skipped"] == {
        "tickets without a node": 1,
        "events ending before they start": 1,
        "duplicate events (the same node, start and end as an earlier one)": 1,
    }
    where = tmp_path / "t.csv"
    assert run.summary["notes"][:2] == [
        f"skipped 1 events ending before they start: the first is {where}, line 4",
        f"skipped 1 duplicate events (the same node, start and end as an earlier one): the first is {where}, line 3",
    ]
    assert run.tables["hosts"]["hostname"].to_list() == ["n1", "n2", "n3"]  # n2 is in the fleet all the same
    assert run.tables["incidents"]["host_id"].to_list() == [0, 2]


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "huge.csv"
    with big.open("wb") as f:
        f.write(HEAD.encode())
        f.truncate(10 * 1024**3)  # 10 GB, sparse: nothing is written
    with pytest.raises(GoodputError, match=r"huge.csv: more than 1,073,741,824 bytes, over Goodput's limit"):
        ingest_node_events([big], now=NOW)


def test_more_events_than_the_limit_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_NODE_EVENTS", 3)
    body = "".join(f"n{i},1740787200,,x,\n" for i in range(4))
    assert "over Goodput's limit of 4 lines in one node-events file" in _error(tmp_path, "t.csv", HEAD + body)
    lines = "".join(json.dumps({"node": f"n{i}", "start": T0}) + "\n" for i in range(4))
    assert _error(tmp_path, "t.jsonl", lines) == (
        "t.jsonl: more than 3 events, over Goodput's limit (engine/limits.py MAX_NODE_EVENTS); split the history"
        " into several runs"
    )
    assert "names so many nodes that the events pass Goodput's limit of 3" in _error(
        tmp_path, "t.csv", HEAD + "n[1-9],1740787200,,x,\n"
    )


def test_a_json_line_that_is_no_object_is_named(tmp_path):
    good = json.dumps({"node": "n1", "start": T0})
    assert _error(tmp_path, "t.jsonl", f"{good}\n[1, 2]\n") == (
        "t.jsonl, line 2: not a JSON object (a ticket is one object a line)"
    )
    assert _error(tmp_path, "t.jsonl", f'{good}\n{{"node": \n').startswith("t.jsonl, line 2: not JSON (")


def test_nothing_to_ingest_is_an_error(tmp_path):
    assert _error(tmp_path, "t.csv", HEAD + ",1740787200,,x\n") == (
        "t.csv: nothing to ingest (no event of a node down, drained or failed); skipped 1 tickets without a node"
    )


# ----- the command line -------------------------------------------------------------------------------------------


def test_the_command_prints_a_summary_and_the_next_step(tmp_path, capsys):
    path = tmp_path / "tickets.csv"
    path.write_text(TICKETS_CSV)
    assert main(["ingest", "node-events", str(path), "--store", str(tmp_path / "s"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {"run_id", "hosts", "gpus", "samples", "xid_events"} <= set(printed)
    store = Store(tmp_path / "s")
    assert store.table(printed["run_id"], "node_events").height == 6
    assert store.table(printed["run_id"], "incidents").height == 6
    assert (
        main(["ingest", "node-events", str(path), "--store", str(tmp_path / "s"), "--name", "history"]) == 0
    )
    text = capsys.readouterr().out
    run_id = text.split()[1].rstrip(":")
    assert text.splitlines()[0] == (
        f"run {run_id}: 6 outages from 6 node events over 2.5 days (2025-03-01T00:00:00Z to 2025-03-03T12:00:00Z)"
    )
    assert "  unknown: 1 of 6 outages (16.7%) named by no rule of the cause map (default)" in text
    assert text.rstrip().endswith(f"next: goodput calibrate --run {run_id}")


def test_a_bad_input_writes_nothing(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text(HEAD + "n1,1740787200,,x\nn2,soon,,x\n")
    assert main(["ingest", "node-events", str(path), "--store", str(tmp_path / "s")]) == 2
    assert capsys.readouterr().err == (
        f"goodput: error: {path}, line 3, column 'start': 'soon' is not a time (ISO 8601 such as"
        " 2025-03-01T12:00:00Z, or Unix seconds)\n"
    )
    assert Store(tmp_path / "s").run_ids() == []


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["ingest", "dcgm", "x.prom", "--causes", "m.toml"],
            "--causes: only `goodput ingest node-events` reads it",
        ),
        (["ingest", "kernel-log", "x.log", "--slurm"], "--slurm: only `goodput ingest node-events` reads it"),
        (["ingest", "node-events", "x.csv", "--slurm"], "--slurm: give FILEs or --slurm, not both"),
        (["ingest", "node-events", "x.csv", "--since", "1d"], "--since: only with --slurm"),
        (
            ["ingest", "node-events", "x.csv", "--year", "2025"],
            "--year: `goodput ingest node-events` has no use",
        ),
        (
            ["ingest", "node-events"],
            "ingest node-events: give at least one FILE (or --slurm to ask slurmdbd)",
        ),
    ],
)
def test_flags_of_another_source_are_refused(tmp_path, capsys, argv, said):
    assert main([*argv, "--store", str(tmp_path / "s")]) == 2
    assert said in capsys.readouterr().err


# ----- Hypothesis -------------------------------------------------------------------------------------------------

OFFSETS = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timedelta(minutes=m))


@settings(max_examples=200)
@given(
    moment=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)),
    offset=OFFSETS,
    separator=st.sampled_from(["T", " "]),
    style=st.sampled_from(["Z", "+hh:mm", "+hhmm", "none", "unix"]),
)
def test_the_time_parser_agrees_with_python(moment, offset, separator, style):
    zone = timezone(offset)
    aware = moment.replace(tzinfo=zone)
    if style == "unix":
        text, zoned = repr(aware.timestamp()), None
    elif style == "none":
        text, zoned = moment.isoformat(sep=separator), False
        aware = moment.replace(tzinfo=UTC)
    elif style == "Z":
        aware = moment.replace(tzinfo=UTC)
        text, zoned = moment.isoformat(sep=separator) + "Z", True
    else:
        text, zoned = aware.isoformat(sep=separator), True
        if style == "+hhmm":
            text = text[:-3] + text[-2:]
    parsed = parse_text(pl.Series([text])).row(0, named=True)
    expected = round(aware.timestamp() * 1_000_000) if style == "unix" else _micros(aware)
    assert parsed == {"us": expected, "zoned": zoned, "given": True, "ok": True}, text


def _micros(aware: datetime) -> int:
    delta = aware - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@settings(max_examples=200)
@given(st.text(max_size=40))
def test_the_time_parser_never_fails_on_text(text):
    row = parse_text(pl.Series([text]), open_words=True).row(0, named=True)
    assert row["ok"] == (row["us"] is not None)


EVENT = st.tuples(
    st.sampled_from(["a", "b", "c", "d"]),
    st.integers(min_value=0, max_value=200),
    st.one_of(st.none(), st.integers(min_value=0, max_value=60)),
)


@settings(max_examples=100)
@given(st.lists(EVENT, min_size=1, max_size=30), st.integers(min_value=4, max_value=6))
def test_tables_keep_their_invariants(events, nodes):
    rows = "".join(
        f"{node},{T0 + 60 * start},{'' if length is None else T0 + 60 * (start + length)},xid 79,\n"
        for node, start, length in events
    )
    run = ingest_node_events([("h.csv", HEAD + rows)], nodes=nodes, now=NOW)
    hosts = run.tables["hosts"]
    states = run.tables["host_states"]
    incidents = run.tables["incidents"]
    assert hosts["host_id"].to_list() == list(range(nodes))
    assert set(incidents["host_id"].to_list()) <= set(hosts["host_id"].to_list())
    if run.duration_s == 0:  # one open event alone: a window of an instant, no interval in it
        assert states.is_empty()
        return
    for host_id in range(nodes):
        mine = states.filter(pl.col("host_id") == host_id).sort("start_s")
        assert mine["start_s"][0] == 0.0 and mine["end_s"][-1] == run.duration_s
        assert (mine["start_s"].shift(-1).drop_nulls() == mine["end_s"].head(mine.height - 1)).all()
        assert (mine["end_s"] > mine["start_s"]).all()
        down = mine.filter(pl.col("state") == "down")
        outages = incidents.filter(pl.col("host_id") == host_id).sort("t_s")
        lasting = outages.filter(pl.col("repaired_s").fill_null(run.duration_s) > pl.col("t_s"))
        assert down["start_s"].to_list() == lasting["t_s"].to_list()  # touching outages merged: each shows
        assert down["end_s"].to_list() == lasting["repaired_s"].fill_null(run.duration_s).to_list()
    joined = run.tables["node_events"].join(incidents, on="incident_id", how="left")
    assert (joined["host_id"] == joined["host_id_right"]).all()
    assert (joined["start_s"] >= joined["t_s"]).all()
    assert sorted(incidents["incident_id"].to_list()) == list(range(incidents.height))


def test_the_shipped_example_reads_cleanly():
    root = Path(__file__).resolve().parent.parent / "data" / "node-events"
    run = ingest_node_events([root / "tickets-example.csv"], causes=root / "causes-example.toml", now=NOW)
    summary = run.summary
    assert summary["skipped"] == {} and summary["open"] >= 1 and 0 < summary["unknown"] < summary["incidents"]
    starts = run.tables["incidents"]["t_s"].sort()
    assert (starts.diff().drop_nulls() < 60).sum() >= 3  # a burst
    assert os.path.getsize(root / "tickets-example.csv") < 10_000


def test_a_history_longer_than_a_run_may_be_is_refused(tmp_path):
    body = "n1,2000-01-02T00:00:00Z,2000-01-02T01:00:00Z,x\nn1,2011-01-02T00:00:00Z,,x\n"
    assert _error(tmp_path, "t.csv", HEAD + body) == (
        "t.csv, line 3: 2011-01-02T00:00:00Z is 4,018 days after the earliest start (2000-01-02T00:00:00Z); a run"
        " may span at most 3,650 days (engine/limits.py MAX_RUN_DAYS)"
    )


def test_slurm_is_asked_for_the_window_which_widens_to_outages_under_way(tmp_path):
    """A stand-in sacctmgr (the real one: tests/test_ingest_node_events_slurm.py) answering with an outage that
    began before the window asked."""
    fake = tmp_path / "sacctmgr"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" > {tmp_path}/args\n'
        "echo 'NodeName|TimeStart|TimeEnd|State|User|Reason'\n"
        "echo 'n1|2025-12-31T22:00:00|2026-01-01T01:00:00|DOWN|root(0)|Xid 79'\n"
        "echo 'n2|2025-12-31T23:30:00|Unknown|DRAIN|root(0)|PSU'\n"
    )
    fake.chmod(0o755)
    from engine.ingest.slurm import SlurmSource

    run = ingest_node_events(slurm=SlurmSource(bin_dir=str(tmp_path)), since_s=3 * 3600, now=NOW + 7200)
    assert (tmp_path / "args").read_text().split() == [
        "--parsable2",
        "show",
        "event",
        "event=node",
        "start=2025-12-31T23:00:00",
        "end=2026-01-01T02:00:00",
        "format=NodeName,TimeStart,TimeEnd,State,User,Reason",
    ]
    assert run.started_at == datetime(2025, 12, 31, 22, tzinfo=UTC) and run.duration_s == 4 * 3600
    assert _incidents(run) == [
        (0, 0.0, 3 * 3600.0, "faulty_gpu", "GPU", False, 79, 0),
        (1, 5400.0, None, "power_supply", "Host", False, None, 1),
    ]
    assert run.summary["notes"] == [
        GPU_NOTE,
        "outages under way when the window asked for began: the run starts at the earliest, 2025-12-31T22:00:00Z",
    ]  # no note on zones: sacctmgr ran with TZ=UTC
    assert run.name == "node-events: slurmdbd" and run.summary["formats"] == {"sacctmgr show event": "slurm"}


def test_a_parquet_file_that_is_broken_or_holds_no_times_is_named(tmp_path):
    assert _error(tmp_path, "t.parquet", b"PAR1 and then nothing of Parquet").startswith(
        "t.parquet: not a readable Parquet file ("
    )
    path = tmp_path / "flags.parquet"
    pl.DataFrame({"node": ["n1"], "start": [True], "end": [None]}).write_parquet(path)
    with pytest.raises(GoodputError) as err:
        ingest_node_events([path], now=NOW)
    assert str(err.value) == (
        f"{path}, column 'start': a column of Boolean is not a time (a timestamp, a date, Unix seconds or text)"
    )
