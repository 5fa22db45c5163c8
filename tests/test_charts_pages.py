"""The page chart builders (frames in, Plotly figures out), and `pages_run`: a small hand-made consistent run
that the page tests (tests/test_page_*.py) write to a store and open.

The run: 1 day, 2 rows x 2 racks x 2 hosts x 2 GPUs; a flagship job interrupted once by a faulty GPU and once
by planned maintenance; a research job hit by a network cable; host 1 (GPU 3) fails twice: the lemon.
"""

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.charts import compare, gpus, incidents, jobs, network, planner, racks
from engine.analysis.analytics import closed_form_ettr, young_daly_interval
from engine.report.palette import (
    CATEGORY_COLOURS,
    END_REASON_COLOURS,
    GPU_FAILED_COLOUR,
    HOST_STATE_COLOURS,
    xid_colour,
)
from engine.scenario import build
from engine.store import Store
from engine.store.run import Run

STARTED = datetime(2024, 3, 1, tzinfo=UTC)
DAY = 86400.0


def _host_states() -> pl.DataFrame:
    rows = []  # (host_id, state, start_s, end_s, job_id)
    for host in range(4):  # the flagship job's hosts
        rows.append((host, "running", 0.0, 20000.0, "j-flag"))
    rows += [
        (0, "running", 21000.0, DAY, "j-flag"),
        (2, "running", 21000.0, DAY, "j-flag"),
        (3, "running", 21000.0, DAY, "j-flag"),
        (7, "spare", 0.0, 21000.0, None),
        (7, "running", 21000.0, DAY, "j-flag"),
    ]
    rows += [
        (1, "draining", 20000.0, 20100.0, None),
        (1, "diagnosing", 20100.0, 21000.0, None),
        (1, "repair", 21000.0, 39000.0, None),
        (1, "burn_in", 39000.0, 40000.0, None),
        (1, "healthy", 40000.0, 70000.0, None),
        (1, "down", 70000.0, 72000.0, None),
        (1, "repair", 72000.0, DAY, None),
    ]
    rows += [
        (4, "running", 1000.0, 40000.0, "j-r1"),
        (5, "running", 1000.0, 40000.0, "j-r1"),
        (4, "healthy", 40000.0, DAY, None),
        (5, "healthy", 40000.0, DAY, None),
        (4, "healthy", 0.0, 1000.0, None),
        (5, "healthy", 0.0, 1000.0, None),
        (6, "healthy", 0.0, 5000.0, None),
        (6, "running", 5000.0, 30000.0, "j-r2"),
        (6, "healthy", 30000.0, 31000.0, None),
        (6, "running", 31000.0, 60000.0, "j-r2"),
        (6, "healthy", 60000.0, DAY, None),
    ]
    host, state, start, end, job = zip(*rows, strict=True)
    return pl.DataFrame(
        {"host_id": host, "state": state, "start_s": start, "end_s": end, "job_id": job},
        schema_overrides={"host_id": pl.Int32},
    )


def _incidents() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "incident_id": [1, 2, 3, 4],
            "t_s": [20000.0, 30000.0, 50000.0, 70000.0],
            "detected_s": [20030.0, 30600.0, 50000.0, 70010.0],
            "mitigated_s": [21000.0, 31000.0, 51000.0, 70100.0],
            "repaired_s": [40000.0, 30900.0, 51000.0, None],
            "cause": ["faulty_gpu", "network_switch_cable", "planned_maintenance", "gpu_hbm3"],
            "category": ["GPU", "Network", "Planned", "GPU"],
            "planned": [False, False, True, False],
            "xid": [79, None, None, 48],
            "host_id": [1, 6, None, 1],
            "gpu_id": [3, None, None, 3],
            "link_id": [None, 18, None, None],
            "jobs_hit": [1, 1, 1, 0],
            "gpu_hours_lost": [8 * 1600 / 3600, 2 * 2200 / 3600, 8 * 1000 / 3600, 0.0],
            "job_ids": [["j-flag"], ["j-r2"], ["j-flag"], []],
        },
        schema_overrides={
            "xid": pl.Int32,
            "host_id": pl.Int32,
            "gpu_id": pl.Int32,
            "link_id": pl.Int32,
            "jobs_hit": pl.Int32,
            "incident_id": pl.Int32,
        },
    )


