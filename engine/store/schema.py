"""The store's tables: the contract between the engine (which writes them) and the dashboard (which reads them).

Names and columns follow DESIGN "The store". Tables may gain columns; the ones listed in DESIGN stay.
Time columns (`*_s`) are seconds since the run's start; `runs.started_at` anchors them to the wall clock.
Bump SCHEMA_VERSION whenever a column changes meaning or type; readers refuse versions they do not know.
"""

import polars as pl

SCHEMA_VERSION = 1

HOST_STATES = (
    "healthy",
    "running",
    "draining",
    "down",
    "diagnosing",
    "repair",
    "burn_in",
    "spare",
    "retired",
)
# A host in one of these does no work and is not available to jobs ("out of service", "what is down"); a
# retired host (retirement.policy) is out for good, to the end of the run.
OUT_OF_SERVICE_STATES = ("draining", "down", "diagnosing", "repair", "burn_in", "retired")
IN_SERVICE_STATES = ("healthy", "running", "spare")
assert set(OUT_OF_SERVICE_STATES) | set(IN_SERVICE_STATES) == set(HOST_STATES)

TABLES: dict[str, dict[str, str]] = {
    "runs": {
        "run_id": "VARCHAR",
        "kind": "VARCHAR",  # simulate, replay, ingest
        "name": "VARCHAR",
        "scenario": "VARCHAR",  # JSON of the validated scenario
        "seed": "BIGINT",
        "started_at": "TIMESTAMPTZ",
        "duration_s": "DOUBLE",
        "created_at": "TIMESTAMPTZ",
        "engine_version": "VARCHAR",
        "summary": "VARCHAR",  # JSON: the object `goodput simulate --json` prints (less run_id)
    },
    "hosts": {
        "host_id": "INTEGER",
        "hostname": "VARCHAR",
        "rack_id": "INTEGER",
        "pod_id": "INTEGER",
        "row": "INTEGER",
        "position": "INTEGER",
        "slot": "INTEGER",  # the host's place inside its rack, 0 at the bottom
        # simulated runs' ground truth: a systematically bad host (failures.bad_host_fraction), failing at
        # failures.bad_host_multiplier times the rate; NULL where nobody knows (observed runs, older files)
        "bad": "BOOLEAN",
    },
    "gpus": {
        "gpu_id": "INTEGER",
        "host_id": "INTEGER",
        "index": "SMALLINT",
        "uuid": "VARCHAR",
        "model": "VARCHAR",
    },
    "links": {
        "link_id": "INTEGER",
        "tier": "VARCHAR",  # gpu_rtsw, rtsw_ctsw, ctsw_atsw, ...
        "a": "VARCHAR",
        "b": "VARCHAR",
        "capacity_gbps": "DOUBLE",
    },
    "jobs": {
        "job_id": "VARCHAR",
        "name": "VARCHAR",
        "gpus": "DOUBLE",  # fractional where a trace shares GPUs
        "priority": "INTEGER",
        "submit_s": "DOUBLE",
        "start_s": "DOUBLE",
        "end_s": "DOUBLE",
        "state": "VARCHAR",
        "user": "VARCHAR",
        "kind": "VARCHAR",  # flagship, research, trace
        "wait_reason": "VARCHAR",  # the reason it waited longest: no_capacity, fragmentation, priority, failed_hosts
    },
    "job_attempts": {
        "job_id": "VARCHAR",
        "attempt": "INTEGER",
        "start_s": "DOUBLE",
        "end_s": "DOUBLE",
        "end_reason": "VARCHAR",  # a failure cause, planned_maintenance, completed, preempted, end_of_run
        "lost_work_s": "DOUBLE",
        "hosts": "INTEGER[]",
    },
    "job_waits": {  # why a job waited, piece by piece (engine.scheduling.scheduler.REASONS)
        "job_id": "VARCHAR",
        "start_s": "DOUBLE",
        "end_s": "DOUBLE",
        "reason": "VARCHAR",
    },
    "checkpoints": {
        "job_id": "VARCHAR",
        "start_s": "DOUBLE",
        "end_s": "DOUBLE",
    },
    "incidents": {
        "incident_id": "INTEGER",
        "t_s": "DOUBLE",
        "detected_s": "DOUBLE",
        "mitigated_s": "DOUBLE",
        "repaired_s": "DOUBLE",
        "cause": "VARCHAR",
        "category": "VARCHAR",
        "planned": "BOOLEAN",
        "xid": "INTEGER",
        "host_id": "INTEGER",
        "gpu_id": "INTEGER",
        "link_id": "INTEGER",
        "jobs_hit": "INTEGER",  # how many jobs it interrupted
        "gpu_hours_lost": "DOUBLE",
        "job_ids": "VARCHAR[]",  # which ones
    },
    "host_states": {
        "host_id": "INTEGER",
        "state": "VARCHAR",  # one of HOST_STATES
        "start_s": "DOUBLE",
        "end_s": "DOUBLE",
        "job_id": "VARCHAR",  # the job on the host while running
    },
    "gpu_samples": {
        "t_s": "DOUBLE",
        "gpu_id": "INTEGER",
        "temp_c": "REAL",
        "power_w": "REAL",
        "util_pct": "REAL",
        "mem_util_pct": "REAL",
        "ecc_sbe": "INTEGER",
        "ecc_dbe": "INTEGER",
        # Filled by ingest only (DCGM_FI_DEV_MEMORY_TEMP, DCGM_FI_DEV_FB_USED); null in simulated runs.
        "memory_temp_c": "REAL",
        "fb_used_mib": "REAL",
        # SM clock (DCGM field 100) and the clocks-event (throttle) reasons bitmask (field 112, bits in
        # engine.telemetry.clocks.REASON_BITS): simulated, and read from DCGM scrapes; null in older files.
        "sm_clock_mhz": "REAL",
        "clocks_event_reasons": "BIGINT",
        # DCGM's throttle-violation counters (DCGM_FI_DEV_POWER_VIOLATION 240, _THERMAL_VIOLATION 241: time held
        # down by a power or thermal limit, cumulative), as read: nanoseconds in current dcgm_fields.h and the
        # exporter's default-counters.csv (DCGM 2.x headers said usec); from scrapes only, null in simulated runs.
        "power_violation_ns": "BIGINT",
        "thermal_violation_ns": "BIGINT",
    },
    "link_samples": {
        "t_s": "DOUBLE",
        "link_id": "INTEGER",
        "util_pct": "REAL",
        "errors": "INTEGER",
    },
    # The op-level timeline of a training job (`goodput ingest step-times`): one row per operation per worker
    # per step, as ByteDance's OSDI'25 straggler traces record it; empty in every other run.
    "step_ops": {
        "dp_rank": "INTEGER",
        "stage": "INTEGER",  # pipeline stage (PP rank)
        "rank": "INTEGER",  # global rank of the worker, where the input gives one
        "step": "BIGINT",
        "optype": "VARCHAR",  # forward-compute, backward-compute, forward-send, ..., optimizer
        "start_ts": "DOUBLE",  # seconds, as recorded
        "duration": "DOUBLE",  # seconds
        "mb_id": "INTEGER",  # microbatch of a compute op; NULL where not known
        "seq_id": "INTEGER",  # order among the worker's ops of the same kind in the step; NULL where not known
    },
    # Fail-slow episodes (engine.sim.slow): a component that kept working, slowly. gpu_id names the GPU a GPU
    # cause (gpu_thermal, gpu_power) holds down, NULL for a slow host or link; detected_s NULL where nobody
    # detected it; action none, swap or drain, left_s when the host left the flagship job for it. Empty where
    # slowness is off, and absent from files written before it existed (Store.table reads it empty).
    # cost_gpu_hours: the flagship job's slowdown blamed on the episode (engine.sim.slow.episode_costs), NULL where
    # it never bound the job (and in files written before the column existed).
    "slow_episodes": {
        "host_id": "INTEGER",
        "gpu_id": "INTEGER",
        "cause": "VARCHAR",
        "start_s": "DOUBLE",
        "end_s": "DOUBLE",
        "factor": "DOUBLE",
        "detected_s": "DOUBLE",
        "action": "VARCHAR",
        "left_s": "DOUBLE",
        "cost_gpu_hours": "DOUBLE",
    },
    # NIC ports (node_exporter's infiniband collector, labels device and port: `goodput ingest node-exporter`,
    # `goodput watch`): the port's rate (node_infiniband_rate_bytes_per_second x 8 / 1e9) and its error counters as
    # the totals read (link_downed_total, symbol_error_total, link_error_recovery_total,
    # port_errors_received_total); NULL where a host's exporter serves no such metric. Empty in simulated runs,
    # and absent from files written before it existed (Store.table reads it empty).
    "nic_samples": {
        "host_id": "INTEGER",
        "device": "VARCHAR",
        "port": "INTEGER",
        "t_s": "DOUBLE",
        "rate_gbps": "REAL",
        "link_downed": "BIGINT",
        "symbol_errors": "BIGINT",
        "link_recoveries": "BIGINT",
        "rcv_errors": "BIGINT",
    },
    "xid_events": {
        "t_s": "DOUBLE",
        "gpu_id": "INTEGER",
        "host_id": "INTEGER",
        "xid": "INTEGER",
        "incident_id": "INTEGER",
        "message": "VARCHAR",
    },
    # Node events as an operator's history holds them (`goodput ingest node-events`: Slurm's `sacctmgr show event`,
    # fault tickets): one row an event of a node out of service (a hostlist record, one a node), with the text it
    # was read with and the cause the cause map gave it; incident_id names the outage (incidents row) it was merged
    # into. state is Slurm's (DOWN, IDLE+DRAIN, ...), NULL for tickets; end_s NULL while still open; reason is
    # Slurm's Reason or a ticket's cause; line the file's line (a Parquet file's row) it was read from. Empty in
    # every other run, and absent from files written before it existed (Store.table reads it empty).
    "node_events": {
        "host_id": "INTEGER",
        "start_s": "DOUBLE",
        "end_s": "DOUBLE",
        "state": "VARCHAR",
        "reason": "VARCHAR",
        "description": "VARCHAR",
        "user": "VARCHAR",
        "cause": "VARCHAR",
        "planned": "BOOLEAN",
        "incident_id": "INTEGER",
        "source": "VARCHAR",
        "line": "BIGINT",
    },
}


