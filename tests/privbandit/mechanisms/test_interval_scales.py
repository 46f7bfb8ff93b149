"""The interval mechanism's default scales are the C library's pow, bit for bit, on every CPU (session 17).

numpy's float64 array power takes a SIMD path on AVX-512 CPUs whose last bit differs from pow's for some
counts, so the same seed gave noise scales an ulp apart on two machines and the golden digests of the
interval mechanism and DP-UCB-Int, recorded on one kind of CPU, failed on the other. On a CPU where numpy's
power is pow itself these tests pass either way; on the others they fail with an array power.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from accountants.events import Laplace
from privbandit.mechanisms import IntervalMean
from privbandit.mechanisms.interval import interval_scales
from privbandit.policies import make_policy


@pytest.mark.parametrize("v", [1.01, 1.1, 1.5, 1.9, 1.999])
def test_default_scales_are_pow_bit_for_bit(v):
    n = np.arange(1, 20_001)
    mech = IntervalMean(1, 1, v=v, rng=np.random.default_rng(0), ledger=None)
    got = mech.scale_fn(n)
    want = [math.pow(float(x), v / 2.0 - 1.0) for x in n]
    assert [x.hex() for x in got.tolist()] == [x.hex() for x in want]
    assert interval_scales(n.reshape(100, 200), v).shape == (100, 200)


def test_schedule_events_are_the_recorded_releases():
    """DP-UCB-Int's fixed-interval schedule certifies Laplace releases at the mechanism's own scales."""
    events = make_policy("dp_ucb_int", v=1.1).privacy_schedule(2_000, 2).events(2_000)
    leaves = [leaf for leaf in events.grouped() if type(leaf) is Laplace]
    assert len(leaves) >= 5
    for leaf in leaves:
        count = round(1.0 / leaf.sensitivity)
        assert leaf.scale == interval_scales(np.array([count]), 1.1)[0]
