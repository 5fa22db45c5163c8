"""A run's fail-slow episodes as people and exports read them: one loader for the Incidents page, the Jobs page's
culprit and the incidents export (engine.report.export), and the words for their causes and actions.

`load_slow_episodes(con)` reads the slow_episodes table of a run file with each episode's host name and GPU index,
worst first: the costliest (cost_gpu_hours, engine.sim.slow.episode_costs), then the slowest and longest. A file
written before the table or its cost column existed reads as no episodes or as episodes without a cost. The
export carries every episode of the run (the filters choose incidents; episodes are no incidents), so their
costs add up to the flagship job's fail-slow slowdown.
"""

import duckdb
import polars as pl

from engine.report.palette import readable
from engine.store import file_columns, query_frame
from engine.store.schema import TABLES

# slow_episodes.cause in words (engine.sim.slow.SLOW_CAUSES)
SLOW_CAUSE_WORDS = {
    "gpu_thermal": "GPU thermal throttling",
    "gpu_power": "GPU power capping",
    "host": "Slow host",
    "network": "Degraded NIC or cable",
}
# slow_episodes.action in words (slow.policy)
ACTION_WORDS = {"none": "none", "swap": "swapped out", "drain": "drained"}

SCHEMA: dict[str, pl.DataType] = {
    "host_id": pl.Int32,
    "hostname": pl.String,
    "gpu_id": pl.Int32,
    "gpu_index": pl.Int32,
    "cause": pl.String,
    "start_s": pl.Float64,
    "end_s": pl.Float64,
    "factor": pl.Float64,
    "detected_s": pl.Float64,
    "action": pl.String,
    "left_s": pl.Float64,
    "cost_gpu_hours": pl.Float64,
}


def slow_cause_label(cause: str | None) -> str:
    """A fail-slow cause in words ("GPU thermal throttling"); an unknown one made readable."""
    return SLOW_CAUSE_WORDS.get(cause or "", readable(cause or "unknown"))


def slow_cause_expr(column: str = "cause") -> pl.Expr:
    """slow_cause_label as a Polars expression."""
    col = pl.col(column)
    known = col.replace_strict(SLOW_CAUSE_WORDS, default=None, return_dtype=pl.String)
    words = col.fill_null("unknown").str.replace_all("_", " ")
    return known.fill_null(words.str.slice(0, 1).str.to_uppercase() + words.str.slice(1)).alias(column)


def load_slow_episodes(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every fail-slow episode of the run file `con` reads, worst first, in SCHEMA's columns (empty when none)."""
    present = file_columns(con, "slow_episodes")
    if not present:
        return pl.DataFrame(schema=SCHEMA)
    episode = ", ".join(
        f'e."{name}"' if name in present else f'CAST(NULL AS {sql}) AS "{name}"'
        for name, sql in TABLES["slow_episodes"].items()
        if name != "host_id"
    )
    hosts, gpus = file_columns(con, "hosts"), file_columns(con, "gpus")
    hostname = "h.hostname" if "hostname" in hosts else "CAST(NULL AS VARCHAR)"
    index = 'g."index"' if "index" in gpus else "CAST(NULL AS INTEGER)"
    joins = ("LEFT JOIN hosts h ON h.host_id = e.host_id " if hosts else "") + (
        "LEFT JOIN gpus g ON g.gpu_id = e.gpu_id " if gpus else ""
    )
    query = (
        f"SELECT e.host_id, {hostname} AS hostname, {index} AS gpu_index, {episode} "  # noqa: S608 (schema names)
        f"FROM slow_episodes e {joins}"
        "ORDER BY cost_gpu_hours DESC NULLS LAST, factor DESC, end_s - start_s DESC, start_s, e.host_id"
    )
    frame = query_frame(con, query)
    return frame.select(list(SCHEMA)).cast(SCHEMA) if frame.height else pl.DataFrame(schema=SCHEMA)


def component_expr() -> pl.Expr:
    """Where an episode was, as text: the host's name (its id where it has none), plus the GPU's index."""
    host = pl.coalesce(pl.col("hostname"), pl.lit("host ") + pl.col("host_id").cast(pl.String))
    gpu = pl.when(pl.col("gpu_id").is_not_null()).then(
        pl.lit(" GPU ") + pl.coalesce(pl.col("gpu_index"), pl.col("gpu_id")).cast(pl.String)
    )
    return pl.concat_str(host, gpu.fill_null(""))


def slow_records(episodes: pl.DataFrame) -> list[dict]:
    """The episodes as the JSON export writes them (the key "slow_episodes"): SCHEMA's columns, typed."""
    return episodes.select(list(SCHEMA)).to_dicts()


HTML_HEADERS = [
    "start (UTC)",
    "end (UTC)",
    "component",
    "cause",
    "slowdown factor",
    "detected after (s)",
    "action",
    "cost (GPU-hours)",
]


def html_rows(episodes: pl.DataFrame, at) -> list[tuple]:
    """The HTML report's rows of the episodes (HTML_HEADERS), worst first; `at(t_s)` writes a run time as a date.
    The caller escapes every cell."""
    shown = episodes.with_columns(component_expr().alias("component"), slow_cause_expr())
    return [
        (
            at(r["start_s"]),
            at(r["end_s"]),
            r["component"],
            r["cause"],
            f"{r['factor']:g}",
            "" if r["detected_s"] is None else f"{r['detected_s'] - r['start_s']:,.0f}",
            ACTION_WORDS.get(r["action"] or "", r["action"] or ""),
            "" if r["cost_gpu_hours"] is None else f"{r['cost_gpu_hours']:,.1f}",
        )
        for r in shown.iter_rows(named=True)
    ]
