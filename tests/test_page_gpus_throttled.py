"""The GPUs page's throttled and slow GPUs (dashboard.gpus.throttled): on a hand-built run with known clocks-event
reason bits, SM clocks, violation counters and fail-slow episodes, the exact rows worst first, the reasons in words,
the counts per window; a plain sentence for a run without clock readings (older files too) and one for a run where
no GPU throttled; the section on the page with its host names as text."""

from dataclasses import replace
from datetime import UTC, datetime

import polars as pl
from test_charts_pages import open_page, sparse_run, stored_run

from dashboard.charts import gpus_throttled as charts
from dashboard.gpus.throttled import nothing_throttled, share_text, shown, table_caption
from dashboard.queries import gpus_throttled as queries
from engine.store import Run
from engine.store.schema import polars_schema
from engine.telemetry.clocks import REASON_BITS, reasons_of
from tests.test_store_older_files import older_file

PAGE = "app_pages/gpus.py"
TAB = "Throttled and slow GPUs"  # the section's tab under the health grid: only the open tab is drawn
STARTED = datetime(2024, 12, 2, 11, tzinfo=UTC)
STEP, SAMPLES = 600.0, 10  # a sample every 10 minutes: 0 .. 5,400 s
DURATION = STEP * SAMPLES
HOT = reasons_of("gpu_thermal", 2.0)  # HW slowdown, SW and HW thermal slowdown
CAP, IDLE, SETTING = REASON_BITS["sw_power_cap"], REASON_BITS["gpu_idle"], REASON_BITS["clocks_setting"]
NO_CLOCKS = "This run has no SM clock or throttle-reason readings, so which GPUs were throttled is not known."


def samples(per_gpu: dict[int, list[tuple[int, float, int, int]]]) -> pl.DataFrame:
    """gpu_samples from (reasons, SM clock, power-violation ns, thermal-violation ns) per sample of each GPU."""
    rows = [
        (i * STEP, gpu, 50.0, 500.0, reasons, clock, power, thermal)
        for gpu, readings in per_gpu.items()
        for i, (reasons, clock, power, thermal) in enumerate(readings)
    ]
    columns = (
        "t_s",
        "gpu_id",
        "temp_c",
        "power_w",
        "clocks_event_reasons",
        "sm_clock_mhz",
        "power_violation_ns",
        "thermal_violation_ns",
    )
    return pl.DataFrame(rows, schema=list(columns), orient="row").cast(polars_schema("gpu_samples", columns))


def hand_run(per_gpu: dict, episodes: list[tuple] = ()) -> Run:
    """Two hosts (names that Markdown or HTML would mangle) of two GPUs each, `per_gpu` samples and episodes
    (host_id, gpu_id, cause, start_s, end_s, factor)."""
    hosts = pl.DataFrame(
        {"host_id": [0, 1], "hostname": ["*node*-a", "<b>n1</b>"], "rack_id": [0, 0], "slot": [0, 1]},
        schema=polars_schema("hosts", ("host_id", "hostname", "rack_id", "slot")),
    )
    gpus = pl.DataFrame(
        {
            "gpu_id": [0, 1, 2, 3],
            "host_id": [0, 0, 1, 1],
            "index": [0, 1, 0, 1],
            "model": ["H100-SXM5-80GB"] * 4,
        },
        schema=polars_schema("gpus", ("gpu_id", "host_id", "index", "model")),
    )
    columns = ("host_id", "gpu_id", "cause", "start_s", "end_s", "factor")
    slow = pl.DataFrame(list(episodes), schema=list(columns), orient="row").cast(
        polars_schema("slow_episodes", columns)
    )
    tables = {"hosts": hosts, "gpus": gpus, "gpu_samples": samples(per_gpu), "slow_episodes": slow}
    return Run(kind="simulate", name="throttled", started_at=STARTED, duration_s=DURATION, tables=tables)


