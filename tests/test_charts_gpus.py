"""The GPUs page's chart builders and column expressions: one colour and one name per XID code, state and cause
(engine.report.palette) on every chart; XID codes as categories; counts on whole-number axes."""

from datetime import UTC, datetime

import numpy as np
import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from dashboard.charts import gpus as charts
from dashboard.charts import health_grid
from dashboard.charts.common import count_axis
from engine.reference import CAUSE_BY_KEY, XIDS
from engine.report.palette import (
    GPU_FAILED_COLOUR,
    HOST_STATE_COLOURS,
    XID_OTHER_COLOUR,
    cause_label,
    xid_colour,
    xid_label,
)

STARTED = datetime(2024, 12, 2, 11, 0, tzinfo=UTC)


def test_an_xid_code_has_one_colour_and_one_name_on_every_chart():
    # the simulator's codes and the codes a real log brings (13, and NVSwitch SXid 20034 outside the catalogue)
    counts = pl.DataFrame({"xid": [45, 79, 20034, 13], "events": [1075, 123, 6, 2]})
    per_window = pl.DataFrame(
        {"t_s": [0.0, 0.0, 3600.0, 3600.0, 3600.0], "xid": [45, 79, 79, 20034, 13], "count": [3, 1, 2, 6, 2]}
    )
    events = pl.DataFrame({"t_s": [0.0, 12.0, 12.0, 40.0], "xid": [79, 20034, 20034, 13]})
    bars = charts.xid_counts(counts).data[0]
    by_chart = [
        dict(zip(bars.y, bars.marker.color, strict=True)),
        {t.name: t.marker.color for t in charts.xid_timeline(per_window, STARTED, 3600.0).data},
        {t.name: t.marker.color for t in charts.xid_strip(events, STARTED).data},
    ]
    expected = {xid_label(x): xid_colour(x) for x in (45, 79, 20034, 13)}
    for colours in by_chart:
        assert colours == {name: expected[name] for name in colours}
    assert expected["20034"] == XID_OTHER_COLOUR and xid_colour(79) != xid_colour(45)
    assert set(by_chart[0]) == set(expected) and set(by_chart[2]) == {
        "79 GPU_HAS_FALLEN_OFF_THE_BUS",
        "20034",
        "13 GR_EXCEPTION",
    }


def test_xid_codes_are_categories_and_counts_whole_numbers():
    fig = charts.xid_counts(pl.DataFrame({"xid": [20034, 79, 13], "events": [6, 1, 2]}))
    # a code is a category: "20034" must not become a numeric axis that prints 20.034k
    assert fig.layout.yaxis.type == "category" and list(fig.data[0].y) == [
        "20034",
        "79 GPU_HAS_FALLEN_OFF_THE_BUS",
        "13 GR_EXCEPTION",
    ]
    assert fig.layout.xaxis.dtick == 1 and fig.layout.xaxis.tickformat == ",d"  # 6 events: 0, 1, ..., 6
    assert fig.layout.xaxis.title.text == "XID events"
    fig = charts.xid_timeline(
        pl.DataFrame({"t_s": [0.0, 0.0, 60.0], "xid": [79, 13, 13], "count": [1, 2, 1]}), STARTED, 60.0
    )
    assert fig.layout.yaxis.dtick == 1 and fig.layout.yaxis.rangemode == "tozero"  # stacked: 3 in the first
    assert fig.layout.yaxis.title.text == "XID events per 1 min"
    fig = charts.xid_strip(pl.DataFrame({"t_s": [0.0, 12.0, 12.5], "xid": [79, 20034, 20034]}), STARTED)
    assert fig.layout.yaxis.type == "category"
    assert list(fig.layout.yaxis.categoryarray) == ["79 GPU_HAS_FALLEN_OFF_THE_BUS", "20034"]  # most on top
    assert [len(t.x) for t in fig.data] == [2, 1]
    # 0.6 s of margin either side of 12.5 s of events: no mark on the frame
    assert [str(x)[11:23] for x in fig.layout.xaxis.range] == ["10:59:59.375", "11:00:13.125"]


