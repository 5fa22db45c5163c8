"""Every size Goodput takes from its input is bounded here, before anything is allocated for it.

A 56-byte trace that asks for 100,000,000 GPUs, a 393 KB zstd file that inflates to gigabytes, a line of a
gigabyte, an incidents file nested 200,000 levels deep: each is refused with a `GoodputError` (the CLI's
`goodput: error: ...` and exit 2, the dashboard's one red line) that names the file, line or key, the value
read and the limit, and nothing is written. The limits sit far above any real cluster or file (the largest
planned cluster in ../shared/reference is a few hundred thousand GPUs) and far below what would exhaust a
24 GiB machine; raise one here, in one place, when a real input needs it.
"""

from engine.errors import GoodputError
from engine.units import SECONDS_PER_DAY

# ----- cluster shape (scenarios, traces, incidents files, telemetry) -------------------------------------------

# The largest cluster Goodput simulates or builds from a trace: 2^19 GPUs, above the 100k-256k clusters that
# planners compare today and a fleet history of 50,000 nodes of 8 GPUs (issue 46's, 400,000 GPUs; 2^18 was the
# limit before it). The simulations' memory is bounded by MAX_GPU_DAYS below, not by this.
MAX_CLUSTER_GPUS = 524_288
# GPUs on one host (an NVL72 rack counts as one host of 72 at most; telemetry `gpu` labels above this are bad).
MAX_GPUS_PER_HOST = 72
# Hosts in one run, whatever the source (a kernel log or DCGM scrape names hosts by themselves): 2^18, what the
# Slurm and telemetry readers' output bounds below are sized for.
MAX_HOSTS = 262_144
# The longest run, simulated or observed (ten years): a timestamp that implies more is bad input.
MAX_RUN_DAYS = 3_650

# ----- simulations (engine/scenario/bounds.py checks a scenario against these before anything is built) ---------

# GPU-days of one simulation (cluster.gpus x simulation.days): hosts, failures, repairs, the flagship job's
# attempts (each lists its hosts) and host states grow with it. Peak RSS of `goodput simulate` measured here,
# telemetry every 6 h: 131,072 GPUs x 54 d (7.1M GPU-days) 1.36 GB, x 108 d 1.86 GB; 262,144 GPUs x 54 d 2.02 GB,
# x 108 d (28.3M) 3.57 GB, most of it research jobs (bounded below); with no research jobs and no telemetry,
# 262,144 GPUs x 200 d (52M) 2.2 GB, 0.9 GB of it the flagship's attempts (bounded below). With every limit
# below reached at once, a run stays near 1.3 (GPU-days) + 2 (attempts) + 3.7 (research) + 1.2 (telemetry)
# = 8.2 GB at worst, the ~8 GB Goodput aims for; every preset is under 16 % of every limit. llama3-405b fits
# 2,000 days.
MAX_GPU_DAYS = 50_000_000
# The flagship job's attempts x its hosts: every attempt keeps the list of its hosts (4 bytes each, twice while
# the tables are built). Estimated as job hosts x (its expected failures + planned stops); 262,144 GPUs x 200 d
# above made 9,461 attempts of 12,288 hosts (116M, 0.9 GB). future-131k has 32M; a 262,144-GPU job for 54 days
# 221M.
MAX_JOB_ATTEMPT_HOSTS = 250_000_000
# GPU telemetry samples of one run (cluster.gpus x the samples of simulation.telemetry_resolution over the run;
# link samples add at most as many again). Measured on llama3-405b (1.3M GPU-days): 32M samples (1 h) 1.05 GB
# and 14 s, 127M (15 min) 1.6 GB and 43 s, 382M (5 min) 3.2 GB, 2.2 GB on disk and ~10 min on a busy machine:
# ~6 bytes of peak memory a sample.
MAX_GPU_SAMPLES = 200_000_000
# Failures, planned stops and fabric faults one simulation draws (expected counts, summed): drawn as arrays, then
# SimPy events and rows of incidents and host_states. llama3-405b draws ~700; at 1,000 failures per 1,000
# host-days (166k) it peaked at 0.23 GB and 4 s (hosts in repair drop most), so the limit is far from a bomb.
MAX_SIM_EVENTS = 500_000
# Checkpoints of the flagship job over the run (simulation.days / training.checkpoint_interval): a row each.
MAX_CHECKPOINTS = 5_000_000
# Research job-host intervals (research hosts x the jobs each runs over the run, estimated): llama3-405b has
# ~110k, 262,144 GPUs x 108 days ~4.5M. Each is a row of host_states and Python objects while simulating: the
# demo preset with research.median_duration=10s (374k) peaked at 0.53 GB, =2s (1.9M) at 1.64 GB and 65 s, so
# ~0.74 KB each (half that with llama3-405b's lanes of up to 64 hosts) and the limit at most 3.7 GB.
MAX_RESEARCH_HOST_JOBS = 5_000_000
# Seeds: the store keeps them as BIGINT, and a sweep adds up to MAX_SWEEP_RUNS to the first.
MAX_SEED = 2**62
# Runs of one sweep or Monte-Carlo (grid points x seeds), checked before the grid is built.
MAX_SWEEP_RUNS = 10_000

