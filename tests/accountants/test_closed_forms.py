"""Known closed forms: advanced composition, KOV, optimal composition (mpmath brute force), RDP."""

import math

import mpmath
import numpy as np
import pytest
from scipy import optimize

from accountants import (
    GDP,
    AdvancedCompositionAccountant,
    ApproxDP,
    Composed,
    Gaussian,
    KOVHeterogeneousAccountant,
    Laplace,
    OptimalHomogeneousAccountant,
    PureDP,
    RDPAccountant,
    UnsupportedEventError,
    advanced_composition_epsilon,
)
from accountants.advanced import advanced_composition_epsilon_homogeneous
from accountants.kov import kov_epsilon


# --- advanced composition (DRV 2010 Thm III.3) ---------------------------------------------------
@pytest.mark.parametrize("eps0, k, dp", [(0.1, 100, 1e-5), (0.01, 10_000, 1e-6), (1.0, 3, 0.1)])
def test_advanced_homogeneous_value(eps0, k, dp):
    expected = math.sqrt(2 * k * math.log(1 / dp)) * eps0 + k * eps0 * (math.exp(eps0) - 1)
    assert advanced_composition_epsilon_homogeneous(eps0, k, dp) == pytest.approx(expected, rel=1e-12)
    assert advanced_composition_epsilon_homogeneous(eps0, k, dp) >= expected
    assert advanced_composition_epsilon([eps0] * k, dp) == pytest.approx(expected, rel=1e-12)
    acc = AdvancedCompositionAccountant().compose(PureDP(eps0), k)
    assert acc.epsilon(dp) == pytest.approx(expected, rel=1e-12)


def test_advanced_heterogeneous_value_and_deltas():
    eps = [0.5, 0.1, 0.1, 0.02]
    expected = math.sqrt(2 * math.log(1e5) * sum(e * e for e in eps)) + sum(e * math.expm1(e) for e in eps)
    acc = AdvancedCompositionAccountant()
    for e in eps:
        acc.compose(ApproxDP(e, 1e-7))
    # total delta = sum delta_i + delta'
    assert acc.epsilon(1e-5 + 4e-7) == pytest.approx(expected, rel=1e-9)
    assert acc.epsilon(4e-7) == math.inf
    assert acc.epsilon(3e-7) == math.inf
    assert acc.delta(expected * 1.0000001) == pytest.approx(1e-5 + 4e-7, rel=1e-5)


def test_kov_formula_and_ordering():
    eps = np.array([0.3, 0.05, 0.05, 0.01, 1.2])
    dp = 1e-6
    s1, s2, st = eps.sum(), (eps ** 2).sum(), (eps * np.tanh(eps / 2)).sum()
    expected = min(s1, st + math.sqrt(2 * math.log(1 / dp) * s2),
                   st + math.sqrt(2 * s2 * math.log(math.e + math.sqrt(s2) / dp)))
    acc = KOVHeterogeneousAccountant()
    adv = AdvancedCompositionAccountant()
    for e in eps:
        acc.compose(PureDP(float(e)))
        adv.compose(PureDP(float(e)))
    assert acc.epsilon(dp) == pytest.approx(expected, rel=1e-12)
    assert acc.epsilon(dp) >= expected
    assert acc.epsilon(dp) <= adv.epsilon(dp)
    assert kov_epsilon(s1, s2, st, 0.0) >= s1


def test_kov_total_delta_with_approx_releases():
    acc = KOVHeterogeneousAccountant().compose(ApproxDP(0.1, 1e-4), 50)
    keep = (1 - 1e-4) ** 50
    assert acc.epsilon(1 - keep * 0.999999) < math.inf
    assert acc.epsilon((1 - keep) * 0.999) == math.inf
    # at delta' -> 0 KOV falls back to basic composition
    assert acc.epsilon(1 - keep + 1e-11) <= 5.0 * (1 + 1e-12)
    eps = acc.epsilon(1e-2)
    assert acc.delta(eps) == pytest.approx(1e-2, rel=1e-10)
    assert acc.delta(eps) <= 1e-2 * (1 + 1e-12)


# --- optimal composition (KOV 2015 Thm 3.3) ------------------------------------------------------
@mpmath.workdps(50)
def brute_force_delta(k, eps0, eps, delta0=0.0):
    e0, e = mpmath.mpf(eps0), mpmath.mpf(eps)
    p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
    q = 1 - p
    d = mpmath.mpf(0)
    for j in range(k + 1):
        d += mpmath.binomial(k, j) * p ** (k - j) * q ** j * max(0, 1 - mpmath.exp(e - (k - 2 * j) * e0))
    return float(1 - (1 - mpmath.mpf(delta0)) ** k * (1 - d))


@pytest.mark.parametrize("k", [1, 2, 5, 17, 60])
@pytest.mark.parametrize("eps0", [0.05, 0.5, 1.5])
def test_optimal_matches_brute_force(k, eps0):
    acc = OptimalHomogeneousAccountant().compose(PureDP(eps0), k)
    for frac in [0.0, 0.1, 0.3, 0.7]:
        eps = frac * k * eps0
        exact = brute_force_delta(k, eps0, eps)
        got = acc.delta(eps)
        assert got >= exact
        assert got == pytest.approx(exact, rel=1e-6, abs=1e-300)


