"""Incidents: the whole chain of one failure, its cost, the filtered set, and the Llama 3 way of counting them.

Everything reads the store's tables through SQL, from a run's DuckDB connection or from a dict of Polars
frames (registered on an in-memory DuckDB), so the page, the exporter and tests share one code path.

The chain of an incident is rebuilt from the tables every run has: the incident row (occurred, detected,
mitigated, repaired), xid_events (how it was detected), job_attempts (the attempt each job hit ended at the
incident; the next attempt's hosts minus the old ones are the spares swapped in), checkpoints (the last one
completed before the fault is where the job restarted from) and host_states (drain, diagnosis, repair,
burn-in and the host's return).
"""

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import duckdb
import polars as pl

from engine.errors import GoodputError
from engine.sim.failures import CATEGORY, SCOPE
from engine.store import query_frame
from engine.store.schema import OUT_OF_SERVICE_STATES, TABLES, create_statement
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

# Llama 3 paper §3.3.4: "about 78% of the unexpected interruptions were confirmed or suspected hardware".
# In its Table 5 (reference/llama3_interruptions.csv) the categories GPU (268), Host (21) and Network (35) add
# up to 324 of 419 = 77.3%; adding "Unplanned maintenance" (32) would give 85%, so host maintenance is not
# counted as hardware, nor are Dependency (software) and Unknown (NCCL watchdog timeouts).
HARDWARE_CATEGORIES = ("GPU", "Host", "Network")

# The flagship job of a stored run: the one query every page, export and summary uses to find it (the first
# submitted if a run ever held two; ties broken by id so the answer never depends on the scan order).
FLAGSHIP_JOB_SQL = "SELECT job_id FROM jobs WHERE kind = 'flagship' ORDER BY submit_s, job_id LIMIT 1"


def flagship_job_id(source: "Source") -> str | None:
    """The run's flagship job id, or None (replayed traces and telemetry have none)."""
    with _connection(source) as con:
        rows = con.execute(FLAGSHIP_JOB_SQL).fetchall()
    return str(rows[0][0]) if rows else None


CHAIN_SCHEMA = {"step": pl.Int32, "t_s": pl.Float64, "what": pl.String, "detail": pl.String}
# Steps at the same instant keep the order of the story.
_ORDER = {
    "checkpoint": 0,
    "occurred": 1,
    "detected": 2,
    "job interrupted": 3,
    "hosts drained": 4,
    "spares swapped in": 5,
    "job running again": 6,
    "repair": 7,
    "host returned": 8,
}
EPS = 1e-6


class IncidentError(GoodputError):
    """An unknown incident, cause or category, or a filter that cannot be applied."""


Source = duckdb.DuckDBPyConnection | dict[str, pl.DataFrame]
Rename = Callable[[str, str], str]


def _same(kind: str, name: str) -> str:
    return name


