"""Certificates against exact references at extreme deltas, counts and parameters (validity campaign).

Each test pins a defect found by comparing the accountants with references computed here in mpmath,
independently of the package: the GDP curve (Dong, Roth & Su 2022, Cor. 2.13) at up to 400 digits,
so that a delta of 1e-300 at eps = 0 (where Phi(mu/2) - Phi(-mu/2) cancels to 300 digits) is exact.
"""

import math
import warnings

import mpmath
import pytest

from accountants import GDP, Gaussian, PLDAccountant, gdp_conversion

from tests.accountants._exact import gdp_epsilon


def _gdp_delta_hp(mu: float, eps: float) -> mpmath.mpf:
    """The GDP delta(eps) at 400 digits (the curve cancels to ~|log10 delta| digits)."""
    with mpmath.workdps(400):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        a = -eps / mu + mu / 2
        return mpmath.ncdf(a) - mpmath.exp(eps) * mpmath.ncdf(a - mu)


@pytest.mark.parametrize("mu", [30.0, 60.0])
def test_pld_of_a_large_mu_gaussian_is_quiet_and_valid(mu):
    # was: RuntimeWarnings (overflow in expm1 / exp, invalid value in add) from the unselected
    # branch of the Gaussian leaf's hockey-stick curve at losses past 709 (mean mu^2/2 + 14 mu);
    # a coarse grid (h = 0.02) keeps the test fast, the leaf's range is the same
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps = PLDAccountant(value_discretization_interval=0.02).compose(GDP(mu)).epsilon(1e-6)
        eps_sigma = PLDAccountant(value_discretization_interval=0.02).compose(Gaussian(1.0 / mu)).epsilon(1e-6)
    exact = gdp_epsilon(mu, 1e-6)
    assert exact <= eps <= exact * (1 + 1e-3)
    assert exact <= eps_sigma <= exact * (1 + 1e-3)


@pytest.mark.parametrize("epsilon, delta", [(0.0, 1e-300), (1e-300, 1e-300), (0.0, 2.3e-308), (1e-300, 3e-305)])
def test_mu_for_epsilon_delta_at_the_smallest_deltas(monkeypatch, epsilon, delta):
    # was: (0, 1e-300) never returned (brentq's absolute xtol of 1e-300 is 40% of mu there, and the
    # lattice walk then stepped 9e-13 relative at a time: ~1e11 curve evaluations), and deltas below
    # ~4e-301 at eps = 0 raised "no mu > 1e-300 satisfies" although mu = 2.5 delta does
    calls = {"n": 0}
    curve = gdp_conversion.log_delta_for_epsilon

    def counted(mu, eps):
        calls["n"] += 1
        if calls["n"] > 5000:
            raise AssertionError("mu_for_epsilon_delta walks the lattice point by point")
        return curve(mu, eps)

    monkeypatch.setattr(gdp_conversion, "log_delta_for_epsilon", counted)
    mu = gdp_conversion.mu_for_epsilon_delta(epsilon, delta)
    assert _gdp_delta_hp(mu, epsilon) <= delta  # never overshoots
    assert _gdp_delta_hp(mu * (1 + 1e-9), epsilon) > delta  # and is not loose


# --- no defect found here: exact references at the tiniest deltas, kept as guards ------------------
def _every_epsilon(event, delta):
    from accountants import UnsupportedEventError
    from accountants.best import default_accountants

    out = {}
    for factory in default_accountants():
        try:
            acc = factory().compose(event)
        except UnsupportedEventError:
            continue
        out[acc.name] = acc.epsilon(delta)
    return out


def _rr_delta_mp(k: int, eps0: float, eps: float) -> mpmath.mpf:
    """Kairouz, Oh & Viswanath 2015, Thm 3.3, every term summed at 400 digits."""
    with mpmath.workdps(400):
        e0, e = mpmath.mpf(eps0), mpmath.mpf(eps)
        p, q = 1 / (1 + mpmath.exp(-e0)), 1 / (1 + mpmath.exp(e0))
        return mpmath.fsum(mpmath.binomial(k, j) * p ** (k - j) * q ** j * (1 - mpmath.exp(e - (k - 2 * j) * e0))
                           for j in range(k + 1) if (k - 2 * j) * e0 > e)


@pytest.mark.parametrize("eps0, k", [(1e-3, 1), (1.0, 3), (30.0, 2), (0.25, 7)])
@pytest.mark.parametrize("delta", [1e-50, 1e-300])
def test_identical_pure_dp_at_tiny_delta_never_below_randomized_response(eps0, k, delta):
    from accountants import PureDP

    for name, eps in _every_epsilon(PureDP(eps0) * k, delta).items():
        assert _rr_delta_mp(k, eps0, eps) <= delta, name


@pytest.mark.parametrize("eps0", [1e-6, 0.3, 30.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-300])
def test_one_laplace_at_tiny_delta_never_below_its_closed_form(eps0, delta):
    from accountants import Laplace

    # delta(eps) = 1 - exp((eps - eps0)/2) on [0, eps0]: eps(delta) = eps0 + 2 log(1 - delta)
    with mpmath.workdps(400):
        exact = mpmath.mpf(eps0) + 2 * mpmath.log1p(-mpmath.mpf(delta))
    for name, eps in _every_epsilon(Laplace(1.0 / eps0), delta).items():
        assert eps >= exact * (1 - 1e-15), name
