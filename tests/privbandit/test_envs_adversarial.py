"""Adversarial sequences (privbandit/envs/adversarial.py)."""

import numpy as np
import pytest

from privbandit.engine import simulate
from privbandit.envs import OneMemoryAdversary, auer_lower_bound, shifted_stochastic, switching_best_arm
from privbandit.policies import UCB1


def test_switching_best_arm_segments():
    env = switching_best_arm(4000, 5, 4, high=0.9, low=0.1, seed=0)
    means = env.table.reshape(4, 1000, 5).mean(axis=1)
    # each segment mean is within 5 sd (sd <= sqrt(0.09/1000) = 0.0095) of its Bernoulli mean
    expected = np.full((4, 5), 0.1)
    expected[np.arange(4), np.arange(4)] = 0.9
    assert np.all(np.abs(means - expected) < 0.05)
    assert np.array_equal(env.table, switching_best_arm(4000, 5, 4, high=0.9, low=0.1, seed=0).table)


def test_shifted_stochastic_and_auer():
    env = shifted_stochastic(2000, [0.9, 0.1], [0.1, 0.9], shift_at=500, seed=1)
    assert env.table[:500, 0].mean() > 0.8 and env.table[500:, 1].mean() > 0.8
    env = auer_lower_bound(10_000, 4, seed=2)
    # gap (1/4) sqrt(K/T) = 0.005: one arm at 0.505, the others 0.5 (sd of a column mean 0.005)
    assert np.all(np.abs(env.table.mean(axis=0) - 0.5) < 0.025)
    with pytest.raises(ValueError, match="segments"):
        switching_best_arm(10, 2, 11)
    with pytest.raises(ValueError, match="shift_at"):
        shifted_stochastic(10, [0.1, 0.2], [0.2, 0.1], shift_at=10)
    with pytest.raises(ValueError, match="high"):
        switching_best_arm(10, 2, 2, high=1.5)


def test_one_memory_policy_regret():
    """A constant arm pays the table; every switch costs half the reward. UCB1's per-round policy
    regret equals the best constant arm's reward minus what it obtained, summed."""
    table = np.random.default_rng(0).uniform(size=(300, 3))
    env = OneMemoryAdversary(table, cost=0.5)
    r = simulate(UCB1(), env, 300, 2, seed=0, keep_arms=True, progress=False)
    a = r.arms[:, 0].astype(int)
    got = table[np.arange(300), a] * np.where(np.r_[False, a[1:] != a[:-1]], 0.5, 1.0)
    assert r.final_regret[0] == pytest.approx(table[:, env.best_arm].sum() - got.sum())
    with pytest.raises(ValueError, match="cost"):
        OneMemoryAdversary(table, cost=2.0)
    with pytest.raises(ValueError, match="table"):
        OneMemoryAdversary(table * 2)
