"""DP-TS's and Lazy-DP-TS's kernels give the same bits compiled and interpreted, and numpy's results.

privbandit.policies._hh_kernels (the Beta parameters of lines 6-8 of Hu & Hegde's Algorithms 1
and 2) is one Python source: numba compiles it when installed, CPython runs it otherwise (and for
one replicate). Each kernel is checked here against the numpy expressions it replaced, both ways,
bit for bit; whole runs of both policies are compared compiled vs interpreted through their ledgers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandit.envs import Bernoulli
from privbandit.ledger import Ledger
from privbandit.mechanisms import _kernels
from privbandit.policies._hh_kernels import hh_dpts_beta_params, hh_lazy_beta_params
from privbandit.policies.hu_hegde import DPTS, DPTS_SHIFT, LAZY_SHIFT, LazyDPTS, log2_next_table

WAYS = ["py_func", "jit"]


def _numpy_params(mubar_raw, o):
    """The numpy expressions the kernels replaced (hu_hegde.py before issue 19's session 6):
    ``clip_unit`` (np.maximum, np.minimum in place) and ``beta_draw``'s parameters."""
    mubar = np.minimum(np.maximum(mubar_raw, 0.0), 1.0)
    a = np.multiply(mubar, o)
    a += 1.0
    b = np.subtract(1.0, mubar)
    b *= o
    b += 1.0
    return a, b


def _bits(x):
    return np.asarray(x, dtype=float).view(np.int64)


def _noisy_state(rng, R, K, top):
    """Counts in [1, top) and noisy sums around count * mean, spread wide enough that mu~ + v falls
    below 0, inside [0, 1] and above 1 (both clips are exercised), with some exact zeros and -0.0."""
    count = rng.integers(1, top, (R, K))
    noisy = count * rng.random((R, K)) + rng.laplace(0.0, 30.0, (R, K))
    noisy.ravel()[:7] = 0.0
    noisy.ravel()[7:14] = -0.0
    return count, noisy


@pytest.mark.parametrize("way", WAYS)
def test_dpts_params_are_numpys(way):
    rng = np.random.default_rng(1)
    kernel = getattr(hh_dpts_beta_params, way)
    table = log2_next_table(5000)
    for R, eps, t in [(1, 1.0, 6), (40, 0.25, 977), (300, 4.0, 10**6 + 3), (7, 1e-3, 2**20)]:
        count, noisy = _noisy_state(rng, R, 5, 5000)
        o = count.astype(float)
        shift = DPTS_SHIFT * np.log2(o + 1.0) * math.log2(t) / (eps * o)
        want_a, want_b = _numpy_params(noisy / o + shift, o)
        a, b = np.empty((R, 5)), np.empty((R, 5))
        assert kernel(count, noisy, table, DPTS_SHIFT, math.log2(t), eps, a, b) == 0
        assert np.array_equal(_bits(a), _bits(want_a)) and np.array_equal(_bits(b), _bits(want_b))
        assert ((a == 1.0) | (b == 1.0)).any()  # some mubar clipped at 0 or 1 (shift > 0: at 1)


@pytest.mark.parametrize("way", WAYS)
def test_dpts_params_refuse_counts_outside_the_table(way):
    kernel = getattr(hh_dpts_beta_params, way)
    table = log2_next_table(64)
    a, b = np.full((3, 2), 7.0), np.full((3, 2), 7.0)
    for bad in (64, 0):
        count = np.full((3, 2), 5)
        count[2, 1] = bad
        assert kernel(count, np.ones((3, 2)), table, DPTS_SHIFT, 3.0, 1.0, a, b) == 1
        assert (a == 7.0).all() and (b == 7.0).all()  # nothing written


def test_log2_table_is_the_per_array_log2():
    # the table and np.log2 over an (R, K) array of counts + 1 are numpy's same loop on the same
    # inputs: equal bits at every count (the SIMD log2 differs from libm's on some of them)
    table = log2_next_table(1 << 17)
    count = np.random.default_rng(2).integers(0, 1 << 17, (999, 5))
    assert np.array_equal(_bits(table[count]), _bits(np.log2(count.astype(float) + 1.0)))


@pytest.mark.parametrize("way", WAYS)
def test_lazy_params_are_numpys(way):
    rng = np.random.default_rng(3)
    kernel = getattr(hh_lazy_beta_params, way)
    for R, eps, t in [(1, 1.0, 6), (50, 0.1, 4097), (300, 8.0, 10**7)]:
        o = (1 << rng.integers(0, 12, (R, 5))).astype(float)
        mean = (o * rng.random((R, 5)) + rng.laplace(0.0, 1.0 / eps, (R, 5))) / o
        mean.ravel()[:3] = -0.0
        eps_o = eps * o
        want_a, want_b = _numpy_params(mean + LAZY_SHIFT * math.log2(t) / eps_o, o)
        a, b = np.empty((R, 5)), np.empty((R, 5))
        kernel(mean, eps_o, o, LAZY_SHIFT * math.log2(t), a, b)
        assert np.array_equal(_bits(a), _bits(want_a)) and np.array_equal(_bits(b), _bits(want_b))


def _run(policy, replicates, rounds=300):
    """Arms and tight ledger of a run (policy rng 5, environment rng 6)."""
    env = Bernoulli([0.7, 0.5, 0.4])
    book = Ledger(replicates, 3, tight=True, capacity=rounds)
    run = policy.start(3, replicates, rounds, np.random.default_rng(5), ledger=book)
    env_run = env.start(replicates, np.random.default_rng(6))
    arms_seen = []
    for t in range(1, rounds + 1):
        arms = run.select(t)
        run.update(t, arms, env_run.rewards(t, arms))
        arms_seen.append(arms.copy())
    return np.array(arms_seen), book.releases()


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the interpreted path exists")
@pytest.mark.parametrize("policy", [DPTS(1.0), LazyDPTS(1.0), DPTS(0.5, exact=True)], ids=repr)
@pytest.mark.parametrize("replicates", [1, 4])
def test_runs_are_the_same_compiled_and_interpreted(monkeypatch, policy, replicates):
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 0)  # compiled even for one row
    compiled = _run(policy, replicates)
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 10**9)  # interpreted at every size ...
    monkeypatch.setattr(_kernels, "_LOADED", False)  # ... although this process has imported numba
    assert hh_dpts_beta_params.at(4) is hh_dpts_beta_params.py_func
    interpreted = _run(policy, replicates)
    assert np.array_equal(compiled[0], interpreted[0])
    assert set(compiled[1]) == set(interpreted[1])
    for key in compiled[1]:
        assert np.array_equal(np.asarray(compiled[1][key]), np.asarray(interpreted[1][key]))


