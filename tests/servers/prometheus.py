"""A real Prometheus (Debian's `prometheus` package) scraping a small DCGM exporter, on 127.0.0.1.

    from tests.servers.prometheus import prometheus_server  # noqa: F401  (the session fixture)

`start_prometheus(tmp_dir)` starts the exporter (tests/fixtures/ingest/dcgm_exporter.py) and a Prometheus that
scrapes it every second, one target a fake host, and returns once the scrapes up to `ready_scrape` are stored.
Each pytest-xdist worker starts its own pair on free ports in its own folders, so no test group is needed.
Both run in their own process groups, which `stop()` ends (SIGTERM, then SIGKILL).

With `rules=` (a rule file such as data/prometheus/goodput-rules.yml) Prometheus also evaluates the rules every
`evaluation_every_s`. An evaluation at time e reads the latest sample at or before e of each series, and its
result is stamped e; e is scrape n's stamp plus a fixed offset that Prometheus derives from the group's name and
file (`rules_offset_s`, read back once the first result is stored). So that the evaluation just after scrape n's
stamp sees scrape n, the exporter's stamps run RULES_LEAD_S ahead of the clock: every scrape is stored before its
stamp comes, and the recorded series equal the raw ones at every stamp + offset, exactly.
"""

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fixtures.ingest import dcgm_exporter
from tests.serving import free_port, stop

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = "/usr/bin/prometheus"
HOSTS = ["node001", "node002", "node003"]
BARE_HOST = "node004"  # served without a Hostname label: Goodput names it by its instance, `node004:9400`
READY_SCRAPE = 5  # every event of the exporter happens by scrape 4
START_TIMEOUT_S = 30.0
RULES_LEAD_S = 15  # Prometheus starts and first scrapes 2-7 s after the exporter here (2 shared cores), x2


