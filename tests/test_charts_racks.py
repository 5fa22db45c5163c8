"""Racks: the floor plan's cells and colours for every measure, the elevation, the queries behind them and the
blast radius, on `racks_run`, a small known cluster (the page tests open it too).

The cluster: 2 rows x 2 racks x 2 hosts x 2 GPUs, pods of 2 racks, one day, hourly telemetry, a rack budget of
2.5 kW. Link names follow engine.fabric.topology (host:gpuN to rtsw-R, rtsw-R to ctsw-P-K).

    row 0: rack 0 (hosts 0, 1: pod 0)   rack 1 (hosts 2, 3: pod 0)
    row 1: rack 2 (hosts 4, 5: pod 1)   rack 3 (hosts 6, 7: pod 1)

- `flag` (flagship, 8 GPUs) runs on hosts 0-3; host 1 fails at 20,000 s (faulty_gpu on GPU 3, never repaired:
  down, then in repair) and host 7, a spare until then, takes its place from 21,000 s.
- `r1` (research, 4 GPUs) runs on hosts 4 and 5 all day; host 6 is healthy and idle.
- Incidents: 1) 20,000 s faulty_gpu, GPU 3; 2) 40,000 s a NIC cable (link 9: GPU 9's); 3) 50,000 s rack 2's
  uplink 20 (repaired at 52,000 s); 4) 60,000 s host_maintenance on host 6 (a host, no GPU).
- Power: a busy flagship GPU draws 650 W, a research one 600 W, an idle one 100 W, a spare 80 W; host 1 goes
  silent at 20,000 s. At 30,000 s rack 1 draws 4 x 650 W = 2.6 kW: over its 2.5 kW budget, the only one.
"""

from datetime import UTC, datetime

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest

from dashboard.charts import racks as charts
from dashboard.charts.rack_elevation import LINK_COLOURS, elevation
from dashboard.queries import racks as queries
from engine.scenario import build
from engine.store.run import Run

STARTED = datetime(2024, 3, 1, tzinfo=UTC)
DAY = 86400.0
BUDGET_KW = 2.5
HOURLY = 3600.0


def _hosts() -> pl.DataFrame:
    host = np.arange(8, dtype=np.int32)
    rack, pod = host // 2, host // 4
    return pl.DataFrame(
        {
            "host_id": host,
            "hostname": [f"gt-p{p:02d}-r{r:05d}-h{h % 2}" for h, r, p in zip(host, rack, pod, strict=True)],
            "rack_id": rack,
            "pod_id": pod,
            "row": rack // 2,
            "position": rack % 2,
            "slot": host % 2,
        }
    )


def _gpus() -> pl.DataFrame:
    gpu = np.arange(16, dtype=np.int32)
    return pl.DataFrame(
        {
            "gpu_id": gpu,
            "host_id": gpu // 2,
            "index": (gpu % 2).astype(np.int16),
            "uuid": [f"GPU-{g:04d}" for g in gpu],
            "model": ["H100-SXM5-80GB"] * 16,
        }
    )


def _links() -> pl.DataFrame:
    hosts = _hosts()
    nic_a = [f"{hosts['hostname'][g // 2]}:gpu{g % 2}" for g in range(16)]
    nic_b = [f"rtsw-{g // 4}" for g in range(16)]
    up_a = [f"rtsw-{r}" for r in range(4) for _ in range(2)]
    up_b = [f"ctsw-{r // 2}-{k}" for r in range(4) for k in range(2)]
    return pl.DataFrame(
        {
            "link_id": np.arange(24, dtype=np.int32),
            "tier": ["gpu_rtsw"] * 16 + ["rtsw_ctsw"] * 8,
            "a": nic_a + up_a,
            "b": nic_b + up_b,
            "capacity_gbps": [400.0] * 16 + [800.0] * 8,
        }
    )


