"""Renyi-DP curves of single releases (Mironov 2017, "Renyi Differential Privacy", CSF).

Each function takes an array of orders alpha > 1 and returns the RDP epsilon at each order.
Composition adds curves order by order (Mironov Prop. 1).
"""

from __future__ import annotations

import math

import numpy as np


def gaussian(alphas: np.ndarray, mu: float) -> np.ndarray:
    """Gaussian mechanism with sensitivity/sigma = mu: rdp(alpha) = alpha mu^2 / 2 (Mironov Prop. 7).

    Also valid for any mu-GDP mechanism: by Blackwell's theorem (Dong et al. 2022, Thm 2.10) a
    mu-GDP pair is a post-processing of the Gaussian pair, and Renyi divergence contracts.
    """
    return np.asarray(alphas, dtype=float) * (mu * mu) / 2.0


_EPS = np.finfo(float).eps


def _pure_upper(a: np.ndarray, log_sum: np.ndarray, magnitude: np.ndarray, epsilon: float) -> np.ndarray:
    """log_sum / (a - 1) made an upper bound, capped by what every epsilon-DP release satisfies.

    The log-sums of these curves are differences of terms of size ``magnitude`` (about |log a| +
    (a - 1) eps) that cancel to ~alpha eps^2 / 2: for small eps the float result is dominated by
    rounding -- at eps = 1e-9 it came out negative (-1e-15) and at 1e-6 12% low (randomized response),
    which a count of 1e17 releases turned into a negative composed curve (a certificate of 0). So a
    rounding margin of 8 ulp of ``magnitude`` is added, and the result is capped by the two bounds
    every eps-DP mechanism meets: eps itself (alpha -> inf) and alpha eps^2 / 2 (eps-DP implies
    eps^2/2-zCDP, Bun & Steinke 2016, Prop. 3.3), which is within rounding of the truth for small eps.
    """
    upper = (log_sum + 8.0 * _EPS * (magnitude + 1.0)) / (a - 1)
    # for a huge epsilon the zCDP cap overflows to inf: it is then no cap, which is what the minimum
    # makes of it (no warning for the caller: nothing is lost)
    with np.errstate(over="ignore"):
        # rounded up (3 roundings, 4 ulp): the curves reach within O(eps^4) of this cap for small eps, so a
        # cap rounded to nearest was below the exact curve by up to 1.4e-16 relative (RR at eps = 1e-12)
        zcdp_cap = a * (epsilon * epsilon) / 2.0 * (1.0 + 4.0 * _EPS)
    return np.minimum(np.minimum(upper, epsilon), zcdp_cap)


def laplace(alphas: np.ndarray, epsilon: float) -> np.ndarray:
    """Laplace mechanism with sensitivity/scale = epsilon (Mironov 2017, Table II), alpha > 1.

    rdp(alpha) = 1/(alpha-1) log( alpha/(2alpha-1) e^{(alpha-1) eps} + (alpha-1)/(2alpha-1) e^{-alpha eps} ),
    evaluated with logaddexp; capped at eps, which every eps-DP release satisfies.
    """
    a = np.asarray(alphas, dtype=float)
    lam_inv = epsilon  # 1/lambda with lambda = scale / sensitivity
    # near eps = 1e308 the terms overflow to +-inf: the log-sum is then inf and the cap at eps answers
    with np.errstate(over="ignore"):
        x = np.log(a) - np.log(2 * a - 1) + (a - 1) * lam_inv
        y = np.log(a - 1) - np.log(2 * a - 1) - a * lam_inv
        log_terms = np.logaddexp(x, y)
        # the size of every summand (x and y are themselves sums of terms this large)
        magnitude = 2.0 * (np.abs(np.log(a)) + np.abs(np.log(2 * a - 1)) + np.abs(np.log(a - 1))
                           + (2 * a - 1) * lam_inv)
    return _pure_upper(a, log_terms, magnitude, epsilon)


