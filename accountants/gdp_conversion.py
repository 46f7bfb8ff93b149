"""Exact conversions between mu-Gaussian DP and (epsilon, delta)-DP, in log space.

Dong, Roth & Su (2022), "Gaussian Differential Privacy", JRSS-B, Corollary 2.13: a mechanism is
mu-GDP iff it is (eps, delta(eps))-DP for every eps >= 0 with

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

(The analytic Gaussian mechanism of Balle & Wang 2018 is the same curve.) We evaluate it as
``log delta = logPhi(a) + log1p(-exp(eps + logPhi(b) - logPhi(a)))`` with ``scipy.special.log_ndtr``
so that it stays finite for mu in the thousands, where the naive form overflows.

Inversions use bracketing root-finding and then step to the safe side, so that

* ``epsilon_for_delta`` returns an eps whose delta is <= the target (never an optimistic eps);
* ``mu_for_epsilon_delta`` returns a mu whose delta at eps is <= the target (never a mu too large).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from accountants import _validate


def log_delta_for_epsilon(mu: float | np.ndarray, epsilon: float | np.ndarray) -> np.ndarray:
    """Natural log of the GDP delta(eps) curve; vectorised over ``mu`` and ``epsilon``.

    ``mu`` must be > 0 and ``epsilon`` >= 0 (not re-validated here: the public wrappers do it).
    """
    mu = np.asarray(mu, dtype=float)
    epsilon = np.asarray(epsilon, dtype=float)
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    log_pa = special.log_ndtr(a)
    log_pb = special.log_ndtr(b)
    inner = epsilon + log_pb - log_pa  # log of e^eps Phi(b) / Phi(a), always < 0 for mu > 0
    with np.errstate(divide="ignore"):
        # log1p(-exp(x)) loses accuracy for x near 0; use log(-expm1(x)) there (x > -ln 2).
        tail = np.where(inner > -math.log(2.0), np.log(-np.expm1(inner)), np.log1p(-np.exp(inner)))
    return log_pa + tail


def delta_for_epsilon(mu: float | np.ndarray, epsilon: float | np.ndarray) -> float | np.ndarray:
    """The smallest delta such that mu-GDP implies (epsilon, delta)-DP (exact, Dong et al. Cor 2.13).

    Vectorised: arrays broadcast; a scalar input gives a float.
    """
    if np.ndim(mu) == 0 and np.ndim(epsilon) == 0:
        _validate.positive("mu", mu)
        _validate.nonnegative("epsilon", epsilon)
        return float(np.exp(log_delta_for_epsilon(mu, epsilon)))
    mu_arr = np.asarray(mu, dtype=float)
    eps_arr = np.asarray(epsilon, dtype=float)
    if np.any(~(mu_arr > 0)) or np.any(~np.isfinite(mu_arr)):
        raise ValueError("mu must lie in (0, inf) elementwise")
    if np.any(~(eps_arr >= 0)) or np.any(~np.isfinite(eps_arr)):
        raise ValueError("epsilon must lie in [0, inf) elementwise")
    return np.exp(log_delta_for_epsilon(mu_arr, eps_arr))


def epsilon_for_delta(mu: float, delta: float) -> float:
    """The smallest eps >= 0 with delta(eps) <= ``delta`` for mu-GDP, rounded up (never optimistic).

    Reference (ACCOUNTING.md): mu = 1, delta = 1e-5 gives 4.37717809568.
    """
    mu = _validate.positive("mu", mu)
    delta = _validate.probability("delta", delta)
    log_target = math.log(delta)
    if log_delta_for_epsilon(mu, 0.0) <= log_target:
        return 0.0
    # Upper bracket: delta(eps) <= Phi(a), and Phi(a) = delta at eps = mu (mu/2 - Phi^-1(delta)).
    hi = mu * (mu / 2.0 - float(special.ndtri(delta)))
    hi = max(hi, 1e-12)
    while log_delta_for_epsilon(mu, hi) > log_target:  # guard against rounding in ndtri
        hi *= 2.0

    def f(e: float) -> float:
        return float(log_delta_for_epsilon(mu, e)) - log_target

    eps = optimize.brentq(f, 0.0, hi, xtol=1e-15 * max(1.0, hi), rtol=4 * np.finfo(float).eps,
                          maxiter=500)
    # Step to the safe side: the returned eps must certify the target delta *as reported* by
    # delta_for_epsilon (exp of the log), so compare in that currency, not in log space.
    step = max(abs(eps), 1e-300) * 2e-16
    while float(np.exp(log_delta_for_epsilon(mu, eps))) > delta:
        eps += step
        step *= 2.0
    return float(eps)


def mu_for_epsilon_delta(epsilon: float, delta: float) -> float:
    """The largest mu such that mu-GDP implies (epsilon, delta)-DP, rounded down (safe for calibration)."""
    epsilon = _validate.nonnegative("epsilon", epsilon)
    delta = _validate.probability("delta", delta)
    log_target = math.log(delta)

    def f(mu: float) -> float:
        return float(log_delta_for_epsilon(mu, epsilon)) - log_target

    lo, hi = 1e-12, 1.0
    if f(lo) > 0:
        raise ValueError(
            f"no mu > 1e-12 satisfies (epsilon={epsilon}, delta={delta}); delta is too small for this epsilon"
        )
    while f(hi) <= 0:  # delta(eps; mu) increases with mu
        lo, hi = hi, hi * 2.0
        if hi > 1e8:
            raise ValueError("mu_for_epsilon_delta did not find an upper bracket below mu = 1e8")
    mu = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    step = mu * 2e-16
    while float(np.exp(log_delta_for_epsilon(mu, epsilon))) > delta:
        mu -= step
        step *= 2.0
    return float(mu)


def mu_from_pure_epsilon(epsilon: float | np.ndarray) -> float | np.ndarray:
    """mu such that every pure eps-DP mechanism is mu-GDP: mu = -2 Phi^{-1}(1 / (1 + e^eps)).

    Dong, Roth & Su (2022): the eps-DP trade-off curve is two chords through the symmetric point
    1/(1+e^eps); the convex Gaussian curve G_mu through that point lies below them. eps = 1 gives
    mu = 1.232035... Computed as -2 Phi^{-1}(expit(-eps)) so that large eps stays finite.
    Rounded up by a few ulps so that numerical error never makes the bound optimistic.
    """
    eps = np.asarray(epsilon, dtype=float)
    if np.any(~(eps > 0)) or np.any(np.isnan(eps)):
        raise ValueError("epsilon must lie in (0, inf]")
    # log(1/(1+e^eps)) = -log1p(e^eps) = -logaddexp(0, eps); ndtri_exp takes the log-probability.
    mu = -2.0 * special.ndtri_exp(-np.logaddexp(0.0, eps))
    mu = mu * (1.0 + 8 * np.finfo(float).eps)
    return float(mu) if np.ndim(epsilon) == 0 else mu