def _attempts() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "job_id": ["j-flag", "j-flag", "j-flag", "j-r1", "j-r2", "j-r2"],
            "attempt": [1, 2, 3, 1, 1, 2],
            "start_s": [0.0, 21000.0, 51000.0, 1000.0, 5000.0, 31000.0],
            "end_s": [20000.0, 50000.0, DAY, 40000.0, 30000.0, 60000.0],
            "end_reason": [
                "faulty_gpu",
                "planned_maintenance",
                "end_of_run",
                "completed",
                "network_switch_cable",
                "completed",
            ],
            "lost_work_s": [600.0, 0.0, 0.0, 0.0, 1200.0, 0.0],
            "hosts": [[0, 1, 2, 3], [0, 2, 3, 7], [0, 2, 3, 7], [4, 5], [6], [6]],
        },
        schema_overrides={"hosts": pl.List(pl.Int32), "attempt": pl.Int32},
    )


def _checkpoints() -> pl.DataFrame:
    starts = np.concatenate(
        [
            np.arange(1800.0, 20000.0, 1800.0),
            np.arange(22800.0, 50000.0, 1800.0),
            np.arange(52800.0, DAY, 1800.0),
        ]
    )
    return pl.DataFrame({"job_id": ["j-flag"] * starts.size, "start_s": starts, "end_s": starts + 5.0})


def _gpu_samples() -> pl.DataFrame:
    t = np.arange(0.0, DAY, 900.0)
    frames = []
    for gpu in (0, 3):
        busy = (t < 20000.0) | ((gpu == 0) & (t >= 21000.0))
        frames.append(
            pl.DataFrame(
                {
                    "t_s": t,
                    "gpu_id": np.full(t.size, gpu, dtype=np.int32),
                    "temp_c": np.where(busy, 70.0, 35.0).astype(np.float32),
                    "power_w": np.where(busy, 650.0, 90.0).astype(np.float32),
                    "util_pct": np.where(busy, 98.0, 0.0).astype(np.float32),
                    "mem_util_pct": np.where(busy, 80.0, 0.0).astype(np.float32),
                    "ecc_sbe": np.zeros(t.size, dtype=np.int32),
                    "ecc_dbe": np.zeros(t.size, dtype=np.int32),
                }
            )
        )
    return pl.concat(frames)


def _links() -> pl.DataFrame:
    tiers = ["gpu_rtsw"] * 16 + ["rtsw_ctsw"] * 4 + ["ctsw_atsw"] * 2
    capacity = [400.0] * 16 + [3200.0] * 4 + [1600.0] * 2
    return pl.DataFrame(
        {
            "link_id": np.arange(22, dtype=np.int32),
            "tier": tiers,
            "a": [f"a{i}" for i in range(22)],
            "b": [f"b{i}" for i in range(22)],
            "capacity_gbps": capacity,
        }
    )


def _link_samples() -> pl.DataFrame:
    t = np.repeat(np.arange(0.0, DAY, 3600.0), 22)
    link = np.tile(np.arange(22, dtype=np.int32), 24)
    return pl.DataFrame(
        {
            "t_s": t,
            "link_id": link,
            "util_pct": (10.0 + link).astype(np.float32),
            "errors": np.zeros(t.size, dtype=np.int32),
        }
    )


