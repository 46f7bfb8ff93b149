"""StreamMechanism's input selection kernels (privbandit.mechanisms._stream_kernels) list the entries
numpy's expressions listed -- ``np.nonzero`` of the mask, its flat index, the selected values, the
range check -- the same compiled and interpreted, and the split mechanism's fused count-and-prepare
kernel gives the same runs compiled and interpreted (through a tight ledger)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandit.ledger import Ledger
from privbandit.mechanisms import SplitMechanism, _kernels
from privbandit.mechanisms._stream_kernels import stream_masked_entries, stream_outside_unit, stream_pulled_entries

WAYS = ["py_func", "jit"]


@pytest.mark.parametrize("way", WAYS)
def test_masked_entries_are_nonzeros_and_check_the_range(way):
    rng = np.random.default_rng(3)
    kernel = getattr(stream_masked_entries, way)
    for p in (0.0, 0.3, 0.9, 1.0):
        values, mask = rng.random((40, 5)), rng.random((40, 5)) < p
        n = np.count_nonzero(mask)
        rr, kk, f, v = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp), np.empty(n)
        assert kernel(values, mask, rr, kk, f, v) == 0
        want_r, want_k = np.nonzero(mask)
        assert np.array_equal(rr, want_r) and np.array_equal(kk, want_k)
        assert np.array_equal(f, want_r * 5 + want_k) and np.array_equal(v, values.reshape(-1)[f])
    for bad in (-0.5, 1.5, np.nan):  # a selected value out of range (NaN fails both comparisons)
        values, mask = rng.random((4, 3)), np.eye(4, 3, dtype=bool)
        values[2, 2] = bad
        args = (np.empty(3, dtype=np.intp), np.empty(3, dtype=np.intp), np.empty(3, dtype=np.intp), np.empty(3))
        assert kernel(values, mask, *args) == 1
        values[2, 2], values[2, 0] = 0.5, bad  # unselected: ignored
        assert kernel(values, mask, *args) == 0


@pytest.mark.parametrize("way", WAYS)
def test_outside_unit_is_numpys_range_check(way):
    """A full insert's range check: True exactly where ``not (v.min() >= 0 and v.max() <= 1)`` (NaN,
    +-inf, -0.0 inside), at any position and on the empty array."""
    kernel = getattr(stream_outside_unit, way)
    rng = np.random.default_rng(5)
    assert not kernel(np.empty(0))
    for n in (1, 7, 64, 257):
        v = rng.random(n)
        v[0] = -0.0
        assert not kernel(v)
        for bad in (-1e-300, 1.0 + 2**-52, np.nan, np.inf, -np.inf):
            for at in (0, n // 2, n - 1):
                w = v.copy()
                w[at] = bad
                assert not (w.min() >= 0.0 and w.max() <= 1.0)  # numpy's check refuses it
                assert kernel(w)
        w = v.copy()
        w[n - 1] = 1.0
        assert not kernel(w)


@pytest.mark.parametrize("way", WAYS)
def test_pulled_entries_copy_the_arms_and_refuse_bad_input(way):
    rng = np.random.default_rng(4)
    kernel = getattr(stream_pulled_entries, way)
    arms, values = rng.integers(0, 5, 30), rng.random(30)
    kk, f = np.empty(30, dtype=np.intp), np.empty(30, dtype=np.intp)
    assert kernel(arms, values, 5, kk, f) == 0
    assert np.array_equal(kk, arms) and np.array_equal(f, np.arange(30) * 5 + arms)
    for arm, value, code in ((5, 0.5, 1), (-1, 0.5, 1), (2, 1.5, 2), (2, np.nan, 2), (7, np.nan, 1)):
        a, x = arms.copy(), values.copy()
        a[9], x[9] = arm, value
        assert kernel(a, x, 5, kk, f) == code


def _split_run(R):
    data = np.random.default_rng(8)
    book = Ledger(R, 3, tight=True)
    mech = SplitMechanism(R, 3, epsilon=0.5, rng=np.random.default_rng(7), ledger=book)
    outs = []
    for i in range(300):
        if i % 5 == 4:  # a random subset of the streams: the masked selection
            mech.insert(data.random((R, 3)), data.random((R, 3)) < 0.4)
        else:
            mech.insert_pulled(data.integers(0, 3, R), data.random(R))
        outs.append(mech.noisy_sum.copy())
    return np.array(outs), book.releases()


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the interpreted path exists")
def test_split_runs_are_the_same_compiled_and_interpreted(monkeypatch):
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 0)
    compiled = _split_run(7)
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 10**9)
    monkeypatch.setattr(_kernels, "_LOADED", False)
    interpreted = _split_run(7)
    assert np.array_equal(compiled[0], interpreted[0])
    for key in compiled[1]:
        assert np.array_equal(compiled[1][key], interpreted[1][key]), key
