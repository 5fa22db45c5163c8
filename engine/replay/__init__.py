"""Replay of real job traces (goodput CSV, Slurm sacct, SWF 2.2, Alibaba openb) into a Run.

`parse_trace` reads a file into a Trace (a Polars frame of jobs plus the cluster it implies);
`engine.replay.run.replay` turns a Trace into a Run, as recorded or re-scheduled by `engine.scheduling.scheduler`.
"""

from engine.replay.formats import FORMATS, Trace, TraceError, detect_format, parse_trace

__all__ = ["FORMATS", "Trace", "TraceError", "detect_format", "parse_trace"]
