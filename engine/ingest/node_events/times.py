"""The times of node events as operators' files write them, parsed column by column (no Python loop over rows).

A time is ISO 8601 (`2025-03-01T12:00:00Z`, `2025-03-01 12:00:00.250+02:00`, `2025-03-01T12:00:00`, a date
alone), or Unix seconds (`1740830400`, `1740830400.5`); a Parquet column may also be a timestamp or date type.
Each value becomes microseconds since the epoch (UTC) with what it said of its zone: `zoned` True where it named
one (`Z`, `UTC`, `+02:00`, a zone-aware timestamp), False where it did not (read as UTC), null for Unix seconds
(which need none) and for blanks. A value that is not a time is `bad`; the reader names its file, line and
column (`check`), as it does a time before 2000 or more than a day ahead of this machine's clock.
"""

import time
from datetime import UTC, datetime

import polars as pl

from engine import limits
from engine.errors import GoodputError

# An end that says the outage is still open: Slurm prints `Unknown`, a ticket export an empty cell.
OPEN_WORDS = ("", "unknown", "none", "null", "open")
_ISO = (
    r"^(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?)?)?"
    r"\s*(?P<z>[Zz]|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?$"
)
_NUMBER = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
US = 1_000_000
SCHEMA = {"us": pl.Int64, "zoned": pl.Boolean, "given": pl.Boolean, "ok": pl.Boolean}


def parse_text(values: pl.Series, *, open_words: bool = False) -> pl.DataFrame:
    """`us`, `zoned`, `given` (not blank: an open end when `open_words` and it is one of OPEN_WORDS) and `ok`
    (given and a time) for each value of a text column."""
    text = values.cast(pl.String).str.strip_chars()
    blank = text.is_null() | text.str.to_lowercase().is_in(list(OPEN_WORDS if open_words else ("",)))
    parts = pl.DataFrame({"t": text}).select(pl.col("t").str.extract_groups(_ISO).alias("p")).unnest("p")
    parts = parts.with_columns(pl.col("y", "mo", "d", "h", "mi", "s").cast(pl.Int64)).with_columns(
        pl.col("h", "mi", "s").fill_null(0)
    )
    y, mo, d = pl.col("y"), pl.col("mo"), pl.col("d")
    valid = (
        mo.is_between(1, 12)
        & d.is_between(1, _days_in_month(y, mo))
        & pl.col("h").is_between(0, 23)
        & pl.col("mi").is_between(0, 59)
        & pl.col("s").is_between(0, 59)
    )
    fraction = pl.col("f").fill_null("").str.pad_end(6, "0").str.slice(0, 6).cast(pl.Int64)
    local = (
        _days_from_civil(y, mo, d) * 86_400 + pl.col("h") * 3_600 + pl.col("mi") * 60 + pl.col("s")
    ) * US + fraction
    iso = parts.select(
        us=pl.when(valid).then(local - _offset_s(pl.col("z")) * US),
        zoned=pl.when(valid).then(pl.col("z").is_not_null()),
    )
    number = text.str.contains(_NUMBER).fill_null(False)
    n_us = _seconds_to_us(text.cast(pl.Float64, strict=False))
    frame = pl.DataFrame({"blank": blank, "number": number, "n_us": n_us})
    frame = pl.concat([frame, iso], how="horizontal")
    blank, number = pl.col("blank"), pl.col("number")
    us = pl.when(blank).then(None).when(number).then(pl.col("n_us")).otherwise(pl.col("us"))
    return frame.select(
        us=us,
        zoned=pl.when(blank | number).then(None).otherwise(pl.col("zoned")),
        given=~blank,
    ).with_columns(ok=pl.col("given") & pl.col("us").is_not_null())


def parse_typed(values: pl.Series, *, open_words: bool = False) -> pl.DataFrame:
    """parse_text for a column of any type: a timestamp (zone-aware or not), a date, Unix seconds as a number,
    or text."""
    dtype = values.dtype
    if dtype == pl.String or dtype == pl.Categorical or dtype == pl.Null:
        return parse_text(values.cast(pl.String), open_words=open_words)
    if isinstance(dtype, pl.Datetime):
        zoned: bool | None = dtype.time_zone is not None
        us = (values.dt.convert_time_zone("UTC") if zoned else values).dt.epoch("us")
    elif dtype == pl.Date:
        zoned, us = False, values.dt.epoch("s") * US
    elif dtype.is_numeric():
        seconds = values.cast(pl.Float64)
        zoned, us = None, _seconds_to_us(seconds)
    else:
        raise GoodputError(f"a column of {dtype} is not a time (a timestamp, a date, Unix seconds or text)")
    return pl.DataFrame({"us": us.cast(pl.Int64), "given": values.is_not_null()}).select(
        "us",
        zoned=pl.when(pl.col("given")).then(pl.lit(zoned, pl.Boolean)),
        given="given",
        ok=pl.col("given") & pl.col("us").is_not_null(),
    )


def _seconds_to_us(seconds: pl.Series) -> pl.Series:
    """Unix seconds to whole microseconds; null where no clock gives them (|t| of 1e12 s is 30,000 years)."""
    return pl.select(
        pl.when(seconds.abs() < 1e12).then((seconds * US).round()).cast(pl.Int64, strict=False)
    ).to_series()


def _days_from_civil(y: pl.Expr, m: pl.Expr, d: pl.Expr) -> pl.Expr:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm), as an expression."""
    y = y - (m <= 2).cast(pl.Int64)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + pl.when(m > 2).then(-3).otherwise(9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def _days_in_month(y: pl.Expr, m: pl.Expr) -> pl.Expr:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    return (
        pl.when(m == 2)
        .then(pl.when(leap).then(29).otherwise(28))
        .when(m.is_in([4, 6, 9, 11]))
        .then(30)
        .otherwise(31)
    )


def _offset_s(zone: pl.Expr) -> pl.Expr:
    """Seconds east of UTC a zone says: 0 for Z, UTC, GMT; `+02:00`, `+0200`, `-05`."""
    digits = zone.str.replace_all(r"[^0-9]", "")
    hours = digits.str.slice(0, 2).cast(pl.Int64, strict=False).fill_null(0)
    minutes = digits.str.slice(2, 2).cast(pl.Int64, strict=False).fill_null(0)
    sign = pl.when(zone.str.starts_with("-")).then(-1).otherwise(1)
    return pl.when(zone.str.contains(r"^[+-]")).then(sign * (hours * 3_600 + minutes * 60)).otherwise(0)


# ----- checks -----------------------------------------------------------------------------------------------------


def window_us(now: float | None = None) -> tuple[int, int]:
    """The times an event may carry: from 2000-01-01 to a day ahead of this machine's clock (engine/limits.py)."""
    now = time.time() if now is None else now
    return limits.EARLIEST_TIMESTAMP_S * US, round((now + limits.MAX_CLOCK_AHEAD_S) * US)


def describe_us(us: int) -> str:
    """`2025-03-01T12:00:00Z`, the moment a time column holds."""
    try:
        return datetime.fromtimestamp(us / US, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return f"{us / US:.0f} s since 1970"