def pages_run(name: str = "pages", *, link_telemetry: bool = False, preset_sets: tuple[str, ...] = ()) -> Run:
    """A small consistent run with every table the pages read (link_samples only if `link_telemetry`)."""
    host = np.arange(8, dtype=np.int32)
    rack = host // 2
    hosts = pl.DataFrame(
        {
            "host_id": host,
            "hostname": [f"host-{h:03d}" for h in host],
            "rack_id": rack,
            "pod_id": np.zeros(8, dtype=np.int32),
            "row": rack // 2,
            "position": rack % 2,
            "slot": host % 2,
        }
    )
    gpu = np.arange(16, dtype=np.int32)
    gpus_frame = pl.DataFrame(
        {
            "gpu_id": gpu,
            "host_id": gpu // 2,
            "index": (gpu % 2).astype(np.int16),
            "uuid": [f"GPU-{g:04d}" for g in gpu],
            "model": ["H100-SXM5-80GB"] * 16,
        }
    )
    job_frame = pl.DataFrame(
        {
            "job_id": ["j-flag", "j-r1", "j-r2", "j-r3"],
            "name": ["demo-pretrain", "sweep-a", "eval-b", "queued-c"],
            "gpus": [8.0, 4.0, 2.0, 16.0],
            "priority": [10, 1, 1, 1],
            "submit_s": [0.0, 500.0, 4000.0, 60000.0],
            "start_s": [0.0, 1000.0, 5000.0, None],
            "end_s": [DAY, 40000.0, 60000.0, None],
            "state": ["running", "completed", "completed", "pending"],
            "user": ["llm", "ana", "bo", "cy"],
            "kind": ["flagship", "research", "research", "research"],
        }
    )
    xid = pl.DataFrame(
        {
            "t_s": [20000.0, 69000.0, 70000.0],
            "gpu_id": [3, 3, 3],
            "host_id": [1, 1, 1],
            "xid": [79, 63, 48],
            "incident_id": [1, None, 4],
            "message": ["fallen off the bus", "row remap", "DBE"],
        },
        schema_overrides={"gpu_id": pl.Int32, "host_id": pl.Int32, "xid": pl.Int32, "incident_id": pl.Int32},
    )
    tables = {
        "hosts": hosts,
        "gpus": gpus_frame,
        "links": _links(),
        "jobs": job_frame,
        "job_attempts": _attempts(),
        "checkpoints": _checkpoints(),
        "incidents": _incidents(),
        "host_states": _host_states(),
        "gpu_samples": _gpu_samples(),
        "xid_events": xid,
    }
    if link_telemetry:
        tables["link_samples"] = _link_samples()
    scenario = build("demo", sets=list(preset_sets))
    summary = {
        "gpus": 16,
        "hosts": 8,
        "days": 1,
        "seed": 7,
        "interruptions": {"total": 2, "planned": 1, "unexpected": 1, "by_cause": {"faulty_gpu": 1}},
        "job": {
            "name": "demo-pretrain",
            "gpus": 8,
            "ettr": 0.93,
            "mttf_hours": 5.5,
            "checkpoints": 46,
            "lost_gpu_hours": 5.8,
        },
        "cluster": {"gpu_hours": 384.0, "gpu_hours_down": 40.0, "utilization": 0.7},
    }
    return Run(
        kind="simulate",
        name=name,
        started_at=STARTED,
        duration_s=DAY,
        scenario=scenario.to_dict(),
        seed=7,
        summary=summary,
        tables=tables,
    )


# ----- time helper --------------------------------------------------------------------------------------


def test_as_time_maps_seconds_to_utc_dates():
    times = jobs.as_time(STARTED, [0.0, 90.0, DAY])
    assert [str(t) for t in times] == [
        "2024-03-01T00:00:00.000",
        "2024-03-01T00:01:30.000",
        "2024-03-02T00:00:00.000",
    ]


# ----- racks --------------------------------------------------------------------------------------------


def test_floor_plan_places_each_host_in_its_rack_cell_with_its_state_colour():
    cells = pl.DataFrame(
        {
            "hostname": ["a", "b", "c"],
            "rack_id": [0, 0, 3],
            "row": [0, 0, 1],
            "position": [0, 0, 1],
            "slot": [0, 1, 0],
            "state": ["running", "repair", None],
        }
    )
    fig = racks.floor_plan(cells)
    heat = fig.data[0]
    assert isinstance(heat, go.Heatmap) and len([t for t in fig.data if isinstance(t, go.Heatmap)]) == 1
    z = np.asarray(heat.z)
    assert z.shape == (6, 2)  # 2 rows x (2 slots + a blank line), 2 positions
    order = racks.STATE_ORDER
    # row 0 on top; in a rack slot 0 at the bottom: host a (slot 0) on line 1, host b (slot 1) on line 0
    assert z[1, 0] == order.index("running") and z[0, 0] == order.index("repair")
    assert z[4, 1] == order.index("unknown")
    assert np.isnan(z[2]).all() and np.isnan(z[0, 1])  # the blank line between rows, an empty position
    assert heat.text[0][0] == "b · rack 0 · In repair"  # states in words (engine.report.palette)
    # the discrete scale gives each code its state colour
    scale = {round(stop, 6): colour for stop, colour in heat.colorscale}
    n = len(order)
    assert scale[round(order.index("repair") / n, 6)] == racks.STATE_COLOURS["repair"]
    assert {t.name for t in fig.data[1:-1]} == {"Running a job", "In repair", "No state recorded"}
    # the rack handles: one clickable dot in the middle of each rack, its hover naming the rack's hosts
    handles = fig.data[-1]
    assert handles.name == racks.RACK_HANDLES
    assert list(handles.customdata) == [0, 3] and list(handles.x) == [0, 1] and list(handles.y) == [0.5, 3.5]
    assert handles.text[0] == (
        "<b>rack 0</b> (click to open)<br>row 0, position 0<br>b: In repair<br>a: Running a job"
    )  # top slot first


