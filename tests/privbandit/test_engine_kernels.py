"""The engine's kernels (privbandit._engine_kernels) give the same bits compiled and interpreted, and
the numpy path they replace; whole runs agree whichever path the regret accumulation takes."""

from __future__ import annotations

import numpy as np
import pytest

from privbandit import engine
from privbandit._engine_kernels import engine_regret_block
from privbandit.engine import simulate
from privbandit.envs import Bernoulli, ClippedGaussian, RewardTable, StationaryEnvironment
from privbandit.policies import UCB1, BetaTS, GaussianTS

WAYS = ["py_func", "jit"]


def _numpy_block(regrets, arms, carry):
    """The numpy path of engine._RegretAccumulator.flush (best - expected, += carry, cumsum)."""
    inc = np.asarray(regrets[arms], dtype=float)
    inc[0] += carry
    np.cumsum(inc, axis=0, out=inc)
    return inc


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("dtype", [np.int16, np.int32])
def test_regret_block_is_the_cumsum_of_the_numpy_path_and_refuses_bad_arms(way, dtype):
    rng = np.random.default_rng(4)
    k, replicates = 7, 33
    regrets = rng.random(k) * 0.9 ** np.arange(k)  # values with full mantissas: the sums round
    regrets[2] = 0.0
    kernel = getattr(engine_regret_block, way)
    carry = np.zeros(replicates)
    pulls = np.zeros(replicates * k, dtype=np.int64)
    want_carry, want_pulls = carry.copy(), pulls.copy()
    out = np.empty((50, replicates))
    for n in (50, 1, 17, 50):
        arms = rng.integers(0, k, (n, replicates)).astype(dtype)
        want = _numpy_block(regrets, arms, want_carry)
        want_carry = want[-1].copy()
        want_pulls += np.bincount((arms + np.arange(replicates) * k).ravel(), minlength=replicates * k)
        assert kernel(regrets, arms, carry, out, pulls) == 0
        assert np.array_equal(out[:n], want) and np.array_equal(carry, want_carry)
        assert np.array_equal(pulls, want_pulls)
    for bad in (k, -1):
        arms = np.zeros((5, replicates), dtype=dtype)
        arms[3, 8] = bad
        assert kernel(regrets, arms, carry, out, pulls) == 1
        assert np.array_equal(carry, want_carry) and np.array_equal(pulls, want_pulls)  # nothing written


def _numpy_only(monkeypatch):
    monkeypatch.setattr(StationaryEnvironment, "constant_regrets", lambda self: None)


@pytest.mark.parametrize("policy, env, replicates, horizon", [
    (GaussianTS(b=2, c=3.0), Bernoulli([0.7, 0.55, 0.5, 0.2]), 40, 3000),
    (UCB1(), ClippedGaussian([0.3, 0.6, 0.5], scale=0.3), 7, 1500),
    (BetaTS(), Bernoulli([0.5, 0.45]), 2, 2000),
])
def test_runs_are_bit_identical_with_and_without_the_regret_kernel(monkeypatch, policy, env, replicates, horizon):
    monkeypatch.setattr(engine, "_BLOCK_CELLS", 997)  # several blocks, the last one partial
    fast = simulate(policy, env, horizon, replicates, seed=11, keep_arms=False, progress=False)
    kept = simulate(policy, env, horizon, replicates, seed=11, keep_arms=True, progress=False)
    _numpy_only(monkeypatch)
    slow = simulate(policy, env, horizon, replicates, seed=11, keep_arms=False, progress=False)
    for res in (fast, kept):
        for name in ("regret_mean", "regret_lower", "regret_upper", "final_regret", "pulls"):
            assert np.array_equal(getattr(res, name), getattr(slow, name)), name


def test_only_stationary_instances_with_their_own_best_and_expected_take_the_kernel():
    env = Bernoulli([0.25, 0.75, 0.5])
    assert np.array_equal(env.constant_regrets(), env.best(np.arange(3)) - env.expected(np.arange(3), np.arange(3)))
    assert RewardTable(np.full((10, 3), 0.5)).constant_regrets() is None

    class Drifting(Bernoulli):
        def expected(self, t, arms):
            return self.means[arms] * (1.0 - 1e-3 * np.asarray(t))

    assert Drifting([0.25, 0.75]).constant_regrets() is None


def test_a_bad_arm_takes_the_numpy_path_which_fails_as_it_did():
    """Arms out of range (a broken policy): the kernel refuses them, writing nothing, and the numpy
    path raises as it always did (here bincount of a negative cell)."""
    acc = engine._RegretAccumulator(Bernoulli([0.5, 0.4]), 10, 3, 4)
    with pytest.raises(ValueError):
        acc.flush(1, np.array([[0, 1, 0], [-1, 1, 0]], dtype=np.int16), None)
