"""The engine's kernels (privbandit._engine_kernels) give the same bits compiled and interpreted, and
the numpy path they replace; whole runs agree whichever path the regret accumulation takes."""

from __future__ import annotations

import numpy as np
import pytest

from privbandit import engine
from privbandit._engine_kernels import engine_regret_rounds, engine_sum_rows, scratch
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
def test_row_sums_are_numpys_pairwise_sums(way):
    """numpy's x.sum(axis=1), bit for bit, at every row length up to 600 (leaves of < 8 and <= 128
    terms, and every split above 128) and some longer rows, on values whose sums round."""
    rng = np.random.default_rng(8)
    row, stack, vals = scratch(1)
    kernel = getattr(engine_sum_rows, way)
    lengths = list(range(1, 600)) + [1000, 1001, 4097, 20000] if way == "jit" else [1, 7, 8, 9, 128, 129, 300, 1000]
    for n in lengths:
        x = rng.standard_normal((2, n)) * 10.0 ** rng.uniform(-4, 4, (2, 1)) + rng.uniform(0, 1e3)
        out = np.empty(2)
        kernel(x, out, stack, vals)
        assert np.array_equal(out, x.sum(axis=1)), n


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("dtype", [np.int16, np.int32])
@pytest.mark.parametrize("replicates", [1, 2, 5, 33, 129, 1000])
def test_regret_rounds_are_the_numpy_path_and_refuse_bad_arms(way, dtype, replicates):
    rng = np.random.default_rng(4 + replicates)
    k = 7
    regrets = rng.random(k) * 0.9 ** np.arange(k)  # values with full mantissas: the sums round
    regrets[2] = 0.0
    kernel = getattr(engine_regret_rounds, way)
    horizon = 120 if way == "jit" else 25
    carry = np.zeros(replicates)
    pulls = np.zeros(replicates * k, dtype=np.int64)
    mean, half = np.full(horizon, np.nan), np.zeros(horizon)
    want_carry, want_pulls = carry.copy(), pulls.copy()
    want_mean, want_half = mean.copy(), half.copy()
    first = 0
    for n in ((50, 1, 17, 52) if way == "jit" else (10, 1, 14)):
        arms = rng.integers(0, k, (n, replicates)).astype(dtype)
        cum = _numpy_block(regrets, arms, want_carry)
        want_carry = cum[-1].copy()
        want_pulls += np.bincount((arms + np.arange(replicates) * k).ravel(), minlength=replicates * k)
        want_mean[first:first + n] = cum.mean(axis=1)
        if replicates > 1:
            want_half[first:first + n] = engine._Z95 * cum.std(axis=1, ddof=1) / np.sqrt(replicates)
        assert kernel(regrets, arms, carry, pulls, mean, half, first, engine._Z95, np.sqrt(replicates),
                      *scratch(replicates)) == 0
        first += n
        assert np.array_equal(carry, want_carry) and np.array_equal(pulls, want_pulls)
        assert np.array_equal(mean, want_mean, equal_nan=True) and np.array_equal(half, want_half)
    for bad in (k, -1):
        arms = np.zeros((5, replicates), dtype=dtype)
        arms[3, replicates // 2] = bad
        assert kernel(regrets, arms, carry, pulls, mean, half, first, engine._Z95, 1.0, *scratch(replicates)) == 1
        assert np.array_equal(carry, want_carry) and np.array_equal(pulls, want_pulls)  # nothing written
        assert np.array_equal(mean, want_mean, equal_nan=True) and np.array_equal(half, want_half)


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