def test_dpts_extends_its_log2_table_past_its_initial_size():
    # an arm pulled 1500 times (> the 1024-entry initial table): the select is numpy's formula
    run = DPTS(1.0).start(2, 2, 2000, np.random.default_rng(0))
    for j in range(1500):
        run.update(j + 1, np.array([j % 2, j % 2]) if j < 2 else np.array([0, 0]), np.array([0.5, 1.0]))
    t = 1501
    state = run.rng.bit_generator.state
    chosen = run.select(t)
    o = run.split.count.astype(float)
    shift = DPTS_SHIFT * np.log2(o + 1.0) * math.log2(t) / (run.eps * o)
    a, b = _numpy_params(run.split.noisy_sum / o + shift, o)
    ref = np.random.default_rng(0)
    ref.bit_generator.state = state
    assert np.array_equal(chosen, ref.beta(a, b).argmax(axis=1))
    assert run._log2_next.size > 1500


def test_dpts_refuses_to_select_with_an_arm_never_pulled():
    run = DPTS(1.0).start(3, 2, 100, np.random.default_rng(0))
    for t in (1, 2, 3):  # arm 2 is never fed (a run driven off the algorithm's initial rounds)
        run.update(t, np.array([0, 1]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="every arm has been pulled once"):
        run.select(4)


@pytest.mark.parametrize("shape", [(1, 2), (1, 5), (2, 4), (1, 9), (3, 5)])
def test_beta_argmax_draws_numpys_values_in_order(shape):
    # one rng.beta call per entry (small rounds) or one array call: the same values, the same
    # stream afterwards, so the same arms
    from privbandit.policies.hu_hegde import beta_argmax

    data = np.random.default_rng(4)
    a, b = 1.0 + data.random(shape) * 50, 1.0 + data.random(shape) * 50
    mine, ref = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(20):
        assert np.array_equal(beta_argmax(mine, a, b), ref.beta(a, b).argmax(axis=1))
    assert mine.bit_generator.state == ref.bit_generator.state


@pytest.mark.parametrize("policy, missing", [(DPTS(1.0), ("_a", "_b", "_log2_next", "_theta")),
                                             (LazyDPTS(1.0), ("_a", "_b")), (DPTS(1.0), ("_theta",))], ids=repr)
def test_run_pickled_without_the_session_6_buffers_resumes_identically(policy, missing):
    # deployments pickle policy runs: a snapshot taken before the runs kept Beta-parameter buffers
    # and DP-TS its log2 table resumes with them recreated, making the same choices; one taken before
    # session 17 has DP-TS's buffers but not its draw buffer (``_theta``)
    import pickle

    env = Bernoulli([0.7, 0.5, 0.4])
    run = policy.start(3, 2, 200, np.random.default_rng(5))
    env_run = env.start(2, np.random.default_rng(6))
    for t in range(1, 40):
        arms = run.select(t)
        run.update(t, arms, env_run.rewards(t, arms))
    state = pickle.loads(pickle.dumps(run)).__dict__
    old = {k: v for k, v in state.items() if k not in missing}
    resumed = type(run).__new__(type(run))
    resumed.__setstate__(old)
    twin = pickle.loads(pickle.dumps(run))
    for t in range(40, 80):
        arms = resumed.select(t)
        assert np.array_equal(arms, twin.select(t))
        rewards = env_run.rewards(t, arms)
        resumed.update(t, arms, rewards)
        twin.update(t, arms, rewards)
