"""The statistics of the twin come from scipy (issue 46): the values the hand-written code gave before the change,
and independent facts the library's must meet.

The *_BEFORE tables were computed with the hand-written code (bisection on a Numerical Recipes incomplete gamma,
engine/analysis/analytics.py before issue 46) on the same inputs. The bisection stopped once its bracket was within
a relative 1e-10, so those quantiles were within about 5e-11 of the true ones (3.1e-11 at most against scipy
here); the incomplete gamma itself was good to about 1e-12. They are compared at a relative 1e-9: ten times the
old code's own error, far below any figure the twin shows (3 significant digits).
"""

import math
from statistics import NormalDist

import numpy as np
import pytest

from engine.analysis.analytics import _upper_regularized_gamma, chi_square_pvalue, gamma_quantile
from engine.twin import fit_hosts, repair_law, uncertainty
from engine.twin.estimate import LEVEL, exponential_mean_interval, median_estimate, poisson_interval

BEFORE = 1e-9  # relative: against the hand-written code's values (module docstring)

GAMMA_QUANTILE_BEFORE = [
    (0.5, 0.05, 0.0019660700000372344),
    (0.5, 0.5, 0.22746821156033548),
    (0.5, 0.95, 1.9207294103107415),
    (1, 0.05, 0.05129329438750574),
    (1, 0.5, 0.6931471805728506),
    (1, 0.95, 2.9957322735572234),
    (2.5, 0.05, 0.5727381130236608),
    (2.5, 0.5, 2.1757300955505343),
    (2.5, 0.95, 5.535248846717877),
    (10, 0.05, 5.425405697169481),
    (10, 0.5, 9.668714614526834),
    (10, 0.95, 15.705216421629302),
    (240, 0.05, 215.09908530162647),
    (240, 0.5, 239.66674910159782),
    (240, 0.95, 266.0376870702021),
    (10000, 0.05, 9836.085110728163),
    (10000, 0.5, 9999.666668882128),
    (10000, 0.95, 10165.051911899354),
]
POISSON_INTERVAL_BEFORE = [
    (0, 0.0, 2.9957322735572234),
    (1, 0.05129329438750574, 4.743864518357441),
    (2, 0.35536151069391053, 6.295793621975463),
    (5, 1.9701495680055814, 10.51303490891587),
    (20, 13.254651597817428, 29.062018839467783),
    (240, 215.09908530162647, 267.0907461271563),
]
EXPONENTIAL_MEAN_INTERVAL_BEFORE = [
    (3600.0, 1.0, 1201.709522501906, 70184.61268646657),
    (86400.0, 5.0, 9438.99277931353, 43854.53845895787),
    (1000000.0, 12.5, 53117.34526947863, 136879.35135139388),
    (7200000.0, 240.0, 27063.834749473153, 33472.94568874467),
]
CHI_SQUARE_PVALUE_BEFORE = [
    ([10, 10, 10], [10, 10, 10], 1.0),
    ([12, 8, 10], [10, 10, 10], 0.6703200460356394),
    ([30, 0, 0], [10, 10, 10], 9.357622968840163e-14),
    ([50, 30, 20], [40, 40, 20], 0.0820849986238988),
    ([148, 46, 37, 20, 14, 19], [140.0, 50.0, 40.0, 22.0, 15.0, 17.0], 0.9146886922301681),
    ([5, 15], [10, 10], 0.02534731867746821),
]
UPPER_REGULARIZED_GAMMA_BEFORE = [
    (0.5, 1.9207, 0.05000175403390825),
    (1, 3.0, 0.04978706836786395),
    (2.5, 0.5, 0.9625657732472964),
    (10, 20.0, 0.004995412308307591),
    (240, 260.0, 0.1005974186119808),
]


# ----- the same values as the hand-written code ------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "p", "before"), GAMMA_QUANTILE_BEFORE)
def test_gamma_quantile_as_before(shape, p, before):
    assert gamma_quantile(shape, p) == pytest.approx(before, rel=BEFORE)


@pytest.mark.parametrize(("n", "low", "high"), POISSON_INTERVAL_BEFORE)
def test_poisson_interval_as_before(n, low, high):
    assert poisson_interval(n) == pytest.approx((low, high), rel=BEFORE)


@pytest.mark.parametrize(("total", "events", "low", "high"), EXPONENTIAL_MEAN_INTERVAL_BEFORE)
def test_exponential_mean_interval_as_before(total, events, low, high):
    assert exponential_mean_interval(total, events) == pytest.approx((low, high), rel=BEFORE)


