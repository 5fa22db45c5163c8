"""The GPUs page on small observed runs, made as a user makes them (`goodput ingest`) from hand-made files in
the formats of ../shared/data: one kernel log of 40 seconds, one DCGM scrape. No rate from seconds of data,
codes as categories, whole-number counts, and no figure that the run cannot know."""

import json
from datetime import UTC, datetime

import pytest
from test_charts_pages import open_page

from dashboard.charts import gpus as charts
from dashboard.queries import gpus as queries
from engine.cli import main
from tests.fixtures.ingest.samples import kernel_log, scrape_text, sxid_body, xid_body

PAGE = "app_pages/gpus.py"


def ingest(capsys, *argv: str) -> str:
    assert main(["ingest", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["run_id"]


@pytest.fixture
def kernel_log_run(tmp_path, store_dir, capsys) -> str:
    """A kernel log (dmesg --time-format iso) with an XID 79 on GPU 0, six NVSwitch SXid 20034 lines 12 s
    later, and two XID 13 on GPU 2 at 40 s: 9 XID events in 40.5 s."""
    events = [(0.0, xid_body(0, 79))] + [(12.0 + i * 0.01, sxid_body(i % 3)) for i in range(6)]
    events += [(40.0, xid_body(2, 13)), (40.5, xid_body(2, 13))]
    log = tmp_path / "kern.log"
    log.write_text(kernel_log("iso", events))
    return ingest(capsys, "kernel-log", str(log), "--store", str(store_dir))


def page_text(at) -> str:
    parts = [e.value for kind in (at.caption, at.markdown, at.info, at.subheader) for e in kind]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(str(p) for p in parts)


def test_a_kernel_log_of_seconds_shows_counts_and_its_span_not_rates(kernel_log_run):
    at = open_page(PAGE, {"run": kernel_log_run})
    assert not at.exception
    shown = {m.label: m.value for m in at.metric}
    assert (
        shown["XID events"] == "9" and shown["XID codes"] == "3" and shown["Span of the XID events"] == "40 s"
    )
    text = page_text(at)
    assert "a day" not in text and "/day" not in text and "per day" not in text  # no rate from 40 seconds
    # too short for bars per window: each event drawn at its time, the span given with seconds from the start
    assert any(
        c.value.startswith(
            "9 XID events from 2024-12-02 11:00 UTC (0.0 s from the start) to "
            "2024-12-02 11:00 UTC (40.5 s from the start): too short a span for counts"
        )
        for c in at.caption
    )
    assert not any("counted per" in c.value for c in at.caption)
    # the time slider moves through the log's 40.5 s second by second, its values read to the second (UTC)
    slider = at.slider[0]
    assert slider.label == "Time on 2024-12-02 (UTC)" and slider.proto.format == "HH:mm:ss"
    assert slider.value == datetime(2024, 12, 2, 11, 0, 40, 500000)  # the end of the log
    assert slider.proto.step == 1_000_000  # microseconds: one second
    # the fatal XID 79 failed GPU 0 and took its host (both GPUs) down until the end of the log
    assert (shown["Failed GPUs"], shown["GPUs out of service"], shown["GPUs training"]) == ("1", "2", "0")
    # the lemon rule's tab says why no host can meet it
    at.session_state["tab"] = "Lemons and repeat offenders"
    assert "This run spans 40 s, less than the rule's window" in page_text(at.run())


def test_the_charts_of_that_log_take_codes_as_categories(kernel_log_run, store_dir):
    totals = queries.xid_counts(kernel_log_run)
    assert totals.select("xid", "events").rows() == [(20034, 6), (13, 2), (79, 1)]
    fig = charts.xid_counts(totals)
    assert fig.layout.yaxis.type == "category" and "20034" in fig.data[0].y
    assert fig.layout.xaxis.dtick == 1  # 6 at most: 0, 1, 2, ... never 0.5
    strip = charts.xid_strip(queries.xid_events(kernel_log_run), datetime(2024, 12, 2, 11, tzinfo=UTC))
    assert [t.name for t in strip.data] == ["20034", "13 GR_EXCEPTION", "79 GPU_HAS_FALLEN_OFF_THE_BUS"]


def test_one_gpu_of_that_log_lists_its_xids_to_the_second(kernel_log_run):
    at = open_page(PAGE, {"run": kernel_log_run, "gpu": "1"})  # GPU 2 of the log is the host's second GPU
    assert not at.exception
    events = at.dataframe[-1].value
    assert events["from_start_s"].tolist() == [40.0, 40.5]  # both in one minute: the seconds tell them apart
    assert events["xid"].tolist() == ["13 GR_EXCEPTION"] * 2


def test_a_single_scrape_is_one_moment(tmp_path, store_dir, capsys):
    """One scrape of one host: no time to slide over, no host states (dashes, not zeros), one point a GPU."""
    scrape = tmp_path / "one.prom"
    scrape.write_text(scrape_text(1, 8, 1))
    run_id = ingest(capsys, "dcgm", str(scrape), "--store", str(store_dir))
    at = open_page(PAGE, {"run": run_id, "gpu": "0"})
    assert not at.exception
    assert not at.slider and any(
        c.value.startswith("This run is a single moment (2024-12-02 10:00 UTC") for c in at.caption
    )
    shown = {m.label: m.value for m in at.metric}
    assert (
        shown["GPUs in the run"] == "8"
        and shown["GPUs training"] == "–"
        and shown["GPUs out of service"] == "–"
    )
    assert "One sample, drawn as read." in [c.value for c in at.caption]
    assert "This run recorded no XID events." in [i.value for i in at.info]
