"""Jobs, attempts and node states read from a running Slurm with Slurm's own commands.

    source = SlurmSource(conf="/etc/slurm/slurm.conf")
    probe(source)                      # SlurmStatus: reachable, version, cluster (never raises)
    read_jobs(source, since=t)         # SlurmJobs: jobs and attempts of every job active since t
    read_nodes(source)                 # node, state (a HOST_STATES value), Slurm's state, flags, reason

Commands (each a subprocess with a deadline and an output bound; SLURM_CONF from `conf`, TZ=UTC so every time
Slurm prints is UTC):
- jobs: `sacct --allusers --allocations --duplicates --parsable2 --delimiter=<US> -S since -E now --format ...`.
  Parsable text, not `sacct --json`: Slurm 22.05's JSON reports every job's exit code as 0 (a job that ran
  `exit 3` is `"exit_code": {"status": "SUCCESS", "return_code": 0}` while the text says `3:0`), and the JSON's
  shape changes with every Slurm release (v0.0.38 to v0.0.40 moved times, states and TRES), the text's does not.
  The delimiter is ASCII's unit separator, which no job name holds (a `|` in a name breaks `--parsable2`).
  `--duplicates` keeps a requeued job's earlier runs, one record each: those are its attempts.
- nodes: `sinfo --json`: state, state_flags, reason (22.05's scontrol has no --json).
- probe: `scontrol show config`, whose ClusterName and SLURM_VERSION lines answer only while slurmctld does.

Any failure (a command missing, slurmctld or slurmdbd unreachable, a non-zero exit, output too large or not in
the expected shape) is a `SlurmError` that names the command and quotes Slurm's own message. What the commands
print is read in engine/ingest/slurm_text.py: sacct's answer as it streams, in blocks, never held whole.
"""

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.ingest.slurm_text import (  # what the commands print is read there; these names are used from here
    BASE_STATES,
    DELIMITER,
    DOWN_FLAGS,
    EARLIEST,
    NODE_SCHEMA,
    SACCT_FIELDS,
    TIME_FORMAT,
    SlurmError,
    SlurmJobs,
    parse_sacct,
    parse_sacct_stream,
    parse_sinfo,
)
from engine.store.regular_files import read_regular

__all__ = [
    "BASE_STATES",
    "DELIMITER",
    "DOWN_FLAGS",
    "NODE_SCHEMA",
    "SACCT_FIELDS",
    "TIME_FORMAT",
    "EARLIEST",
    "SlurmError",
    "SlurmJobs",
    "SlurmSource",
    "SlurmStatus",
    "parse_sacct",
    "parse_sacct_stream",
    "parse_sinfo",
    "probe",
    "read_jobs",
    "read_nodes",
    "sacct_args",
]

# The most bytes one command may print, cut as it arrives: sacct's text is held to what replay reads of a trace
# file (engine/limits.py MAX_INPUT_BYTES, MAX_TRACE_LINES lines of at most MAX_LINE_BYTES), and is parsed in
# blocks as it comes (10,000 jobs are ~1.5 MB); sinfo --json (~2 KB a node, 0.5 GB for 262,144 hosts) and
# scontrol to MAX_SLURM_JSON_BYTES.
MAX_OUTPUT_BYTES = limits.MAX_SLURM_JSON_BYTES
MAX_STDERR_BYTES = 64 * 1024
READ_BYTES = 1024 * 1024
MAX_CONF_BYTES = 4 * 1024 * 1024  # a slurm.conf of 100,000 nodes listed one a line is a few MB
# A slurm.conf names its cluster or its controller (Slurm refuses one that names neither: "ClusterName needs to
# be specified"); a key at the start of a line, any case, as Slurm reads them.
_SLURM_CONF_KEY = re.compile(rb"(?im)^\s*(ClusterName|SlurmctldHost|ControlMachine)\s*=")
# Slurm quotes a configuration line it cannot parse: `Parse error in file F line 3: "the line"`.
_QUOTED_LINE = re.compile(r'(\bline \d+):\s*".*')