@contextlib.contextmanager
def _connection(source: Source) -> Iterator[duckdb.DuckDBPyConnection]:
    """The run's connection as given, or an in-memory one holding `source`'s frames (missing tables empty)."""
    if isinstance(source, duckdb.DuckDBPyConnection):
        yield source
        return
    con = duckdb.connect()
    try:
        for table, types in TABLES.items():
            con.execute(create_statement(table)).fetchall()
            frame = source.get(table)
            if isinstance(frame, pl.DataFrame) and frame.height:
                # as the store writes a run: the schema's columns, any the frame lacks left null
                given = frame.select(c for c in frame.columns if c in types)
                con.register("_given", given)
                columns = ", ".join(f'"{c}"' for c in given.columns)
                con.execute(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM _given').fetchall()  # noqa: S608 (names from the schema)
                con.unregister("_given")
        yield con
    finally:
        con.close()


def load_incidents(source: Source) -> pl.DataFrame:
    """Every incident with what the page and the exports show beside it: hostname, rack, the GPU's index on
    its host (of the failed GPU, or of the GPU whose NIC cable failed), whether a network fault took the whole
    rack (its link is a rack switch uplink, not a GPU's cable: tier gpu_rtsw or gpu_leaf), and the names and
    users of the jobs it hit."""
    with _connection(source) as con:
        return query_frame(
            con,
            """
            WITH hit AS (
                SELECT i.incident_id, list(coalesce(j.name, u.job_id) ORDER BY u.n) AS job_names,
                       list(coalesce(j."user", '') ORDER BY u.n) AS users
                FROM incidents i, unnest(i.job_ids) WITH ORDINALITY AS u(job_id, n)
                LEFT JOIN jobs j ON j.job_id = u.job_id
                GROUP BY i.incident_id)
            SELECT i.incident_id, i.t_s, i.detected_s, i.mitigated_s, i.repaired_s, i.cause, i.category,
                   coalesce(i.planned, false) AS planned, i.xid, i.host_id, h.hostname, h.rack_id, i.gpu_id,
                   coalesce(CAST(g."index" AS INTEGER),  -- a NIC cable names its GPU: "<hostname>:gpu<index>"
                            TRY_CAST(nullif(regexp_extract(l.a, ':gpu([0-9]+)$', 1), '') AS INTEGER)) AS gpu_index,
                   i.link_id, coalesce(l.tier IS NOT NULL AND NOT starts_with(l.tier, 'gpu_'), false) AS rack_wide,
                   i.jobs_hit, i.gpu_hours_lost, coalesce(i.job_ids, []) AS job_ids,
                   coalesce(hit.job_names, []) AS job_names, coalesce(hit.users, []) AS users
            FROM incidents i
            LEFT JOIN hosts h ON h.host_id = i.host_id
            LEFT JOIN gpus g ON g.gpu_id = i.gpu_id
            LEFT JOIN links l ON l.link_id = i.link_id
            LEFT JOIN hit ON hit.incident_id = i.incident_id
            ORDER BY i.t_s, i.incident_id""",
        )


# ----- one incident -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IncidentDetail:
    """One incident: its chain, its cost to every job it hit, and its blast radius."""

    incident: dict
    chain: pl.DataFrame  # step, t_s, what, detail
    cost: pl.DataFrame  # job_id, name, gpus, attempt, lost_work_s, restart_s, gpu_hours_lost
    hosts: list[int]  # hosts taken out of service
    gpus: list[int]  # GPUs named by the incident (the failed one), or all GPUs of the hosts taken out
    jobs: list[str]

    @property
    def lost_work_s(self) -> float:
        return float(self.cost["lost_work_s"].sum())

    @property
    def restart_s(self) -> float:
        return float(self.cost["restart_s"].sum())

    @property
    def gpu_hours_lost(self) -> float:
        return float(self.cost["gpu_hours_lost"].sum())


def incident_chain(source: Source, incident_id: int, *, rename: Rename | None = None) -> pl.DataFrame:
    """The chain of one incident, in time order: (step, t_s, what, detail)."""
    return incident_detail(source, incident_id, rename=rename).chain


def incident_detail(source: Source, incident_id: int, *, rename: Rename | None = None) -> IncidentDetail:
    """The incident's chain, cost and blast radius. `rename(kind, name)` (kind host or job) rewrites every
    hostname and job name the chain's sentences mention: an anonymised export passes its pseudonyms."""
    rename = rename or _same
    with _connection(source) as con:
        rows = query_frame(con, "SELECT * FROM incidents WHERE incident_id = ?", [int(incident_id)])
        if rows.height == 0:
            raise IncidentError(f"no incident {incident_id} in this run")
        inc = rows.row(0, named=True)
        inc["job_ids"] = list(inc.get("job_ids") or [])
        names = {
            h: rename("host", n)
            for h, n in query_frame(
                con, "SELECT host_id, hostname FROM hosts WHERE hostname IS NOT NULL"
            ).iter_rows()
        }
        horizon = _horizon(con)
        steps: list[tuple[float, str, str]] = []
        where = _where(inc, names)
        steps.append((inc["t_s"], "occurred", f"{inc['cause']} ({inc['category']}){where}"))
        steps.append((inc["detected_s"], "detected", _how_detected(con, inc)))
        cost = _jobs_hit(con, inc, horizon, steps, names, rename)
        hosts = _repair_steps(con, inc, names, steps)
        gpus = [inc["gpu_id"]] if inc["gpu_id"] is not None else _gpus_of(con, hosts)
    steps.sort(key=lambda s: (s[0], _ORDER[s[1].split(":")[0]]))
    chain = pl.DataFrame(
        {
            "step": list(range(1, len(steps) + 1)),
            "t_s": [s[0] for s in steps],
            "what": [s[1] for s in steps],
            "detail": [s[2] for s in steps],
        },
        schema=CHAIN_SCHEMA,
    )
    return IncidentDetail(inc, chain, cost, hosts, gpus, inc["job_ids"])


def _horizon(con: duckdb.DuckDBPyConnection) -> float:
    """The run's length (runs.duration_s), else the last moment any table mentions."""
    rows = con.execute("""SELECT coalesce((SELECT max(duration_s) FROM runs),
                                 greatest((SELECT max(end_s) FROM host_states), (SELECT max(end_s) FROM job_attempts),
                                          (SELECT max(t_s) FROM incidents)))""").fetchall()
    return float(rows[0][0] or 0.0)


def _where(inc: dict, names: dict) -> str:
    parts = []
    if inc["host_id"] is not None:
        parts.append(f"host {names.get(inc['host_id'], inc['host_id'])}")
    if inc["gpu_id"] is not None:
        parts.append(f"GPU {inc['gpu_id']}")
    if inc["link_id"] is not None:
        parts.append(f"link {inc['link_id']}")
    if inc["xid"] is not None:
        parts.append(f"XID {inc['xid']}")
    return " on " + ", ".join(parts) if parts else ""


def _how_detected(con: duckdb.DuckDBPyConnection, inc: dict) -> str:
    """XIDs in the kernel log where there are any; else what Goodput's failure model says notices the cause."""
    xids = query_frame(
        con, "SELECT xid, message FROM xid_events WHERE incident_id = ? ORDER BY t_s", [inc["incident_id"]]
    )
    late = inc["detected_s"] - inc["t_s"]
    cause = inc["cause"]
    recorded = _recorded_in(con, inc["incident_id"])
    if recorded is not None:
        return recorded
    if xids.height:
        codes = ", ".join(str(x) for x in dict.fromkeys(xids["xid"].to_list()))
        return f"XID {codes} in the kernel log ({xids['message'][0]})"
    if inc["planned"]:
        return "planned stop: the job was checkpointed and stopped on schedule"
    if cause == "silent_data_corruption":
        return f"late detection of silent data corruption ({late:,.0f} s after the fault: loss or checksum check)"
    if cause == "nccl_watchdog_timeout":
        return f"NCCL watchdog timeout ({late:,.0f} s after the collective hung)"
    if inc["xid"] is not None:
        return f"XID {inc['xid']} reported by the driver"
    if SCOPE.get(cause) == "job":
        return "the job exited with an error"
    return f"health check ({late:,.0f} s after the fault)"


def _recorded_in(con: duckdb.DuckDBPyConnection, incident_id: int) -> str | None:
    """How a fault history's outage is known (engine.ingest.node_events): the records it was read from, not a
    detection Goodput would invent; None where the run holds no such record (every other run)."""
    present = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'node_events'"
    ).fetchall()[0][0]
    if not present:
        return None
    rows = con.execute(
        "SELECT count(*), min(line) FROM node_events WHERE incident_id = ?", [incident_id]
    ).fetchall()[0]
    if not rows or not rows[0]:
        return None
    records = f"{rows[0]} records" if rows[0] > 1 else "a record"
    return (
        f"{records} of the fault history (from line {rows[1]:,} of its file): when and how it was noticed is not"
        " recorded"
    )


