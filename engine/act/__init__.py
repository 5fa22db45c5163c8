"""From seeing to acting: recommended drains, resumes and requeues, priced by the twin, carried out through Slurm
behind caps and a circuit breaker, every step in a hash-chained audit log.

    records.py        Recommendation, Evidence, Action, ActionState: the typed records every part shares
    settings.py       ActionSettings: caps, breaker, horizon, where Slurm is ([actions] in <store>/settings.toml)
    recommend.py      recommend(): what the run's data says should be drained, resumed or requeued, and its price
    context.py        Context: the run at the moment looked at (hosts, their state, jobs running), read by each rule
    drain_rules.py    the drain rules: fatal_xid, lemon, slow_host
    resume_rule.py    the resume rule (repaired): a repaired incident clean since, or, observed, clean_window.py
    clean_window.py   an observed host out of service and clean for CLEAN_WINDOW_S (its telemetry read in DuckDB)
    requeue_rule.py   the requeue rule: stuck_job
    pricing.py        the formulas of both costs, in GPU-hours: Restart, resume_price
    words.py          numbers, XIDs and incidents in words
    audit.py          AuditLog: the append-only, hash-chained log (<store>/audit.sqlite) and its verification
    slurm_control.py  the commands (argv, never a shell), names checked against Slurm's own lists, the answer
    guard.py          the caps and the circuit breaker, read from the audit log
    service.py        Actions: recommend, approve, reject, carry out by hand, reset the breaker
    command.py        `goodput act ...`
"""
