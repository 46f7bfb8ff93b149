"""The EXP3 kernels give numpy's bits, compiled and interpreted (privbandit/policies/_exp3_kernels.py).

Each kernel replaced numpy expressions of privbandit/policies/adversarial.py (Auer et al. 2002,
Fig. 1; DP-EXP3-Lap's clip and rescale); here they are checked against those expressions, kept
verbatim below, on many shapes -- rows of fewer than 8 arms (numpy's sum left to right), 8 to 128
(eight running sums) and more (the pairwise halves) -- and on NaN and infinite weights. Whole runs
are compared compiled vs interpreted, and an in-range reward table (no per-round clipping) against
the clipping path.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandit import _engine_kernels, simulate
from privbandit.envs import RewardTable, switching_best_arm
from privbandit.ledger import Ledger
from privbandit.mechanisms import _kernels
from privbandit.policies import BatchedPrivateEXP3, DPEXP3Lap, EXP3, PrivateEXP3
from privbandit.policies._exp3_kernels import exp3_draw, exp3_learn, exp3_rescale, exp3_shift

WAYS = ["py_func", "jit"]


def _numpy_choice(log_w, u, gamma):
    """_Exp3Core.choose's numpy expressions before the kernels (session 8), verbatim."""
    k = log_w.shape[1]
    w = np.exp(log_w - log_w.max(axis=1, keepdims=True))
    p = w * ((1.0 - gamma) / w.sum(axis=1, keepdims=True))
    p += gamma / k
    cdf = np.cumsum(p, axis=1)
    arms = np.count_nonzero(cdf[:, :-1] <= (u * cdf[:, -1])[:, None], axis=1)
    return arms, p[np.arange(log_w.shape[0]), arms]


def _kernel_choice(way, log_w, u, gamma):
    w = np.empty(log_w.shape)
    getattr(exp3_shift, way)(log_w, w)
    np.exp(w, out=w)
    arms, p = np.empty(log_w.shape[0], dtype=np.int64), np.empty(log_w.shape[0])
    stack, vals = np.zeros((_engine_kernels.STACK, 3), dtype=np.int64), np.zeros(_engine_kernels.STACK)
    getattr(exp3_draw, way)(w, u, 1.0 - gamma, gamma / log_w.shape[1], arms, p, stack, vals)
    return arms, p


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("k", [2, 5, 7, 8, 9, 16, 127, 128, 129, 300])
def test_choice_is_numpys_choice_bit_for_bit(way, k):
    rng = np.random.default_rng(k)
    for rows, spread in ((1, 1.0), (5, 30.0), (64, 1e-3), (64, 700.0)):
        log_w = rng.normal(0.0, spread, (rows, k))
        for gamma in (1e-6, 0.07, 1.0):
            u = rng.random(rows)
            want_arms, want_p = _numpy_choice(log_w, u, gamma)
            arms, p = _kernel_choice(way, log_w, u, gamma)
            assert np.array_equal(arms, want_arms)
            assert np.array_equal(p, want_p)  # the same bits (array_equal on floats: exact)


@pytest.mark.parametrize("way", WAYS)
def test_choice_on_nan_and_infinite_weights_is_numpys(way):
    log_w = np.array([[0.0, np.nan, 1.0, 2.0], [np.inf, 0.0, 1.0, 2.0], [-np.inf, 0.0, -np.inf, 3.0],
                      [np.nan, np.nan, np.nan, np.nan], [-0.0, 0.0, -0.0, 0.0], [5.0, 5.0, 5.0, 5.0]])
    u = np.array([0.3, 0.9, 0.5, 0.1, 0.99, 0.0])
    with np.errstate(invalid="ignore"):
        want = _numpy_choice(log_w, u, 0.1)
        got = _kernel_choice(way, log_w, u, 0.1)
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(got[1], want[1], equal_nan=True)


@pytest.mark.parametrize("way", WAYS)
def test_learn_is_the_fancy_indexed_update(way):
    rng = np.random.default_rng(3)
    log_w = rng.normal(size=(40, 6))
    want = log_w.copy()
    for eta in (0.01, -0.3):
        arms, gains, p = rng.integers(0, 6, 40), rng.normal(size=40), rng.uniform(0.01, 1.0, 40)
        getattr(exp3_learn, way)(log_w, arms, gains, p, eta)
        want[np.arange(40), arms] += eta * gains / p
        assert np.array_equal(log_w, want)