def _jobs_hit(con, inc: dict, horizon: float, steps: list, names: dict, rename: Rename) -> pl.DataFrame:
    """Per job hit: the attempt it ended, lost work, restart time, GPU-hours; adds the job steps to `steps`.

    Downtime is charged to one incident at a time (as engine.sim.tables does): from the interruption until the job
    runs again or the next incident hits it, whichever comes first.
    """
    reason = "planned_maintenance" if inc["planned"] else inc["cause"]
    records = []
    for job in inc["job_ids"]:
        info = query_frame(con, "SELECT name, gpus, end_s FROM jobs WHERE job_id = ?", [job])
        name, gpus, job_end = info.row(0) if info.height else (job, 0.0, None)
        name = rename("job", name or job)
        attempts = query_frame(
            con,
            "SELECT attempt, start_s, end_s, end_reason, lost_work_s, hosts"
            " FROM job_attempts WHERE job_id = ? ORDER BY attempt",
            [job],
        )
        ended = attempts.filter(
            (pl.col("end_reason") == reason)
            & (pl.col("end_s") >= inc["t_s"] - EPS)
            & (pl.col("end_s") <= max(inc["detected_s"], inc["t_s"]) + EPS)
        )
        later = query_frame(
            con,
            "SELECT min(detected_s) AS t FROM incidents WHERE list_contains(job_ids, ?)"
            " AND detected_s > ? AND incident_id <> ?",
            [job, inc["detected_s"], inc["incident_id"]],
        )["t"][0]
        next_hit = horizon if later is None else later
        if ended.height:
            hit = ended.sort((pl.col("end_s") - inc["detected_s"]).abs()).row(0, named=True)
            at, lost, attempt = hit["end_s"], hit["lost_work_s"] or 0.0, hit["attempt"]
            steps.append(
                (
                    at,
                    "job interrupted",
                    f"{name}: attempt {attempt} on {len(hit['hosts'] or [])} hosts"
                    f" ended, {lost:,.0f} s of work lost",
                )
            )
            nxt = attempts.filter(pl.col("attempt") == attempt + 1)
            _restart_steps(con, job, name, hit, nxt, inc, steps, names)
        else:  # hit while it restarted: no attempt ended, no work lost, the restart began again
            at, lost, attempt = inc["detected_s"], 0.0, None
            steps.append((at, "job interrupted", f"{name}: hit while restarting; the restart began again"))
            nxt = attempts.filter(pl.col("start_s") > at)
            if nxt.height:
                steps.append((nxt["start_s"][0], "job running again", f"{name}: attempt {nxt['attempt'][0]}"))
        if nxt.height:
            resumed = float(nxt["start_s"][0])
        elif job_end is None or job_end >= horizon - EPS:
            resumed = horizon  # still down at the end of the run
        else:
            resumed = at  # the job ended there (a research job that failed): no restart to charge
        restart = max(min(resumed, next_hit, horizon) - at, 0.0)
        records.append(
            (
                job,
                name,
                float(gpus or 0.0),
                attempt,
                lost,
                restart,
                float(gpus or 0.0) * (lost + restart) / SECONDS_PER_HOUR,
            )
        )
    return pl.DataFrame(
        records,
        schema={
            "job_id": pl.String,
            "name": pl.String,
            "gpus": pl.Float64,
            "attempt": pl.Int32,
            "lost_work_s": pl.Float64,
            "restart_s": pl.Float64,
            "gpu_hours_lost": pl.Float64,
        },
        orient="row",
    )


