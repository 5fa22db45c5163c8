"""Incidents page queries and the Llama 3 way of counting them (pure functions on the incidents frame)."""

import polars as pl

from dashboard import state

# Categories counted as "confirmed or suspected hardware" (Llama 3 paper §3.3.4: ~78% of the 419 unexpected
# interruptions; GPU 268 + Host 21 + Network 35 = 324 of 419 = 77% in reference/llama3_interruptions.csv).
HARDWARE_CATEGORIES = ("GPU", "Host", "Network")


def incidents(run_id: str) -> pl.DataFrame:
    """Every incident with its host and how long it kept its hardware out (a few thousand rows at most)."""
    return state.query(run_id, """
        SELECT i.incident_id, i.t_s, i.cause, i.category, coalesce(i.planned, false) AS planned, i.xid,
               h.hostname, h.rack_id, i.gpu_id, i.link_id, i.jobs_hit, i.gpu_hours_lost, i.job_ids,
               i.detected_s, i.mitigated_s, i.repaired_s, i.host_id
        FROM incidents i LEFT JOIN hosts h USING (host_id) ORDER BY i.t_s, i.incident_id""")


def flagship(run_id: str) -> str | None:
    ids = state.query(run_id, "SELECT job_id FROM jobs WHERE kind = 'flagship' ORDER BY submit_s LIMIT 1")
    return ids["job_id"][0] if ids.height else None


def xid_events(run_id: str, incident_id: int) -> pl.DataFrame:
    return state.query(run_id, "SELECT t_s, gpu_id, host_id, xid, message FROM xid_events WHERE incident_id = ?"
                               " ORDER BY t_s", (incident_id,))


def jobs_named(run_id: str, job_ids: list[str]) -> pl.DataFrame:
    return state.query(run_id, "SELECT job_id, name, kind, gpus FROM jobs WHERE list_contains(?, job_id)"
                               " ORDER BY gpus DESC", (job_ids,))


# ----- counting -------------------------------------------------------------------------------------------

def of_job(frame: pl.DataFrame, job_id: str) -> pl.DataFrame:
    """The incidents that interrupted `job_id` (the Llama 3 paper counts interruptions of its training job)."""
    return frame.filter(pl.col("job_ids").list.contains(job_id))


def by_cause(frame: pl.DataFrame) -> pl.DataFrame:
    """Interruptions by cause with category and share of the unexpected ones, as the paper's Table 5."""
    unexpected = max(frame.filter(~pl.col("planned")).height, 1)
    return (frame.group_by("cause", "category").agg(pl.len().alias("interruptions"),
                                                    pl.col("planned").first().alias("planned"),
                                                    pl.col("gpu_hours_lost").sum().alias("gpu_hours_lost"))
            .with_columns(pl.when(pl.col("planned")).then(None)
                          .otherwise((pl.col("interruptions") / unexpected * 100).round(1)).alias("pct_of_unexpected"))
            .sort(["interruptions", "cause"], descending=[True, False]))


def by_category(frame: pl.DataFrame) -> pl.DataFrame:
    return (frame.group_by("category").agg(pl.len().alias("interruptions"),
                                           pl.col("gpu_hours_lost").sum().alias("gpu_hours_lost"))
            .sort(["interruptions", "category"], descending=[True, False]))


def headline(frame: pl.DataFrame, days: float) -> dict[str, float]:
    """Total, planned, unexpected, the hardware share of the unexpected ones and interruptions a day."""
    unexpected = frame.filter(~pl.col("planned"))
    hardware = unexpected.filter(pl.col("category").is_in(HARDWARE_CATEGORIES)).height
    return {
        "total": frame.height,
        "planned": frame.height - unexpected.height,
        "unexpected": unexpected.height,
        "hardware_share": hardware / unexpected.height if unexpected.height else float("nan"),
        "per_day": frame.height / days if days > 0 else float("nan"),
    }


def per_day(frame: pl.DataFrame, days: float) -> pl.DataFrame:
    """Planned and unexpected interruptions for every day of the run (days without any included, as zeros)."""
    all_days = pl.DataFrame({"day": pl.int_range(0, max(int(-(-days // 1)), 1), eager=True)})
    counts = (frame.with_columns((pl.col("t_s") // 86400).cast(pl.Int64).alias("day"))
              .group_by("day").agg(pl.col("planned").sum().cast(pl.Int64).alias("planned"),
                                   (~pl.col("planned")).sum().cast(pl.Int64).alias("unexpected")))
    return all_days.join(counts, on="day", how="left").fill_null(0).sort("day")