@pytest.mark.parametrize(("observed", "expected", "before"), CHI_SQUARE_PVALUE_BEFORE)
def test_chi_square_pvalue_as_before(observed, expected, before):
    assert chi_square_pvalue(observed, expected) == pytest.approx(before, rel=BEFORE)


@pytest.mark.parametrize(("a", "x", "before"), UPPER_REGULARIZED_GAMMA_BEFORE)
def test_upper_regularized_gamma_as_before(a, x, before):
    assert _upper_regularized_gamma(a, x) == pytest.approx(before, rel=BEFORE)
    assert _upper_regularized_gamma(a, 0.0) == 1.0


@pytest.mark.parametrize(("shape", "p"), [(0.0, 0.5), (-1.0, 0.5), (1.0, 0.0), (1.0, 1.0), (1.0, 1.5)])
def test_gamma_quantile_still_refuses_what_it_refused(shape, p):
    with pytest.raises(ValueError):
        gamma_quantile(shape, p)


def test_the_constants_are_the_same():
    assert uncertainty.Z90 == repair_law.Z90 == pytest.approx(1.6448536269514722, rel=1e-15)
    assert fit_hosts.LR_THRESHOLD == pytest.approx(
        10.83, rel=3e-4
    )  # was written 10.83: chi-square(1) at 99.9 %


# ----- independent facts -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [1e-6, 0.05, 0.5, 0.9, 0.95, 0.999999])
def test_gamma_quantile_of_shape_one_is_the_exponential_one(p):
    assert gamma_quantile(1.0, p) == pytest.approx(-math.log1p(-p), rel=1e-12)


@pytest.mark.parametrize("shape", [2, 3, 5, 10, 30])
@pytest.mark.parametrize("p", [0.05, 0.5, 0.95])
def test_gamma_quantile_inverts_the_erlang_cdf(shape, p):
    # integer shape: P(X <= x) = 1 - e^-x sum_{i < k} x^i / i!
    x = gamma_quantile(shape, p)
    cdf = 1.0 - math.exp(-x) * sum(x**i / math.factorial(i) for i in range(shape))
    assert cdf == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9, 0.95])
def test_gamma_quantile_of_shape_half_is_half_a_squared_normal(p):
    # Gamma(1/2) = chi-square(1) / 2 = Z^2 / 2
    z = NormalDist().inv_cdf((1 + p) / 2)
    assert gamma_quantile(0.5, p) == pytest.approx(z * z / 2, rel=1e-10)


def test_garwood_interval_after_no_event():
    low, high = poisson_interval(0)
    assert low == 0.0
    assert high == pytest.approx(-math.log(0.05), rel=1e-14)  # 2.9957: P(0 events | mean) = e^-mean = 5 %


@pytest.mark.parametrize(
    ("n", "low", "high"),
    # the published table of exact 90 % Poisson limits (Garwood 1936; e.g. Sahai & Khurshid 1993), 4 figures
    [(1, 0.0513, 4.744), (2, 0.3554, 6.296), (5, 1.970, 10.51), (20, 13.25, 29.06)],
)
def test_garwood_interval_matches_the_table(n, low, high):
    got_low, got_high = poisson_interval(n)
    assert got_low == pytest.approx(low, abs=5e-4 * max(1, low))
    assert got_high == pytest.approx(high, abs=5e-3 * max(1, high / 10))


@pytest.mark.parametrize("n", [1, 3, 12, 240])
def test_garwood_interval_holds_its_tails(n):
    # the lower limit leaves P(N >= n) = 5 %, the upper P(N <= n) = 5 % (Poisson sums, summed here by hand)
    low, high = poisson_interval(n)

    def cdf(k, mean):
        return math.fsum(math.exp(i * math.log(mean) - mean - math.lgamma(i + 1)) for i in range(k + 1))

    assert 1.0 - cdf(n - 1, low) == pytest.approx(0.05, rel=1e-9)
    assert cdf(n, high) == pytest.approx(0.05, rel=1e-9)


def test_exponential_mean_interval_after_one_event():
    # one completion over T: the mean's interval is T / -ln(0.05) to T / -ln(0.95)
    low, high = exponential_mean_interval(3600.0, 1.0)
    assert low == pytest.approx(3600.0 / -math.log(0.05), rel=1e-12)
    assert high == pytest.approx(3600.0 / -math.log(0.95), rel=1e-12)


@pytest.mark.parametrize(
    ("statistic", "df", "p"),
    [
        (3.841459, 1, 0.05),
        (5.991465, 2, 0.05),
        (18.307038, 10, 0.05),
        (33.408664, 17, 0.01),
    ],  # the printed tables
)
def test_upper_regularized_gamma_matches_the_chi_square_table(statistic, df, p):
    assert _upper_regularized_gamma(df / 2, statistic / 2) == pytest.approx(p, rel=1e-6)