def _restart_steps(
    con, job: str, name: str, hit: dict, nxt: pl.DataFrame, inc: dict, steps: list, names: dict
) -> None:
    ckpt = con.execute(
        "SELECT max(end_s) FROM checkpoints WHERE job_id = ? AND end_s <= ?", [job, inc["t_s"]]
    ).fetchall()[0][0]
    if ckpt is not None:
        steps.append((float(ckpt), "checkpoint", f"{name}: restarts from the checkpoint completed here"))
    elif not inc["planned"]:
        steps.append(
            (float(hit["start_s"]), "checkpoint", f"{name}: no checkpoint yet; restarts from its start")
        )
    if not nxt.height:
        return
    new = nxt.row(0, named=True)
    old_hosts, new_hosts = set(hit["hosts"] or []), list(new["hosts"] or [])
    added = [h for h in new_hosts if h not in old_hosts]
    if added:
        removed = sorted(old_hosts - set(new_hosts))
        steps.append(
            (
                new["start_s"],
                "spares swapped in",
                f"{name}: hosts {_hostnames(names, added)} replace {_hostnames(names, removed)}",
            )
        )
    steps.append(
        (new["start_s"], "job running again", f"{name}: attempt {new['attempt']} on {len(new_hosts)} hosts")
    )


def _hostnames(names: dict, hosts: Iterable[int]) -> str:
    return ", ".join(str(names.get(int(h), h)) for h in hosts) or "none"


