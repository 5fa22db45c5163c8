"""The Polars formatters (dashboard.text_exprs) write exactly what the Python ones (dashboard.format) write.

Pages format whole columns with the expressions and single values with the Python functions; a row in a table
and the same value in a caption must read alike, so every value Hypothesis finds is checked both ways.
"""

import unicodedata
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dashboard.charts.network import TIER_ORDER, tier_sort_key
from dashboard.format import DASH, FARTHEST_TIME_S, FOREVER_S, fmt_duration, fmt_time
from dashboard.text_exprs import category_text, cause_label_text, duration_text, tier_rank, time_text
from engine.reference import CAUSES, PLANNED_CAUSE
from engine.report.palette import category_of, cause_label

SETTINGS = settings(max_examples=300, deadline=None)

# Any float a column may hold: NaN and infinities included, and values on the formatters' own edges.
seconds = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-200_000.0, max_value=200_000.0),
    st.integers(min_value=-(10**6), max_value=10**8).map(lambda n: n / 2),  # halves: ties of the rounding
    st.sampled_from(
        [
            59.5,
            60.0,
            3599.5,
            3600.0,
            86399.5,
            86400.0,
            FOREVER_S,
            -FOREVER_S,
            FARTHEST_TIME_S,
            -FARTHEST_TIME_S,
            59.9999995,
            -60.0000005,
        ]
    ),
)
values = st.lists(st.one_of(st.none(), seconds), max_size=30)
starts = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1)).map(
    lambda d: d.replace(tzinfo=UTC)
)


def column(vals: list, expr: pl.Expr) -> list:
    return pl.DataFrame({"x": vals}, schema={"x": pl.Float64}).select(expr)["x"].to_list()


@SETTINGS
@given(vals=values)
@example(vals=[0.4, -0.4, 0.5, 1.5, 2.5, -0.5, 59.4, 59.5, 60.5, 3660.0, 7200.0, 200_000.0, 90_000.0])
def test_duration_text_is_fmt_duration(vals: list) -> None:
    expected = [None if v is None else fmt_duration(v) for v in vals]
    assert column(vals, duration_text("x")) == expected


def test_duration_text_exact_cases() -> None:
    vals = [None, float("nan"), 42.0, 3720.0, 7200.0, 200_000.0, 172_800.0, -5.5, float("inf"), -float("inf")]
    assert column(vals, duration_text("x")) == [
        None,
        DASH,
        "42 s",
        "1 h 2 min",
        "2 h",
        "2 d 7 h",
        "2 d",
        "-6 s",
        "∞",
        "-∞",
    ]


@SETTINGS
@given(vals=values, started_at=starts)
@example(
    vals=[59.9999995, 59.9999994, -60.0000005, -59.9999995, 0.0000005, -0.0000005],
    started_at=datetime(2024, 3, 1, tzinfo=UTC),
)
def test_time_text_is_fmt_time(vals: list, started_at: datetime) -> None:
    expected = [None if v is None else fmt_time(started_at, v) for v in vals]
    assert column(vals, time_text("x", started_at)) == expected


def test_time_text_with_the_stores_zone_and_int_columns() -> None:
    """The store hands back started_at in DuckDB's zone object; columns may be integers."""
    from zoneinfo import ZoneInfo

    started_at = datetime(2024, 3, 1, 23, 59, 30, tzinfo=ZoneInfo("Etc/UTC"))
    frame = pl.DataFrame({"t": [0, 29, 30, 86_400, None]})
    assert frame.select(time_text("t", started_at))["t"].to_list() == [
        "2024-03-01 23:59 UTC",
        "2024-03-01 23:59 UTC",
        "2024-03-02 00:00 UTC",
        "2024-03-02 23:59 UTC",
        None,
    ]
    assert fmt_time(started_at, 30) == "2024-03-02 00:00 UTC"
    assert fmt_time(started_at, float("inf")) == DASH and fmt_time(started_at, 10 * FARTHEST_TIME_S) == DASH
    assert fmt_time(started_at, FARTHEST_TIME_S) == (
        started_at + timedelta(seconds=FARTHEST_TIME_S)
    ).strftime("%Y-%m-%d %H:%M UTC")


# Cause keys as the reference table has them, made-up snake_case ones, and any text a trace might carry
# (characters this Python's Unicode tables know, so Python and Polars' Rust agree on their case).
def _assigned(c: str) -> bool:
    return unicodedata.category(c) not in ("Cn", "Cs")


causes = st.one_of(
    st.sampled_from([c.cause for c in CAUSES] + [PLANNED_CAUSE.cause]),
    st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True),
    st.text(alphabet=st.characters(codec="utf-8").filter(_assigned), max_size=12),
)


@SETTINGS
@given(vals=st.lists(st.one_of(st.none(), causes), max_size=20))
@example(vals=["cosmic_ray", "ΑΣ", "ßa", "ǆx", "", "_x_", "GPU_hbm"])
def test_cause_label_and_category_text_are_the_python_ones(vals: list) -> None:
    frame = pl.DataFrame({"cause": vals}, schema={"cause": pl.String})
    out = frame.select(cause_label_text("cause").alias("label"), category_text("cause").alias("category"))
    assert out["label"].to_list() == [None if v is None else cause_label(v) for v in vals]
    assert out["category"].to_list() == [None if v is None else category_of(v) for v in vals]


def test_cause_label_text_exact() -> None:
    frame = pl.DataFrame({"cause": ["faulty_gpu", "planned_maintenance", "cosmic_ray", None]})
    assert frame.select(cause_label_text("cause"))["cause"].to_list() == [
        "Faulty GPU",
        "Planned maintenance",
        "Cosmic ray",
        None,
    ]
    assert frame.select(category_text("cause"))["cause"].to_list() == ["GPU", "Planned", "Unknown", None]


@SETTINGS
@given(tiers=st.lists(st.one_of(st.sampled_from(TIER_ORDER), st.text(max_size=8)), max_size=15))
def test_sorting_by_tier_rank_is_sorting_by_tier_sort_key(tiers: list) -> None:
    frame = pl.DataFrame({"tier": tiers}, schema={"tier": pl.String})
    assert frame.sort(tier_rank("tier"), "tier")["tier"].to_list() == sorted(tiers, key=tier_sort_key)


@pytest.mark.parametrize("tier", [*TIER_ORDER, "other"])
def test_tier_rank_exact(tier: str) -> None:
    assert pl.select(tier_rank(pl.lit(tier))).item() == tier_sort_key(tier)[0]
