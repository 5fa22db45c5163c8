"""A replayed trace as a Run(kind="replay"): the trace's cluster, its jobs as recorded or re-scheduled, the
attempts with their hosts, host states from the placements, and why each job waited.

Settings (`goodput replay --set KEY=VALUE`):

    replay.mode                  recorded | rescheduled (default rescheduled; --mode)
    scheduler.placement          pack | spread (default pack; --policy)
    scheduler.backfill           true | false (default true: EASY backfill)
    scheduler.preemption         true | false (default false)
    scheduler.backfill_depth     jobs backfill looks at a pass (default 500, Slurm's bf_max_job_test)
    scheduler.checkpoint_interval  work a `restart` job loses at most when hit (default 30m)
    replay.failures              CSV of host failures: t,host,down_for[,cause] (durations; host id or name)
    replay.gpus_per_host         host size where the trace does not give its nodes (default cluster.gpus_per_host)
    replay.hosts                 cluster size where the trace does not give its nodes (default: inferred)

and the scenario keys of the cluster's layout and clock: cluster.hosts_per_rack, cluster.racks_per_pod,
cluster.racks_per_row, cluster.gpu_model, cluster.gpus_per_host, simulation.start, simulation.seed.
"""

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from engine import scenario as scenario_mod
from engine.durations import parse_duration
from engine.errors import GoodputError
from engine.replay import columns as col
from engine.replay.delimited import column, require, split_table
from engine.replay.formats import Trace, check, parse_trace, read_text, split_lines
from engine.run import Run
from engine.scheduler import Cluster, Failures, Policy, Workload, dominant_reason, place_recorded, schedule

MODES = ("recorded", "rescheduled")
SCENARIO_KEYS = ("cluster.hosts_per_rack", "cluster.racks_per_pod", "cluster.racks_per_row", "cluster.gpu_model",
                 "cluster.gpus_per_host", "simulation.start", "simulation.seed")


@dataclass
class ReplaySettings:
    mode: str = "rescheduled"
    policy: Policy = field(default_factory=Policy)
    failures_file: str | None = None
    gpus_per_host: int | None = None
    hosts: int | None = None
    scenario: scenario_mod.Scenario = field(default_factory=lambda: scenario_mod.build("llama3-405b"))
    raw: dict = field(default_factory=dict)
    passed: tuple = ()  # scenario keys given with --set


def settings_from(sets: list[str], mode: str | None = None, placement: str | None = None) -> ReplaySettings:
    """Parse `--set` strings (and the --mode/--policy flags, which win); errors name the key."""
    mine: dict[str, str] = {}
    passed: list[str] = []
    for text in sets:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep:
            raise GoodputError(f"--set {text!r}: expected KEY=VALUE")
        if key.startswith(("replay.", "scheduler.")):
            mine[key] = value.strip()
        elif key in SCENARIO_KEYS:
            passed.append(text)
        else:
            raise GoodputError(f"--set {key}: not a replay setting; use replay.*, scheduler.* or one of "
                               + ", ".join(SCENARIO_KEYS))
    known = {"replay.mode", "replay.failures", "replay.gpus_per_host", "replay.hosts", "scheduler.placement",
             "scheduler.backfill", "scheduler.preemption", "scheduler.backfill_depth",
             "scheduler.checkpoint_interval"}
    for key in mine:
        if key not in known:
            raise GoodputError(f"--set {key}: unknown replay setting; known: {', '.join(sorted(known))}")
    if mode:
        mine["replay.mode"] = mode
    if placement:
        mine["scheduler.placement"] = placement
    chosen_mode = mine.get("replay.mode", "rescheduled")
    if chosen_mode not in MODES:
        raise GoodputError(f"replay.mode: recorded or rescheduled, got {chosen_mode!r}")
    policy = Policy(
        placement=mine.get("scheduler.placement", "pack"),
        backfill=_bool(mine, "scheduler.backfill", True),
        preemption=_bool(mine, "scheduler.preemption", False),
        backfill_depth=_int(mine, "scheduler.backfill_depth", Policy.backfill_depth, 1),
        checkpoint_interval_s=parse_duration(mine.get("scheduler.checkpoint_interval", "30m"),
                                             "scheduler.checkpoint_interval"),
    )
    return ReplaySettings(
        mode=chosen_mode, policy=policy, failures_file=mine.get("replay.failures"),
        gpus_per_host=_int(mine, "replay.gpus_per_host", None, 1),
        hosts=_int(mine, "replay.hosts", None, 1),
        scenario=scenario_mod.build("llama3-405b", sets=passed), raw=mine,
        passed=tuple(text.partition("=")[0].strip() for text in passed))