def discrete_laplace(alphas: np.ndarray, t: float, u: int) -> np.ndarray:
    """Discrete Laplace P(z) ~ exp(-|z|/t) on the integers, neighbours shifted by the integer u >= 1.

    Exact Renyi divergence (the sum over z splits into three geometric series, with r = e^{-1/t}):

        sum_z P(z)^a Q(z)^(1-a) = c [ r^((1-a)u) / (1-r) + r^(a u) / (1-r)
                                      + r^((1-a)u) r^(2a-1) (1 - r^((2a-1)(u-1))) / (1 - r^(2a-1)) ],

    c = (1-r)/(1+r); rdp = log(sum)/(a-1). Evaluated in log space; capped at u/t (its pure epsilon).
    It is slightly above the continuous Laplace curve of the same u/t (more mass sits at the largest
    loss), which is why floating-point-safe releases are recorded with their own event.
    """
    a = np.asarray(alphas, dtype=float)
    lr = -1.0 / t  # log r
    log1m_r = np.log(-np.expm1(lr))
    log_c = log1m_r - np.log1p(np.exp(lr))
    with np.errstate(over="ignore"):  # a u |lr| past 1e308 (a sensitivity of 1e300 grid units): -inf / inf terms,
        t1 = (1 - a) * u * lr - log1m_r  # whose magnitude below is inf too: a vacuous but valid curve
        t2 = a * u * lr - log1m_r
    terms = [t1, t2]
    if u > 1:
        b = 2 * a - 1
        # log( r^(2a-1) (1 - r^((2a-1)(u-1))) / (1 - r^(2a-1)) )
        with np.errstate(over="ignore"):  # (as t1, t2)
            mid = (1 - a) * u * lr + b * lr + np.log(-np.expm1(b * (u - 1) * lr)) - np.log(-np.expm1(b * lr))
        terms.append(mid)
    total = log_c + np.logaddexp.reduce(np.stack(terms), axis=0)
    # the size of every summand: (1 - a) u lr and a u lr nearly cancel in the terms' sum
    with np.errstate(over="ignore"):  # inf with the terms above: _pure_upper then keeps the pure bound
        magnitude = 4.0 * (np.abs(log_c) + np.abs(log1m_r) + (2 * a + 1) * u * abs(lr)
                           + (np.abs(np.log(-np.expm1((2 * a - 1) * lr))) if u > 1 else 0.0))
    return _pure_upper(a, total, magnitude, u / t)


def randomized_response(alphas: np.ndarray, epsilon: float) -> np.ndarray:
    """Generic pure eps-DP release: the randomized-response curve, which dominates every eps-DP pair.

    With p = e^eps/(1+e^eps), q = 1-p: rdp(alpha) = 1/(alpha-1) log(p^alpha q^(1-alpha) + q^alpha p^(1-alpha)).
    Capped at eps.
    """
    a = np.asarray(alphas, dtype=float)
    log_p = -np.logaddexp(0.0, -epsilon)
    log_q = -np.logaddexp(0.0, epsilon)
    with np.errstate(over="ignore"):  # near eps = 1e308: inf terms, the cap at eps answers
        x, y = a * log_p + (1 - a) * log_q, a * log_q + (1 - a) * log_p
        log_terms = np.logaddexp(x, y)
        # a log p and (1 - a) log q nearly cancel
        magnitude = 2.0 * (2 * a - 1) * (abs(log_p) + abs(log_q))
    return _pure_upper(a, log_terms, magnitude, epsilon)


def default_orders() -> np.ndarray:
    """A dense grid of orders: 1 + 2^k for k in [-10, 14] in steps of 1/8 (1.001 ... ~16385).

    A coarse grid can only loosen a conversion, never invalidate it; the accountant refines the
    optimum by bounded minimisation on top of this grid.
    """
    return 1.0 + np.exp2(np.arange(-10.0, 14.0 + 1e-9, 0.125))


def epsilon_from_rdp(alphas: np.ndarray, rdp: np.ndarray, delta: float) -> tuple[float, float]:
    """Improved RDP -> (eps, delta) conversion (Canonne, Kamath & Steinke 2020; Asoodeh et al. 2021).

    eps = min over alpha of rdp(alpha) + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1),
    never below 0. Returns (eps, best alpha).
    """
    a = np.asarray(alphas, dtype=float)
    r = np.asarray(rdp, dtype=float)
    eps = r + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1)
    i = int(np.nanargmin(eps))
    return max(0.0, float(eps[i])), float(a[i])


def log_delta_from_rdp(alphas: np.ndarray, rdp: np.ndarray, epsilon: float) -> tuple[float, float]:
    """Inverse of :func:`epsilon_from_rdp`: the smallest log delta the conversion certifies at epsilon.

    log delta = (alpha-1)(rdp - eps + log(1 - 1/alpha)) - log alpha, minimised over alpha; capped at 0.
    """
    a = np.asarray(alphas, dtype=float)
    r = np.asarray(rdp, dtype=float)
    with np.errstate(over="ignore"):  # a curve near 1e308 gives log delta = inf there: delta 1, valid
        log_delta = (a - 1) * (r - epsilon + np.log1p(-1.0 / a)) - np.log(a)
    i = int(np.nanargmin(log_delta))
    return min(0.0, float(log_delta[i])), float(a[i])
