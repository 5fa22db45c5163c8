"""Racks page queries: every host's and GPU's state, readings and failures at time t; a rack's parts, links and
events; what a failure of a rack, host or switch would hit at t.

Every frame is one cached query (dashboard.state.query); per-GPU measures are joined in Polars, never in
Python loops over rows.
"""

import polars as pl

from dashboard import state
from engine.fabric.topology import CTSW_PER_POD
from engine.report.palette import OUT_OF_SERVICE_STATES
from engine.scenario.durations import parse_duration

DEFAULT_TDP_W = 700.0  # H100 SXM with its TDP raised to 700 W (reference README §1; Llama 3 paper §3.3)
DEFAULT_RACK_BUDGET_KW = 24.0  # engine.scenario's default cluster.rack_power_budget_kw
# Without a sample grid (ingested runs), a reading older than this many DEFAULT_SAMPLE_S is stale (the host went
# silent: down, diagnosed, repaired); DCGM scrapes come far more often than hourly.
STALE_SAMPLES = 1.5
DEFAULT_SAMPLE_S = 3600.0

HOST_STATE_AT = """
    SELECT host_id, arg_max(state, start_s) AS state, arg_max(job_id, start_s) AS job_id
    FROM host_states WHERE start_s <= ? AND end_s > ? GROUP BY host_id
"""

HOSTS_AT = f"""
SELECT h.host_id, h.hostname, h.rack_id, h.pod_id, h."row", h.position, coalesce(h.slot, 0) AS slot,
       s.state, s.job_id
FROM hosts h
LEFT JOIN ({HOST_STATE_AT}) s USING (host_id)
ORDER BY h.host_id
"""  # noqa: S608 (only constant SQL formatted in)


def hosts_at(run_id: str, t_s: float) -> pl.DataFrame:
    """One row per host with its state (None where no interval covers t) and job at `t_s`."""
    return state.query(run_id, HOSTS_AT, (t_s, t_s))


# A GPU takes its host's state, except `failed` from its own incident until that incident's repair.
GPUS_AT = f"""
WITH host_state AS ({HOST_STATE_AT}), failed AS (
    SELECT DISTINCT gpu_id FROM incidents
    WHERE gpu_id IS NOT NULL AND t_s <= ? AND coalesce(repaired_s, 'infinity'::DOUBLE) > ?
)
SELECT h.host_id, h.hostname, h.rack_id, h.pod_id, h."row", h.position, coalesce(h.slot, 0) AS slot,
       g.gpu_id, g."index" AS gpu_index,
       CASE WHEN f.gpu_id IS NOT NULL THEN 'failed' ELSE s.state END AS state, s.job_id
FROM gpus g JOIN hosts h USING (host_id) LEFT JOIN host_state s USING (host_id) LEFT JOIN failed f USING (gpu_id)
ORDER BY g.gpu_id
"""  # noqa: S608 (only constant SQL formatted in)


def gpus_at(run_id: str, t_s: float) -> pl.DataFrame:
    """One row per GPU with its place (its host's), its state and its host's job at `t_s`."""
    return state.query(run_id, GPUS_AT, (t_s, t_s, t_s, t_s))


def gpu_count(run_id: str) -> int:
    return int(state.query(run_id, "SELECT count(*) AS n FROM gpus")["n"][0])


def has_table(run_id: str, table: str) -> bool:
    return (
        state.query(
            run_id, "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = ?", (table,)
        )["n"][0]
        > 0
    )


# ----- telemetry: the reading at or before t -------------------------------------------------------------

READINGS_AT = """
SELECT gpu_id, arg_max(temp_c, t_s) AS temp_c, arg_max(power_w, t_s) AS power_w,
       arg_max(util_pct, t_s) AS util_pct, max(t_s) AS sample_t_s
FROM gpu_samples WHERE t_s <= ? AND t_s > ? GROUP BY gpu_id
"""


def sample_interval_s(scenario: dict) -> float | None:
    """The run's telemetry interval (simulation.telemetry_resolution); None for a run without a scenario's grid
    (ingested scrapes come when they come). A stored scenario: an earlier Goodput wrote bare seconds."""
    value = (scenario or {}).get("simulation", {}).get("telemetry_resolution")
    return parse_duration(value, "simulation.telemetry_resolution", bare_seconds=True) if value else None