# ----- traces ---------------------------------------------------------------------------------------------------

# Jobs in one replayed trace (Alibaba's full openb trace holds ~8,000; Philly ~100,000).
MAX_TRACE_JOBS = 2_000_000
# Lines of one trace file, blank, comment and job-step lines included (sacct writes ~3 step lines a job). Counted
# before the file is split, so a gigabyte of newlines never becomes a billion Python strings.
MAX_TRACE_LINES = 4 * MAX_TRACE_JOBS
# Job-host pairs a trace's node lists name (a job on 1,000 hosts counts 1,000): each becomes a string in the
# jobs' node-list column and a row when the cluster is read from them (~50 bytes each).
MAX_TRACE_HOST_SLOTS = 20_000_000
# Characters of a job's, user's or partition's name read from Slurm (sacct text, replayed or watched): longer
# names are cut to this with a trailing `…` (slurmdbd's own job_name column is a TEXT; no real name is near it).
MAX_NAME_CHARS = 256
# Incidents in one incidents file (CSV rows or JSON records); a simulation at the limits below has fewer.
MAX_INCIDENTS = 1_000_000

# ----- step timelines (goodput ingest step-times, goodput stragglers) -------------------------------------------

# Operations of one op-level timeline, counted before any is parsed (a Parquet file's rows from its metadata, a
# CSV's lines). ByteDance's public traces hold 7k-120k; 4,000 workers x 1,000 steps of a forward and a backward
# each are 8M. Peak RSS of `goodput ingest step-times` at 8M (bench/bench_memory.py): 2.0-2.4 GB from Parquet,
# 2.1-2.8 GB from CSV, the worst a forward, a backward and eight kinds of op around them a worker and step, named
# in 64 bytes; so any ingest stays near DCGM's 2.8 GB. It was 40M, ~10 GB from a 5 MB Parquet file (1.1 GB was
# measured at 4M rows, 0.5 MB).
# (`goodput stragglers` analyses what was ingested: it took 5.9 GB for 32.8M rows, ~180 bytes a row.)
MAX_STEP_OPS = 8_000_000
# Pipeline stages of one job (Llama 3 405B trained with 16; the deepest published pipelines have ~128).
MAX_PIPELINE_STAGES = 1_024
# Distinct steps of one timeline.
MAX_TIMELINE_STEPS = 1_000_000
# Cells of the dense arrays the straggler simulation builds (steps x dp ranks x stages x microbatches, 8 bytes
# each, a few arrays at once): 16,384 workers x 1,000 steps x 1 microbatch is 16M.
MAX_STEP_TIMELINE_CELLS = 200_000_000
# Kinds of op a worker runs before its first or after its last compute (all-gather, reduce-scatter, optimizer,
# ...: ByteDance's traces have 6).
MAX_PHASE_SLOTS = 64
# Cells of a head or tail array (steps x workers x kinds of op before, or after, compute) for each op read. Each kind
# is a column of every worker, NaN where a worker has none, so 64 kinds in one worker and one forward in each of the
# others made 64 cells (0.5 KB) a row read: 3.1M rows filled MAX_STEP_TIMELINE_CELLS twice, 3.2 GB. A real timeline
# has most kinds in most workers, fewer cells than rows (ByteDance's ST: 0.04 and 0.23 a row); 4 keeps the two
# arrays within 64 bytes a row.
MAX_PHASE_CELLS_PER_OP = 4
# Bytes of one text value of a timeline (an optype, or a number written as text). Megatron-LM's timer names reach
# 35 bytes (optimizer-copy-main-to-model-params), ByteDance's 26. It bounds what a Parquet dictionary may expand
# to: 4,000,000 rows sharing one 2 KB optype are 2.2 MB on disk and were 9 GiB read; now at most 64 bytes a row.
MAX_STEP_NAME_BYTES = 64

# ----- files ----------------------------------------------------------------------------------------------------

