"""DP-TS's selection in one kernel (session 17, issue 19 item 1): ``hh_dpts_select`` is the policy's
two kernels, ``hh_dpts_beta_params`` then ``beta_argmax_rows``, in one crossing from Python -- the same
parameters, draws, arg max and stream, the same refusals -- and ``DPTS.select`` takes it wherever the
Beta draws run compiled, keeping the two-step path (``Generator.beta``) everywhere else."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandit.mechanisms import _kernels
from privbandit.policies import hu_hegde
from privbandit.policies._hh_kernels import hh_dpts_beta_params, hh_dpts_select
from privbandit.policies._ts_kernels import beta_argmax_rows, numpy_beta
from privbandit.policies.hu_hegde import DPTS, DPTS_SHIFT, log2_next_table

from _ts_helpers import CountingBeta, hh_selects

WAYS = ["py_func", "jit"]


def _state(rng, R, K, top):
    count = rng.integers(1, top, (R, K))
    noisy = count * rng.random((R, K)) + rng.laplace(0.0, 30.0, (R, K))  # both clips are exercised
    return count, noisy


def _needs_numpy_beta():
    if numpy_beta() is None:
        pytest.skip(f"numpy {np.__version__} does not export random_beta (DP-TS keeps Generator.beta)")


@pytest.mark.parametrize("way", WAYS)
def test_fused_select_is_the_two_kernels_in_turn(way):
    _needs_numpy_beta()
    beta = _kernels.sampler_address(numpy_beta())
    data = np.random.default_rng(2)
    table = log2_next_table(3000)
    for R, eps, t in [(1, 1.0, 6), (100, 0.25, 977), (33, 4.0, 10**6 + 3)]:
        count, noisy = _state(data, R, 5, 3000)
        mine, ref = np.random.default_rng(R), np.random.default_rng(R)
        a, b, theta, out = np.empty((R, 5)), np.empty((R, 5)), np.empty((R, 5)), np.empty(R, dtype=np.intp)
        ra, rb, rtheta, rout = np.empty((R, 5)), np.empty((R, 5)), np.empty((R, 5)), np.empty(R, dtype=np.intp)
        for _ in range(3):
            assert getattr(hh_dpts_select, way)(count, noisy, table, DPTS_SHIFT, math.log2(t), eps, a, b, beta,
                                                mine.bit_generator.ctypes.bit_generator.value, theta, out) == 0
            assert getattr(hh_dpts_beta_params, way)(count, noisy, table, DPTS_SHIFT, math.log2(t), eps, ra, rb) == 0
            assert getattr(beta_argmax_rows, way)(beta, ref.bit_generator.ctypes.bit_generator.value, ra, rb, rtheta,
                                                  rout) == 0
            for x, y in ((a, ra), (b, rb), (theta, rtheta), (out, rout)):
                assert np.array_equal(x, y)
        assert mine.bit_generator.state == ref.bit_generator.state


@pytest.mark.parametrize("way", WAYS)
def test_fused_select_refuses_as_its_parts_drawing_nothing(way):
    _needs_numpy_beta()
    beta = _kernels.sampler_address(numpy_beta())
    count, noisy = _state(np.random.default_rng(3), 4, 5, 50)
    rng = np.random.default_rng(9)
    before = rng.bit_generator.state
    a, b, theta, out = np.full((4, 5), -7.0), np.full((4, 5), -7.0), np.empty((4, 5)), np.empty(4, dtype=np.intp)
    # a count outside the table (past its end, or an arm never pulled): 1, nothing written or drawn
    for bad in (50, 0):
        c = count.copy()
        c[2, 3] = bad
        assert getattr(hh_dpts_select, way)(c, noisy, log2_next_table(50), DPTS_SHIFT, 3.0, 1.0, a, b, beta,
                                            rng.bit_generator.ctypes.bit_generator.value, theta, out) == 1
        assert (a == -7.0).all() and (b == -7.0).all() and rng.bit_generator.state == before


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the two-step path exists")
def test_dpts_select_is_one_kernel_call_with_the_same_arms_and_stream(monkeypatch):
    _needs_numpy_beta()
    two_step = hh_selects(monkeypatch, DPTS(0.7), fused=False, rounds=400, replicates=6)
    # the fused path makes no call of the two-step one (beta_argmax) ...
    monkeypatch.setattr(hu_hegde, "beta_argmax", lambda *args: pytest.fail("select crossed into beta_argmax"))
    fused = hh_selects(monkeypatch, DPTS(0.7), fused=True, rounds=400, replicates=6)
    # ... and plays the same arms, leaving the stream where the two-step path leaves it
    assert np.array_equal(fused[0], two_step[0]) and fused[1] == two_step[1]


def test_dpts_select_keeps_generator_beta_for_a_subclass_and_refuses_an_unpulled_arm():
    class Counting(CountingBeta):  # a subclass overriding beta is drawn through its beta (a fresh count)
        calls = 0

    run = DPTS(1.0).start(3, 4, 50, Counting(np.random.PCG64(1)))
    for t in range(1, 4):
        run.update(t, run.select(t), np.full(4, 0.5))
    ref = DPTS(1.0).start(3, 4, 50, np.random.default_rng(0))
    ref.split, ref.rng = run.split, np.random.Generator(np.random.PCG64(0))
    ref.rng.bit_generator.state = run.rng.bit_generator.state
    assert np.array_equal(run.select(4), ref.select(4)) and Counting.calls == 1
    fresh = DPTS(1.0).start(3, 4, 50, np.random.default_rng(0))
    with pytest.raises(ValueError, match="after every arm has been pulled once"):
        fresh.select(4)

