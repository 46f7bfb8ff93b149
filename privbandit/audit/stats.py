"""Statistics of the empirical audit: one-sided Clopper-Pearson bounds and the lower bounds built on them.

* :func:`cp_lower` / :func:`cp_upper` -- exact one-sided binomial (Clopper & Pearson 1934) bounds.
  They are kept *conservative*: the Beta quantiles are widened by a relative ``1e-7`` (lower bound
  shrunk, upper bound grown), and the closed forms ``alpha**(1/n)`` / ``1 - alpha**(1/n)`` at the
  boundary counts are computed with ``exp``/``expm1`` of ``log(alpha)/n`` (AUDIT.md 3.3).
* :func:`eps_lower_bound` -- ``ln((p_lo(D) - delta) / p_hi(D'))``: every (eps, delta)-DP mechanism has
  ``P[S|D] <= e^eps P[S|D'] + delta`` for every event S, so with probability >= 1 - alpha this is a
  lower bound on the true eps at that delta.
* :func:`mu_lower_bound` -- ``Phi^-1(1 - FPR_hi) - Phi^-1(FNR_hi)``: a mu-GDP mechanism has
  ``FNR >= Phi(Phi^-1(1 - FPR) - mu)`` for every test (Dong, Roth & Su 2022), and the expression is
  increasing in FPR and FNR's complements, so upper confidence bounds on both error rates give a
  lower bound on mu.
* :func:`wilson_lower` / :func:`wilson_upper` with :func:`bonferroni_z` -- the cheap, approximate
  bounds used only to *select* an event (the certificate itself is always Clopper-Pearson on fresh
  samples); the Bonferroni z over all candidates removes the winner's curse of picking a far-tail
  event on noise.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from accountants._validate import shown

WIDEN = 1e-7
"""Relative widening of every Clopper-Pearson bound (guards against quantile round-off)."""


def _check_alpha(alpha) -> float:
    if not isinstance(alpha, (int, float, np.floating)) or not (0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must lie in (0, 1), got {shown(alpha)}")
    return float(alpha)


def _counts(k, n):
    k = np.asarray(k)
    n = np.asarray(n)
    if k.size and (np.any(k != np.floor(k)) or np.any(n != np.floor(n))):
        raise ValueError("k and n must be whole numbers")
    k = k.astype(float)
    n = n.astype(float)
    if np.any(n < 1):
        raise ValueError(f"n must be a whole number in [1, inf), got {n.min() if n.size else n}")
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("k must lie in [0, n]")
    return np.broadcast_arrays(k, n)


def cp_lower(k, n, alpha: float):
    """One-sided (1 - alpha) Clopper-Pearson lower bound on p from k successes in n trials.

    P[p >= cp_lower(K, n, alpha)] >= 1 - alpha for K ~ Bin(n, p), every p.
    """
    alpha = _check_alpha(alpha)
    k, n = _counts(k, n)
    out = np.zeros(k.shape)
    mid = (k > 0) & (k < n)
    if np.any(mid):
        out[mid] = special.betaincinv(k[mid], n[mid] - k[mid] + 1.0, alpha) * (1.0 - WIDEN)
    top = k == n
    if np.any(top):
        out[top] = np.exp(math.log(alpha) / n[top]) * (1.0 - WIDEN)
    out = np.clip(out, 0.0, 1.0)
    return float(out) if out.ndim == 0 else out


def cp_upper(k, n, alpha: float):
    """One-sided (1 - alpha) Clopper-Pearson upper bound on p from k successes in n trials."""
    alpha = _check_alpha(alpha)
    k, n = _counts(k, n)
    out = np.ones(k.shape)
    mid = (k > 0) & (k < n)
    if np.any(mid):
        out[mid] = special.betaincinv(k[mid] + 1.0, n[mid] - k[mid], 1.0 - alpha) * (1.0 + WIDEN)
    zero = k == 0
    if np.any(zero):
        out[zero] = -np.expm1(math.log(alpha) / n[zero]) * (1.0 + WIDEN)
    out = np.clip(out, 0.0, 1.0)
    return float(out) if out.ndim == 0 else out


def eps_lower_bound(p_lo_num, p_hi_den, delta: float = 0.0):
    """``ln((p_lo_num - delta) / p_hi_den)``, floored at 0 (0 where the numerator is <= delta).

    ``p_lo_num`` is a lower bound on P[S | D], ``p_hi_den`` an upper bound on P[S | D'].
    """
    if not (isinstance(delta, (int, float, np.floating)) and 0.0 <= float(delta) < 1.0):
        raise ValueError(f"delta must lie in [0, 1), got {shown(delta)}")
    num = np.asarray(p_lo_num, dtype=float) - float(delta)
    den = np.asarray(p_hi_den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where((num > 0) & (den > 0), np.log(np.maximum(num, 1e-300) / np.maximum(den, 1e-300)), 0.0)
        val = np.where((num > 0) & (den <= 0), np.inf, val)
    val = np.maximum(val, 0.0)
    return float(val) if val.ndim == 0 else val


def mu_lower_bound(fpr_hi, fnr_hi):
    """``Phi^-1(1 - FPR_hi) - Phi^-1(FNR_hi)``, floored at 0.

    For the event S (reject "D'" when S happens): FPR = P[S | D'], FNR = P[not S | D].
    """
    fpr = np.asarray(fpr_hi, dtype=float)
    fnr = np.asarray(fnr_hi, dtype=float)
    if np.any((fpr < 0) | (fpr > 1)) or np.any((fnr < 0) | (fnr > 1)):
        raise ValueError("fpr_hi and fnr_hi must lie in [0, 1]")
    with np.errstate(invalid="ignore"):
        val = special.ndtri(1.0 - fpr) - special.ndtri(fnr)
    val = np.where(np.isnan(val), 0.0, val)
    val = np.maximum(val, 0.0)
    return float(val) if val.ndim == 0 else val


def gdp_fnr(fpr, mu: float):
    """The mu-GDP trade-off curve G_mu(FPR) = Phi(Phi^-1(1 - FPR) - mu): the smallest FNR allowed."""
    fpr = np.asarray(fpr, dtype=float)
    return special.ndtr(special.ndtri(1.0 - fpr) - mu)


def bonferroni_z(alpha: float, candidates: int) -> float:
    """One-sided normal quantile at alpha / candidates (the selection z of AUDIT.md 2.3)."""
    alpha = _check_alpha(alpha)
    if isinstance(candidates, bool) or int(candidates) != candidates or candidates < 1:
        raise ValueError(f"candidates must be a whole number in [1, inf), got {shown(candidates)}")
    return float(stats.norm.isf(alpha / candidates))


def _wilson(k, n, z: float, sign: float):
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    p = k / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return np.clip((centre + sign * half) / (1 + z2 / n), 0.0, 1.0)


def wilson_lower(k, n, z: float):
    """Wilson score lower bound with normal quantile z (approximate; for event selection only)."""
    return _wilson(k, n, z, -1.0)


def wilson_upper(k, n, z: float):
    """Wilson score upper bound with normal quantile z (approximate; for event selection only)."""
    return _wilson(k, n, z, +1.0)


def binomial_allowance(repeats: int, alpha: float, level: float = 1e-3) -> int:
    """Largest number of exceedances among ``repeats`` independent sound audits at ``alpha`` that is
    still plausible: the smallest m with P[Bin(repeats, alpha) > m] <= level."""
    alpha = _check_alpha(alpha)
    return int(stats.binom.isf(level, repeats, alpha))
