"""Compiled per-round steps of the environments (issue 19), in the style of
:mod:`privbandit.mechanisms._kernels`: plain Python over arrays, compiled by numba when it is
installed (``Kernel.at(rows)``), the same results bit for bit either way
(tests/privbandit/test_envs.py). Kernel names carry the prefix ``env_``. No kernel draws random
numbers: the variates come from the run's Generator, drawn in blocks by ``BlockedRun``.
"""

from __future__ import annotations

import numpy as np

from privbandit.mechanisms._kernels import kernel


@kernel
def env_bernoulli_rewards(u: np.ndarray, means: np.ndarray, arms: np.ndarray, out: np.ndarray) -> int:
    """One round of Bernoulli rewards: ``out[r] = 1.0 if u[r] < means[arms[r]] else 0.0`` -- numpy's
    ``(u < means[arms]).astype(float)`` in one pass instead of three array operations. Returns 0, or
    1 (and writes nothing) if an arm lies outside [0, len(means)): the caller then takes the numpy
    expression, which fails (or wraps a negative index) as it always did."""
    k = means.shape[0]
    for r in range(arms.shape[0]):
        if not (0 <= arms[r] < k):
            return 1
    for r in range(arms.shape[0]):
        out[r] = 1.0 if u[r] < means[arms[r]] else 0.0
    return 0
