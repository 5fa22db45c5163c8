"""`goodput watch` against the real servers: Debian's prometheus scraping recorded DCGM text, and a single-node
Slurm running short jobs (tests/servers). What lands in the run after each cycle, the XID joined to the job
that held its host, a drained node's states, a Prometheus stopped mid-watch, and a bad first cycle."""

import json
import re
import socket
import threading
import time

import polars as pl
import pytest

from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import slurm
from engine.ingest.watch import SourceState, job_goodput, jobs_goodput_total, loop, source_states, watch_loop
from engine.store import Store
from engine.store.schema import OUT_OF_SERVICE_STATES
from engine.twin.backtest import backtest
from engine.twin.calibrate import calibrate
from engine.twin.sweep import LocalExecutor
from tests.servers import prometheus as prometheus_servers

# the servers' session fixtures, used here by name


@pytest.fixture(autouse=True)
def fast_cycles(monkeypatch):
    """Cycles a fraction of a second apart: the floor for real clusters (loop.MIN_EVERY_S) is lowered in this
    process; tests/test_watch_doors.py checks the real one."""
    monkeypatch.setattr(loop, "MIN_EVERY_S", 0.1)


def _dead_url() -> str:
    """A URL on which nothing listens (a port just freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _no_job_running(cluster, timeout_s: float = 60.0) -> None:
    """Cancel every job on the cluster and wait until Slurm runs none."""
    cluster.run("scancel", "--user=root")
    deadline = time.monotonic() + timeout_s
    while cluster.run("squeue", "--noheader", "--format=%i").strip():
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs still queued after {timeout_s:g} s of scancel")
        time.sleep(0.5)


def _accounted(cluster, job_id: str, state: str, timeout_s: float = 30.0) -> None:
    """Wait until accounting (sacct, what the watch reads) has the job in `state`: slurmdbd hears of a job's
    start and end some moments after slurmctld."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs = slurm.read_jobs(cluster.source(), None).jobs.filter(pl.col("job_id") == job_id)
        if jobs.height and jobs["state"][0] == state:
            return
        time.sleep(0.2)
    raise TimeoutError(f"sacct does not show job {job_id} {state} after {timeout_s} s")


def _wait_until(t: float) -> None:
    while time.time() < t:
        time.sleep(0.1)