def _repair_steps(con, inc: dict, names: dict, steps: list) -> list[int]:
    """Hosts the incident took out of service (an interval of OUT_OF_SERVICE_STATES starting between the fault
    and its detection), their repair states in order and their return. Returns the hosts."""
    if inc["planned"]:
        return []
    candidates = None if inc["host_id"] is None else [inc["host_id"]]
    if inc["host_id"] is not None and SCOPE.get(inc["cause"]) == "network":  # a rack switch takes the rack
        candidates = (
            query_frame(
                con,
                "SELECT host_id FROM hosts WHERE rack_id = (SELECT rack_id FROM hosts WHERE host_id = ?)",
                [inc["host_id"]],
            )["host_id"].to_list()
            or candidates
        )
    states = query_frame(
        con,
        "SELECT host_id, state, start_s, end_s FROM host_states WHERE end_s > ?"
        " AND (? OR list_contains(?, host_id)) ORDER BY host_id, start_s",
        [inc["t_s"] - EPS, candidates is None, candidates or []],
    )
    out_of_service = pl.col("state").is_in(OUT_OF_SERVICE_STATES)
    first = (
        states.filter(
            out_of_service
            & (pl.col("start_s") >= inc["t_s"] - EPS)
            & (pl.col("start_s") <= inc["detected_s"] + EPS)
        )
        .group_by("host_id")
        .agg(pl.col("start_s").min())
    )
    if first.height == 0:
        return []
    # each host's out-of-service run: from its first such interval until the first one that is not
    runs = (
        states.join(first.rename({"start_s": "from_s"}), on="host_id")
        .filter(pl.col("start_s") >= pl.col("from_s") - EPS)
        .sort("host_id", "start_s")
        .with_columns(back=(~out_of_service).cum_sum().over("host_id"))
        # back counts the in-service intervals so far: 0 while out, 1 at the return (and any later repair)
        .filter((pl.col("back") == 0) | ((pl.col("back") == 1) & ~out_of_service))
    )
    # hosts with the same story are told once ("h0002, h0003: repair ...")
    stories: dict[tuple, list[int]] = {}
    for host, group in runs.group_by("host_id", maintain_order=True):
        merged = _merge(group.select("state", "start_s", "end_s").rows())
        stories.setdefault(tuple(merged), []).append(int(host[0]))
    for story, hosts in stories.items():
        who = ", ".join(str(names.get(h, h)) for h in hosts)
        out = [s for s in story if s[0] in OUT_OF_SERVICE_STATES]
        steps.append((out[0][1], "hosts drained", f"{who} taken out of service ({out[0][0]})"))
        for state, start, _ in out[1:]:
            steps.append((start, f"repair: {state}", who))
        if len(story) > len(out):
            state, start, _ = story[-1]
            steps.append((start, "host returned", f"{who} back as {state}"))
        else:
            steps.append((out[-1][2], "host returned", f"{who} still out of service at the end of the run"))
    return sorted(h for hs in stories.values() for h in hs)


def _merge(rows: list[tuple]) -> list[tuple]:
    """Consecutive intervals of one state as one."""
    merged: list[tuple] = []
    for state, start, end in rows:
        if merged and merged[-1][0] == state and abs(merged[-1][2] - start) <= EPS:
            merged[-1] = (state, merged[-1][1], end)
        else:
            merged.append((state, start, end))
    return merged


def _gpus_of(con, hosts: list[int]) -> list[int]:
    if not hosts:
        return []
    return query_frame(
        con, "SELECT gpu_id FROM gpus WHERE list_contains(?, host_id) ORDER BY gpu_id", [hosts]
    )["gpu_id"].to_list()


# ----- the set ---------------------------------------------------------------------------------------------


def known_causes(frame: pl.DataFrame | None = None) -> set[str]:
    """The taxonomy's causes, planned_maintenance, and any further cause the frame's run added."""
    extra = (
        set(frame["cause"].drop_nulls().unique().to_list())
        if frame is not None and "cause" in frame.columns
        else set()
    )
    return set(CATEGORY) | extra


