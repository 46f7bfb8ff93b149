"""Compiled per-round posterior step of DP-TS and Lazy-DP-TS (Hu & Hegde, UAI 2022; issue 19).

Each kernel is the ONE implementation of its step, in the style of
:mod:`privbandit.mechanisms._kernels`: plain Python over arrays, compiled by numba when it is
installed (``Kernel.at(rows)``: interpreted for one replicate until numba is loaded, compiled from
``JIT_MIN_ROWS`` rows on), same arithmetic and the same bits either way
(tests/privbandit/policies/test_hh_kernels.py checks compiled == interpreted == the numpy
expressions they replaced). A kernel does only +, -, *, / and comparisons, each rounded once as
numpy rounds it elementwise, in the order numpy evaluated the replaced expression: the Beta draws,
the random streams and the transcendental functions (np.log2, whose SIMD results differ from
libm's in the last bit on some inputs) stay numpy's, in the policy (a log2 enters as a table
numpy computed, looked up here).

The step is line 7-8 of Algorithms 1 and 2: the optimistic private mean
mubar = clip(mu~ + v, 0, 1) and the Beta parameters (mubar O + 1, (1 - mubar) O + 1); the policy
then draws theta ~ Beta(a, b) with numpy and plays its arg max.
"""

from __future__ import annotations

import numpy as np

from privbandit.mechanisms._kernels import dividing_kernel, row_helper
from privbandit.policies._ts_kernels import beta_argmax_rows

@row_helper
def _beta_params(x: float, o: float) -> tuple[float, float]:
    """mubar = clip(x, 0, 1), then (mubar o + 1, (1 - mubar) o + 1): the roundings of
    ``np.maximum(x, 0.0)``, ``np.minimum(., 1.0)``, then ``mubar * o + 1.0`` and
    ``(1.0 - mubar) * o + 1.0`` as two roundings each (a product, then a sum: never fused).
    A -0.0 (np.maximum keeps it, this turns it into +0.0) gives the same parameters."""
    if not x > 0.0:  # also NaN -> 0.0; the statistics here are finite (sums of finite noise)
        x = 0.0
    if x > 1.0:
        x = 1.0
    ax = x * o
    bx = (1.0 - x) * o
    return ax + 1.0, bx + 1.0


@dividing_kernel
def hh_dpts_beta_params(count: np.ndarray, noisy_sum: np.ndarray, log2_next: np.ndarray, coef: float,
                        log2_t: float, eps: float, a: np.ndarray, b: np.ndarray) -> int:
    """DP-TS (Algorithm 1, lines 6-8) for every (replicate, arm): with O = ``count`` (>= 1),
    mu~ = ``noisy_sum`` / O, v = coef log2(O + 1) log2(t) / (eps O) (coef = 6 sqrt(8); log2(O + 1)
    read from ``log2_next[O]``, numpy's np.log2(O + 1.0); log2(t) given), write the Beta parameters of
    clip(mu~ + v, 0, 1) into ``a`` and ``b``. The arithmetic is numpy's
    ``coef * L * log2_t / (eps * O)`` and ``noisy_sum / O + shift`` elementwise.

    Returns 0, or 1 (having written nothing) when some count lies outside [1, table size): the
    caller extends the table and calls again, or refuses a count 0 (an arm never pulled)."""
    R, K = count.shape
    top = log2_next.size
    for r in range(R):
        for k in range(K):
            if not 1 <= count[r, k] < top:
                return 1
    # scalars read once as Python numbers (float() of a float64 is the same double; interpreted,
    # Python float arithmetic is the same IEEE arithmetic without numpy's scalar overhead)
    for r in range(R):
        for k in range(K):
            n = int(count[r, k])
            o = float(n)
            shift = coef * float(log2_next[n]) * log2_t / (eps * o)
            a[r, k], b[r, k] = _beta_params(float(noisy_sum[r, k]) / o + shift, o)
    return 0


@dividing_kernel
def hh_dpts_select(count: np.ndarray, noisy_sum: np.ndarray, log2_next: np.ndarray, coef: float, log2_t: float,
                   eps: float, a: np.ndarray, b: np.ndarray, beta: int, state: int, theta: np.ndarray,
                   out: np.ndarray) -> int:
    """DP-TS's whole selection (Algorithm 1, lines 6-9) in one call: :func:`hh_dpts_beta_params`
    into ``a`` and ``b``, then :func:`privbandit.policies._ts_kernels.beta_argmax_rows` (numpy's
    ``random_beta`` at address ``beta`` on the bit generator at ``state``, row-major, the arg max into
    ``out``): the same two kernels, in the order the policy called them, without a second crossing
    from Python (a round at 100 x 5 made two, with the Python of ``beta_argmax`` between them).

    Returns 0 (drawn), 1 (a count outside the table: nothing written or drawn; the caller extends
    the table or refuses the count, as for :func:`hh_dpts_beta_params`) or 2 (``beta_argmax_rows``
    refused a parameter <= 0 and drew nothing -- which the clipped parameters, >= 1, never are; the
    caller would let ``Generator.beta`` raise its error)."""
    if hh_dpts_beta_params(count, noisy_sum, log2_next, coef, log2_t, eps, a, b):
        return 1
    if beta_argmax_rows(beta, state, a, b, theta, out):
        return 2
    return 0


@dividing_kernel
def hh_lazy_beta_params(mean: np.ndarray, eps_o: np.ndarray, o: np.ndarray, c: float, a: np.ndarray,
                        b: np.ndarray) -> None:
    """Lazy-DP-TS (Algorithm 2, lines 6-8) for every (replicate, arm): with the last closed batch's
    noisy mean ``mean``, its size ``o`` and ``eps_o`` = eps o, the shift v = c / (eps o) where
    c = 3 log2(t) (a scalar the caller computed, as ``LAZY_SHIFT * math.log2(t)``), write the Beta
    parameters of clip(mean + v, 0, 1) into ``a`` and ``b``."""
    R, K = mean.shape
    for r in range(R):
        for k in range(K):
            a[r, k], b[r, k] = _beta_params(float(mean[r, k]) + c / float(eps_o[r, k]), float(o[r, k]))


@dividing_kernel
def hh_lazy_select(mean: np.ndarray, eps_o: np.ndarray, o: np.ndarray, c: float, a: np.ndarray, b: np.ndarray,
                   beta: int, state: int, theta: np.ndarray, out: np.ndarray) -> int:
    """Lazy-DP-TS's whole selection (Algorithm 2, lines 6-9) in one call: :func:`hh_lazy_beta_params` into
    ``a`` and ``b``, then :func:`privbandit.policies._ts_kernels.beta_argmax_rows` (numpy's ``random_beta``
    at address ``beta`` on the bit generator at ``state``, row-major, the arg max into ``out``): the same two
    kernels in the order the policy called them, one crossing from Python instead of two with
    ``beta_argmax``'s Python between them (session 18, as :func:`hh_dpts_select` for DP-TS).

    Returns 0 (drawn) or 1 (``beta_argmax_rows`` refused a parameter <= 0 and drew nothing -- which the
    clipped parameters, >= 1, never are; the caller would let ``Generator.beta`` raise its error)."""
    hh_lazy_beta_params(mean, eps_o, o, c, a, b)
    return beta_argmax_rows(beta, state, a, b, theta, out)
