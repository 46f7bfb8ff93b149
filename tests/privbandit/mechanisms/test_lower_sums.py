"""lower_sums reproduces numpy's per-row reduction bit for bit at every level count a core can hold.

The golden-master test checks tops 2..11; the binary cores hold up to MAX_LEVELS = 62 levels, and the
column-wise emulation of numpy's pairwise summation (8 running sums, then the remainder) has a
different shape for every top modulo 8, so every top up to 64 is checked here, signed zeros and
catastrophic cancellations included.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.mechanisms._base import lower_sums


@pytest.mark.parametrize("top", range(2, 65))
@pytest.mark.parametrize("uniform", [False, True])
@pytest.mark.parametrize("n", [3, 3000])  # few rows: numpy's row sums; many: the column-wise emulation
def test_lower_sums_match_numpy_row_sums_all_tops(top, uniform, n):
    g = np.random.default_rng(1000 + top)
    nodes = g.standard_normal((n, 64)) * np.exp(g.uniform(-40, 40, (n, 64)))
    nodes[g.random((n, 64)) < 0.2] = 0.0
    nodes[g.random((n, 64)) < 0.2] = -0.0
    level = np.full(n, top - 1) if uniform else g.integers(0, top, n)
    level[0] = top - 1
    lower = np.arange(top) < level[:, None]
    reference = np.where(lower, nodes[:, :top], 0.0).sum(axis=1)
    got = lower_sums(nodes, level, None if uniform else lower, top)
    assert np.array_equal(got.view(np.int64), reference.view(np.int64))


@pytest.mark.parametrize("top", range(8, 65))
def test_columnwise_emulation_matches_numpy_at_every_top(top, monkeypatch):
    """The column-wise path itself (forced for every row count and top), mixed levels and uniform."""
    import privbandit.mechanisms._base as base

    monkeypatch.setattr(base, "_COLUMNWISE_ROWS", 1)
    monkeypatch.setattr(base, "_COLUMNWISE_TOP", 200)
    g = np.random.default_rng(2000 + top)
    n = 1000
    nodes = g.standard_normal((n, 64)) * np.exp(g.uniform(-40, 40, (n, 64)))
    nodes[g.random((n, 64)) < 0.2] = 0.0
    nodes[g.random((n, 64)) < 0.2] = -0.0
    for uniform in (False, True):
        level = np.full(n, top - 1) if uniform else g.integers(0, top, n)
        level[0] = top - 1
        lower = np.arange(top) < level[:, None]
        reference = np.where(lower, nodes[:, :top], 0.0).sum(axis=1)
        got = base.lower_sums(nodes, level, None if uniform else lower, top)
        assert np.array_equal(got.view(np.int64), reference.view(np.int64))