def test_floor_plan_of_gpus_puts_a_hosts_gpus_side_by_side():
    cells = pl.DataFrame(
        {
            "hostname": ["a", "a", "b", "b"],
            "rack_id": [0, 0, 1, 1],
            "row": [0, 0, 0, 0],
            "position": [0, 0, 1, 1],
            "slot": [0, 0, 0, 0],
            "gpu_index": [0, 1, 0, 1],
            "state": ["running", "failed", "spare", "spare"],
        }
    )
    fig = racks.floor_plan(cells)
    z = np.asarray(fig.data[0].z)
    order = racks.STATE_ORDER
    assert z.shape == (2, 6)  # 2 racks x (2 GPUs + a blank column)
    assert list(z[0]) == pytest.approx(
        [
            order.index("running"),
            order.index("failed"),
            np.nan,
            order.index("spare"),
            order.index("spare"),
            np.nan,
        ],
        nan_ok=True,
    )
    assert fig.data[0].text[0][1] == "a · rack 0 · GPU 1 · Failed GPU"
    assert list(fig.layout.xaxis.tickvals) == [0.5, 3.5]  # each rack's label under the middle of its GPUs
    assert list(fig.data[-1].x) == [0.5, 3.5] and list(fig.data[-1].customdata) == [0, 1]
    assert fig.data[-1].text[0].endswith("<br>a: Running a job, 1 GPU failed")


def test_clicked_rack_reads_a_plotly_selection():
    assert racks.clicked_rack(None) is None
    assert racks.clicked_rack({"points": []}) is None
    point = {"curve_number": 5, "point_index": 1, "x": 1.0, "y": 3.5, "customdata": 3}
    assert racks.clicked_rack({"points": [point]}) == 3
    assert racks.clicked_rack({"points": [{"curve_number": 0, "x": 2, "y": 1}, point]}) == 3  # a heatmap cell
    assert racks.clicked_rack(type("Selection", (), {"points": [point]})()) == 3  # attribute access too


def test_state_history_draws_one_bar_per_interval_in_state_colours():
    intervals = pl.DataFrame(
        {
            "hostname": ["a", "a", "b"],
            "state": ["running", "repair", "running"],
            "start_s": [0.0, 3600.0, 0.0],
            "end_s": [3600.0, 7200.0, 7200.0],
            "job_id": ["j", None, "j"],
        }
    )
    fig = racks.state_history(intervals, STARTED)
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"Running a job", "In repair"}
    assert list(by_name["Running a job"].x) == [3600000.0, 7200000.0]
    assert by_name["In repair"].marker.color == racks.STATE_COLOURS["repair"]
    assert str(by_name["In repair"].base[0]) == "2024-03-01T01:00:00.000"


# ----- jobs ---------------------------------------------------------------------------------------------


def test_gantt_colours_attempts_by_how_they_ended_and_marks_failures():
    attempts = _attempts().with_columns(pl.col("job_id").alias("label"))
    fig = jobs.attempts_gantt(attempts, STARTED, ["j-flag", "j-r1", "j-r2"])
    bars = {t.name: t for t in fig.data if isinstance(t, go.Bar) and t.name != "Restarting or requeued"}
    assert set(bars) == {"Failure", "Planned maintenance", "Still running at the end of the run", "Completed"}
    assert list(bars["Failure"].y) == ["j-flag", "j-r2"]
    assert bars["Failure"].marker.color == END_REASON_COLOURS["failure"]
    marks = [t for t in fig.data if isinstance(t, go.Scatter)][0]
    assert [str(x) for x in marks.x] == ["2024-03-01T05:33:20.000", "2024-03-01T08:20:00.000"]
    assert list(marks.text) == ["Faulty GPU", "Network switch/cable"]  # words, not keys
    assert list(fig.layout.yaxis.categoryarray) == ["j-r2", "j-r1", "j-flag"]  # the first row on top
    assert list(fig.layout.yaxis.range) == [-0.6, 2.6]  # no empty band above or below the rows
    assert list(bars["Failure"].customdata) == ["j-flag", "j-r2"] and list(marks.customdata) == [
        "j-flag",
        "j-r2",
    ]
    assert jobs.clicked_job({"points": [{"curve_number": 1, "customdata": "j-r2"}]}) == "j-r2"
    assert jobs.clicked_job({"points": []}) is None and jobs.clicked_job(None) is None