def throttled_run() -> Run:
    """GPU 0: thermally held down in 5 of its 10 samples (990 MHz, once 800), its thermal counter up 90 s, two
    overlapping episodes (1,800-4,000 s at 2x, 3,500-4,500 s at 1.25x); GPU 1: power-capped in its first sample,
    idle after, its power counter up 12 s; GPU 2: never throttled in a sample, one 60 s power episode between two;
    GPU 3: an applications-clocks setting only (not throttling). A slow host (no GPU) is no GPU's episode."""
    gpu0 = [(0, 1980.0, 0, i * 10 * 10**9) for i in range(SAMPLES)]
    for i in range(3, 8):
        gpu0[i] = (HOT, 800.0 if i == 7 else 990.0, 0, gpu0[i][3])
    gpu1 = [(CAP, 1584.0, 0, 0)] + [(IDLE, 345.0, 12 * 10**9, 0)] * (SAMPLES - 1)
    per_gpu = {
        0: gpu0,
        1: gpu1,
        2: [(0, 1980.0, 0, 0)] * SAMPLES,
        3: [(SETTING, 1700.0, 0, 0)] * SAMPLES,
    }
    episodes = [
        (0, 0, "gpu_thermal", 1800.0, 4000.0, 2.0),
        (0, 0, "gpu_power", 3500.0, 4500.0, 1.25),
        (1, 2, "gpu_power", 100.0, 160.0, 1.2),
        (1, None, "host", 0.0, 5000.0, 3.0),
    ]
    return hand_run(per_gpu, episodes)


def test_the_rows_of_throttled_and_slow_gpus_worst_first(store_dir):
    run_id = stored_run(store_dir, throttled_run())
    got = queries.top_gpus(run_id, DURATION, 10)
    assert got.rows() == [
        (0, "*node*-a", 0, ["HW slowdown", "SW thermal slowdown", "HW thermal slowdown"], 5, 10, 0.5)
        + (800.0, 990.0, 0.0, 90.0, 2, 2700.0, 2.0),  # the two episodes overlap: 1,800 to 4,500 s
        (1, "*node*-a", 1, ["power cap"], 1, 10, 0.1, 1584.0, 1584.0, 12.0, 0.0, 0, None, None),
        (2, "<b>n1</b>", 0, [], 0, 10, 0.0, None, None, 0.0, 0.0, 1, 60.0, 1.2),
    ]
    every = queries.throttled_gpus(
        run_id, DURATION
    )  # without the samples' counts: those of the GPUs shown only
    assert every.rows() == got.drop("samples", "throttled_share").rows()
    assert queries.top_gpus(run_id, DURATION, 1)["gpu_id"].to_list() == [0]
    assert queries.coverage(run_id) == {"clock_samples": 40, "counter_samples": 80}
    assert queries.reasons_seen(run_id) == HOT | CAP | IDLE | SETTING
    assert queries.other_reasons(HOT | CAP | IDLE | SETTING) == ["idle", "clocks setting"]
    counts = charts.reasons_count(got)
    assert counts.rows() == [
        ("power cap", 1),
        ("HW slowdown", 1),
        ("SW thermal slowdown", 1),
        ("HW thermal slowdown", 1),
    ]


def test_throttled_gpus_per_window_by_reason(store_dir):
    run_id = stored_run(store_dir, throttled_run())
    timeline = queries.throttle_timeline(run_id, DURATION, 1200.0)  # 5 windows of two samples each
    by_reason = {
        reason: part.sort("t_s")["gpus"].to_list()
        for reason, part in timeline.group_by("reason", maintain_order=True)
        for reason in reason
    }
    assert list(by_reason) == [
        "any reason",
        "power cap",
        "HW slowdown",
        "SW thermal slowdown",
        "HW thermal slowdown",
    ]
    assert by_reason["any reason"] == [1, 1, 1, 1, 0]  # GPU 1 at 0 s, GPU 0 from 1,800 to 4,200 s
    assert by_reason["power cap"] == [1, 0, 0, 0, 0]
    assert by_reason["SW thermal slowdown"] == [0, 1, 1, 1, 0]
    assert timeline.filter(pl.col("reason") == "any reason")["t_s"].to_list() == [
        0.0,
        1200.0,
        2400.0,
        3600.0,
        4800.0,
    ]
    fig = charts.throttle_timeline(timeline, STARTED, 1200.0)
    assert [t.name for t in fig.data] == list(by_reason)
    assert fig.data[0].line.dash == "dash" and fig.layout.yaxis.dtick == 1