@dataclass(frozen=True)
class SlurmSource:
    """Where Slurm's commands are (`bin_dir`, else PATH) and which cluster they ask (`conf`, else Slurm's
    default), with a deadline for each command's whole run."""

    conf: str | None = None
    bin_dir: str | None = None
    timeout_s: float = 30.0

    def command(self, name: str, *args: str) -> list[str]:
        path = os.path.join(self.bin_dir, name) if self.bin_dir else shutil.which(name)
        if path is None or not os.access(path, os.X_OK):
            where = f"in {self.bin_dir}" if self.bin_dir else "on PATH"
            raise SlurmError(f"{name}: not found {where} (install Debian's slurm-client, or give its folder)")
        return [path, *args]

    def shown(self, name: str, *args: str) -> str:
        """The command as errors show it: `SLURM_CONF=/etc/slurm/slurm.conf sinfo --json`."""
        text = " ".join([name, *args]).replace(DELIMITER, "\\x1f")
        return f"SLURM_CONF={self.conf} {text}" if self.conf else text

    def run(self, name: str, *args: str, limit: int = MAX_OUTPUT_BYTES) -> bytes:
        """The command's stdout (at most `limit` bytes); a SlurmError naming it and quoting its stderr when it
        fails."""
        return _run_bounded(*self._prepare(name, *args), self.timeout_s, limit)

    def stream(self, name: str, *args: str, limit: int = MAX_OUTPUT_BYTES) -> Iterator[bytes]:
        """The command's stdout in chunks as it prints them, at most `limit` bytes in all (see _stream)."""
        return _stream(*self._prepare(name, *args), self.timeout_s, limit)

    def _prepare(self, name: str, *args: str) -> tuple[list[str], dict[str, str], str]:
        argv = self.command(name, *args)
        shown = self.shown(name, *args)
        if self.conf:
            check_conf(self.conf, shown)
        env = dict(os.environ, TZ="UTC", SLURM_TIME_FORMAT="standard")
        if self.conf:
            env["SLURM_CONF"] = self.conf
        return argv, env, shown


def check_conf(conf: str, shown: str) -> None:
    """A SlurmError unless `conf` is a readable regular file, not a symbolic link, that reads like a slurm.conf.
    Slurm's commands retry a missing slurm.conf for 60 s before they say so; and a file that is no slurm.conf
    (`/etc/shadow` named in settings.toml) makes them quote its lines in their errors, which a page would show
    an operator: it is refused before any command reads it."""
    try:
        raw = read_regular(Path(conf), MAX_CONF_BYTES)
    except GoodputError as err:
        raise SlurmError(f"{shown}: {conf} is not a readable regular file ({_reason(err, conf)})") from None
    if raw is None:
        raise SlurmError(f"{shown}: {conf} is not a readable regular file (it does not exist)")
    if not os.access(conf, os.R_OK):
        raise SlurmError(f"{shown}: {conf} is not a readable regular file (not readable by this user)")
    if not _SLURM_CONF_KEY.search(raw):
        raise SlurmError(
            f"{shown}: {conf} does not read like a slurm.conf (no ClusterName, SlurmctldHost or ControlMachine"
            " line): it is not handed to Slurm, whose errors would quote its lines"
        )


def _reason(err: GoodputError, conf: str) -> str:
    return str(err).removeprefix(f"{conf}: ")


def _run_bounded(argv: list[str], env: dict[str, str], shown: str, timeout_s: float, limit: int) -> bytes:
    """The whole stdout of argv, at most `limit` bytes (see _stream)."""
    return b"".join(_stream(argv, env, shown, timeout_s, limit))


def _limit_name(limit: int) -> str:
    names = {limits.MAX_INPUT_BYTES: "MAX_INPUT_BYTES", limits.MAX_SLURM_JSON_BYTES: "MAX_SLURM_JSON_BYTES"}
    return f"engine/limits.py {names[limit]}" if limit in names else "engine/limits.py"


def _stream(
    argv: list[str], env: dict[str, str], shown: str, timeout_s: float, limit: int
) -> Iterator[bytes]:
    """Run argv and hand its stdout on as it comes, in chunks: cut (the command killed) past `limit` bytes or
    past timeout_s for the whole run. Its exit status is checked once stdout ends; a consumer that stops early
    (closing the generator) kills the command."""
    try:
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as err:
        raise SlurmError(f"{shown}: could not start ({err.strerror})") from None
    err_out: list[bytes] = []
    timed_out = threading.Event()

    def read_err() -> None:
        # stderr only quoted: its head is kept, the rest drained so the command never blocks on a full pipe
        while chunk := proc.stderr.read(READ_BYTES):
            if sum(map(len, err_out)) < MAX_STDERR_BYTES:
                err_out.append(chunk)

    def expire() -> None:
        timed_out.set()
        proc.kill()

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    deadline = threading.Timer(timeout_s, expire)
    deadline.daemon = True
    deadline.start()
    size = 0
    try:
        while chunk := proc.stdout.read(READ_BYTES):
            size += len(chunk)
            if size > limit:
                proc.kill()
                raise SlurmError(
                    f"{shown}: printed more than {limit:,} bytes, over Goodput's limit ({_limit_name(limit)})"
                )
            yield chunk
        code = proc.wait()
    finally:
        deadline.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reader.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
    if timed_out.is_set():
        raise SlurmError(
            f"{shown}: no answer within {timeout_s:g} s (is slurmctld or slurmdbd reachable?)"
            f"{_said(err_out, ', it said: ')}"
        )
    if code != 0:
        raise SlurmError(f"{shown}: exited with status {code}: {_said(err_out, '') or 'nothing on stderr'}")