# ----- gpus ---------------------------------------------------------------------------------------------


def test_gpu_health_and_xid_charts():
    fig = gpus.health_counts(pl.DataFrame({"state": ["running", "failed"], "gpus": [14, 2]}))
    assert list(fig.data[0].y) == [14, 2]
    assert list(fig.data[0].marker.color) == [HOST_STATE_COLOURS["running"], GPU_FAILED_COLOUR]
    fig = gpus.xid_counts(pl.DataFrame({"xid": [79, 63], "events": [5, 2]}))
    assert list(fig.data[0].y) == ["79 GPU_HAS_FALLEN_OFF_THE_BUS", "63 DRAM_RETIREMENT_EVENT"]
    assert list(fig.data[0].marker.color) == [
        xid_colour(79),
        xid_colour(63),
    ]  # engine.report.palette's, as everywhere


def test_gpu_telemetry_has_a_panel_per_metric_and_the_tdp_line():
    samples = _gpu_samples().filter(pl.col("gpu_id") == 3)
    fig = gpus.gpu_telemetry(samples, STARTED, tdp_w=700.0)
    assert len(fig.data) == 3
    assert fig.data[1].y[0] == pytest.approx(650.0) and fig.data[1].y[-1] == pytest.approx(90.0)
    assert [s.y0 for s in fig.layout.shapes] == [700.0]


def test_offender_history_one_trace_per_cause_in_category_colours():
    frame = pl.DataFrame(
        {"label": ["host-001", "host-001"], "t_s": [20000.0, 70000.0], "cause": ["faulty_gpu", "gpu_hbm3"]}
    )
    frame = pl.concat([frame, pl.DataFrame({"label": ["host-009"], "t_s": [100.0], "cause": ["nic"]})])
    fig = gpus.offender_history(frame, STARTED)
    assert [t.name for t in fig.data] == ["Faulty GPU", "GPU HBM3 memory", "NIC"]  # by category, then cause
    assert [t.marker.color for t in fig.data] == [
        CATEGORY_COLOURS["GPU"],
        CATEGORY_COLOURS["GPU"],
        CATEGORY_COLOURS["Host"],
    ]
    assert [t.marker.symbol for t in fig.data] == ["diamond", "circle", "diamond"]  # told apart inside GPU
    assert list(fig.layout.yaxis.categoryarray) == ["host-009", "host-001"]  # the first row on top
    # with GPU ids, each marker carries its GPU for a click to open
    fig = gpus.offender_history(frame.with_columns(pl.Series("gpu_id", [3, None, 18])), STARTED)
    assert [list(t.customdata) for t in fig.data] == [[3], [None], [18]]
    assert gpus.clicked_gpu({"points": [{"curve_number": 0, "customdata": 3}]}) == 3
    assert gpus.clicked_gpu({"points": [{"curve_number": 1}]}) is None and gpus.clicked_gpu(None) is None


# ----- incidents ----------------------------------------------------------------------------------------


def test_incident_timeline_sizes_by_cost_and_colours_by_category():
    fig = incidents.timeline(_incidents(), STARTED)
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"GPU", "Network", "Planned"}
    gpu = by_name["GPU"]
    assert list(gpu.y) == ["Faulty GPU", "GPU HBM3 memory"]  # causes in words
    assert gpu.marker.color == incidents.CATEGORY_COLOURS["GPU"]
    # the costliest incident (faulty_gpu, 3.56 GPU-hours) gets the largest marker, the free one the smallest
    assert gpu.marker.size[0] == pytest.approx(incidents.MAX_SIZE)
    assert gpu.marker.size[1] == pytest.approx(incidents.MIN_SIZE)