HOST_STATES = [  # (host, state, start, end, job)
    (0, "running", 0.0, DAY, "flag"),
    (2, "running", 0.0, DAY, "flag"),
    (3, "running", 0.0, DAY, "flag"),
    (1, "running", 0.0, 20000.0, "flag"),
    (1, "down", 20000.0, 21000.0, None),
    (1, "repair", 21000.0, DAY, None),
    (7, "spare", 0.0, 21000.0, None),
    (7, "running", 21000.0, DAY, "flag"),
    (4, "running", 0.0, DAY, "r1"),
    (5, "running", 0.0, DAY, "r1"),
    (6, "healthy", 0.0, DAY, None),
]


def _host_states() -> pl.DataFrame:
    host, state, start, end, job = zip(*HOST_STATES, strict=True)
    return pl.DataFrame(
        {"host_id": host, "state": state, "start_s": start, "end_s": end, "job_id": job},
        schema_overrides={"host_id": pl.Int32, "job_id": pl.String},
    )


def _incidents() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "incident_id": [1, 2, 3, 4],
            "t_s": [20000.0, 40000.0, 50000.0, 60000.0],
            "detected_s": [20030.0, 40030.0, 50030.0, 60030.0],
            "mitigated_s": [21000.0, 40100.0, 50100.0, 60100.0],
            "repaired_s": [None, 40500.0, 52000.0, 61000.0],
            "cause": ["faulty_gpu", "network_switch_cable", "network_switch_cable", "host_maintenance"],
            "category": ["GPU", "Network", "Network", "Unplanned maintenance"],
            "planned": [False] * 4,
            "xid": [79, None, None, None],
            "host_id": [1, None, None, 6],
            "gpu_id": [3, None, None, None],
            "link_id": [None, 9, 20, None],
            "jobs_hit": [1, 1, 1, 0],
            "gpu_hours_lost": [4.0, 1.0, 1.0, 0.0],
            "job_ids": [["flag"], ["r1"], ["r1"], []],
        },
        schema_overrides={
            "incident_id": pl.Int32,
            "xid": pl.Int32,
            "host_id": pl.Int32,
            "gpu_id": pl.Int32,
            "link_id": pl.Int32,
            "jobs_hit": pl.Int32,
        },
    )


def _gpu_samples() -> pl.DataFrame:
    t = np.repeat(np.arange(0.0, DAY, HOURLY), 16)
    gpu = np.tile(np.arange(16, dtype=np.int32), int(DAY / HOURLY))
    host = gpu // 2
    flag = np.isin(host, [0, 1, 2, 3]) | ((host == 7) & (t >= 21000.0))
    power = np.select([flag, np.isin(host, [4, 5]), host == 7], [650.0, 600.0, 80.0], 100.0)
    temp = np.where(power > 500, 70.0 + gpu % 3, 35.0)
    keep = ~((host == 1) & (t >= 20000.0))  # host 1 is silent once down
    return pl.DataFrame(
        {
            "t_s": t,
            "gpu_id": gpu,
            "temp_c": temp.astype(np.float32),
            "power_w": power.astype(np.float32),
            "util_pct": np.where(power > 500, 97.0, 0.0).astype(np.float32),
            "mem_util_pct": np.zeros(t.size, dtype=np.float32),
            "ecc_sbe": np.zeros(t.size, dtype=np.int32),
            "ecc_dbe": np.zeros(t.size, dtype=np.int32),
        }
    ).filter(pl.Series(keep))


def racks_run(name: str = "racks") -> Run:
    jobs = pl.DataFrame(
        {
            "job_id": ["flag", "r1"],
            "name": ["pretrain", "sweep"],
            "gpus": [8.0, 4.0],
            "priority": [10, 1],
            "submit_s": [0.0, 0.0],
            "start_s": [0.0, 0.0],
            "end_s": [None, None],
            "state": ["running", "running"],
            "user": ["llm", "ana"],
            "kind": ["flagship", "research"],
        },
        schema_overrides={"priority": pl.Int32, "end_s": pl.Float64},
    )
    xids = pl.DataFrame(
        {
            "t_s": [20000.0],
            "gpu_id": [3],
            "host_id": [1],
            "xid": [79],
            "incident_id": [1],
            "message": ["NVRM: Xid (PCI:0000:9a:00): 79, GPU has fallen off the bus."],
        },
        schema_overrides={"gpu_id": pl.Int32, "host_id": pl.Int32, "xid": pl.Int32, "incident_id": pl.Int32},
    )
    scenario = build(
        "demo",
        sets=[
            f"cluster.rack_power_budget_kw={BUDGET_KW}",
            "simulation.telemetry_resolution=1h",
            "simulation.days=1",
        ],
    )
    tables = {
        "hosts": _hosts(),
        "gpus": _gpus(),
        "links": _links(),
        "jobs": jobs,
        "incidents": _incidents(),
        "host_states": _host_states(),
        "gpu_samples": _gpu_samples(),
        "xid_events": xids,
    }
    return Run(
        kind="simulate",
        name=name,
        started_at=STARTED,
        duration_s=DAY,
        scenario=scenario.to_dict(),
        seed=7,
        summary={},
        tables=tables,
    )