def _bool(values: dict, key: str, default: bool) -> bool:
    text = values.get(key)
    if text is None:
        return default
    if text.lower() in ("true", "1", "yes", "on"):
        return True
    if text.lower() in ("false", "0", "no", "off"):
        return False
    raise GoodputError(f"{key}: expected true or false, got {text!r}")


def _int(values: dict, key: str, default: int | None, minimum: int) -> int | None:
    text = values.get(key)
    if text is None:
        return default
    try:
        number = int(text)
    except ValueError:
        raise GoodputError(f"{key}: expected a whole number, got {text!r}") from None
    if number < minimum:
        raise GoodputError(f"{key}: must be at least {minimum}, got {number}")
    return number


# ----- the cluster ---------------------------------------------------------------------------------------------


def cluster_frame(trace: Trace, settings: ReplaySettings) -> pl.DataFrame:
    """(hostname, gpus, model) of the trace's cluster: its node list, its recorded nodes, or inferred."""
    model = settings.scenario["cluster.gpu_model"]
    size = settings.gpus_per_host or settings.scenario["cluster.gpus_per_host"]
    if trace.cluster is not None and settings.hosts is None:
        return trace.cluster
    jobs = trace.jobs
    named = jobs.filter(pl.col("nodes").is_not_null() & (pl.col("nodes").list.len() > 0))
    if named.height and settings.hosts is None:
        per_node = named.select(pl.col("nodes"), per=(pl.col("gpus") / pl.col("nodes").list.len()).ceil())
        sizes = per_node.explode("nodes").group_by("nodes").agg(pl.col("per").max())
        # a node that ran GPU jobs has the largest per-node GPU count of the trace (one GPU partition of
        # like nodes, as Slurm clusters have them); a node that only ran CPU jobs has none
        gpus = settings.gpus_per_host or max(int(sizes["per"].max() or 0), 1)
        sizes = sizes.sort("nodes")
        return pl.DataFrame({"hostname": sizes["nodes"], "gpus": (sizes["per"] > 0).cast(pl.Int32) * gpus,
                             "model": [model] * sizes.height},
                            schema={"hostname": pl.String, "gpus": pl.Int32, "model": pl.String})
    hosts = settings.hosts or _inferred_hosts(trace, size)
    digits = max(len(str(hosts - 1)), 4)
    return pl.DataFrame({"hostname": [f"node-{i:0{digits}d}" for i in range(hosts)], "gpus": [size] * hosts,
                         "model": [model] * hosts}, schema={"hostname": pl.String, "gpus": pl.Int32,
                                                            "model": pl.String})