@pytest.mark.parametrize("way", WAYS)
def test_rescale_is_numpys_clip_and_rescale(way):
    rng = np.random.default_rng(4)
    for b in (0.0, 0.5, 9.9, 1e6):
        noisy = np.concatenate([rng.laplace(0.0, 3.0 * b + 1.0, 200),
                                [-b, b + 1.0, -b - 1e-12, b + 1.0 + 1e-9, np.inf, -np.inf, np.nan, -0.0]])
        want = (np.clip(noisy, -b, b + 1.0) + b) / (2.0 * b + 1.0)
        assert np.array_equal(getattr(exp3_rescale, way)(noisy, b), want, equal_nan=True)


@pytest.mark.parametrize("policy", [EXP3(), DPEXP3Lap(1.0), PrivateEXP3(1.0)])
def test_updates_refuse_bad_arms_and_shapes_with_a_valueerror(policy):
    run = policy.start(3, 2, 10, np.random.default_rng(0), ledger=None)
    run.select(1)
    with pytest.raises(ValueError, match="arms must lie in"):
        run.update(1, np.array([0, 3]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="arms must lie in"):
        run.update(1, np.array([-1, 0]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="arms must be an integer array"):
        run.update(1, np.array([0.0, 1.0]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="arms must be an integer array"):
        run.update(1, np.array([0, 1, 2]), np.array([0.5, 0.5]))


def _adversarial_run(policy, replicates):
    book = Ledger(replicates, 4, tight=True, capacity=400)
    run = policy.start(4, replicates, 400, np.random.default_rng(5), ledger=book)
    table = np.random.default_rng(6).random((400, 4))
    arms_seen = []
    for t in range(1, 401):
        arms = run.select(t)
        run.update(t, arms, table[t - 1, arms])
        arms_seen.append(np.array(arms))
    return np.array(arms_seen), run.core.log_w.copy(), book.releases()


@pytest.mark.skipif(not _kernels.COMPILED, reason="numba not installed: only the interpreted path exists")
@pytest.mark.parametrize("policy", [EXP3(), DPEXP3Lap(1.0), PrivateEXP3(0.5), BatchedPrivateEXP3(0.25)],
                         ids=lambda p: p.name)
def test_exp3_policies_run_the_same_compiled_and_interpreted(monkeypatch, policy):
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 0)  # compiled even for one row
    compiled = _adversarial_run(policy, 5)
    monkeypatch.setattr(_kernels, "JIT_MIN_ROWS", 10**9)  # interpreted at every size ...
    monkeypatch.setattr(_kernels, "_LOADED", False)  # ... although this process has imported numba
    assert exp3_draw.at(5) is exp3_draw.py_func
    interpreted = _adversarial_run(policy, 5)
    assert np.array_equal(compiled[0], interpreted[0])
    assert np.array_equal(compiled[1], interpreted[1])
    for key in compiled[2]:
        assert np.array_equal(np.asarray(compiled[2][key]), np.asarray(interpreted[2][key]))


def test_reward_table_in_the_unit_interval_skips_clipping_with_the_same_results():
    env = switching_best_arm(600, 4, 3, seed=2)
    assert env.rewards_in_unit_interval
    assert not RewardTable([[0.5, 1.5], [0.0, 1.0]]).rewards_in_unit_interval
    assert not RewardTable([[0.5, -0.0], [0.0, 1.0]]).rewards_in_unit_interval  # clipping makes -0.0 +0.0
    class Clipped(RewardTable):  # the engine's per-round np.clip and NaN check, on the same table
        rewards_in_unit_interval = False

    clipped = Clipped(env.table)
    for policy in (EXP3(), DPEXP3Lap(1.0), BatchedPrivateEXP3(0.5)):
        a = simulate(policy, env, 600, 6, seed=9, keep_arms=True, progress=False)
        b = simulate(policy, clipped, 600, 6, seed=9, keep_arms=True, progress=False)
        assert np.array_equal(a.arms, b.arms)
        assert np.array_equal(a.regret_mean, b.regret_mean)
        if policy.records_releases:
            assert np.array_equal(a.realized_epsilon, b.realized_epsilon, equal_nan=True)
        else:
            assert a.realized_epsilon is None and b.realized_epsilon is None
    # a table changed after construction is judged as it is: a reward of 5 is clipped, not let through
    env.table[0, :] = 5.0
    assert not env.rewards_in_unit_interval
    with pytest.raises(ValueError, match="reward 5.0 in round 1 lies outside"):
        simulate(DPEXP3Lap(1.0), env, 600, 2, seed=9, progress=False, strict_rewards=True)