@pytest.fixture
def run_id(store_dir) -> str:
    from engine.store import Store

    return Store(store_dir).write_run(racks_run())


def cells_at(run_id: str, t_s: float, window_s: float = DAY) -> pl.DataFrame:
    run = racks_run()
    return queries.floor_cells(run_id, t_s, run.scenario, window_s).join(
        queries.jobs(run_id).select("job_id", "kind"), on="job_id", how="left"
    )


def z_of(fig: go.Figure) -> np.ndarray:
    return np.asarray(fig.data[0].z, dtype=float)


def colour_of(fig: go.Figure, code: float) -> str:
    """The colour a heatmap code gets from the figure's (piecewise flat) colourscale."""
    heat = fig.data[0]
    position = (code - heat.zmin) / (heat.zmax - heat.zmin)
    below = [colour for stop, colour in heat.colorscale if stop <= position + 1e-9]
    return below[-1]


# ----- queries --------------------------------------------------------------------------------------------


def test_floor_cells_at_30000_read_states_power_and_silence(run_id):
    cells = cells_at(run_id, 30000.0)
    assert cells.height == 16
    by_gpu = {r["gpu_id"]: r for r in cells.iter_rows(named=True)}
    assert (
        by_gpu[3]["state"] == "failed" and by_gpu[2]["state"] == "repair"
    )  # GPU 3's own incident, its host's
    assert by_gpu[2]["power_w"] is None and by_gpu[2]["temp_c"] is None  # host 1 is silent: no reading
    assert by_gpu[0]["power_w"] == 650.0 and by_gpu[0]["temp_c"] == 70.0
    assert by_gpu[14]["job_id"] == "flag" and by_gpu[14]["power_w"] == 650.0  # host 7 took host 1's place
    power = queries.rack_power(cells)
    assert power["rack_kw"].to_list() == pytest.approx([1.3, 2.6, 2.4, 0.2 + 1.3])
    assert power["over"].to_list() == [False, True, False, False]


def test_a_reading_is_the_sample_of_the_last_grid_point(run_id):
    # host 1's last sample is at 18,000 s: it counts until the next grid point, 21,600 s, finds it silent
    assert cells_at(run_id, 21599.0).filter(pl.col("gpu_id") == 2)["power_w"][0] == 650.0
    assert cells_at(run_id, 21600.0).filter(pl.col("gpu_id") == 2)["power_w"][0] is None
    assert queries.readings_at(run_id, 21599.0, HOURLY).equals(queries.readings_at(run_id, 18000.0, HOURLY))


def test_without_a_grid_a_reading_goes_stale_after_one_and_a_half_hours(run_id):
    # an ingested run has no scenario: a sample counts for 5,400 s
    assert queries.readings_at(run_id, 23000.0, None).filter(pl.col("gpu_id") == 2)["power_w"][0] == 650.0
    assert queries.readings_at(run_id, 23500.0, None).filter(pl.col("gpu_id") == 2).is_empty()


