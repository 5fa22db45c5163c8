"""A real single-node Slurm for the tests: munge, MariaDB, slurmdbd, slurmctld and slurmd on 127.0.0.1.

Every daemon runs in the foreground as a child of the test process, its state, logs and config in a temporary
folder, its ports picked free at start; the node has 8 GPUs of gres backed by empty files (no devices here).
Teardown cancels every job, stops each daemon it started (also when starting failed half-way) and waits for it,
so no process is left behind. munged must listen on the default socket (/run/munge/munge.socket.2: Slurm's
AuthInfo socket= did not work with another one), which is one global resource, as is slurmd's spool: tests
using `slurm_cluster` are marked `@pytest.mark.xdist_group("slurm")` and run with `--dist loadgroup`.
A munged already answering on that socket (CI may start one) is used as it is.

    .venv/bin/python -m tests.servers.slurm      # bring one up, print its SLURM_CONF, stop it on Enter
"""

import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.ingest.slurm import SlurmSource
from tests.serving import free_port
from tests.serving import stop as stop_process

MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
PACKAGES = "munge mariadb-server slurmdbd slurmctld slurmd slurm-client"
BINARIES = {
    "munged": "munge",
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
    "mariadb": "mariadb-client",
    "slurmdbd": "slurmdbd",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "sbatch": "slurm-client",
    "scontrol": "slurm-client",
    "sacctmgr": "slurm-client",
    "sacct": "slurm-client",
}
GPUS = 8
CLUSTER = "goodputtest"
PARTITION = "debug"
START_TIMEOUT_S = 60.0
LOCK = Path(tempfile.gettempdir()) / "goodput-slurm-tests.lock"
LOCK_WAIT_S = 900.0


def _binary(name: str) -> str:
    for folder in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if os.access(f"{folder}/{name}", os.X_OK):
            return f"{folder}/{name}"
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(
            f"{name} is not installed: apt-get install -y {BINARIES.get(name, name)}"
            f" (the Slurm tests need the Debian packages {PACKAGES})"
        )
    return found


def _wait(what: str, ok, timeout_s: float = START_TIMEOUT_S, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(0.2)
    tail = ""
    if log is not None and log.exists():
        tail = "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    raise RuntimeError(f"{what} did not come up within {timeout_s:.0f} s{tail}")


@dataclass
class SlurmCluster:
    conf: str  # slurm.conf: SLURM_CONF for every Slurm command
    node: str  # the one node's hostname
    gpus: int
    root: Path  # the temporary folder with state, logs and config
    env: dict[str, str] = field(repr=False, default_factory=dict)
    daemons: "_Daemons | None" = field(repr=False, default=None)

    def run(self, *args: str, timeout_s: float = 30.0) -> str:
        """A Slurm command against this cluster; its stdout (a RuntimeError with stderr when it fails)."""
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def submit(self, *sbatch_args: str) -> str:
        """sbatch the arguments (`--wrap "sleep 1"` and the like); the job id. Output goes to the temp folder."""
        out = self.run(
            "sbatch", "--parsable", f"--chdir={self.root}", f"--output={self.root}/job-%j.out", *sbatch_args
        )
        return out.strip().split(";")[0]

    def state(self, job_id: str) -> str:
        """The job's state as slurmctld has it (22.05's scontrol has no --json: its one-line form)."""
        out = self.run("scontrol", "--oneliner", "show", "job", job_id)
        found = re.search(r"\bJobState=(\S+)", out)
        return found.group(1) if found else ""

    def wait(self, job_id: str, states=("COMPLETED", "FAILED", "CANCELLED"), timeout_s: float = 60) -> str:
        """Wait until the job is in one of `states`; the state it reached."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.state(job_id)
            if state in states:
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is {state}, not one of {states}, after {timeout_s} s")
            time.sleep(0.2)

    def drain(self, reason: str) -> None:
        self.run("scontrol", "update", f"nodename={self.node}", "state=drain", f"reason={reason}")

    def resume(self) -> None:
        self.run("scontrol", "update", f"nodename={self.node}", "state=resume")

    def stop_controller(self) -> None:
        """Stop slurmctld (its state is saved): Slurm's commands then fail as on a cluster whose controller is
        down. `start_controller` brings it back with its jobs."""
        self.daemons.stop("slurmctld")

    def start_controller(self) -> None:
        _start_ctld(self)

    def source(self) -> SlurmSource:
        return SlurmSource(conf=self.conf)


class _Daemons:
    """The processes started, stopped in reverse order."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
        out = log.open("ab")
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        self.procs.append((name, proc))
        return proc

    def alive(self, name: str) -> bool:
        return any(n == name and p.poll() is None for n, p in self.procs)

    def stop(self, name: str) -> None:
        for n, proc in self.procs:
            if n == name:
                stop_process(proc, timeout_s=15)

    def stop_all(self) -> None:
        for _, proc in reversed(self.procs):
            stop_process(proc, timeout_s=15)
        self.procs.clear()


def _munge_answers() -> bool:
    if not MUNGE_SOCKET.exists():
        return False
    cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
    if cred.returncode != 0:
        return False
    return subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, timeout=10).returncode == 0