def test_count_axes_have_whole_ticks():
    assert count_axis(3) == {"rangemode": "tozero", "tickformat": ",d", "dtick": 1}
    assert count_axis(None)["dtick"] == 1  # nothing to count: still whole numbers
    assert count_axis(1075) == {
        "rangemode": "tozero",
        "tickformat": ",d",
    }  # Plotly's own steps are whole there
    fig = charts.health_counts(pl.DataFrame({"state": ["running", "failed", None], "gpus": [14, 2, 1]}))
    assert fig.layout.yaxis.tickformat == ",d" and fig.layout.xaxis.type == "category"
    assert list(fig.data[0].x) == ["Running a job", "Failed GPU", "No state recorded"]
    assert list(fig.data[0].marker.color)[:2] == [HOST_STATE_COLOURS["running"], GPU_FAILED_COLOUR]
    trend = pl.DataFrame({"gpu_id": [3, 3], "t_s": [0.0, 900.0], "ecc_sbe": [0, 2], "ecc_dbe": [0, 0]})
    fig = charts.ecc_trend(trend, {}, STARTED)
    assert fig.layout.yaxis.dtick == 1 and fig.layout.yaxis2.dtick == 1


def test_one_sample_is_drawn_as_a_point():
    one = pl.DataFrame({"t_s": [0.0], "temp_c": [31.0], "power_w": [16.4], "util_pct": [0.0]})
    fig = charts.gpu_telemetry(one, STARTED)
    assert {t.mode for t in fig.data} == {"lines+markers"}
    # a minute around the one scrape, not milliseconds around it
    assert [str(x)[:19] for x in fig.layout.xaxis.range] == ["2024-12-02 10:59:30", "2024-12-02 11:00:30"]
    many = pl.DataFrame(
        {
            "t_s": np.arange(100.0),
            "temp_c": np.full(100, 60.0),
            "power_w": np.full(100, 500.0),
            "util_pct": np.full(100, 90.0),
        }
    )
    assert {t.mode for t in charts.gpu_telemetry(many, STARTED).data} == {"lines"}


def test_offenders_are_named_in_words_on_a_category_axis():
    frame = pl.DataFrame(
        {
            "label": ["1001", "1001", "1002"],
            "t_s": [0.0, 10.0, 5.0],
            "cause": ["gpu_hbm3", "network_switch_cable", "some_new_cause"],
        }
    )
    fig = charts.offender_history(frame, STARTED)
    assert {t.name for t in fig.data} == {"GPU HBM3 memory", "Network switch/cable", "Some new cause"}
    assert fig.layout.yaxis.type == "category"  # hostnames that look like numbers stay names


snake_keys = st.from_regex(r"[a-z][a-z0-9]{0,6}(_[a-z0-9]{1,6}){0,3}", fullmatch=True)


@given(
    st.lists(
        st.one_of(st.sampled_from(sorted(CAUSE_BY_KEY) + ["planned_maintenance"]), snake_keys), max_size=5
    )
)
def test_causes_text_is_cause_label_for_every_element(causes):
    shown = (
        pl.DataFrame({"causes": [causes]}, schema={"causes": pl.List(pl.String)})
        .select(charts.causes_text("causes"))["causes"]
        .to_list()
    )
    assert shown == [[cause_label(c) for c in causes]]


@given(
    st.lists(st.one_of(st.sampled_from([x.xid for x in XIDS]), st.integers(0, 30000), st.none()), max_size=6)
)
def test_xid_label_text_is_xid_label(codes):
    shown = pl.DataFrame({"xid": codes}, schema={"xid": pl.Int32}).select(charts.xid_label_text("xid"))["xid"]
    assert shown.to_list() == [None if x is None else xid_label(x) for x in codes]


@given(st.lists(st.one_of(st.sampled_from(charts.GPU_STATE_ORDER), st.none()), max_size=6))
def test_gpu_state_text_is_gpu_state_label(states):
    shown = pl.DataFrame({"state": states}, schema={"state": pl.String}).select(
        charts.gpu_state_text("state")
    )
    assert shown["state"].to_list() == [charts.gpu_state_label(s or "unknown") for s in states]