def test_chi_square_pvalue_of_one_degree_is_a_normal_tail():
    # [5, 15] against [10, 10]: X^2 = 5 on one degree, P = P(|Z| >= sqrt 5) = erfc(sqrt(5 / 2))
    assert chi_square_pvalue([5, 15], [10, 10]) == pytest.approx(math.erfc(math.sqrt(2.5)), rel=1e-12)
    assert chi_square_pvalue([30, 0, 0], [10, 10, 10]) == pytest.approx(
        math.exp(-30.0), rel=1e-12
    )  # df 2: e^-X/2


def test_the_constants_are_the_normal_and_chi_square_quantiles():
    assert uncertainty.Z90 == pytest.approx(NormalDist().inv_cdf(0.95), rel=1e-14)
    assert fit_hosts.LR_THRESHOLD == pytest.approx(NormalDist().inv_cdf(0.9995) ** 2, rel=1e-12)


# ----- the median's interval: exact order statistics now, a normal approximation before -------------------------


def _indices_before(n: int) -> tuple[int, int]:
    """The hand-written interval before issue 46: a normal approximation centred on n / 2 (0-based indices)."""
    half = 1.6449 * math.sqrt(n) / 2
    return max(int(math.floor(n / 2 - half)), 0), min(int(math.ceil(n / 2 + half)), n - 1)


def _coverage(n: int, lo: int, hi: int) -> float:
    """P(X(lo + 1) <= median <= X(hi + 1)) = P(lo + 1 <= B <= hi), B ~ Binomial(n, 1/2), by exact integers."""
    return sum(math.comb(n, i) for i in range(lo + 1, hi + 1)) / 2**n


def _indices(n: int) -> tuple[int, int]:
    e = median_estimate(np.arange(n, dtype=float), "x")  # value at index i is i
    return int(e.low), int(e.high)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_median_interval_below_five_values_is_the_range_as_before(n):
    assert _indices(n) == _indices_before(n) == (0, n - 1)


@pytest.mark.parametrize("n", [*range(5, 130), 133, 195, 269, 500, 1000, 1330, 4999])
def test_median_interval_is_the_exact_order_statistic_one(n):
    lo, hi = _indices(n)
    assert lo + hi == n - 1  # symmetric: X(k) and X(n + 1 - k)
    assert _coverage(n, lo, hi) >= LEVEL  # holds the median at least 90 % of the time, for every law
    assert _coverage(n, lo + 1, hi - 1) < LEVEL  # and is the narrowest such pair
    before = _indices_before(n)
    assert (
        abs(lo - before[0]) <= 1 and abs(hi - before[1]) <= 1
    )  # one order statistic from the old one at most


def test_median_interval_before_was_lopsided_and_short_of_90_percent():
    # why it changed: centred on n / 2 with 0-based indices, half an order statistic high, and at n = 9 (say)
    # held the median 89 % of the time
    assert _indices_before(9) == (2, 7) and _coverage(9, 2, 7) < LEVEL
    assert _indices(9) == (1, 7) and _coverage(9, 1, 7) > 0.96


@pytest.mark.parametrize(
    ("values", "before", "indices"),
    [
        # (value, low, high) before issue 46, and the 0-based order statistics now
        ([5.0, 1.0, 3.0, 2.0, 4.0], (3.0, 1.0, 5.0), (0, 4)),  # as before
        ([7.0], (7.0, 7.0, 7.0), (0, 0)),  # as before
        ([1.0, 9.0], (5.0, 1.0, 9.0), (0, 1)),  # as before
        (list(np.arange(10.0)[::-1]), (4.5, 2.0, 8.0), (1, 8)),  # low one order statistic lower
        (
            list(np.random.default_rng(1).exponential(100.0, 50)),
            (85.45553844175456, 60.623495654433725, 111.45143506397763),
            (18, 31),
        ),
        (
            list(np.random.default_rng(2).lognormal(3, 1, 1000)),
            (19.635162586990642, 18.172501322261546, 21.304796720078517),
            (473, 526),
        ),
    ],
)
def test_median_estimate_on_fixed_arrays(values, before, indices):
    e = median_estimate(np.array(values), "run x")
    ordered = np.sort(values)
    assert e.value == before[0] == float(np.median(values))
    assert (e.low, e.high) == (float(ordered[indices[0]]), float(ordered[indices[1]]))
    assert e.n == len(values) and e.source == "run x"
    old = _indices_before(len(values))
    assert (before[1], before[2]) == (float(ordered[old[0]]), float(ordered[old[1]]))