def _inferred_hosts(trace: Trace, size: int) -> int:
    """Enough hosts for the trace's peak concurrent GPUs (recorded times, else submit + duration) and for
    its largest job; SWF's MaxProcs header when it says more."""
    jobs = trace.jobs.filter(pl.col("gpus") > 0)
    if not jobs.height:
        return 1
    recorded = jobs.filter(pl.col("start_s").is_not_null())
    if recorded.height:
        span = recorded.select(a=pl.col("start_s"), b=pl.col("end_s").fill_null(pl.col("start_s").max() + 1),
                               g=pl.col("gpus"))
    else:
        span = jobs.filter(pl.col("duration_s").is_not_null()).select(
            a=pl.col("submit_s"), b=pl.col("submit_s") + pl.col("duration_s"), g=pl.col("gpus"))
    deltas = pl.concat([span.select(t=pl.col("a"), d=pl.col("g")), span.select(t=pl.col("b"), d=-pl.col("g"))])
    peak = float(deltas.sort("t", "d").select(pl.col("d").cum_sum().max()).item() or 0.0)
    hosts = max(math.ceil(peak / size - 1e-9), math.ceil(float(jobs["gpus"].max()) / size - 1e-9), 1)
    header = trace.notes.get("header", {})
    procs = header.get("MaxProcs") or header.get("MaxNodes")
    if procs and procs.strip().isdigit():
        hosts = max(hosts, math.ceil(int(procs) / size))
    return hosts