def test_optimal_with_delta0_matches_brute_force():
    acc = OptimalHomogeneousAccountant().compose(ApproxDP(0.2, 1e-5), 40)
    for eps in [0.5, 1.0, 2.0]:
        exact = brute_force_delta(40, 0.2, eps, 1e-5)
        assert acc.delta(eps) >= exact
        assert acc.delta(eps) == pytest.approx(exact, rel=1e-6)


def test_optimal_window_is_rigorous_for_large_k():
    # window truncation adds a Chernoff bound: compare with the full sum for moderate k
    k, eps0 = 3000, 0.05
    acc = OptimalHomogeneousAccountant().compose(PureDP(eps0), k)
    for eps in [1.0, 5.0, 10.0]:
        exact = brute_force_delta(k, eps0, eps)
        assert acc.delta(eps) >= exact
        assert acc.delta(eps) == pytest.approx(exact, rel=1e-5)


def test_optimal_is_tighter_than_kov_and_gdp_at_1e6():
    from accountants import GDPAccountant
    ev = PureDP(0.001)
    opt = OptimalHomogeneousAccountant().compose(ev, 1_000_000)
    e = opt.epsilon(1e-6)
    assert e <= KOVHeterogeneousAccountant().compose(ev, 1_000_000).epsilon(1e-6)
    assert e <= GDPAccountant().compose(ev, 1_000_000).epsilon(1e-6) * (1 + 1e-9)
    assert opt.delta(e) <= 1e-6
    big = OptimalHomogeneousAccountant().compose(ev, 10_000_000)
    assert math.isfinite(big.epsilon(1e-6))


def test_optimal_rejects_heterogeneous_atomically():
    acc = OptimalHomogeneousAccountant().compose(Laplace(scale=10.0), 5)
    before = acc.epsilon(1e-6)
    with pytest.raises(UnsupportedEventError):
        acc.compose(Composed((Laplace(scale=10.0), Laplace(scale=20.0))))
    with pytest.raises(UnsupportedEventError):
        acc.compose(PureDP(0.3))
    assert acc.k == 5 and acc.epsilon(1e-6) == before
    fresh = OptimalHomogeneousAccountant()
    with pytest.raises(UnsupportedEventError):
        fresh.compose(Composed((PureDP(0.1), PureDP(0.2))))
    assert fresh.k == 0
    # same (eps0, delta0) from different leaf kinds is fine: the theorem only needs eps0-DP
    acc.compose(PureDP(0.1))
    assert acc.k == 6
    with pytest.raises(UnsupportedEventError):
        OptimalHomogeneousAccountant().compose(Gaussian(sigma=1.0))


# --- RDP -----------------------------------------------------------------------------------------
def test_rdp_gaussian_curve_and_epsilon():
    sigma, k = 3.0, 50
    acc = RDPAccountant().compose(Gaussian(sigma=sigma, sensitivity=2.0), k)
    mu2 = k * (2.0 / sigma) ** 2
    alphas = np.array([1.5, 2.0, 10.0, 123.4])
    np.testing.assert_allclose(acc.rdp(alphas), alphas * mu2 / 2, rtol=1e-11)
    assert np.all(acc.rdp(alphas) >= alphas * mu2 / 2)
    np.testing.assert_allclose(acc.grid_curve(), acc.orders * mu2 / 2, rtol=1e-11)
    # continuous optimum of the improved conversion, computed independently
    delta = 1e-6

    def f(a):
        return a * mu2 / 2 + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)

    res = optimize.minimize_scalar(f, bounds=(1.0001, 1e4), method="bounded", options={"xatol": 1e-12})
    assert acc.epsilon(delta) == pytest.approx(res.fun, rel=1e-9)
    assert acc.epsilon(delta) >= res.fun * (1 - 1e-12)


def test_rdp_gdp_leaf_equals_gaussian():
    a = RDPAccountant().compose(GDP(0.5), 7)
    b = RDPAccountant().compose(Gaussian(sigma=2.0), 7)
    assert a.epsilon(1e-5) == pytest.approx(b.epsilon(1e-5), rel=1e-12)


def test_rdp_laplace_curve_matches_mironov():
    acc = RDPAccountant().compose(Laplace(scale=2.0, sensitivity=1.0), 3)
    lam = 2.0
    for a in [1.5, 2.0, 8.0]:
        single = 1 / (a - 1) * math.log(a / (2 * a - 1) * math.exp((a - 1) / lam)
                                        + (a - 1) / (2 * a - 1) * math.exp(-a / lam))
        assert acc.rdp(a) == pytest.approx(3 * single, rel=1e-11)


def test_rdp_rejects_approx_dp():
    with pytest.raises(UnsupportedEventError):
        RDPAccountant().compose(ApproxDP(0.1, 1e-6))
