"""Checkpoints where the job logs them, read from the real test Prometheus: the fake exporter serves
`training_checkpoint_timestamp_seconds{slurm_job_id=...}` for two job ids, with known values by scrape number
(tests/fixtures/ingest/dcgm_exporter.py CHECKPOINTS), and the watch writes one checkpoints row for each."""

import json

import polars as pl
import pytest

from engine.cli import main
from engine.ingest.watch import loop, read_checkpoints, watch_loop
from engine.store import Store
from tests.fixtures.ingest import dcgm_exporter

# the servers' session fixtures, used here by name


@pytest.fixture(autouse=True)
def fast_cycles(monkeypatch):
    """Cycles a fraction of a second apart: the floor for real clusters (loop.MIN_EVERY_S) is lowered in this
    process; tests/test_watch_doors.py checks the real one."""
    monkeypatch.setattr(loop, "MIN_EVERY_S", 0.1)


def _expected(server) -> list[tuple[str, float]]:
    """Every checkpoint the exporter shows by READY_SCRAPE, at its own time (between scrapes)."""
    return sorted(
        (job, server.started + offset * server.every_s)
        for job, shown in dcgm_exporter.CHECKPOINTS.items()
        for _first, offset in shown
    )


def test_each_distinct_value_of_a_jobs_gauge_is_one_checkpoint_at_its_own_time(prometheus_server, tmp_path):
    server = prometheus_server
    store = Store(tmp_path)
    result = watch_loop(
        store,
        prometheus_url=server.url,
        checkpoint_metric=dcgm_exporter.CHECKPOINT_METRIC,
        every_s=0.2,
        cycles=2,  # the second cycle reads the gauges' latest values again: nothing new
        lookback_s=_lookback(server),
        quiet=True,
    )
    info = store.info(result["run_id"])
    with store.connect(result["run_id"]) as con:
        rows = con.sql("SELECT job_id, start_s, end_s FROM checkpoints ORDER BY job_id, end_s").pl()
    origin = info.started_at.timestamp()
    # exact to the float: a time is stored as seconds from the run's start
    assert [(job, pytest.approx(end + origin, abs=1e-6)) for job, _, end in rows.rows()] == _expected(server)
    assert (rows["start_s"] == rows["end_s"]).all()  # the duration of a saved checkpoint is not exported
    assert result["checkpoints"] == 5
    assert info.scenario["checkpoint_metric"] == {
        "name": dcgm_exporter.CHECKPOINT_METRIC,
        "job_label": dcgm_exporter.CHECKPOINT_LABEL,
    }


def test_read_checkpoints_asks_by_the_job_label(prometheus_server):
    from engine.ingest.watch import PrometheusAccess

    server = prometheus_server
    source = PrometheusAccess(server.url).source()
    end = server.at(6)
    read = read_checkpoints(source, dcgm_exporter.CHECKPOINT_METRIC, "slurm_job_id", server.started - 5, end)
    assert read.rows() == _expected(server)
    # only what the window saw: from scrape 3 on, 1001's first checkpoint is overwritten
    later = read_checkpoints(source, dcgm_exporter.CHECKPOINT_METRIC, "slurm_job_id", server.at(3), end)
    assert later.filter(pl.col("job_id") == "1001")["t"].to_list() == [
        server.started + 2.25,
        server.started + 4.75,
    ]
    # a label no series has: nothing asked for comes back
    assert read_checkpoints(source, dcgm_exporter.CHECKPOINT_METRIC, "job_id", server.started, end).is_empty()


def test_the_command_reads_checkpoints_with_a_named_label(prometheus_server, tmp_path, capsys):
    code = main(
        [
            "watch",
            "--prometheus",
            prometheus_server.url,
            "--checkpoint-metric",
            dcgm_exporter.CHECKPOINT_METRIC,
            "--checkpoint-job-label",
            dcgm_exporter.CHECKPOINT_LABEL,
            "--cycles",
            "1",
            "--since",
            f"{int(_lookback(prometheus_server))}s",
            "--json",
            "--store",
            str(tmp_path),
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["checkpoints"] == 5
    # no Slurm, so no job: nothing measured, nothing bounded
    assert (result["jobs_goodput_measured"], result["jobs_goodput_upper_bounds"]) == (0, 0)


def _lookback(server) -> float:
    import time

    return time.time() - server.started + 60
