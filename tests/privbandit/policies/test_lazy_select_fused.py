"""Lazy-DP-TS's selection in one kernel (session 18, issue 19 item 1): ``hh_lazy_select`` is the policy's
two kernels, ``hh_lazy_beta_params`` then ``beta_argmax_rows``, in one crossing from Python -- the same
parameters, draws, arg max and stream -- and ``LazyDPTS``'s select takes it wherever the Beta draws run
compiled, keeping the two-step path (``Generator.beta``) everywhere else."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandit.mechanisms import _kernels
from privbandit.policies import hu_hegde
from privbandit.policies._hh_kernels import hh_lazy_beta_params, hh_lazy_select
from privbandit.policies._ts_kernels import beta_argmax_rows, numpy_beta
from privbandit.policies.hu_hegde import LAZY_SHIFT, LazyDPTS

from _ts_helpers import CountingBeta, hh_selects


def _needs_numpy_beta():
    if numpy_beta() is None:
        pytest.skip(f"numpy {np.__version__} does not export random_beta (Lazy-DP-TS keeps Generator.beta)")


@pytest.mark.parametrize("way", ["py_func", "jit"])
def test_fused_select_is_the_two_kernels_in_turn(way):
    _needs_numpy_beta()
    beta = _kernels.sampler_address(numpy_beta())
    data = np.random.default_rng(2)
    for R, eps, t in [(1, 1.0, 6), (100, 0.25, 977), (33, 4.0, 10**6 + 3)]:
        o = 2.0 ** data.integers(0, 12, (R, 5))
        mean = data.random((R, 5)) + data.laplace(0.0, 1.0 / (eps * o))  # both clips are exercised
        c = LAZY_SHIFT * math.log2(t)
        mine, ref = np.random.default_rng(R), np.random.default_rng(R)
        a, b, theta, out = np.empty((R, 5)), np.empty((R, 5)), np.empty((R, 5)), np.empty(R, dtype=np.intp)
        ra, rb, rtheta, rout = np.empty((R, 5)), np.empty((R, 5)), np.empty((R, 5)), np.empty(R, dtype=np.intp)
        for _ in range(3):
            assert getattr(hh_lazy_select, way)(mean, eps * o, o, c, a, b, beta,
                                                mine.bit_generator.ctypes.bit_generator.value, theta, out) == 0
            getattr(hh_lazy_beta_params, way)(mean, eps * o, o, c, ra, rb)
            assert getattr(beta_argmax_rows, way)(beta, ref.bit_generator.ctypes.bit_generator.value, ra, rb, rtheta,
                                                  rout) == 0
            for x, y in ((a, ra), (b, rb), (theta, rtheta), (out, rout)):
                assert np.array_equal(x, y)
        assert mine.bit_generator.state == ref.bit_generator.state


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the two-step path exists")
def test_lazy_select_is_one_kernel_call_with_the_same_arms_and_stream(monkeypatch):
    _needs_numpy_beta()
    two_step = hh_selects(monkeypatch, LazyDPTS(0.7), fused=False, rounds=300, replicates=6)
    # the fused path makes no call of the two-step one (beta_argmax) ...
    monkeypatch.setattr(hu_hegde, "beta_argmax", lambda *args: pytest.fail("select crossed into beta_argmax"))
    for pickled_at in (None, 150):
        fused = hh_selects(monkeypatch, LazyDPTS(0.7), fused=True, rounds=300, replicates=6, pickled_at=pickled_at)
        monkeypatch.setattr(hu_hegde, "beta_argmax", lambda *args: pytest.fail("select crossed into beta_argmax"))
        # ... and plays the same arms, leaving the stream where the two-step path leaves it
        assert np.array_equal(fused[0], two_step[0]) and fused[1] == two_step[1]


def test_lazy_select_keeps_generator_beta_for_a_subclass():
    class Counting(CountingBeta):  # a subclass overriding beta is drawn through its beta (a fresh count)
        calls = 0

    mine = LazyDPTS(1.0).start(3, 4, 50, Counting(np.random.PCG64(1)))
    ref = LazyDPTS(1.0).start(3, 4, 50, np.random.default_rng(1))
    for t in range(1, 12):
        arms = mine.select(t)
        assert np.array_equal(arms, ref.select(t))
        mine.update(t, arms, np.full(4, 0.5))
        ref.update(t, arms, np.full(4, 0.5))
    assert Counting.calls == 8