@dataclass
class PrometheusServer:
    url: str  # the base URL (with the route prefix, if any)
    hosts: list[str]  # host names as Goodput reads them (Hostname, else instance)
    gpus_per_host: int
    xid_at: float  # epoch s of the scrape where XID 79 appears, on xid_host's GPU xid_gpu
    xid_host: str
    xid_gpu: int
    started: float  # epoch s of scrape 0 (every host's first sample)
    every_s: int  # scrape n of every host is stamped started + n * every_s
    processes: list[subprocess.Popen] = field(default_factory=list, repr=False)
    folder: Path | None = None
    rules: Path | None = None  # the rule file Prometheus evaluates, if any

    def rules_offset_s(self, record: str, scrape: int, timeout_s: float = START_TIMEOUT_S) -> float:
        """Once `record` (a recorded series) holds the evaluation that follows scrape `scrape`: the seconds from a
        scrape's stamp to that evaluation's (0 <= offset < every_s, whole milliseconds)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if _get(f"{self.url}/-/ready")[0] != 200:
                raise RuntimeError(f"prometheus at {self.url} stopped")
            query = f"timestamp({record})"
            status, body = _get(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
            result = json.loads(body)["data"]["result"] if status == 200 else []
            if result:
                stamp_ms = round(float(result[0]["value"][1]) * 1000)
                offset_ms = (stamp_ms - round(self.started * 1000)) % (self.every_s * 1000)
                if stamp_ms - offset_ms >= round(self.at(scrape) * 1000):
                    return offset_ms / 1000
            time.sleep(0.2)
        raise RuntimeError(f"prometheus at {self.url} did not record {record} after scrape {scrape} in time")

    def at(self, n: int) -> float:
        """Epoch seconds of scrape `n`."""
        return float(self.started + n * self.every_s)

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop(process)
        self.processes.clear()


def start_prometheus(
    tmp_dir: Path,
    *,
    hosts: list[str] | None = None,
    bare_host: str | None = BARE_HOST,
    route_prefix: str = "",
    xid_scrape: int = dcgm_exporter.XID_SCRAPE,
    ready_scrape: int = READY_SCRAPE,
    rules: Path | None = None,
    evaluation_every_s: int = 1,
) -> PrometheusServer:
    """Exporter and Prometheus in `tmp_dir`; returns when scrape `ready_scrape` of every host is stored. With
    `rules`, Prometheus evaluates that rule file every `evaluation_every_s` (module docstring)."""
    if not Path(PROMETHEUS).exists():
        pytest.fail(
            f"{PROMETHEUS} is missing: install Debian's prometheus package (apt-get install prometheus)",
            pytrace=False,
        )
    hosts = list(HOSTS if hosts is None else hosts)
    served = hosts + ([f"={bare_host}"] if bare_host else [])
    tmp_dir.mkdir(parents=True, exist_ok=True)
    t0 = int(time.time()) + (RULES_LEAD_S if rules is not None else 0)
    exporter = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fixtures.ingest.dcgm_exporter",
            "--t0",
            str(t0),
            "--xid-scrape",
            str(xid_scrape),
            *served,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=open(tmp_dir / "exporter.log", "wb"),  # noqa: SIM115 (the child keeps it)
        start_new_session=True,
    )
    server = PrometheusServer(
        url="",
        hosts=hosts + ([f"{bare_host}:9400"] if bare_host else []),
        gpus_per_host=dcgm_exporter.GPUS,
        xid_at=float(t0 + xid_scrape),
        xid_host=hosts[dcgm_exporter.XID_HOST],
        xid_gpu=dcgm_exporter.XID_GPU,
        started=float(t0),
        every_s=1,
        processes=[exporter],
        folder=tmp_dir,
        rules=rules,
    )
    try:
        line = exporter.stdout.readline().strip()
        if not line.isdigit():
            raise RuntimeError(
                f"the exporter did not start: {(tmp_dir / 'exporter.log').read_text()[-2000:]}"
            )
        _write_config(tmp_dir / "prometheus.yml", int(line), served, rules, evaluation_every_s)
        for _attempt in range(3):  # a free port can be taken between choosing and binding it: try another
            port = free_port()
            prefix = route_prefix.rstrip("/")
            server.url = f"http://127.0.0.1:{port}{prefix}"
            data = tmp_dir / f"data-{port}"
            command = [
                PROMETHEUS,
                f"--config.file={tmp_dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ]
            if prefix:
                command += [f"--web.route-prefix={prefix}", f"--web.external-url={server.url}"]
            log = tmp_dir / f"prometheus-{port}.log"
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=open(log, "wb"),  # noqa: SIM115 (the child keeps it)
                start_new_session=True,
            )
            server.processes.append(process)
            if _wait_ready(server.url, process):
                break
            stop(process)
            server.processes.remove(process)
            shutil.rmtree(data, ignore_errors=True)
        else:
            raise RuntimeError(f"prometheus did not start: {log.read_text()[-2000:]}")
        _wait_scrapes(server, len(served), t0 + ready_scrape)
        if rules is not None and time.time() >= t0 + ready_scrape:
            raise RuntimeError(
                f"prometheus stored scrape {ready_scrape} after its stamp: the rules would see it late;"
                f" RULES_LEAD_S ({RULES_LEAD_S} s) is too short for this machine"
            )
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def prometheus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    server = start_prometheus(tmp_path_factory.mktemp("prometheus"))
    try:
        yield server
    finally:
        server.stop()


def _write_config(
    path: Path, exporter_port: int, served: list[str], rules: Path | None = None, evaluation_every_s: int = 1
) -> None:
    """One job, one target a host (its path on the exporter), each with the instance a real host would have;
    the rule file, if any, evaluated every `evaluation_every_s`."""
    groups = [
        {
            "targets": [f"127.0.0.1:{exporter_port}"],
            "labels": {"__metrics_path__": f"/metrics/{host}", "instance": f"{host.lstrip('=')}:9400"},
        }
        for host in served
    ]
    config = {
        "global": {
            "scrape_interval": "1s",
            "scrape_timeout": "1s",
            "evaluation_interval": f"{evaluation_every_s}s",
        },
        "scrape_configs": [{"job_name": "dcgm", "honor_timestamps": True, "static_configs": groups}],
    }
    if rules is not None:
        config["rule_files"] = [str(Path(rules).resolve())]
    path.write_text(json.dumps(config, indent=1))  # YAML is a superset of JSON


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, b""
    except OSError:
        return 0, b""


def _wait_ready(url: str, process: subprocess.Popen) -> bool:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if _get(f"{url}/-/ready")[0] == 200:
            return True
        time.sleep(0.1)
    return False


def _wait_scrapes(server: PrometheusServer, series_hosts: int, stamp: int) -> None:
    """Until every host's temperature stamped `stamp` is stored. Asked at `stamp` itself: with RULES_LEAD_S the
    stamps run ahead of the clock, and a query at now would not see them yet."""
    query = f"count(timestamp(DCGM_FI_DEV_GPU_TEMP) >= {stamp})"
    wanted = series_hosts * dcgm_exporter.GPUS
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        params = {"query": query, "time": stamp}
        status, body = _get(f"{server.url}/api/v1/query?" + urllib.parse.urlencode(params))
        if status == 200:
            result = json.loads(body)["data"]["result"]
            if result and int(float(result[0]["value"][1])) >= wanted:
                return
        time.sleep(0.2)
    raise RuntimeError(f"prometheus at {server.url} did not store scrape {stamp} of every host in time")
