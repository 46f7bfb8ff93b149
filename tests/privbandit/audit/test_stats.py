"""Statistics of the auditor: Clopper-Pearson against scipy, conservativeness, the bound formulas."""

import math

import numpy as np
import pytest
from scipy import stats as sst

from privbandit.audit import stats


CASES = [(k, n) for n in (1, 2, 7, 50, 1000, 123_457, 10**7) for k in sorted({0, 1, n // 3, n // 2, n - 1, n})
         if 0 <= k <= n]


@pytest.mark.parametrize("alpha", [0.05, 0.025, 1e-3, 1e-6])
def test_cp_matches_scipy_and_is_never_anticonservative(alpha):
    for k, n in CASES:
        lo, hi = stats.cp_lower(k, n, alpha), stats.cp_upper(k, n, alpha)
        ref_lo = 0.0 if k == 0 else sst.beta.ppf(alpha, k, n - k + 1)
        ref_hi = 1.0 if k == n else sst.beta.ppf(1 - alpha, k + 1, n - k)
        assert lo <= ref_lo and hi >= ref_hi, (k, n, lo, ref_lo, hi, ref_hi)
        assert lo >= ref_lo * (1 - 3e-7) and hi <= ref_hi * (1 + 3e-7) + 1e-300, (k, n)


def test_cp_matches_binomtest_exact_interval():
    # a two-sided exact interval at level 1 - 2 alpha is the pair of one-sided bounds at alpha
    for k, n in [(3, 40), (500, 1000), (17, 10**5)]:
        ci = sst.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        assert math.isclose(stats.cp_lower(k, n, 0.05), ci.low, rel_tol=3e-7)
        assert math.isclose(stats.cp_upper(k, n, 0.05), ci.high, rel_tol=3e-7)
        assert stats.cp_lower(k, n, 0.05) <= ci.low and stats.cp_upper(k, n, 0.05) >= ci.high


def test_cp_coverage_by_simulation():
    # one-sided coverage >= 1 - alpha; a wrong bound (e.g. alpha used as 2 alpha) would fail this
    rng = np.random.default_rng(7)
    p, n, alpha, reps = 0.03, 400, 0.1, 20_000
    k = rng.binomial(n, p, reps)
    miss_lo = np.mean(stats.cp_lower(k, n, alpha) > p)
    miss_hi = np.mean(stats.cp_upper(k, n, alpha) < p)
    # binomial sd of the miss rate at 0.1 over 20k reps is 0.002: allow 4 sd
    assert miss_lo <= alpha + 0.008 and miss_hi <= alpha + 0.008
    assert miss_lo > 0.03 and miss_hi > 0.03  # not vacuous either


def test_eps_and_mu_lower_bound_formulas():
    assert math.isclose(stats.eps_lower_bound(0.5, 0.5 / math.e), 1.0)
    assert math.isclose(stats.eps_lower_bound(0.5, 0.2, delta=0.1), math.log(0.4 / 0.2))
    assert stats.eps_lower_bound(0.05, 0.2, delta=0.1) == 0.0
    # the exact (FPR, FNR) of a threshold test between N(0,1) and N(mu,1) gives back mu
    from scipy.special import ndtr
    for mu in (0.3, 1.0, 2.5):
        t = 0.4
        fpr, fnr = 1 - ndtr(t), ndtr(t - mu)
        assert math.isclose(stats.mu_lower_bound(fpr, fnr), mu, rel_tol=1e-9)
        assert math.isclose(stats.gdp_fnr(fpr, mu), fnr, rel_tol=1e-9)


def test_wilson_and_bonferroni():
    z = stats.bonferroni_z(0.05, 1)
    assert math.isclose(z, 1.6448536269514722)
    assert stats.bonferroni_z(0.05, 1000) > 3.5
    lo, hi = stats.wilson_lower(30, 100, 1.96), stats.wilson_upper(30, 100, 1.96)
    assert 0.21 < lo < 0.3 < hi < 0.40
    assert stats.binomial_allowance(40, 0.05) >= 2


@pytest.mark.parametrize("call", [
    lambda: stats.cp_lower(1, 10, 0.0), lambda: stats.cp_upper(1, 10, 1.5), lambda: stats.cp_lower(11, 10, 0.05),
    lambda: stats.cp_lower(1, 0, 0.05), lambda: stats.eps_lower_bound(0.5, 0.1, delta=1.0),
    lambda: stats.mu_lower_bound(1.5, 0.1), lambda: stats.bonferroni_z(0.05, 0),
])
def test_invalid_arguments_raise(call):
    with pytest.raises(ValueError):
        call()