# The bytes of one input after decompression: a compressed file may not inflate past this.
MAX_INPUT_BYTES = 1024 * 1024 * 1024
# One line of any text input (a DCGM sample line with all of dcgm-exporter's labels is under 1 KB).
MAX_LINE_BYTES = 1024 * 1024
# Nesting depth of a JSON input (an incidents export is 4 deep).
MAX_JSON_DEPTH = 32
# What sinfo --json or scontrol may print (Slurm's JSON is ~2 KB a node: 0.5 GB for MAX_HOSTS nodes). Only the
# keys Goodput reads are kept as it is parsed (engine/ingest/slurm.py), nested at most MAX_JSON_DEPTH deep.
MAX_SLURM_JSON_BYTES = 512 * 1024 * 1024
# A scenario TOML file (every key of every section is a few KB).
MAX_SCENARIO_BYTES = 1024 * 1024

# ----- telemetry (engine/ingest) --------------------------------------------------------------------------------

# The earliest wall-clock time a sample or log line may carry (2000-01-01 UTC): no H100/A100 telemetry is older,
# and a stamp of 0 or a negative one is a broken clock, not history.
EARLIEST_TIMESTAMP_S = 946_684_800
# How far ahead of the reading machine's clock a stamp may be (clock skew between hosts); 1e17 ms is not skew.
MAX_CLOCK_AHEAD_S = int(SECONDS_PER_DAY)  # a day; an int, as the error shows it (`86,400 s`)
# Metric values one DCGM ingest keeps (every DCGM_FI_* value of a GPU read, all files together), counted as the
# text is read block by block, so a file past it is refused before the rest is read. dcgm-exporter's lines
# (all its labels, ~240 bytes) put 4.5M samples in 1,000 MiB of text: peak RSS 0.95 GB for the whole ingest.
# The worst case is short lines of one metric a GPU (`DCGM_FI_DEV_GPU_TEMP{gpu="0"} 5 <ms>`, 46 bytes), whose
# samples each become a gpu_samples row: ~185 bytes of peak memory a sample (5M 1.5 GB, 23M 4.8 GB), so this
# limit keeps any ingest near 2.8 GB (bench/bench_memory.py).
MAX_INGEST_SAMPLES = 12_000_000
# One live scrape's answer as sent (compressed or not); a DCGM page of a 72-GPU host is a few hundred KB.
MAX_SCRAPE_BYTES = 256 * 1024 * 1024

# ----- node events (goodput ingest node-events: Slurm's node events, fault tickets) -------------------------------

# Events of one ingest, all files together, hostlists expanded (`n[01-64]` is 64), counted as each file is read and
# before its times are parsed. A year of a 24,576-GPU cluster's Slurm events is a few thousand, three years of
# tickets of a 50,000-node fleet ~100,000 (bench/bench_node_events.py: ~1.7 s with its store write, 0.4 GB). Peak
# RSS of the ingest measured on that bench's tickets (~110 bytes a row of CSV): 1M events 0.9 GB, 5M 3.1 GB
# (~0.6 KB an event while its times are parsed and its outages merged): the limit keeps it near DCGM's 2.8 GB.
MAX_NODE_EVENTS = 5_000_000
# Characters of an event's reason (cause) or description kept and matched by the cause map; longer ones are cut,
# ending in `…`. A ticket's opening words name its cause; a whole ticket body would only slow every pattern.
MAX_EVENT_TEXT_CHARS = 1_024
# Nodes of a node-events run (seen, or asked with --nodes) and its GPUs (nodes x --gpus-per-node): any run's host
# limit, and the cluster limit a calibrated scenario of the fleet must then fit (a fleet's history may span several
# clusters: 50,000 nodes of 8 GPUs is 400,000). No telemetry: a GPU is one gpus row, a node a hosts row and its
# host_states.
MAX_EVENT_NODES = MAX_HOSTS
MAX_EVENT_GPUS = MAX_CLUSTER_GPUS
# Rules of one cause map (--causes) and characters of one rule's pattern: each rule is matched against every
# distinct text of an ingest (linear time, engine/ingest/node_events/causes.py), so their product is the cost.
MAX_CAUSE_RULES = 1_000
MAX_CAUSE_PATTERN_CHARS = 4_096


def check_at_most(value: float, limit: float, what: str) -> None:
    """A GoodputError naming `what` (a key, or a file and line) when `value` is above `limit`."""
    if value > limit:
        raise GoodputError(f"{what}: {value:,} is over Goodput's limit of {limit:,} (engine/limits.py)")