def test_a_tiny_share_of_samples_is_not_zero():
    assert [share_text(x) for x in (None, 0.0, 1194 / 31_767_486, 0.00005, 0.15)] == [
        "–",
        "0.00%",
        "< 0.01%",
        "0.01%",
        "15.00%",
    ]


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_the_section_on_the_page(store_dir):
    run_id = stored_run(store_dir, throttled_run())
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    assert at.session_state["tab"] == TAB
    shown = metrics(at)
    assert (
        shown["Throttled GPUs"] == "2"
    )  # GPU 2 was only slow between samples; GPU 3's clocks setting is no throttle
    assert shown["Throttled samples"] == "15.00%"  # 6 of 40 samples
    assert shown["GPUs with fail-slow episodes"] == "2"
    table = next(d.value for d in at.dataframe if "reasons" in d.value.columns)
    assert table["hostname"].tolist() == [
        "*node*-a",
        "*node*-a",
        "<b>n1</b>",
    ]  # as text, never Markdown or HTML
    assert table["gpu_id"].tolist() == [0, 1, 2]
    assert table["time_slow"].tolist()[0] == "45 min" and table["thermal_violation"].tolist()[0] == "1 min"
    assert table["power_violation"].tolist()[1] == "12 s"
    assert list(table["reasons"].iloc[1]) == ["power cap"]
    assert any("a share of samples, not of time" in c.value for c in at.caption)


def test_a_run_without_clock_readings_says_so(store_dir):
    run_id = stored_run(store_dir, sparse_run())  # samples of temperature and power only
    assert queries.throttled_gpus(run_id, 86400.0).is_empty()
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    assert NO_CLOCKS in [i.value for i in at.info]
    assert "Throttled GPUs" not in metrics(at)


def test_an_older_file_without_the_columns_or_the_episodes(store_dir):
    _, run_id = older_file(store_dir)
    assert queries.sources(run_id) == ("CAST(NULL AS BIGINT)", "CAST(NULL AS REAL)") + (
        "CAST(NULL AS BIGINT)",
        "CAST(NULL AS BIGINT)",
        False,
    )
    assert queries.throttled_gpus(run_id, 60.0).is_empty()
    assert queries.coverage(run_id) == {"clock_samples": 0, "counter_samples": 0}
    assert queries.reasons_seen(run_id) == 0
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception and NO_CLOCKS in [i.value for i in at.info]


def test_a_run_where_no_gpu_throttled_says_that(store_dir):
    idle_or_busy = {g: [(IDLE if i % 2 else 0, 1980.0, 0, 0) for i in range(SAMPLES)] for g in range(4)}
    run_id = stored_run(store_dir, hand_run(idle_or_busy))
    assert queries.throttled_gpus(run_id, DURATION).is_empty()
    sentence = (
        "No GPU was throttled in this run: none of its 40 samples with a clocks-event reading had a power or "
        "thermal reason set (the only reasons seen: idle)."
    )
    assert nothing_throttled(run_id, queries.coverage(run_id)["clock_samples"]) == sentence
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    assert sentence in [i.value for i in at.info]
    assert NO_CLOCKS not in [i.value for i in at.info]


def test_a_watched_run_of_clock_events_gives_no_share_of_samples(store_dir):
    """`goodput watch` stores a GPU's clocks only where its reasons changed or a counter rose: events, whose
    share would say nothing about time."""
    run = throttled_run()
    tables = {k: v for k, v in run.tables.items() if k != "slow_episodes"}
    watched = replace(run, kind="ingest", scenario={"source": "watch"}, tables=tables)
    run_id = stored_run(store_dir, watched)
    top = queries.top_gpus(run_id, DURATION, 10)
    assert shown(top, counters=True, episodes=False, events=True).columns == [
        "hostname",
        "gpu_index",
        "gpu_id",
        "reasons",
        "lowest_clock_mhz",
        "median_clock_mhz",
        "power_violation",
        "thermal_violation",
    ]
    assert "no share of samples is given" in table_caption(2, episodes=False, events=True)
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    shown_metrics = metrics(at)
    assert shown_metrics["Throttled GPUs"] == "2" and "Throttled samples" not in shown_metrics
    table = next(d.value for d in at.dataframe if "reasons" in d.value.columns)
    assert "throttled_share" not in table.columns and table["gpu_id"].tolist() == [0, 1]
