"""Exact references for the accountant tests, computed independently of the package's code paths.

* GDP: Dong, Roth & Su (2022) Cor. 2.13 in mpmath at 50 digits (``gdp_delta``), and its inverse.
* Identical eps0-DP releases: Kairouz, Oh & Viswanath (2015) Thm 3.3 summed with ``scipy.stats``
  log-pmfs over +-45 standard deviations (``rr_delta``; the omitted mass is < e^-1000) -- a different
  code path from :mod:`accountants.optimal` (gammaln window plus Chernoff bounds).
"""

import math

import mpmath
import numpy as np
from scipy import stats



@mpmath.workdps(50)  # a local precision: the global mpmath context is left to each test
def gdp_delta(mu: float, eps: float) -> mpmath.mpf:
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    a = -eps / mu + mu / 2
    return mpmath.ncdf(a) - mpmath.exp(eps) * mpmath.ncdf(a - mu)


@mpmath.workdps(50)
def gdp_epsilon(mu: float, delta: float) -> float:
    """The exact eps(delta) of mu-GDP (bisection in mpmath; 1e-14 relative)."""
    lo, hi = mpmath.mpf(0), mpmath.mpf(mu) * (mpmath.mpf(mu) / 2 + 40)
    if gdp_delta(mu, 0) <= delta:
        return 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if gdp_delta(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo < mpmath.mpf(10) ** -16 * hi:
            break
    return float(hi)


def rr_log_delta(k: int, eps0: float, eps: float) -> float:
    """log of the exact delta(eps) of k-fold eps0-DP composition (KOV Thm 3.3)."""
    q = 1.0 / (1.0 + math.exp(eps0))
    sd = math.sqrt(k * q * (1 - q))
    jmax = math.ceil((k - eps / eps0) / 2.0) - 1
    if jmax < 0:
        return -math.inf
    lo = max(0, math.floor(min(k * q, jmax) - 45 * sd - 50))
    j = np.arange(lo, jmax + 1)
    j = j[j <= min(jmax, math.ceil(k * q + 45 * sd + 50))]
    if len(j) == 0:
        return -math.inf
    logpmf = stats.binom.logpmf(j, k, q)
    x = eps - (k - 2.0 * j) * eps0
    terms = logpmf + np.log(-np.expm1(x))
    m = terms.max()
    return float(m + math.log(math.fsum(np.exp(terms - m))))
