"""The interval scales' table of pow values (session 18): the same bits as ``math.pow``, computed once per count.

``interval_scales`` looks whole counts up in a per-exponent table of ``math.pow`` values instead of calling pow per
release (~200 us per 1,000 releases before). These check the lookup against pow across the table's growth, the
counts it must leave to the loop, that a caller cannot write into the table, and that pow is not called again for
counts already tabled.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from privbandit.mechanisms import interval


def _pow_hex(counts, v):
    return [math.pow(float(x), v / 2.0 - 1.0).hex() for x in np.ravel(counts)]


@pytest.mark.parametrize("v", [1.3, 0.7])
def test_lookup_is_pow_across_growth_and_fallbacks(v, monkeypatch):
    e = v / 2.0 - 1.0
    monkeypatch.setattr(interval, "_TABLE_CAP", 1 << 13)  # (a small cap: the same code, in milliseconds)
    monkeypatch.setattr(interval, "_POW_TABLES", {})
    rng = np.random.default_rng(5)
    # growing maxima cross the table's doublings; floats with whole values take the table, others the loop
    for top in (40, 1_500, 1_025, 3_000, interval._TABLE_CAP - 1, interval._TABLE_CAP + 3):
        counts = rng.integers(1, top + 1, size=(3, 40))
        counts[0, 0] = top
        for c in (counts, counts.astype(float), counts + 0.5, counts[:1, :5]):
            got = interval.interval_scales(c, v)
            assert got.shape == c.shape and got.dtype == float
            assert [x.hex() for x in got.ravel().tolist()] == _pow_hex(c, v)
    assert interval._POW_TABLES[e].size <= interval._TABLE_CAP
    # NaN and infinite counts are pow's too (the loop), and never cast to an integer (no warning)
    odd = np.r_[np.arange(1.0, 40.0), np.nan, np.inf]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [x.hex() for x in interval.interval_scales(odd, v).tolist()] == _pow_hex(odd, v)


def test_counts_below_one_behave_as_pow():
    counts = np.arange(0, 40)  # pow(0, e < 0) is pow's domain error, whichever path
    with pytest.raises(ValueError):
        interval.interval_scales(counts, 1.1)


def test_returned_scales_do_not_alias_the_table():
    counts = np.arange(1, 200)
    first = interval.interval_scales(counts, 1.2)
    first[:] = -1.0  # (the ledger stages scales uncopied; a shared buffer would corrupt later releases)
    again = interval.interval_scales(counts, 1.2)
    assert [x.hex() for x in again.tolist()] == _pow_hex(counts, 1.2)


def test_tabled_counts_do_not_call_pow_again(monkeypatch):
    counts = np.arange(1, 1_001).reshape(10, 100)
    want = interval.interval_scales(counts, 1.45)
    calls, real = [], math.pow
    monkeypatch.setattr(interval.math, "pow", lambda x, y: calls.append(x) or real(x, y))
    got = interval.interval_scales(counts, 1.45)
    assert calls == []
    assert [x.hex() for x in got.ravel().tolist()] == [x.hex() for x in want.ravel().tolist()]
