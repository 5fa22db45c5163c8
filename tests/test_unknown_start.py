"""A kernel log stamped only in seconds since boot (`[12345.678901] NVRM: Xid ...`) says nothing of its date: the
run records that its start is unknown (engine.store.run.UNKNOWN_START) instead of inventing one from the file's
modification time, the command line prints a note, and pages show its times as "+3 h 25 min from start"."""

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from dashboard.format import fmt_time
from dashboard.text_exprs import time_text
from engine.cli import main
from engine.ingest import ingest_kernel_logs
from engine.store import Store
from engine.store.run import UNKNOWN_START, start_known
from tests.fixtures.ingest.samples import T0, kernel_log, scrape_text, xid_body

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
LATER = 3 * 3600 + 25 * 60  # the second XID, 3 h 25 min after the first
BOOT_LOG = kernel_log("dmesg", [(0.0, xid_body(3, 79)), (LATER, xid_body(5, 79))], host="node001", noise=1)


def test_the_cli_records_an_unknown_start_and_says_so(tmp_path, capsys):
    path = tmp_path / "node001.dmesg"
    path.write_text(BOOT_LOG)
    os.utime(path, (datetime(2024, 6, 1, tzinfo=UTC).timestamp(),) * 2)  # no date is taken from the mtime
    store = tmp_path / "store"
    assert main(["ingest", "kernel-log", str(path), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("  note: ")]
    assert notes == [
        f"  note: {path}: stamped in seconds since boot only, so its dates are unknown; times are"
        ' shown from its first line ("+3 h 25 min from start"); a log with dates (dmesg -T,'
        " journalctl -k -o short-iso) would date them."
    ]
    [run_id] = Store(store).run_ids()
    info = Store(store).info(run_id)
    assert info.started_at == UNKNOWN_START and not start_known(info.started_at)
    assert info.summary["start_known"] is False and info.scenario == {
        "source": "ingest",
        "inputs": [str(path)],
        "start": "unknown",
    }
    assert Store(store).table(run_id, "xid_events")["t_s"].to_list() == pytest.approx([1.0, 1.0 + LATER])
    assert main(["ingest", "kernel-log", str(path), "--store", str(store), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["start_known"] is False and printed["notes"][0].startswith(
        f"{path}: stamped in seconds since"
    )


@pytest.mark.parametrize("fmt", ["dmesg-T", "iso", "journal", "syslog"])
def test_a_dated_log_keeps_its_date_and_has_no_note(fmt):
    run = ingest_kernel_logs(
        [("node001.log", kernel_log(fmt, [(0.0, xid_body(3, 79))], host="node001"))], year=2024
    )
    assert run.started_at == T0 + timedelta(hours=1)  # its XID line's own date
    assert run.summary["start_known"] is True and run.summary["notes"] == [] and "start" not in run.scenario


def test_kmsg_is_since_boot_too():
    run = ingest_kernel_logs([("node001.kmsg", kernel_log("kmsg", [(0.0, xid_body(3, 79))], host="node001"))])
    assert run.started_at == UNKNOWN_START and run.summary["start_known"] is False


def test_with_a_dated_scrape_the_run_is_dated_and_the_log_is_named():
    """A DCGM scrape dates the run; the since-boot XIDs still cannot be placed on its clock, and the note says so."""
    run = ingest_kernel_logs([("node001.dmesg", BOOT_LOG)], dcgm=[("scrape.prom", scrape_text(2, 8, 3))])
    assert run.started_at == T0 and run.summary["start_known"] is True
    [note] = run.summary["notes"]
    assert note.startswith(
        "node001.dmesg: stamped in seconds since boot only: their XIDs are placed from the run's start"
    )


# ----- how pages show the times of such a run ---------------------------------------------------------------


def test_fmt_time_reads_from_the_start():
    assert fmt_time(UNKNOWN_START, LATER) == "+3 h 25 min from start"
    assert fmt_time(UNKNOWN_START.astimezone(UTC).replace(tzinfo=None), 45) == "+45 s from start"
    assert fmt_time(UNKNOWN_START, -90) == "-1 min from start"
    assert fmt_time(UNKNOWN_START, 3 * 86400 + 7 * 3600) == "+3 d 7 h from start"
    assert (
        fmt_time(datetime(2024, 3, 1, tzinfo=UTC), LATER) == "2024-03-01 03:25 UTC"
    )  # a dated run: its dates


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@settings(deadline=None)  # the first call compiles Polars' plan
@given(
    st.lists(
        st.one_of(st.none(), finite, st.sampled_from([float("nan"), float("inf"), -0.5, 0.5, -1.5])),
        max_size=20,
    )
)
@example([0.0, -0.4, -0.6, 59.5, 3599.6, 86399.5])
def test_time_text_is_fmt_time_for_an_unknown_start(vals):
    expected = [None if v is None else fmt_time(UNKNOWN_START, v) for v in vals]
    frame = pl.DataFrame({"x": vals}, schema={"x": pl.Float64})
    assert frame.select(time_text("x", UNKNOWN_START))["x"].to_list() == expected


def undated_page(tmp_path, monkeypatch, page: str) -> AppTest:
    """`page` of a run made from a boot-relative kernel log (its date unknown)."""
    store_dir = tmp_path / "store"
    monkeypatch.setenv("GOODPUT_STORE", str(store_dir))
    run_id = Store(store_dir).write_run(ingest_kernel_logs([("node001.dmesg", BOOT_LOG)]))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    return at.switch_page(f"app_pages/{page}.py").run()


def test_the_gpus_page_shows_times_from_the_start_not_dates(tmp_path, monkeypatch):
    at = undated_page(tmp_path, monkeypatch, "gpus")
    assert not at.exception
    shown = "\n".join(str(frame.value.to_string()) for frame in at.dataframe)
    shown += "\n".join(c.value for c in at.caption) + "\n".join(m.value for m in at.markdown)
    assert "from start" in shown
    assert "1970" not in shown


@pytest.mark.parametrize("page", ["overview", "jobs", "gpus", "incidents", "racks"])
def test_time_sliders_of_an_undated_run_count_hours_from_its_start(tmp_path, monkeypatch, page):
    at = undated_page(tmp_path, monkeypatch, page)
    assert not at.exception
    sliders = [s for s in at.slider if "from the run's start" in s.label]
    assert sliders, [s.label for s in at.slider]
    assert not [s.label for s in at.slider if "UTC" in s.label]
    for slider in sliders:  # a number of hours, not a datetime that would read 1970-01-01
        values = slider.value if isinstance(slider.value, tuple) else (slider.value,)
        assert all(isinstance(v, float) for v in values)
        assert max(values) == pytest.approx(LATER / 3600, abs=0.02)
