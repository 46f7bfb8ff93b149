"""Samplers: float mode laws, exact discrete Laplace / Gaussian laws, the privacy ratio on the grid."""

import math

import numpy as np
import pytest
from scipy import stats

from privbandit.ledger import Ledger
from privbandit.mechanisms import GRID, LaplaceRelease, NoiseSampler, TreeMechanism
from privbandit.mechanisms.sampling import _bernoulli_exp_neg, discrete_gaussian, discrete_laplace


def _chi2_pvalue(samples, pmf_support, pmf):
    """Chi-square GOF with the tail mass pooled into the two end cells."""
    lo, hi = pmf_support[0], pmf_support[-1]
    clipped = np.clip(samples, lo, hi)
    observed = np.bincount(clipped - lo, minlength=hi - lo + 1)
    expected = pmf.copy()
    expected[0] += 0.5 * (1 - pmf.sum())
    expected[-1] += 0.5 * (1 - pmf.sum())
    expected *= samples.size
    return stats.chisquare(observed, expected).pvalue


def test_bernoulli_exp_neg_mean():
    rng = np.random.default_rng(0)
    num = np.full(200_000, 3, dtype=np.int64)
    den = np.full(200_000, 7, dtype=np.int64)
    p = math.exp(-3 / 7)
    got = _bernoulli_exp_neg(rng, num, den).mean()
    assert abs(got - p) < 5 * math.sqrt(p * (1 - p) / num.size)


@pytest.mark.parametrize("t", [1, 3, 10])
def test_discrete_laplace_law(t):
    rng = np.random.default_rng(t)
    z = discrete_laplace(rng, np.full(100_000, t))
    support = np.arange(-6 * t, 6 * t + 1)
    q = math.exp(-1 / t)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    assert _chi2_pvalue(z, support, pmf) > 1e-3
    assert z.dtype == np.int64


def test_discrete_gaussian_law():
    rng = np.random.default_rng(11)
    s = 3
    z = discrete_gaussian(rng, np.full(6000, s))
    support = np.arange(-4 * s, 4 * s + 1)
    all_support = np.arange(-40 * s, 40 * s + 1)
    norm = np.exp(-all_support.astype(float) ** 2 / (2 * s * s)).sum()
    pmf = np.exp(-support.astype(float) ** 2 / (2 * s * s)) / norm
    assert _chi2_pvalue(z, support, pmf) > 1e-3


def test_privacy_ratio_on_the_grid():
    """Neighbouring statistics u grid units apart: P(out = y | x) / P(out = y | x') <= exp(u/t) = e^eps,
    and the ledger records exactly that eps."""
    scale, sens = 2.5 * GRID, 2 * GRID  # t = 3 units, u = 2 units on a grid statistic
    sampler = NoiseSampler(np.random.default_rng(0), exact=True)
    t = sampler.effective_scale(scale) / GRID
    u = sampler.effective_sensitivity(sens, on_grid=True) / GRID
    assert (t, u) == (3.0, 2.0)
    eps = u / t
    y = np.arange(-30, 31)
    q = math.exp(-1 / t)
    pmf = lambda c: (1 - q) / (1 + q) * q ** np.abs(y - c)
    ratio = pmf(0) / pmf(u)
    assert ratio.max() == pytest.approx(math.exp(eps)) and ratio.min() == pytest.approx(math.exp(-eps))
    # empirical check of the same ratio on the central cells
    draws = np.rint(sampler.laplace(np.full(400_000, scale)) / GRID).astype(np.int64)
    h0 = np.bincount(np.clip(draws, -30, 30) + 30, minlength=61)[25:36].astype(float)
    h1 = np.bincount(np.clip(draws + int(u), -30, 30) + 30, minlength=61)[25:36].astype(float)
    emp = np.log(h0 / h1)
    assert np.all(np.abs(emp) <= eps + 5 / np.sqrt(np.minimum(h0, h1)))
    # the ledger certifies sensitivity/scale with the effective (grid) parameters
    led = Ledger(1, 1)
    LaplaceRelease(np.random.default_rng(1), led, "x", exact=True).release([0.0], scale, sens, 0, 0, 0, 1)
    # off-grid statistic: rounding may add one unit of sensitivity
    assert led.realized_pure_epsilon()[0] == pytest.approx((u + 1) / t)


def test_exact_mode_outputs_are_grid_multiples_and_certify_epsilon():
    led = Ledger(3, 2)
    m = TreeMechanism(3, 2, epsilon=0.5, horizon=16, rng=np.random.default_rng(0), ledger=led, exact=True)
    rng = np.random.default_rng(1)
    for _ in range(16):
        m.insert(rng.random((3, 2)), np.ones((3, 2), dtype=bool))
        assert np.array_equal(m.noisy_sum / GRID, np.rint(m.noisy_sum / GRID))
    # the rounded-up scale can only lower eps; on-grid sums keep sensitivity 1
    assert np.all(led.realized_pure_epsilon() <= 0.5)
    assert led.realized_pure_epsilon() == pytest.approx(np.full(3, 0.5), rel=1e-5)


def test_float_mode_laws():
    s = NoiseSampler(np.random.default_rng(3))
    assert stats.kstest(s.laplace(np.full(20_000, 2.0)), stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    assert stats.kstest(s.gaussian(np.full(20_000, 0.7)), stats.norm(scale=0.7).cdf).pvalue > 1e-3


def test_sampler_rejects_bad_input():
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        NoiseSampler(np.random.RandomState(0))
    s = NoiseSampler(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"scale must lie in \(0, inf\)"):
        s.laplace(np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"sigma must lie in \(0, inf\)"):
        s.gaussian(np.array([np.nan]))
    with pytest.raises(ValueError, match=r"scale must lie in"):
        NoiseSampler(np.random.default_rng(0), exact=True).laplace(np.array([2.0 ** 40]))
