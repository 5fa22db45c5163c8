"""Goodput's engine: scenarios, simulation, replay, ingestion, analytics and the run store.

The engine never imports the dashboard or Streamlit.

The words, each for one thing, in code, docstrings, pages and exports alike (JSON keys and scenario keys are
contracts and keep their spelling, e.g. `utilization`, `training.placement`):

- run: what simulate, replay or ingest produce (engine.store.run.Run): one file in the store, the same tables for
  every source (engine.store.schema.TABLES). Times inside it are seconds since its start (engine.units).
- flagship job: the large training job the scenario's `training.*` describes, the one ETTR is measured for
  (kind = 'flagship'); in a stored run, engine.analysis.incidents.FLAGSHIP_JOB_SQL / flagship_job_id() find it.
  Research jobs fill the rest of the cluster.
- incident: a failure anywhere in the cluster (a GPU, a host, a link, a switch; planned maintenance too): one
  row of `incidents`, whoever it hit.
- interruption: an incident that stopped the flagship job; "interruptions" always counts the flagship job's,
  as the Llama 3 paper does. The cluster's are counted as incidents.
- attempt: one contiguous run of a job on one allocation, from a start to its end (a failure, a preemption,
  the job's completion or the run's end): one row of `job_attempts`.
- lost work: training done since the last checkpoint and thrown away by an interruption; restart overhead:
  the time from an interruption's detection until the job trains again (engine/analysis/definitions/goodput.py).
- ETTR / goodput: the share of a job's wall-clock time that became training progress (engine.analysis.ledger).
- out of service: a host draining, down, diagnosing, in repair or in burn-in (engine.store.schema.
  OUT_OF_SERVICE_STATES); in service: healthy, running or a spare (IN_SERVICE_STATES).
- spare: a healthy host held back for the flagship job, swapped in for a failed one.
- placement: the rule that chooses a job's hosts, pack (fill hosts, racks, then pods) or spread (dealt over
  pods and racks); scenario keys `training.placement` (the flagship job) and `scheduler.placement` (replay),
  `goodput replay --policy`.
- allocation: the hosts and GPUs one attempt of a job holds (engine.scheduling.capacity.allocate, one
  HostShare a host); its hosts are the attempt's `hosts`. engine.fabric.topology.allocation_order is
  the order the flagship job and its spares take hosts.
- placement slowdown: how many times as long the flagship job's steps take on the hosts its placement gave
  it, its ring alone on a healthy fabric (engine.fabric.traffic.placement_slowdown); its cost in time is the
  ledger's network_slowdown.
- occupancy: which job each host runs at each sample time (engine.fabric.traffic.occupancy).
- position: where a host stands on the floor (pod, row, rack, slot in the rack).
- utilisation: allocated, the share of the cluster's GPU-hours allocated to a running job; progress, the
  share that became kept training progress (engine/analysis/definitions/cluster.py).
"""

__version__ = "0.1.0"