def test_the_grid_draws_states_in_the_palette_colours_and_notes_incidents_in_words():
    cells = pl.DataFrame(
        {
            "gpu_id": [0, 1],
            "hostname": ["a", "a"],
            "rack_id": [0, 0],
            "row": [0, 0],
            "position": [0, 0],
            "slot": [0, 0],
            "gpu_index": [0, 1],
            "state": ["running", "failed"],
            "temp_c": [70.0, None],
            "power_w": [650.0, None],
            "xid_events": [0, 1],
            "last_xid": [None, 79],
            "causes": [[], ["gpu_sram"]],
        }
    )
    data = health_grid.health_grid(cells)
    assert data["colours"][data["shown"][1]] == GPU_FAILED_COLOUR
    assert data["notes"] == {"1": " | XIDs 1 (last 79) | incidents: GPU SRAM memory"}
    assert data["height_px"] == 240  # one line of GPUs: the least height, room for the legend and the axis


def test_a_grid_note_says_what_is_known_of_a_gpu():
    cells = pl.DataFrame(
        {"xid_events": [3, 0, 0], "last_xid": [None, None, None], "causes": [[], [], ["faulty_gpu", "x_y"]]},
        schema_overrides={"last_xid": pl.Int64, "causes": pl.List(pl.String)},
    )
    assert health_grid.grid_notes(cells).to_list() == [" | XIDs 3", "", " | incidents: Faulty GPU, X y"]


@given(
    rows=st.integers(1, 4),
    positions=st.integers(1, 5),
    slots=st.integers(1, 4),
    per_host=st.integers(1, 8),
    keep=st.lists(st.booleans(), min_size=1, max_size=640),
)
def test_every_gpu_has_a_cell_of_its_own_inside_the_grid(rows, positions, slots, per_host, keep):
    places = [
        (r, p, s, g)
        for r in range(rows)
        for p in range(positions)
        for s in range(slots)
        for g in range(per_host)
    ]
    places = [place for place, kept in zip(places, keep * len(places), strict=False) if kept] or places[:1]
    n = len(places)
    cells = pl.DataFrame(
        {
            "gpu_id": list(range(n)),
            "hostname": [f"h{r}-{p}-{s}" for r, p, s, _ in places],
            "rack_id": [r * positions + p for r, p, _, _ in places],
            "row": [r for r, _, _, _ in places],
            "position": [p for _, p, _, _ in places],
            "slot": [s for _, _, s, _ in places],
            "gpu_index": [g for _, _, _, g in places],
            "state": ["running"] * n,
            "temp_c": [None] * n,
            "power_w": [None] * n,
            "xid_events": [0] * n,
            "last_xid": [None] * n,
            "causes": [[]] * n,
        },
        schema_overrides={"temp_c": pl.Float64, "power_w": pl.Float64, "last_xid": pl.Int64},
    )
    data = health_grid.health_grid(cells)
    assert len(set(data["cell"])) == n and all(0 <= c < data["lines"] * data["columns"] for c in data["cell"])
    # a host's GPUs side by side on one line, in index order
    for i in range(n):
        line, column = divmod(data["cell"][i], data["columns"])
        assert column % (max(g for *_, g in places) + 2) == places[i][3]
    assert all(data["hosts"][data["host"][i]] == cells["hostname"][i] for i in range(n))


def test_the_fleet_band_draws_max_p99_median_and_min_on_utc_dates_shading_between_them():
    t0 = datetime(2024, 12, 2, 10, 0, tzinfo=UTC).timestamp()
    band = pl.DataFrame(
        {
            "t": [t0, t0 + 36.0],
            "min": [30.0, 31.0],
            "p50": [50.0, 52.0],
            "p99": [70.0, 71.0],
            "max": [80.0, 90.0],
        }
    )
    fig = charts.fleet_band(band, "°C")
    assert [trace.name for trace in fig.data] == ["min", "median", "99th percentile", "max"]
    assert [trace.fill for trace in fig.data] == [None, "tonexty", "tonexty", "tonexty"]
    assert list(fig.data[3].y) == [80.0, 90.0] and list(fig.data[0].y) == [30.0, 31.0]
    # epoch seconds drawn as the UTC wall clock, not shifted by the machine's zone nor as 1970
    assert (
        str(fig.data[0].x[0]) == "2024-12-02T10:00:00.000"
        and str(fig.data[0].x[1]) == "2024-12-02T10:00:36.000"
    )
    assert fig.layout.yaxis.title.text == "°C"
