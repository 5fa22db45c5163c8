"""From seeing to acting: recommended drains, resumes and requeues, priced by the twin, carried out through Slurm
behind caps and a circuit breaker, every step in a hash-chained audit log.

    records.py        Recommendation, Evidence, Action, ActionState: the typed records every part shares
    settings.py       ActionSettings: caps, breaker, horizon, where Slurm is ([actions] in <store>/settings.toml)
    recommend.py      the rules: what the run's data says should be drained, resumed or requeued, and its price
    audit.py          AuditLog: the append-only, hash-chained log (<store>/audit.sqlite) and its verification
    slurm_control.py  the commands (argv, never a shell), names checked against Slurm's own lists, the answer
    guard.py          the caps and the circuit breaker, read from the audit log
    service.py        Actions: recommend, approve, reject, carry out by hand, reset the breaker
    command.py        `goodput act ...`
"""
