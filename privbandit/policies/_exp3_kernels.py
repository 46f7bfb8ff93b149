"""Compiled per-round steps of the EXP3 family (issue 19, item 3: the adversarial policies).

Each kernel is the ONE implementation of its step, in the style of
:mod:`privbandit.mechanisms._kernels`: plain Python over arrays, compiled by numba when it is
installed (``Kernel.at(rows)``: interpreted for one replicate, compiled from ``JIT_MIN_ROWS`` rows
on), the same arithmetic and the same results bit for bit either way, and bit for bit the numpy
expressions they replace (tests/privbandit/policies/test_exp3_kernels.py). Kernel names carry the
prefix ``exp3_`` (kernels are registered by bare function name across modules).

No kernel draws random numbers: the uniforms of the arm draws and the Laplace noise come from the
run's generator and the mechanisms' sampler, as before. ``np.exp`` also stays in numpy (its SIMD
results may differ from libm's in the last bit): a choice is :func:`exp3_shift` (numpy's row maxima
subtracted), ``np.exp`` in place, then :func:`exp3_draw` (the rest of Auer et al.'s Fig. 1 step 1-2).
"""

from __future__ import annotations

import numpy as np

from privbandit._engine_kernels import engine_row_sum
from privbandit.mechanisms._kernels import dividing_kernel, kernel


@kernel
def exp3_shift(log_w: np.ndarray, out: np.ndarray) -> None:
    """``out = log_w - log_w.max(axis=1, keepdims=True)`` (a row holding NaN gets NaN everywhere, as
    numpy's maximum propagates it; the sign of a zero maximum cannot change the difference's exp)."""
    n, k = log_w.shape[0], log_w.shape[1]
    for r in range(n):
        m = log_w[r, 0]
        for j in range(1, k):
            v = log_w[r, j]
            if v > m or v != v:
                m = v
        for j in range(k):
            out[r, j] = log_w[r, j] - m


@dividing_kernel
def exp3_draw(w: np.ndarray, u: np.ndarray, keep: float, floor: float, arms: np.ndarray,
              p_played: np.ndarray, stack: np.ndarray, vals: np.ndarray) -> None:
    """EXP3's choice from the shifted weights ``w`` = exp(log_w - row max) (R, K) and one uniform per
    row: p = w * (keep / w.sum(axis=1)) + floor (keep = 1 - gamma, floor = gamma / K), overwritten
    into ``w``; the arm is the number of the first K - 1 entries of cumsum(p) that are <= u * (the
    row's total), numpy's ``count_nonzero`` of that comparison (the total scales u so that rounding
    in the sum cannot overrun the last arm); ``p_played[r]`` = p[r, arm]. The row sum is numpy's
    (0.0 plus the pairwise sum of the row, ``engine_row_sum``); every divisor is a row sum of
    exponentials one of which is exp(0) = 1, never zero."""
    n, k = w.shape[0], w.shape[1]
    for r in range(n):
        if k < 8:  # numpy's pairwise sum of fewer than 8 terms: left to right from 0.0 (no row view)
            s = 0.0
            for j in range(k):
                s += w[r, j]
            c = keep / (0.0 + s)
        else:
            c = keep / engine_row_sum(w[r], k, stack, vals)
        for j in range(k):
            w[r, j] = w[r, j] * c + floor
        total = 0.0
        for j in range(k):
            total += w[r, j]
        bar = u[r] * total
        arm = 0
        cdf = 0.0
        for j in range(k - 1):
            cdf += w[r, j]
            arm += cdf <= bar  # branch-free: the draw's comparisons are random
        arms[r] = arm
        p_played[r] = w[r, arm]


@kernel
def exp3_arms_valid(arms: np.ndarray, k: int) -> bool:
    """Whether every arm lies in [0, k): checked before any kernel indexes with them (a compiled
    kernel has no bounds checks)."""
    for r in range(arms.shape[0]):
        if not (0 <= arms[r] < k):
            return False
    return True


@dividing_kernel
def exp3_learn(log_w: np.ndarray, arms: np.ndarray, gains: np.ndarray, p_played: np.ndarray, eta: float) -> None:
    """The importance-weighted update ``log_w[r, arms[r]] += eta * gains[r] / p_played[r]`` (numpy's
    fancy-indexed ``+=``; one entry per row; ``arms`` checked by :func:`exp3_arms_valid`). Divisors are
    probabilities >= gamma / K > 0."""
    for r in range(arms.shape[0]):
        a = arms[r]
        log_w[r, a] = log_w[r, a] + eta * gains[r] / p_played[r]


@dividing_kernel
def exp3_rescale(noisy: np.ndarray, b: float) -> np.ndarray:
    """DP-EXP3-Lap's gains (Tossou & Dimitrakakis 2017): the noisy rewards clipped to [-b, b + 1] and
    rescaled to [0, 1], ``(np.clip(noisy, -b, b + 1) + b) / (2 b + 1)`` elementwise, bit for bit (NaN
    passes through, as numpy's clip lets it). The divisor 2 b + 1 is >= 1."""
    lo, hi, width = -b, b + 1.0, 2.0 * b + 1.0
    out = np.empty(noisy.shape[0])
    for r in range(noisy.shape[0]):
        x = noisy[r]
        if x < lo:
            x = lo
        elif x > hi:
            x = hi
        out[r] = (x + b) / width
    return out
