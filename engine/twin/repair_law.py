"""The simulator's law of a repair's hands-on and vendor time, fitted by maximum likelihood with right-censoring.

A repair's time y (engine.sim.repair: after a technician takes the host) is a hands-on fix, exponential of mean
`fix`, and for a share `p` of repairs a return to the vendor after it, exponential of mean `rma`. So y is a
mixture: Exp(fix) with probability 1 - p, and with probability p the sum Exp(fix) + Exp(rma), whose law is the
hypoexponential (its density ab/(a-b) (e^-by - e^-ay) with rates a = 1/fix, b = 1/rma). Taking that sum for one
exponential of mean fix + rma, as the twin did before, bends the vendor's turnaround low (7-16 % in issue 44's
runs): the sum starts at zero density where an exponential is at its highest.

A repair known to go to the vendor (a lemon's: engine.sim.repair sends every one) is the hypoexponential alone, so
p is the share of the other repairs, as the simulator's repair.rma_fraction is.

The three parameters are fitted on (logit p, log fix, log rma) with scipy's Nelder-Mead; their covariance is the
inverse of the observed information (the Hessian of the negative log-likelihood, by central differences), so the
fit's own uncertainty is a normal law on that scale (engine.twin.uncertainty draws from it).
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logit, ndtri

Z90 = float(ndtri(0.95))  # the normal quantile of a two-sided 90 % interval (scipy.special.ndtri: norm.ppf)
SHORTEST_S = 1.0  # a repair quicker than a second took about none: its log-density stays finite
HESSIAN_STEP = 1e-3  # on the log and logit scales


@dataclass(frozen=True)
class RepairLaw:
    """The fitted law: the vendor share p and the means, and the covariance of (logit p, log fix[, log rma]):
    where the vendor's turnaround was held at a given value, the covariance is of the first two only."""

    p: float
    fix_s: float
    rma_s: float
    covariance: np.ndarray | None  # None where the information is singular: no interval can be given
    rma_fitted: bool = True

    @property
    def centre(self) -> np.ndarray:
        full = np.array([logit(self.p), math.log(self.fix_s), math.log(self.rma_s)])
        return full if self.rma_fitted else full[:2]

    def interval(self, index: int) -> tuple[float | None, float | None]:
        """The 90 % interval of one parameter (0: p, 1: fix, 2: rma), from its normal law on the fitted scale."""
        if self.covariance is None or index >= self.covariance.shape[0]:
            return None, None
        half = Z90 * math.sqrt(max(float(self.covariance[index, index]), 0.0))
        low, high = self.centre[index] - half, self.centre[index] + half
        back = expit if index == 0 else math.exp
        return float(back(low)), float(back(high))


def fit_mixture(
    y: np.ndarray,
    done: np.ndarray,
    long_after_s: float,
    vendor: np.ndarray | None = None,
    rma_s: float | None = None,
) -> RepairLaw | None:
    """The law of the module's docstring fitted to times y (done: completed; else censored at y); `vendor` marks
    the repairs known to go to the vendor. The repairs longer than `long_after_s` start the vendor's part. With
    `rma_s`, the vendor's turnaround is held there (too few returns seen to fit it: the likelihood of a handful of
    censored ones grows without bound with it) and p and fix are fitted. None where no repair completed."""
    y = np.maximum(np.asarray(y, dtype=float), SHORTEST_S)
    done = np.asarray(done, dtype=bool)
    vendor = np.zeros(y.size, dtype=bool) if vendor is None else np.asarray(vendor, dtype=bool)
    if not done.any():
        return None
    long = y > long_after_s
    p0 = float(np.clip(long.mean(), 0.01, 0.5))
    fix0 = float(y[~long].mean()) if (~long).any() else float(y.mean())
    rma0 = max(float(y[long].mean()) - fix0, fix0) if long.any() else 10 * fix0
    held = None if rma_s is None else math.log(rma_s)
    start = np.array([logit(p0), math.log(fix0), math.log(rma0)])
    if held is not None:
        start = start[:2]

    def cost(theta: np.ndarray) -> float:
        full = theta if held is None else np.append(theta, held)
        return -_log_likelihood(y, done, vendor, full)

    options = {"xatol": 1e-6, "fatol": 1e-7, "maxiter": 4000}
    theta = minimize(cost, start, method="Nelder-Mead", options=options).x
    return RepairLaw(
        p=float(expit(theta[0])),
        fix_s=float(math.exp(theta[1])),
        rma_s=float(math.exp(theta[2])) if rma_s is None else float(rma_s),
        covariance=_covariance(cost, theta),
        rma_fitted=rma_s is None,
    )


