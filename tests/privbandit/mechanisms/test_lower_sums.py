"""The binary core's lower sums reproduce numpy's per-row reduction bit for bit at every level count.

The golden-master test checks tops 2..11; the binary cores hold up to MAX_LEVELS = 62 levels, and the
emulation of numpy's pairwise summation (8 running sums, then the remainder) has a different shape
for every top modulo 8, so every top up to 64 is checked here, signed zeros and catastrophic
cancellations included -- compiled (when numba is installed) and interpreted: the kernel is one
Python source run both ways.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.mechanisms import _kernels

WAYS = [_kernels._row_lower_sum] + ([_kernels._row_lower_sum.py_func] if _kernels.COMPILED else [])


@pytest.mark.parametrize("top", range(1, 65))
def test_row_lower_sum_matches_numpy_row_sums_all_tops(top):
    g = np.random.default_rng(1000 + top)
    n = 200
    nodes = g.standard_normal((n, 64)) * np.exp(g.uniform(-40, 40, (n, 64)))
    nodes[g.random((n, 64)) < 0.2] = 0.0
    nodes[g.random((n, 64)) < 0.2] = -0.0
    level = g.integers(0, top, n)
    level[0] = top - 1
    level[1] = 0
    lower = np.arange(top) < level[:, None]
    for rows in (nodes[:3], nodes):  # few rows and many: numpy reduces each row the same way
        reference = np.where(lower[: len(rows)], rows[:, :top], 0.0).sum(axis=1)
        for way in WAYS:
            pairs = np.stack([np.zeros_like(rows), rows], axis=-1)  # the noisy column (c = 1)
            got = np.array([way(pairs, i, 1, int(level[i]), top) for i in range(len(rows))])
            assert np.array_equal(got.view(np.int64), reference.view(np.int64))


def test_cancelling_row_keeps_the_sign_of_zero():
    """+0.0 running sums: an exact cancellation gives +0.0 as numpy's sum does (never -0.0)."""
    row = np.array([1.5, -1.5, -0.0, 0.0, 2.0, -2.0, 0.0, -0.0, 1.0, -1.0] + [0.0] * 6)
    for top in range(1, 17):
        for level in range(top):
            reference = np.where(np.arange(top) < level, row[:top], 0.0).sum()
            for way in WAYS:
                got = way(np.stack([row, -row], axis=-1)[None], 0, 0, level, top)
                assert np.array_equal(np.float64(got).view(np.int64), np.float64(reference).view(np.int64))
