"""The twin: runs of the model end to end and what is decided from many of them.

`simulate` turns a scenario into a whole Run (the model's records, the store tables, telemetry, the network and
the summary); `sweep`, `scale` and `standby` run many simulations on common random numbers. It sits above
engine.sim (the model), engine.fabric and engine.telemetry (what the model's hosts and links report) and
engine.analysis (what a run means), and below engine.report and the commands.
"""