def _write_configs(root: Path, node: str, ports: dict[str, int]) -> None:
    dev = root / "dev"
    dev.mkdir()
    for i in range(GPUS):
        (dev / f"nvidia{i}").touch()  # gres needs File= entries; no real devices here
    (root / "slurmdbd.conf").write_text(
        f"""AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={ports["dbd"]}
SlurmUser=root
LogFile={root}/log/slurmdbd.log
PidFile={root}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports["db"]}
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
"""
    )
    (root / "slurmdbd.conf").chmod(0o600)
    (root / "slurm.conf").write_text(
        f"""ClusterName={CLUSTER}
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ports["ctld"]}
SlurmdPort={ports["slurmd"]}
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
JobRequeue=1
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={ports["dbd"]}
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=300
NodeName={node} NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 Gres=gpu:{GPUS} State=UNKNOWN
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
    )
    (root / "gres.conf").write_text(
        f"AutoDetect=off\nNodeName={node} Name=gpu File={dev}/nvidia[0-{GPUS - 1}]\n"
    )


def _start_ctld(cluster: SlurmCluster) -> None:
    log = cluster.root / "log"
    cluster.daemons.start("slurmctld", [_binary("slurmctld"), "-D", "-i"], cluster.env, log / "slurmctld.out")

    def ctld_up() -> bool:
        done = subprocess.run(
            ["scontrol", "ping"], env=cluster.env, capture_output=True, text=True, timeout=30
        )
        return done.returncode == 0 and "UP" in done.stdout

    _wait("slurmctld", ctld_up, log=log / "slurmctld.log")


def start(root: Path, daemons: _Daemons) -> SlurmCluster:
    """Bring the cluster up in `root` (empty); the daemons go into `daemons` as they start."""
    for name in BINARIES:
        _binary(name)
    node = socket.gethostname()
    for sub in ("munge", "db", "spool", "state", "log", "run"):
        (root / sub).mkdir()
    ports = {name: free_port() for name in ("db", "dbd", "ctld", "slurmd")}
    env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
    log = root / "log"

    if not _munge_answers():
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (root / "munge").chmod(0o700)
        MUNGE_SOCKET.parent.mkdir(parents=True, exist_ok=True)
        daemons.start(
            "munged",
            [
                _binary("munged"),
                "--foreground",
                "--force",
                f"--key-file={key}",
                f"--socket={MUNGE_SOCKET}",
                f"--pid-file={root}/munge/munged.pid",
                f"--log-file={log}/munged.log",
                f"--seed-file={root}/munge/seed",
            ],
            env,
            log / "munged.out",
        )
        _wait("munged", _munge_answers, log=log / "munged.log")

    subprocess.run(
        [
            _binary("mariadb-install-db"),
            f"--datadir={root}/db",
            "--user=root",
            "--auth-root-authentication-method=normal",
        ],
        stdout=(log / "dbinit.log").open("w"),
        stderr=subprocess.STDOUT,
        check=True,
        timeout=120,
    )
    sock = root / "run" / "mysqld.sock"
    daemons.start(
        "mariadbd",
        [
            _binary("mariadbd"),
            "--no-defaults",
            f"--datadir={root}/db",
            "--user=root",
            f"--socket={sock}",
            f"--port={ports['db']}",
            "--bind-address=127.0.0.1",
            f"--pid-file={root}/run/mysqld.pid",
            f"--log-error={log}/mariadb.log",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=32M",
        ],
        env,
        log / "mariadbd.out",
    )

    def db_up() -> bool:
        return (
            subprocess.run(
                ["mariadb", f"--socket={sock}", "-uroot", "-e", "select 1"], capture_output=True
            ).returncode
            == 0
        )

    _wait("mariadbd", db_up, log=log / "mariadb.log")
    grants = " ".join(
        f"CREATE USER IF NOT EXISTS 'slurm'@'{h}' IDENTIFIED BY 'slurm'; GRANT ALL ON *.* TO 'slurm'@'{h}';"
        for h in ("127.0.0.1", "localhost")
    )
    subprocess.run(
        ["mariadb", f"--socket={sock}", "-uroot", "-e", grants + " FLUSH PRIVILEGES;"], check=True, timeout=30
    )

    _write_configs(root, node, ports)
    daemons.start("slurmdbd", [_binary("slurmdbd"), "-D"], env, log / "slurmdbd.out")
    cluster = SlurmCluster(conf=str(root / "slurm.conf"), node=node, gpus=GPUS, root=root, env=env)

    def dbd_up() -> bool:
        return (
            subprocess.run(
                ["sacctmgr", "-n", "list", "cluster"], env=env, capture_output=True, timeout=30
            ).returncode
            == 0
        )

    _wait("slurmdbd", dbd_up, log=log / "slurmdbd.log")
    subprocess.run(["sacctmgr", "-i", "add", "cluster", CLUSTER], env=env, capture_output=True, timeout=30)
    cluster.daemons = daemons
    _start_ctld(cluster)
    daemons.start("slurmd", [_binary("slurmd"), "-D"], env, log / "slurmd.out")

    def node_idle() -> bool:
        out = subprocess.run(
            ["sinfo", "-h", "-n", node, "-o", "%t"], env=env, capture_output=True, text=True, timeout=30
        )
        state = out.stdout.strip()
        if state.startswith(("down", "drain")):  # slurmd registered late: ReturnToService may not apply
            subprocess.run(
                ["scontrol", "update", f"nodename={node}", "state=resume"], env=env, capture_output=True
            )
        return state == "idle"

    _wait("slurmd (node idle)", node_idle, log=log / "slurmd.log")
    return cluster


def stop(cluster: SlurmCluster | None, daemons: _Daemons) -> None:
    """Cancel every job, then stop every daemon started, newest first."""
    if cluster is not None and daemons.alive("slurmctld"):
        subprocess.run(["scancel", "--full", "--user=root"], env=cluster.env, capture_output=True, timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            out = subprocess.run(
                ["squeue", "-h"], env=cluster.env, capture_output=True, text=True, timeout=30
            )
            if out.returncode != 0 or not out.stdout.strip():
                break
            time.sleep(0.3)
    leftovers = _job_processes(cluster.root) if cluster is not None else []
    daemons.stop_all()
    # a job whose slurmd went first (munge or slurmctld already gone) keeps its slurmstepd: end those by id
    for pid in leftovers + (_job_processes(cluster.root) if cluster is not None else []):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _job_processes(root: Path) -> list[int]:
    """The jobs' processes (their scripts live in root/spool) and the slurmstepd above each."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if str(root / "spool") not in cmdline:
                continue
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            parent_cmd = Path(f"/proc/{parent}/cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        found.append(int(entry.name))
        if parent_cmd.startswith(b"slurmstepd"):
            found.append(parent)
    return found


@contextlib.contextmanager
def running() -> Iterator[SlurmCluster]:
    with _one_cluster_at_a_time():
        root = Path(tempfile.mkdtemp(prefix="goodput-slurm-"))
        root.chmod(0o755)
        daemons = _Daemons()
        cluster = None
        try:
            cluster = start(root, daemons)
            yield cluster
        finally:
            stop(cluster, daemons)
            if not os.environ.get("GOODPUT_KEEP_SLURM"):
                shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def _one_cluster_at_a_time() -> Iterator[None]:
    """Hold a machine-wide lock while a cluster runs: two test sessions at once (two checkouts, or a run
    beside `make test`) would share munged's one socket, and the first to finish would stop it under the other."""
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("w") as handle:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"another test session has held {LOCK} (its Slurm cluster) for {LOCK_WAIT_S:.0f} s"
                    ) from None
                time.sleep(1)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A running single-node Slurm with accounting (see the module's docstring), one a test module: the
    machine-wide lock is then held for one module at a time, so a worker that gets a Slurm test outside the
    xdist group (seen with --dist loadgroup) waits minutes for the other, never its whole session."""
    try:
        with running() as cluster:
            yield cluster
    except RuntimeError as err:
        if "is not installed" in str(err):
            pytest.fail(str(err), pytrace=False)
        raise


if __name__ == "__main__":
    with running() as up:
        print(f"SLURM_CONF={up.conf}  node={up.node}")
        input("Enter stops it: ")