def test_failures_in_a_window_land_on_the_gpus_behind_the_part(run_id):
    day = dict(queries.failures_in(run_id, 60000.0 - DAY, 60000.0).sort("gpu_id").iter_rows())
    # GPU 3 (its own), GPU 9 (its NIC cable and its rack's uplink), GPUs 8-11 (rack 2's uplink), 12-13 (host 6)
    assert day == {3: 1, 8: 1, 9: 2, 10: 1, 11: 1, 12: 1, 13: 1}
    six_hours = dict(queries.failures_in(run_id, 60000.0 - 6 * 3600, 60000.0).iter_rows())
    assert set(six_hours) == {8, 9, 10, 11, 12, 13} and six_hours[9] == 2  # 38,400 s on: no GPU 3


def test_rack_links_and_events(run_id):
    links = queries.rack_links(run_id, 2, 51000.0)
    assert links["tier"].to_list() == ["gpu_rtsw"] * 4 + ["rtsw_ctsw"] * 2
    assert links.filter(pl.col("state") == "down")["link_id"].to_list() == [20]  # the uplink, until 52,000 s
    assert queries.rack_links(run_id, 2, 53000.0)["state"].to_list() == ["up"] * 6
    assert queries.rack_incidents(run_id, 2)["incident_id"].to_list() == [2, 3]  # the NIC cable, the uplink
    assert queries.rack_incidents(run_id, 0)["incident_id"].to_list() == [1]
    assert queries.rack_xids(run_id, 0, 30000.0)["xid"].to_list() == [79]
    assert queries.rack_xids(run_id, 0, 10000.0).is_empty()


def test_blast_radius_of_a_rack_host_and_switches_at_30000(run_id):
    hosts = queries.hosts_at(run_id, 30000.0)
    jobs = queries.jobs(run_id)

    def hit(kind, name):
        hit_hosts, spanning = queries.blast_hosts(hosts, kind, name)
        return (
            queries.blast_radius(hosts, 2, jobs, hit_hosts, spanning)
            .select("job_id", "hosts_hit", "gpus_hit", "job_gpus")
            .rows()
        )

    assert hit("rack", "1") == [("flag", 2, 4, 8)]  # flag holds hosts 0, 2, 3 and 7 at 30,000 s
    assert hit("rtsw", "rtsw-2") == [("r1", 2, 4, 4)]
    assert hit("host", "gt-p01-r00003-h0") == []  # host 6 idles
    assert hit("host", "gt-p01-r00003-h1") == [("flag", 1, 2, 8)]
    # a spine switch of pod 1: flag spans racks (host 7 in pod 1); r1 stays inside rack 2 and keeps running
    assert hit("ctsw", "ctsw-1-0") == [("flag", 1, 2, 8)]
    assert queries.blast_targets(hosts, "rtsw") == ["rtsw-0", "rtsw-1", "rtsw-2", "rtsw-3"]
    assert queries.blast_targets(hosts, "ctsw")[:2] == ["ctsw-0-0", "ctsw-0-1"]
    assert queries.parse_blast("rtsw:rtsw-2") == ("rtsw", "rtsw-2")
    assert queries.parse_blast("switch:1") is None and queries.parse_blast("rack:") is None


def test_play_steps_forward_and_stops_at_the_end():
    assert queries.next_t(0.0, 3600.0, DAY) == (3600.0, True)
    assert queries.next_t(DAY - 100.0, 3600.0, DAY) == (DAY, False)


# ----- the floor plan, measure by measure -------------------------------------------------------------------


