"""Calibrating runs that were observed, not simulated (issue 23, 7): telemetry ingested from DCGM scrapes and
kernel logs in their real formats, a Slurm trace replayed, a one-host run and one with nothing in it. Each fits
what it can see, keeps the prior where it cannot and says so, and backtests without error."""

import json
from dataclasses import replace

import pytest

from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import ingest_dcgm, ingest_kernel_logs
from engine.store import Store
from engine.twin.backtest import backtest
from engine.twin.calibrate import RUN_KEY, calibrate
from engine.twin.sweep import LocalExecutor
from tests.fixtures.ingest.samples import kernel_log, scrape_text, xid_body

REPLAY = "tests/fixtures/replay/sacct.txt"


def _fits_and_backtests(store: Store, run_id: str):
    fit = calibrate(store, run_id)
    test = backtest(store, fit, 2, executor=LocalExecutor(1))
    assert set(test.figures) >= {"interruptions", "incidents", "gpu_hours_lost", "ettr"}
    return fit, test


def test_dcgm_scrapes_with_kernel_logs_fit_the_shape_and_keep_the_prior_rate(tmp_path):
    """Four hosts of eight GPUs scraped for an hour; a kernel log with a fatal XID 79 on one of them."""
    store = Store(tmp_path / "store")
    scrape = ("s.prom", scrape_text(4, 8, 120).encode())
    # half an hour into the scrapes (kernel_log's offsets count from an hour after them)
    log = ("node000.log", kernel_log("iso", [(-1800.0, xid_body(3, 79))]).encode())
    run_id = store.write_run(ingest_dcgm([scrape], kernel_logs=[log]))
    fit, test = _fits_and_backtests(store, run_id)
    assert fit.keys["cluster.gpus"].value == 32 and fit.keys["cluster.gpus_per_host"].value == 8
    rate = fit.keys[RUN_KEY]
    assert rate.source == "prior" and rate.n == 1  # one failure in a few host-hours: far too few to fit
    assert any("too few to fit the rate" in w for w in fit.warnings)
    assert any("under a week" in w for w in fit.warnings)
    assert test.observed.incidents == 1


def test_a_replayed_sacct_trace_fits_its_jobs(tmp_path, capsys):
    store_dir = tmp_path / "store"
    assert main(["replay", REPLAY, "--store", str(store_dir), "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    store = Store(store_dir)
    fit, test = _fits_and_backtests(store, run_id)
    assert fit.keys["training.gpus"].value == test.observed.largest_job_gpus
    # Slurm records no checkpoints: the observed ETTR is an upper bound and the band reads it as one
    assert test.figures["ettr"].observed_is == "upper bound"
    assert test.figures["gpu_hours_lost"].observed_is == "lower bound"


def test_a_one_host_run(tmp_path):
    store = Store(tmp_path / "store")
    run_id = store.write_run(ingest_dcgm([("one.prom", scrape_text(1, 8, 10).encode())]))
    fit, test = _fits_and_backtests(store, run_id)
    assert fit.keys["cluster.gpus"].value == 8
    assert fit.keys[RUN_KEY].n == 0 and fit.keys[RUN_KEY].high > 0  # an upper bound, never zero
    assert test.observed.largest_job is None and test.figures["ettr"].inside is None


def test_an_empty_run_keeps_every_default(tmp_path):
    """A run with no host, GPU, job or incident (a watch whose sources have shown nothing yet)."""
    store = Store(tmp_path / "store")
    quiet = ingest_dcgm([("one.prom", scrape_text(1, 8, 10).encode())])
    empty = replace(quiet, tables={name: frame.head(0) for name, frame in quiet.tables.items()})
    fit, test = _fits_and_backtests(store, store.write_run(empty))
    assert not {k for k in fit.keys if k.startswith("cluster.")}
    assert fit.keys[RUN_KEY].source == "prior" and fit.exposure_host_days == 0
    assert fit.scenario().cluster.gpus > 0  # the defaults' cluster: the fitted scenario still runs
    assert test.observed.largest_job is None


def test_real_dcgm_and_kernel_logs(shared_data, tmp_path):
    store = Store(tmp_path / "store")
    logs = shared_data / "kernel-logs"
    run = ingest_kernel_logs([logs / "dmesg-xid13-sm-exceptions.log", logs / "sxid20034_xid79.log"])
    fit = calibrate(store, store.write_run(run))
    assert fit.keys[RUN_KEY].n == 1  # the XID 79: the one failure the logs hold
    assert fit.keys[RUN_KEY].source == "prior"
    one_scrape = store.write_run(ingest_dcgm([shared_data / "dcgm" / "kops_L4_scrape.prom"]))
    with pytest.raises(GoodputError, match="spans no time"):
        calibrate(store, one_scrape)


@pytest.mark.parametrize("flag", ["--since", "--until"])
def test_a_window_outside_an_observed_run_is_refused(tmp_path, capsys, flag):
    store = Store(tmp_path / "store")
    run_id = store.write_run(ingest_dcgm([("one.prom", scrape_text(1, 8, 10).encode())]))
    assert main(["calibrate", "--run", run_id, "--store", str(store.root), flag, "30d"]) == 2
    assert "not inside the run" in capsys.readouterr().err