def _said(err_out: list[bytes], lead: str) -> str:
    """The last three lines Slurm wrote on stderr, on one line (its `fatal:` is last), a configuration file's
    lines it quoted left out: `Parse error in file F line 3: "..."` is said without the quote."""
    message = b"".join(err_out)[:MAX_STDERR_BYTES].decode(errors="replace")
    message = _QUOTED_LINE.sub(r"\1 (its text not shown)", message)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lead + "; ".join(lines[-3:]) if lines else ""


# ----- probe ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmStatus:
    reachable: bool
    version: str | None  # Slurm's release, e.g. 22.05.8
    cluster: str | None  # ClusterName
    checked_at: datetime  # UTC
    error: str | None = None  # the SlurmError's message when unreachable


def probe(source: SlurmSource) -> SlurmStatus:
    """Whether slurmctld answers, its version and cluster name; never raises (the error is in `error`)."""
    now = datetime.now(UTC)
    try:
        text = source.run("scontrol", "show", "config").decode(errors="replace")
    except SlurmError as err:
        return SlurmStatus(False, None, None, now, str(err))
    found = dict(re.findall(r"^(ClusterName|SLURM_VERSION)\s*=\s*(\S+)", text, flags=re.MULTILINE))
    if "SLURM_VERSION" not in found:
        return SlurmStatus(
            False, None, None, now, "scontrol show config: no SLURM_VERSION line in its output"
        )
    return SlurmStatus(True, found["SLURM_VERSION"], found.get("ClusterName"), now)


# ----- jobs -----------------------------------------------------------------------------------------------------


def sacct_args(since: datetime | None, until: datetime | None = None) -> list[str]:
    """sacct's arguments for every job active (pending, running or ending) between `since` and `until`."""
    start = EARLIEST if since is None else since.astimezone(UTC)
    end = "now" if until is None else until.astimezone(UTC).strftime(TIME_FORMAT)
    return [
        "--allusers",
        "--allocations",  # jobs, not their steps
        "--duplicates",  # a requeued job's earlier runs too
        "--parsable2",
        f"--delimiter={DELIMITER}",
        f"--starttime={start.strftime(TIME_FORMAT)}",
        f"--endtime={end}",
        f"--format={','.join(SACCT_FIELDS)}",
    ]


def read_jobs(source: SlurmSource, since: datetime | None = None) -> SlurmJobs:
    """Every job pending, running or ending since `since` (None: since 2000), with its attempts."""
    now = datetime.now(UTC)
    # sacct refuses a start after its end (now): a clock ahead of slurmdbd's asks for nothing, so ask from now
    args = sacct_args(None if since is None else min(since, now))
    chunks = source.stream("sacct", *args, limit=limits.MAX_INPUT_BYTES)
    try:
        return parse_sacct_stream(chunks, source.shown("sacct", *args))
    finally:
        chunks.close()  # a refusal mid-answer kills sacct


# ----- nodes ----------------------------------------------------------------------------------------------------


def read_nodes(source: SlurmSource) -> pl.DataFrame:
    """One row a node from `sinfo --json` (columns NODE_SCHEMA), in sinfo's order."""
    shown = source.shown("sinfo", "--json")
    data = source.run("sinfo", "--json")
    try:
        return parse_sinfo(data, shown)
    except SlurmError as err:
        # 22.05's sinfo --json exits 0 with `"errors": [{"error": "Unspecified error"}]` and nothing on stderr
        # when slurmctld is down: ask scontrol, whose error says why
        status = probe(source)
        if status.reachable:
            raise
        raise SlurmError(f"{err}; {status.error}") from None
