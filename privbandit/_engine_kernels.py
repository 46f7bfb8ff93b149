"""Compiled steps of the simulation engine (issue 19), in the style of
:mod:`privbandit.mechanisms._kernels`: plain Python over arrays, compiled by numba when it is
installed (``Kernel.at(rows)``), the same arithmetic and the same results bit for bit either way
(tests/privbandit/test_engine_kernels.py). Kernel names carry the prefix ``engine_`` (kernels are
registered by bare function name across modules).

No kernel here draws random numbers or touches a policy's state: they do the engine's bookkeeping
of the arms played (cumulative pseudo-regret, its per-round mean and band, pulls per arm).

numpy's float reductions are reproduced exactly: ``x.sum(axis=1)`` of a C-contiguous (n, R) array
starts each row's total at 0.0 and adds the pairwise sum of the whole row
(numpy/_core/src/umath/loops_utils.h.src, ``pairwise_sum``: fewer than 8 terms left to right; up to
128 terms in 8 running sums combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the
remainder in order; beyond 128 the halves n2 = n // 2 - (n // 2) % 8 and n - n2 summed apiece and
added), and ``mean`` / ``std(ddof=1)`` are that sum divided by the count, and the sum of the squared
deviations from the mean divided by count - 1 under a square root (numpy/_core/_methods.py). The
tests compare the kernels with numpy's own reductions on every row of many shapes.
"""

from __future__ import annotations

import math

import numpy as np

from privbandit.mechanisms._kernels import dividing_kernel, kernel, row_helper

#: numpy's PW_BLOCKSIZE: the longest run summed by one leaf of the pairwise sum
_PW_BLOCK = 128
#: room for the pairwise sum's explicit stack: its depth is about log2(R / 128) + 2
STACK = 64


@row_helper
def engine_pairwise_leaf(x: np.ndarray, lo: int, n: int) -> float:
    """numpy's pairwise sum of ``x[lo:lo + n]`` for n <= 128 (one leaf; see the module docstring)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += x[lo + i]
        return res
    r0, r1, r2, r3 = x[lo], x[lo + 1], x[lo + 2], x[lo + 3]
    r4, r5, r6, r7 = x[lo + 4], x[lo + 5], x[lo + 6], x[lo + 7]
    stop = n - n % 8
    i = 8
    while i < stop:
        r0 += x[lo + i]
        r1 += x[lo + i + 1]
        r2 += x[lo + i + 2]
        r3 += x[lo + i + 3]
        r4 += x[lo + i + 4]
        r5 += x[lo + i + 5]
        r6 += x[lo + i + 6]
        r7 += x[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += x[lo + i]
        i += 1
    return res


@row_helper
def engine_row_sum(x: np.ndarray, n: int, stack: np.ndarray, vals: np.ndarray) -> float:
    """numpy's ``x[:n].sum()`` for a contiguous row: 0.0 + its pairwise sum, the recursion unrolled
    on an explicit stack (``stack``: (STACK, 3) int64 rows (lo, n, state); ``vals``: (STACK,) float
    partial sums) -- left half, right half, then their sum, in numpy's order."""
    if n <= _PW_BLOCK:
        return 0.0 + engine_pairwise_leaf(x, 0, n)
    sp, vp = 1, 0
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, 0
    while sp > 0:
        top = sp - 1
        lo, m = stack[top, 0], stack[top, 1]
        if m <= _PW_BLOCK:
            vals[vp] = engine_pairwise_leaf(x, lo, m)
            vp += 1
            sp -= 1
            continue
        n2 = m // 2
        n2 -= n2 % 8
        state = stack[top, 2]
        if state == 0:  # the left half next
            stack[top, 2] = 1
            stack[sp, 0], stack[sp, 1], stack[sp, 2] = lo, n2, 0
            sp += 1
        elif state == 1:  # then the right half
            stack[top, 2] = 2
            stack[sp, 0], stack[sp, 1], stack[sp, 2] = lo + n2, m - n2, 0
            sp += 1
        else:  # both done: left + right
            vp -= 1
            vals[vp - 1] = vals[vp - 1] + vals[vp]
            sp -= 1
    return 0.0 + vals[0]


@dividing_kernel
def engine_regret_rounds(regrets: np.ndarray, arms: np.ndarray, carry: np.ndarray, pulls: np.ndarray,
                         mean: np.ndarray, half: np.ndarray, start: int, z95: float, root: float,
                         row: np.ndarray, stack: np.ndarray, vals: np.ndarray) -> int:
    """Rounds ``start`` .. ``start + n - 1`` (0-based entries of ``mean``/``half``) on an instance whose
    instantaneous regret depends on the arm only (``regrets[k] = best - expected[k]``,
    :meth:`Environment.constant_regrets`), arms (n, R). Per round i: the cumulative regret
    ``carry[r] += regrets[arms[i, r]]`` (the additions of the numpy path, ``increments[0] += carry``
    then ``cumsum(axis=0)``, in their order: IEEE addition commutes), ``pulls[r * K + a] += 1``
    (numpy's ``bincount``), ``mean[start + i]`` = numpy's ``carry.mean()`` and, for R > 1,
    ``half[start + i] = z95 * carry.std(ddof=1) / root`` (root = sqrt(R)), bit for bit (the module
    docstring). ``row`` is (R,) scratch, ``stack``/``vals`` the pairwise sum's. Divisors are R and
    R - 1 (R > 1), never zero. Returns 0, or 1 (and writes nothing) if an arm lies outside [0, K): the
    caller then takes the numpy path, which fails (or wraps) as it always did."""
    n, replicates = arms.shape[0], arms.shape[1]
    k = regrets.shape[0]
    for i in range(n):
        for r in range(replicates):
            if not (0 <= arms[i, r] < k):
                return 1
    for i in range(n):
        for r in range(replicates):
            a = arms[i, r]
            carry[r] = carry[r] + regrets[a]
            pulls[r * k + a] += 1
        m = engine_row_sum(carry, replicates, stack, vals) / replicates
        mean[start + i] = m
        if replicates > 1:
            for r in range(replicates):
                d = carry[r] - m
                row[r] = d * d
            var = engine_row_sum(row, replicates, stack, vals) / (replicates - 1)
            half[start + i] = z95 * math.sqrt(var) / root
    return 0


@kernel
def engine_sum_rows(x: np.ndarray, out: np.ndarray, stack: np.ndarray, vals: np.ndarray) -> None:
    """``out[i] = x[i].sum()`` as numpy sums a C-contiguous row (for the tests of
    :func:`engine_row_sum`)."""
    for i in range(x.shape[0]):
        out[i] = engine_row_sum(x[i], x.shape[1], stack, vals)


def scratch(replicates: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, stack, vals): the scratch arrays :func:`engine_regret_rounds` takes."""
    return np.empty(replicates), np.zeros((STACK, 3), dtype=np.int64), np.zeros(STACK)
