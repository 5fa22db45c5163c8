"""Vectorised field parsers the trace formats share: durations, numbers, timestamps, Slurm times.

Each returns the parsed Series plus nothing else; the caller compares nulls against the input to find the
first malformed line (`trace.check`), so one bad field names its file and line.
"""

import polars as pl

from engine.scenario.durations import UNIT_SECONDS
from engine.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE

_DURATION = r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|min|m|h|d|w)?\s*$"
_UNITS = pl.DataFrame({"unit": list(UNIT_SECONDS), "scale": list(UNIT_SECONDS.values())})


def durations(text: pl.Series) -> pl.Series:
    """`90`, `90s`, `30m`, `2h`, `1.5d` as seconds; null where the text is not a duration."""
    frame = pl.DataFrame({"t": text}).with_columns(
        number=pl.col("t").str.extract(_DURATION, 1).cast(pl.Float64, strict=False),
        unit=pl.col("t").str.extract(_DURATION, 2).fill_null("s"),
    )
    scale = frame["unit"].replace_strict(
        _UNITS["unit"], _UNITS["scale"], default=None, return_dtype=pl.Float64
    )
    return (frame["number"] * scale).rename(text.name)


def numbers(text: pl.Series) -> pl.Series:
    """Floats; null where the text is not a number (or is nan/inf)."""
    value = text.str.strip_chars().cast(pl.Float64, strict=False)
    return value.set(~value.is_finite().fill_null(False), None)


def integers(text: pl.Series) -> pl.Series:
    """Integers (a trailing `.0` allowed); null where the text is not one."""
    value = numbers(text)
    whole = value.round(0) == value
    return value.set(~whole.fill_null(False), None).cast(pl.Int64, strict=False)


def slurm_elapsed(text: pl.Series) -> pl.Series:
    """Slurm's `[D-]HH:MM:SS` / `MM:SS` / `MM:SS.mmm` as seconds; null where malformed."""
    frame = (
        pl.DataFrame({"t": text.str.strip_chars()})
        .with_columns(
            days=pl.col("t").str.extract(r"^(\d+)-", 1).cast(pl.Float64).fill_null(0.0),
            clock=pl.col("t").str.replace(r"^\d+-", ""),
        )
        .with_columns(parts=pl.col("clock").str.split(":"))
    )
    frame = frame.with_columns(n=pl.col("parts").list.len())
    valid = pl.col("t").str.contains(r"^(\d+-)?(\d+:){1,2}\d+(\.\d+)?$")
    out = frame.select(
        pl.when(valid & (pl.col("n") == 3))
        .then(
            pl.col("days") * SECONDS_PER_DAY
            + pl.col("parts").list.get(0, null_on_oob=True).cast(pl.Float64) * SECONDS_PER_HOUR
            + pl.col("parts").list.get(1, null_on_oob=True).cast(pl.Float64) * SECONDS_PER_MINUTE
            + pl.col("parts").list.get(2, null_on_oob=True).cast(pl.Float64)
        )
        .when(valid & (pl.col("n") == 2))
        .then(
            pl.col("days") * SECONDS_PER_DAY
            + pl.col("parts").list.get(0, null_on_oob=True).cast(pl.Float64) * SECONDS_PER_MINUTE
            + pl.col("parts").list.get(1, null_on_oob=True).cast(pl.Float64)
        )
        .otherwise(None)
        .alias("s")
    )["s"]
    return out.rename(text.name)


def timestamps(text: pl.Series) -> pl.Series:
    """ISO timestamps `2024-03-01T10:00:00` (Slurm's default) as seconds since the Unix epoch; null if not."""
    stamp = text.str.strip_chars().str.to_datetime("%Y-%m-%dT%H:%M:%S", strict=False, time_unit="ms")
    return (stamp.dt.epoch("ms") / 1000.0).rename(text.name)
