"""What Slurm's commands print, parsed: sacct's `--parsable2` text (read as it streams) and sinfo's JSON.

engine/ingest/slurm.py runs the commands; this module reads their answers, under the limits replay puts on a
trace file (engine/replay/bounds.py): MAX_LINE_BYTES a line, MAX_TRACE_LINES lines, MAX_TRACE_JOBS records,
names cut to MAX_NAME_CHARS; sinfo's JSON nested at most MAX_JSON_DEPTH deep, only the keys read kept.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl

from engine import limits
from engine.bounded_read import load_json
from engine.errors import GoodputError
from engine.ingest.inflate import cut_lines
from engine.replay import bounds
from engine.replay.sacct import TooManyHosts, expand_hostlist, gpus_from_tres

# sacct's text is parsed this many bytes (of whole lines) at a time.
SACCT_BLOCK_BYTES = 16 * 1024 * 1024
DELIMITER = "\x1f"
SACCT_FIELDS = (
    "JobID",
    "JobName",
    "User",
    "Partition",
    "Submit",
    "Start",
    "End",
    "State",
    "ExitCode",
    "AllocTRES",
    "ReqTRES",
    "NodeList",
)
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
EARLIEST = datetime.fromtimestamp(limits.EARLIEST_TIMESTAMP_S, UTC)
# Node states (sinfo's `state`, lower case) and flags (`state_flags`) onto engine.store.schema HOST_STATES.
# A drained node (DRAIN on an idle or down node) is "down": out of service until an operator resumes it, which
# is what the store's "down" means (no jobs, counted in what is down). A node still finishing its jobs while
# draining (DRAIN on allocated or mixed) is "draining", also out of service. FAIL (failing, being drained) and
# a down or error node are "down"; allocated and mixed nodes run jobs ("running"); idle ones are "healthy".
# unknown (slurmd never answered since slurmctld started) and future (not yet in service) are "down": nothing
# may run there. Slurm's own state and flags stay beside it (slurm_state, flags), so nothing is lost.
BASE_STATES = {
    "idle": "healthy",
    "allocated": "running",
    "mixed": "running",
    "completing": "running",
    "down": "down",
    "error": "down",
    "unknown": "down",
    "future": "down",
}
DOWN_FLAGS = ("FAIL", "DOWN")


class SlurmError(GoodputError):
    """A Slurm command that could not run, failed, or printed what Goodput cannot read."""


@dataclass(frozen=True)
class SlurmJobs:
    """`jobs`: one row a job (its latest record); `attempts`: one row each time it ran (requeues included).

    jobs: job_id, name, user, partition, submit, start (its first run), end (null while pending or running),
    state (Slurm's word: COMPLETED, FAILED, CANCELLED, RUNNING, PENDING, REQUEUED, ...), exit_code, exit_signal,
    gpus, nodes (hostnames). attempts: job_id, attempt (0, 1, ...), start, end, state, nodes. Times are UTC.
    """

    jobs: pl.DataFrame
    attempts: pl.DataFrame
    skipped: int = 0  # lines of sacct's output that were not a job record (a newline in a job's name)


def parse_sacct(data: bytes, shown: str = "sacct") -> SlurmJobs:
    """sacct's `--parsable2 --delimiter=\\x1f --format=<SACCT_FIELDS>` output (with its header) as SlurmJobs."""
    return parse_sacct_stream([data], shown)


def parse_sacct_stream(chunks: Iterable[bytes], shown: str = "sacct") -> SlurmJobs:
    """parse_sacct over sacct's output as it arrives: read in blocks of whole lines, each block's records kept
    as typed columns before the next is read, with the limits replay applies to a sacct file (engine/replay/
    bounds.py): MAX_LINE_BYTES a line, MAX_TRACE_LINES lines, MAX_TRACE_JOBS records, names cut to
    MAX_NAME_CHARS. A limit passed is refused as soon as it is seen, the rest unread."""
    parts: list[pl.DataFrame] = []
    header_seen = False
    skipped = records_read = lines_read = 0

    def too_long(line: int) -> SlurmError:
        return SlurmError(
            f"{shown}, line {line:,}: more than {limits.MAX_LINE_BYTES:,} bytes long, over Goodput's limit of"
            f" {limits.MAX_LINE_BYTES:,} bytes a line (engine/limits.py)"
        )

    for first_line, block in cut_lines(shown, iter(chunks), SACCT_BLOCK_BYTES, too_long):
        lines = (
            pl.DataFrame({"line": [block.decode(errors="replace")]})
            .select(pl.col("line").str.split("\n"))
            .explode("line")
            .with_row_index("number", offset=first_line)
        )
        del block
        if lines.height and lines["line"][-1] == "":
            lines = lines.slice(0, lines.height - 1)  # the block's final newline
        lines_read += lines.height
        if lines_read > limits.MAX_TRACE_LINES + 1:
            raise bounds.too_many_lines(shown, lines_read - 1, error=SlurmError)
        long = lines.filter(pl.col("line").str.len_bytes() > limits.MAX_LINE_BYTES)
        if long.height:
            raise bounds.line_too_long(shown, long["number"][0], len(long["line"][0].encode()), SlurmError)
        lines = lines.filter(pl.col("line").str.len_bytes() > 0)
        if not header_seen and lines.height:
            if lines["line"][0].split(DELIMITER) != list(SACCT_FIELDS):
                raise SlurmError(
                    f"{shown}: expected the header {'|'.join(SACCT_FIELDS)}, got {lines['line'][0][:200]!r}"
                )
            header_seen = True
            lines = lines.slice(1)
        ok = pl.col("line").str.count_matches(DELIMITER, literal=True) == len(SACCT_FIELDS) - 1
        skipped += lines.filter(~ok).height
        body = lines.filter(ok)["line"]
        del lines
        if records_read + body.len() > limits.MAX_TRACE_JOBS:
            raise SlurmError(
                f"{shown}: more than {limits.MAX_TRACE_JOBS:,} job records, over Goodput's limit"
                " (engine/limits.py MAX_TRACE_JOBS)"
            )
        parts.append(_records(body, records_read, shown))
        records_read += body.len()
    if not header_seen:
        raise SlurmError(f"{shown}: expected the header {'|'.join(SACCT_FIELDS)}, got 'nothing'")
    records = pl.concat(parts, how="vertical", rechunk=False)
    del parts
    records = records.with_columns(nodes=_nodes(records["node_list"], shown)).drop("node_list")
    return _jobs_and_attempts(records, skipped)


def _records(body: pl.Series, first_row: int, shown: str) -> pl.DataFrame:
    """One block's job records as typed columns; `row` numbers them from `first_row` (sacct's order)."""
    width = len(SACCT_FIELDS)
    raw = (
        pl.DataFrame({"line": body})
        .with_row_index("row", offset=first_row)
        .select(
            "row",
            pl.col("line").str.split_exact(DELIMITER, width - 1).struct.rename_fields(list(SACCT_FIELDS)),
        )
        .unnest("line")
    )

    def when(name: str) -> pl.Expr:
        return pl.col(name).str.to_datetime(TIME_FORMAT, strict=False, time_zone="UTC", time_unit="us")

    tres = pl.when(pl.col("AllocTRES") == "").then(pl.col("ReqTRES")).otherwise(pl.col("AllocTRES"))
    records = raw.select(
        "row",
        job_id=pl.col("JobID"),
        name=bounds.clip_text(pl.col("JobName")),
        user=bounds.clip_text(pl.col("User")),
        partition=bounds.clip_text(pl.col("Partition")),
        submit=when("Submit"),
        start=when("Start"),
        end=when("End"),
        state=pl.col("State").str.extract(r"^([A-Z_]+)", 1),
        exit_code=pl.col("ExitCode").str.extract(r"^(\d+):", 1).cast(pl.Int32, strict=False),
        exit_signal=pl.col("ExitCode").str.extract(r":(\d+)$", 1).cast(pl.Int32, strict=False),
        tres=tres,
        node_list=pl.col("NodeList"),
    )
    bad = records.filter(pl.col("submit").is_null() | pl.col("state").is_null() | (pl.col("job_id") == ""))
    if bad.height:
        number = int(bad["row"][0])
        row = raw.row(number - first_row, named=True)
        raise SlurmError(
            f"{shown}: record {number + 1} is not a job (JobID {row['JobID'][:200]!r}, Submit"
            f" {row['Submit'][:200]!r}, State {row['State'][:200]!r})"
        )
    return records.with_columns(gpus=gpus_from_tres(records["tres"])).drop("tres")


def _jobs_and_attempts(records: pl.DataFrame, skipped: int) -> SlurmJobs:
    """Jobs (each its latest record) and attempts from the records, `row` being each record's position. Only the
    narrow key columns are sorted; the wide ones (names, node lists) are gathered once into what is returned, so
    the records are never copied whole."""
    # a job's records oldest first: a requeue starts a new record with a later Submit; the pending record of a
    # requeued job has no Start yet, so it sorts last
    order = records.select("job_id", "submit", "start", "row").sort(
        "job_id", "submit", "start", "row", nulls_last=True
    )
    ran = order.filter(pl.col("start").is_not_null()).select(
        "row", attempt=(pl.col("job_id").cum_count().over("job_id") - 1).cast(pl.Int32)
    )
    attempts = records.select(pl.col("job_id", "start", "end", "state", "nodes").gather(ran["row"])).select(
        "job_id", ran["attempt"], "start", "end", "state", "nodes"
    )
    per_job = (
        order.group_by("job_id", maintain_order=True)
        .agg(
            pl.col("submit").first(),
            pl.col("start").drop_nulls().first(),
            pl.col("row").last().alias("latest"),
            pl.col("row").first(),
        )
        .sort("row")  # in sacct's order
    )
    latest = records.select(
        pl.col(
            "name", "user", "partition", "end", "state", "exit_code", "exit_signal", "gpus", "nodes"
        ).gather(per_job["latest"])
    )
    jobs = pl.concat([per_job.select("job_id", "submit", "start"), latest], how="horizontal").select(
        "job_id",
        "name",
        "user",
        "partition",
        "submit",
        "start",
        "end",
        "state",
        "exit_code",
        "exit_signal",
        "gpus",
        "nodes",
    )
    return SlurmJobs(jobs, attempts, skipped)


def _nodes(node_list: pl.Series, shown: str) -> pl.Series:
    """Each distinct NodeList expanded once (`gpu[001-004,007]`); "None assigned" (pending) is empty."""
    absent = node_list.is_in(["", "None assigned", "(null)"])
    uses = pl.DataFrame({"key": node_list.filter(~absent)}).group_by("key").len()
    expanded: dict[str, list[str]] = {}
    slots = 0
    for text, count in uses.iter_rows():
        try:
            expanded[text] = expand_hostlist(text)
        except TooManyHosts as err:
            raise SlurmError(f"{shown}: NodeList {text[:200]!r} {err}") from None
        except ValueError as err:
            raise SlurmError(
                f"{shown}: NodeList {text[:200]!r} is not Slurm hostlist syntax ({err})"
            ) from None
        slots += len(expanded[text]) * count
        if slots > limits.MAX_TRACE_HOST_SLOTS:
            raise SlurmError(
                f"{shown}: the jobs' NodeLists name over Goodput's limit of {limits.MAX_TRACE_HOST_SLOTS:,}"
                " job-host pairs (engine/limits.py MAX_TRACE_HOST_SLOTS)"
            )
    table = pl.DataFrame(
        {"key": list(expanded), "nodes": list(expanded.values())},
        schema={"key": pl.String, "nodes": pl.List(pl.String)},
    )
    nodes = pl.DataFrame({"key": node_list}).join(table, on="key", how="left", maintain_order="left")["nodes"]
    return nodes.fill_null(pl.lit([], dtype=pl.List(pl.String)))


# ----- nodes ----------------------------------------------------------------------------------------------------------

NODE_SCHEMA = {
    "node": pl.String,
    "state": pl.String,  # a HOST_STATES value (see BASE_STATES)
    "slurm_state": pl.String,  # Slurm's base state: idle, allocated, mixed, down, ...
    "flags": pl.List(pl.String),  # Slurm's state flags: DRAIN, FAIL, NOT_RESPONDING, ...
    "reason": pl.String,
    "reason_time": pl.Datetime("us", "UTC"),
    "gpus": pl.Int32,
    "partitions": pl.List(pl.String),
}


def parse_sinfo(data: bytes, shown: str = "sinfo --json") -> pl.DataFrame:
    nodes = _json(data, shown).get("nodes")
    if not isinstance(nodes, list):
        raise SlurmError(f"{shown}: no list of nodes in its JSON")
    if len(nodes) > limits.MAX_HOSTS:
        raise SlurmError(
            f"{shown}: {len(nodes):,} nodes, over Goodput's limit of {limits.MAX_HOSTS:,} (engine/limits.py MAX_HOSTS)"
        )
    rows: dict[str, dict] = {}
    for index, node in enumerate(nodes):
        try:
            rows.setdefault(node["name"], _node_row(node))
        except (KeyError, TypeError, ValueError) as err:
            raise SlurmError(f"{shown}: node {index + 1} is not as Slurm 22.05 prints it ({err!r})") from None
    return pl.DataFrame(list(rows.values()), schema=NODE_SCHEMA, orient="row")


def _node_row(node: dict) -> dict:
    state = node["state"]
    # 22.05 prints `"state": "idle", "state_flags": ["DRAIN"]`; 23.02+ a list `["IDLE", "DRAIN"]`
    words = [state] if isinstance(state, str) else list(state)
    base = str(words[0]).lower()
    flags = [str(f).upper() for f in words[1:]] + [str(f).upper() for f in node.get("state_flags") or []]
    if any(f in DOWN_FLAGS for f in flags):
        mapped = "down"
    elif "DRAIN" in flags:
        mapped = "draining" if base in ("allocated", "mixed", "completing") else "down"
    else:
        mapped = BASE_STATES.get(base, "down")
    changed = node.get("reason_changed_at")
    if isinstance(changed, dict):  # 23.02+: {"set": true, "number": ...}
        changed = changed.get("number") if changed.get("set") else None
    return {
        "node": str(node["name"]),
        "state": mapped,
        "slurm_state": base,
        "flags": flags,
        "reason": node.get("reason") or None,
        "reason_time": datetime.fromtimestamp(changed, UTC) if changed else None,
        "gpus": _gres_gpus(node.get("gres") or ""),
        "partitions": [str(p) for p in node.get("partitions") or []],
    }


def _gres_gpus(gres: str) -> int:
    """`gpu:8`, `gpu:h100:8(S:0-1)`, `gpu:a100:4,gpu:h100:4`: the GPUs the node has."""
    return sum(int(n) for n in re.findall(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)", gres))


# The keys of sinfo's JSON that Goodput reads (the document's, a node's, an error's, a 23.02+ number's): every
# other key is dropped as each object is parsed, so a node costs a few hundred bytes, not its ~60 keys.
SINFO_KEYS = frozenset(
    (
        "nodes",
        "errors",
        "error",
        "name",
        "state",
        "state_flags",
        "reason",
        "reason_changed_at",
        "gres",
        "partitions",
        "set",
        "number",
    )
)


def _json(data: bytes, shown: str) -> dict:
    value = load_json(
        data,
        shown,
        error=SlurmError,
        invalid="did not print JSON",
        object_hook=lambda obj: {k: v for k, v in obj.items() if k in SINFO_KEYS},
    )
    if not isinstance(value, dict):
        raise SlurmError(f"{shown}: printed JSON that is not an object")
    errors = value.get("errors") or []
    if errors:
        said = "; ".join(str(e.get("error", e)) if isinstance(e, dict) else str(e) for e in errors[:3])
        raise SlurmError(f"{shown}: Slurm reported errors: {said}")
    return value