# The Polars type of each SQL type TABLES uses: frames built for a table carry exactly the types DuckDB
# stores, so writing them converts nothing and an empty frame has the table's schema.
POLARS_TYPES: dict[str, pl.DataType] = {
    "VARCHAR": pl.String,
    "DOUBLE": pl.Float64,
    "REAL": pl.Float32,
    "BIGINT": pl.Int64,
    "INTEGER": pl.Int32,
    "SMALLINT": pl.Int16,
    "BOOLEAN": pl.Boolean,
    "INTEGER[]": pl.List(pl.Int32),
    "VARCHAR[]": pl.List(pl.String),
}


def polars_schema(table: str, columns: tuple[str, ...] | None = None) -> dict[str, pl.DataType]:
    """Polars types of a store table's columns (all of them in table order, or only those in `columns`)."""
    return {
        name: POLARS_TYPES[sql] for name, sql in TABLES[table].items() if columns is None or name in columns
    }


# Columns a run's file holds only once a row has a value in them: DuckDB writes a column of nulls at the cost of a
# full one (0.65 s of CPU a 32 M rows), and a simulated run never fills these ingest-only fields of its 30-60 M
# telemetry rows. A file without one reads it as NULL, as it reads a column added after it was written
# (engine.store.Store.table, dashboard.queries.gpus_throttled).
SPARSE_COLUMNS = {
    "gpu_samples": ("memory_temp_c", "fb_used_mib", "power_violation_ns", "thermal_violation_ns"),
}


def create_statement(table: str, *, sparse: bool = False) -> str:
    """`CREATE TABLE` for one of TABLES (identifiers quoted: `index` and `row` are SQL keywords); `sparse`: without
    its SPARSE_COLUMNS, which a writer adds when a row first has a value in one."""
    left_out = SPARSE_COLUMNS.get(table, ()) if sparse else ()
    columns = ", ".join(
        f'"{name}" {sql_type}' for name, sql_type in TABLES[table].items() if name not in left_out
    )
    return f'CREATE TABLE "{table}" ({columns})'
