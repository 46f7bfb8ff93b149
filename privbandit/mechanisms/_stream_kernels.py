"""Compiled input selection of :class:`privbandit.mechanisms._base.StreamMechanism` (issue 19).

The one implementation of ``insert``'s and ``insert_pulled``'s entry selection and validation, in the
style of :mod:`privbandit.mechanisms._kernels` (plain Python over arrays, compiled by numba when it is
installed, ``Kernel.at(rows)``; same results either way: tests/privbandit/mechanisms/
test_stream_kernels.py). No arithmetic on values: they are copied and range-checked only. Kernel
names carry the ``stream_`` prefix (kernels are registered by bare name across modules).
"""

from __future__ import annotations

import numpy as np

from privbandit.mechanisms._kernels import kernel


@kernel
def stream_masked_entries(values: np.ndarray, mask: np.ndarray, rr: np.ndarray, kk: np.ndarray, f: np.ndarray,
                          v: np.ndarray) -> int:
    """The entries of ``values`` (R, K) where ``mask`` is True, in row-major order -- what
    ``np.nonzero(mask)`` lists: rows ``rr``, cols ``kk``, flat index ``f`` = r K + k, values ``v``
    (the arrays sized to the number of True entries). Returns 0, or 1 if a selected value lies
    outside [0, 1] or is NaN (a NaN fails both comparisons), found after the whole pass."""
    streams = mask.shape[1]
    n = 0
    bad = 0
    for r in range(mask.shape[0]):
        for c in range(streams):
            if mask[r, c]:
                x = float(values[r, c])
                if not (x >= 0.0 and x <= 1.0):
                    bad = 1
                rr[n] = r
                kk[n] = c
                f[n] = r * streams + c
                v[n] = x
                n += 1
    return bad


@kernel
def stream_outside_unit(v: np.ndarray) -> bool:
    """Whether a value of the 1-D ``v`` lies outside [0, 1] or is NaN (a NaN fails both
    comparisons): one pass without an early exit (compiled, it runs in SIMD lanes), where numpy's
    ``v.min() >= 0 and v.max() <= 1`` made two."""
    bad = False
    for i in range(v.size):
        x = float(v[i])
        bad |= not (x >= 0.0 and x <= 1.0)
    return bad


@kernel
def stream_pulled_entries(arms: np.ndarray, values: np.ndarray, streams: int, kk: np.ndarray, f: np.ndarray) -> int:
    """Validate one bandit round's entries (stream ``arms[r]`` of replicate r gets ``values[r]``):
    copy the arms into ``kk`` and write the flat index ``f[r] = r * streams + arms[r]``. Returns 0,
    or 1 if an arm lies outside [0, streams), or 2 if a value lies outside [0, 1] or is NaN (the
    first offending entry decides)."""
    for r in range(arms.size):
        a, x = int(arms[r]), float(values[r])  # Python scalars interpreted (numpy scalars cost more)
        if not (0 <= a < streams):
            return 1
        if not (x >= 0.0 and x <= 1.0):
            return 2
        kk[r] = a
        f[r] = r * streams + a
    return 0