def readings_at(run_id: str, t_s: float, interval_s: float | None) -> pl.DataFrame:
    """Each GPU's latest sample at or before `t_s` (gpu_id, temp_c, power_w, util_pct, sample_t_s).

    On a simulated run's regular grid (`interval_s`) that is the sample of the last grid point at or before t:
    a GPU that missed it has no reading (its host is silent: down or on the bench), and every t between two grid
    points asks the same cached question (play and the slider stay quick: one scan of a 31.9 M-sample table
    costs about a second). Without a grid, a sample older than STALE_SAMPLES x DEFAULT_SAMPLE_S is stale."""
    if interval_s:
        grid_t = (t_s // interval_s) * interval_s
        return state.query(run_id, READINGS_AT, (grid_t, grid_t - interval_s / 2))
    return state.query(run_id, READINGS_AT, (t_s, t_s - STALE_SAMPLES * DEFAULT_SAMPLE_S))


def power_limits(scenario: dict) -> tuple[float, float]:
    """(GPU TDP in W, rack budget in kW) from the run's scenario, else the reference defaults."""
    cluster = (scenario or {}).get("cluster", {})
    return (
        float(cluster.get("gpu_tdp_w") or DEFAULT_TDP_W),
        float(cluster.get("rack_power_budget_kw") or DEFAULT_RACK_BUDGET_KW),
    )


# ----- failures in a window ------------------------------------------------------------------------------

# An incident counts on the GPU it names; one naming only a host on each of the host's GPUs; a GPU NIC cable
# on its GPU; a rack switch uplink on every GPU of the rack (engine.fabric.topology names: host:gpuN, rtsw-R).
_ON_GPUS = """
    SELECT g.gpu_id FROM hit JOIN gpus g ON g.gpu_id = hit.gpu_id
    UNION ALL
    SELECT g.gpu_id FROM hit JOIN gpus g ON g.host_id = hit.host_id WHERE hit.gpu_id IS NULL"""
_ON_LINKS = """
    UNION ALL
    SELECT g.gpu_id FROM hit JOIN links l ON l.link_id = hit.link_id
        JOIN hosts h ON l.tier = 'gpu_rtsw' AND starts_with(l.a, h.hostname || ':gpu')
        JOIN gpus g ON g.host_id = h.host_id AND l.a = h.hostname || ':gpu' || g."index"
    WHERE hit.gpu_id IS NULL AND hit.host_id IS NULL
    UNION ALL
    SELECT g.gpu_id FROM hit JOIN links l ON l.link_id = hit.link_id
        JOIN hosts h ON l.tier = 'rtsw_ctsw' AND l.a = 'rtsw-' || h.rack_id
        JOIN gpus g ON g.host_id = h.host_id
    WHERE hit.gpu_id IS NULL AND hit.host_id IS NULL"""
_FAILURES_IN = """
WITH hit AS (SELECT * FROM incidents WHERE t_s > ? AND t_s <= ? AND NOT coalesce(planned, false)),
named AS ({parts})
SELECT gpu_id, count(*)::INTEGER AS failures FROM named GROUP BY gpu_id
"""


def failures_in(run_id: str, t0_s: float, t1_s: float) -> pl.DataFrame:
    """Unplanned incidents per GPU with t in (t0, t1] (gpu_id, failures); GPUs without any are absent."""
    if not has_table(run_id, "incidents"):
        return pl.DataFrame(schema={"gpu_id": pl.Int32, "failures": pl.Int32})
    parts = _ON_GPUS + (_ON_LINKS if has_table(run_id, "links") else "")
    return state.query(run_id, _FAILURES_IN.format(parts=parts), (t0_s, t1_s))


# ----- the floor: one row per GPU with every measure ----------------------------------------------------


def floor_cells(run_id: str, t_s: float, scenario: dict, window_s: float) -> pl.DataFrame:
    """One row per GPU at `t_s`: place, state, job, the latest readings, host and rack power, the rack's
    budget and its failures in (t - window, t]. Power of a GPU without a reading counts as 0 W in its sums."""
    cells = gpus_at(run_id, t_s)
    if has_table(run_id, "gpu_samples"):
        readings = readings_at(run_id, t_s, sample_interval_s(scenario)).select(
            "gpu_id", "temp_c", "power_w", "util_pct"
        )
    else:
        readings = pl.DataFrame(
            schema={"gpu_id": pl.Int32, "temp_c": pl.Float32, "power_w": pl.Float32, "util_pct": pl.Float32}
        )
    fails = failures_in(run_id, t_s - window_s, t_s)
    _, budget_kw = power_limits(scenario)
    return (
        cells.join(readings, on="gpu_id", how="left")
        .join(fails, on="gpu_id", how="left")
        .with_columns(
            pl.col("failures").fill_null(0),
            (pl.col("power_w").fill_null(0).sum().over("host_id") / 1000).alias("host_kw"),
            (pl.col("power_w").fill_null(0).sum().over("rack_id") / 1000).alias("rack_kw"),
            pl.lit(budget_kw).alias("budget_kw"),
        )
    )


def problem_racks(hosts: pl.DataFrame, cells: pl.DataFrame) -> pl.DataFrame:
    """Racks with a problem at t (definition "racks_with_a_problem"): at least one host out of service or one
    failed GPU. One row each (rack_id, row, position, hosts_out_of_service, failed_gpus, states: the
    out-of-service states present, sorted), by rack id. `hosts` from hosts_at, `cells` from floor_cells."""
    out = (
        hosts.filter(pl.col("state").is_in(OUT_OF_SERVICE_STATES))
        .group_by("rack_id")
        .agg(
            pl.len().cast(pl.Int64).alias("hosts_out_of_service"),
            pl.col("state").unique().sort().alias("states"),
        )
    )
    failed = (
        cells.filter(pl.col("state") == "failed")
        .group_by("rack_id")
        .agg(pl.len().cast(pl.Int64).alias("failed_gpus"))
    )
    places = hosts.group_by("rack_id").agg(pl.col("row").first(), pl.col("position").first())
    return (
        out.join(failed, on="rack_id", how="full", coalesce=True)
        .join(places, on="rack_id", how="left")
        .with_columns(
            pl.col("hosts_out_of_service").fill_null(0),
            pl.col("failed_gpus").fill_null(0),
            pl.col("states").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        )
        .select("rack_id", "row", "position", "hosts_out_of_service", "failed_gpus", "states")
        .sort("rack_id")
    )


def rack_power(cells: pl.DataFrame) -> pl.DataFrame:
    """Per rack (rack_id, row, position, rack_kw, budget_kw, share, over) from `floor_cells`."""
    return (
        cells.group_by("rack_id")
        .agg(
            pl.col("row").first(),
            pl.col("position").first(),
            pl.col("rack_kw").first(),
            pl.col("budget_kw").first(),
        )
        .with_columns((pl.col("rack_kw") / pl.col("budget_kw")).alias("share"))
        .with_columns((pl.col("share") > 1.0).alias("over"))
        .sort("rack_id")
    )


# ----- one rack ------------------------------------------------------------------------------------------


def racks(run_id: str) -> pl.DataFrame:
    return state.query(
        run_id,
        'SELECT rack_id, min(pod_id) AS pod_id, min("row") AS "row", min(position) AS position,'
        " count(*) AS hosts FROM hosts GROUP BY rack_id ORDER BY rack_id",
    )


def rack_history(run_id: str, rack_id: int) -> pl.DataFrame:
    return state.query(
        run_id,
        """
        SELECT h.hostname, s.state, s.start_s, s.end_s, s.job_id
        FROM host_states s JOIN hosts h USING (host_id)
        WHERE h.rack_id = ? ORDER BY h.hostname, s.start_s""",
        (rack_id,),
    )


def rack_incidents(run_id: str, rack_id: int) -> pl.DataFrame:
    """Incidents on the rack's hosts, GPUs, GPU NIC cables and switch uplinks."""
    links = """ OR i.link_id IN (SELECT link_id FROM links WHERE (tier = 'gpu_rtsw' AND b = 'rtsw-' || ?)
                                  OR (tier = 'rtsw_ctsw' AND a = 'rtsw-' || ?))"""
    with_links = has_table(run_id, "links")
    return state.query(
        run_id,
        f"""
        SELECT i.incident_id, i.t_s, h.hostname, i.gpu_id, i.link_id, i.cause, i.category, i.planned, i.xid,
               i.jobs_hit, i.gpu_hours_lost, i.repaired_s - i.t_s AS out_of_service_s
        FROM incidents i LEFT JOIN hosts h USING (host_id)
        WHERE h.rack_id = ?{links if with_links else ""} ORDER BY i.t_s""",  # noqa: S608 (constant fragments only)
        (rack_id, rack_id, rack_id) if with_links else (rack_id,),
    )


def rack_xids(run_id: str, rack_id: int, t_s: float) -> pl.DataFrame:
    """XID lines of the rack's GPUs up to `t_s`, newest first."""
    if not has_table(run_id, "xid_events"):
        return pl.DataFrame()
    return state.query(
        run_id,
        """
        SELECT x.t_s, h.hostname, g."index" AS gpu_index, x.xid, x.incident_id, x.message
        FROM xid_events x JOIN hosts h USING (host_id) LEFT JOIN gpus g ON g.gpu_id = x.gpu_id
        WHERE h.rack_id = ? AND x.t_s <= ? ORDER BY x.t_s DESC""",
        (rack_id, t_s),
    )


def rack_links(run_id: str, rack_id: int, t_s: float) -> pl.DataFrame:
    """The rack's links at `t_s` (engine.fabric.topology names): a gpu_rtsw cable per GPU NIC and the RTSW uplinks,
    each `down` while an incident on it is unrepaired, with its latest utilisation where link telemetry exists."""
    if not has_table(run_id, "links"):
        return pl.DataFrame()
    with_samples = has_table(run_id, "link_samples")
    util = (
        "(SELECT link_id, arg_max(util_pct, t_s) AS util_pct FROM link_samples WHERE t_s <= ? GROUP BY link_id)"
        if with_samples
        else "(SELECT NULL::INTEGER AS link_id, NULL::REAL AS util_pct)"
    )
    params = (t_s, t_s) + ((t_s,) if with_samples else ()) + (rack_id, rack_id)  # in the order of the ?s
    return state.query(
        run_id,
        f"""
        WITH down AS (SELECT DISTINCT link_id FROM incidents WHERE link_id IS NOT NULL AND t_s <= ?
                      AND coalesce(repaired_s, 'infinity'::DOUBLE) > ?)
        SELECT l.link_id, l.tier, l.a, l.b, l.capacity_gbps,
               CASE WHEN d.link_id IS NOT NULL THEN 'down' ELSE 'up' END AS state, u.util_pct
        FROM links l LEFT JOIN down d USING (link_id) LEFT JOIN {util} u USING (link_id)
        WHERE (l.tier = 'gpu_rtsw' AND l.b = 'rtsw-' || ?) OR (l.tier = 'rtsw_ctsw' AND l.a = 'rtsw-' || ?)
        ORDER BY l.tier, l.link_id""",  # noqa: S608 (constant fragments only)
        params,
    )


# ----- blast radius --------------------------------------------------------------------------------------


def jobs(run_id: str) -> pl.DataFrame:
    if not has_table(run_id, "jobs"):
        return pl.DataFrame(
            schema={"job_id": pl.String, "name": pl.String, "gpus": pl.Float64, "kind": pl.String}
        )
    return state.query(run_id, "SELECT job_id, name, gpus, kind FROM jobs")


def blast_radius(
    hosts: pl.DataFrame,
    gpus_per_host: int,
    job_table: pl.DataFrame,
    hit_hosts: pl.Series,
    spanning_racks: bool = False,
) -> pl.DataFrame:
    """The jobs a failure of `hit_hosts` (host ids) would interrupt at the moment `hosts` (hosts_at) shows:
    job_id, name, kind, hosts_hit (its hosts among them), gpus_hit (their GPUs) and job_gpus (every GPU the
    job holds then, all of which stop: a gang-scheduled job restarts as a whole). Largest first.
    `spanning_racks`: only jobs whose hosts sit in more than one rack (a spine switch failure)."""
    running = hosts.filter(pl.col("job_id").is_not_null())
    if spanning_racks:
        spread = running.group_by("job_id").agg(pl.col("rack_id").n_unique().alias("racks"))
        running = running.join(spread.filter(pl.col("racks") > 1).select("job_id"), on="job_id", how="semi")
    holding = running.group_by("job_id").agg(pl.len().alias("job_hosts"))
    hit = (
        running.filter(pl.col("host_id").is_in(hit_hosts.implode()))
        .group_by("job_id")
        .agg(pl.len().alias("hosts_hit"))
    )
    out = (
        hit.join(holding, on="job_id")
        .join(job_table.select("job_id", "name", "kind"), on="job_id", how="left")
        .with_columns(
            (pl.col("hosts_hit") * gpus_per_host).alias("gpus_hit"),
            (pl.col("job_hosts") * gpus_per_host).alias("job_gpus"),
        )
    )
    return out.select("job_id", "name", "kind", "hosts_hit", "gpus_hit", "job_gpus").sort(
        ["job_gpus", "job_id"], descending=[True, False]
    )


def blast_cells(cells: pl.DataFrame, hit_hosts: pl.Series, hit: pl.DataFrame) -> pl.DataFrame:
    """`cells` (floor_cells) with `blast`: 2 behind the failed part, 1 in a job that stops, 0 unaffected."""
    return cells.with_columns(
        blast=pl.when(pl.col("host_id").is_in(hit_hosts.implode()))
        .then(2)
        .when(pl.col("job_id").is_in(hit["job_id"].implode()))
        .then(1)
        .otherwise(0)
    )


def parse_t(value: str | None, duration_s: float) -> float:
    """?t= (seconds since the run's start) clamped to the run; missing or malformed: the run's end."""
    try:
        t_s = float(value) if value is not None else duration_s
    except ValueError:
        t_s = duration_s
    return min(max(t_s, 0.0), duration_s) if t_s == t_s else duration_s  # t_s != t_s: NaN


def state_time(t_s: float, duration_s: float) -> float:
    """The moment whose states to show: intervals are half-open [start, end) and the last ends at the run's end,
    so the run's end itself shows the states of its last second."""
    return min(t_s, max(duration_s - 1.0, 0.0))


# ----- page logic: play, windows, blast targets ----------------------------------------------------------

WINDOWS = {"1h": 3600.0, "6h": 6 * 3600.0, "1d": 86400.0, "7d": 7 * 86400.0}
WINDOW_WORDS = {"1h": "hour", "6h": "6 hours", "1d": "day", "7d": "7 days"}
PLAY_STEPS = {"15m": 900.0, "1h": 3600.0, "6h": 6 * 3600.0, "1d": 86400.0}


def next_t(t_s: float, step_s: float, duration_s: float) -> tuple[float, bool]:
    """One step of play: (the next t, whether to keep playing). Play stops on the run's last moment."""
    nxt = min(t_s + step_s, duration_s)
    return nxt, nxt < duration_s


BLAST_KINDS = {"rack": "Rack", "host": "Host", "rtsw": "Rack switch (RTSW)", "ctsw": "Spine switch (CTSW)"}


def parse_blast(value: str | None) -> tuple[str, str] | None:
    """?blast=kind:name (rack:12, host:gt-p00-r00012-h1, rtsw:rtsw-12, ctsw:ctsw-0-3) as (kind, name)."""
    kind, _, name = (value or "").partition(":")
    return (kind, name) if kind in BLAST_KINDS and name else None


def blast_targets(hosts: pl.DataFrame, kind: str) -> list[str]:
    """What a failure of `kind` could strike, named as the page's selectbox and ?blast= name them."""
    racks_ = hosts["rack_id"].unique().sort()
    if kind == "rack":
        return racks_.cast(pl.String).to_list()
    if kind == "host":
        return hosts.sort("host_id")["hostname"].to_list()
    if kind == "rtsw":
        return ("rtsw-" + racks_.cast(pl.String)).to_list()
    pods = hosts["pod_id"].unique().sort().to_list()
    # engine.fabric.topology: CTSW_PER_POD spine switches per pod, named ctsw-<pod>-<k>
    return [f"ctsw-{p}-{k}" for p in pods for k in range(CTSW_PER_POD)]


def blast_target_of_rack(hosts: pl.DataFrame, kind: str, rack_id: int) -> str | None:
    """The part of an open rack a blast radius of `kind` starts on: the rack, its top host, its switch, or the
    first spine switch of its pod (None: no such rack)."""
    in_rack = hosts.filter(pl.col("rack_id") == rack_id).sort("slot", descending=True)
    if in_rack.is_empty():
        return None
    return {
        "rack": str(rack_id),
        "host": in_rack["hostname"][0],
        "rtsw": f"rtsw-{rack_id}",
        "ctsw": f"ctsw-{in_rack['pod_id'][0]}-0",
    }[kind]


def blast_hosts(hosts: pl.DataFrame, kind: str, name: str) -> tuple[pl.Series, bool]:
    """(host ids a failure of the target takes out of the jobs' reach, whether only jobs spanning racks are hit).

    A rack or its RTSW: every host in the rack (its GPUs reach the fabric only through that switch). A host:
    itself. A CTSW: one of the spine switches every rack of its pod has an uplink into, so a job is hit when it
    has a host in the pod and spans more than one rack (traffic inside a rack never climbs to the spine)."""
    if kind in ("rack", "rtsw"):
        rack = int(name.removeprefix("rtsw-"))
        return hosts.filter(pl.col("rack_id") == rack)["host_id"], False
    if kind == "host":
        return hosts.filter(pl.col("hostname") == name)["host_id"], False
    pod = int(name.split("-")[1])
    return hosts.filter(pl.col("pod_id") == pod)["host_id"], True
