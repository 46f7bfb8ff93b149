"""Compiled steps of the simulation engine (issue 19), in the style of
:mod:`privbandit.mechanisms._kernels`: plain Python over arrays, compiled by numba when it is
installed (``Kernel.at(rows)``), the same arithmetic and the same results bit for bit either way
(tests/privbandit/test_engine_kernels.py). Kernel names carry the prefix ``engine_`` (kernels are
registered by bare function name across modules).

No kernel here draws random numbers or touches a policy's state: they do the engine's bookkeeping
of the arms played (cumulative pseudo-regret, pulls per arm).
"""

from __future__ import annotations

import numpy as np

from privbandit.mechanisms._kernels import kernel


@kernel
def engine_regret_block(regrets: np.ndarray, arms: np.ndarray, carry: np.ndarray, out: np.ndarray,
                        pulls: np.ndarray) -> int:
    """A block of rounds on an instance whose instantaneous regret depends on the arm only
    (``regrets[k] = best - expected[k]``, :meth:`Environment.constant_regrets`): ``out[i, r]`` = the
    cumulative regret of replicate r after the block's row i, i.e. ``carry[r] + regrets[arms[0, r]]``
    then ``out[i - 1, r] + regrets[arms[i, r]]`` -- the additions, in their order, of the numpy path
    it replaces (``increments[0] += carry`` then ``cumsum(axis=0)``); ``carry`` becomes the last row;
    ``pulls[r * K + arms[i, r]] += 1`` (numpy's ``bincount``). ``out`` has at least ``arms.shape[0]``
    rows. Returns 0, or 1 (and writes nothing) if an arm lies outside [0, K): the caller then takes
    the numpy path, which fails (or wraps) as it always did."""
    n, replicates = arms.shape[0], arms.shape[1]
    k = regrets.shape[0]
    for i in range(n):
        for r in range(replicates):
            if not (0 <= arms[i, r] < k):
                return 1
    for r in range(replicates):
        # carry + g == g + carry bit for bit (IEEE addition commutes)
        out[0, r] = regrets[arms[0, r]] + carry[r]
    for i in range(1, n):
        for r in range(replicates):
            out[i, r] = out[i - 1, r] + regrets[arms[i, r]]
    for r in range(replicates):
        carry[r] = out[n - 1, r]
    for i in range(n):
        for r in range(replicates):
            pulls[r * k + arms[i, r]] += 1
    return 0