def test_clicked_incident_reads_a_plotly_selection():
    assert incidents.clicked_incident(None) is None and incidents.clicked_incident({"points": []}) is None
    point = {"curve_number": 0, "point_index": 1, "customdata": 4}
    assert incidents.clicked_incident({"points": [point]}) == 4
    fig = incidents.timeline(_incidents(), STARTED)  # the markers carry what the click reads
    gpu = next(t for t in fig.data if t.name == "GPU")
    assert list(gpu.customdata) == [1, 4] and list(gpu.text) == ["3.6", "0.0"]


def test_marker_sizes_scale_area_with_cost():
    sizes = incidents.marker_sizes(np.array([0.0, 25.0, 100.0, np.nan]))
    assert list(sizes) == pytest.approx([6.0, 6.0 + 24.0 * 0.5, 30.0, 6.0])
    assert list(incidents.marker_sizes(np.zeros(2))) == [6.0, 6.0]


def test_by_cause_and_per_day():
    counts = pl.DataFrame(
        {"cause": ["faulty_gpu", "nic"], "category": ["GPU", "Host"], "interruptions": [5, 1]}
    )
    fig = incidents.by_cause(counts)
    assert list(fig.data[0].y) == ["NIC", "Faulty GPU"] and list(fig.data[0].x) == [1, 5]
    days = pl.DataFrame({"day": [0, 1], "planned": [1, 0], "unexpected": [2, 3]})
    fig = incidents.per_day(days, STARTED)
    assert [t.name for t in fig.data] == ["unexpected", "planned"]
    assert list(fig.data[0].y) == [2, 3] and str(fig.data[0].x[1]) == "2024-03-02T00:00:00.000"


# ----- network ------------------------------------------------------------------------------------------


def test_tiers_ordered_bottom_up_with_capacity_in_tbps():
    frame = pl.DataFrame(
        {
            "tier": ["ctsw_atsw", "gpu_rtsw", "rtsw_ctsw"],
            "links": [2, 16, 4],
            "capacity_gbps": [3200.0, 6400.0, 12800.0],
        }
    )
    fig = network.tiers(frame)
    assert list(fig.data[0].x) == [
        "NIC cables",
        "Rack uplinks",
        "Core links",
    ]  # engine.report.palette.tier_label
    assert list(fig.data[0].y) == [16, 4, 2] and list(fig.data[1].y) == [6.4, 12.8, 3.2]


def test_utilisation_mean_and_hottest_per_tier():
    frame = pl.DataFrame(
        {
            "t_s": [0.0, 3600.0, 0.0],
            "tier": ["gpu_rtsw", "gpu_rtsw", "ctsw_atsw"],
            "mean_util": [10.0, 20.0, 5.0],
            "max_util": [50.0, 60.0, 7.0],
        }
    )
    fig = network.utilisation(frame, STARTED)
    assert [t.name for t in fig.data] == [
        "NIC cables: mean",
        "NIC cables: busiest link",
        "Core links: mean",
        "Core links: busiest link",
    ]
    assert list(fig.data[1].y) == [50.0, 60.0]


# ----- planner ------------------------------------------------------------------------------------------


def test_ettr_curve_marks_the_young_daly_optimum_at_the_curve_maximum():
    args = {
        "gpus": 16384,
        "rate_per_1000_node_days": 3.79,
        "checkpoint_interval_s": 1800.0,
        "checkpoint_write_s": 60.0,
        "restart_overhead_s": 600.0,
    }
    fig = planner.ettr_curve(**args)
    curve, chosen, optimum = fig.data
    mttf = closed_form_ettr(**args).mttf_s
    expected = young_daly_interval(60.0, mttf)
    assert optimum.x[0] == pytest.approx(expected / 60.0)
    assert chosen.y[0] == pytest.approx(closed_form_ettr(**args).ettr)
    # first-order optimum: within 1% ETTR of the best point on the curve
    assert optimum.y[0] == pytest.approx(max(curve.y), abs=0.01)
    assert min(curve.x) <= 1800.0 / 60 / 10 + 1e-9 and max(curve.x) >= 1800.0 / 60 * 10 - 1e-9