def filter_incidents(
    frame: pl.DataFrame,
    *,
    since_s: float | None = None,
    until_s: float | None = None,
    causes: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    racks: Iterable[int] | None = None,
    jobs: Iterable[str] | None = None,
    planned: bool | None = None,
    incident_ids: Iterable[int] | None = None,
) -> pl.DataFrame:
    """The incidents matching every filter given (AND across filters, OR within one): time window
    [since_s, until_s) on t_s, causes, categories, racks (rack_id column, from load_incidents), jobs
    (any of the jobs hit), planned (True: planned only, False: unexpected only), incident ids.
    An unknown cause or category is an error; an empty list matches nothing."""
    conditions = []
    if since_s is not None:
        conditions.append(pl.col("t_s") >= since_s)
    if until_s is not None:
        conditions.append(pl.col("t_s") < until_s)
    if causes is not None:
        causes = list(causes)
        unknown = sorted(set(causes) - known_causes(frame))
        if unknown:
            raise IncidentError(
                f"unknown cause {', '.join(unknown)}; causes are {', '.join(sorted(known_causes(frame)))}"
            )
        conditions.append(pl.col("cause").is_in(causes))
    if categories is not None:
        categories = list(categories)
        known = set(CATEGORY.values()) | set(frame["category"].drop_nulls().unique().to_list())
        unknown = sorted(set(categories) - known)
        if unknown:
            raise IncidentError(
                f"unknown category {', '.join(unknown)}; categories are {', '.join(sorted(known))}"
            )
        conditions.append(pl.col("category").is_in(categories))
    if racks is not None:
        if "rack_id" not in frame.columns:
            raise IncidentError(
                "filter by rack: the incidents have no rack_id (use engine.analysis.incidents.load_incidents)"
            )
        conditions.append(pl.col("rack_id").is_in([int(r) for r in racks]))
    if jobs is not None:
        jobs = list(jobs)
        conditions.append(pl.col("job_ids").list.eval(pl.element().is_in(jobs)).list.any())
    if planned is not None:
        conditions.append(pl.col("planned").fill_null(False) == planned)
    if incident_ids is not None:
        conditions.append(pl.col("incident_id").is_in([int(i) for i in incident_ids]))
    return frame.filter(pl.all_horizontal(conditions).fill_null(False)) if conditions else frame


def summary_counts(incidents: pl.DataFrame, days: float | None = None, *, job: str | None = None) -> dict:
    """Counted as the Llama 3 paper counts them: total, planned, unexpected, by cause and by category (with
    share of the unexpected ones), the hardware share of the unexpected ones (HARDWARE_CATEGORIES) and
    interruptions a day (over `days`, default the span up to the last incident's day). `job`: only the
    interruptions of that job (the paper counts those of its training job, as the run summary does)."""
    if job is not None:
        incidents = incidents.filter(pl.col("job_ids").list.contains(job))
    planned_mask = incidents["planned"].fill_null(False)
    unexpected = incidents.filter(~planned_mask)
    n_unexpected = unexpected.height
    hardware = unexpected.filter(pl.col("category").is_in(HARDWARE_CATEGORIES)).height
    if days is None:
        days = float((incidents["t_s"].max() or 0.0) // SECONDS_PER_DAY + 1) if incidents.height else 1.0

    def share(group: str) -> pl.DataFrame:
        counts = incidents.group_by(group).agg(
            interruptions=pl.len(),
            unexpected=(~pl.col("planned").fill_null(False)).sum().cast(pl.Int64),
            gpu_hours_lost=pl.col("gpu_hours_lost").sum(),
        )
        return counts.with_columns(
            pct_of_unexpected=pl.col("unexpected") / n_unexpected * 100
            if n_unexpected
            else pl.lit(None, pl.Float64)
        ).sort(["interruptions", group], descending=[True, False])

    n_days = max(int(-(-days // 1)), 1)
    per_day = (
        pl.DataFrame({"day": pl.int_range(0, n_days, eager=True)})
        .join(
            incidents.with_columns(day=(pl.col("t_s") // SECONDS_PER_DAY).cast(pl.Int64))
            .group_by("day")
            .agg(
                planned=pl.col("planned").fill_null(False).sum().cast(pl.Int64),
                unexpected=(~pl.col("planned").fill_null(False)).sum().cast(pl.Int64),
            ),
            on="day",
            how="left",
        )
        .fill_null(0)
        .sort("day")
    )
    return {
        "total": incidents.height,
        "planned": incidents.height - n_unexpected,
        "unexpected": n_unexpected,
        "hardware": hardware,
        "hardware_share": hardware / n_unexpected if n_unexpected else None,
        "per_day": incidents.height / days if days > 0 else None,
        "gpu_hours_lost": float(incidents["gpu_hours_lost"].sum() or 0.0),
        "by_cause": share("cause"),
        "by_category": share("category"),
        "days": per_day,
    }