def layout(cluster: pl.DataFrame, settings: ReplaySettings) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The store's hosts and gpus frames: hosts in order, racks of cluster.hosts_per_rack, pods of
    cluster.racks_per_pod, rows of cluster.racks_per_row; GPU UUIDs drawn from simulation.seed."""
    sc = settings.scenario
    per_rack, per_pod, per_row = sc["cluster.hosts_per_rack"], sc["cluster.racks_per_pod"], sc["cluster.racks_per_row"]
    n = cluster.height
    host = np.arange(n, dtype=np.int32)
    rack = host // per_rack
    hosts = pl.DataFrame({
        "host_id": host, "hostname": cluster["hostname"], "rack_id": rack.astype(np.int32),
        "pod_id": (rack // per_pod).astype(np.int32), "row": (rack // per_row).astype(np.int32),
        "position": (rack % per_row).astype(np.int32), "slot": (host % per_rack).astype(np.int32)})
    counts = cluster["gpus"].to_numpy().astype(np.int64)
    total = int(counts.sum())
    rng = np.random.default_rng(sc["simulation.seed"])
    hexes = np.frombuffer(rng.bytes(16 * total).hex().encode(), dtype="S32").astype(str) if total else []
    owner = np.repeat(host, counts)
    index = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    gpus = pl.DataFrame({"gpu_id": np.arange(total, dtype=np.int32), "host_id": owner.astype(np.int32),
                         "index": index.astype(np.int16), "hex": pl.Series(hexes, dtype=pl.String),
                         "model": np.repeat(cluster["model"].to_numpy(), counts).astype(str)})
    gpus = gpus.with_columns(uuid=pl.format("GPU-{}-{}-{}-{}-{}", *(
        pl.col("hex").str.slice(a, b - a) for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))))
    return hosts, gpus.select("gpu_id", "host_id", "index", "uuid", "model")


def read_failures(path: str, hostnames: pl.Series) -> Failures:
    """t,host,down_for[,cause]: t and down_for seconds or durations, host an id or a hostname."""
    source, text = read_text(Path(path))
    lines = split_lines(source, text, comment="#")
    parts, names = split_table(lines, ",", "failure list")
    require(lines, parts, names, ["t", "host", "down_for"], "failure list")
    t = col.durations(column(parts, names, "t"))
    check(lines, t.is_null(), "t must be seconds or a duration", 1)
    down = col.durations(column(parts, names, "down_for"))
    check(lines, down.is_null(), "down_for must be seconds or a duration", 1)
    host_text = column(parts, names, "host")
    by_name = pl.DataFrame({"host": host_text}).join(
        pl.DataFrame({"host": hostnames, "id": np.arange(len(hostnames))}), on="host", how="left",
        maintain_order="left")["id"]
    host = by_name.fill_null(col.integers(host_text))
    check(lines, host.is_null() | (host < 0) | (host >= len(hostnames)), "host is not a host of the cluster", 1)
    cause = column(parts, names, "cause")
    causes = cause.set(cause == "", "host_failure").to_list() if cause is not None else ["host_failure"] * len(t)
    return Failures(t.to_numpy(), host.to_numpy().astype(np.int64), down.to_numpy(), causes)


# ----- the run -----------------------------------------------------------------------------------------------


def replay_file(path_or_bytes: str | Path | bytes, fmt: str = "auto", sets: list[str] | tuple = (),
                mode: str | None = None, placement: str | None = None, name: str | None = None) -> Run:
    """Parse a trace (a path, or an upload's bytes named by `name`) and replay it: what `goodput replay`
    and the Data page's upload both do before writing the Run. Raises GoodputError on bad input."""
    settings = settings_from(list(sets), mode=mode, placement=placement)
    upload = isinstance(path_or_bytes, bytes | bytearray)
    trace = parse_trace(path_or_bytes, fmt=fmt, name=name if upload else None)  # errors name the real file
    return replay(trace, settings, name=name)


def replay(trace: Trace, settings: ReplaySettings | None = None, failures: Failures | None = None,
           name: str | None = None) -> Run:
    """The Run of `trace`: as recorded (start/end from the trace) or re-scheduled (submit times only)."""
    settings = settings or ReplaySettings()
    cluster_nodes = cluster_frame(trace, settings)
    hosts, gpus = layout(cluster_nodes, settings)
    if failures is None and settings.failures_file:
        failures = read_failures(settings.failures_file, cluster_nodes["hostname"])
    if failures is not None and len(failures.t) and settings.mode == "recorded":
        raise GoodputError("replay.failures: host failures need --mode rescheduled (a recorded replay keeps the"
                           " trace's own start and end times)")
    cluster = Cluster(cluster_nodes["gpus"].to_numpy().astype(np.int64), hosts["rack_id"].to_numpy(),
                      hosts["pod_id"].to_numpy())
    jobs = trace.jobs
    workload = Workload(
        submit=jobs["submit_s"].to_numpy(), work=jobs["duration_s"].fill_null(np.nan).to_numpy(),
        gpus=jobs["gpus"].to_numpy(), priority=jobs["priority"].to_numpy(),
        hosts=jobs["hosts"].fill_null(0).to_numpy(), share=jobs["gpu_share"].to_numpy(),
        restart=(jobs["on_failure"] == "restart").to_numpy())
    if settings.mode == "recorded":
        job_frame, attempts, waits = _recorded(trace, cluster, workload, settings, hosts)
        outages = pl.DataFrame(schema={"host": pl.Int64, "start_s": pl.Float64, "end_s": pl.Float64})
    else:
        job_frame, attempts, waits, outages = _rescheduled(trace, cluster, workload, settings, failures)
    horizon = float(max(attempts["end_s"].max() or 0.0, jobs["submit_s"].max() or 0.0,
                        outages["end_s"].max() or 0.0 if outages.height else 0.0))
    states = host_states(attempts, outages, cluster.n_hosts, horizon)
    gpu_total = int(cluster.host_gpus.sum())
    summary = _summary(trace, job_frame, attempts, gpu_total, cluster.n_hosts, horizon, settings)
    started = trace.started_at or settings.scenario["simulation.start"]
    return Run(kind="replay", name=name or trace.name, started_at=started, duration_s=horizon,
               scenario=_scenario_record(trace, settings),
               seed=settings.scenario["simulation.seed"], summary=summary,
               tables={"hosts": hosts, "gpus": gpus, "jobs": job_frame, "job_attempts": attempts,
                       "job_waits": waits, "host_states": states})


def _scenario_record(trace: Trace, settings: ReplaySettings) -> dict:
    """The run's settings, nested like a scenario file: what was replayed, how, and the layout keys given."""
    policy = settings.policy
    flat = {**settings.raw, "replay.format": trace.fmt, "replay.file": trace.name, "replay.mode": settings.mode,
            "scheduler.placement": policy.placement, "scheduler.backfill": policy.backfill,
            "scheduler.preemption": policy.preemption, "scheduler.backfill_depth": policy.backfill_depth,
            "scheduler.checkpoint_interval": settings.raw.get("scheduler.checkpoint_interval", "30m")}
    if settings.hosts is not None:
        flat["replay.hosts"] = settings.hosts
    if settings.gpus_per_host is not None:
        flat["replay.gpus_per_host"] = settings.gpus_per_host
    flat.update({k: settings.scenario.raw[k] for k in SCENARIO_KEYS if k in settings.passed})
    nested: dict = {}
    for key, value in flat.items():
        section, _, leaf = key.partition(".")
        nested.setdefault(section, {})[leaf] = value
    return nested


def _recorded(trace, cluster, workload, settings, hosts):
    jobs = trace.jobs
    horizon = float(pl.concat([jobs["submit_s"], jobs["start_s"], jobs["end_s"]]).max() or 0.0)
    start = jobs["start_s"].fill_null(np.nan).to_numpy()
    end = jobs["end_s"].fill_null(np.nan).to_numpy()
    index = dict(zip(hosts["hostname"].to_list(), range(hosts.height), strict=True))
    nodes = None
    if jobs["nodes"].null_count() < jobs.height:
        nodes = [[index[h] for h in row if h in index] if row else None for row in jobs["nodes"].to_list()]
    placed = place_recorded(cluster, workload, start, end, settings.policy, nodes)
    ran = jobs.with_row_index("j").filter(pl.col("start_s").is_not_null())
    attempts = ran.select(
        job_id=pl.col("job_id"), attempt=pl.lit(1, dtype=pl.Int32), start_s=pl.col("start_s"),
        end_s=pl.col("end_s").fill_null(horizon),
        end_reason=pl.when(pl.col("end_s").is_null()).then(pl.lit("end_of_run"))
        .when(pl.col("state") == "running").then(pl.lit("end_of_run")).otherwise(pl.col("state")),
        lost_work_s=pl.lit(0.0),
        hosts=pl.Series([placed[j] for j in ran["j"].to_list()], dtype=pl.List(pl.Int32)))
    frame = jobs.select("job_id", "name", "gpus", pl.col("priority").clip(-(2**31), 2**31 - 1).cast(pl.Int32), "submit_s", "start_s", "end_s",
                        "state", "user", kind=pl.lit("trace"), wait_reason=pl.lit(None, dtype=pl.String))
    waits = pl.DataFrame(schema={"job_id": pl.String, "start_s": pl.Float64, "end_s": pl.Float64,
                                 "reason": pl.String})
    return frame, attempts, waits


def _rescheduled(trace, cluster, workload, settings, failures):
    jobs = trace.jobs
    result = schedule(cluster, workload, settings.policy, failures)
    ids = jobs["job_id"]
    attempts = result.attempts.with_columns(job_id=ids.gather(result.attempts["job"])).select(
        "job_id", "attempt", "start_s", "end_s", "end_reason", "lost_work_s", "hosts")
    waits = result.waits.with_columns(job_id=ids.gather(result.waits["job"])).select(
        "job_id", "start_s", "end_s", "reason")
    reasons = dominant_reason(result.waits)
    frame = jobs.with_row_index("job").with_columns(
        pl.col("job").cast(pl.Int64),
        start_s=pl.Series(result.first_start).fill_nan(None),
        end_s=pl.Series(result.last_end).fill_nan(None),
        state=pl.Series(result.state, dtype=pl.String),
    ).join(reasons, on="job", how="left", maintain_order="left")
    frame = frame.select("job_id", "name", "gpus", pl.col("priority").clip(-(2**31), 2**31 - 1).cast(pl.Int32), "submit_s", "start_s",
                         "end_s", "state", "user", kind=pl.lit("trace"), wait_reason=pl.col("wait_reason"))
    outages = result.outages
    return frame, attempts, waits, outages


def host_states(attempts: pl.DataFrame, outages: pl.DataFrame, n_hosts: int, horizon: float) -> pl.DataFrame:
    """Per host: `running` while any job holds it (overlapping attempts merged; job_id when it is one job),
    `down` during outages, `healthy` in between, from 0 to the horizon."""
    busy = attempts.select("job_id", "start_s", "end_s", host=pl.col("hosts")).explode("host").drop_nulls("host")
    busy = busy.filter(pl.col("end_s") > pl.col("start_s")).sort("host", "start_s")
    # merge overlapping intervals per host: a new block starts where start > the running max of earlier ends
    busy = busy.with_columns(prev=pl.col("end_s").cum_max().shift().over("host"))
    busy = busy.with_columns(block=((pl.col("prev").is_null()) | (pl.col("start_s") > pl.col("prev"))).cum_sum())
    running = busy.group_by("host", "block").agg(
        pl.col("start_s").min(), pl.col("end_s").max(), pl.col("job_id").n_unique().alias("jobs"),
        pl.col("job_id").first()).select(
        host_id=pl.col("host").cast(pl.Int32), state=pl.lit("running"), start_s="start_s", end_s="end_s",
        job_id=pl.when(pl.col("jobs") == 1).then(pl.col("job_id")))
    down = outages.select(host_id=pl.col("host").cast(pl.Int32), state=pl.lit("down"), start_s="start_s",
                          end_s="end_s", job_id=pl.lit(None, dtype=pl.String))
    taken = pl.concat([running, down]).sort("host_id", "start_s")
    # healthy: the gaps between taken intervals, and whole hosts never taken
    edges = taken.with_columns(next_start=pl.col("start_s").shift(-1).over("host_id"))
    gaps = edges.filter(pl.col("next_start").fill_null(horizon) > pl.col("end_s")).select(
        "host_id", state=pl.lit("healthy"), start_s="end_s", end_s=pl.col("next_start").fill_null(horizon),
        job_id=pl.lit(None, dtype=pl.String))
    first = taken.group_by("host_id").agg(pl.col("start_s").min().alias("first"))
    all_hosts = pl.DataFrame({"host_id": np.arange(n_hosts, dtype=np.int32)}).join(first, on="host_id", how="left")
    leading = all_hosts.filter(pl.col("first").fill_null(horizon) > 0).select(
        "host_id", state=pl.lit("healthy"), start_s=pl.lit(0.0), end_s=pl.col("first").fill_null(horizon),
        job_id=pl.lit(None, dtype=pl.String))
    out = pl.concat([taken, gaps, leading]).filter(pl.col("end_s") > pl.col("start_s"))
    return out.sort("host_id", "start_s")


def _summary(trace, jobs, attempts, gpu_total, n_hosts, horizon, settings) -> dict:
    waited = jobs.filter(pl.col("start_s").is_not_null()).select(w=pl.col("start_s") - pl.col("submit_s"))["w"]
    gpu_of = jobs.select("job_id", "gpus")
    busy = attempts.join(gpu_of, on="job_id", how="left").select(
        ((pl.col("end_s") - pl.col("start_s")) * pl.col("gpus")).sum()).item() or 0.0
    reasons = jobs["wait_reason"].drop_nulls().value_counts().rows()
    return {
        "jobs": jobs.height, "gpus": gpu_total, "hosts": n_hosts, "days": horizon / 86400.0,
        "format": trace.fmt, "mode": settings.mode, "policy": settings.policy.placement,
        "backfill": settings.policy.backfill, "preemption": settings.policy.preemption,
        "gpus_demanded": float(jobs["gpus"].sum()),
        "started": int(jobs["start_s"].is_not_null().sum()),
        "pending": int(jobs["start_s"].is_null().sum()),
        "wait_mean_s": float(waited.mean()) if len(waited) else 0.0,
        "wait_p95_s": float(waited.quantile(0.95, "linear")) if len(waited) else 0.0,
        "utilization": busy / (gpu_total * horizon) if gpu_total and horizon else 0.0,
        "wait_reasons": dict(sorted(reasons)),
        "preempted": int((attempts["end_reason"] == "preempted").sum()),
    }