def test_ettr_curve_without_failures_has_no_optimum():
    fig = planner.ettr_curve(
        gpus=8,
        rate_per_1000_node_days=0.0,
        checkpoint_interval_s=600.0,
        checkpoint_write_s=10.0,
        restart_overhead_s=60.0,
    )
    assert [t.name for t in fig.data] == ["Closed-form ETTR", "chosen interval"]


# ----- compare ------------------------------------------------------------------------------------------


def test_causes_side_by_side_groups_by_cause_with_a_bar_per_run():
    counts = pl.DataFrame(
        {"run": ["a", "a", "b"], "cause": ["faulty_gpu", "nic", "faulty_gpu"], "interruptions": [3, 1, 5]}
    )
    fig = compare.causes_side_by_side(counts)
    assert [t.name for t in fig.data] == ["a", "b"]
    assert list(fig.data[0].x) == ["Faulty GPU", "NIC"]  # causes in words
    assert list(fig.data[0].y) == [3, 1] and list(fig.data[1].y) == [5, 0]
    fig = compare.causes_side_by_side(counts, runs=["b", "a", "c"])  # c has no incident at all
    assert [t.name for t in fig.data] == ["b", "a", "c"] and list(fig.data[2].y) == [0, 0]


def test_pages_run_is_consistent():
    run = pages_run()
    hs = run.tables["host_states"]
    # no host has two states at once
    overlaps = (
        hs.sort(["host_id", "start_s"])
        .with_columns(prev_end=pl.col("end_s").shift().over("host_id"))
        .filter(pl.col("prev_end") > pl.col("start_s"))
    )
    assert overlaps.is_empty()
    assert run.tables["checkpoints"].height == 46 == run.summary["job"]["checkpoints"]


# ----- what the page tests share ------------------------------------------------------------------------

ROUTER = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")


def open_page(page: str, params: dict[str, str] | None = None) -> AppTest:
    """Run the router on `page` (e.g. "app_pages/racks.py") with URL parameters, as a browser would."""
    at = AppTest.from_file(ROUTER, default_timeout=60)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.switch_page(page)
    return at.run()


def stored_run(store_dir: Path, run: Run | None = None) -> str:
    """Write `run` (default: pages_run()) to the store at `store_dir` and return its id."""
    return Store(store_dir).write_run(run or pages_run())


def sparse_run(name: str = "observed") -> Run:
    """What an ingested run looks like: hosts, GPUs, telemetry and XIDs, but no jobs, incidents or host states."""
    full = pages_run()
    tables = {k: full.tables[k] for k in ("hosts", "gpus", "gpu_samples", "xid_events")}
    tables["xid_events"] = tables["xid_events"].with_columns(pl.lit(None, pl.Int32).alias("incident_id"))
    return Run(kind="ingest", name=name, started_at=STARTED, duration_s=DAY, tables=tables)


def test_floor_plan_of_a_llama3_sized_cluster_is_one_light_trace():
    # 1,536 racks of 2 hosts in rows of 16 (the llama3-405b shape), then its 24,576 GPUs
    host = np.arange(3072)
    rack = host // 2
    hosts = pl.DataFrame(
        {
            "hostname": [f"h{h}" for h in host],
            "rack_id": rack,
            "row": rack // 16,
            "position": rack % 16,
            "slot": host % 2,
            "state": ["running"] * 3072,
        }
    )
    fig = racks.floor_plan(hosts)
    # one heatmap, the legend entry and one trace of 1,536 rack handles
    # one heatmap, the rack handles and light overlays (a wrapped floor's block row labels among them)
    assert sum(isinstance(t, go.Heatmap) for t in fig.data) == 1 and len(fig.data) <= 4
    assert any(t.x is not None and len(t.x) == 1536 for t in fig.data[1:])
    assert np.count_nonzero(~np.isnan(np.asarray(fig.data[0].z))) == 3072
    assert len(fig.to_json()) < 1_000_000
    gpus_frame = pl.concat([hosts.with_columns(pl.lit(i).alias("gpu_index")) for i in range(8)])
    fig = racks.floor_plan(gpus_frame)
    assert np.count_nonzero(~np.isnan(np.asarray(fig.data[0].z))) == 24576
    assert len(fig.to_json()) < 5_000_000  # issue 7's budget for the browser