# GPU g sits at line row * 3 + (1 - slot), column position * 3 + index (racks 2 GPUs + a blank column wide)
def place(gpu: int) -> tuple[int, int]:
    host, index = divmod(gpu, 2)
    rack, slot = divmod(host, 2)
    return (rack // 2) * 3 + (1 - slot), (rack % 2) * 3 + index


def test_state_measure_colours_each_gpu_by_its_state(run_id):
    fig = charts.floor_plan(cells_at(run_id, 30000.0), "state")
    z = z_of(fig)
    assert z.shape == (6, 6)
    expected = {0: "running", 2: "repair", 3: "failed", 12: "healthy", 14: "running"}
    for gpu, state in expected.items():
        assert colour_of(fig, z[place(gpu)]) == charts.STATE_COLOURS[state]
    assert (
        np.isnan(z[2]).all() and np.isnan(z[:, 2]).all()
    )  # the blank line between rows, column between racks
    assert fig.data[0].text[place(3)[0]][place(3)[1]] == "gt-p00-r00000-h1 · rack 0 · GPU 1 · Failed GPU"
    # the legend names states in words, never by their keys
    assert {t.name for t in fig.data[1:-1]} == {
        "Running a job",
        "In repair",
        "Failed GPU",
        "Healthy",
        charts.OVER_BUDGET,
    }
    # margins set, not measured: Plotly's automargin draws every cell again once it has measured the labels
    assert fig.layout.xaxis.automargin is False and fig.layout.yaxis.automargin is False
    assert fig.layout.margin.l >= 60 and fig.layout.margin.b >= 60


def test_temperature_measure_with_grey_for_no_reading(run_id):
    fig = charts.floor_plan(cells_at(run_id, 30000.0), "temp")
    z = z_of(fig)
    low, high = charts.TEMP_RANGE_C
    assert z[place(2)] == 0.0 and colour_of(fig, 0.0) == charts.NO_READING  # silent host 1
    assert z[place(0)] == pytest.approx(
        charts._EDGE + (1 - charts._EDGE) * (70 - low) / (high - low), abs=1e-3
    )
    assert z[place(12)] < z[place(0)]  # idle host 6 at 35 °C is cooler than busy host 0 at 70 °C
    assert fig.data[0].text[place(0)[0]][place(0)[1]].endswith("GPU 0 · 70 °C (Running a job)")
    assert fig.data[0].showscale and "no reading" in {t.name for t in fig.data}


def test_power_measure_puts_racks_over_budget_in_the_red_and_crosses_them_out(run_id):
    fig = charts.floor_plan(cells_at(run_id, 30000.0), "power")
    z = z_of(fig)
    budget_at = charts._EDGE + (1 - charts._EDGE) * 1.0 / charts.POWER_MAX_SHARE
    assert z[place(4)] > budget_at and z[place(0)] < budget_at  # rack 1 at 2.6 kW, rack 0 at 1.3 kW
    # the scale steps to red at the budget: rack 1's cells lie past that step, rack 0's among the greens
    assert colour_of(fig, z[place(4)]) == "#d73027"
    assert colour_of(fig, z[place(0)]) == "#a1d99b"
    assert (
        fig.data[0].text[place(4)[0]][place(4)[1]]
        == "gt-p00-r00001-h0 · rack 1 · GPU 0 · 650 W = 93% TDP · host 1.3 kW · rack 2.6/2.5 kW (Running a job)"
    )
    over = next(t for t in fig.data if t.name == charts.OVER_BUDGET)
    assert list(over.customdata) == [1] and list(over.x) == [3.5] and list(over.y) == [0.5]
    handles = fig.data[-1]
    assert handles.name == charts.RACK_HANDLES
    assert handles.text[1].startswith("<b>rack 1</b> (click to open)<br>2.6 of 2.5 kW <b>over budget</b>")


def test_job_measure_gives_the_flagship_its_colour_and_idle_gpus_none(run_id):
    fig = charts.floor_plan(cells_at(run_id, 30000.0), "job")
    z = z_of(fig)
    assert colour_of(fig, z[place(0)]) == charts.FLAGSHIP_COLOUR
    assert colour_of(fig, z[place(8)]) == charts.JOB_PALETTE[0]  # r1, the only other job
    assert colour_of(fig, z[place(12)]) == charts.NO_JOB and colour_of(fig, z[place(2)]) == charts.NO_JOB
    assert {t.name for t in fig.data[1:-1]} == {"flag", "r1", "no job", charts.OVER_BUDGET}


def test_failures_measure_bands_the_counts(run_id):
    fig = charts.floor_plan(cells_at(run_id, 60000.0, DAY), "failures", window="day")
    z = z_of(fig)
    colours = dict(charts.FAILURE_BANDS)
    assert colour_of(fig, z[place(9)]) == colours["2 failures"]
    assert colour_of(fig, z[place(3)]) == colours["1 failure"]
    assert colour_of(fig, z[place(0)]) == colours["no failure"]
    assert fig.data[0].text[place(9)[0]][place(9)[1]].endswith("2 failure(s) in the last day (Running a job)")


def test_unknown_measure_is_refused(run_id):
    with pytest.raises(ValueError, match="unknown measure 'heat'"):
        charts.floor_plan(cells_at(run_id, 30000.0), "heat")


def test_elevation_shows_hosts_bottom_up_with_nics_and_the_switch(run_id):
    cells = cells_at(run_id, 51000.0).filter(pl.col("rack_id") == 2)
    fig = elevation(cells, queries.rack_links(run_id, 2, 51000.0), 2)
    running = next(t for t in fig.data if t.name == "Running a job")
    assert list(running.y) == [0, 0, 1, 1] and list(running.x) == [0, 1, 0, 1]  # slot 0 at the bottom
    assert running.marker.color == charts.STATE_COLOURS["running"]
    nics = next(t for t in fig.data if t.name == "NIC up")
    assert len(nics.x) == 4 and list(nics.y) == pytest.approx([0.4, 0.4, 1.4, 1.4])
    uplinks_down = next(t for t in fig.data if t.name == "uplink down")
    assert uplinks_down.marker.color == LINK_COLOURS["down"] and "ctsw-1-0" in uplinks_down.text[0]
    assert any(a.text == "rtsw-2 · 1 link(s) down" for a in fig.layout.annotations)


def test_floor_plan_of_24576_gpus_stays_under_5_mb():
    """The llama3-405b shape (1,536 racks of 2 hosts of 8 GPUs, rows of 16), every measure (its build time is
    measured in bench/bench_racks.py, not here)."""
    host = np.repeat(np.arange(3072), 8)
    rack = host // 2
    cells = pl.DataFrame(
        {
            "host_id": host,
            "hostname": [f"gt-p{h // 384:02d}-r{h // 2:05d}-h{h % 2}" for h in host],
            "rack_id": rack,
            "row": rack // 16,
            "position": rack % 16,
            "slot": host % 2,
            "gpu_index": np.tile(np.arange(8), 3072),
            "state": ["running"] * 24576,
            "job_id": np.where(host < 2048, "flag", "r" + pl.Series(host // 8).cast(pl.String)),
            "kind": np.where(host < 2048, "flagship", "research"),
            "temp_c": 60.0 + host % 20,
            "power_w": 600.0 + host % 90,
            "failures": host % 3,
        }
    )
    cells = cells.with_columns(
        (pl.col("power_w").sum().over("host_id") / 1000).alias("host_kw"),
        (pl.col("power_w").sum().over("rack_id") / 1000).alias("rack_kw"),
        pl.lit(24.0).alias("budget_kw"),
    )
    for measure in charts.MEASURES:
        fig = charts.floor_plan(cells, measure)
        size = len(fig.to_json())
        assert size < 5_000_000, (measure, size)
        assert np.count_nonzero(~np.isnan(z_of(fig))) == 24576


def test_blast_measure_marks_the_failed_part_and_the_jobs_that_stop(run_id):
    hosts = queries.hosts_at(run_id, 30000.0)
    hit_hosts, spanning = queries.blast_hosts(hosts, "rack", "1")
    hit = queries.blast_radius(hosts, 2, queries.jobs(run_id), hit_hosts, spanning)
    fig = charts.floor_plan(queries.blast_cells(cells_at(run_id, 30000.0), hit_hosts, hit), "blast")
    z = z_of(fig)
    colours = dict(charts.BLAST_BANDS)
    assert [colour_of(fig, z[place(g)]) for g in (4, 7)] == [colours["behind the failed part"]] * 2  # rack 1
    assert [colour_of(fig, z[place(g)]) for g in (0, 14)] == [
        colours["in a job that stops"]
    ] * 2  # flag elsewhere
    assert [colour_of(fig, z[place(g)]) for g in (2, 8, 12)] == [
        colours["unaffected"]
    ] * 3  # host 1, r1, idle
    assert (
        fig.data[0].text[place(0)[0]][place(0)[1]]
        == "gt-p00-r00000-h0 · rack 0 · GPU 0 · in a job that stops (Running a job)"
    )
