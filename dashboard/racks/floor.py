"""The cluster at time t, as every section of the Racks page reads it (dashboard/app_pages/racks.py builds it)."""

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class Floor:
    """The cluster at time t."""

    t_s: float
    hosts: pl.DataFrame  # a row a host: its rack, position and state at t
    cells: pl.DataFrame  # a row a GPU: its host's state, readings, failures in the window, job and its kind
    power: pl.DataFrame  # a row a rack: its power at t against its budget
    problems: pl.DataFrame  # the racks with a host out of service or a failed GPU at t
    measure: str  # what the floor is coloured by
    window: str  # the failures window (queries.WINDOWS)
    tdp_w: float
    budget_kw: float
