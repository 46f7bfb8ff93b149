import numpy as np
import pytest
from scipy import stats

from privbandit.envs import Bernoulli, ClippedGaussian, RewardTable, TruncatedExponential


def _draw(env, arm, n, seed=0):
    run = env.start(n, np.random.default_rng(seed))
    return run.rewards(1, np.full(n, arm))


def test_bernoulli_frequency_within_binomial_tolerance():
    env = Bernoulli([0.3, 0.8])
    x = _draw(env, 1, 200_000)
    sd = np.sqrt(0.8 * 0.2 / x.size)
    assert set(np.unique(x)) == {0.0, 1.0}
    assert abs(x.mean() - 0.8) < 5 * sd


def test_truncated_exponential_matches_its_cdf():
    rates = [0.1, 1, 2, 5, 10]
    env = TruncatedExponential(rates)
    np.testing.assert_allclose(env.means, [0.492, 0.418, 0.343, 0.193, 0.1], atol=1e-3)
    for arm, lam in enumerate(rates):
        x = _draw(env, arm, 20_000, seed=arm)
        assert x.min() >= 0 and x.max() <= 1
        cdf = lambda v, lam=lam: -np.expm1(-lam * np.asarray(v)) / -np.expm1(-lam)
        assert stats.kstest(x, cdf).pvalue > 1e-3


def test_clipped_gaussian_mean_matches_closed_form():
    env = ClippedGaussian([0.05, 0.5, 0.97], scale=0.2)
    for arm in range(3):
        x = _draw(env, arm, 200_000, seed=10 + arm)
        assert x.min() >= 0 and x.max() <= 1
        assert abs(x.mean() - env.means[arm]) < 5 * x.std() / np.sqrt(x.size)


def test_reward_table_replays_rows_and_uses_best_fixed_arm():
    table = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    env = RewardTable(table)
    run = env.start(2, np.random.default_rng(0))
    np.testing.assert_array_equal(run.rewards(2, np.array([0, 1])), [0.0, 1.0])
    np.testing.assert_array_equal(env.best(np.array([1, 2, 3])), [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="beyond"):
        run.rewards(4, np.array([0, 1]))


@pytest.mark.parametrize("factory, match", [
    (lambda: Bernoulli([0.5]), "means"),
    (lambda: Bernoulli([0.5, 1.5]), "means"),
    (lambda: TruncatedExponential([1.0, -2.0]), "rates"),
    (lambda: ClippedGaussian([0.2, 0.4], scale=0.0), "scale"),
    (lambda: RewardTable(np.ones(3)), "table"),
])
def test_bad_environment_parameters(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()


def test_reward_tape_pays_the_jth_pull_of_each_arm():
    from privbandit.envs import RewardTape

    env = RewardTape([[0.1, 0.2, 0.3], [0.9, 0.8, 0.7]])
    run = env.start(2, np.random.default_rng(0))
    np.testing.assert_allclose(run.rewards(1, np.array([0, 1])), [0.1, 0.9])
    np.testing.assert_allclose(run.rewards(2, np.array([0, 0])), [0.2, 0.1])
    np.testing.assert_allclose(run.rewards(3, np.array([0, 0])), [0.3, 0.2])
    with pytest.raises(ValueError, match="tape"):
        run.rewards(4, np.array([0, 0]))


def test_truncated_exponential_means_are_accurate_at_every_rate():
    """The mean 1/l - e^-l/(1 - e^-l) cancels for small rates: at 1e-12 it was off by 1.2e-4 and a
    subnormal rate gave NaN (inf - inf). Reference: mpmath at 700 digits; the paper's rates keep
    their old values bit for bit (the regret digests depend on them)."""
    import mpmath as mp
    import warnings

    from privbandit.envs import TruncatedExponential

    rates = [1e-300, 1e-12, 1e-8, 1e-3, 9.99e-3, 1e-2, 0.1, 1.0, 5.0, 700.0, 1e4, 1e300]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        means = TruncatedExponential(rates).means
    with mp.workdps(700):  # 1/l - 1/expm1(l) cancels ~300 digits at l = 1e-300
        for lam, got in zip(rates, means):
            lam_mp = mp.mpf(lam)
            exact = 1 / lam_mp - 1 / mp.expm1(lam_mp)
            assert abs(mp.mpf(float(got)) - exact) <= 1e-13 * exact, (lam, got)
    paper = np.array([0.1, 1.0, 2.0, 5.0, 10.0])
    assert np.array_equal(TruncatedExponential(paper).means, 1.0 / paper - np.exp(-paper) / -np.expm1(-paper))
    with pytest.raises(ValueError, match=r"rates must be .* in \[1e-300, inf\)"):
        TruncatedExponential([1e-320, 0.5])


@pytest.mark.parametrize("env", [Bernoulli([0.7, 0.2, 0.5]), ClippedGaussian([0.3, 0.6, 0.5], scale=0.4),
                                 TruncatedExponential([0.1, 2.0, 5.0])])
@pytest.mark.parametrize("replicates", [1, 7, 400, 5000])
def test_rewards_are_one_sequential_stream_whatever_the_blocks(env, replicates):
    """Round t's rewards are the transform of the t-th row of ONE stream of variates (rng.random or
    rng.standard_normal of shape (T, R)), whether drawn round by round, in planned blocks of any
    length (within, across and beyond the run's buffer) or mixed: the buffer's size is invisible."""
    horizon = 150
    rng = np.random.default_rng(5)
    arms = rng.integers(0, 3, (horizon, replicates))
    gen = np.random.default_rng(9)
    u = gen.standard_normal((horizon, replicates)) if env._normal else gen.random((horizon, replicates))
    want = np.stack([env._transform(u[j], arms[j]) for j in range(horizon)])
    run = env.start(replicates, np.random.default_rng(9))
    got, t = [], 1
    for n in [1, 2, 1, 40, 3, 1, 60, 1, 5, 36]:
        got.append(run.rewards(t, arms[t - 1])[None] if n == 1 else run.rewards_block(t, arms[t - 1:t - 1 + n]))
        t += n
    assert t == horizon + 1
    assert np.array_equal(np.concatenate(got), want)