def log_likelihood(
    law: RepairLaw, y: np.ndarray, done: np.ndarray, vendor: np.ndarray | None = None
) -> float:
    """The log-likelihood of times y (done: completed; else censored) under `law`, as fit_mixture maximises it;
    a law of no vendor share (p = 0: one exponential) gives each repair not known to go to the vendor its
    exponential term alone."""
    y = np.maximum(np.asarray(y, dtype=float), SHORTEST_S)
    done = np.asarray(done, dtype=bool)
    vendor = np.zeros(y.size, dtype=bool) if vendor is None else np.asarray(vendor, dtype=bool)
    if law.p <= 0.0:
        a, b = 1.0 / law.fix_s, 1.0 / law.rma_s
        short = np.where(done, math.log(a) - a * y, -a * y)
        long = np.where(done, *_hypoexponential(y, a, b))
        return float(np.where(vendor, long, short).sum())
    theta = np.array([logit(min(law.p, 1.0 - 1e-12)), math.log(law.fix_s), math.log(law.rma_s)])
    return _log_likelihood(y, done, vendor, theta)


def _log_likelihood(y: np.ndarray, done: np.ndarray, vendor: np.ndarray, theta: np.ndarray) -> float:
    p = float(expit(theta[0]))
    if not 0.0 < p < 1.0:
        return -math.inf
    a, b = math.exp(-theta[1]), math.exp(-theta[2])  # rates of the hands-on fix and the vendor's return
    short = np.where(done, math.log(a) - a * y, -a * y)  # Exp(fix): log density, or log survival if censored
    long = np.where(done, *_hypoexponential(y, a, b))
    mixed = np.logaddexp(math.log1p(-p) + short, math.log(p) + long)
    return float(np.where(vendor, long, mixed).sum())


def _hypoexponential(y: np.ndarray, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """Log density and log survival of Exp(1/a) + Exp(1/b) at y. The law is symmetric in its two rates: with
    hi > lo, f = hi lo / (hi - lo) e^(-lo y) (1 - e^(-(hi - lo) y)) and S = e^(-lo y) (hi - lo e^(-(hi - lo) y)) /
    (hi - lo), written so that neither cancels at large y."""
    hi, lo = max(a, b), min(a, b)
    lo = min(lo, hi * (1 - 1e-6))  # equal rates: the Erlang law, reached as the limit
    gap = hi - lo
    decay = np.exp(-gap * y)
    log_f = math.log(hi * lo / gap) - lo * y + np.log1p(-decay)
    log_s = -lo * y + np.log(hi - lo * decay) - math.log(gap)
    return log_f, log_s


def _covariance(cost, theta: np.ndarray) -> np.ndarray | None:
    """The inverse of the Hessian of `cost` at `theta` (central differences); None where it is not positive
    definite (a flat direction: the data say nothing of some parameter)."""
    n, h = theta.size, HESSIAN_STEP
    hessian = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            value = (
                cost(theta + e_i + e_j)
                - cost(theta + e_i - e_j)
                - cost(theta - e_i + e_j)
                + cost(theta - e_i - e_j)
            ) / (4 * h * h)
            hessian[i, j] = hessian[j, i] = value
    if not np.all(np.isfinite(hessian)):
        return None
    values = np.linalg.eigvalsh(hessian)
    if values.min() <= 0:
        return None
    return np.linalg.inv(hessian)
