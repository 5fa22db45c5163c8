"""Figures of the Jobs page: every job of the run (flagship, research, replayed), their attempts, the queue,
why jobs waited, and how the cluster's GPUs were held over a window.

Figures "(window)" are computed over the time window the page's slider picks (the whole run by default);
the others over the whole run, whatever the window and filters.
"""

from engine.analysis.definitions import Definition, section

SECTION = "Jobs and scheduling"


_d = section(SECTION, default_scope="view")  # most figures here depend on the moment, window or part shown


DEFINITIONS: tuple[Definition, ...] = (
    _d(
        "jobs",
        "Jobs",
        "count",
        "Every job of the run (the jobs table): the flagship job, research jobs, or every job of a replayed "
        "trace, whatever the page's window and filters.",
        "jobs table (dashboard.queries.jobs.jobs)",
        "jobs_in_window",
        scope="run",
    ),
    _d(
        "jobs_never_started",
        "Jobs never started",
        "count",
        "Jobs submitted but not started by the end of the run (still in the queue), whatever the window.",
        "jobs.start_s IS NULL",
        "jobs_queued_mean",
        scope="run",
    ),
    _d(
        "failed_attempts",
        "Failed attempts",
        "count",
        "Attempts of every job, in the whole run, that ended by a failure cause: not completed, preempted, "
        "stopped for planned maintenance or still running at the end (engine.report.palette.CLEAN_END_REASONS). "
        "Fewer than the flagship job's unexpected interruptions: an interruption that hits the job while it "
        "restarts ends no attempt, and planned stops are not failures.",
        "job_attempts.end_reason (dashboard.queries.jobs.jobs)",
        "interruptions",
        "flagship_attempts",
        scope="run",
    ),
    _d(
        "jobs_in_window",
        "Jobs in the window",
        "count",
        "Jobs in the system during the window (submitted before it ends, not ended before it starts) that match "
        "the page's filters: the rows of the jobs table and of its downloads.",
        "dashboard.queries.jobs.jobs(JobFilter)",
        "jobs",
    ),
    _d(
        "jobs_waited",
        "Jobs that waited",
        "count",
        "Jobs in the window (the table's rows) that waited in the queue: they started after their submission, "
        "never started, or carry a wait reason (a requeue after a first start). Each counts once, under the "
        "reason it waited longest for (the table's 'Why it waited'); 'Reason not recorded' where the run has "
        "none (a trace replayed as recorded).",
        "dashboard.queries.jobs.why_waited",
        "jobs_in_window",
        "jobs_started_in_window",
    ),
    _d(
        "jobs_started_in_window",
        "Jobs started (window)",
        "count",
        "Jobs whose first attempt started inside the window.",
        "dashboard.queries.jobs.wait_times",
        "jobs_in_window",
    ),
    _d(
        "wait_p50",
        "Wait before start, median (window)",
        "seconds",
        "Median time from submission to first start of the jobs started in the window.",
        "dashboard.queries.jobs.wait_times",
        "wait_p95",
        "job_wait",
    ),
    _d(
        "wait_p95",
        "Wait before start, 95th percentile (window)",
        "seconds",
        "95th percentile (linear interpolation) of the time from submission to first start of the jobs started "
        "in the window.",
        "dashboard.queries.jobs.wait_times",
        "wait_p50",
    ),
    _d(
        "jobs_queued_mean",
        "Jobs queued (window mean)",
        "count",
        "Jobs waiting in the queue, averaged over the window by time: from submission to first start (to the "
        "end of the run for a job never started) plus recorded requeues after a first start. The gap between "
        "two attempts of a simulated job (restart, waiting for spares) is not a queue.",
        "dashboard.queries.jobs.queue",
        "jobs_never_started",
    ),
    _d(
        "gpus_allocated_mean",
        "Mean GPUs allocated (window)",
        "ratio",
        "GPUs held by running attempts (job_attempts x the job's GPUs, fractional GPUs as their share) over all "
        "GPUs of the cluster, averaged over the window by time. A job holds no GPU between two attempts, so this "
        "is below the Overview's 'Utilisation (allocated)', which counts hosts allocated to a job, restarts "
        "included, over the whole run.",
        "dashboard.queries.jobs.utilisation",
        "utilisation_by_allocation",
    ),
    _d(
        "gpus_out_of_service_mean",
        "Mean GPUs out of service (window)",
        "ratio",
        "GPUs of hosts draining, down, diagnosing, in repair or burn-in (engine.store.schema.OUT_OF_SERVICE_STATES) "
        "over all GPUs, averaged over the window by time. Over the whole run it is 'GPU-hours out of service' "
        "over 'Cluster GPU-hours'.",
        "dashboard.queries.jobs.utilisation",
        "gpu_hours_down",
    ),
    _d(
        "fragmentation_mean",
        "Fragmentation of free GPUs (window mean)",
        "ratio",
        "Free GPUs on partly used hosts over all free GPUs (a gang of whole hosts cannot use them), sampled at "
        "the middle of each of the window's buckets and averaged over the buckets that had a free GPU.",
        "dashboard.queries.jobs.fragmentation",
    ),
    # ----- one job (the drill-down and the table's columns) ----------------------------------------------
    _d(
        "job_gpus",
        "GPUs of the job",
        "count",
        "GPUs the job asks for and holds while an attempt runs (fractional for a shared GPU).",
        "jobs.gpus",
    ),
    _d(
        "job_wait",
        "Wait before start",
        "seconds",
        "Time from the job's submission to its first start; empty for a job that never started.",
        "jobs.start_s - jobs.submit_s",
        "wait_p50",
    ),
    _d(
        "job_wait_reason",
        "Why it waited",
        "reason",
        "The reason the job waited longest for (engine.scheduling.wait_reasons.dominant_reason): no free capacity, "
        "fragmentation, higher-priority jobs first, or hosts failed or in repair.",
        "jobs.wait_reason",
        "jobs_waited",
    ),
    _d(
        "job_attempts",
        "Attempts of the job",
        "count",
        "Contiguous runs of the job: its first start and every restart. For the flagship job this is 'Attempts "
        "of the flagship job'.",
        "job_attempts",
        "flagship_attempts",
    ),
    _d(
        "job_failed_attempts",
        "Failed attempts of the job",
        "count",
        "The job's attempts that ended by a failure cause (as 'Failed attempts', for one job).",
        "job_attempts.end_reason",
        "failed_attempts",
    ),
    _d(
        "job_checkpoints",
        "Checkpoints of the job",
        "count",
        "Checkpoints the job completed (the checkpoints table). For the flagship job this is 'Checkpoints "
        "written'.",
        "checkpoints",
        "checkpoints_written",
    ),
    _d(
        "job_lost_work",
        "Lost work of the job",
        "GPU-hours",
        "Work the job's failed attempts threw away (job_attempts.lost_work_s x the job's GPUs): training since "
        "the last checkpoint; the whole attempt for a job that does not checkpoint. For the flagship job it "
        "equals 'Lost work'; restarts and checkpoint writes are not in it.",
        "job_attempts.lost_work_s",
        "lost_work",
        "incident_gpu_hours_lost",
    ),
)