def test_prometheus_only_one_cycle_reads_hosts_gpus_and_the_xid(prometheus_server, tmp_path, capsys):
    server = prometheus_server
    _wait_until(server.xid_at + 3)  # the XID scraped and stored
    since = f"{int(time.time() - server.started + 60)}s"
    code = main(
        [
            "watch",
            "--prometheus",
            server.url,
            "--cycles",
            "1",
            "--since",
            since,
            "--json",
            "--store",
            str(tmp_path),
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    store = Store(tmp_path)
    run_id = result["run_id"]
    assert result["hosts"] == len(server.hosts)
    assert result["gpus"] == len(server.hosts) * server.gpus_per_host
    assert result["cycles"] == 1 and result["jobs"] == 0
    [state] = source_states(store.info(run_id).summary)
    assert state.source == "prometheus" and state.reachable and state.target == server.url.rstrip("/")
    info = store.info(run_id)
    assert info.scenario["source"] == "watch" and info.scenario["prometheus"] == server.url.rstrip("/")
    with store.connect(run_id) as con:
        xids = con.sql(
            "SELECT h.hostname, g.index, x.xid, x.t_s, x.incident_id FROM xid_events x"
            " JOIN gpus g USING (gpu_id) JOIN hosts h ON h.host_id = x.host_id"
        ).pl()
        incidents = con.sql("SELECT xid, jobs_hit, job_ids, cause FROM incidents").pl()
        samples = con.sql("SELECT count(*) AS n FROM gpu_samples WHERE temp_c IS NOT NULL").pl()
        ecc = con.sql(
            "SELECT h.hostname, g.index, s.ecc_sbe, s.ecc_dbe FROM gpu_samples s JOIN gpus g USING (gpu_id)"
            " JOIN hosts h USING (host_id) WHERE s.ecc_sbe IS NOT NULL OR s.ecc_dbe IS NOT NULL"
        ).pl()
    # the exporter's events (tests/fixtures/ingest/dcgm_exporter.py): XID 79 on host 0 GPU 3, XIDs 13 then 43 on
    # host 1 GPU 2; only 79 is fatal, so one incident
    h1 = server.hosts[1]
    assert sorted(xids.select("hostname", "index", "xid").rows()) == sorted(
        [(server.xid_host, server.xid_gpu, 79), (h1, 2, 13), (h1, 2, 43)]
    )
    xid79 = xids.filter(pl.col("xid") == 79)
    # placed at the first step of the range query that saw it (steps of one scrape interval, 1 s here)
    t79 = xid79["t_s"][0] + info.started_at.timestamp()
    assert server.xid_at <= t79 < server.xid_at + server.every_s
    assert xid79["incident_id"][0] == 0
    assert incidents.rows() == [(79, 0, [], "faulty_gpu")]  # no Slurm: no job to join
    # raw series stay in Prometheus: the only samples are the ECC totals where they rose (host 0 GPU 6 SBE
    # 5 -> 8, host 1 GPU 5 DBE 0 -> 2)
    assert samples["n"][0] == 0
    assert sorted(ecc.rows()) == [(server.hosts[0], 6, 8, None), (h1, 5, None, 2)]


def test_a_bad_url_at_the_first_cycle_is_an_error_and_nothing_is_written(tmp_path, capsys):
    url = _dead_url()
    code = main(["watch", "--prometheus", url, "--cycles", "1", "--store", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("goodput: error: Prometheus (") and url in err and "nothing was written" in err
    assert Store(tmp_path).run_ids() == []
    with pytest.raises(GoodputError, match="give --prometheus URL, --slurm, or both"):
        watch_loop(Store(tmp_path))


def test_a_password_in_the_url_is_never_stored(tmp_path):
    url = _dead_url().replace("//", "//admin:s3cret@")
    with pytest.raises(GoodputError) as caught:
        watch_loop(Store(tmp_path), prometheus_url=url, cycles=1)
    assert "s3cret" not in str(caught.value)


@pytest.mark.xdist_group("slurm")
def test_three_cycles_over_prometheus_and_slurm(slurm_cluster, tmp_path):
    """Cycle 1: a 2-GPU job holds the node when XID 79 is scraped on it. Before cycle 2 a job fails (exit 3)
    and one completes. Before cycle 3 the holder is cancelled, the node drained, and Prometheus stopped: the
    cycle reports Prometheus unreachable while Slurm's news still lands."""
    cluster = slurm_cluster
    _no_job_running(
        cluster
    )  # the session's cluster may still run another test's jobs: the XID must meet ours
    holder = cluster.submit("--gres=gpu:2", "--job-name=holder", "--wrap", "sleep 120")
    cluster.wait(holder, states=("RUNNING",))
    _accounted(cluster, holder, "RUNNING")
    server = prometheus_servers.start_prometheus(tmp_path / "prom", hosts=[cluster.node], bare_host=None)
    try:
        _wait_until(server.xid_at + 3)
        store = Store(tmp_path / "store")
        seen: dict[int, dict] = {}
        lines: list[str] = []

        def between(line: str) -> None:
            lines.append(line)
            committed = re.match(r"cycle (\d+) at ", line)  # a cycle's line (a problem's: "cycle 3: ...")
            if committed is None:
                return
            number = int(committed.group(1))
            if number in seen:
                return
            [run_id] = store.run_ids()
            seen[number] = {"run_id": run_id}
            if number == 1:
                seen["failed"] = cluster.submit("--job-name=fails", "--wrap", "exit 3")
                seen["done"] = cluster.submit("--job-name=done", "--gres=gpu:1", "--wrap", "sleep 1")
                _accounted(cluster, seen["failed"], "FAILED")
                _accounted(cluster, seen["done"], "COMPLETED")
            elif number == 2:
                cluster.run("scancel", holder)
                _accounted(cluster, holder, "CANCELLED")
                seen["drained_at"] = time.time()
                cluster.drain("xid 79 on gpu")
                server.stop()

        result = watch_loop(
            store,
            prometheus_url=server.url,
            slurm_source=cluster.source(),
            every_s=1.0,
            cycles=3,
            lookback_s=time.time() - server.started + 60,
            log=between,
        )
    finally:
        server.stop()
        cluster.resume()
    run_id = result["run_id"]
    assert result["cycles"] == 3
    states = {s.source: s for s in source_states(store.info(run_id).summary)}
    assert states["slurm"].reachable and states["slurm"].failed_cycles == 0
    assert not states["prometheus"].reachable and states["prometheus"].failed_cycles == 1
    assert (
        states["prometheus"].line().startswith(f"Prometheus ({server.url.rstrip('/')}): unreachable since ")
    )
    assert result["failed_cycles"] == {"prometheus": 1}
    assert any("unreachable since" in line for line in lines)

    with store.connect(run_id) as con:
        jobs = con.sql("SELECT job_id, name, gpus, state, end_s FROM jobs ORDER BY job_id").pl()
        attempts = con.sql("SELECT job_id, attempt, end_reason, hosts FROM job_attempts").pl()
        incidents = con.sql("SELECT xid, host_id, jobs_hit, job_ids FROM incidents").pl()
        hosts = con.sql("SELECT host_id, hostname FROM hosts").pl()
        host_states = con.sql("SELECT host_id, state, start_s, end_s FROM host_states ORDER BY start_s").pl()
    mine = jobs.filter(pl.col("job_id").is_in([holder, seen["failed"], seen["done"]]))
    # one row a job: a later cycle replaced the holder's running row with its cancelled one
    assert jobs["job_id"].is_unique().all()
    assert sorted(mine.select("name", "gpus", "state").rows()) == [
        ("done", 1.0, "completed"),
        ("fails", 0.0, "failed"),
        ("holder", 2.0, "cancelled"),
    ]
    assert mine["end_s"].null_count() == 0
    node_id = hosts.filter(pl.col("hostname") == cluster.node)["host_id"][0]
    failed = attempts.filter(pl.col("job_id") == seen["failed"])
    assert failed.select("attempt", "end_reason").rows() == [(1, "failed")]
    assert failed["hosts"][0].to_list() == [node_id]
    # the XID on the node, joined to the job that held it then (gcm's join)
    assert incidents.rows() == [(79, node_id, 1, [holder])]
    # the drain: out of service from its reason time (within a second of the command) to the run's end
    node = host_states.filter(pl.col("host_id") == node_id)
    out = node.filter(pl.col("state").is_in(OUT_OF_SERVICE_STATES))
    started = store.info(run_id).started_at.timestamp()
    assert out.height == 1
    assert out["start_s"][0] + started == pytest.approx(seen["drained_at"], abs=2.0)
    assert out["end_s"][0] == pytest.approx(store.info(run_id).duration_s)
    # states tile the watched span without overlap
    assert node["start_s"][0] == 0.0
    assert (node["start_s"][1:] == node["end_s"][:-1]).all()
    # the holder's interruption is the incident; the failed job's its failed attempt
    goodput = result["jobs_goodput"]
    assert goodput is not None and 0 < goodput <= 1

    # the twin learns the watched run (issue 23): the drained node's time out of service is not exposure, and
    # the backtest reads the same run
    fit = calibrate(store, run_id)
    assert fit.keys["cluster.gpus"].value == store.info(run_id).summary["gpus"]
    assert fit.keys["training.gpus"].value >= 2  # the holder's two GPUs, or a larger job of the session's
    drained_days = (out["end_s"][0] - out["start_s"][0]) / 86400
    whole_days = hosts.height * fit.window.days
    assert fit.exposure_host_days == pytest.approx(whole_days - drained_days, abs=1e-6)
    test = backtest(store, fit, 2, executor=LocalExecutor(1))
    assert test.observed.incidents == 1 and test.figures["ettr"].observed_is == "upper bound"


def test_job_goodput_counts_attempts_time_over_wall_clock():
    jobs = pl.DataFrame(
        {
            "job_id": ["1", "2", "3"],
            "gpus": [8.0, 2.0, 4.0],
            "start_s": [0.0, 10.0, None],
            "end_s": [100.0, None, None],
        }
    )
    # job 1 ran 0-40, was requeued, waited 20 s, ran 60-100: 80 s kept of 100; job 2 still runs (to now = 50)
    attempts = pl.DataFrame(
        {
            "job_id": ["1", "1", "2"],
            "attempt": [1, 2, 1],
            "start_s": [0.0, 60.0, 10.0],
            "end_s": [40.0, 100.0, 50.0],
            "end_reason": ["requeued", "completed", "end_of_run"],
        }
    )
    frame = job_goodput(jobs, attempts, now_s=50.0)
    assert frame.select("job_id", "wall_s", "kept_s", "interruptions", "goodput").rows() == [
        ("1", 100.0, 80.0, 1, 0.8),
        ("2", 40.0, 40.0, 0, 1.0),
    ]
    assert jobs_goodput_total(jobs, attempts, 50.0) == round((8 * 80 + 2 * 40) / (8 * 100 + 2 * 40), 6)


def test_source_state_lines():
    state = SourceState("prometheus", "http://prom:9090")
    state.failed(1_700_000_000.0, "connection refused")
    state.failed(1_700_000_060.0, "connection refused")
    assert (
        state.line()
        == "Prometheus (http://prom:9090): unreachable since 2023-11-14 22:13 UTC (connection refused)"
    )
    assert state.failed_cycles == 2
    state.succeeded(1_700_000_120.0)
    assert state.line() == "Prometheus (http://prom:9090): reachable, last read 2023-11-14 22:15 UTC"


def test_a_signal_stops_the_watch_between_cycles(prometheus_server, tmp_path):
    stop = threading.Event()
    store = Store(tmp_path)
    done: dict = {}

    def run() -> None:
        done["result"] = watch_loop(
            store, prometheus_url=prometheus_server.url, every_s=30.0, stop=stop, quiet=True
        )

    thread = threading.Thread(target=run)
    thread.start()
    while not store.run_ids():
        time.sleep(0.05)
    t0 = time.monotonic()
    stop.set()
    thread.join(20)
    # less than the 30 s cycle it would otherwise wait out, with room for a busy machine
    assert not thread.is_alive() and time.monotonic() - t0 < 25.0
    assert done["result"]["cycles"] == 1
